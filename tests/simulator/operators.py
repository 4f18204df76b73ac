"""The operators and node agents a bare API server lacks, played as far as the gates need.

- NFD: with a NodeFeatureDiscovery instance, nodes that pretend to have NVIDIA GPUs and NICs
  (their hardware annotation) get NFD's labels.
- SR-IOV Network Operator: with the `default` SriovOperatorConfig, one SriovNetworkNodeState per
  node with NVIDIA NICs; SriovNetworkNodePolicies are applied to the matching PFs (syncStatus
  InProgress, then Succeeded, or Failed by knob); SriovNetwork/SriovIBNetwork render a
  NetworkAttachmentDefinition.
- NVIDIA Network Operator: NicClusterPolicy status.state notReady, then ready (or never, or
  flapping between the two, by knob), again after every spec change, with one applied state
  per section (state-nic-configuration-operator for nicConfigurationOperator); NicNodePolicy
  status with its three applied states, error on a node two policies select;
  Macvlan/IPoIB/HostDevice networks render a NAD.
- GPU Operator: ClusterPolicy status.state notReady, then ready (or never, by knob).
- Machine Config Operator: `master` and `worker` pools; a change of the role's MachineConfigs
  renders a new configuration, the pool is Updating, then Updated.
- kubelet: every fake node's allocatable is recomputed from the above: nvidia.com/gpu once the
  ClusterPolicy is ready, rdma/<name> for the shared device plugin, nvidia.com/<name> for host
  device, openshift.io/<name> for synced SR-IOV policies.
The simulator writes statuses and the objects these components create; it never changes an
object the collection created.
"""

from __future__ import annotations

import hashlib
import json
import time

from kubernetes.client.rest import ApiException

from tests.simulator.admission import node_overlap
from tests.simulator.core import (
    DelayGate,
    World,
    affinity_matches,
    create_if_absent,
    list_cluster,
    now,
    replace_status,
    selector_matches,
)
from tests.simulator.nic_policy_status import (
    CLUSTER_POLICY_STATES,
    CONDITIONS_SINCE,
    ERROR,
    NODE_POLICY_STATES,
    NOT_READY,
    READY,
    component_states,
    policy_status,
)
from tests.simulator.nodes import (
    DEFAULT_RATE_GBPS,
    HARDWARE_ANNOTATION,
    NFD_GPU_NIC_LABELS,
    node_status,
    total_vfs_of,
)
from tests.simulator.olm import installed_version

SOURCE_ANNOTATION = "simulator.gpudirect.rdma/source"
NETWORK_OPERATOR_PACKAGE = "nvidia-network-operator"
SRIOV_NAMESPACE_DEFAULT = "openshift-sriov-network-operator"


def hardware_of(node: dict) -> dict | None:
    raw = ((node.get("metadata") or {}).get("annotations") or {}).get(HARDWARE_ANNOTATION)
    return json.loads(raw) if raw else None


NODES = ("", "v1", "nodes")  # the key of the tick's node list in World.listed


def all_nodes(world: World, reuse: bool = False) -> list[dict]:
    """Every node of the cluster. The list is kept for the rest of the tick; with reuse, the
    last one made in this tick is read again."""
    if not (reuse and NODES in world.listed):
        world.listed[NODES] = json.loads(world.core.list_node(_preload_content=False).data)["items"]
    return world.listed[NODES]


def fake_nodes(world: World, reuse: bool = False) -> list[dict]:
    """The nodes the simulator registered (those with a hardware annotation), as all_nodes."""
    return [n for n in all_nodes(world, reuse) if hardware_of(n) is not None]


def _set_status(
    world: World, group: str, version: str, plural: str, obj: dict, status: dict
) -> None:
    if obj.get("status") != status:
        written = replace_status(world, group, version, plural, {**obj, "status": status})
        # The tick's list holds obj (World.listed): a later controller reading it sees the write.
        obj.clear()
        obj.update(written)


def _list(world: World, group: str, version: str, plural: str, reuse: bool = False) -> list[dict]:
    # A fresh list unless reuse; it is kept for later controllers of the tick (core.list_cluster).
    return list_cluster(world, group, version, plural, reuse)


