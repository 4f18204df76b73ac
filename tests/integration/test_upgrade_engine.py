"""The upgrade engine (k8s/upgrade.py) against the simulated OLM, which resolves from the
certified catalog's real edges: an installed GPU Operator 25.10.1 goes to the pinned 26.7.2 one
release line at a time, exactly the InstallPlans of the way approved, each CSV replacing the
last; an OperatorCondition that says not upgradeable stops it before any approval; a run
interrupted after a hop continues from what the cluster shows."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import Cluster
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.upgrade import (
    UpgradeHeld,
    walk,
    way,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.releases import UPGRADE_GRAPHS
from tests.integration.helpers import wait_for
from tests.integration.test_api_connection import Module
from tests.integration.test_simulator import (
    OLM,
    _installed,
    _list,
    hold,
    install_manually,
)
from tests.unit.inventories import inputs

GPU = "gpu-operator-certified"
GRAPHS = UPGRADE_GRAPHS["gpu_operator"]


@pytest.fixture
def installed_25_10(custom, namespace):
    """GPU Operator 25.10.1 installed with Manual approval in the test's namespace, and the
    plan's operator settings (release 26.7.2, Manual) pointed at it."""
    install_manually(custom, namespace, GPU, "v25.10", f"{GPU}.v25.10.1")
    plan = build_plan(
        {**inputs("shared-device-roce"), "operators": {"gpu_operator": {"approval": "Manual"}}}
    )
    operator = {**plan["operators"]["gpu_operator"], "namespace": namespace}
    subscription = {
        "spec": {
            "channel": operator["channel"],
            "installPlanApproval": "Manual",
            "startingCSV": operator["starting_csv"],
        }
    }
    return operator, subscription


def test_the_way_is_walked_one_install_plan_per_release_line(
    installed_25_10, control_plane, custom, namespace
):
    operator, subscription = installed_25_10
    cluster = Cluster(Module(control_plane.kubeconfig))
    planned = way(cluster, "gpu_operator", operator, GRAPHS)
    assert [(h.channel, h.csv) for h in planned.hops] == [
        ("v26.3", f"{GPU}.v26.3.3"),
        ("v26.7", f"{GPU}.v26.7.2"),
    ]
    # Check mode: the way, nothing written.
    before = _list(custom, namespace, "installplans")
    dry = walk(cluster, operator, subscription, planned, check_mode=True, timeout=60)
    assert [r["csv"] for r in dry] == [f"{GPU}.v26.3.3", f"{GPU}.v26.7.2"]
    assert _list(custom, namespace, "installplans") == before
    done = walk(cluster, operator, subscription, planned, check_mode=False, timeout=60)
    assert [r["install_plan"] is not None for r in done] == [True, True]
    _installed(custom, namespace, GPU, f"{GPU}.v26.7.2")
    plans = sorted(_list(custom, namespace, "installplans"), key=lambda p: p["spec"]["generation"])
    # Exactly the way's InstallPlans were approved, in its order.
    assert [(p["spec"]["clusterServiceVersionNames"][0], p["spec"]["approved"]) for p in plans] == [
        (f"{GPU}.v25.10.1", True),
        (f"{GPU}.v26.3.3", True),
        (f"{GPU}.v26.7.2", True),
    ]
    assert [r["install_plan"] for r in done] == [p["metadata"]["name"] for p in plans[1:]]
    live = custom.get_namespaced_custom_object(*OLM, namespace, "subscriptions", GPU)
    assert {k: live["spec"].get(k) for k in subscription["spec"]} == subscription["spec"]
    assert [c["metadata"]["name"] for c in _list(custom, namespace, "clusterserviceversions")] == [
        f"{GPU}.v26.7.2"
    ]
    # Walked again: nothing left to do.
    assert way(cluster, "gpu_operator", operator, GRAPHS).hops == ()


def test_a_hold_stops_the_walk_before_any_approval_and_a_rerun_continues(
    installed_25_10, control_plane, custom, namespace
):
    operator, subscription = installed_25_10
    cluster = Cluster(Module(control_plane.kubeconfig))
    planned = way(cluster, "gpu_operator", operator, GRAPHS)
    # The first hop only, as a run interrupted after it would leave the cluster.
    first = type(planned)(
        planned.operator, planned.installed, planned.target, planned.minor, planned.hops[:1]
    )
    walk(cluster, operator, subscription, first, check_mode=False, timeout=60)
    # The walk gave the Subscription back its planned channel, v26.7: the plan for 26.7.2 may
    # already wait for approval (UpgradePending) beside the installed 26.3.3.
    _installed(custom, namespace, GPU, f"{GPU}.v26.3.3", at_latest=False)
    wait_for(
        lambda: custom.get_namespaced_custom_object(
            "operators.coreos.com", "v2", namespace, "operatorconditions", f"{GPU}.v26.3.3"
        ),
        what="the OperatorCondition of 26.3.3",
    )
    hold(custom, namespace, f"{GPU}.v26.3.3", "training runs until Friday")
    rest = way(cluster, "gpu_operator", operator, GRAPHS)
    assert [(h.channel, h.csv) for h in rest.hops] == [("v26.7", f"{GPU}.v26.7.2")]
    with pytest.raises(
        UpgradeHeld,
        match="is not upgradeable \\(its OperatorCondition: training runs until Friday\\)",
    ):
        walk(cluster, operator, subscription, rest, check_mode=False, timeout=60)
    pending = [p for p in _list(custom, namespace, "installplans") if not p["spec"]["approved"]]
    assert [p["spec"]["clusterServiceVersionNames"] for p in pending] == [[f"{GPU}.v26.7.2"]]
    custom.patch_namespaced_custom_object(
        "operators.coreos.com",
        "v2",
        namespace,
        "operatorconditions",
        f"{GPU}.v26.3.3",
        {"spec": {"overrides": None}},
    )
    walk(
        cluster,
        operator,
        subscription,
        way(cluster, "gpu_operator", operator, GRAPHS),
        check_mode=False,
        timeout=60,
    )
    _installed(custom, namespace, GPU, f"{GPU}.v26.7.2")
