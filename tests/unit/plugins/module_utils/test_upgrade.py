"""The upgrade engine's reading of what runs and its refusals before any write (the walk itself
runs against the simulated OLM: tests/integration/test_upgrade.py)."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.preflight import evaluate
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.upgrade import (
    UpgradeRefused,
    upgrade_check,
    way,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.releases import UPGRADE_GRAPHS
from tests.unit.inventories import inputs
from tests.unit.plugins.module_utils.test_preflight import (
    OLM,
    build_objects,
    healthy,
    obj,
    plan_of,
)

GPU = "gpu-operator-certified.v{}"


class Cluster:
    """Reads only: a Subscription with its installed CSV and a ClusterVersion."""

    def __init__(self, installed: str | None, openshift: str | None = "4.20.8"):
        self.objects = {}
        if installed is not None or openshift:
            self.objects[("Subscription", "nvidia-gpu-operator", "gpu-operator-certified")] = {
                "status": {"installedCSV": installed} if installed else {}
            }
        if openshift:
            self.objects[("ClusterVersion", None, "version")] = {
                "status": {"desired": {"version": openshift}}
            }
        self.writes = []

    def get(self, api_version, kind, name, namespace=None):
        return self.objects.get((kind, namespace, name))


def gpu(**overrides) -> dict:
    return build_plan({**inputs("shared-device-roce"), **overrides})["operators"]["gpu_operator"]


def test_the_way_from_what_runs_to_the_pin_one_release_line_at_a_time():
    planned = way(
        Cluster(GPU.format("25.3.4")), "gpu_operator", gpu(), UPGRADE_GRAPHS["gpu_operator"]
    )
    assert planned.minor == "4.20"
    assert [(h.channel, h.csv) for h in planned.hops] == [
        ("v25.10", GPU.format("25.10.1")),
        ("v26.3", GPU.format("26.3.3")),
        ("v26.7", GPU.format("26.7.2")),
    ]
    assert planned.lines()[0] == (
        "gpu_operator: gpu-operator-certified.v25.3.4 -> gpu-operator-certified.v25.10.1 "
        "(channel v25.10)"
    )
    same = way(Cluster(GPU.format("26.7.2")), "gpu_operator", gpu(), UPGRADE_GRAPHS["gpu_operator"])
    assert same.hops == () and same.lines() == [
        "gpu_operator: gpu-operator-certified.v26.7.2, as planned"
    ]


@pytest.mark.parametrize(
    ("cluster", "overrides", "words"),
    [
        (Cluster(GPU.format("26.7.2")), {"gpu_operator_release": "26.3.3"}, "that is a downgrade"),
        (Cluster(None), {}, "has no installed CSV yet: run playbooks/site.yml first"),
        (
            Cluster(GPU.format("25.3.4"), openshift=None),
            {},
            "the cluster's OpenShift version is unknown",
        ),
        (
            Cluster(GPU.format("25.3.4"), openshift="4.16.3"),
            {},
            "the release data holds the certified catalog of OpenShift 4.18, 4.19, 4.20, 4.21, "
            "4.22, not 4.16",
        ),
        (
            Cluster(GPU.format("26.3.3")),
            {"gpu_operator_release": "26.7.1"},
            "What OLM would install next from gpu-operator-certified.v26.3.3, per channel: "
            "stable -> gpu-operator-certified.v26.7.2, v26.7 -> gpu-operator-certified.v26.7.2",
        ),
    ],
)
def test_no_way_is_refused_before_any_write_saying_why(cluster, overrides, words):
    with pytest.raises(UpgradeRefused, match=None) as refused:
        way(cluster, "gpu_operator", gpu(**overrides), UPGRADE_GRAPHS["gpu_operator"])
    assert words in str(refused.value)
    assert cluster.writes == []


NETWORK = "nvidia-network-operator.v{}"


def network_cluster(installed: str) -> Cluster:
    cluster = Cluster(None)
    cluster.objects = {
        ("Subscription", "nvidia-network-operator", "nvidia-network-operator"): {
            "status": {"installedCSV": installed}
        },
        ("ClusterVersion", None, "version"): {"status": {"desired": {"version": "4.20.8"}}},
    }
    return cluster


def test_a_target_below_its_channels_head_needs_manual_approval():
    """Network Operator 26.4.1 -> 26.7.0 is one InstallPlan on stable; with Automatic approval
    OLM would go on to v26.7's head, 26.7.1, once the Subscription is handed back."""
    graphs = UPGRADE_GRAPHS["network_operator"]
    operator = build_plan({**inputs("shared-device-roce"), "network_operator_release": "26.7.0"})
    with pytest.raises(UpgradeRefused) as refused:
        way(
            network_cluster(NETWORK.format("26.4.1")),
            "network_operator",
            operator["operators"]["network_operator"],
            graphs,
        )
    assert (
        "target nvidia-network-operator.v26.7.0 is not the newest CSV of channel v26.7 "
        "(nvidia-network-operator.v26.7.1): with Automatic approval OLM would go on"
    ) in str(refused.value)
    manual = build_plan(
        {
            **inputs("shared-device-roce"),
            "network_operator_release": "26.7.0",
            "operators": {"network_operator": {"approval": "Manual"}},
        }
    )["operators"]["network_operator"]
    planned = way(network_cluster(NETWORK.format("26.4.1")), "network_operator", manual, graphs)
    assert [(h.channel, h.csv) for h in planned.hops] == [("stable", NETWORK.format("26.7.0"))]


