"""Whether the cluster already is as a plan asks, found by reading only.

The same decisions the steps of site.yml would take, in check mode and in one process: every
object would be left unchanged (apply.Applier), nothing of the collection's would be pruned,
every operator's CSV has Succeeded (olm), and every gate is met now (wait; with stable_for, in
every read for that long). The checks go from the cheapest to the gates and stop at the first
that finds work: that work is what the steps are for.
"""

from __future__ import annotations

import time

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import (
    Applier,
    ForeignObjects,
    identity,
    key_of,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.olm import OlmError, wait_for_csv
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import (
    GateFailed,
    GateTimeout,
    wait_for,
)

_WOULD = {
    "created": "would be created",
    "updated": "would be updated",
    "deleted": "would be removed",
}


def object_work(applier: Applier) -> list[str]:
    """What applying (and pruning) would change, one line per object."""
    lines = []
    for result in applier.results:
        if result["action"] == "unchanged":
            continue
        reasons = "; ".join(result["reasons"])
        lines.append(
            f"{result['object']} {_WOULD[result['action']]}" + (f" ({reasons})" if reasons else "")
        )
    return lines


def operator_csvs(cluster, subscriptions: dict[str, dict]) -> tuple[dict, list[str]]:
    """The Succeeded CSV of each operator's Subscription, and what stops those that have none."""
    csvs, work = {}, []
    for operator, subscription in subscriptions.items():
        try:
            csv = wait_for_csv(cluster, subscription, True, time.monotonic(), [])
        except OlmError as error:
            work.append(str(error))
            continue
        if csv is None:
            work.append(f"{identity(subscription)} has no ClusterServiceVersion in phase Succeeded")
        else:
            csvs[operator] = csv
    return csvs, work


def read_live(cluster, wanted: list[dict]) -> list[dict]:
    """The live objects of wanted (apiVersion, kind, name, namespace), those that exist."""
    found = []
    for item in wanted:
        live = cluster.get(item["apiVersion"], item["kind"], item["name"], item.get("namespace"))
        if live is not None:
            found.append({**live, "apiVersion": item["apiVersion"], "kind": item["kind"]})
    return found


def check(
    cluster,
    objects: list[dict],
    prune: list[dict],
    subscriptions: dict[str, dict],
    gates: list,
    stable_for: float = 0,
    read: list[dict] | None = None,
) -> dict:
    """converged (bool), work (why not: what the steps would do), csvs (operator -> CSV) and
    live (the objects of read, as found)."""
    result = {"converged": False, "work": [], "csvs": {}, "live": []}
    applier = Applier(cluster, check_mode=True)
    try:
        applier.apply(objects)
    except ForeignObjects as error:
        result["work"] = [str(error)]
        return result
    for scope in prune:
        applier.prune(objects, scope["kinds"], scope["label_selector"], 0)
    result["work"] = object_work(applier)
    if result["work"]:
        return result
    result["csvs"], result["work"] = operator_csvs(cluster, subscriptions)
    if result["work"]:
        return result
    try:
        wait_for(cluster, gates, timeout=stable_for, stable_for=stable_for)
    except (GateTimeout, GateFailed) as error:
        result["work"] = [str(error)]
        return result
    result["live"] = read_live(cluster, read or [])
    result["converged"] = True
    return result


class ReadAlready:
    """Objects read earlier, served as Cluster.get serves them (None when absent)."""

    def __init__(self, live: list[dict]):
        self.found = {key_of(obj): obj for obj in live}

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None):
        return self.found.get((api_version, kind, namespace, name))


def work_on_read(objects: list[dict], live: list[dict]) -> list[str]:
    """What applying objects would change, decided on their live versions read earlier (by
    check(read=...)): the objects that could only be built once the CSVs were known."""
    applier = Applier(ReadAlready(live), check_mode=True)
    try:
        applier.apply(objects)
    except ForeignObjects as error:
        return [str(error)]
    return object_work(applier)
