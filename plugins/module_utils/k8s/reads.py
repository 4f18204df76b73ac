"""One module run's reads of the cluster, each kind listed once.

A Cluster answers every get and list with a request. Reads stands in front of it with the same
methods: the first list of a kind is kept, and later lists and gets of that kind are answered
from it (a namespace or a label selector applied here, with kubernetes.core's label selector
filter). A get of a kind the collection manages, that nobody listed, lists the collection's
objects of that kind once (one request for every planned object of the kind) and asks by name
only for a name that list lacks: an object of somebody else, or one that does not exist. A get
(or a list of one namespace) of a kind of kinds.LISTED_BY_NAMESPACE lists the namespace once,
with the kind's selector there (a NetworkAttachmentDefinition per rail, one request for all).
Any other get is asked once by name. Writes go through to the
cluster and forget what was kept of their kind, so a read after a write sees the write.

This is how a converged re-run of site.yml decides everything in about one request per kind.
"""

from __future__ import annotations

import contextlib
import queue
import threading

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import NotServed
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.kinds import LISTED_BY_NAMESPACE
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import managed_kinds

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.selector import (
        LabelSelectorFilter,
    )
except ImportError:  # pragma: no cover - kubernetes.core is a dependency of the collection
    LabelSelectorFilter = None

OWNED = f"{MANAGED_BY_LABEL}={MANAGED_BY}"
# The connections (and threads) of a prefetch: the API server answers several reads at once, and
# a network's round trips overlap.
PREFETCH_CONNECTIONS = 4
# Kinds of which the collection creates objects: a get lists the collection's objects of the
# kind once, so every planned object of it costs one request together.
MANAGED_KINDS = frozenset(managed_kinds())


def requirements(label_selector: str | None) -> list[str]:
    """A label selector as its comma-separated requirements (the form kubernetes.core's filter
    takes); the collection's selectors have no set-based requirement, whose values hold commas."""
    return [part.strip() for part in (label_selector or "").split(",") if part.strip()]


def matching(items: list[dict], namespace: str | None, label_selector: str | None) -> list[dict]:
    """The items in namespace (any when None) that match label_selector (all when empty)."""
    if namespace:
        items = [i for i in items if (i.get("metadata") or {}).get("namespace") == namespace]
    wanted = requirements(label_selector)
    if not wanted:
        return list(items)
    selector = LabelSelectorFilter(wanted)
    return [i for i in items if selector.isMatching(i)]


def _named(items: list[dict], name: str, namespace: str | None) -> dict | None:
    for item in items:
        metadata = item.get("metadata") or {}
        if metadata.get("name") == name and metadata.get("namespace") in (namespace, None):
            return item
    return None


