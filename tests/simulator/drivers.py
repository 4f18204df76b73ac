"""The driver upgrade controllers of the GPU Operator and the Network Operator, played on a bare
API server: one state machine (both operators use NVIDIA k8s-operator-libs' pkg/upgrade), two
drivers.

- GPU driver: the nodes whose hardware has GPUs, while a ClusterPolicy exists. The driver the
  DaemonSet would run is `spec.driver.repository/image:version` when all three are set, else the
  `DRIVER_IMAGE` env of the installed GPU Operator CSV. Node label
  `nvidia.com/gpu-driver-upgrade-state`.
- DOCA driver: the nodes a NicNodePolicy with `spec.ofedDriver` selects, else those the
  NicClusterPolicy with `spec.ofedDriver` admits by `spec.nodeAffinity`; the driver is that
  policy's `ofedDriver.version`. Node label `nvidia.com/ofed-driver-upgrade-state`. In requestor
  mode (`MAINTENANCE_OPERATOR_ENABLED=true` in the Network Operator's environment: its CSV's,
  overridden by its Subscription's `spec.config.env`) the node is handed to the Maintenance
  Operator through a NodeMaintenance instead of being cordoned and drained here.

Each node's running driver is kept on the fake node in an annotation the simulator owns. A
managed node without one gets the desired driver at once (a fresh install). With autoUpgrade, a
node whose running driver differs from the desired one walks its driver's path, one state a tick
(each after the delay knob), within the upgrade budget; the running driver changes at
`pod-restart-required`, where the driver pod is deleted and created again, or the node ends in
`upgrade-failed` when the knob `drivers.fail` names it. Without autoUpgrade the state labels are
removed and a running driver changes only when its pod is deleted. One driver pod per managed
node, Running, with a log served by the kubelet's endpoint (pods.LogServer).

Nothing waits for jobs, deletes or evicts workload pods, drains, or validates; the simulator
writes only the state labels, spec.unschedulable, its own annotations, its own pods and (in
requestor mode) its own NodeMaintenances.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kubernetes.client.rest import ApiException

from tests.simulator.core import (
    DelayGate,
    World,
    affinity_matches,
    list_cluster,
    now,
    selector_matches,
)
from tests.simulator.maintenance import budget
from tests.simulator.olm import installed_csv
from tests.simulator.operators import fake_nodes, hardware_of

log = logging.getLogger("simulator")

GPU_PACKAGE = "gpu-operator-certified"
NETWORK_OPERATOR_PACKAGE = "nvidia-network-operator"
OLM = ("operators.coreos.com", "v1alpha1")
MAINTENANCE = ("maintenance.nvidia.com", "v1alpha1")

# The node states (k8s-operator-libs pkg/upgrade/consts.go); "" is a node not processed yet.
UNKNOWN = ""
UPGRADE_REQUIRED = "upgrade-required"
CORDON_REQUIRED = "cordon-required"
WAIT_FOR_JOBS_REQUIRED = "wait-for-jobs-required"
POD_DELETION_REQUIRED = "pod-deletion-required"
DRAIN_REQUIRED = "drain-required"
NODE_MAINTENANCE_REQUIRED = "node-maintenance-required"
POD_RESTART_REQUIRED = "pod-restart-required"
VALIDATION_REQUIRED = "validation-required"
UNCORDON_REQUIRED = "uncordon-required"
UPGRADE_DONE = "upgrade-done"
UPGRADE_FAILED = "upgrade-failed"
# A node in any other state takes an upgrade slot, an upgrade-failed one too (common_manager.go).
NOT_IN_PROGRESS = frozenset({UNKNOWN, UPGRADE_DONE, UPGRADE_REQUIRED})

GPU_PATH = (
    UPGRADE_REQUIRED,
    CORDON_REQUIRED,
    WAIT_FOR_JOBS_REQUIRED,
    POD_DELETION_REQUIRED,
    POD_RESTART_REQUIRED,
    VALIDATION_REQUIRED,
    UNCORDON_REQUIRED,
    UPGRADE_DONE,
)


def doca_path(drain: bool, requestor: bool) -> tuple[str, ...]:
    """The DOCA driver's states, in order: in place (drain-required only when the policy's
    drain is enabled) or, in requestor mode, through a NodeMaintenance."""
    if requestor:
        return (
            UPGRADE_REQUIRED,
            NODE_MAINTENANCE_REQUIRED,
            POD_RESTART_REQUIRED,
            UNCORDON_REQUIRED,
            UPGRADE_DONE,
        )
    drain_states = (DRAIN_REQUIRED,) if drain else ()
    return (
        UPGRADE_REQUIRED,
        CORDON_REQUIRED,
        WAIT_FOR_JOBS_REQUIRED,
        *drain_states,
        POD_RESTART_REQUIRED,
        UNCORDON_REQUIRED,
        UPGRADE_DONE,
    )


def following(path: tuple[str, ...], state: str) -> str | None:
    """The state after state on path (None at its end or off it)."""
    if state not in path or state == path[-1]:
        return None
    return path[path.index(state) + 1]


@dataclass(frozen=True)
class Driver:
    """What tells one driver's upgrades apart: the knob's name for it, the node label and
    annotations, and its DaemonSet's pods."""

    name: str
    state_label: str
    # The driver running on the node (owned by the simulator).
    running_annotation: str
    # Set when this controller cordoned the node: only such a node is uncordoned at the end.
    cordon_annotation: str
    pod_prefix: str
    pod_labels: dict
    container: str
    skip_label: str | None


