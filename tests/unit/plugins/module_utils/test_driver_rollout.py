"""The driver rollout check (k8s/driver_rollout.py) on what a cluster shows: DaemonSets' status
and the nodes' upgrade state labels with the managedFields time of their last write."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils import gates
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.driver_rollout import (
    observe,
    state_since,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import (
    GateFailed,
    to_gate,
    wait_for,
)

STATE = "nvidia.com/gpu-driver-upgrade-state"
NOW = datetime.datetime(2026, 12, 5, 12, 0, 0, tzinfo=datetime.UTC)


def rollout_gate(stuck_after: int | None = 1800):
    return to_gate(
        gates.driver_rolled_out(
            "GPU driver rolled out",
            "nvidia-gpu-operator",
            "app.kubernetes.io/component=nvidia-driver",
            STATE,
            stuck_after,
            "oc get nodes",
        )
    )


def daemonset(desired=4, updated=4, ready=4, generation=2, observed=2) -> dict:
    return {
        "metadata": {
            "name": "nvidia-driver-daemonset",
            "namespace": "nvidia-gpu-operator",
            "generation": generation,
        },
        "spec": {"selector": {"matchLabels": {"app": "nvidia-driver-daemonset"}}},
        "status": {
            "observedGeneration": observed,
            "desiredNumberScheduled": desired,
            "updatedNumberScheduled": updated,
            "numberReady": ready,
        },
    }


def node(name: str, state: str | None, seconds_ago: float = 10) -> dict:
    """A node whose state label the controller wrote seconds_ago (its managedFields entry)."""
    labels = {} if state is None else {STATE: state}
    written = (NOW - datetime.timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    fields = {"f:metadata": {"f:labels": {f"f:{STATE}": {}}}} if state is not None else {}
    return {
        "metadata": {
            "name": name,
            "labels": labels,
            "managedFields": [
                {"manager": "kubelet", "time": "2026-01-01T00:00:00Z", "fieldsV1": {}},
                {"manager": "gpu-operator", "time": written, "fieldsV1": fields},
            ],
        }
    }


class Cluster:
    def __init__(self, daemonsets, nodes, pods=(), log=""):
        self.daemonsets, self.nodes, self.pods, self.text = daemonsets, nodes, list(pods), log
        self.logs_read = []

    def list(self, api_version, kind, namespace=None, label_selector=None):
        return {"DaemonSet": self.daemonsets, "Node": self.nodes, "Pod": self.pods}[kind]

    def log(self, name, namespace, container, tail_lines=None, previous=False, timeout=30):
        self.logs_read.append((namespace, name, container, tail_lines))
        return self.text


def test_every_node_done_and_every_pod_updated_is_rolled_out():
    found = observe(
        Cluster([daemonset()], [node(f"gpu-{i}", "upgrade-done") for i in range(4)]), rollout_gate()
    )
    assert found.met and not found.failed
    assert found.seen == "1 driver DaemonSet(s) rolled out; 4 node(s) done"


def test_each_read_says_which_nodes_are_done_moving_and_waiting():
    nodes = [
        node("gpu-0", "upgrade-done"),
        node("gpu-1", "pod-restart-required"),
        node("gpu-2", "upgrade-required"),
        node("gpu-3", "upgrade-required"),
    ]
    found = observe(Cluster([daemonset(updated=1, ready=3)], nodes), rollout_gate(), NOW)
    assert not found.met and not found.failed
    assert found.seen == (
        "1 node(s) done, in progress: gpu-1 pod-restart-required, waiting: gpu-2, gpu-3; "
        "DaemonSet nvidia-driver-daemonset: 1 of 4 pods updated, 3 ready"
    )


@pytest.mark.parametrize(
    ("ds", "words"),
    [
        (daemonset(generation=3, observed=2), "has not seen its new template yet"),
        (daemonset(updated=3), "3 of 4 pods updated"),
        (daemonset(ready=3), "4 of 4 pods updated, 3 ready"),
    ],
)
def test_nodes_done_before_the_controller_saw_the_new_template_are_not_rolled_out(ds, words):
    """Right after a driver change every node still says upgrade-done: the DaemonSet's status
    tells that the pods do not run its template yet."""
    found = observe(Cluster([ds], [node("gpu-0", "upgrade-done")]), rollout_gate(), NOW)
    assert not found.met and words in found.seen


DOCA_VERSION = "25.10-1.2.8.0-2"


def doca_daemonset(image: str) -> dict:
    """A DOCA driver DaemonSet of the NicClusterPolicy, its pods all at its template."""
    found = daemonset()
    found["metadata"]["name"] = "mofed-rhcos4.18-6bd8c5c4c9-ds"
    found["metadata"]["ownerReferences"] = [
        {"kind": "NicClusterPolicy", "name": "nic-cluster-policy", "controller": True}
    ]
    found["spec"]["template"] = {"spec": {"containers": [{"name": "mofed", "image": image}]}}
    return found


def doca_gate(version: str = DOCA_VERSION):
    return to_gate(
        gates.driver_rolled_out(
            "DOCA driver rolled out",
            "nvidia-network-operator",
            "nvidia.com/ofed-driver",
            STATE,
            1800,
            "oc get nodes",
            {"NicClusterPolicy/nic-cluster-policy": version},
        )
    )


@pytest.mark.parametrize(
    "image",
    [
        f"nvcr.io/nvidia/mellanox/doca-driver:{DOCA_VERSION}-rhcos4.18-amd64",
        "nvcr.io/nvidia/mellanox/doca-driver@sha256:" + "ab" * 32,
    ],
)
def test_a_daemonset_its_policy_owns_is_rendered_when_its_template_holds_the_version(image):
    """Right after the NicClusterPolicy's DOCA version is written, before the operator renders
    it, the DaemonSet, its pods and every node still say done: only the template's image tells."""
    version = image.rsplit("@", 1)[1] if "@" in image else DOCA_VERSION
    cluster = Cluster([doca_daemonset(image)], [node("gpu-0", "upgrade-done")])
    assert observe(cluster, doca_gate(version), NOW).met
    older = observe(cluster, doca_gate("26.01-0.9.1.0-0"), NOW)
    assert not older.met and not older.failed
    assert older.seen.endswith(
        f"DaemonSet mofed-rhcos4.18-6bd8c5c4c9-ds runs {image}; NicClusterPolicy/"
        "nic-cluster-policy asks for 26.01-0.9.1.0-0: the operator has not rendered it yet"
    )


