"""What a step is: the fields a step file fills in (steps/<step>.py), and the helpers they share.

A step file holds everything about its step: the operator it installs through OLM (package,
channel, catalog, namespace and its metadata), the builders of its objects and their kinds, its
gates, its settings with their defaults, its Argo CD sync wave, what diagnostics reads for it and
how uninstall removes it. The table (steps/__init__.py) puts the steps in order; the engine, the
converged check, render, uninstall, diagnostics, the RBAC test and the documentation read only
these fields, never a step's name.

Pure data and pure functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    COMPONENT_LABEL,
    selects,
)

# How widely diagnostics reads a kind, beyond the objects that carry the collection's label.
LABELLED = "the collection's objects"
NAMESPACES = "every one in the namespaces read"
EVERYWHERE = "every one in the cluster"


@dataclass(frozen=True)
class Operator:
    """An operator a step installs through OLM, as Red Hat's and NVIDIA's procedures install it:
    the defaults of gpudirect_rdma_operators.<key>, and its Namespace's metadata."""

    # The key of plan["operators"] and of gpudirect_rdma_operators.
    key: str
    namespace: str
    package: str
    operator_group: str
    subscription: str
    # None: the version channel of the release the plan picks (v26.7 for either NVIDIA operator).
    channel: str | None
    source: str
    # Labels and annotations of its Namespace: (the namespace) -> them.
    namespace_labels: Callable[[str], dict] = lambda namespace: {}
    namespace_annotations: Callable[[str], dict] = lambda namespace: {}
    # The CSV installed with Manual approval when the inventory names none (the releases name
    # the Network and GPU Operators' own).
    default_csv: str | None = None
    # The plan input that turns the operator on (an opt-in step's), or None: always installed.
    opt_in: str | None = None
    # The Subscription's spec.config.env: (plan) -> a list, empty for none.
    env: Callable[[dict], list[dict]] = lambda plan: []


@dataclass(frozen=True)
class Setting:
    """A role setting a step reads: the engine's name for it, the role variable that sets it,
    its type, its default and what it is (roles/<role>/defaults/main.yml and
    meta/argument_specs.yml are written from these, make docs)."""

    key: str
    variable: str
    default: int | float
    description: tuple[str, ...]
    type: str = "int"  # or float
    # The lowest value the step takes, and what it counts.
    minimum: int = 1
    unit: str = "seconds"


@dataclass(frozen=True)
class Disruption:
    """What changing one part of a step's objects does to the nodes they cover (k8s/disruption.py
    judges it before any write): the objects of kinds, the part at path (None: the whole spec),
    covers(object, nodes, the other objects of these kinds) -> the names of the nodes it acts on
    (nodes: {"name", "labels"}), and the effect (a key of k8s.disruption.EFFECTS) when the part
    changes, comes to a node (on_create) or leaves it (on_remove)."""

    what: str
    effect: str
    kinds: tuple[tuple[str, str], ...]
    path: str | None
    covers: Callable[[dict, list[dict], list[dict]], list[str]]
    on_create: bool = True
    on_remove: bool = True
    # Read only the collection's objects of the kinds (a kind with many large objects that are
    # not the collection's, such as MachineConfigs).
    owned_only: bool = False


def selected_nodes(obj: dict, nodes: list[dict], others: list[dict]) -> list[str]:
    """The nodes an object's spec.nodeSelector selects (an empty one selects all)."""
    selector = (obj.get("spec") or {}).get("nodeSelector") or {}
    return [n["name"] for n in nodes if selects(selector, n["labels"])]


