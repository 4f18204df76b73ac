"""The NVIDIA Maintenance Operator, played on a bare API server as far as the collection's gates
need.

Active while a Succeeded CSV of the package `nvidia-maintenance-operator` exists (it reads the
CSVs the tick listed already, so it costs nothing otherwise); without one, NodeMaintenances get
no status at all. It honours only the MaintenanceOperatorConfig `default` in the operator's
namespace (that CSV's): `maxParallelOperations` (an int or a percentage of the fake nodes,
rounded up; default 1, 0 means no limit) and `maxUnavailable` (the same; unset means no limit, 0
pauses all maintenance).

NodeMaintenances in every namespace, oldest first, get the condition `Ready`: False with reason
`Pending` until the budgets allow (at most maxParallelOperations past Pending, at most
maxUnavailable nodes unavailable, that is cordoned, not Ready or under maintenance; one
maintenance per node at a time), then `Scheduled`, `Cordon` (the fake Node's
`spec.unschedulable: true` when `spec.cordon`), `WaitForPodCompletion` (when
`spec.waitForPodCompletion` is given), `Draining` (when `spec.drainSpec` is given), and
finally True with reason `Ready`, one step a tick (each after the delay knob). A node it
cordoned is uncordoned once its NodeMaintenance is gone (or being deleted); it marks the nodes
it cordoned with CORDON_ANNOTATION for that, and leaves alone a node somebody else cordoned.

Nothing is drained or evicted (no `status.drain`), nothing waits for pods, nothing is rebooted,
and Ready NodeMaintenances are not garbage-collected after maxNodeMaintenanceTimeSeconds.
"""

from __future__ import annotations

import math

from kubernetes.client.rest import ApiException

from tests.simulator.core import DelayGate, World, list_cluster, now, replace_status
from tests.simulator.olm import installed_namespace
from tests.simulator.operators import fake_nodes

GROUP, VERSION = "maintenance.nvidia.com", "v1alpha1"
PACKAGE = "nvidia-maintenance-operator"
CONFIG_NAME = "default"
# On a fake node the simulated operator cordoned: the NodeMaintenance (namespace/name) it is for.
CORDON_ANNOTATION = "simulator.gpudirect.rdma/cordoned-for"

PENDING = "Pending"
SCHEDULED = "Scheduled"
CORDON = "Cordon"
WAIT_FOR_POD_COMPLETION = "WaitForPodCompletion"
DRAINING = "Draining"
READY = "Ready"
MESSAGES = {
    SCHEDULED: "node maintenance scheduled",
    CORDON: "node cordoned",
    WAIT_FOR_POD_COMPLETION: "waiting for pods to complete",
    DRAINING: "draining node",
    READY: "node is ready for maintenance",
}
PAUSED_MESSAGE = "maxUnavailable is 0: maintenance paused"


def budget(value, total: int, default: int | None) -> int | None:
    """An int-or-percent limit as a number of nodes (a percentage of total, rounded up)."""
    if value is None:
        return default
    try:
        if isinstance(value, str) and value.strip().endswith("%"):
            return math.ceil(total * int(value.strip()[:-1]) / 100)
        return int(value)
    except ValueError:
        return default


def _key(maintenance: dict) -> str:
    return "{namespace}/{name}".format(**maintenance["metadata"])


def _reason(maintenance: dict) -> str | None:
    for condition in (maintenance.get("status") or {}).get("conditions") or []:
        if condition.get("type") == READY:
            return condition.get("reason")
    return None