class Nfd:
    name = "nfd"

    def reconcile(self, world: World) -> None:
        instances = _list(world, "nfd.openshift.io", "v1", "nodefeaturediscoveries")
        if not instances:
            # No nfd-worker: the NodeFeatures it owned are garbage-collected with it.
            group, version, plural = NODE_FEATURES
            for feature in world.custom.list_cluster_custom_object(group, version, plural)["items"]:
                metadata = feature["metadata"]
                world.custom.delete_namespaced_custom_object(
                    group, version, metadata["namespace"], plural, metadata["name"]
                )
            return
        namespace = instances[0]["metadata"]["namespace"]
        # nfd-worker writes a node's NodeFeature, nfd-master labels the node from it: once a
        # node carries the labels (what the nfd step waits for), its NodeFeature is there.
        node_features(world, namespace)
        for node in fake_nodes(world, reuse=True):
            labels = node["metadata"].get("labels") or {}
            missing = {k: v for k, v in NFD_GPU_NIC_LABELS.items() if labels.get(k) != v}
            if missing:
                world.core.patch_node(node["metadata"]["name"], {"metadata": {"labels": missing}})
        for instance in instances:
            _set_status(
                world,
                "nfd.openshift.io",
                "v1",
                "nodefeaturediscoveries",
                instance,
                {
                    "conditions": [
                        {
                            "type": "Available",
                            "status": "True",
                            "reason": "Simulated",
                            "message": "nfd-worker labelled the nodes",
                            "lastTransitionTime": instance["metadata"]["creationTimestamp"],
                        }
                    ],
                },
            )


NODE_FEATURES = ("nfd.k8s-sigs.io", "v1alpha1", "nodefeatures")


def node_features(world: World, namespace: str) -> None:
    """The NodeFeature nfd-worker writes for its node (named as the node, in NFD's namespace,
    labelled nfd.node.kubernetes.io/node-name): the network source's device features, one per
    interface with a PCI device, with name, operstate, speed (Mb/s), sriov_numvfs and
    sriov_totalvfs (node-feature-discovery source/network/network.go, detectNetDevices). Written
    when missing or different; those of nodes that left are deleted."""
    group, version, plural = NODE_FEATURES
    existing = {
        o["metadata"]["name"]: o
        for o in world.custom.list_namespaced_custom_object(group, version, namespace, plural)[
            "items"
        ]
    }
    nodes = fake_nodes(world, reuse=True)
    for node in nodes:
        name = node["metadata"]["name"]
        elements = [
            {
                "attributes": {
                    "name": nic["name"],
                    "operstate": "up",
                    "speed": str(int(nic.get("rateGbps") or DEFAULT_RATE_GBPS) * 1000),
                    "sriov_numvfs": "0",
                    "sriov_totalvfs": str(total_vfs_of(nic)),
                }
            }
            for nic in hardware_of(node)["nics"]
        ]
        spec = {"features": {"instances": {"network.device": {"elements": elements}}}}
        if name in existing and existing[name].get("spec") == spec:
            continue
        body = {
            "apiVersion": f"{group}/{version}",
            "kind": "NodeFeature",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {"nfd.node.kubernetes.io/node-name": name},
            },
            "spec": spec,
        }
        if name in existing:
            world.custom.patch_namespaced_custom_object(
                group, version, namespace, plural, name, {"spec": spec}
            )
        else:
            create_if_absent(
                world.custom.create_namespaced_custom_object,
                group,
                version,
                namespace,
                plural,
                body,
            )
    for name in set(existing) - {n["metadata"]["name"] for n in nodes}:
        world.custom.delete_namespaced_custom_object(group, version, namespace, plural, name)