def gpu_operator_running(installed: str) -> dict:
    """The GPU Operator's Subscription, reporting the CSV it installed."""
    return obj(
        OLM,
        "Subscription",
        "gpu-operator-certified",
        "nvidia-gpu-operator",
        status={"installedCSV": installed},
    )


def upgrade_findings(
    installed: str, check: str = "operator-versions", pods=(), **overrides
) -> list[str]:
    """The upgrade run's findings of one check of a cluster on OpenShift 4.20 whose GPU Operator
    runs `installed`, with pods beside."""
    plan = plan_of(**overrides)
    world = healthy(plan)
    world.others = [gpu_operator_running(installed), *pods]
    objects = build_objects(plan)
    findings = upgrade_check(UPGRADE_GRAPHS).judge(plan, objects, world.facts(objects), False)
    return [f"{f['severity']} {f['message']}" for f in findings if f["check"] == check]


def test_an_upgrade_run_judges_each_operators_way_before_any_write():
    assert upgrade_findings(GPU.format("25.10.1")) == [
        "ok NVIDIA GPU Operator: gpu-operator-certified.v25.10.1 to "
        "gpu-operator-certified.v26.7.2 (gpudirect_rdma_gpu_operator_release) in 2 "
        "InstallPlan(s): gpu-operator-certified.v25.10.1 -> gpu-operator-certified.v26.3.3 "
        "(channel v26.3); gpu-operator-certified.v26.3.3 -> gpu-operator-certified.v26.7.2 "
        "(channel v26.7)"
    ]
    assert upgrade_findings(GPU.format("26.7.2")) == [
        "ok NVIDIA GPU Operator: gpu-operator-certified.v26.7.2, as planned"
    ]
    (downgrade,) = upgrade_findings(GPU.format("26.7.2"), gpu_operator_release="26.3.3")
    assert downgrade.startswith(
        "error NVIDIA GPU Operator: installed "
        "gpu-operator-certified.v26.7.2, target gpu-operator-certified.v26.3.3: that is a "
        "downgrade, which OLM cannot do"
    )
    assert "uninstall the operator (playbooks/uninstall.yml)" in downgrade


def test_site_refuses_what_an_upgrade_run_walks():
    """The same cluster under site.yml's check: an upgrade it does not make, pointing to
    upgrade.yml (the upgrade run judges operator-versions instead: judge(replacing=...))."""
    plan = plan_of()
    world = healthy(plan)
    world.others = [gpu_operator_running(GPU.format("25.10.1"))]
    objects = build_objects(plan)
    found = [
        f
        for f in evaluate(plan, objects, world.facts(objects))
        if f["check"] == "operator-versions"
    ]
    assert [f["severity"] for f in found] == ["error"]
    assert "Run playbooks/upgrade.yml" in found[0]["message"]
    replaced = [
        f
        for f in evaluate(
            plan, objects, world.facts(objects), checks=[upgrade_check(UPGRADE_GRAPHS)]
        )
        if f["check"] == "operator-versions"
    ]
    assert [f["severity"] for f in replaced] == ["ok"]