def _node_available(node: dict) -> bool:
    ready = next(
        (c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"),
        None,
    )
    return not (node.get("spec") or {}).get("unschedulable") and (
        ready is not None and ready.get("status") == "True"
    )


class MaintenanceOperator:
    name = "maintenance-operator"

    def __init__(self, gate: DelayGate) -> None:
        self.gate = gate

    def reconcile(self, world: World) -> None:
        namespace = installed_namespace(world, PACKAGE)
        if namespace is None:
            return
        spec = self._config(world, namespace)
        maintenances = sorted(
            (
                m
                for m in list_cluster(world, GROUP, VERSION, "nodemaintenances")
                if not m["metadata"].get("deletionTimestamp")
            ),
            key=lambda m: (m["metadata"].get("creationTimestamp") or "", _key(m)),
        )
        nodes = {n["metadata"]["name"]: n for n in fake_nodes(world, reuse=True)}
        self._uncordon(world, nodes, {_key(m) for m in maintenances})

        max_parallel = budget(spec.get("maxParallelOperations"), len(nodes), 1)
        max_unavailable = budget(spec.get("maxUnavailable"), len(nodes), None)
        # A maintenance of a node that left the cluster takes no slot any more.
        in_progress = [
            m
            for m in maintenances
            if _reason(m) not in (None, PENDING) and m["spec"].get("nodeName") in nodes
        ]
        busy = {m["spec"].get("nodeName") for m in in_progress}
        unavailable = {n for n, node in nodes.items() if not _node_available(node)} | busy
        for maintenance in in_progress:
            self._advance(world, maintenance, nodes)
        for maintenance in maintenances:
            reason = _reason(maintenance)
            if reason not in (None, PENDING):
                continue
            node = maintenance["spec"].get("nodeName")
            blocker = self._blocker(
                node, nodes, len(in_progress), busy, unavailable, max_parallel, max_unavailable
            )
            uid = maintenance["metadata"]["uid"]
            delay = world.knobs["delay_seconds"]
            if reason is None:
                if self.gate.due(uid, PENDING, delay):
                    self._write(world, maintenance, PENDING, blocker or "waiting to be scheduled")
            elif blocker is not None:
                self._write(world, maintenance, PENDING, blocker)
            elif self.gate.due(uid, SCHEDULED, delay):
                self._write(world, maintenance, SCHEDULED, MESSAGES[SCHEDULED])
                in_progress.append(maintenance)
                busy.add(node)
                unavailable.add(node)

    @staticmethod
    def _config(world: World, namespace: str) -> dict:
        """The spec of the one MaintenanceOperatorConfig the operator honours ({} without)."""
        try:
            config = world.custom.get_namespaced_custom_object(
                GROUP, VERSION, namespace, "maintenanceoperatorconfigs", CONFIG_NAME
            )
        except ApiException as error:
            if error.status == 404:
                return {}
            raise
        return config.get("spec") or {}

    @staticmethod
    def _blocker(
        node: str,
        nodes: dict,
        in_progress: int,
        busy: set,
        unavailable: set,
        max_parallel: int | None,
        max_unavailable: int | None,
    ) -> str | None:
        """Why a Pending NodeMaintenance cannot be scheduled now (None: it can)."""
        if max_unavailable == 0:
            return PAUSED_MESSAGE
        if node not in nodes:
            return f"node {node} not found"
        if node in busy:
            return f"node {node} is under maintenance for another NodeMaintenance"
        if max_parallel and in_progress >= max_parallel:
            return (
                f"waiting for a free slot: {in_progress} maintenance operations in progress, "
                f"maxParallelOperations is {max_parallel}"
            )
        if max_unavailable is not None and len(unavailable | {node}) > max_unavailable:
            return (
                f"waiting for a free slot: {len(unavailable)} nodes unavailable, maxUnavailable "
                f"is {max_unavailable}"
            )
        return None

    def _advance(self, world: World, maintenance: dict, nodes: dict) -> None:
        """One step further: Scheduled, Cordon, WaitForPodCompletion, Draining, Ready."""
        spec = maintenance.get("spec") or {}
        steps = [SCHEDULED, CORDON]
        if spec.get("waitForPodCompletion"):
            steps.append(WAIT_FOR_POD_COMPLETION)
        if spec.get("drainSpec"):
            steps.append(DRAINING)
        steps.append(READY)
        reason = _reason(maintenance)
        if reason not in steps or reason == READY:
            return
        following = steps[steps.index(reason) + 1]
        uid = maintenance["metadata"]["uid"]
        if not self.gate.due(uid, following, world.knobs["delay_seconds"]):
            return
        if following == CORDON and spec.get("cordon", True):
            node = nodes.get(spec.get("nodeName"))
            if node is not None and not (node.get("spec") or {}).get("unschedulable"):
                world.core.patch_node(
                    node["metadata"]["name"],
                    {
                        "spec": {"unschedulable": True},
                        "metadata": {"annotations": {CORDON_ANNOTATION: _key(maintenance)}},
                    },
                )
                node.setdefault("spec", {})["unschedulable"] = True
        self._write(world, maintenance, following, MESSAGES[following])

    @staticmethod
    def _uncordon(world: World, nodes: dict, live: set[str]) -> None:
        """Nodes the operator cordoned for a NodeMaintenance that is gone are schedulable again."""
        for node in nodes.values():
            cordoned_for = (node["metadata"].get("annotations") or {}).get(CORDON_ANNOTATION)
            if cordoned_for is None or cordoned_for in live:
                continue
            world.core.patch_node(
                node["metadata"]["name"],
                {
                    "spec": {"unschedulable": None},
                    "metadata": {"annotations": {CORDON_ANNOTATION: None}},
                },
            )
            node.setdefault("spec", {}).pop("unschedulable", None)
            node["metadata"]["annotations"].pop(CORDON_ANNOTATION, None)

    @staticmethod
    def _write(world: World, maintenance: dict, reason: str, message: str) -> None:
        status = maintenance.get("status") or {}
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != READY]
        old = next((c for c in status.get("conditions") or [] if c.get("type") == READY), None)
        value = "True" if reason == READY else "False"
        if old and (old.get("status"), old.get("reason"), old.get("message")) == (
            value,
            reason,
            message,
        ):
            return
        conditions.append(
            {
                "type": READY,
                "status": value,
                "reason": reason,
                "message": message,
                "lastTransitionTime": (
                    old["lastTransitionTime"] if old and old.get("status") == value else now()
                ),
            }
        )
        maintenance["status"] = {**status, "conditions": conditions}
        try:
            replace_status(world, GROUP, VERSION, "nodemaintenances", maintenance)
        except ApiException as error:
            if error.status not in (404, 409):  # gone, or changed since listed: next tick
                raise