class _ReadyAfterDelay:
    """status.state notReady after each spec change, ready once the delay has passed."""

    group = version = plural = knob = ""

    def __init__(self, gate: DelayGate):
        self.gate = gate

    def reconcile(self, world: World) -> None:
        knobs = world.knobs.get(self.knob, {})
        never = knobs.get("never_ready", False)
        flap = knobs.get("flap_seconds") or 0
        for obj in _list(world, self.group, self.version, self.plural):
            step = f"ready-{obj['metadata'].get('generation')}"
            ready = not never and self.gate.due(
                obj["metadata"]["uid"], step, world.knobs["delay_seconds"]
            )
            if ready and flap:
                # An operator that keeps losing its readiness (a crash-looping pod): ready for
                # flap_seconds, then notReady for as long, by the wall clock.
                ready = int(time.time() // flap) % 2 == 0
            _set_status(
                world,
                self.group,
                self.version,
                self.plural,
                obj,
                self.status(world, obj, "ready" if ready else "notReady"),
            )

    def status(self, world: World, obj: dict, state: str) -> dict:
        return {"state": state}


class NetworkOperator(_ReadyAfterDelay):
    name = "network-operator"
    group, version, plural, knob = (
        "mellanox.com",
        "v1alpha1",
        "nicclusterpolicies",
        "network_operator",
    )

    def status(self, world: World, obj: dict, state: str) -> dict:
        """Every state of the operator (nic_policy_status.py), each `state` where the spec
        has its component, the knob's error_component in error; conditions from 26.7."""
        knob = world.knobs.get(self.knob) or {}

        def judge(name: str) -> tuple[str, str]:
            if name == knob.get("error_component"):
                return ERROR, knob.get("error_message") or "simulated component error"
            return state, ""

        states = component_states(obj.get("spec") or {}, CLUSTER_POLICY_STATES, judge)
        return policy_status(obj, states, writes_conditions(world))


def writes_conditions(world: World) -> bool:
    """Whether the installed Network Operator writes status.conditions (26.7 and later)."""
    version = installed_version(world, NETWORK_OPERATOR_PACKAGE)
    return version is not None and version[:2] >= CONDITIONS_SINCE


class NicNodePolicies:
    """NicNodePolicy status as the Network Operator's controller writes it: each of its three
    states ready (ignore for a section it leaves out), notReady until the delay has passed after
    a spec change (state-OFED for as long as the knob names the policy), and `error` with the
    operator's reason when a node is selected by two policies (its overlap check)."""

    name = "nic-node-policies"

    def __init__(self, gate: DelayGate):
        self.gate = gate

    def reconcile(self, world: World) -> None:
        policies = _list(world, "mellanox.com", "v1alpha1", "nicnodepolicies")
        if not policies:
            return
        nodes = all_nodes(world, reuse=True)
        held = set((world.knobs.get("nic_node_policies") or {}).get("not_ready") or [])
        selectors = {
            p["metadata"]["name"]: (p.get("spec") or {}).get("nodeSelector") for p in policies
        }
        node_labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in nodes}
        for policy in policies:
            name = policy["metadata"]["name"]
            spec = policy.get("spec") or {}
            overlap = node_overlap(name, selectors, node_labels)
            conditions = writes_conditions(world)
            if overlap:
                # The controller's overlap path: state error and its reason, the states left as
                # they were, every component condition dropped and so Ready True (upstream).
                status = {
                    "state": "error",
                    "reason": overlap,
                    "appliedStates": (policy.get("status") or {}).get("appliedStates") or [],
                }
                if conditions:
                    status["conditions"] = policy_status(policy, [], True)["conditions"]
            else:
                due = self.gate.due(
                    policy["metadata"]["uid"],
                    f"ready-{policy['metadata'].get('generation')}",
                    world.knobs["delay_seconds"],
                )

                def judge(state: str, name=name, due=due) -> tuple[str, str]:
                    if not due or (state == "state-OFED" and name in held):
                        return NOT_READY, "DaemonSet pods are not ready yet"
                    return READY, ""

                states = component_states(spec, NODE_POLICY_STATES, judge)
                status = policy_status(policy, states, conditions)
            _set_status(world, "mellanox.com", "v1alpha1", "nicnodepolicies", policy, status)


class GpuOperator(_ReadyAfterDelay):
    name = "gpu-operator"
    group, version, plural, knob = "nvidia.com", "v1", "clusterpolicies", "gpu_operator"

    def status(self, world: World, obj: dict, state: str) -> dict:
        return {"state": state, "namespace": "nvidia-gpu-operator"}


