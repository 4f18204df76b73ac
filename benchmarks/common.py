"""What the cluster benchmarks share: running ansible-playbook with the trace callback (wall
time, peak memory, the trace), reading the trace, the audit log with timestamps, the machine."""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
for entry in (str(REPO_ROOT), str(REPO_ROOT / ".collections")):
    if entry not in sys.path:
        sys.path.insert(0, entry)

CALLBACKS = REPO_ROOT / "benchmarks" / "callback_plugins"
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
# Tasks whose action runs on the controller only: no module is shipped and run for them.
CONTROLLER_ACTIONS = frozenset(
    {
        "assert",
        "debug",
        "fail",
        "set_fact",
        "include_role",
        "import_role",
        "include_tasks",
        "import_tasks",
        "include_vars",
        "meta",
        "validate_argument_spec",  # a role's argument_specs, checked in the controller
        "gpudirect.rdma.plan",  # an action plugin: validates and plans in the controller
    }
)


def short_action(action: str) -> str:
    for prefix in ("ansible.builtin.", "ansible.legacy."):
        if action.startswith(prefix):
            return action[len(prefix) :]
    return action


@dataclass
class Trace:
    """The bench_trace callback's records of one run."""

    records: list[dict]

    @classmethod
    def read(cls, path: Path) -> Trace:
        if not path.exists():
            return cls([])
        return cls([json.loads(line) for line in path.read_text().splitlines() if line])

    @property
    def starts(self) -> list[dict]:
        return [r for r in self.records if r["event"] == "start"]

    @property
    def results(self) -> list[dict]:
        return [r for r in self.records if r["event"] == "result"]

    @property
    def module_results(self) -> list[dict]:
        """Results of tasks that shipped and ran a module (skipped tasks ran nothing)."""
        return [
            r
            for r in self.results
            if r["status"] != "skipped" and short_action(r["action"]) not in CONTROLLER_ACTIONS
        ]

    def task_times(self) -> list[tuple[str, str, float]]:
        """(task, action, seconds from its start to the next start or the end of the play)."""
        marks = [r for r in self.records if r["event"] in ("start", "end")]
        return [
            (this["task"], this["action"], later["t"] - this["t"])
            for this, later in zip(marks, marks[1:])  # noqa: B905 - pairs of neighbours
            if this["event"] == "start"
        ]

    def summary(self, began: float, ended: float) -> dict:
        times = self.task_times()
        module_seconds = sum(
            seconds
            for _task, action, seconds in times
            if short_action(action) not in CONTROLLER_ACTIONS
        )
        by_action: dict[str, int] = {}
        for result in self.module_results:
            by_action[result["action"]] = by_action.get(result["action"], 0) + 1
        seconds_by_action: dict[str, float] = {}
        for _task, action, seconds in times:
            seconds_by_action[action] = seconds_by_action.get(action, 0) + seconds
        first = self.starts[0]["t"] if self.starts else ended
        last = next((r["t"] for r in self.records if r["event"] == "end"), ended)
        return {
            "tasks_started": len(self.starts),
            "task_results": len(self.results),
            "module_invocations": len(self.module_results),
            "module_invocations_by_action": dict(sorted(by_action.items())),
            "startup_seconds": round(first - began, 2),
            "tasks_seconds": round(last - first, 2),
            "module_tasks_seconds": round(module_seconds, 2),
            "teardown_seconds": round(ended - last, 2),
            "seconds_by_action": {
                action: round(seconds, 2)
                for action, seconds in sorted(seconds_by_action.items(), key=lambda a: -a[1])
            },
            "slowest_tasks": [
                {"task": task, "action": action, "seconds": round(seconds, 2)}
                for task, action, seconds in sorted(times, key=lambda t: -t[2])[:8]
            ],
        }


@dataclass
class Run:
    wall: float
    began: float
    ended: float
    returncode: int
    peak_rss_mib: float  # the largest process of the run (ansible-playbook, a worker or module)
    output: str
    trace: Trace = field(default_factory=lambda: Trace([]))


def playbook_env(kubeconfig: Path | None, trace: Path | None) -> dict:
    """The environment of every measured playbook. PYTHONDONTWRITEBYTECODE is left out: playbooks
    run as Python runs by default, keeping the collection's bytecode once compiled
    (plugins/module_utils/bytecode_cache.py), whatever the shell of the benchmark sets."""
    env = {
        **{key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"},
        "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": str(REPO_ROOT / ".collections"),
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_CALLBACK_PLUGINS": str(CALLBACKS),
        "ANSIBLE_CALLBACKS_ENABLED": "bench_trace",
    }
    if kubeconfig:
        env["K8S_AUTH_KUBECONFIG"] = str(kubeconfig)
    if trace:
        env["GPUDIRECT_RDMA_BENCH_TRACE"] = str(trace)
    return env


def start_playbook(playbook: Path, *args: str, kubeconfig: Path | None, trace: Path, log):
    return subprocess.Popen(
        [str(ANSIBLE_PLAYBOOK), str(playbook), *args],
        cwd=REPO_ROOT,
        env=playbook_env(kubeconfig, trace),
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def finish(process: subprocess.Popen, began: float, log, trace: Path, check: bool) -> Run:
    _pid, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    ended = time.time()
    log.seek(0)
    output = log.read().decode("utf-8", errors="replace")
    run = Run(
        wall=ended - began,
        began=began,
        ended=ended,
        returncode=process.returncode,
        peak_rss_mib=usage.ru_maxrss / 1024,
        output=output,
        trace=Trace.read(trace),
    )
    if check and run.returncode != 0:
        raise RuntimeError(
            f"ansible-playbook {process.args[1]} exited {run.returncode}:\n{output[-4000:]}"
        )
    return run


def ansible_playbook(
    playbook: Path, *args: str, kubeconfig: Path | None = None, check: bool = True
) -> Run:
    """Run ansible-playbook as a user would, traced; wall time and peak memory of the run."""
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryFile() as log:
        trace = Path(work) / "trace.jsonl"
        began = time.time()
        process = start_playbook(playbook, *args, kubeconfig=kubeconfig, trace=trace, log=log)
        return finish(process, began, log, trace, check)


def timed(argv: list[str], **kwargs) -> tuple[float, subprocess.CompletedProcess]:
    began = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)
    seconds = time.perf_counter() - began
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv[:3])} ... exited {result.returncode}: {result.stderr[-2000:]}"
        )
    return seconds, result


def audit_events(path: Path, offset: int) -> list[dict]:
    """The audit log's completed requests from a byte offset on, with their stage timestamps
    as time.time() values in 'at'."""
    with path.open("rb") as log:
        log.seek(offset)
        lines = log.read().splitlines()
    events = []
    for line in lines:
        event = json.loads(line)
        if event.get("stage") != "ResponseComplete":
            continue
        event["at"] = datetime.fromisoformat(
            event["stageTimestamp"].replace("Z", "+00:00")
        ).timestamp()
        events.append(event)
    return events


def machine() -> dict:
    """The machine the figures come from: CPU, cores, memory, load while measuring."""
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = ""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        total = next(
            line for line in meminfo.read_text().splitlines() if line.startswith("MemTotal")
        )
        memory = f"{int(total.split()[1]) / 1024 / 1024:.1f} GiB"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": memory,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "kernel": platform.release(),
    }


def self_peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def which_kubectl(binaries: Path) -> str:
    found = binaries / "kubectl"
    if found.exists():
        return str(found)
    other = shutil.which("kubectl")
    if not other:
        raise RuntimeError(f"no kubectl in {binaries} nor on PATH (make binaries builds it)")
    return other
