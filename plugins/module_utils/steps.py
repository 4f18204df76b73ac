"""The steps of a GPUDirect RDMA configuration, in the order they are applied: the one table.

Every fact about a step lives in its entry: the operator it installs through OLM, the builders
of its objects, the kinds those objects have, whether applying it removes what the plan no
longer has, its gates and the role settings they read, its Argo CD sync wave, whether
uninstall removes it only when asked, and the namespaces diagnostics reads. The roles, the
converged check, render, uninstall, diagnostics, preflight and the RBAC test all read this
table; adding a step is one entry here plus its builders and gates.

Pure data and pure functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ansible_collections.gpudirect.rdma.plugins.module_utils import gates
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import (
    gpu,
    machine_config,
    network_operator,
    networks,
    nfd,
    nic_configuration,
    olm,
    sriov,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    COMPONENT_LABEL,
    GPU_OPERATOR,
    MACHINE_CONFIG,
    MAINTENANCE_OPERATOR,
    METHOD_COMPONENTS,
    NETWORK_OPERATOR,
    NFD,
    NIC_CONFIGURATION,
    NIC_NODE_POLICIES,
    SRIOV_NETWORK_OPERATOR,
    group_plans,
)

OLM_KINDS = (
    ("v1", "Namespace"),
    ("operators.coreos.com/v1", "OperatorGroup"),
    ("operators.coreos.com/v1alpha1", "Subscription"),
)
# Each RDMA method's kinds: a method's step removes the collection's objects of its kinds and its
# component that the plan no longer has, and all of them when no node group uses the method, so
# switching method leaves nothing of the previous one.
IPPOOL = ("nv-ipam.nvidia.com/v1alpha1", "IPPool")
SHARED_DEVICE_KINDS = (
    ("mellanox.com/v1alpha1", "MacvlanNetwork"),
    ("mellanox.com/v1alpha1", "IPoIBNetwork"),
    IPPOOL,
)
HOST_DEVICE_KINDS = (("mellanox.com/v1alpha1", "HostDeviceNetwork"), IPPOOL)
SRIOV_LEGACY_KINDS = (
    ("sriovnetwork.openshift.io/v1", "SriovNetwork"),
    ("sriovnetwork.openshift.io/v1", "SriovIBNetwork"),
    ("sriovnetwork.openshift.io/v1", "SriovNetworkNodePolicy"),
)
# What verify.yml leaves or may leave: the test's pods and the NCCL test's headless Service (kept
# with verify_keep_pods) and the NCCL settings' ConfigMaps. Not a step, but uninstall removes them
# first.
VERIFY_KINDS = (("v1", "Pod"), ("v1", "Service"), ("v1", "ConfigMap"))
# The NCCL test's SSH key Secret, read by its name in the namespaces of the test's other objects,
# never by listing Secrets (rbac/ grants this one name only).
VERIFY_NAMED = (("v1", "Secret", "gpudirect-rdma-verify-nccl-ssh"),)
# The mirror registry's pull Secret, made from gpudirect_rdma_image_registry_username/_password.
# It is read by its name, never by listing Secrets: rbac/ grants this one name only.
REGISTRY_SECRET_NAME = "gpudirect-rdma-image-registry"  # noqa: S105 - a name, not a password


@dataclass(frozen=True)
class Step:
    name: str
    title: str
    # The role that runs the step.
    role: str
    # The plan["operators"] key of the operator it installs through OLM, if any.
    operator: str | None
    # The objects applied after the operator: (plan, the operator's Succeeded CSV or None).
    operand: Callable[[dict, dict | None], list[dict]]
    # The kinds of the operand's objects, in the order uninstall removes them.
    kinds: tuple[tuple[str, str], ...]
    # What must hold before the next step: (plan, settings) -> gates (wait module options).
    gates: Callable[[dict, dict], list[dict]] = lambda plan, settings: []
    # Role settings the step reads: the engine's name -> the role variable (its default is in
    # roles/<role>/defaults/main.yml).
    settings: dict = field(default_factory=dict)
    # Applying the step removes the collection's objects of its kinds that the plan lacks.
    prunes: bool = False
    # Before it applies, the step removes the collection's objects of these kinds that the plan
    # lacks, whichever step plans them (a NicNodePolicy leaves before the NicClusterPolicy takes
    # its sections back, or the Network Operator's webhook refuses the NicClusterPolicy).
    clears: tuple[tuple[str, str], ...] = ()
    # The operand is built on the operator's ClusterServiceVersion (its alm-examples).
    needs_csv: bool = False
    # Argo CD sync wave of the operand (the operators' objects are wave 0).
    wave: int = 1
    # Uninstall removes its objects only when asked (the variable), after the operators.
    uninstall_when: str | None = None
    # Fixed-name objects of the step that are read by name, never listed: (apiVersion, kind,
    # name); they live in the namespace of the step's operator.
    named: tuple[tuple[str, str, str], ...] = ()
    # Namespaces diagnostics reads for the step, beyond its operator's.
    namespaces: Callable[[dict], list[str]] = lambda plan: []
    # What uninstall waits for once the step's objects are deleted: (the deleted objects'
    # results) -> gates.
    uninstall_gates: Callable[[list[dict]], list[dict]] = lambda deleted: []
    # An opt-in step runs only when the plan turns it on: (plan) -> on. Off, it installs and
    # waits on nothing, and a step that prunes removes what the collection made of its kinds.
    enabled: Callable[[dict], bool] = lambda plan: True
    # An operator somebody else installed (a Subscription to its package in any namespace that
    # is not the collection's) is used, not replaced: the step writes nothing then.
    uses_installed: bool = False
    # The step's operand needs what only the cluster knows: (plan, list) -> the plan with it,
    # where list(api_version, kind, namespace) is the engine's read (the NIC types of the
    # NicDevices, when the inventory names none).
    discover: Callable | None = None
    # Uninstall may first ask the step's objects to undo what they did (the NICs back to their
    # firmware defaults) when asked: (the JSON merge patch, (object) -> the gates that say it is
    # done).
    reset: tuple[dict, Callable[[dict], list[dict]]] | None = None

    @property
    def component(self) -> str:
        """The component label of the step's objects (and the folder of the rendered tree)."""
        return self.name

    def objects(self, plan: dict, csv: dict | None = None) -> list[dict]:
        """Every object of the step, in apply order: the operator's, then the operand; none
        for an opt-in step the plan leaves off."""
        if not self.enabled(plan):
            return []
        operator = olm.operator_objects(plan, self.operator) if self.operator else []
        return [*operator, *self.operand(plan, csv)]


