"""Apply objects with server-side apply, writing only what differs.

A converged object costs no write: it is applied only when a field it sets differs from the live
object, or when the live object still holds a field this collection's field manager set earlier
and no longer sets (a method switch that drops a device plugin). In check mode the API server is
asked all the same, with a dry run: the diff shows what it would store, and an object it would
refuse (a CRD schema, an admission webhook) fails check mode as it would fail the real run.
Ownership: an object that exists without the collection's managed-by label is somebody else's;
it is changed only when the caller allows it (Namespaces are adopted).
"""

from __future__ import annotations

import copy
import json
import time

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    identity,
    owned_by_collection,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (
    FIELD_MANAGER,
    NotServed,
    _server_message,
    list_if_served,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.progress import SILENT
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import poll_intervals

# Kinds whose existing, foreign instances are simply adopted (labels added, nothing removed).
# An adopted object is marked, so that uninstall leaves it: it was there before.
ADOPTED_KINDS = ("Namespace",)
ADOPTED_ANNOTATION = "gpudirect.rdma/adopted"
_VOLATILE_METADATA = ("managedFields", "resourceVersion", "generation", "uid", "creationTimestamp")


def deleting(live: dict | None) -> bool:
    """An object the API server is deleting (its finalizers, or its contents, still run)."""
    return bool(live) and bool((live.get("metadata") or {}).get("deletionTimestamp"))


def was_adopted(live: dict) -> bool:
    """An object that existed before the collection adopted it (ADOPTED_KINDS): never deleted."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    return annotations.get(ADOPTED_ANNOTATION) == "true"


def adopted(obj: dict, live: dict) -> dict:
    """obj marked as adopted when live existed before the collection labelled it (or was
    marked already); obj itself otherwise."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    if owned_by_collection(live) and ADOPTED_ANNOTATION not in annotations:
        return obj
    metadata = obj["metadata"]
    return {
        **obj,
        "metadata": {
            **metadata,
            "annotations": {**(metadata.get("annotations") or {}), ADOPTED_ANNOTATION: "true"},
        },
    }


def contains(live, desired) -> bool:
    """True when every field of desired is in live with the same value. Lists must have the
    same length, item by item (items may carry fields the server defaulted)."""
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(
            key in live and contains(live[key], value) for key, value in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(live, list)
            and len(live) == len(desired)
            and all(contains(a, b) for a, b in zip(live, desired))  # noqa: B905 - lengths checked; strict= needs 3.10
        )
    return live == desired


def _stale(owned: dict, desired, path: str) -> list[str]:
    """Paths that the field set `owned` (managedFields fieldsV1) holds and desired lacks."""
    found = []
    for key, below in owned.items():
        if key == ".":
            continue
        kind, _colon, rest = key.partition(":")
        if kind == "f":
            if not isinstance(desired, dict) or rest not in desired:
                found.append(f"{path}.{rest}")
            elif below:
                found.extend(_stale(below, desired[rest], f"{path}.{rest}"))
        elif kind == "k":
            keys = json.loads(rest)
            items = desired if isinstance(desired, list) else []
            match = next(
                (
                    item
                    for item in items
                    if isinstance(item, dict) and all(item.get(k) == v for k, v in keys.items())
                ),
                None,
            )
            if match is None:
                found.append(f"{path}[{rest}]")
            elif below:
                found.extend(_stale(below, match, f"{path}[{rest}]"))
        elif kind == "v" and (not isinstance(desired, list) or json.loads(rest) not in desired):
            found.append(f"{path}[{rest}]")
    return found


def stale_fields(live: dict, desired: dict, manager: str = FIELD_MANAGER) -> list[str]:
    """Fields that manager applied to live earlier and desired no longer sets."""
    found = []
    for entry in (live.get("metadata") or {}).get("managedFields") or []:
        if entry.get("manager") == manager and entry.get("operation") == "Apply":
            found.extend(_stale(entry.get("fieldsV1") or {}, desired, ""))
    return found


def applied_by(live: dict, manager: str = FIELD_MANAGER) -> bool:
    return any(
        entry.get("manager") == manager and entry.get("operation") == "Apply"
        for entry in (live.get("metadata") or {}).get("managedFields") or []
    )


# The one reason of an object that holds the planned content under another field manager
# (`oc apply --server-side` of the rendered tree, say): applying it once makes the collection an
# owner of its fields, without which a later plan that drops a field could not remove it.
ADOPTING = "not yet managed by " + FIELD_MANAGER


def adopting(result: dict) -> bool:
    return result["action"] == "updated" and result.get("reasons") == [ADOPTING]


def decide(desired: dict, live: dict | None) -> tuple[str, list[str]]:
    """What to do with one object: ('create'|'update'|'unchanged', reasons)."""
    if live is None:
        return "create", []
    reasons = []
    if not contains(live, desired):
        reasons.append("fields differ")
    stale = stale_fields(live, desired)
    if stale:
        reasons.append("no longer set: " + ", ".join(sorted(stale)))
    if not reasons and not applied_by(live):
        reasons.append(ADOPTING)
    return ("update" if reasons else "unchanged"), reasons


HIDDEN = "(hidden)"


def clean(obj: dict | None) -> dict:
    """An object without server bookkeeping, for diffs and results; a Secret's values are
    replaced by (hidden)."""
    if obj is None:
        return {}
    result = copy.deepcopy(obj)
    metadata = result.get("metadata") or {}
    for key in _VOLATILE_METADATA:
        metadata.pop(key, None)
    result.pop("status", None)
    if result.get("kind") == "Secret":
        for field in ("data", "stringData"):
            if isinstance(result.get(field), dict):
                result[field] = dict.fromkeys(result[field], HIDDEN)
    return result


class ForeignObjects(Exception):
    """Objects exist that this collection did not create; nothing was written."""

    def __init__(self, names: list[str]):
        self.names = names
        super().__init__(
            f"these objects exist and were not created by gpudirect.rdma (no label "
            f"{MANAGED_BY_LABEL}={MANAGED_BY}): {', '.join(names)}. Nothing was changed. "
            "Set gpudirect_rdma_take_over=true to let the collection replace their content."
        )


def _by_admission(error) -> bool:
    """A refusal by an admission webhook's rule (403, as an RBAC refusal is, but in its words)."""
    return getattr(error, "status", None) == 403 and "admission webhook" in _server_message(error)


class Refused(Exception):
    """The API server refuses an object (its CRD schema, an admission webhook, a conflict):
    which object, and the server's own words, which name the field."""

    def __init__(self, obj: dict, error, dry_run: bool):
        self.object = identity(obj)
        # Not `status`: that would make it an API error to client.failing_clearly.
        self.http_status = getattr(error, "status", None)
        self.server_message = _server_message(error)
        # An admission webhook judges against the cluster as it is: in a dry run, before the
        # changes the run would make first.
        self.by_admission = _by_admission(error)
        what = "would refuse" if dry_run else "refused"
        super().__init__(
            f"the API server {what} {self.object}: {self.http_status} "
            f"{getattr(error, 'reason', '')}: {self.server_message}"
            + (" (a server-side dry run in check mode: nothing was written)" if dry_run else "")
        )


_DONE = {"create": "created", "update": "updated", "unchanged": "unchanged"}


def outcome(obj: dict, action: str, reasons: list[str]) -> dict:
    metadata = obj.get("metadata") or {}
    return {
        "object": identity(obj),
        "kind": obj.get("kind"),
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        "action": action,
        "reasons": reasons,
    }


def key_of(obj: dict) -> tuple:
    metadata = obj.get("metadata") or {}
    return obj.get("apiVersion"), obj.get("kind"), metadata.get("namespace"), metadata.get("name")


class Applier:
    """Applies lists of objects through a Cluster; collects results and diffs."""

    def __init__(
        self,
        cluster,
        check_mode: bool,
        take_over: bool = False,
        progress=SILENT,
        server_dry_run: bool = True,
    ):
        self.cluster = cluster
        self.check_mode = check_mode
        # In check mode, ask the API server what it would store (a dry-run apply, which the
        # authorizer judges as a write); False: compare only, reading (drift.yml's survey).
        self.server_dry_run = server_dry_run
        self.take_over = take_over
        self.progress = progress
        self.results: list[dict] = []
        self.diffs: list[dict] = []
        # Each object decided, with the live copy it was decided on (None: not there).
        self.compared: list[tuple[dict, dict | None]] = []

    @property
    def changed(self) -> bool:
        return any(r["action"] != "unchanged" for r in self.results)

    def count(self, action: str) -> int:
        return sum(1 for r in self.results if r["action"] == action)

    def apply(self, objects: list[dict]) -> list[dict]:
        """Apply objects in order; every object is checked before the first write. Returns
        the live objects after the apply (in check mode, what the API server would store; None
        where it cannot say yet: a kind not served or a namespace not created yet)."""
        plans, foreign = [], []
        for obj in objects:
            try:
                live = self.cluster.get(
                    obj["apiVersion"],
                    obj["kind"],
                    obj["metadata"]["name"],
                    obj["metadata"].get("namespace"),
                )
            except NotServed as error:
                if not self.check_mode:
                    raise
                plans.append((obj, None, "create", [str(error)], False))
                continue
            if deleting(live):
                # Being deleted (a Namespace emptied by an uninstall that just ran): created
                # again once it is gone.
                plans.append((obj, None, "create", [f"{identity(obj)} is being deleted"], False))
                continue
            if live is not None and obj["kind"] in ADOPTED_KINDS:
                obj = adopted(obj, live)
            elif live is not None and not owned_by_collection(live):
                foreign.append(identity(obj))
            action, reasons = decide(obj, live)
            self.compared.append((obj, live))
            plans.append((obj, live, action, reasons, True))
        if foreign and not self.take_over:
            raise ForeignObjects(foreign)

        applied = []
        for obj, live, action, reasons, served in plans:
            after = live
            if action != "unchanged":
                # In check mode the API server cannot judge an object of a kind it does not
                # serve yet, nor one in a namespace the run would create first.
                judged = served and (not self.check_mode or self.server_dry_run)
                judged = judged and self._namespace_exists(obj)
                if not self.check_mode and not served:
                    self._wait_until_gone(obj)
                try:
                    after = self._apply(obj) if judged or not self.check_mode else None
                    if reasons == [ADOPTING] and not self.check_mode and after is not None:
                        after = self._sole_owner(obj, after)
                except Refused as refusal:
                    if not (self.check_mode and refusal.by_admission):
                        raise
                    after, reasons = None, [*reasons, _judged_too_early(refusal)]
                self.diffs.append(
                    {
                        "before_header": identity(obj),
                        "after_header": identity(obj),
                        "before": clean(live),
                        "after": clean(after if after is not None else obj),
                    }
                )
            self.results.append(outcome(obj, _DONE[action], reasons))
            applied.append(after)
        return applied

    def _sole_owner(self, obj: dict, stored: dict) -> dict:
        """Take an adopted object's fields from the manager that applied them before (kubectl,
        a GitOps tool): its Apply entries go, so that a field a later plan drops is removed,
        not kept by the other manager's claim. Other entries (status updates) stay."""
        entries = (stored.get("metadata") or {}).get("managedFields") or []
        kept = [
            e for e in entries if e.get("operation") != "Apply" or e.get("manager") == FIELD_MANAGER
        ]
        if len(kept) == len(entries):
            return stored
        metadata = obj["metadata"]
        self.cluster.patch(
            obj["apiVersion"],
            obj["kind"],
            metadata["name"],
            metadata.get("namespace"),
            {"metadata": {"managedFields": kept}},
        )
        return {**stored, "metadata": {**stored["metadata"], "managedFields": kept}}

    def _namespace_exists(self, obj: dict) -> bool:
        namespace = obj["metadata"].get("namespace")
        if not namespace:
            return True
        live = self.cluster.get("v1", "Namespace", namespace)
        return live is not None and not deleting(live)

    def _wait_until_gone(self, obj: dict, timeout: float = 300) -> None:
        """Wait until the object that was being deleted is gone, to create it anew."""
        metadata = obj["metadata"]
        cluster = fresh(self.cluster)
        began = time.monotonic()
        pauses = poll_intervals()
        while cluster.get(
            obj["apiVersion"], obj["kind"], metadata["name"], metadata.get("namespace")
        ):
            if time.monotonic() >= began + timeout:
                raise TimeoutError(
                    f"{identity(obj)} is still being deleted after {timeout:.0f}s: "
                    + _pending(cluster, obj)
                )
            self.progress.waiting(began, timeout, f"{identity(obj)} to be deleted")
            time.sleep(next(pauses))

    def _apply(self, obj: dict) -> dict:
        """Server-side apply (a dry run in check mode); a refusal names the object."""
        try:
            return self.cluster.apply(obj, dry_run=self.check_mode)
        except Exception as error:
            # 422: the CRD schema's validation; 500: the server could not make the object into
            # its schema's types ("failed to create typed patch object") or a webhook failed;
            # 403 from an admission webhook: its rule (an RBAC refusal stays Forbidden).
            if getattr(error, "status", None) in (400, 404, 409, 422, 500) or _by_admission(error):
                raise Refused(obj, error, self.check_mode) from None
            raise

    def prune(
        self, keep: list[dict], kinds: list[dict], timeout: float, label_selector: str = ""
    ) -> None:
        """Delete the collection's objects of kinds (matching label_selector) that keep lacks,
        and wait until they are gone."""
        wanted = {key_of(obj) for obj in keep}
        doomed = [
            item
            for item in owned_objects(self.cluster, kinds, label_selector)
            if key_of(item) not in wanted and not was_adopted(item)
        ]
        self.results.extend(
            delete_and_wait(
                self.cluster,
                doomed,
                self.check_mode,
                timeout,
                ["no longer part of the plan"],
                progress=self.progress,
            )
        )
        self.diffs.extend(deletion_diff(item) for item in doomed)


def _judged_too_early(refusal: Refused) -> str:
    return (
        "an admission webhook refuses the dry run against the cluster as it is now, before the "
        f"changes the run makes first ({refusal.server_message}); the run applies it after them"
    )


def fresh(cluster):
    """The cluster itself behind a read cache (k8s.reads.Reads): polls must see new state."""
    return cluster.fresh() if hasattr(cluster, "fresh") else cluster


def owned_objects(cluster, kinds: list[dict], label_selector: str = "") -> list[dict]:
    """The collection's objects of kinds (in that order) that also match label_selector."""
    selector = ",".join(s for s in (f"{MANAGED_BY_LABEL}={MANAGED_BY}", label_selector) if s)
    found = []
    for kind in kinds:
        items = list_if_served(cluster, kind["apiVersion"], kind["kind"], label_selector=selector)
        found.extend(
            {**item, "apiVersion": kind["apiVersion"], "kind": kind["kind"]} for item in items or []
        )
    return found


def deletion_diff(item: dict) -> dict:
    return {
        "before_header": identity(item),
        "after_header": "(deleted)",
        "before": clean(item),
        "after": {},
    }


def delete_and_wait(
    cluster,
    items: list[dict],
    check_mode: bool,
    timeout: float,
    reasons: list[str],
    sleep=time.sleep,
    progress=SILENT,
) -> list[dict]:
    """Delete items (all at once, so their finalizers run side by side) and wait until every one
    is gone (progress hears which are left, now and then); return a 'deleted' result per item.
    Check mode deletes nothing."""
    results = [outcome(item, "deleted", reasons) for item in items]
    if check_mode or not items:
        return results
    for item in items:  # one gone meanwhile is what was asked
        cluster.delete(
            item["apiVersion"],
            item["kind"],
            item["metadata"]["name"],
            item["metadata"].get("namespace"),
        )
    began = time.monotonic()
    remaining = items
    cluster = fresh(cluster)
    pauses = poll_intervals()
    while True:
        remaining = [
            i
            for i in remaining
            if cluster.get(
                i["apiVersion"], i["kind"], i["metadata"]["name"], i["metadata"].get("namespace")
            )
        ]
        if not remaining or time.monotonic() >= began + timeout:
            break
        more = f" and {len(remaining) - 1} more" if len(remaining) > 1 else ""
        progress.waiting(began, timeout, f"{identity(remaining[0])}{more} to be deleted")
        sleep(next(pauses))
    if remaining:
        raise TimeoutError(
            f"deleted objects still exist after {timeout:.0f}s: "
            + ", ".join(_pending(cluster, i) for i in remaining)
        )
    return results


def _pending(cluster, item: dict) -> str:
    live = cluster.get(
        item["apiVersion"],
        item["kind"],
        item["metadata"]["name"],
        item["metadata"].get("namespace"),
    )
    live = live or {}
    finalizers = [
        *((live.get("metadata") or {}).get("finalizers") or []),
        *((live.get("spec") or {}).get("finalizers") or []),
    ]
    phase = (live.get("status") or {}).get("phase")
    details = [f"phase {phase}"] if phase else []
    if finalizers:
        details.append("finalizers: " + ", ".join(finalizers))
    return identity(item) + (f" ({'; '.join(details)})" if details else "")
