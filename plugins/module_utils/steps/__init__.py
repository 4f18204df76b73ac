"""The steps of a GPUDirect RDMA configuration, in the order they are applied: the one table.

Each step is one file of this package (steps/<step>.py, its fields in base.py): the operator it
installs through OLM, the builders of its objects and their kinds, its gates and settings, its
Argo CD sync wave, what diagnostics reads for it and how uninstall removes it. STEPS below is
the one place their order is written. The roles, the converged check, render, uninstall,
diagnostics, preflight, the RBAC test and the documentation read the table through the functions
here; none of them names a step. Adding a step is its file and its place in STEPS.

Pure data and pure functions: no I/O.
"""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import olm
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    COMPONENT_LABEL,
)

from . import (
    gpu_operator,
    host_device,
    machine_config,
    maintenance_operator,
    monitoring,
    network_operator,
    nfd,
    nic_configuration,
    nic_node_policies,
    shared_device,
    sriov_legacy,
    sriov_network_operator,
)
from .base import EVERYWHERE, LABELLED, NAMESPACES, Operator, Setting, Step, labelled

# The order the steps are applied in; uninstall goes the other way.
STEPS: tuple[Step, ...] = (
    nfd.STEP,
    sriov_network_operator.STEP,
    maintenance_operator.STEP,
    network_operator.STEP,
    nic_node_policies.STEP,
    machine_config.STEP,
    nic_configuration.STEP,
    gpu_operator.STEP,
    shared_device.STEP,
    host_device.STEP,
    sriov_legacy.STEP,
    monitoring.STEP,
)

OLM_KINDS = (
    ("v1", "Namespace"),
    ("operators.coreos.com/v1", "OperatorGroup"),
    ("operators.coreos.com/v1alpha1", "Subscription"),
)
# What verify.yml leaves or may leave: the test's pods and the NCCL test's headless Service (kept
# with verify_keep_pods) and the NCCL settings' ConfigMaps. Not a step, but uninstall removes them
# first.
VERIFY_KINDS = (("v1", "Pod"), ("v1", "Service"), ("v1", "ConfigMap"))
# The NCCL test's SSH key Secret, read by its name in the namespaces of the test's other objects,
# never by listing Secrets (rbac/ grants this one name only).
VERIFY_NAMED = (("v1", "Secret", "gpudirect-rdma-verify-nccl-ssh"),)

NAMES = tuple(step.name for step in STEPS)
_BY_NAME = {step.name: step for step in STEPS}
# The operators, by their key in plan["operators"] and gpudirect_rdma_operators, in step order.
OPERATORS: dict[str, Operator] = {s.operator.key: s.operator for s in STEPS if s.operator}
# The RDMA methods' steps by method, in the table's order, and every kind they make.
METHOD_STEPS: dict[str, Step] = {s.method: s for s in STEPS if s.method}
METHOD_KINDS = tuple(dict.fromkeys(k for s in METHOD_STEPS.values() for k in s.kinds))
# The roles that run the steps, each once, in the order of its first step.
ROLES = tuple(dict.fromkeys(step.role for step in STEPS))


def step(name: str) -> Step:
    if name not in _BY_NAME:
        raise ValueError(f"step: got {name!r}; expected one of {', '.join(NAMES)}")
    return _BY_NAME[name]


def of_role(role: str) -> tuple[Step, ...]:
    """The steps a role runs, in the table's order."""
    found = tuple(s for s in STEPS if s.role == role)
    if not found:
        raise ValueError(f"role: got {role!r}; expected one of {', '.join(ROLES)}")
    return found


def selected(name: str | None = None, role: str | None = None) -> list[str]:
    """The step names a task asks for: one step by name, all, or every step of a role (in the
    table's order); ValueError naming what is allowed."""
    if (role is None) == (name is None):
        raise ValueError(
            f"name, role: got name {name!r} and role {role!r}; expected one of them: the role "
            f"({', '.join(ROLES)}), or the step (all, {', '.join(NAMES)})"
        )
    if role is not None:
        return [s.name for s in of_role(role)]
    if name == "all":
        return list(NAMES)
    if name not in _BY_NAME:
        raise ValueError(f"name: got {name!r}; expected all or one of {', '.join(NAMES)}")
    return [name]