GPU = Driver(
    name="gpu",
    state_label="nvidia.com/gpu-driver-upgrade-state",
    running_annotation="simulator.gpudirect.rdma/gpu-driver",
    cordon_annotation="simulator.gpudirect.rdma/gpu-driver-cordoned",
    pod_prefix="nvidia-driver-daemonset-",
    pod_labels={"app": "nvidia-driver-daemonset"},
    container="nvidia-driver-ctr",
    skip_label="nvidia.com/gpu-driver-upgrade.skip",
)
DOCA = Driver(
    name="doca",
    state_label="nvidia.com/ofed-driver-upgrade-state",
    running_annotation="simulator.gpudirect.rdma/doca-driver",
    cordon_annotation="simulator.gpudirect.rdma/doca-driver-cordoned",
    pod_prefix="mofed-",
    pod_labels={"nvidia.com/ofed-driver": ""},
    container="mofed-container",
    skip_label=None,
)


@dataclass(frozen=True)
class Requestor:
    """How the Network Operator asks the Maintenance Operator for a node: the env it reads,
    with k8s-operator-libs' defaults (GetRequestorOptsFromEnvs: no default requestor ID)."""

    requestor_id: str
    namespace: str
    prefix: str


@dataclass(frozen=True)
class Group:
    """The nodes one policy's upgrade state manager handles, and how it upgrades them."""

    owner: dict  # the ClusterPolicy, NicClusterPolicy or NicNodePolicy
    nodes: tuple[dict, ...]
    desired: str  # the driver its DaemonSet would run now
    image_prefix: str  # the pod image is image_prefix + the running driver
    auto_upgrade: bool
    max_parallel: int  # 0: no limit
    max_unavailable: int | None  # None: no limit
    path: tuple[str, ...]
    requestor: Requestor | None = None
    maintenance_spec: dict | None = None  # drainSpec and waitForPodCompletion, in requestor mode


def env_of(csv: dict | None) -> dict[str, str]:
    """The env of every container of a CSV's deployments, by name."""
    env: dict[str, str] = {}
    deployments = (((csv or {}).get("spec") or {}).get("install") or {}).get("spec") or {}
    for deployment in deployments.get("deployments") or []:
        pod_spec = (((deployment.get("spec") or {}).get("template") or {}).get("spec")) or {}
        for container in pod_spec.get("containers") or []:
            for variable in container.get("env") or []:
                env[variable["name"]] = str(variable.get("value", ""))
    return env


