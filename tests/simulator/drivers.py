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
`upgrade-failed` when the knob `drivers.fail` names it; the knob `drivers.hold` keeps a node in
a state (a stuck node). Without autoUpgrade the state labels are removed and a running driver
changes only when its pod is deleted. Every state label change is a patch by the driver's own
field manager (Driver.field_manager), so the Node's managedFields entry holding the label is
stamped with the time of the last state change, as a reader of a real cluster's nodes expects.

Each group has its driver DaemonSet (apps/v1, updateStrategy OnDelete as upstream's always are),
owned by its policy: template image = the desired driver, and a status counted from the driver
pods as the DaemonSet controller would. No DaemonSet controller runs on the test control plane,
so the pods are still made here: one per managed node, owned by the DaemonSet (controller) and
labelled with its template's labels and its generation (pod-template-generation), Running, with
a log served by the kubelet's endpoint (pods.LogServer).

Nothing waits for jobs, deletes or evicts workload pods, drains, or validates; the simulator
writes only the state labels, spec.unschedulable, its own annotations, its own DaemonSets and
pods and (in requestor mode) its own NodeMaintenances.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from kubernetes import client
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
# On a driver pod: the uid of the Node object it was made for.
NODE_UID_ANNOTATION = "simulator.gpudirect.rdma/node-uid"
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


# The label a DaemonSet controller puts on each pod: the DaemonSet's generation when it was made.
POD_TEMPLATE_GENERATION = "pod-template-generation"
# Kubernetes names that are also label values (a DaemonSet's `app` label): at most 63 characters.
MAX_LABEL_VALUE = 63


@dataclass(frozen=True)
class Driver:
    """What tells one driver's upgrades apart: the knob's name for it, the node label, the field
    manager that writes it, the annotations, and its DaemonSets and their pods."""

    name: str
    state_label: str
    # Every change of state_label is a patch by this manager, and every patch by this manager
    # changes state_label (a cordon or a new running driver rides along), so the Node's
    # managedFields entry of this manager holds the label and its time is the last state change
    # (the API server stamps a manager's entry whenever that manager changes a field).
    field_manager: str
    # The driver running on the node (owned by the simulator).
    running_annotation: str
    # Set when this controller cordoned the node: only such a node is uncordoned at the end.
    cordon_annotation: str
    pod_prefix: str
    # Labels every driver pod of this driver carries, whatever its DaemonSet (to list them).
    pod_labels: dict
    container: str
    skip_label: str | None
    # Selects this driver's DaemonSets, and the kinds of policy that own them.
    daemonset_selector: str
    owner_kinds: frozenset


GPU = Driver(
    name="gpu",
    state_label="nvidia.com/gpu-driver-upgrade-state",
    field_manager="gpudirect-rdma-simulator-gpu-driver-upgrade",
    running_annotation="simulator.gpudirect.rdma/gpu-driver",
    cordon_annotation="simulator.gpudirect.rdma/gpu-driver-cordoned",
    pod_prefix="nvidia-driver-daemonset-",
    pod_labels={"app": "nvidia-driver-daemonset"},
    container="nvidia-driver-ctr",
    skip_label="nvidia.com/gpu-driver-upgrade.skip",
    daemonset_selector="app.kubernetes.io/component=nvidia-driver",
    owner_kinds=frozenset({"ClusterPolicy"}),
)
DOCA = Driver(
    name="doca",
    state_label="nvidia.com/ofed-driver-upgrade-state",
    field_manager="gpudirect-rdma-simulator-doca-driver-upgrade",
    running_annotation="simulator.gpudirect.rdma/doca-driver",
    cordon_annotation="simulator.gpudirect.rdma/doca-driver-cordoned",
    pod_prefix="mofed-",
    pod_labels={"nvidia.com/ofed-driver": ""},
    container="mofed-container",
    skip_label=None,
    daemonset_selector="nvidia.com/ofed-driver",
    owner_kinds=frozenset({"NicClusterPolicy", "NicNodePolicy"}),
)

GPU_DAEMONSET = "nvidia-driver-daemonset"


def doca_daemonset_name(policy_name: str) -> str:
    """The DOCA driver DaemonSet of a policy: mofed-<policy>-ds, the policy's name cut short
    (with a digest of it, so that two long names stay apart) to keep it a valid label value."""
    name = f"mofed-{policy_name}-ds"
    if len(name) <= MAX_LABEL_VALUE:
        return name
    digest = hashlib.sha256(policy_name.encode()).hexdigest()[:8]
    room = MAX_LABEL_VALUE - len(f"mofed--{digest}-ds")
    return f"mofed-{policy_name[:room].rstrip('.-')}-{digest}-ds"


@dataclass(frozen=True)
class DriverDaemonSet:
    """One group's driver DaemonSet as its pods need it: their owner (name, uid), the labels
    and image of its template, and its generation (the pods' pod-template-generation)."""

    name: str
    uid: str
    generation: int
    labels: dict
    image: str
    status: dict

    def owner_reference(self) -> dict:
        """What the DaemonSet controller puts on its pods: the DaemonSet, as their controller."""
        return {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


@dataclass(frozen=True)
class DriverPod:
    """What a DaemonSet's status counts of a driver pod: its container image, and whether it
    runs and is ready (not crash-looping)."""

    image: str
    ready: bool


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


def held(knobs: dict, driver: str, node: str, state: str) -> bool:
    """Whether the knob drivers.hold keeps this node in this state of this driver."""
    return any(
        entry.get("node") == node and entry.get("driver") == driver and entry.get("state") == state
        for entry in (knobs.get("drivers") or {}).get("hold") or []
    )


def owner_reference(owner: dict) -> dict:
    """A policy as the owner of its DaemonSet, as the operator sets it (its controller)."""
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _uid(group: Group) -> str:
    return group.owner["metadata"]["uid"]


def _name(node: dict) -> str:
    return node["metadata"]["name"]


def _labels(node: dict) -> dict:
    return node["metadata"].get("labels") or {}


def _annotations(node: dict) -> dict:
    return node["metadata"].get("annotations") or {}


class DriverUpgrades:
    """One driver's upgrade controller: the state machine, the driver DaemonSets and their pods.
    A subclass says which nodes are managed, by which policy (groups), where the DaemonSets and
    pods run (namespace) and what each DaemonSet is called (daemonset_name, daemonset_labels)."""

    driver: Driver
    name = ""

    def __init__(self, gate: DelayGate, logs: dict | None = None) -> None:
        self.gate = gate
        # The kubelet log endpoint's logs (pods.LogServer.logs), by (namespace, pod, container).
        self.logs = logs if logs is not None else {}
        self._refused: set[str] = set()  # NodeMaintenances refused once, logged once
        # The DaemonSets this controller made, by (namespace, name): those to delete once their
        # group is gone, even when nothing enables the driver any more (no list needed then).
        self._made: set[tuple[str, str]] = set()
        # This tick's DaemonSet of each group, by its policy's uid (what new pods are made from).
        self._daemonsets: dict[str, DriverDaemonSet] = {}

    def groups(self, world: World) -> list[Group] | None:
        """The groups of managed nodes, or None while nothing enables this driver (then the
        controller sends no request at all)."""
        raise NotImplementedError

    def namespace(self, world: World) -> str | None:
        """The namespace of the driver DaemonSets and pods (the operator's)."""
        raise NotImplementedError

    def daemonset_name(self, group: Group) -> str:
        """The name of the group's driver DaemonSet."""
        raise NotImplementedError

    def daemonset_labels(self, name: str) -> dict:
        """The labels of the DaemonSet called name, of its template and so of its pods; the
        `app` label alone is its selector."""
        raise NotImplementedError

    def reconcile(self, world: World) -> None:
        groups = self.groups(world)
        if groups is None:
            self._delete_made_daemonsets(world, keep=set())
            return
        maintenances = None
        if any(g.requestor is not None and g.nodes for g in groups):
            maintenances = {
                (m["metadata"]["namespace"], m["metadata"]["name"]): m
                for m in list_cluster(world, *MAINTENANCE, "nodemaintenances", reuse=True)
            }
        namespace = self._active_namespace(world)
        self._daemonsets = (
            self._sync_daemonsets(world, groups, namespace) if namespace is not None else {}
        )
        for group in groups:
            self._install_fresh(world, group)
            if group.auto_upgrade:
                self._advance(world, group, namespace, maintenances or {})
            else:
                self._forget_states(world, group)
        if namespace is not None:
            pods = self._sync_pods(world, groups, namespace)
            self._write_daemonset_statuses(world, groups, namespace, pods)

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
                self.driver.field_manager if labels else None,
            )

    def _forget_states(self, world: World, group: Group) -> None:
        """Without autoUpgrade the controller is off: no state labels (upgrade_controller.go)."""
        for node in group.nodes:
            if self.driver.state_label in _labels(node):
                self._patch(
                    world,
                    node,
                    {"metadata": {"labels": {self.driver.state_label: None}}},
                    self.driver.field_manager,
                )

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
            if held(world.knobs, self.driver.name, _name(node), state):
                continue  # the knob drivers.hold: a node stuck in its state
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
                    log.info(
                        "%s: %s starts (%d slot(s) free, cordoned: %s; states %s)",
                        self.name,
                        _name(node),
                        slots,
                        bool((node.get("spec") or {}).get("unschedulable")),
                        dict(zip(map(_name, group.nodes), states, strict=True)),
                    )
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
        """Set the node's state, with what leaving the last one took (patch), in one write by
        the driver's field manager: that manager's managedFields entry holds the label and is
        stamped with this write's time."""
        patch = dict(patch or {})
        metadata = dict(patch.get("metadata") or {})
        metadata["labels"] = {**(metadata.get("labels") or {}), self.driver.state_label: state}
        patch["metadata"] = metadata
        self._patch(world, node, patch, self.driver.field_manager)

    @staticmethod
    def _patch(world: World, node: dict, patch: dict, field_manager: str | None = None) -> None:
        """Patch the node (a strategic merge patch; by field_manager when given, else by the
        client's default manager), and the tick's copy of it, so that later controllers see the
        change."""
        if field_manager is None:
            world.core.patch_node(_name(node), patch)
        else:
            world.core.patch_node(_name(node), patch, field_manager=field_manager)
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

    # -- driver DaemonSets -------------------------------------------------------------------

    def _sync_daemonsets(
        self, world: World, groups: list[Group], namespace: str
    ) -> dict[str, DriverDaemonSet]:
        """One DaemonSet per group, in namespace, owned by the group's policy, its template's
        image the desired driver (a change of it moves metadata.generation, as on a real
        cluster); those of groups that are gone are deleted. Returns them by policy uid."""
        apps = client.AppsV1Api(world.api_client)
        listed = {}
        for item in apps.list_namespaced_daemon_set(
            namespace, label_selector=self.driver.daemonset_selector
        ).items:
            daemonset = world.api_client.sanitize_for_serialization(item)
            owners = daemonset["metadata"].get("ownerReferences") or []
            if any(o.get("kind") in self.driver.owner_kinds for o in owners):
                listed[daemonset["metadata"]["name"]] = daemonset  # made by the operator
        wanted = {self.daemonset_name(group): group for group in groups}
        for name in set(listed) - set(wanted):
            self._delete_daemonset(apps, namespace, name)
        self._delete_made_daemonsets(world, keep={(namespace, name) for name in wanted})
        made = {}
        for name, group in wanted.items():
            daemonset = listed.get(name)
            owners = (daemonset or {}).get("metadata", {}).get("ownerReferences") or []
            if daemonset is not None and _uid(group) not in {o.get("uid") for o in owners}:
                # A policy deleted and made again under the same name: its DaemonSet is new.
                self._delete_daemonset(apps, namespace, name)
                daemonset = None
            image = group.image_prefix + group.desired
            if daemonset is None:
                daemonset = self._create_daemonset(world, apps, namespace, name, group, image)
            elif _template_image(daemonset) != image:
                change = {"spec": {"template": {"spec": {"containers": [self._container(image)]}}}}
                daemonset = world.api_client.sanitize_for_serialization(
                    apps.patch_namespaced_daemon_set(name, namespace, change)
                )
            self._made.add((namespace, name))
            metadata = daemonset["metadata"]
            made[_uid(group)] = DriverDaemonSet(
                name=name,
                uid=metadata["uid"],
                generation=int(metadata.get("generation") or 1),
                labels=dict(daemonset["spec"]["template"]["metadata"].get("labels") or {}),
                image=image,
                status=daemonset.get("status") or {},
            )
        return made

    def _container(self, image: str) -> dict:
        return {"name": self.driver.container, "image": image}

    def _create_daemonset(
        self,
        world: World,
        apps: client.AppsV1Api,
        namespace: str,
        name: str,
        group: Group,
        image: str,
    ) -> dict:
        """The group's DaemonSet as the operator renders it, as far as readers look: labels,
        selector, a template with the driver container, OnDelete updates, its policy as owner."""
        labels = self.daemonset_labels(name)
        body = {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": labels,
                "ownerReferences": [owner_reference(group.owner)],
            },
            "spec": {
                "selector": {"matchLabels": {"app": labels["app"]}},
                # Upstream's driver DaemonSets are always OnDelete: a new template reaches a
                # node only when the upgrade controller deletes its pod.
                "updateStrategy": {"type": "OnDelete"},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [self._container(image)],
                        "tolerations": [{"operator": "Exists"}],
                    },
                },
            },
        }
        try:
            created = apps.create_namespaced_daemon_set(namespace, body)
        except ApiException as error:
            if error.status != 409:
                raise
            created = apps.read_namespaced_daemon_set(name, namespace)
        return world.api_client.sanitize_for_serialization(created)

    def _delete_daemonset(self, apps: client.AppsV1Api, namespace: str, name: str) -> None:
        """Delete a driver DaemonSet; the garbage collector deletes its pods."""
        try:
            apps.delete_namespaced_daemon_set(name, namespace)
        except ApiException as error:
            if error.status != 404:
                raise
        self._made.discard((namespace, name))

    def _delete_made_daemonsets(self, world: World, keep: set[tuple[str, str]]) -> None:
        """Delete the DaemonSets this controller made that are not in keep (their group is
        gone, or the pods' namespace moved): no request when there are none."""
        stale = self._made - keep
        if stale:
            apps = client.AppsV1Api(world.api_client)
            for namespace, name in sorted(stale):
                self._delete_daemonset(apps, namespace, name)

    def _write_daemonset_statuses(
        self, world: World, groups: list[Group], namespace: str, pods: dict[str, DriverPod]
    ) -> None:
        """Each DaemonSet's status as the DaemonSet controller counts it, written (status
        subresource) only when it changed."""
        apps = client.AppsV1Api(world.api_client)
        for group in groups:
            daemonset = self._daemonsets.get(_uid(group))
            if daemonset is None:
                continue
            status = daemonset_status(daemonset, group, self.driver.pod_prefix, pods)
            current = daemonset.status
            if any(current.get(key, 0) != value for key, value in status.items()):
                apps.patch_namespaced_daemon_set_status(
                    daemonset.name, namespace, {"status": status}
                )

    # -- driver pods --------------------------------------------------------------------------

    def _sync_pods(self, world: World, groups: list[Group], namespace: str) -> dict[str, DriverPod]:
        """One driver pod per managed node, as the DaemonSets keep them: a missing one is
        created from its DaemonSet's current template (the node then runs the desired driver,
        unless the knob fails it); those of nodes no longer managed are deleted. Returns the
        driver pods there are now, by name."""
        selector = ",".join(f"{k}={v}" if v else k for k, v in self.driver.pod_labels.items())
        pods = {
            p.metadata.name: p
            for p in world.core.list_namespaced_pod(namespace, label_selector=selector).items
            if p.metadata.name.startswith(self.driver.pod_prefix)
        }
        now_there = {name: driver_pod(pod) for name, pod in pods.items()}
        wanted = {}
        for group in groups:
            for node in group.nodes:
                wanted[self.driver.pod_prefix + _name(node)] = (group, node)
        for name in set(pods) - set(wanted):
            self._delete_pod(world, namespace, name)
            now_there.pop(name, None)
        for name, (group, node) in wanted.items():
            if name in pods:
                annotations = pods[name].metadata.annotations or {}
                if annotations.get(NODE_UID_ANNOTATION) in (None, node["metadata"]["uid"]):
                    continue
                # A pod of an earlier Node of that name (the bare API server has no pod
                # garbage collector): gone with it, and the new node installs afresh.
                self._delete_pod(world, namespace, name)
            changes = _annotations(node).get(self.driver.running_annotation) != group.desired
            message = failure_of(world.knobs, self.driver.name, _name(node)) if changes else None
            if changes and message is None:
                running = self._running(group.desired)
                self._patch(world, node, {"metadata": {"annotations": running}})
            now_there[name] = self._create_pod(world, node, group, namespace, message)
        return now_there

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
    ) -> DriverPod:
        """The driver pod on node, as the DaemonSet controller makes it from the group's
        DaemonSet: its template's labels and container (the desired driver), the DaemonSet's
        generation as pod-template-generation, the DaemonSet as controlling owner. It runs and
        says the driver is loaded; with a failure, its container crash-loops and its log ends
        with the failure's message."""
        daemonset = self._daemonsets[_uid(group)]
        name = self.driver.pod_prefix + _name(node)
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {
                    **daemonset.labels,
                    POD_TEMPLATE_GENERATION: str(daemonset.generation),
                },
                # The Node object it runs on: a node registered again under the same name is
                # another machine, whose driver pod is a new one.
                "annotations": {NODE_UID_ANNOTATION: node["metadata"]["uid"]},
                "ownerReferences": [daemonset.owner_reference()],
            },
            "spec": {
                "nodeName": _name(node),
                "containers": [self._container(daemonset.image)],
                "tolerations": [{"operator": "Exists"}],
            },
        }
        try:
            world.core.create_namespaced_pod(namespace, body)
        except ApiException as error:
            if error.status != 409:
                raise
        self.logs[(namespace, name, self.driver.container)] = driver_log(daemonset.image, failure)
        world.core.patch_namespaced_pod_status(name, namespace, pod_status(body, failure))
        return DriverPod(image=daemonset.image, ready=failure is None)


