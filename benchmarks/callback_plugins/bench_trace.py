"""Benchmark callback: one JSON line per task start and per task result, with wall-clock time.

Not part of the collection's plugins: the benchmarks enable it with
ANSIBLE_CALLBACK_PLUGINS=benchmarks/callback_plugins ANSIBLE_CALLBACKS_ENABLED=bench_trace and
name the output file in GPUDIRECT_RDMA_BENCH_TRACE. The file is flushed after every line so that
a benchmark can follow a running play (the gate reaction benchmark waits for a task to start).
"""

from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: bench_trace
type: aggregate
short_description: task starts and results as JSON lines, for the benchmarks
description:
  - Writes one JSON line per task start and per task result to the file named in
    GPUDIRECT_RDMA_BENCH_TRACE (time.time(), task name, action, status, changed).
requirements:
  - enable in ANSIBLE_CALLBACKS_ENABLED
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_trace"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        path = os.environ.get("GPUDIRECT_RDMA_BENCH_TRACE")
        self._out = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115

    def _write(self, **record) -> None:
        if self._out is None:
            return
        record["t"] = time.time()
        self._out.write(json.dumps(record) + "\n")
        self._out.flush()

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._write(event="start", task=task.get_name(), action=task.action)

    def _result(self, status: str, result) -> None:
        task = result._task  # pylint: disable=protected-access
        self._write(
            event="result",
            status=status,
            task=task.get_name(),
            action=task.action,
            changed=bool(result._result.get("changed")),  # pylint: disable=protected-access
        )

    def v2_runner_on_ok(self, result):
        self._result("ok", result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._result("failed", result)

    def v2_runner_on_skipped(self, result):
        self._result("skipped", result)

    def v2_runner_on_unreachable(self, result):
        self._result("unreachable", result)

    def v2_playbook_on_stats(self, stats):
        self._write(event="end")
        if self._out is not None:
            self._out.close()
            self._out = None