def _groups_of(method: str) -> Callable[[dict], list[dict]]:
    """The node groups (each as it sees the plan) that use one RDMA method."""
    return lambda plan: [view for view in group_plans(plan) if view["method"] == method]


def _uses(method: str) -> Callable[[dict], bool]:
    return lambda plan: bool(_groups_of(method)(plan))


def _group_objects(view: dict) -> list[dict]:
    """One node group's RDMA objects, by its method."""
    if view["method"] == "sriov_legacy":
        return [*sriov.node_policies(view), *sriov.networks(view)]
    return [*networks.ip_pools(view), *networks.secondary_networks(view)]


def _method_step(method: str, title: str, kinds: tuple, **more) -> Step:
    """The step of one RDMA method: named as its objects' component, run by the role of the
    method's name, for the node groups on it."""
    return Step(
        name=METHOD_COMPONENTS[method],
        title=title,
        role=method,
        operator=None,
        operand=lambda plan, _csv: [
            obj for view in _groups_of(method)(plan) for obj in _group_objects(view)
        ],
        kinds=kinds,
        gates=lambda plan, settings: gates.method_gates(plan, method),
        settings={"ready_timeout": f"{method}_timeout"},
        prunes=True,
        wave=5,
        namespaces=more.pop("namespaces", lambda plan: [plan["network_namespace"]]),
        enabled=_uses(method),
        **more,
    )


def _deleted(results: list[dict], kind: str) -> list[dict]:
    return [r for r in results if r["action"] == "deleted" and r["kind"] == kind]


def _vfs_removed(deleted: list[dict]) -> list[dict]:
    """Once SR-IOV node policies are deleted, their node states remove the VFs. A cluster with
    no node state (no node left with an SR-IOV NIC, or the operator gone) has no VF to wait for,
    so none is needed."""
    namespaces = sorted({r["namespace"] for r in _deleted(deleted, "SriovNetworkNodePolicy")})
    return [gates.node_states_synced(ns, "VFs are removed", min_count=0) for ns in namespaces]


def _pools_rolled_out(deleted: list[dict]) -> list[dict]:
    """Once MachineConfigs are deleted, every pool renders without them and is updated."""
    names = [r["name"] for r in _deleted(deleted, "MachineConfig")]
    return gates.pool_gates(None, [], names) if names else []


def _sriov_namespaces(plan: dict) -> list[str]:
    return [plan["network_namespace"], plan["operators"]["sriov_network_operator"]["namespace"]]