def gpu_desired_driver(driver_spec: dict, csv: dict | None) -> str | None:
    """The GPU driver image of the ClusterPolicy's DaemonSet: repository/image:version when all
    three are set, else the CSV's DRIVER_IMAGE (clusterpolicy_types.go imagePath)."""
    parts = [driver_spec.get(key) for key in ("repository", "image", "version")]
    if all(parts):
        repository, image, version = parts
        return f"{repository}/{image}:{version}"
    return env_of(csv).get("DRIVER_IMAGE") or None


def requestor_from_env(env: dict[str, str]) -> Requestor | None:
    """Requestor mode's settings, or None when MAINTENANCE_OPERATOR_ENABLED is not true."""
    if env.get("MAINTENANCE_OPERATOR_ENABLED") != "true":
        return None
    return Requestor(
        requestor_id=env.get("MAINTENANCE_OPERATOR_REQUESTOR_ID", ""),
        namespace=env.get("MAINTENANCE_OPERATOR_REQUESTOR_NAMESPACE") or "default",
        prefix=env.get("MAINTENANCE_OPERATOR_NODE_MAINTENANCE_PREFIX") or "nvidia-operator",
    )


def upgrade_slots(
    states: list[str],
    unavailable: int,
    max_parallel: int,
    max_unavailable: int | None,
) -> int:
    """How many nodes may leave upgrade-required now: maxParallelUpgrades (0: no limit) less the
    nodes in progress, and no more than maxUnavailable less the nodes already unavailable."""
    in_progress = sum(1 for state in states if state not in NOT_IN_PROGRESS)
    slots = len(states) - in_progress if max_parallel == 0 else max_parallel - in_progress
    if max_unavailable is not None:
        slots = min(slots, max_unavailable - unavailable)
    return max(slots, 0)


def unavailable(node: dict) -> bool:
    """Cordoned, or not Ready: what maxUnavailable counts."""
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or []
    )
    return bool((node.get("spec") or {}).get("unschedulable")) or not ready


def failure_of(knobs: dict, driver: str, node: str) -> str | None:
    """The message with which the knob drivers.fail makes this node's driver pod fail, or None."""
    for entry in (knobs.get("drivers") or {}).get("fail") or []:
        if entry.get("node") == node and entry.get("driver") == driver:
            return entry.get("message") or "simulated driver failure"
    return None


def owner_reference(owner: dict) -> dict:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": False,
    }


def _name(node: dict) -> str:
    return node["metadata"]["name"]


def _labels(node: dict) -> dict:
    return node["metadata"].get("labels") or {}


def _annotations(node: dict) -> dict:
    return node["metadata"].get("annotations") or {}


