"""The release catalog (plugins/plugin_utils/releases.json) is what hack/generate_release_catalog.py
writes from the release data, so it cannot drift from ../shared's data or hack/release-data.yaml;
and its upgrade graphs are the certified catalog templates' channels, with the newer entries
added, such that every release a catalog carries has a supported way to the newest one there."""

from __future__ import annotations

import importlib.util

import pytest
import yaml

from ansible_collections.gpudirect.rdma.plugins.module_utils.upgrade.graph import (
    channels_from_entries,
    channels_from_template,
    release_line,
    upgrade_path,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.releases import (
    CATALOG_MINORS,
    RELEASES,
    UPGRADE_GRAPHS,
)
from tests.harness.controlplane import REPO_ROOT, shared_dir

spec = importlib.util.spec_from_file_location(
    "generate_release_catalog", REPO_ROOT / "hack" / "generate_release_catalog.py"
)
generator = importlib.util.module_from_spec(spec)
spec.loader.exec_module(generator)


def test_the_committed_catalog_is_what_the_generator_writes():
    """Else: run python hack/generate_release_catalog.py."""
    assert generator.catalog(shared_dir()) == RELEASES


@pytest.mark.parametrize("key", sorted(generator.PACKAGES))
@pytest.mark.parametrize("minor", CATALOG_MINORS)
def test_the_graph_holds_each_templates_channels_from_the_oldest_line_on(key, minor):
    package = generator.PACKAGES[key]
    template = shared_dir() / "reference" / "catalog-templates" / f"v{minor}" / f"{package}.yaml"
    real = channels_from_template(yaml.safe_load(template.read_text()), package)
    kept = channels_from_entries(UPGRADE_GRAPHS[key][minor])
    oldest = min(generator._line(r["csv_name"]) for r in RELEASES[key].values())
    for name, channel in real.items():
        wanted = tuple(e for e in channel.entries if generator._line(e.name) >= oldest)
        if wanted:
            assert kept[name].entries[: len(wanted)] == wanted, (minor, name)


@pytest.mark.parametrize("key", sorted(generator.PACKAGES))
@pytest.mark.parametrize("minor", CATALOG_MINORS)
def test_every_release_a_catalog_carries_has_a_way_to_the_newest_there(key, minor):
    """What upgrade.yml relies on: from each release the collection installs on that minor, a
    way through the catalog's channels, one release line at a time, to the newest release
    there, ending on the newest release's own channel."""
    channels = channels_from_entries(UPGRADE_GRAPHS[key][minor])
    carried = {r: d for r, d in RELEASES[key].items() if minor in d["catalogs"]}
    newest = next(iter(carried.values()))
    for release, data in carried.items():
        path = upgrade_path(channels, data["csv_name"], newest["csv_name"], newest["channel"])
        assert (path[-1].csv if path else data["csv_name"]) == newest["csv_name"], release
        if key == "gpu_operator":
            # Each GPU Operator head skips every older version: one InstallPlan per line.
            lines = [release_line(hop.version) for hop in path]
            assert len(set(lines)) == len(lines), (release, path)
