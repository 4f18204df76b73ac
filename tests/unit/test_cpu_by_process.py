"""hack/cpu_by_process.py on real dump-acct output: each process in its category, by its parents."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("cpu_by_process", ROOT / "hack" / "cpu_by_process.py")
cpu_by_process = importlib.util.module_from_spec(spec)
sys.modules["cpu_by_process"] = cpu_by_process  # its dataclass looks itself up there
spec.loader.exec_module(cpu_by_process)

RECORDS = (ROOT / "tests" / "unit" / "fixtures" / "accounting" / "dump-acct.txt").read_text()


def test_every_record_is_read_with_its_cpu_and_parent():
    processes = cpu_by_process.parse(RECORDS.splitlines())
    assert len(processes) == 12
    apiserver = processes[688]
    assert (apiserver.command, apiserver.parent) == ("kube-apiserver", 635)
    assert round(apiserver.cpu, 2) == 87.58  # 7152 + 1606 ticks of 1/100 s
    assert round(apiserver.elapsed) == 1025


def test_each_process_lands_in_the_category_its_parents_give_it():
    processes = cpu_by_process.parse(RECORDS.splitlines())
    assert cpu_by_process.category(processes, 6177) == "modules Ansible shipped (a Python each)"
    assert cpu_by_process.category(processes, 6175) == "ansible-playbook and its forks"
    assert cpu_by_process.category(processes, 929) == (
        "long-lived Python (pytest workers, simulators)"
    )
    assert cpu_by_process.category(processes, 24175) == (
        "short-lived Python (stand-ins, tools, unit tests)"
    )
    assert cpu_by_process.category(processes, 681) == "etcd"


def test_the_table_adds_up():
    rows = cpu_by_process.table(cpu_by_process.parse(RECORDS.splitlines()))
    total = rows[-1].split()
    assert total[-1] == "all" and total[2] == "12"
    parts = sum(float(row.split()[0]) for row in rows[1:-1])
    assert abs(parts - float(total[0])) <= len(rows)  # each row rounded to the second