class Networks:
    """Network objects of both operators render a NetworkAttachmentDefinition; it goes when
    they go. Network Operator networks also report status.state ready."""

    name = "networks"
    KINDS = (
        ("mellanox.com", "v1alpha1", "macvlannetworks", "MacvlanNetwork"),
        ("mellanox.com", "v1alpha1", "ipoibnetworks", "IPoIBNetwork"),
        ("mellanox.com", "v1alpha1", "hostdevicenetworks", "HostDeviceNetwork"),
        ("sriovnetwork.openshift.io", "v1", "sriovnetworks", "SriovNetwork"),
        ("sriovnetwork.openshift.io", "v1", "sriovibnetworks", "SriovIBNetwork"),
    )

    def reconcile(self, world: World) -> None:
        wanted = {}
        for group, version, plural, kind in self.KINDS:
            for network in _list(world, group, version, plural):
                spec = network.get("spec") or {}
                namespace = (
                    spec.get("networkNamespace")
                    or network["metadata"].get("namespace")
                    or "default"
                )
                metadata = network["metadata"]
                source = f"{kind}/{metadata.get('namespace', '')}/{metadata['name']}"
                wanted[(namespace, network["metadata"]["name"])] = (source, kind, spec)
                if group == "mellanox.com":
                    _set_status(world, group, version, plural, network, {"state": "ready"})
        existing = world.custom.list_cluster_custom_object(
            "k8s.cni.cncf.io", "v1", "network-attachment-definitions"
        )["items"]
        rendered = {
            (n["metadata"]["namespace"], n["metadata"]["name"]): n
            for n in existing
            if SOURCE_ANNOTATION in (n["metadata"].get("annotations") or {})
        }
        for (namespace, name), (source, kind, spec) in wanted.items():
            if (namespace, name) in rendered:
                continue
            resource = spec.get("resourceName")
            prefix = "openshift.io" if kind.startswith("Sriov") else "nvidia.com"
            annotations = {SOURCE_ANNOTATION: source}
            if resource:
                annotations["k8s.v1.cni.cncf.io/resourceName"] = f"{prefix}/{resource}"
            config = {
                "cniVersion": "0.3.1",
                "name": name,
                "type": kind.lower(),
                "ipam": json.loads(spec.get("ipam") or "{}"),
                # The Network Operator's macvlan template carries the network's MTU.
                **({"mtu": spec["mtu"]} if kind == "MacvlanNetwork" and spec.get("mtu") else {}),
            }
            try:
                world.custom.create_namespaced_custom_object(
                    "k8s.cni.cncf.io",
                    "v1",
                    namespace,
                    "network-attachment-definitions",
                    {
                        "apiVersion": "k8s.cni.cncf.io/v1",
                        "kind": "NetworkAttachmentDefinition",
                        "metadata": {
                            "name": name,
                            "namespace": namespace,
                            "annotations": annotations,
                        },
                        "spec": {"config": json.dumps(config)},
                    },
                )
            except ApiException as error:
                if error.status not in (404, 409):  # namespace not there yet, or raced
                    raise
        for namespace, name in set(rendered) - set(wanted):
            world.custom.delete_namespaced_custom_object(
                "k8s.cni.cncf.io", "v1", namespace, "network-attachment-definitions", name
            )


def _pf_name(entry: str) -> str:
    return entry.split("#", 1)[0]