class DriverUpgrades:
    """One driver's upgrade controller: the state machine and the driver pods. A subclass says
    which nodes are managed, by which policy (groups) and where the pods run (namespace)."""

    driver: Driver
    name = ""

    def __init__(self, gate: DelayGate, logs: dict | None = None) -> None:
        self.gate = gate
        # The kubelet log endpoint's logs (pods.LogServer.logs), by (namespace, pod, container).
        self.logs = logs if logs is not None else {}
        self._refused: set[str] = set()  # NodeMaintenances refused once, logged once

    def groups(self, world: World) -> list[Group] | None:
        """The groups of managed nodes, or None while nothing enables this driver (then the
        controller sends no request at all)."""
        raise NotImplementedError

    def namespace(self, world: World) -> str | None:
        """The namespace of the driver pods (the operator's)."""
        raise NotImplementedError

    def reconcile(self, world: World) -> None:
        groups = self.groups(world)
        if groups is None:
            return
        maintenances = None
        if any(g.requestor is not None for g in groups):
            maintenances = {
                (m["metadata"]["namespace"], m["metadata"]["name"]): m
                for m in list_cluster(world, *MAINTENANCE, "nodemaintenances", reuse=True)
            }
        namespace = self._active_namespace(world)
        for group in groups:
            self._install_fresh(world, group)
            if group.auto_upgrade:
                self._advance(world, group, namespace, maintenances or {})
            else:
                self._forget_states(world, group)
        if namespace is not None:
            self._sync_pods(world, groups, namespace)

    # -- the state machine --------------------------------------------------------------------

    def _install_fresh(self, world: World, group: Group) -> None:
        """A node without a running driver gets the desired one (upgrade-done with autoUpgrade)."""
        for node in group.nodes:
            if self.driver.running_annotation in _annotations(node):
                continue
            labels = {self.driver.state_label: UPGRADE_DONE} if group.auto_upgrade else {}
            self._patch(
                world,
                node,
                {"metadata": {"labels": labels, "annotations": self._running(group.desired)}},
            )

    def _forget_states(self, world: World, group: Group) -> None:
        """Without autoUpgrade the controller is off: no state labels (upgrade_controller.go)."""
        for node in group.nodes:
            if self.driver.state_label in _labels(node):
                self._patch(world, node, {"metadata": {"labels": {self.driver.state_label: None}}})

    def _advance(
        self, world: World, group: Group, namespace: str | None, maintenances: dict
    ) -> None:
        """Move each node of the group one state on, where its state, the budget and the
        delay allow; the budget is counted once, from the states the tick started with, so a
        node that finishes frees its slot for the next tick, never the same one."""
        states = [_labels(n).get(self.driver.state_label, UNKNOWN) for n in group.nodes]
        slots = upgrade_slots(
            states,
            sum(1 for n in group.nodes if unavailable(n)),
            group.max_parallel,
            group.max_unavailable,
        )
        for node, state in zip(group.nodes, states, strict=True):
            running = _annotations(node).get(self.driver.running_annotation)
            if state in (UNKNOWN, UPGRADE_DONE):
                target = UPGRADE_DONE if running == group.desired else UPGRADE_REQUIRED
                if target != state and self._due(world, node, group, target):
                    self._move(world, node, target)
            elif state == UPGRADE_REQUIRED:
                if group.requestor is not None:
                    self._request_maintenance(world, node, group)
                elif self._may_start(node, slots) and self._due(
                    world, node, group, CORDON_REQUIRED
                ):
                    slots -= 1
                    self._move(world, node, CORDON_REQUIRED)
            elif state == NODE_MAINTENANCE_REQUIRED:
                self._await_maintenance(world, node, group, maintenances)
            elif state in group.path:
                target = following(group.path, state)
                if target is not None and self._due(world, node, group, target):
                    self._leave(world, node, group, state, target, namespace)

    def _may_start(self, node: dict, slots: int) -> bool:
        """Whether a node in upgrade-required may go on (ProcessUpgradeRequiredNodes): not one
        marked to skip; with a free slot, or cordoned already (by hand, or a retry after
        upgrade-failed), which makes nothing less available than it is."""
        skip = self.driver.skip_label
        if skip is not None and _labels(node).get(skip) == "true":
            return False
        return slots > 0 or bool((node.get("spec") or {}).get("unschedulable"))

    def _due(self, world: World, node: dict, group: Group, target: str) -> bool:
        step = f"{self.driver.name}:{group.desired}:{target}"
        return self.gate.due(node["metadata"]["uid"], step, world.knobs["delay_seconds"])

    def _leave(
        self,
        world: World,
        node: dict,
        group: Group,
        state: str,
        target: str,
        namespace: str | None,
    ) -> None:
        """Do what leaving state takes (cordon, restart the driver pod, uncordon), then move."""
        patch: dict = {"metadata": {"annotations": {}}}
        annotations = patch["metadata"]["annotations"]
        if state == CORDON_REQUIRED and not (node.get("spec") or {}).get("unschedulable"):
            patch["spec"] = {"unschedulable": True}
            annotations[self.driver.cordon_annotation] = "true"
        elif state == POD_RESTART_REQUIRED:
            message = failure_of(world.knobs, self.driver.name, _name(node))
            if message is None:
                annotations.update(self._running(group.desired))
            else:
                target = UPGRADE_FAILED
            if namespace is not None:
                self._restart_pod(world, node, group, namespace, message)
        elif state == UNCORDON_REQUIRED:
            if group.requestor is not None:
                self._delete_maintenance(world, node, group)
            elif self.driver.cordon_annotation in _annotations(node):
                patch["spec"] = {"unschedulable": None}
                annotations[self.driver.cordon_annotation] = None
        self._move(world, node, target, patch)

    # -- requestor mode -----------------------------------------------------------------------

    def _maintenance_name(self, node: dict, group: Group) -> str:
        return f"{group.requestor.prefix}-{_name(node)}"

    def _request_maintenance(self, world: World, node: dict, group: Group) -> None:
        """upgrade-required -> node-maintenance-required once the NodeMaintenance is created (no
        slots: the Maintenance Operator's budgets govern). The API server refuses one without a
        valid requestorID (the CRD's pattern): the node then stays in upgrade-required."""
        if not self._due(world, node, group, NODE_MAINTENANCE_REQUIRED):
            return
        requestor = group.requestor
        name = self._maintenance_name(node, group)
        body = {
            "apiVersion": "/".join(MAINTENANCE),
            "kind": "NodeMaintenance",
            "metadata": {"name": name, "namespace": requestor.namespace},
            "spec": {
                "requestorID": requestor.requestor_id,
                "nodeName": _name(node),
                "cordon": True,
                **(group.maintenance_spec or {}),
            },
        }
        try:
            world.custom.create_namespaced_custom_object(
                *MAINTENANCE, requestor.namespace, "nodemaintenances", body
            )
        except ApiException as error:
            if error.status in (404, 422):  # no such namespace, or an invalid NodeMaintenance
                key = f"{requestor.namespace}/{name}"
                if key not in self._refused:
                    self._refused.add(key)
                    log.warning("%s: NodeMaintenance %s refused: %s", self.name, key, error.body)
                return
            if error.status != 409:
                raise
        self._refused.discard(f"{requestor.namespace}/{name}")
        self._move(world, node, NODE_MAINTENANCE_REQUIRED)

    def _await_maintenance(
        self, world: World, node: dict, group: Group, maintenances: dict
    ) -> None:
        """node-maintenance-required -> pod-restart-required once the NodeMaintenance is Ready;
        back to upgrade-required when it is gone (or requestor mode is off)."""
        key = (
            (group.requestor.namespace, self._maintenance_name(node, group))
            if group.requestor
            else None
        )
        maintenance = maintenances.get(key)
        if maintenance is None:
            if self._due(world, node, group, f"{UPGRADE_REQUIRED}-again"):
                self._move(world, node, UPGRADE_REQUIRED)
            return
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True" and c.get("reason") == "Ready"
            for c in (maintenance.get("status") or {}).get("conditions") or []
        )
        if ready and self._due(world, node, group, POD_RESTART_REQUIRED):
            self._move(world, node, POD_RESTART_REQUIRED)

    def _delete_maintenance(self, world: World, node: dict, group: Group) -> None:
        try:
            world.custom.delete_namespaced_custom_object(
                *MAINTENANCE,
                group.requestor.namespace,
                "nodemaintenances",
                self._maintenance_name(node, group),
            )
        except ApiException as error:
            if error.status != 404:
                raise

    # -- nodes --------------------------------------------------------------------------------

    def _running(self, driver: str) -> dict:
        return {self.driver.running_annotation: driver}

    def _move(self, world: World, node: dict, state: str, patch: dict | None = None) -> None:
        patch = dict(patch or {})
        metadata = dict(patch.get("metadata") or {})
        metadata["labels"] = {**(metadata.get("labels") or {}), self.driver.state_label: state}
        patch["metadata"] = metadata
        self._patch(world, node, patch)

    @staticmethod
    def _patch(world: World, node: dict, patch: dict) -> None:
        """Patch the node, and the tick's copy of it, so that later controllers see the change."""
        world.core.patch_node(_name(node), patch)
        metadata = patch.get("metadata") or {}
        for key in ("labels", "annotations"):
            current = node["metadata"].setdefault(key, {}) or {}
            for name, value in (metadata.get(key) or {}).items():
                if value is None:
                    current.pop(name, None)
                else:
                    current[name] = value
            node["metadata"][key] = current
        if "spec" in patch:
            node.setdefault("spec", {})["unschedulable"] = patch["spec"].get("unschedulable")

    # -- driver pods --------------------------------------------------------------------------

    def _active_namespace(self, world: World) -> str | None:
        """The pods' namespace, if it exists and is not being deleted."""
        namespace = self.namespace(world)
        if namespace is None:
            return None
        try:
            found = world.core.read_namespace(namespace)
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        return namespace if (found.status.phase or "Active") == "Active" else None

    def _sync_pods(self, world: World, groups: list[Group], namespace: str) -> None:
        """One driver pod per managed node, as the DaemonSets keep them: a missing one is
        created from the DaemonSet's current template (the node then runs the desired driver,
        unless the knob fails it); those of nodes no longer managed are deleted."""
        selector = ",".join(f"{k}={v}" if v else k for k, v in self.driver.pod_labels.items())
        pods = {
            p.metadata.name: p
            for p in world.core.list_namespaced_pod(namespace, label_selector=selector).items
            if p.metadata.name.startswith(self.driver.pod_prefix)
        }
        wanted = {}
        for group in groups:
            for node in group.nodes:
                wanted[self.driver.pod_prefix + _name(node)] = (group, node)
        for name in set(pods) - set(wanted):
            self._delete_pod(world, namespace, name)
        for name, (group, node) in wanted.items():
            if name in pods:
                continue
            changes = _annotations(node).get(self.driver.running_annotation) != group.desired
            message = failure_of(world.knobs, self.driver.name, _name(node)) if changes else None
            if changes and message is None:
                running = self._running(group.desired)
                self._patch(world, node, {"metadata": {"annotations": running}})
            self._create_pod(world, node, group, namespace, message)

    def _restart_pod(
        self, world: World, node: dict, group: Group, namespace: str, failure: str | None
    ) -> None:
        self._delete_pod(world, namespace, self.driver.pod_prefix + _name(node))
        self._create_pod(world, node, group, namespace, failure)

    def _delete_pod(self, world: World, namespace: str, name: str) -> None:
        try:
            world.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        except ApiException as error:
            if error.status != 404:
                raise
        self.logs.pop((namespace, name, self.driver.container), None)

    def _create_pod(
        self, world: World, node: dict, group: Group, namespace: str, failure: str | None
    ) -> None:
        """The driver pod on node, from the DaemonSet's template (the desired driver). It runs
        and says the driver is loaded; with a failure, its container crash-loops and its log
        ends with the failure's message."""
        name = self.driver.pod_prefix + _name(node)
        image = group.image_prefix + group.desired
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": dict(self.driver.pod_labels),
                "ownerReferences": [owner_reference(group.owner)],
            },
            "spec": {
                "nodeName": _name(node),
                "containers": [{"name": self.driver.container, "image": image}],
                "tolerations": [{"operator": "Exists"}],
            },
        }
        try:
            world.core.create_namespaced_pod(namespace, body)
        except ApiException as error:
            if error.status != 409:
                raise
        self.logs[(namespace, name, self.driver.container)] = driver_log(image, failure)
        world.core.patch_namespaced_pod_status(name, namespace, pod_status(body, failure))


