"""Where a test run's CPU went, by kind of process, from Linux process accounting.

Every process that ran while accounting was on, the short ones too (each ansible-playbook, each
module it shipped, each stand-in a simulated pod ran), with its CPU time:

    apt-get install acct                      # once (Debian)
    touch /tmp/pacct && accton /tmp/pacct     # as root: accounting on
    make integration                          # or anything else
    accton off
    dump-acct /tmp/pacct | .venv/bin/python hack/cpu_by_process.py

A process is counted in the category of the first rule below that matches it (its command name
as the kernel records it, 15 characters, and its parents').
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

# A process of a control plane or a simulator lives for the whole run; a test's Python does not.
LONG_LIVED_SECONDS = 200
PLAYBOOK = "ansible-playboo"  # the kernel keeps 15 characters of the command name


@dataclass
class Process:
    command: str
    cpu: float  # seconds, user and system
    elapsed: float
    parent: int


def parse(lines) -> dict[int, Process]:
    """dump-acct's lines (v3 records: command|v3|utime|stime|etime|uid|gid|mem|io|pid|ppid|...,
    times in clock ticks of 1/100 s) by process id."""
    found = {}
    for line in lines:
        fields = [field.strip() for field in line.split("|")]
        if len(fields) < 11 or fields[1] != "v3":
            continue
        ticks = float(fields[2]) + float(fields[3])
        found[int(fields[9])] = Process(
            fields[0], ticks / 100, float(fields[4]) / 100, int(fields[10])
        )
    return found


def ancestors(processes: dict[int, Process], pid: int, depth: int = 4) -> list[str]:
    """The command names of the process's parents, nearest first (those accounting saw)."""
    names = []
    pid = processes[pid].parent
    while pid in processes and len(names) < depth:
        names.append(processes[pid].command)
        pid = processes[pid].parent
    return names


def category(processes: dict[int, Process], pid: int) -> str:
    process = processes[pid]
    above = ancestors(processes, pid)
    if process.command == PLAYBOOK:
        return "ansible-playbook and its forks"
    if process.command.startswith("python") and PLAYBOOK in above[1:3] and above[0] == "sh":
        return "modules Ansible shipped (a Python each)"
    if process.command in ("kube-apiserver", "etcd", "kube-controller"):
        return process.command
    if process.command.startswith("python") and process.elapsed > LONG_LIVED_SECONDS:
        return "long-lived Python (pytest workers, simulators)"
    if process.command.startswith("python"):
        return "short-lived Python (stand-ins, tools, unit tests)"
    return "everything else"


def table(processes: dict[int, Process]) -> list[str]:
    seconds: Counter = Counter()
    count: Counter = Counter()
    for pid, process in processes.items():
        name = category(processes, pid)
        seconds[name] += process.cpu
        count[name] += 1
    total = sum(seconds.values()) or 1.0
    rows = [f"{'CPU s':>8} {'share':>6} {'processes':>9}  category"]
    for name, spent in seconds.most_common():
        rows.append(f"{spent:8.0f} {100 * spent / total:5.1f}% {count[name]:9d}  {name}")
    rows.append(f"{total:8.0f} {100.0:5.1f}% {sum(count.values()):9d}  all")
    return rows


if __name__ == "__main__":
    print("\n".join(table(parse(sys.stdin))))