class SriovOperator:
    name = "sriov-network-operator"

    def __init__(self, gate: DelayGate):
        self.gate = gate

    def reconcile(self, world: World) -> None:
        configs = [
            c
            for c in _list(world, "sriovnetwork.openshift.io", "v1", "sriovoperatorconfigs")
            if c["metadata"]["name"] == "default"
        ]
        if not configs:
            return
        namespace = configs[0]["metadata"]["namespace"]
        policies = [
            p
            for p in _list(world, "sriovnetwork.openshift.io", "v1", "sriovnetworknodepolicies")
            if p["metadata"]["namespace"] == namespace
        ]
        failing = world.knobs.get("sriov", {}).get("failing", False)
        self._forget_gone_nodes(world, namespace)
        for node in fake_nodes(world):
            name = node["metadata"]["name"]
            hardware = hardware_of(node)
            labels = node["metadata"].get("labels") or {}
            matching = [
                p for p in policies if selector_matches(p["spec"].get("nodeSelector"), labels)
            ]
            interfaces = []
            for nic in hardware["nics"]:
                policy = next(
                    (
                        p
                        for p in matching
                        if nic["name"]
                        in [
                            _pf_name(n) for n in p["spec"].get("nicSelector", {}).get("pfNames", [])
                        ]
                    ),
                    None,
                )
                interfaces.append(
                    {
                        "name": nic["name"],
                        "vendor": "15b3",
                        "deviceID": "101d",
                        "linkType": "IB" if nic["linkType"] == "ib" else "ETH",
                        "mac": nic["mac"],
                        "totalvfs": total_vfs_of(nic),
                        "numVfs": policy["spec"]["numVfs"] if policy else 0,
                        "pciAddress": f"0000:{len(interfaces) + 0x17:02x}:00.0",
                    }
                )
            digest = hashlib.sha256(
                json.dumps(
                    [(p["metadata"]["name"], p["metadata"].get("generation")) for p in matching],
                    sort_keys=True,
                ).encode()
            ).hexdigest()[:12]
            state = self._state(world, configs[0], name)
            if state is None:
                continue
            if failing and matching:
                sync, error = "Failed", "simulated: failed to configure VFs"
            elif self.gate.due(f"{name}-{digest}", "sync", world.knobs["delay_seconds"]):
                sync, error = "Succeeded", ""
            else:
                sync, error = "InProgress", ""
            status = {"interfaces": interfaces, "syncStatus": sync}
            if error:
                status["lastSyncError"] = error
            _set_status(
                world, "sriovnetwork.openshift.io", "v1", "sriovnetworknodestates", state, status
            )

    @staticmethod
    def _forget_gone_nodes(world: World, namespace: str) -> None:
        """The operator deletes the state of a node that left the cluster."""
        nodes = {n["metadata"]["name"] for n in all_nodes(world, reuse=True)}
        states = world.custom.list_namespaced_custom_object(
            "sriovnetwork.openshift.io", "v1", namespace, "sriovnetworknodestates"
        )["items"]
        for state in states:
            if state["metadata"]["name"] not in nodes:
                world.custom.delete_namespaced_custom_object(
                    "sriovnetwork.openshift.io",
                    "v1",
                    namespace,
                    "sriovnetworknodestates",
                    state["metadata"]["name"],
                )

    def _state(self, world: World, config: dict, node: str) -> dict | None:
        """The node's SriovNetworkNodeState, created (as the operator does) when missing, owned
        by the SriovOperatorConfig (the garbage collector removes it with the config)."""
        namespace = config["metadata"]["namespace"]
        try:
            return world.custom.get_namespaced_custom_object(
                "sriovnetwork.openshift.io", "v1", namespace, "sriovnetworknodestates", node
            )
        except ApiException as error:
            if error.status != 404:
                raise
        try:
            return world.custom.create_namespaced_custom_object(
                "sriovnetwork.openshift.io",
                "v1",
                namespace,
                "sriovnetworknodestates",
                {
                    "apiVersion": "sriovnetwork.openshift.io/v1",
                    "kind": "SriovNetworkNodeState",
                    "metadata": {
                        "name": node,
                        "namespace": namespace,
                        "ownerReferences": [
                            {
                                "apiVersion": "sriovnetwork.openshift.io/v1",
                                "kind": "SriovOperatorConfig",
                                "name": config["metadata"]["name"],
                                "uid": config["metadata"]["uid"],
                                "controller": True,
                                "blockOwnerDeletion": True,
                            }
                        ],
                    },
                    "spec": {},
                },
            )
        except ApiException as error:
            if error.status == 404:  # the namespace is gone
                return None
            raise