@dataclass(frozen=True)
class Step:
    name: str
    title: str
    # The role that runs the step (a role may run several, in the table's order).
    role: str
    # The operator it installs through OLM, if any.
    operator: Operator | None
    # The objects applied after the operator: (plan, the operator's Succeeded CSV or None). The
    # step labels them with its component.
    operand: Callable[[dict, dict | None], list[dict]]
    # The kinds of the operand's objects, in the order uninstall removes them.
    kinds: tuple[tuple[str, str], ...]
    # What must hold before the next step: (plan, settings, the results of applying the step:
    # {"action", "kind", "name", ...}) -> gates (wait module options).
    gates: Callable[[dict, dict, list[dict]], list[dict]] = lambda plan, settings, results: []
    # The role settings the step reads.
    settings: tuple[Setting, ...] = ()
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
    # Kinds diagnostics reads for the step beyond its own (which it reads by the collection's
    # label), or its own read more widely: (apiVersion, kind, LABELLED | NAMESPACES |
    # EVERYWHERE).
    diagnostics: tuple[tuple[str, str, str], ...] = ()
    # What uninstall waits for once the step's objects are deleted: (the deleted objects'
    # results) -> gates.
    uninstall_gates: Callable[[list[dict]], list[dict]] = lambda deleted: []
    # An opt-in step runs only when the plan turns it on: (plan) -> on. Off, it installs and
    # waits on nothing, and a step that prunes removes what the collection made of its kinds.
    enabled: Callable[[dict], bool] = lambda plan: True
    # The plan input that turns an opt-in step on (what the documentation names).
    opt_in: str | None = None
    # An opt-in step that is off looks for its objects to remove only while the collection's
    # object (apiVersion, kind, name) is there, of a kind every run lists anyway (a Namespace):
    # a step that was never on costs a run no request. None: it always looks.
    trace: tuple[str, str, str] | None = None
    # An operator somebody else installed (a Subscription to its package in any namespace that
    # is not the collection's) is used, not replaced: the step writes nothing then.
    uses_installed: bool = False
    # What upgrade.yml holds while it steps the step's operator through its InstallPlans: (plan)
    # -> merge patches {api_version, kind, name, namespace, patch, why} made before the first
    # InstallPlan is approved; the step's own apply after the last gives the plan's values back.
    upgrade_holds: Callable[[dict], list[dict]] = lambda plan: []
    # The step's operand needs what only the cluster knows: (plan, list) -> the plan with it,
    # where list(api_version, kind, namespace) is the engine's read (the NIC types of the
    # NicDevices, when the inventory names none).
    discover: Callable | None = None
    # Uninstall may first ask the step's objects to undo what they did (the NICs back to their
    # firmware defaults) when asked: (the JSON merge patch, (object) -> the gates that say it is
    # done).
    reset: tuple[dict, Callable[[dict], list[dict]]] | None = None
    # The RDMA method (gpudirect_rdma_method) whose node groups the step configures, if any.
    method: str | None = None
    # Its preflight checks (steps.checks.Check): what each reads and judges, before any write.
    preflight: tuple = ()
    # What a change of its objects does to nodes (Disruption), agreed or refused before any write.
    disruptions: tuple = ()

    @property
    def component(self) -> str:
        """The component label of the step's objects (and the folder of the rendered tree)."""
        return self.name

    def setting(self, key: str) -> Setting | None:
        return next((s for s in self.settings if s.key == key), None)

    def operand_objects(self, plan: dict, csv: dict | None = None) -> list[dict]:
        """The operand, each object labelled with the step's component."""
        return [labelled(obj, self.component) for obj in self.operand(plan, csv)]


def labelled(obj: dict, component: str) -> dict:
    """obj (a new dict) with the component label after its other labels."""
    metadata = dict(obj["metadata"])
    metadata["labels"] = {**(metadata.get("labels") or {}), COMPONENT_LABEL: component}
    return {**obj, "metadata": metadata}


def deleted(results: list[dict], kind: str) -> list[dict]:
    """The results of the objects of kind that a step's apply or uninstall deleted."""
    return [r for r in results if r["action"] == "deleted" and r["kind"] == kind]


def install_timeout(role: str) -> Setting:
    """The OLM install's timeout of a step's operator."""
    return Setting(
        "install_timeout",
        f"{role}_install_timeout",
        900,
        ("Seconds for the OLM install (catalog, approval, CSV Succeeded).",),
    )


def driver_stuck_seconds(role: str, driver: str) -> Setting:
    """How long a node may stay in one state of a driver's upgrade before the step fails."""
    return Setting(
        "driver_stuck_seconds",
        f"{role}_driver_stuck_seconds",
        1800,
        (
            f"Seconds a node may stay in one state of the {driver} driver's rollout (its upgrade "
            "state label) before the role fails, naming the node, the state and what to do; a "
            "node in C(upgrade-failed) fails it at once. The whole rollout waits within the "
            "role's ready timeout.",
        ),
    )


def stable_seconds(role: str, what: str) -> Setting:
    """How long an operator's policy must stay ready before the step moves on."""
    return Setting(
        "stable_seconds",
        f"{role}_ready_stable_seconds",
        0,
        (
            f"Seconds the {what} must stay C(ready), read after read, before the role moves on; "
            "a C(notReady) read starts the count again. For an operator whose status flaps (a "
            "crash-looping operand pod reports ready for a moment). C(0) moves on at the first "
            "ready read.",
            "A converged re-run waits this long too.",
        ),
        type="float",
        minimum=0,
    )
