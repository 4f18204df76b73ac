"""The upgrade graph as OLM resolves it, on the certified catalog's real templates
(../shared/reference/catalog-templates, one per OpenShift minor), and the way through it one
release line at a time."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpudirect.rdma.plugins.module_utils.upgrade.graph import (
    Channel,
    Entry,
    Hop,
    UpgradeRefused,
    channels_from_template,
    in_range,
    semver,
    upgrade_path,
)
from tests.harness.controlplane import shared_dir

GPU = "gpu-operator-certified"
NETWORK = "nvidia-network-operator"


def catalog(minor: str, package: str) -> dict[str, Channel]:
    path = shared_dir() / "reference" / "catalog-templates" / f"v{minor}" / f"{package}.yaml"
    return channels_from_template(yaml.safe_load(path.read_text()), package)


def route(path: list[Hop]) -> list[tuple[str, str]]:
    return [(hop.channel, hop.version) for hop in path]


def test_a_rebuild_or_pre_release_sorts_below_its_release_as_olm_compares():
    assert semver("26.7.0-1") < semver("26.7.0") < semver("26.7.1")
    assert semver("26.7.0-rc.2") < semver("26.7.0-rc.10") < semver("26.7.0")
    assert semver("v25.10.1") == semver("25.10.1")
    with pytest.raises(ValueError, match="expected a semantic version such as 26.7.0; got '26.7'"):
        semver("26.7")


@pytest.mark.parametrize(
    ("version", "spec", "inside"),
    [
        ("25.10.1", ">=1.9.0 <26.3.3", True),
        ("26.3.3", ">=1.9.0 <26.3.3", False),
        ("1.8.0", ">=1.9.0 <26.3.3", False),
        ("26.7.0-1", "<26.7.1", True),
        ("26.7.0", ">= 26.7.0 <26.7.1", True),
        ("4.1.0", "<2.0.0 || >=4.0.0", True),
    ],
)
def test_skip_ranges_as_olm_reads_them(version, spec, inside):
    assert in_range(version, spec) is inside


@pytest.mark.parametrize("minor", ["4.18", "4.19", "4.20", "4.21", "4.22"])
def test_a_gpu_operator_channel_change_jumps_to_that_channels_head(minor):
    """Every GPU Operator CSV's skipRange covers all older versions: OLM goes from 25.10.1 to
    the head of whichever channel the Subscription names, in one InstallPlan."""
    channels = catalog(minor, GPU)
    assert channels["v26.3"].successor(f"{GPU}.v25.10.1", "25.10.1").name == f"{GPU}.v26.3.3"
    stable_head = channels["stable"].head().version
    assert channels["stable"].successor(f"{GPU}.v25.3.4", "25.3.4").version == stable_head
    assert channels["v26.3"].successor(f"{GPU}.v26.3.3", "26.3.3") is None, "the head stays"


@pytest.mark.parametrize("minor", ["4.18", "4.19", "4.20", "4.21", "4.22"])
def test_the_gpu_operator_moves_one_release_line_per_channel(minor):
    path = upgrade_path(catalog(minor, GPU), f"{GPU}.v25.3.4", f"{GPU}.v26.7.0", "v26.7")
    assert route(path) == [("v25.10", "25.10.1"), ("v26.3", "26.3.3"), ("v26.7", "26.7.0")]
    assert [hop.replaces for hop in path] == [
        f"{GPU}.v25.3.4",
        f"{GPU}.v25.10.1",
        f"{GPU}.v26.3.3",
    ]
    # Within a line: one InstallPlan to the head.
    path = upgrade_path(catalog(minor, GPU), f"{GPU}.v26.3.0", f"{GPU}.v26.3.3", "v26.3")
    assert route(path) == [("v26.3", "26.3.3")]


def test_the_network_operator_crosses_lines_only_on_stable_one_hop_each():
    """Its version channels have no edges between lines; stable replaces one release at a
    time, so 25.10.0 to 26.4.1 is three InstallPlans, the last on the target's own channel."""
    path = upgrade_path(
        catalog("4.20", NETWORK), f"{NETWORK}.v25.10.0", f"{NETWORK}.v26.4.1", "v26.4"
    )
    assert route(path) == [("stable", "26.1.0"), ("stable", "26.4.0"), ("v26.4", "26.4.1")]
    assert catalog("4.20", NETWORK)["v26.4"].successor(f"{NETWORK}.v26.1.0", "26.1.0") is None


def test_the_installed_target_needs_nothing():
    assert upgrade_path(catalog("4.20", GPU), f"{GPU}.v26.3.3", f"{GPU}.v26.3.3", "v26.3") == []


