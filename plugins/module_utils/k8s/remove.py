"""Remove the collection's objects, stage by stage, in the reverse order of the steps.

Stages come from the step table (module_utils/steps/): the bandwidth test's pods first, then each
step's objects (the RDMA method's first, NFD's last), waiting after each until they are gone and
until what the step's removal sets off has been rolled out (SR-IOV node states remove the VFs,
MachineConfigPools render without the MachineConfigs); then the operators, in the same reverse
order; then the Namespaces. `operands` stands for the test pods and every step that uninstall
removes unasked, in that order; a step that uninstall removes only when asked (the
MachineConfigs: their pool reboots) is its own stage.

Only objects with the collection's managed-by label are removed; a user's objects of the same
kinds stay. Each stage's objects are deleted together, then awaited until gone, so the operators
that still run can clean up after their operands before their own turn comes.

Two kinds need more than their label:
- Subscription: OLM leaves the ClusterServiceVersion it installed behind, so the CSVs go too:
  the ones the Subscriptions name, and the ones OLM installed under the collection's
  OperatorGroup (annotation olm.operatorGroup), which a Subscription removed by an interrupted
  earlier run no longer names. Subscriptions go first, or OLM would install the CSV again.
- Namespace: one that existed before the collection adopted it (annotation) is kept, and so is
  one that holds objects of the managed kinds (other than Pods) that somebody else created:
  deleting it would delete them.

A step's named objects (the registry pull Secret) are never listed: each is read by its name in
the namespaces of the collection's operators, and removed when it carries the label.
"""

from __future__ import annotations