def pod(name: str, node: str, limits: dict) -> dict:
    spec = {"nodeName": node, "containers": [{"name": "main", "resources": {"limits": limits}}]}
    return obj("v1", "Pod", name, "training", spec=spec)


def test_the_gpu_nodes_and_the_pods_holding_their_devices_are_listed_before_any_write():
    pods = [
        pod("trainer-0", "worker-0", {"nvidia.com/gpu": "8", "rdma/rdma_shared_device_eth": "1"}),
        pod("web", "worker-0", {"cpu": "1"}),
        pod("trainer-1", "worker-1", {"nvidia.com/gpu": "8"}),
    ]
    (listed,) = upgrade_findings(GPU.format("25.10.1"), "upgrade-disruption", pods)
    assert listed == (
        "warning NVIDIA GPU Operator: the new CSV brings its own GPU driver: the GPU driver is "
        "rolled: GPU pods are evicted while it reloads, on 2 node(s): worker-0, worker-1, within "
        "the upgrade budget (gpudirect_rdma_driver_upgrade_max_parallel); pods holding their GPUs "
        "or RDMA devices there: training/trainer-0, training/trainer-1"
    )
    assert upgrade_findings(GPU.format("26.7.2"), "upgrade-disruption", pods) == []


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("4.19", "ok the releases of this upgrade support OpenShift 4.19: upgrade OpenShift"),
        (
            "4.21",
            "error gpudirect_rdma_openshift_target_version 4.21: NVIDIA Network Operator 26.7.1 "
            "supports OpenShift 4.17 to 4.20. Pin releases",
        ),
        (
            "4.17",
            "error gpudirect_rdma_openshift_target_version 4.17: NVIDIA GPU Operator 26.7.2 "
            "supports OpenShift 4.18 to 4.22. Pin releases",
        ),
        (
            "4.23",
            "error gpudirect_rdma_openshift_target_version 4.23: gpudirect.rdma supports "
            "OpenShift 4.17 to 4.22; NVIDIA Network Operator 26.7.1 supports",
        ),
    ],
)
def test_the_next_openshift_is_checked_against_the_releases_of_the_upgrade(target, words):
    (found,) = upgrade_findings(
        GPU.format("25.10.1"), "openshift-target", openshift_target_version=target
    )
    assert found.startswith(words), found


def manifest(channels: dict[str, list[str]]) -> dict:
    """The cluster's package data of the GPU Operator: each channel with its entries."""
    return obj(
        "packages.operators.coreos.com/v1",
        "PackageManifest",
        "gpu-operator-certified",
        "openshift-marketplace",
        status={
            "channels": [
                {"name": name, "entries": [{"name": GPU.format(v)} for v in versions]}
                for name, versions in channels.items()
            ]
        },
    )


def test_a_way_the_clusters_own_catalog_does_not_carry_is_refused():
    """A mirrored catalog without 26.3.3: the certified graph's way cannot be walked there."""
    carried = manifest({"v26.3": ["26.3.3", "26.3.2"], "v26.7": ["26.7.2", "26.7.1"]})
    ok = upgrade_findings(GPU.format("25.10.1"), pods=[carried])
    assert [f.split()[0] for f in ok] == ["ok"]
    mirrored = manifest({"v26.3": ["26.3.2"], "v26.7": ["26.7.2"]})
    (refused,) = upgrade_findings(GPU.format("25.10.1"), pods=[mirrored])
    assert refused == (
        "error NVIDIA GPU Operator: the cluster's catalog (PackageManifest "
        "openshift-marketplace/gpu-operator-certified, CatalogSource certified-operators) does "
        "not carry gpu-operator-certified.v26.3.3 in channel v26.3 (it carries "
        "gpu-operator-certified.v26.3.2): the way follows the certified catalog's graph, and the "
        "cluster's catalog differs (a mirror without that CSV?). Mirror it, or pin a release the "
        "cluster's catalog carries"
    )
    (no_channel,) = upgrade_findings(GPU.format("25.10.1"), pods=[manifest({"v26.7": ["26.7.2"]})])
    assert "has no channel v26.3 (its channels: v26.7)" in no_channel
