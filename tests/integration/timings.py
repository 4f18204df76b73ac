"""Where the integration tests' time goes: per test file, the wall time of its tests (set-up,
call and tear-down) and the playbooks they ran (how many, their wall time, and the CPU time
ansible-playbook and its workers used). Each worker keeps its own records; with pytest-xdist
they reach the controller in the worker's output, which prints one table at the end."""

from __future__ import annotations

import json
import resource
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import asdict, dataclass


@dataclass
class FileTime:
    tests: int = 0
    seconds: float = 0.0
    playbooks: int = 0
    playbook_seconds: float = 0.0
    playbook_cpu: float = 0.0


class Timings:
    def __init__(self) -> None:
        self.files: dict[str, FileTime] = defaultdict(FileTime)
        self.current: str | None = None  # the test file running now

    def test_done(self, path: str, seconds: float) -> None:
        self.files[path].seconds += seconds

    def test_started(self, path: str) -> None:
        self.current = path
        self.files[path].tests += 1

    @contextmanager
    def playbook(self):
        """Count what the block's child processes cost (they must be waited for inside it)."""
        before_cpu, before = _children_cpu(), time.monotonic()
        try:
            yield
        finally:
            record = self.files[self.current or "(outside a test)"]
            record.playbooks += 1
            record.playbook_seconds += time.monotonic() - before
            record.playbook_cpu += _children_cpu() - before_cpu

    def dumps(self) -> str:
        return json.dumps({path: asdict(record) for path, record in self.files.items()})

    def merge(self, text: str) -> None:
        for path, values in json.loads(text).items():
            record = self.files[path]
            for key, value in values.items():
                setattr(record, key, getattr(record, key) + value)

    def table(self, most: int = 15) -> list[str]:
        """The files by wall time, most first, and the totals."""
        rows = sorted(self.files.items(), key=lambda item: -item[1].seconds)
        total = FileTime()
        for _path, record in rows:
            for key in asdict(total):
                setattr(total, key, getattr(total, key) + getattr(record, key))
        lines = [
            f"{'file':52} {'tests':>5} {'wall s':>8} {'playbooks':>9} {'their wall s':>12} "
            f"{'their CPU s':>11}"
        ]
        for path, record in [*rows[:most], ("all files", total)]:
            lines.append(
                f"{path[-52:]:52} {record.tests:5d} {record.seconds:8.1f} {record.playbooks:9d} "
                f"{record.playbook_seconds:12.1f} {record.playbook_cpu:11.1f}"
            )
        return lines


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
