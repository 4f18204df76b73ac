"""Progress a user can follow during a long wait: every `every` seconds of a wait (a gate, a CSV,
a deletion), one line saying how long it has waited, of how long, and for what, with what it saw
last ("waiting 60s of 1800s for gate 'NicClusterPolicy ready': NicClusterPolicy nic-cluster-policy
status.state is 'notReady'").

The lines go to `emit`: the Ansible display when the module runs in the controller's process
(plugin_utils/connection.py), nowhere when it is shipped (a shipped module can print nothing
before it ends). SILENT emits nothing.
"""

from __future__ import annotations

import time

# Seconds between two lines of the same wait (gpudirect_rdma_progress_interval).
EVERY = 30


class Progress:
    def __init__(self, emit=None, every: float = EVERY, clock=time.monotonic):
        self.emit = emit
        self.every = every
        self.clock = clock
        self._last: dict[object, float] = {}

    def waiting(self, began: float, timeout: float, what: str, key: object = None) -> None:
        """Say so when `every` seconds have passed since the wait began or since its last line;
        key tells one wait from another (default: when it began)."""
        if not self.emit or not self.every or self.every <= 0:
            return
        now = self.clock()
        waited = now - began
        key = began if key is None else key
        last = self._last.get(key, began)
        if now - last < self.every:
            return
        self._last[key] = now
        self.emit(f"waiting {waited:.0f}s of {timeout:.0f}s for {what}")


SILENT = Progress()