class MachineConfigOperator:
    name = "machine-config-operator"
    ROLES = ("master", "worker")

    def __init__(self, gate: DelayGate):
        self.gate = gate
        self._ensured = False

    def _ensure_pools(self, world: World) -> None:
        for role in self.ROLES:
            create_if_absent(
                world.custom.create_cluster_custom_object,
                "machineconfiguration.openshift.io",
                "v1",
                "machineconfigpools",
                {
                    "apiVersion": "machineconfiguration.openshift.io/v1",
                    "kind": "MachineConfigPool",
                    "metadata": {"name": role},
                    "spec": {
                        "machineConfigSelector": {
                            "matchLabels": {"machineconfiguration.openshift.io/role": role}
                        },
                        "nodeSelector": {"matchLabels": {f"node-role.kubernetes.io/{role}": ""}},
                    },
                },
            )
        self._ensured = True

    @staticmethod
    def _pool_of(node: dict) -> str | None:
        """A node belongs to one pool: master when it has that role (single-node OpenShift's
        node is master and worker at once, and the master pool configures it), else worker."""
        labels = node["metadata"].get("labels") or {}
        for role in ("master", "worker"):
            if f"node-role.kubernetes.io/{role}" in labels:
                return role
        return None

    def reconcile(self, world: World) -> None:
        if not self._ensured:
            self._ensure_pools(world)
        configs = _list(world, "machineconfiguration.openshift.io", "v1", "machineconfigs")
        nodes = fake_nodes(world)
        for pool in _list(world, "machineconfiguration.openshift.io", "v1", "machineconfigpools"):
            role = pool["metadata"]["name"]
            mine = sorted(
                (c["metadata"]["name"], c["metadata"].get("generation", 1))
                for c in configs
                if (c["metadata"].get("labels") or {}).get("machineconfiguration.openshift.io/role")
                == role
            )
            digest = hashlib.sha256(json.dumps(mine).encode()).hexdigest()[:12]
            rendered = f"rendered-{role}-{digest}"
            count = sum(1 for n in nodes if self._pool_of(n) == role)
            done = self.gate.due(rendered, "update", world.knobs["delay_seconds"])
            previous = (pool.get("status") or {}).get("conditions") or []
            stamp = next(
                (
                    c["lastTransitionTime"]
                    for c in previous
                    if c["type"] == "Updated" and c["status"] == ("True" if done else "False")
                ),
                now(),
            )
            _set_status(
                world,
                "machineconfiguration.openshift.io",
                "v1",
                "machineconfigpools",
                pool,
                {
                    "configuration": {
                        "name": rendered,
                        "source": [
                            {
                                "apiVersion": "machineconfiguration.openshift.io/v1",
                                "kind": "MachineConfig",
                                "name": name,
                            }
                            for name, _generation in mine
                        ],
                    },
                    "machineCount": count,
                    "readyMachineCount": count if done else 0,
                    "updatedMachineCount": count if done else 0,
                    "unavailableMachineCount": 0 if done else min(count, 1),
                    "degradedMachineCount": 0,
                    "observedGeneration": pool["metadata"].get("generation", 1),
                    "conditions": [
                        {
                            "type": "Updated",
                            "status": "True" if done else "False",
                            "lastTransitionTime": stamp,
                            "reason": "",
                            "message": "",
                        },
                        {
                            "type": "Updating",
                            "status": "False" if done else "True",
                            "lastTransitionTime": stamp,
                            "reason": "",
                            "message": "",
                        },
                        {
                            "type": "Degraded",
                            "status": "False",
                            "lastTransitionTime": stamp,
                            "reason": "",
                            "message": "",
                        },
                    ],
                },
            )