STEPS = (
    Step(
        name=NFD,
        title="Node Feature Discovery",
        role="nfd",
        operator="nfd",
        operand=lambda plan, csv: [nfd.node_feature_discovery(plan)],
        kinds=(("nfd.openshift.io/v1", "NodeFeatureDiscovery"),),
        gates=lambda plan, settings: gates.nfd_gates(plan, settings.get("min_nodes", 1)),
        settings={
            "install_timeout": "nfd_install_timeout",
            "ready_timeout": "nfd_labels_timeout",
            "min_nodes": "nfd_min_nodes",
        },
        wave=1,
    ),
    Step(
        name=SRIOV_NETWORK_OPERATOR,
        title="SR-IOV Network Operator",
        role="sriov_network_operator",
        operator="sriov_network_operator",
        operand=lambda plan, csv: [sriov.sriov_operator_config(plan)],
        kinds=(("sriovnetwork.openshift.io/v1", "SriovOperatorConfig"),),
        settings={"install_timeout": "sriov_network_operator_install_timeout"},
        wave=1,
    ),
    Step(
        name=MAINTENANCE_OPERATOR,
        title="NVIDIA Maintenance Operator (opt-in: gpudirect_rdma_nic_configuration)",
        role="maintenance_operator",
        operator="maintenance_operator",
        operand=lambda plan, csv: nic_configuration.maintenance_operator_config(plan),
        kinds=((nic_configuration.MAINTENANCE_API_VERSION, "MaintenanceOperatorConfig"),),
        settings={"install_timeout": "maintenance_operator_install_timeout"},
        # Before the Network Operator, whose DOCA driver upgrades and NIC configuration daemon
        # ask it for maintenance.
        wave=1,
        enabled=nic_configuration.enabled,
        uses_installed=True,
    ),
    Step(
        name=NETWORK_OPERATOR,
        title="NVIDIA Network Operator",
        role="network_operator",
        operator="network_operator",
        operand=lambda plan, csv: network_operator.nic_cluster_policies(plan),
        kinds=((network_operator.API_VERSION, "NicClusterPolicy"),),
        gates=lambda plan, settings: gates.network_operator_gates(plan),
        settings={
            "install_timeout": "network_operator_install_timeout",
            "ready_timeout": "network_operator_ready_timeout",
            "stable_seconds": "network_operator_ready_stable_seconds",
        },
        wave=2,
        named=(("v1", "Secret", REGISTRY_SECRET_NAME),),
        # The node model with nothing cluster-wide has no NicClusterPolicy: the cluster model's
        # leaves before the NicNodePolicies take its sections.
        prunes=True,
        clears=((network_operator.API_VERSION, "NicNodePolicy"),),
    ),
    Step(
        name=NIC_NODE_POLICIES,
        title="NicNodePolicies (the node groups' DOCA driver and device plugins)",
        role="network_operator",
        operator=None,
        operand=lambda plan, csv: network_operator.nic_node_policies(plan),
        kinds=((network_operator.API_VERSION, "NicNodePolicy"),),
        gates=lambda plan, settings: gates.nic_node_policy_gates(plan),
        settings={
            "ready_timeout": "network_operator_ready_timeout",
            "stable_seconds": "network_operator_ready_stable_seconds",
        },
        # After the NicClusterPolicy's wave, beside the MachineConfigs' (neither needs the
        # other), before the GPU Operator's driver.
        wave=3,
    ),
    Step(
        name=MACHINE_CONFIG,
        title="Node configuration (MachineConfigs)",
        role="node_config",
        operator=None,
        operand=lambda plan, csv: machine_config.machine_configs(plan),
        kinds=((machine_config.API_VERSION, "MachineConfig"),),
        gates=lambda plan, settings: gates.machine_config_gates(
            plan, settings.get("removed_machine_configs")
        ),
        settings={"ready_timeout": "node_config_timeout"},
        prunes=True,
        wave=3,
        uninstall_when="uninstall_machine_configs",
        namespaces=lambda plan: ["openshift-machine-config-operator"],
        uninstall_gates=_pools_rolled_out,
    ),
    Step(
        name=NIC_CONFIGURATION,
        title="NIC firmware configuration (opt-in: gpudirect_rdma_nic_configuration)",
        role="nic_configuration",
        operator=None,
        operand=lambda plan, csv: nic_configuration.nic_configuration_templates(plan),
        kinds=((nic_configuration.API_VERSION, "NicConfigurationTemplate"),),
        gates=lambda plan, settings: gates.nic_configuration_gates(plan),
        settings={"ready_timeout": "nic_configuration_timeout"},
        # Once the DOCA driver is ready (the NicClusterPolicy's or the NicNodePolicies'), as
        # NVIDIA requires, after the MachineConfigs' reboots, beside the GPU Operator's wave, and
        # before the RDMA method's objects, which use the configured NICs.
        wave=4,
        prunes=True,
        enabled=nic_configuration.enabled,
        discover=nic_configuration.with_discovered_types,
        # resetToDefault: every device goes back to its firmware defaults (a reboot each).
        reset=({"spec": {"resetToDefault": True}}, gates.nic_configuration_reset_gates),
        namespaces=lambda plan: [plan["operators"]["maintenance_operator"]["namespace"]],
    ),
    Step(
        name=GPU_OPERATOR,
        title="NVIDIA GPU Operator",
        role="gpu_operator",
        operator="gpu_operator",
        operand=lambda plan, csv: [gpu.cluster_policy(plan, csv)],
        kinds=(("nvidia.com/v1", "ClusterPolicy"),),
        gates=lambda plan, settings: gates.gpu_operator_gates(plan),
        settings={
            "install_timeout": "gpu_operator_install_timeout",
            "ready_timeout": "gpu_operator_ready_timeout",
            "stable_seconds": "gpu_operator_ready_stable_seconds",
        },
        needs_csv=True,
        wave=4,
    ),
    _method_step("shared_device", "RDMA shared device", SHARED_DEVICE_KINDS),
    _method_step("host_device", "RDMA host device", HOST_DEVICE_KINDS),
    _method_step(
        "sriov_legacy",
        "RDMA SR-IOV legacy",
        SRIOV_LEGACY_KINDS,
        namespaces=_sriov_namespaces,
        uninstall_gates=_vfs_removed,
    ),
)
NAMES = tuple(step.name for step in STEPS)
_BY_NAME = {step.name: step for step in STEPS}
# The RDMA methods' steps, in the table's order, and every kind they make.
METHOD_STEPS = tuple(s.name for s in STEPS if s.name in METHOD_COMPONENTS.values())
METHOD_KINDS = tuple(dict.fromkeys(kind for name in METHOD_STEPS for kind in _BY_NAME[name].kinds))