def driver_log(image: str, failure: str | None) -> str:
    """What the driver container prints: its image, then the driver loaded, or the failure."""
    last = failure if failure is not None else f"driver loaded: {image}"
    return f"starting driver container {image}\n{last}\n"


def pod_status(pod: dict, failure: str | None) -> dict:
    """A Running driver pod: its container ready, or crash-looping with a failure."""
    stamp = now()
    container = pod["spec"]["containers"][0]
    state = (
        {"waiting": {"reason": "CrashLoopBackOff", "message": failure}}
        if failure is not None
        else {"running": {"startedAt": stamp}}
    )
    ready = str(failure is None)
    return {
        "status": {
            "phase": "Running",
            "hostIP": "127.0.0.1",
            "startTime": stamp,
            "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": stamp}],
            "containerStatuses": [
                {
                    "name": container["name"],
                    "image": container["image"],
                    "imageID": "",
                    "ready": failure is None,
                    "restartCount": 0,
                    "state": state,
                }
            ],
        }
    }


class GpuDriverUpgrades(DriverUpgrades):
    """The GPU Operator's upgrade controller (controllers/upgrade_controller.go): the GPU nodes,
    while a ClusterPolicy exists, with its spec.driver.upgradePolicy."""

    driver = GPU
    name = "gpu-driver-upgrades"

    def groups(self, world: World) -> list[Group] | None:
        policies = list_cluster(world, "nvidia.com", "v1", "clusterpolicies", reuse=True)
        if not policies:
            return None
        policy = min(policies, key=lambda p: p["metadata"].get("creationTimestamp") or "")
        driver_spec = (policy.get("spec") or {}).get("driver") or {}
        desired = gpu_desired_driver(driver_spec, installed_csv(world, GPU_PACKAGE))
        if desired is None:
            return []  # no image: the DaemonSet cannot be rendered
        nodes = tuple(
            sorted(
                (n for n in fake_nodes(world, reuse=True) if (hardware_of(n) or {}).get("gpus")),
                key=_name,
            )
        )
        upgrade = driver_spec.get("upgradePolicy") or {}
        return [
            Group(
                owner=policy,
                nodes=nodes,
                desired=desired,
                image_prefix="",
                auto_upgrade=bool(upgrade.get("autoUpgrade")),
                max_parallel=int(upgrade.get("maxParallelUpgrades", 1)),
                max_unavailable=budget(upgrade.get("maxUnavailable"), len(nodes), None),
                path=GPU_PATH,
            )
        ]

    def namespace(self, world: World) -> str | None:
        policies = list_cluster(world, "nvidia.com", "v1", "clusterpolicies", reuse=True)
        written = next(
            ((p.get("status") or {}).get("namespace") for p in policies if p.get("status")), None
        )
        csv = installed_csv(world, GPU_PACKAGE)
        return written or (csv["metadata"]["namespace"] if csv else None)


