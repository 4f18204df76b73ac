"""make test-gpu's last step: the collection's parsers and judges on what the real tools printed
(hack/test-gpu.sh wrote it to a folder). It prints what each read and fails (exit 1) where the
collection cannot read real output it must read: the pod script's facts and pairing, the
matrix (the pod's awk and topology.py must agree), the launcher's mpirun run (every rank on
this host, every message size), the JSON output.

    python -m tests.gpu.judge <folder>
"""

from __future__ import annotations

import sys
from pathlib import Path

# The collection imports as ansible_collections.gpudirect.rdma through .collections (make
# test-gpu links it and puts it on PYTHONPATH).
from ansible_collections.gpudirect.rdma.plugins.plugin_utils import (
    floors,
    host_checks,
    nccl,
    nccl_test,
    topology,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.log import pod_log
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.pods import group_view
from tests.unit.inventories import inputs

# all_reduce_perf's sizes in hack/test-gpu.sh: 1M to 1G doubling (launcher), 1M to 64M (JSON).
LAUNCHER_ROWS = 11
JSON_ROWS = 7


class Check:
    def __init__(self) -> None:
        self.failed: list[str] = []

    def __call__(self, what: str, ok: bool, detail: str = "") -> None:
        print(f"  {'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if detail else ""))
        if not ok:
            self.failed.append(what)


def _gpus(folder: Path) -> int:
    return int((folder / "machine.txt").read_text().split(" GPU(s)")[0].rsplit(", ", 1)[1])


def facts(folder: Path, check: Check) -> None:
    log = (folder / "verify_test-facts.txt").read_text()
    found = host_checks.facts(log)
    print("pod script (ROLE=facts) on the real machine:")
    check("it printed the host checks' facts", bool(found), ", ".join(sorted(found)))
    split = pod_log(log)
    matrix = (folder / "nvidia-smi-topo-m.txt").read_text()
    try:
        parsed = topology.parse(matrix)
        reading = f"{len(parsed['gpus'])} GPU(s), NICs {[n['name'] for n in parsed['nics']]}"
        python_error = None
    except topology.TopologyError as error:
        reading, python_error = f"refused: {error}", str(error)
    print(f"  topology.py reads nvidia-smi topo -m: {reading}")
    check(
        "the pod's awk and topology.py read the matrix alike",
        split["topology_error"] == python_error and not split["checks"],
        f"pod: {split['topology_error'] or 'read it'}; python: {python_error or 'read it'}",
    )
    for rail, entry in sorted(split["rails"].items()):
        print(f"  pairing of device {rail}: {entry}")
    plan = group_view(build_plan(inputs("shared-device-roce")), None)
    for finding in host_checks.judge(plan, {"this machine": log}, []):
        print(f"  host check {finding['check']}: {finding['status']}: {finding['detail']}")


def launcher(folder: Path, name: str, gpus: int, check: Check) -> None:
    path = folder / name
    if not path.exists():
        return
    text, code = nccl_test.output(path.read_text())
    print(f"NCCL test launcher ({name}):")
    check("mpirun ran all_reduce_perf and exited 0", code == 0, f"exit {code}")
    try:
        result = nccl.parse(text)
    except nccl.NcclError as error:
        check("nccl.parse read the run", False, str(error))
        return
    check(
        "every GPU of this host was a rank, on one node",
        (result["ranks"], result["nodes"]) == (gpus, 1),
        f"ranks {result['ranks']}, nodes {result['nodes']}",
    )
    check(
        "every message size has its row",
        len(result["rows"]) == LAUNCHER_ROWS,
        f"{len(result['rows'])} rows",
    )
    largest = result["largest"]
    print(
        f"  NCCL {result['transport'] or '?'}, GPUDirect {result['gpudirect']}, average bus "
        f"bandwidth {result['avg_busbw_gbytes']} GB/s ({result['avg_busbw_gbps']} Gb/s), at "
        f"{largest['size']} bytes {largest['out_of_place']['busbw']} GB/s, wrong {result['wrong']}"
    )
    floor = floors.nccl_floor(None, 0, [])
    problems = nccl.judge(result, floor, "roce", 1)
    print(f"  judge (floor {floor['gbps']:g} Gb/s: {floor['why']}):")
    for problem in problems or ["passes"]:
        print(f"    - {problem}")


def json_run(folder: Path, gpus: int, check: Check) -> None:
    print("all_reduce_perf -J:")
    try:
        result = nccl.parse_json((folder / "all_reduce_perf.json").read_text())
    except nccl.NcclError as error:
        check("nccl.parse_json read it", False, str(error))
        return
    check(
        "nccl.parse_json read every size and device",
        (len(result["rows"]), result["ranks"]) == (JSON_ROWS, gpus),
        f"{len(result['rows'])} rows, {result['ranks']} device(s), average "
        f"{result['avg_busbw_gbytes']} GB/s",
    )


def main(folder: Path) -> int:
    check = Check()
    print((folder / "machine.txt").read_text().rstrip())
    gpus = _gpus(folder)
    facts(folder, check)
    for name in ("nccl_test-sh-launcher.txt", "nccl_test-sh-launcher-sockets.txt"):
        launcher(folder, name, gpus, check)
    json_run(folder, gpus, check)
    print(
        "not exercised here: RDMA traffic (ib_write_bw) and GPU-NIC pairing on a real NIC (no "
        "NIC on this machine), sshd (the launcher's ssh was a stand-in; one host needs no "
        "daemon over SSH), anything across nodes"
        + ("; NCCL over NVLink or P2P (one GPU)" if gpus == 1 else "")
    )
    if check.failed:
        print(f"make test-gpu FAILED: {'; '.join(check.failed)}")
        return 1
    print("make test-gpu passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