def step(name: str) -> Step:
    if name not in _BY_NAME:
        raise ValueError(f"step: got {name!r}; expected one of {', '.join(NAMES)}")
    return _BY_NAME[name]


def build_objects(plan: dict, csvs: dict | None = None) -> list[dict]:
    """Every object of the plan, in apply order (csvs: operator -> its CSV, for the operands
    built on one; without it, the release facts built into the collection are used)."""
    csvs = csvs or {}
    return [obj for s in STEPS for obj in s.objects(plan, csvs.get(s.operator))]


def planned(plan: dict, kinds: tuple[tuple[str, str], ...]) -> list[dict]:
    """The plan's objects of these kinds, whichever steps build them (none built on a CSV)."""
    return [
        obj
        for s in STEPS
        if not s.needs_csv
        for obj in s.operand(plan, None)
        if (obj["apiVersion"], obj["kind"]) in kinds
    ]


def component_of(obj: dict) -> str:
    return obj["metadata"]["labels"][COMPONENT_LABEL]


def of_component(component: str) -> Step:
    """The step whose objects carry this component label."""
    if component in _BY_NAME:
        return _BY_NAME[component]
    raise ValueError(f"component: got {component!r}; expected one of {', '.join(components())}")


def component_objects(plan: dict, component: str, csv: dict | None = None) -> list[dict]:
    """The objects of one component, in apply order; none for a step the plan leaves off (an
    RDMA method no node group uses)."""
    return of_component(component).objects(plan, csv)


def is_olm(obj: dict) -> bool:
    """An operator's Namespace, OperatorGroup or Subscription (not its operand)."""
    return (obj.get("apiVersion"), obj.get("kind")) in OLM_KINDS


def wave(obj: dict) -> int:
    """The Argo CD sync wave of an object: 0 for the operators' objects, else its step's."""
    return 0 if is_olm(obj) else of_component(component_of(obj)).wave


def components(plan: dict | None = None) -> tuple[str, ...]:
    """The component labels in apply order: of the steps the plan turns on, or of every step."""
    return tuple(s.component for s in STEPS if plan is None or s.enabled(plan))


def managed_kinds() -> tuple[tuple[str, str], ...]:
    """Every kind the collection creates and finds by listing (the named objects' kinds are
    read by name only), operands first in uninstall order, then the operators' kinds."""
    found = [*VERIFY_KINDS]
    for s in reversed(STEPS):
        found.extend(s.kinds)
    found.extend(
        [
            ("operators.coreos.com/v1alpha1", "Subscription"),
            ("operators.coreos.com/v1", "OperatorGroup"),
            ("v1", "Namespace"),
        ]
    )
    return tuple(dict.fromkeys(found))


def kind_dicts(pairs) -> list[dict]:
    """(apiVersion, kind) pairs as the kinds options of apply and remove name them."""
    return [{"apiVersion": api_version, "kind": kind} for api_version, kind in pairs]


def prune_scope(step_: Step) -> dict | None:
    """The kinds whose collection objects applying the step removes when the plan lacks them,
    or None for a step that removes nothing."""
    if not step_.prunes:
        return None
    # Its own objects only: two methods' steps share the IPPool kind.
    return {"kinds": kind_dicts(step_.kinds), "label_selector": f"{COMPONENT_LABEL}={step_.name}"}