class DocaDriverUpgrades(DriverUpgrades):
    """The Network Operator's upgrade controller (controllers/upgrade_controller.go): one state
    manager per policy with an ofedDriver (the NicClusterPolicy's, each NicNodePolicy's)."""

    driver = DOCA
    name = "doca-driver-upgrades"

    def groups(self, world: World) -> list[Group] | None:
        cluster_policies, node_policies = (
            [
                p
                for p in list_cluster(world, "mellanox.com", "v1alpha1", plural, reuse=True)
                if (p.get("spec") or {}).get("ofedDriver")
            ]
            for plural in ("nicclusterpolicies", "nicnodepolicies")
        )
        if not cluster_policies and not node_policies:
            return None
        members: dict[str, list[dict]] = {}
        for node in sorted(fake_nodes(world, reuse=True), key=_name):
            policy = self._policy_of(node, cluster_policies, node_policies)
            if policy is not None:
                members.setdefault(policy["metadata"]["uid"], []).append(node)
        requestor = self._requestor(world)
        groups = []
        for policy in cluster_policies + node_policies:
            nodes = members.get(policy["metadata"]["uid"])
            if nodes:
                groups.append(self._group(policy, tuple(nodes), requestor))
        return groups

    @staticmethod
    def _policy_of(node: dict, cluster_policies: list, node_policies: list) -> dict | None:
        """The policy whose DOCA DaemonSet runs on node: a NicNodePolicy selecting it, else the
        NicClusterPolicy admitting it."""
        labels = _labels(node)
        for policy in node_policies:
            if selector_matches((policy.get("spec") or {}).get("nodeSelector"), labels):
                return policy
        for policy in cluster_policies:
            if affinity_matches((policy.get("spec") or {}).get("nodeAffinity"), labels):
                return policy
        return None

    @staticmethod
    def _requestor(world: World) -> Requestor | None:
        """Requestor mode's settings from the installed Network Operator's env: its CSV's,
        overridden by its Subscription's spec.config.env (OLM merges them)."""
        csv = installed_csv(world, NETWORK_OPERATOR_PACKAGE)
        if csv is None:
            return None
        env = env_of(csv)
        for subscription in list_cluster(world, *OLM, "subscriptions", reuse=True):
            if (
                subscription["metadata"]["namespace"] == csv["metadata"]["namespace"]
                and (subscription.get("spec") or {}).get("name") == NETWORK_OPERATOR_PACKAGE
            ):
                config = (subscription.get("spec") or {}).get("config") or {}
                env.update({v["name"]: str(v.get("value", "")) for v in config.get("env") or []})
        return requestor_from_env(env)

    @staticmethod
    def _group(policy: dict, nodes: tuple, requestor: Requestor | None) -> Group:
        ofed = policy["spec"]["ofedDriver"]
        upgrade = ofed.get("upgradePolicy") or {}
        drain = upgrade.get("drain") or {}
        if requestor is not None and policy["kind"] == "NicNodePolicy":
            # Each NicNodePolicy's state manager asks under an ID of its own.
            requestor = Requestor(
                f"{requestor.requestor_id}-nnp-{policy['metadata']['name']}",
                requestor.namespace,
                requestor.prefix,
            )
        return Group(
            owner=policy,
            nodes=nodes,
            desired=str(ofed.get("version") or ""),
            image_prefix=f"{ofed.get('repository')}/{ofed.get('image')}:",
            auto_upgrade=bool(upgrade.get("autoUpgrade")),
            max_parallel=int(upgrade.get("maxParallelUpgrades", 1)),
            max_unavailable=None,
            path=doca_path(bool(drain.get("enable")), requestor is not None),
            requestor=requestor,
            maintenance_spec=maintenance_spec(upgrade),
        )

    def namespace(self, world: World) -> str | None:
        csv = installed_csv(world, NETWORK_OPERATOR_PACKAGE)
        return csv["metadata"]["namespace"] if csv else None