def _template_image(daemonset: dict) -> str | None:
    containers = daemonset["spec"]["template"]["spec"].get("containers") or [{}]
    return containers[0].get("image")


def driver_pod(pod) -> DriverPod:
    """A listed driver pod (a V1Pod) as a DaemonSet's status counts it: ready when Running
    with its Ready condition True."""
    status = pod.status
    ready = (status.phase if status else None) == "Running" and any(
        c.type == "Ready" and c.status == "True" for c in (status.conditions or [])
    )
    return DriverPod(image=pod.spec.containers[0].image, ready=ready)


def daemonset_status(
    daemonset: DriverDaemonSet, group: Group, pod_prefix: str, pods: dict[str, DriverPod]
) -> dict:
    """The status the DaemonSet controller would write: every managed node should run a pod
    (desired); current counts the pods there are, updated those of the template's image,
    ready and available those Running and not failing (minReadySeconds is 0)."""
    present = [pods[pod_prefix + _name(n)] for n in group.nodes if pod_prefix + _name(n) in pods]
    desired = len(group.nodes)
    ready = sum(1 for pod in present if pod.ready)
    return {
        "observedGeneration": daemonset.generation,
        "desiredNumberScheduled": desired,
        "currentNumberScheduled": len(present),
        "updatedNumberScheduled": sum(1 for pod in present if pod.image == daemonset.image),
        "numberReady": ready,
        "numberAvailable": ready,
        "numberUnavailable": desired - ready,
        "numberMisscheduled": 0,
    }


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
        # The operator that renders this ClusterPolicy: the CSV in the namespace it reports.
        operator = installed_csv(world, GPU_PACKAGE, (policy.get("status") or {}).get("namespace"))
        desired = gpu_desired_driver(driver_spec, operator)
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

    def daemonset_name(self, group: Group) -> str:
        return GPU_DAEMONSET

    def daemonset_labels(self, name: str) -> dict:
        """As the GPU Operator labels its driver DaemonSet (assets/state-driver)."""
        return {"app": name, "app.kubernetes.io/component": "nvidia-driver"}

    def namespace(self, world: World) -> str | None:
        policies = list_cluster(world, "nvidia.com", "v1", "clusterpolicies", reuse=True)
        written = next(
            ((p.get("status") or {}).get("namespace") for p in policies if p.get("status")), None
        )
        csv = installed_csv(world, GPU_PACKAGE, written)
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
        # A policy selecting no node is a group too: its DaemonSet exists and schedules none.
        return [
            self._group(policy, tuple(members.get(policy["metadata"]["uid"], ())), requestor)
            for policy in cluster_policies + node_policies
        ]

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
            # The whole image, as the DaemonSet's template: any change of it (a mirror's
            # repository too) is a rollout, as upstream sees a pod out of sync with its template.
            desired=f"{ofed.get('repository')}/{ofed.get('image')}:{ofed.get('version') or ''}",
            image_prefix="",
            auto_upgrade=bool(upgrade.get("autoUpgrade")),
            max_parallel=int(upgrade.get("maxParallelUpgrades", 1)),
            max_unavailable=None,
            path=doca_path(bool(drain.get("enable")), requestor is not None),
            requestor=requestor,
            maintenance_spec=maintenance_spec(upgrade),
        )

    def daemonset_name(self, group: Group) -> str:
        return doca_daemonset_name(group.owner["metadata"]["name"])

    def daemonset_labels(self, name: str) -> dict:
        """As the Network Operator labels its DOCA driver DaemonSets (state-ofed-driver)."""
        return {"nvidia.com/ofed-driver": "", "app": name}

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
