"""Remove the collection's objects, stage by stage (kinds.py gives the stages and their order).

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

Objects of NAMED_OBJECTS (the registry pull Secret) are never listed: each is read by its name
in the namespaces of the collection's operators, and removed when it carries the label.
"""

from __future__ import annotations

import time

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import (
    ADOPTED_ANNOTATION,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    delete_and_wait,
    deletion_diff,
    identity,
    matches_selector,
    outcome,
    owned_by_collection,
    owned_objects,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (
    get_if_served,
    list_if_served,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.kinds import (
    MANAGED_KINDS,
    kinds,
    named_objects,
)

OLM_V1ALPHA1 = "operators.coreos.com/v1alpha1"
STAGES = tuple(dict.fromkeys(stage for _api_version, _kind, stage in MANAGED_KINDS))


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

    def __init__(self, cluster, check_mode: bool, sleep=time.sleep):
        self.cluster = cluster
        self.check_mode = check_mode
        self.sleep = sleep
        self.results: list[dict] = []
        self.diffs: list[dict] = []

    @property
    def changed(self) -> bool:
        return any(r["action"] == "deleted" for r in self.results)

    def _delete(self, items: list[dict], timeout: float, reason: str) -> None:
        self.results.extend(
            delete_and_wait(self.cluster, items, self.check_mode, timeout, [reason], self.sleep)
        )
        self.diffs.extend(deletion_diff(item) for item in items)

    def remove(self, stage: str, label_selector: str, timeout: float) -> None:
        if stage not in STAGES:
            raise ValueError(f"stage: got {stage!r}; expected one of {', '.join(STAGES)}")
        reason = f"uninstall: {stage}"
        if stage == "operators":
            self._remove_operators(kinds(stage), label_selector, timeout, reason)
            return
        items = owned_objects(self.cluster, kinds(stage), label_selector)
        items += self._named_objects(stage, label_selector)
        if stage == "namespaces":
            items = self._namespaces_to_delete(items)
        self._delete(items, timeout, reason)

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

    def _named_objects(self, stage: str, label_selector: str) -> list[dict]:
        wanted = named_objects(stage)
        if not wanted:
            return []
        found = []
        for namespace in self._operator_namespaces():
            for named in wanted:
                api_version, kind = named["apiVersion"], named["kind"]
                item = get_if_served(self.cluster, api_version, kind, named["name"], namespace)
                labels = (item or {}).get("metadata", {}).get("labels") or {}
                if item and owned_by_collection(item) and matches_selector(labels, label_selector):
                    found.append({**item, "apiVersion": api_version, "kind": kind})
        return found

    def _namespaces_to_delete(self, namespaces: list[dict]) -> list[dict]:
        """The collection's Namespaces, less those that existed before it adopted them and
        those that hold objects of the managed kinds that somebody else created."""
        foreign: dict[str, list[str]] = {}
        for kind in kinds():
            # Pods: the operators' own workloads.
            if kind["kind"] in ("Namespace", "Pod"):
                continue
            for item in list_if_served(self.cluster, kind["apiVersion"], kind["kind"]) or []:
                namespace = item["metadata"].get("namespace")
                if namespace and not owned_by_collection(item):
                    foreign.setdefault(namespace, []).append(identity({**item, **kind}))
        doomed = []
        for namespace in namespaces:
            name = namespace["metadata"]["name"]
            annotations = namespace["metadata"].get("annotations") or {}
            if annotations.get(ADOPTED_ANNOTATION) == "true":
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

    def _remove_operators(
        self, kinds: list[dict], label_selector: str, timeout: float, reason: str
    ) -> None:
        subscription_kind = [k for k in kinds if k["kind"] == "Subscription"]
        group_kind = [k for k in kinds if k["kind"] == "OperatorGroup"]
        subscriptions = owned_objects(self.cluster, subscription_kind, label_selector)
        groups = owned_objects(self.cluster, group_kind, label_selector)
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