class Kubelet:
    """Node allocatable from the devices the operators expose on each fake node."""

    name = "kubelet"

    def reconcile(self, world: World) -> None:
        # The tick's lists: the operators before it wrote their statuses into them (_set_status).
        policies = _list(world, "mellanox.com", "v1alpha1", "nicclusterpolicies", reuse=True)
        node_policies = [
            p
            for p in _list(world, "mellanox.com", "v1alpha1", "nicnodepolicies", reuse=True)
            if (p.get("status") or {}).get("state") == "ready"
        ]
        cluster_policies = _list(world, "nvidia.com", "v1", "clusterpolicies", reuse=True)
        gpu_ready = any((p.get("status") or {}).get("state") == "ready" for p in cluster_policies)
        ncp = next((p for p in policies if (p.get("status") or {}).get("state") == "ready"), None)
        states = {
            s["metadata"]["name"]: s
            for s in _list(world, "sriovnetwork.openshift.io", "v1", "sriovnetworknodestates")
        }
        sriov_policies = _list(
            world, "sriovnetwork.openshift.io", "v1", "sriovnetworknodepolicies", reuse=True
        )
        for node in fake_nodes(world):
            hardware = hardware_of(node)
            resources = dict(node_status()["allocatable"])
            if gpu_ready:
                resources["nvidia.com/gpu"] = str(hardware["gpus"])
            labels = node["metadata"].get("labels") or {}
            # The NicClusterPolicy's DaemonSets carry its nodeAffinity.
            if ncp is not None and affinity_matches(ncp["spec"].get("nodeAffinity"), labels):
                resources.update(self._network_operator(ncp["spec"], hardware))
            # The device plugins of the node's NicNodePolicy, with or without a NicClusterPolicy.
            for policy in node_policies:
                if selector_matches(policy["spec"].get("nodeSelector"), labels):
                    resources.update(self._network_operator(policy["spec"], hardware))
            state = states.get(node["metadata"]["name"])
            if state and (state.get("status") or {}).get("syncStatus") == "Succeeded":
                resources.update(self._sriov(state, sriov_policies))
            current = (node.get("status") or {}).get("allocatable") or {}
            if current != resources:
                # A strategic merge keeps map keys left out: name the vanished ones as null.
                patch = {**{k: None for k in current if k not in resources}, **resources}
                world.core.patch_node_status(
                    node["metadata"]["name"], {"status": {"allocatable": patch, "capacity": patch}}
                )

    @staticmethod
    def _network_operator(spec: dict, hardware: dict) -> dict:
        resources = {}
        nic_names = {n["name"]: n for n in hardware["nics"]}
        shared = spec.get("rdmaSharedDevicePlugin")
        if shared:
            for entry in json.loads(shared.get("config") or "{}").get("configList", []):
                names = entry.get("selectors", {}).get("ifNames") or []
                if any(n in nic_names for n in names):
                    resources[f"rdma/{entry['resourceName']}"] = str(entry.get("rdmaHcaMax", 1))
        host = spec.get("sriovDevicePlugin")
        if host:
            for entry in json.loads(host.get("config") or "{}").get("resourceList", []):
                selectors = entry.get("selectors", {})
                link_types = selectors.get("linkTypes")
                pf_names = selectors.get("pfNames")
                count = sum(
                    1
                    for nic in hardware["nics"]
                    if (
                        not link_types
                        or ("infiniband" if nic["linkType"] == "ib" else "ether") in link_types
                    )
                    and (not pf_names or nic["name"] in pf_names)
                )
                if count:
                    prefix = entry.get("resourcePrefix", "nvidia.com")
                    resources[f"{prefix}/{entry['resourceName']}"] = str(count)
        return resources

    @staticmethod
    def _sriov(state: dict, policies: list[dict]) -> dict:
        resources: dict[str, int] = {}
        configured = {
            i["name"]: i for i in state["status"].get("interfaces", []) if i.get("numVfs")
        }
        for policy in policies:
            pfs = [_pf_name(n) for n in policy["spec"].get("nicSelector", {}).get("pfNames", [])]
            vfs = sum(configured[pf]["numVfs"] for pf in pfs if pf in configured)
            if vfs:
                key = f"openshift.io/{policy['spec']['resourceName']}"
                resources[key] = resources.get(key, 0) + vfs
        return {k: str(v) for k, v in resources.items()}


def controllers(gate: DelayGate) -> list:
    return [
        Nfd(),
        SriovOperator(gate),
        NetworkOperator(gate),
        NicNodePolicies(gate),
        GpuOperator(gate),
        Networks(),
        MachineConfigOperator(gate),
        Kubelet(),
    ]
