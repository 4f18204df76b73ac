"""Every change the API server's store made to some kinds while a test ran, in its own order
(History), and the successive states of one object in such a record (states)."""

from __future__ import annotations

import threading

from kubernetes import watch


class History:
    """Every change the store made to some kinds while a test ran, in the store's own order:
    one watch per kind, merged by resourceVersion (etcd's revision), so that a state which lasts
    a single tick is seen too, and which came first across kinds is known."""

    def __init__(self) -> None:
        self._changes: list[tuple[int, str, str, dict]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def watch(self, kind: str, list_function, *args, **kwargs) -> None:
        """Record the changes of what list_function(*args, **kwargs) lists, from now on."""
        listed = list_function(*args, **kwargs)
        version = (
            listed["metadata"]["resourceVersion"]
            if isinstance(listed, dict)
            else listed.metadata.resource_version
        )

        def run(version=version):
            while not self._stop.is_set():
                stream = watch.Watch().stream(
                    list_function, *args, resource_version=version, timeout_seconds=1, **kwargs
                )
                for event in stream:
                    change = event["raw_object"]
                    version = change["metadata"]["resourceVersion"]
                    with self._lock:
                        self._changes.append((int(version), kind, event["type"], change))

        thread = threading.Thread(target=run, daemon=True, name=f"history-{kind}")
        thread.start()
        self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)

    def changes(self) -> list[tuple[str, str, dict]]:
        """(kind, event type, object) of every change so far, oldest first."""
        with self._lock:
            return [(kind, type_, obj) for _v, kind, type_, obj in sorted(self._changes)]


def states(changes, kind, name, state):
    """The successive states (state(obj), or "gone" once deleted) of one object, repeats
    dropped."""
    seen = []
    for change_kind, type_, obj in changes:
        if change_kind != kind or obj["metadata"]["name"] != name:
            continue
        value = "gone" if type_ == "DELETED" else state(obj)
        if not seen or seen[-1] != value:
            seen.append(value)
    return seen