def test_a_daemonset_no_listed_policy_owns_is_judged_by_its_status_alone():
    ds = doca_daemonset("nvcr.io/nvidia/mellanox/doca-driver:24.10-rhcos4.18-amd64")
    ds["metadata"]["ownerReferences"][0]["name"] = "another-policy"
    assert observe(Cluster([ds], [node("gpu-0", "upgrade-done")]), doca_gate(), NOW).met


def test_a_failed_node_fails_at_once_with_its_driver_pods_last_lines():
    pod = {
        "metadata": {"name": "nvidia-driver-daemonset-x2x", "namespace": "nvidia-gpu-operator"},
        "spec": {"nodeName": "gpu-2", "containers": [{"name": "nvidia-driver-ctr"}]},
    }
    cluster = Cluster(
        [daemonset(updated=2)],
        [node("gpu-1", "upgrade-required"), node("gpu-2", "upgrade-failed")],
        pods=[pod],
        log="Installing\n\nCould not resolve Linux kernel version\nStopping NVIDIA driver\n",
    )
    found = observe(cluster, rollout_gate(), NOW)
    assert found.failed
    assert found.seen == (
        f"node gpu-2 is upgrade-failed ({STATE}): driver pod "
        "nvidia-gpu-operator/nvidia-driver-daemonset-x2x: Installing | Could not resolve Linux "
        "kernel version | Stopping NVIDIA driver. It holds a slot of the upgrade budget, so the "
        f"other nodes wait. Fix the cause, then retry it: oc label node gpu-2 {STATE}="
        "upgrade-required --overwrite"
    )
    assert cluster.logs_read == [
        ("nvidia-gpu-operator", "nvidia-driver-daemonset-x2x", "nvidia-driver-ctr", 5)
    ]


def test_a_node_in_one_state_longer_than_stuck_after_fails_with_what_to_do():
    stuck = [node("gpu-0", "upgrade-done", 5000), node("gpu-1", "drain-required", 1801)]
    found = observe(Cluster([daemonset(updated=1)], stuck), rollout_gate(1800), NOW)
    assert found.failed
    assert found.seen.startswith(
        "node gpu-1 has been drain-required for 1801s (more than 1800s): the drain does not "
        "finish: a PodDisruptionBudget"
    )
    moving = [node("gpu-0", "upgrade-done", 5000), node("gpu-1", "drain-required", 1799)]
    assert not observe(Cluster([daemonset(updated=1)], moving), rollout_gate(1800), NOW).failed
    # Without a limit only the timeout ends the wait.
    assert not observe(Cluster([daemonset(updated=1)], stuck), rollout_gate(None), NOW).failed


def test_no_driver_daemonset_is_nothing_to_roll_out():
    """A preinstalled driver (the ClusterPolicy's driver.enabled false) has no DaemonSet."""
    found = observe(Cluster([], [node("gpu-0", None)]), rollout_gate(), NOW)
    assert found.met


def test_the_state_was_written_when_its_managed_fields_entry_says():
    written = node("gpu-0", "cordon-required", 42)
    assert state_since(written, STATE) == NOW - datetime.timedelta(seconds=42)
    assert state_since(node("gpu-0", None), STATE) is None


def test_the_wait_fails_at_once_on_a_failed_node_with_its_log():
    """Through wait_for, which reads each poll through its own cache of the cluster."""
    pod = {
        "metadata": {"name": "nvidia-driver-daemonset-7q", "namespace": "nvidia-gpu-operator"},
        "spec": {"nodeName": "gpu-1", "containers": [{"name": "nvidia-driver-ctr"}]},
    }
    cluster = Cluster(
        [daemonset(updated=1)], [node("gpu-1", "upgrade-failed")], pods=[pod], log="boom\n"
    )
    with pytest.raises(GateFailed, match="node gpu-1 is upgrade-failed .*7q: boom"):
        wait_for(cluster, [rollout_gate()], timeout=5, sleep=lambda _s: None)