# The Network Operator keeps its own pods (which carry this label) out of a drain.
DRAIN_SKIP_SELECTOR = "nvidia.com/ofed-driver-upgrade-drain.skip!=true"


def maintenance_spec(upgrade: dict) -> dict:
    """The NodeMaintenance's drainSpec and waitForPodCompletion from a DOCA upgradePolicy
    (drain.enable is not carried: the Maintenance Operator drains whenever drainSpec is given;
    the operator's own pods are kept out as upstream does)."""
    drain = upgrade.get("drain") or {}
    selector = ",".join(s for s in (drain.get("podSelector"), DRAIN_SKIP_SELECTOR) if s)
    spec: dict = {
        "drainSpec": {
            "force": bool(drain.get("force")),
            "podSelector": selector,
            "timeoutSeconds": int(drain.get("timeoutSeconds", 300)),
            "deleteEmptyDir": bool(drain.get("deleteEmptyDir")),
        }
    }
    wait = upgrade.get("waitForCompletion")
    if wait:
        spec["waitForPodCompletion"] = {
            "podSelector": wait.get("podSelector", ""),
            "timeoutSeconds": int(wait.get("timeoutSeconds", 0)),
        }
    return spec


def controllers(gate: DelayGate, logs: dict | None = None) -> list:
    """Both drivers' upgrade controllers; logs: the kubelet log endpoint's (pods.LogServer)."""
    return [GpuDriverUpgrades(gate, logs), DocaDriverUpgrades(gate, logs)]