class Reads:
    """The Cluster interface (get, list, apply, delete, patch, log, server), reads kept per
    kind for the length of one module run."""

    def __init__(self, cluster):
        self.cluster = cluster
        self._all: dict[tuple, list[dict] | NotServed] = {}  # every object of a kind
        self._owned: dict[tuple, list[dict] | NotServed] = {}  # the collection's of a kind
        self._named: dict[tuple, dict | None] = {}  # objects asked for by name
        self._in_namespace: dict[tuple, list[dict] | NotServed] = {}  # a namespace of a kind

    @property
    def server(self) -> str:
        return self.cluster.server

    @property
    def request(self) -> str:
        return self.cluster.request

    def _address(self, error=None):
        return self.cluster._address(error)

    @staticmethod
    def _found(cached):
        if isinstance(cached, NotServed):
            raise cached
        return cached

    def _list_once(self, store: dict, key: tuple, **query) -> list[dict]:
        """One list of the kind of key (apiVersion, kind, and what else tells the query apart),
        kept in store."""
        if key not in store:
            api_version, kind = key[:2]
            try:
                # The items of a list carry no apiVersion and kind: they are added, so an item
                # is the object a get returns.
                store[key] = [
                    {**item, "apiVersion": api_version, "kind": kind}
                    for item in self.cluster.list(api_version, kind, **query)
                ]
            except NotServed as error:
                store[key] = error
        return self._found(store[key])

    def list(self, api_version, kind, namespace=None, label_selector=None) -> list[dict]:
        """Every object of the kind (in namespace, matching label_selector), from one list of
        the whole kind; a selector of the collection's objects lists only those, unless the
        whole kind was listed already."""
        key = (api_version, kind)
        if key not in self._all and OWNED in requirements(label_selector):
            return matching(self.owned(api_version, kind), namespace, label_selector)
        if key not in self._all and key in LISTED_BY_NAMESPACE and namespace:
            return matching(self._namespace(key, namespace), None, label_selector)
        return matching(self._list_once(self._all, key), namespace, label_selector)

    def _namespace(self, key: tuple, namespace: str) -> list[dict]:
        return self._list_once(
            self._in_namespace,
            (*key, namespace),
            namespace=namespace,
            label_selector=LISTED_BY_NAMESPACE[key],
        )

    def prefetch(self, reads) -> None:
        """Make the requests that reads (each api_version, kind, name, namespace, label_selector;
        name None for a list) come down to, PREFETCH_CONNECTIONS at a time, and keep their
        answers, so that the same reads made next, one by one, ask nothing more. Nothing is kept
        of a request that fails: the read made next asks again, and its error is the caller's."""
        jobs = [job for job in dict.fromkeys(self._request_of(*read) for read in reads) if job]
        # A kind listed whole answers the reads of the collection's objects of it too.
        jobs = [job for job in jobs if job[0] != "owned" or ("all", job[1]) not in jobs]
        if len(jobs) < 2:
            return
        waiting: queue.SimpleQueue = queue.SimpleQueue()
        for job in jobs:
            waiting.put(job)

        def work() -> None:
            try:
                while True:
                    try:
                        job = waiting.get_nowait()
                    except queue.Empty:
                        return
                    # A failure is asked again by the read made next, which raises it.
                    with contextlib.suppress(Exception):
                        self._fetch(*job)
            finally:
                # This thread's connection: kept alive for the threads of the next round.
                release = getattr(self.cluster, "release", None)
                if release:
                    release()

        count = min(PREFETCH_CONNECTIONS, len(jobs))
        threads = [threading.Thread(target=work, daemon=True) for _number in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _request_of(self, api_version, kind, name=None, namespace=None, label_selector=None):
        """The request a read comes down to (as list and get make it), or None when its answer
        is kept already."""
        key = (api_version, kind)
        if key in self._all:
            return None
        if name is None:
            if OWNED in requirements(label_selector):
                return None if key in self._owned else ("owned", key)
            if not (key in LISTED_BY_NAMESPACE and namespace):
                return ("all", key)
        elif key in MANAGED_KINDS:
            return None if key in self._owned else ("owned", key)
        if key in LISTED_BY_NAMESPACE and namespace:
            return (
                None
                if (*key, namespace) in self._in_namespace
                else ("namespace", (*key, namespace))
            )
        named = (api_version, kind, name, namespace)
        return None if named in self._named else ("named", named)

    def _fetch(self, store: str, key: tuple) -> None:
        if store == "all":
            self._list_once(self._all, key)
        elif store == "owned":
            self._list_once(self._owned, key, label_selector=OWNED)
        elif store == "namespace":
            self._namespace(key[:2], key[2])
        else:
            self._named[key] = self.cluster.get(*key)

    def owned(self, api_version: str, kind: str) -> list[dict]:
        """The collection's objects of the kind: from the whole kind's list when there is one,
        else from one list of the collection's."""
        key = (api_version, kind)
        if key in self._all:
            return matching(self._found(self._all[key]), None, OWNED)
        return self._list_once(self._owned, key, label_selector=OWNED)

    def get(self, api_version, kind, name, namespace=None):
        """The object, or None when it does not exist."""
        key = (api_version, kind)
        if key in self._all:
            return _named(self._found(self._all[key]), name, namespace)
        if key in MANAGED_KINDS:
            found = _named(self.owned(api_version, kind), name, namespace)
            if found is not None:
                return found
        if key in LISTED_BY_NAMESPACE and namespace:
            return _named(self._namespace(key, namespace), name, namespace)
        named = (api_version, kind, name, namespace)
        if named not in self._named:
            self._named[named] = self.cluster.get(api_version, kind, name, namespace)
        return self._named[named]

    def forget(self, api_version: str, kind: str) -> None:
        for store in (self._all, self._owned):
            store.pop((api_version, kind), None)
        for listed in [k for k in self._in_namespace if k[:2] == (api_version, kind)]:
            del self._in_namespace[listed]
        for named in [k for k in self._named if k[:2] == (api_version, kind)]:
            del self._named[named]

    # -- writes and the rest go to the cluster -------------------------------------------------
    def apply(self, obj: dict, dry_run: bool = False) -> dict:
        if not dry_run:
            self.forget(obj["apiVersion"], obj["kind"])
        return self.cluster.apply(obj, dry_run=dry_run)

    def delete(self, api_version, kind, name, namespace=None) -> None:
        self.forget(api_version, kind)
        self.cluster.delete(api_version, kind, name, namespace)

    def patch(self, api_version, kind, name, namespace, body):
        self.forget(api_version, kind)
        return self.cluster.patch(api_version, kind, name, namespace, body)

    def log(self, *args, **kwargs) -> str:
        return self.cluster.log(*args, **kwargs)

    def fresh(self):
        """The cluster itself, for reads that must see the latest state (a gate's polls)."""
        return self.cluster
