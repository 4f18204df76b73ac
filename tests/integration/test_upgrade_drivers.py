"""playbooks/upgrade.yml's driver rollouts on the local control plane, the simulator playing the
Network Operator's and the GPU Operator's driver upgrade controllers: four nodes installed by
site.yml at Network Operator 26.1.0 and GPU Operator 25.10.1, upgraded to the newest with a
budget of one node. Every node's DOCA driver, then every node's GPU driver, walks its states,
never more than one node at once; a GPU driver pod that fails stops the play at once naming the
node and its log, and a re-run once the node is retried finishes without approving anything
again; a run interrupted (Ctrl-C) after its first approval continues when run again, each
InstallPlan approved once."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
from collections import Counter

import pytest
from kubernetes import client, watch

from tests.harness.audit import AuditLog
from tests.harness.controlplane import ADMIN_USER, REPO_ROOT
from tests.integration.helpers import playbook_command, playbook_env, wait_for
from tests.integration.test_simulator_drivers import GPU_WALK
from tests.integration.test_site import installed_csvs, nodes_for, recap, site
from tests.integration.test_upgrade import (
    GPU_TARGET,
    INVENTORY,
    NETWORK_TARGET,
    OLDER,
    UNINSTALL,
    UPGRADE,
    UPGRADE_ARGS,
    approvals,
    upgrade,
)

DOCA = "nvidia.com/ofed-driver-upgrade-state"
GPU = "nvidia.com/gpu-driver-upgrade-state"
IDLE = (None, "upgrade-done", "upgrade-required")
BUDGET = ("-e", "gpudirect_rdma_driver_upgrade_max_parallel=1", "-e", "upgrade_verify=false")


@pytest.fixture(scope="module")
def nothing_installed(run_playbook):
    """The plane without what earlier files installed: OLM does not go back a release. Each test
    uninstalls what it upgraded when it ends, so the next starts from nothing too."""
    run_playbook(UNINSTALL, "-e", "uninstall_timeout=90")


@pytest.fixture
def four_nodes_older(nothing_installed, run_playbook, harness):
    nodes_for(harness, INVENTORY, count=4)
    try:
        first = site(run_playbook, INVENTORY, *OLDER, *BUDGET)
        assert recap(first.stdout)["failed"] == 0
        yield
    finally:  # a failed install too: the next test starts from nothing
        run_playbook(UNINSTALL, "-e", "uninstall_timeout=90")


class StateLog:
    """Every node's two upgrade state labels, followed by a watch of the nodes while a playbook
    runs: each change in order (a poll would miss a state the simulator passes through between
    two reads), and the most nodes of each driver in progress at once."""

    def __init__(self, harness):
        self.core = client.CoreV1Api(harness)
        self.changes: list[tuple[str, str, str]] = []
        self.most = {DOCA: 0, GPU: 0}
        # At the most: which nodes were in which state, for the failure message.
        self.busiest: dict[str, list[tuple[str, str, bool]]] = {DOCA: [], GPU: []}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        listed = self.core.list_node()
        self.nodes = {node.metadata.name: node for node in listed.items}
        self.version = listed.metadata.resource_version
        self.last: dict[tuple[str, str], str | None] = {}
        self.observe()

    def observe(self) -> None:
        for label in (DOCA, GPU):
            moving = []
            for node in self.nodes.values():
                state = (node.metadata.labels or {}).get(label)
                key = (node.metadata.name, label)
                if self.last.get(key, state) != state:
                    self.changes.append((node.metadata.name, label, state))
                self.last[key] = state
                if state not in IDLE:
                    cordoned = bool(node.spec.unschedulable)
                    moving.append((node.metadata.name, state, cordoned))
            if len(moving) > self.most[label]:
                self.most[label], self.busiest[label] = len(moving), moving

    def run(self) -> None:
        while not self.stop.is_set():
            for event in watch.Watch().stream(
                self.core.list_node, resource_version=self.version, timeout_seconds=1
            ):
                node = event["object"]
                self.version = node.metadata.resource_version
                if event["type"] == "DELETED":
                    self.nodes.pop(node.metadata.name, None)
                else:
                    self.nodes[node.metadata.name] = node
                self.observe()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def of(self, label: str) -> list[tuple[str, str]]:
        return [(node, state) for node, kind, state in self.changes if kind == label]


def test_each_driver_rolls_node_by_node_within_the_budget_doca_first(
    four_nodes_older, run_playbook, harness, custom, knobs
):
    # At least 0.1 s in each state (28 a driver over four nodes), so that each roll outlasts
    # the 1 s between two progress lines whatever the machine's speed.
    knobs({"delay_seconds": 0.1})
    with StateLog(harness) as states:
        result = upgrade(run_playbook, *BUDGET, "-e", "gpudirect_rdma_progress_interval=1")
    assert recap(result.stdout)["failed"] == 0, result.stdout[-3000:]
    csvs = installed_csvs(custom)
    assert (csvs["nvidia-network-operator"], csvs["gpu-operator-certified"]) == (
        NETWORK_TARGET,
        GPU_TARGET,
    )
    nodes = [f"worker-{i}" for i in range(4)]
    for label, path in (
        (
            DOCA,
            [
                "upgrade-required",
                "cordon-required",
                "wait-for-jobs-required",
                "drain-required",
                "pod-restart-required",
                "uncordon-required",
                "upgrade-done",
            ],
        ),
        (
            GPU,
            # Held during the GPU Operator's InstallPlans: the controller off, its label gone.
            [None, *GPU_WALK],
        ),
    ):
        walked = states.of(label)
        for node in nodes:
            assert [s for n, s in walked if n == node] == path, (label, node, walked)
        assert states.most[label] == 1, (label, states.busiest[label], walked)
    # The DOCA driver was everywhere before the GPU driver moved on any node.
    changes = states.changes
    last_doca = max(i for i, (_n, label, _s) in enumerate(changes) if label == DOCA)
    first_gpu = min(i for i, (_n, label, _s) in enumerate(changes) if label == GPU)
    assert last_doca < first_gpu
    # The play followed them node by node: its progress lines say which node is where.
    shown = " ".join(result.stdout.split())
    assert re.search(
        r"for gate '(DOCA|GPU) driver rolled out'[^\n]*node\(s\) done, in progress: worker-\d ",
        shown,
    ), result.stdout[-3000:]


def test_a_failing_gpu_driver_stops_the_play_naming_the_node_and_a_rerun_finishes(
    four_nodes_older, run_playbook, harness, custom, knobs, control_plane
):
    knobs(
        {
            "drivers": {
                "fail": [
                    {
                        "node": "worker-2",
                        "driver": "gpu",
                        "message": "NVRM: GPU 0000:1b:00.0: RmInitAdapter failed",
                    }
                ]
            }
        }
    )
    failed = upgrade(run_playbook, *BUDGET, check=False)
    assert failed.returncode != 0
    shown = " ".join(failed.stdout.split())
    assert f"node worker-2 is upgrade-failed ({GPU})" in shown, failed.stdout[-3000:]
    assert "RmInitAdapter failed" in shown
    assert f"oc label node worker-2 {GPU}=upgrade-required --overwrite" in shown
    # The operators are at their targets; only the driver of worker-2 holds.
    assert installed_csvs(custom)["gpu-operator-certified"] == GPU_TARGET
    knobs({"drivers": {"fail": []}})
    client.CoreV1Api(harness).patch_node(
        "worker-2", {"metadata": {"labels": {GPU: "upgrade-required"}}}
    )
    audit = AuditLog(control_plane.audit_log).mark()
    rerun = upgrade(run_playbook, *BUDGET)
    assert recap(rerun.stdout)["failed"] == 0, rerun.stdout[-3000:]
    assert approvals(audit) == []
    states = {
        n.metadata.name: (n.metadata.labels or {}).get(GPU)
        for n in client.CoreV1Api(harness).list_node().items
    }
    assert set(states.values()) == {"upgrade-done"}, states
    assert not [w for w in audit.writes(ADMIN_USER) if w.resource == "subscriptions"]


def test_interrupted_mid_walk_a_rerun_continues_and_approves_nothing_twice(
    four_nodes_older, run_playbook, control_plane, custom
):
    """Ctrl-C once the Network Operator's first upgrade InstallPlan is approved, then the same
    command again: every InstallPlan of the ways approved exactly once over both runs."""
    audit = AuditLog(control_plane.audit_log).mark()
    command = playbook_command(UPGRADE, *UPGRADE_ARGS, *BUDGET)
    with subprocess.Popen(
        command,
        cwd=REPO_ROOT,
        env=playbook_env(control_plane.kubeconfig),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as first:
        wait_for(
            lambda: len(approvals(audit)) >= 1 or first.poll() is not None,
            timeout=120,
            what="the first InstallPlan approved by upgrade.yml",
        )
        first.send_signal(signal.SIGINT)
        output = first.communicate(timeout=60)[0]
    assert first.returncode != 0, output[-2000:]
    interrupted = installed_csvs(custom)
    assert interrupted["gpu-operator-certified"] == "gpu-operator-certified.v25.10.1"
    # OLM goes on without the playbook: the approved hop installs, and with Manual approval the
    # channel's next CSV is planned and waits. The re-run meets that (how soon it does depends on
    # the machine's speed; the first CI runs to meet it failed on it).
    wait_for(
        lambda: _next_hop_waits(custom, "nvidia-network-operator"),
        timeout=120,
        what="the Network Operator's first hop installed and OLM's next InstallPlan waiting",
    )
    rerun = upgrade(run_playbook, *BUDGET)
    assert recap(rerun.stdout)["failed"] == 0, rerun.stdout[-3000:]
    csvs = installed_csvs(custom)
    assert (csvs["nvidia-network-operator"], csvs["gpu-operator-certified"]) == (
        NETWORK_TARGET,
        GPU_TARGET,
    )
    approved = approvals(audit)
    assert len(approved) == len(set(approved)), approved
    # 26.1.0 -> 26.4.0 -> 26.4.1 -> 26.7.0 -> 26.7.0-1 -> 26.7.1, and 25.10.1 -> 26.3.3 -> 26.7.2.
    by_namespace = Counter(namespace for namespace, _name in approved)
    assert by_namespace == {"nvidia-network-operator": 5, "nvidia-gpu-operator": 2}, approved


def _next_hop_waits(custom, namespace: str) -> str | None:
    """The CSV installed in namespace, once its Subscription's InstallPlan is one that waits for
    approval (planned after that CSV was installed); None until then."""
    (subscription,) = custom.list_namespaced_custom_object(
        "operators.coreos.com", "v1alpha1", namespace, "subscriptions"
    )["items"]
    status = subscription.get("status") or {}
    ref = status.get("installPlanRef")
    if not ref or not status.get("installedCSV"):
        return None
    plan = custom.get_namespaced_custom_object(
        "operators.coreos.com", "v1alpha1", namespace, "installplans", ref["name"]
    )
    names = plan["spec"].get("clusterServiceVersionNames") or []
    waiting = not plan["spec"].get("approved") and status["installedCSV"] not in names
    return status["installedCSV"] if waiting else None