import time

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    COMPONENT_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import (
    delete_and_wait,
    deletion_diff,
    identity,
    outcome,
    owned_by_collection,
    owned_objects,
    was_adopted,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (
    get_if_served,
    list_if_served,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.progress import SILENT
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.reads import matching
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import to_gate, wait_for

OLM_V1ALPHA1 = "operators.coreos.com/v1alpha1"
TEST_PODS = "test-pods"
OPERANDS = "operands"
OPERATORS = "operators"
NAMESPACES = "namespaces"
# Every stage, in uninstall order.
STAGES = (
    TEST_PODS,
    *(s.name for s in reversed(table.STEPS)),
    OPERATORS,
    NAMESPACES,
)
# The stages whose objects can first undo what they did (steps.Step.reset).
RESETTABLE = [s.name for s in reversed(table.STEPS) if s.reset]
# What `operands` stands for.
OPERAND_STAGES = (
    TEST_PODS,
    *(s.name for s in reversed(table.STEPS) if not s.uninstall_when),
)


def _of(step: table.Step, label_selector: str) -> str:
    """label_selector narrowed to the objects of the step's component."""
    return ",".join(s for s in (f"{COMPONENT_LABEL}={step.component}", label_selector) if s)


def installed_csvs(cluster, subscriptions: list[dict], operator_groups: list[dict]) -> list[dict]:
    """The ClusterServiceVersions the collection's operators run on."""
    wanted = set()
    for sub in subscriptions:
        status = sub.get("status") or {}
        for name in {status.get("installedCSV"), status.get("currentCSV")} - {None}:
            wanted.add((sub["metadata"]["namespace"], name))
    groups = {(g["metadata"]["namespace"], g["metadata"]["name"]) for g in operator_groups}
    found = []
    for namespace in sorted({ns for ns, _name in wanted} | {ns for ns, _name in groups}):
        csvs = list_if_served(cluster, OLM_V1ALPHA1, "ClusterServiceVersion", namespace)
        if csvs is None:
            return []
        for csv in csvs:
            metadata = csv["metadata"]
            group = (metadata.get("annotations") or {}).get("olm.operatorGroup")
            if (namespace, metadata["name"]) in wanted or (namespace, group) in groups:
                found.append({**csv, "apiVersion": OLM_V1ALPHA1, "kind": "ClusterServiceVersion"})
    return found


class Remover:
    """Removes stages of the collection's objects through a Cluster; collects results."""

    def __init__(self, cluster, check_mode: bool, sleep=time.sleep, progress=SILENT):
        self.cluster = cluster
        self.check_mode = check_mode
        self.sleep = sleep
        self.progress = progress  # hears of every long wait (k8s.progress)
        self.results: list[dict] = []
        self.diffs: list[dict] = []
        self.waited: list[str] = []  # the gates waited on after a removal

    @property
    def changed(self) -> bool:
        return any(r["action"] == "deleted" for r in self.results)

    def _delete(self, items: list[dict], timeout: float, reason: str) -> list[dict]:
        results = delete_and_wait(
            self.cluster, items, self.check_mode, timeout, [reason], self.sleep, self.progress
        )
        self.results.extend(results)
        self.diffs.extend(deletion_diff(item) for item in items)
        return results

    def remove(
        self, stage: str, label_selector: str, timeout: float, reset: tuple[str, ...] = ()
    ) -> None:
        """Remove one stage's objects (reset: the stages whose objects first undo what they did,
        steps.Step.reset)."""
        if stage == OPERANDS:
            for each in OPERAND_STAGES:
                self.remove(each, label_selector, timeout, reset)
            return
        if stage not in STAGES:
            raise ValueError(
                f"stage: got {stage!r}; expected {OPERANDS} or one of {', '.join(STAGES)}"
            )
        reason = f"uninstall: {stage}"
        if stage == OPERATORS:
            for step in reversed(table.STEPS):
                if step.operator:
                    self._remove_operators(_of(step, label_selector), timeout, reason)
            return
        if stage == TEST_PODS:
            kinds = table.kind_dicts(table.VERIFY_KINDS)
            items = owned_objects(self.cluster, kinds, label_selector)
            self._delete(items + self._verify_named(items, label_selector), timeout, reason)
            return
        if stage == NAMESPACES:
            items = owned_objects(
                self.cluster, table.kind_dicts([("v1", "Namespace")]), label_selector
            )
            self._delete(self._namespaces_to_delete(items), timeout, reason)
            return
        step = table.step(stage)
        # The step's own objects: kinds several steps make (IPPools, a Namespace) are told apart
        # by the component label, as applying a step prunes them (steps.prune_scope).
        items = owned_objects(self.cluster, table.kind_dicts(step.kinds), _of(step, label_selector))
        items += self._named_objects(step, label_selector)
        # A step's own Namespace (the monitoring step's) goes as the operators' do.
        namespaces = [i for i in items if i["kind"] == "Namespace"]
        if namespaces:
            items = [i for i in items if i["kind"] != "Namespace"]
            items += self._namespaces_to_delete(namespaces)
        if stage in reset and step.reset and items:
            self._reset(step, items, timeout)
        deleted = self._delete(items, timeout, reason)
        gates = [to_gate(g) for g in step.uninstall_gates(deleted)]
        if gates and not self.check_mode:
            wait_for(self.cluster, gates, timeout, sleep=self.sleep, progress=self.progress)
            self.waited.extend(g.name for g in gates)

    def _reset(self, step: table.Step, items: list[dict], timeout: float) -> None:
        """Ask each object to undo what it did (step.reset: the merge patch and the gates that
        say it is done), wait until it has, then let the deletion go on."""
        patch, done = step.reset
        gates = []
        for item in items:
            metadata = item["metadata"]
            self.results.append(outcome(item, "reset", [f"uninstall: {step.name} reset first"]))
            if not self.check_mode:
                self.cluster.patch(
                    item["apiVersion"],
                    item["kind"],
                    metadata["name"],
                    metadata.get("namespace"),
                    patch,
                )
            gates.extend(to_gate(g) for g in done(item))
        if gates and not self.check_mode:
            wait_for(self.cluster, gates, timeout, sleep=self.sleep, progress=self.progress)
            self.waited.extend(g.name for g in gates)

    def _operator_namespaces(self) -> list[str]:
        """The namespaces of the collection's Namespaces and Subscriptions."""
        selector = f"{MANAGED_BY_LABEL}={MANAGED_BY}"
        found = set()
        for item in list_if_served(self.cluster, "v1", "Namespace", label_selector=selector) or []:
            found.add(item["metadata"]["name"])
        subscriptions = list_if_served(
            self.cluster, OLM_V1ALPHA1, "Subscription", label_selector=selector
        )
        for item in subscriptions or []:
            found.add(item["metadata"]["namespace"])
        return sorted(found)

    def _owned_named(self, named, namespaces, label_selector: str) -> list[dict]:
        """The collection's objects named (apiVersion, kind, name) in each of namespaces, read
        by name, never listed, that match label_selector."""
        found = []
        for namespace in namespaces:
            for api_version, kind, name in named:
                item = get_if_served(self.cluster, api_version, kind, name, namespace)
                if item and owned_by_collection(item) and matching([item], None, label_selector):
                    found.append({**item, "apiVersion": api_version, "kind": kind})
        return found

    def _verify_named(self, items: list[dict], label_selector: str) -> list[dict]:
        """verify.yml's named objects (the NCCL test's key), in the namespaces its listed objects
        are in: where its pods ran or its NCCL settings are."""
        namespaces = sorted({i["metadata"].get("namespace") for i in items} - {None})
        return self._owned_named(table.VERIFY_NAMED, namespaces, label_selector)

    def _named_objects(self, step: table.Step, label_selector: str) -> list[dict]:
        if not step.named:
            return []
        return self._owned_named(step.named, self._operator_namespaces(), label_selector)

    def _namespaces_to_delete(self, namespaces: list[dict]) -> list[dict]:
        """The collection's Namespaces, less those that existed before it adopted them and
        those that hold objects of the managed kinds that somebody else created."""
        foreign: dict[str, list[str]] = {}
        for api_version, kind in table.managed_kinds():
            # Pods: the operators' own workloads.
            if kind in ("Namespace", "Pod"):
                continue
            for item in list_if_served(self.cluster, api_version, kind) or []:
                namespace = item["metadata"].get("namespace")
                if namespace and not owned_by_collection(item):
                    foreign.setdefault(namespace, []).append(
                        identity({**item, "apiVersion": api_version, "kind": kind})
                    )
        doomed = []
        for namespace in namespaces:
            name = namespace["metadata"]["name"]
            if was_adopted(namespace):
                why = "it existed before gpudirect.rdma adopted it"
            elif name in foreign:
                why = "it holds objects gpudirect.rdma did not create: " + ", ".join(
                    sorted(foreign[name])
                )
            else:
                doomed.append(namespace)
                continue
            self.results.append(outcome(namespace, "kept", [why]))
        return doomed

    def _remove_operators(self, label_selector: str, timeout: float, reason: str) -> None:
        subscriptions = owned_objects(
            self.cluster, table.kind_dicts([(OLM_V1ALPHA1, "Subscription")]), label_selector
        )
        groups = owned_objects(
            self.cluster,
            table.kind_dicts([("operators.coreos.com/v1", "OperatorGroup")]),
            label_selector,
        )
        csvs = installed_csvs(self.cluster, subscriptions, groups)
        deadline = time.monotonic() + timeout
        self._delete(subscriptions, timeout, reason)
        self._delete(
            csvs,
            max(deadline - time.monotonic(), 1),
            "installed by "
            + (", ".join(identity(s) for s in subscriptions) or "the collection's OperatorGroup"),
        )
        self._delete(groups, max(deadline - time.monotonic(), 1), reason)