def test_a_downgrade_is_refused_with_the_way_back():
    with pytest.raises(UpgradeRefused) as refused:
        upgrade_path(catalog("4.20", GPU), f"{GPU}.v26.3.3", f"{GPU}.v25.10.1", "v25.10")
    assert str(refused.value).startswith(
        f"installed {GPU}.v26.3.3, target {GPU}.v25.10.1: that is a downgrade, which OLM cannot do"
    )
    assert "uninstall the operator" in str(refused.value)
    assert f"startingCSV {GPU}.v25.10.1" in str(refused.value)


def test_a_target_the_catalog_does_not_hold_is_refused_naming_the_channels():
    """On OpenShift 4.22 the certified catalog has no Network Operator 26.4.0 and no version
    channels before v26.4."""
    channels = catalog("4.22", NETWORK)
    with pytest.raises(UpgradeRefused, match=r"no channel of the catalog holds .*v26\.1\.0"):
        upgrade_path(channels, f"{NETWORK}.v25.10.0", f"{NETWORK}.v26.1.0", "stable")
    with pytest.raises(UpgradeRefused, match="channel v26.1 is not in the catalog; its channels:"):
        upgrade_path(channels, f"{NETWORK}.v25.10.0", f"{NETWORK}.v26.1.0", "v26.1")


def test_a_target_olm_would_jump_past_is_refused_with_what_it_would_install():
    """A head whose skipRange covers the installed version takes OLM past a target below it."""
    line = Channel(
        "v26.7",
        (
            Entry(f"{GPU}.v26.7.0", "26.7.0", f"{GPU}.v26.3.3", skip_range=">=1.9.0 <26.7.0"),
            Entry(f"{GPU}.v26.7.1", "26.7.1", f"{GPU}.v26.7.0", skip_range=">=1.9.0 <26.7.1"),
            Entry(f"{GPU}.v26.7.2", "26.7.2", f"{GPU}.v26.7.1", skip_range=">=1.9.0 <26.7.2"),
        ),
    )
    assert [e.version for e in line.head_first()] == ["26.7.2", "26.7.1", "26.7.0"]
    with pytest.raises(UpgradeRefused) as refused:
        upgrade_path({"v26.7": line}, f"{GPU}.v26.7.0", f"{GPU}.v26.7.1", "v26.7")
    message = str(refused.value)
    assert (
        f"What OLM would install next from {GPU}.v26.7.0, per channel: v26.7 -> {GPU}.v26.7.2"
        in message
    )
    # From 26.3.3 the same channel goes straight to 26.7.2, the one target it reaches.
    path = upgrade_path({"v26.7": line}, f"{GPU}.v26.3.3", f"{GPU}.v26.7.2", "v26.7")
    assert route(path) == [("v26.7", "26.7.2")]


def test_a_step_of_two_release_lines_is_not_taken():
    """stable from 25.10.1 resolves to 26.7.0 at once; NVIDIA supports the next line only, so
    the way goes through v26.3 even where stable would be one InstallPlan."""
    path = upgrade_path(catalog("4.20", GPU), f"{GPU}.v25.10.1", f"{GPU}.v26.7.0", "stable")
    assert route(path) == [("v26.3", "26.3.3"), ("stable", "26.7.0")]


def test_a_rebuilt_bundle_is_reached_by_its_replaces_edge_though_semver_puts_it_lower():
    """nvidia-network-operator.v26.7.0-1 replaces v26.7.0 in the certified catalog: OLM follows
    replaces whatever the versions, so the way exists, and it is no downgrade."""
    line = Channel(
        "v26.7",
        (
            Entry(f"{NETWORK}.v26.7.0", "26.7.0"),
            Entry(f"{NETWORK}.v26.7.0-1", "26.7.0-1", f"{NETWORK}.v26.7.0"),
            Entry(f"{NETWORK}.v26.7.1", "26.7.1", f"{NETWORK}.v26.7.0-1"),
        ),
    )
    assert [e.version for e in line.head_first()] == ["26.7.1", "26.7.0-1", "26.7.0"]
    path = upgrade_path({"v26.7": line}, f"{NETWORK}.v26.7.0", f"{NETWORK}.v26.7.0-1", "v26.7")
    assert route(path) == [("v26.7", "26.7.0-1")]
    path = upgrade_path({"v26.7": line}, f"{NETWORK}.v26.7.0", f"{NETWORK}.v26.7.1", "v26.7")
    assert route(path) == [("v26.7", "26.7.0-1"), ("v26.7", "26.7.1")]