def operator_objects(plan: dict, step_: Step) -> list[dict]:
    """The Namespace, OperatorGroup and Subscription of a step's operator, labelled with the
    step's component; none for a step without one."""
    if not step_.operator:
        return []
    return [labelled(obj, step_.component) for obj in olm.operator_objects(plan, step_.operator)]


def objects(step_: Step, plan: dict, csv: dict | None = None) -> list[dict]:
    """Every object of a step, in apply order: the operator's, then the operand; none for an
    opt-in step the plan leaves off."""
    if not step_.enabled(plan):
        return []
    return [*operator_objects(plan, step_), *step_.operand_objects(plan, csv)]


def build_objects(plan: dict, csvs: dict | None = None) -> list[dict]:
    """Every object of the plan, in apply order (csvs: operator key -> its CSV, for the operands
    built on one; without it, the release facts built into the collection are used)."""
    csvs = csvs or {}
    return [
        obj
        for s in STEPS
        for obj in objects(s, plan, csvs.get(s.operator.key) if s.operator else None)
    ]


def planned(plan: dict, kinds: tuple[tuple[str, str], ...]) -> list[dict]:
    """The plan's objects of these kinds, whichever steps build them (none built on a CSV)."""
    return [
        obj
        for s in STEPS
        if not s.needs_csv
        for obj in s.operand_objects(plan, None)
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
    return objects(of_component(component), plan, csv)


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
        # A step's own Namespace goes with the operators' (remove.py's last stage).
        found.extend(kind for kind in s.kinds if kind not in OLM_KINDS)
    found.extend(reversed(OLM_KINDS))
    return tuple(dict.fromkeys(found))


def diagnostics_kinds() -> tuple[tuple[str, str, str], ...]:
    """What diagnostics reads for the steps, in their order: each step's kinds by the
    collection's label, unless the step reads one more widely, and the kinds it reads beside
    them."""
    found: dict[tuple[str, str], str] = {}
    for s in STEPS:
        wider = {(api_version, kind): scope for api_version, kind, scope in s.diagnostics}
        for kind in s.kinds:
            if kind not in OLM_KINDS:  # read with the operators' (a step's own Namespace)
                found.setdefault(kind, wider.pop(kind, LABELLED))
        for kind, scope in wider.items():
            found.setdefault(kind, scope)
    return tuple((api_version, kind, scope) for (api_version, kind), scope in found.items())


def describe() -> dict:
    """The table as data, for the documentation (hack/docs.py): each step's facts, and each
    role's settings as its steps declare them."""
    steps = []
    for index, s in enumerate(STEPS, 1):
        runs = (
            f"with gpudirect_rdma_{s.opt_in}"
            if s.opt_in
            else f"for the node groups on {s.method}"
            if s.method
            else "always"
        )
        steps.append(
            {
                "order": index,
                "name": s.name,
                "title": s.title,
                "role": s.role,
                "operator": s.operator.package if s.operator else None,
                "kinds": [kind for _api_version, kind in s.kinds],
                "runs": runs,
                "wave": s.wave,
                "prunes": s.prunes,
                "uninstall": f"when {s.uninstall_when}" if s.uninstall_when else "always",
                "checks": [check.name for check in s.preflight],
                "disrupts": [f"{d.what}: {d.effect}" for d in s.disruptions],
            }
        )
    roles = {}
    for role in ROLES:
        settings = {}
        for s in of_role(role):
            for setting in s.settings:
                settings.setdefault(
                    setting.variable,
                    {
                        "type": setting.type,
                        "default": setting.default,
                        "description": list(setting.description),
                    },
                )
        roles[role] = settings
    return {"steps": steps, "roles": roles}


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


__all__ = [
    "EVERYWHERE",
    "LABELLED",
    "METHOD_KINDS",
    "METHOD_STEPS",
    "NAMES",
    "NAMESPACES",
    "OLM_KINDS",
    "OPERATORS",
    "ROLES",
    "STEPS",
    "VERIFY_KINDS",
    "VERIFY_NAMED",
    "Operator",
    "Setting",
    "Step",
    "build_objects",
    "component_objects",
    "component_of",
    "components",
    "describe",
    "diagnostics_kinds",
    "is_olm",
    "kind_dicts",
    "managed_kinds",
    "objects",
    "of_component",
    "of_role",
    "operator_objects",
    "planned",
    "prune_scope",
    "selected",
    "step",
    "wave",
]
