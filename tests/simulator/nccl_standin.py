"""Stand-ins for what the NCCL test's launcher runs: `ssh` (logging in to a worker) and `mpirun`
(all_reduce_perf across the workers), its output shaped like the real runs of nccl-tests 2.19.6
on NCCL 2.28.9 (../shared/real-outputs/h200-vm-driver580): the `# nccl-tests version` and
`# Collective test starting` header, NCCL's `Assigned NET plugin <name> to comm` and `Using
network <name>` lines (for a socket fallback the sequence NCCL 2.28 prints: `NET/IB : No device
found.`, `NET/IB : Using [RO]; OOB ...`, `Failed to initialize NET plugin IB`, `NET/Socket :
Using ...`, `Initialized NET plugin Socket`, ...), the table with the root column and its cells
as nccl-tests formats them, and the `# Collective test concluded` footer.

The simulator's kubelet passes what it knows of the cluster in SIMULATED_NCCL (JSON): per worker
DNS name (`<hostname>.<subdomain>`, which resolves only when a headless Service of that name
selects the worker pod, as cluster DNS does) its node, GPUs, rails (the RDMA devices the pod got,
mlx5_0, ...), link layer, whether it has IPC_LOCK and GPUDirect (the GPU driver's DMA-BUF or
nvidia_peermem, and every rail's GPU on the NIC's switch), the key the workers accept, the
RoCE v2 GID index their tables hold, and the nccl knobs:

- transport: "" (decided from the pods and NCCL_IB_HCA) | Socket (NCCL falls back to sockets);
- gpudirect: true | false (the network channels run without /GDRDMA);
- rail_gbytes: the bus bandwidth one rail gives at the largest sizes (GB/s, default 24);
  busbw_gbytes: the peak bus bandwidth of the run, whatever the rails;
- wrong: wrong values in the largest size's row;
- slow: [{node, factor}]: a run with a worker on that node reaches factor times its bus
  bandwidth (the slowest such node decides).

So the launcher's own script runs, and what it passed to mpirun (the hosts and slots, -np, the
NCCL settings from the ConfigMap) decides what NCCL "does": an NCCL_IB_HCA naming devices the
workers lack falls back to sockets, a RoCE NCCL_IB_GID_INDEX the workers do not hold fails the
run with NCCL's completion error. What cannot run here is NCCL itself.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from cryptography.hazmat.primitives import serialization


def _facts() -> dict:
    return json.loads(os.environ.get("SIMULATED_NCCL", "{}"))


def _identity(config: str) -> str | None:
    for line in Path(config).read_text().splitlines():
        key, _space, value = line.strip().partition(" ")
        if key == "IdentityFile":
            return value.strip()
    return None


def _public(private_key_file: str) -> str:
    key = serialization.load_ssh_private_key(Path(private_key_file).read_bytes(), password=None)
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )


def ssh(args: list[str]) -> int:
    """ssh -F <config> <host> <command>: 0 when host is a worker that accepts the key."""
    facts = _facts()
    config, rest = None, []
    index = 0
    while index < len(args):
        if args[index] == "-F":
            config = args[index + 1]
            index += 2
            continue
        rest.append(args[index])
        index += 1
    host = rest[0] if rest else ""
    if host not in facts.get("workers", {}):
        print(f"ssh: Could not resolve hostname {host}: Name or service not known", file=sys.stderr)
        return 255
    identity = _identity(config) if config else None
    accepted = facts.get("authorized_key", "").split()[:2]
    if not identity or _public(identity).split()[:2] != accepted:
        print(f"root@{host}: Permission denied (publickey).", file=sys.stderr)
        return 255
    return 0


def _parse_mpirun(args: list[str]) -> dict:
    with_value = {"--hostfile", "-np", "--bind-to", "-x", "--map-by", "--prefix"}
    parsed = {"exports": [], "mca": {}}
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--mca":
            parsed["mca"][args[index + 1]] = args[index + 2]
            index += 3
        elif arg in with_value:
            if arg == "-x":
                parsed["exports"].append(args[index + 1])
            else:
                parsed[arg.lstrip("-")] = args[index + 1]
            index += 2
        elif arg.startswith("-"):
            index += 1
        else:
            parsed["program"] = args[index:]
            break
    return parsed


def _test_args(program: list[str]) -> dict:
    values = dict(zip(program[1::2], program[2::2], strict=False))
    return {
        "name": Path(program[0]).name if program else "all_reduce_perf",
        "b": _bytes(values.get("-b", "8")),
        "e": _bytes(values.get("-e", "128M")),
        "n": int(values.get("-n", "20")),
    }


def _bytes(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def mpirun(args: list[str]) -> int:
    facts = _facts()
    knobs = facts.get("knobs") or {}
    parsed = _parse_mpirun(args)
    hosts = []
    for line in Path(parsed["hostfile"]).read_text().splitlines():
        name, _space, slots = line.partition(" slots=")
        hosts.append((name.strip(), int(slots)))
    workers = facts.get("workers", {})
    for host, _slots in hosts:
        if host not in workers:
            print(
                "ssh: Could not resolve hostname " + host + ": Name or service not known\n"
                "--------------------------------------------------------------------------\n"
                "ORTE was unable to reliably start one or more daemons.",
                file=sys.stderr,
            )
            return 1
    ranks = int(parsed["np"])
    if ranks != sum(slots for _host, slots in hosts):
        print(f"There are not enough slots available in the system to satisfy the {ranks} slots")
        return 1
    env = {name: os.environ.get(name, "") for name in parsed["exports"]}
    transport = _transport(facts, env)
    failed = _wrong_gid(facts, env) and transport == "IB"
    test = _test_args(parsed.get("program", []))
    print(_output(facts, knobs, hosts, transport, failed, test), end="")
    return 1 if failed else 0


def _wrong_gid(facts: dict, env: dict) -> bool:
    """On RoCE, NCCL_IB_GID_INDEX names an index whose GID the workers' tables do not hold."""
    index = env.get("NCCL_IB_GID_INDEX")
    return (
        facts.get("link_layer") == "Ethernet"
        and bool(index)
        and int(index) != facts.get("gid_index", 3)
    )


def _transport(facts: dict, env: dict) -> str:
    knobs = facts.get("knobs") or {}
    if knobs.get("transport") == "Socket" or env.get("NCCL_IB_DISABLE") == "1":
        return "Socket"
    devices = set.intersection(*(set(w["rails"]) for w in facts["workers"].values()))
    if not devices or not all(w["ipc_lock"] for w in facts["workers"].values()):
        return "Socket"
    wanted = env.get("NCCL_IB_HCA", "")
    if wanted:
        names = {d.split(":")[0] for d in wanted.lstrip("=^").split(",") if d}
        if wanted.startswith("=") and not names <= devices:
            return "Socket"
    return "IB"


NCCL_VERSION = "2.28.9+cuda13.0"
NCCL_CODE = 22809  # what nccl-tests prints as nccl-headers= and nccl-library=
TESTS_VERSION = "2.19.6"
GPU = "NVIDIA H100 80GB HBM3"


def _cell(value: float, width: int) -> str:
    """A number as nccl-tests prints a table cell: two decimals, then fewer, then none, then
    an exponent, the first form that fits the column's width."""
    for form in (".2f", ".1f", ".0f"):
        text = f"{value:{width}{form}}"
        if len(text) <= width:
            return text
    return f"{value:{width}{'.1e' if width >= 7 else '.0e'}}"


def _side(time_us: float, algbw: float, busbw: float, wrong: int) -> str:
    return f"  {_cell(time_us, 7)}  {_cell(algbw, 6)}  {_cell(busbw, 6)}  {float(wrong):6g}"


def _net_lines(prefix: str, transport: str, rails: list[str], layer: str, address: str) -> list:
    """What NCCL 2.28 says of its network: the IB plugin's devices, or its socket fallback."""
    if transport == "Socket":
        return [
            f"{prefix} NET/IB : No device found.",
            f"{prefix} NET/IB : Using [RO]; OOB eth0:{address}<0>",
            f"{prefix} Failed to initialize NET plugin IB",
            f"{prefix} NET/Socket : Using [0]eth0:{address}<0>",
            f"{prefix} Initialized NET plugin Socket",
            f"{prefix} Assigned NET plugin Socket to comm",
            f"{prefix} Using network Socket",
        ]
    used = "".join(f" [{i}]{d}:1/{layer}" for i, d in enumerate(rails))
    return [
        f"{prefix} NET/IB : Using{used} [RO]; OOB eth0:{address}<0>",
        f"{prefix} Initialized NET plugin IB",
        f"{prefix} Assigned NET plugin IB to comm",
        f"{prefix} Using network IB",
    ]


def _output(facts: dict, knobs: dict, hosts: list, transport: str, failed: bool, test: dict) -> str:
    workers = facts["workers"]
    layer = "RoCE" if facts.get("link_layer") == "Ethernet" else "IB"
    lines = [
        f"# nccl-tests version {TESTS_VERSION} nccl-headers={NCCL_CODE} nccl-library={NCCL_CODE}",
        f"# Collective test starting: {test['name']}",
        f"# nThread 1 nGpus 1 minBytes {test['b']} maxBytes {test['e']} step: 2(factor) warmup "
        f"iters: 1 iters: {test['n']} agg iters: 1 validation: 1 graph: 0 unalign: 0",
        "#",
        "# Using devices",
    ]
    rank = 0
    rank_hosts = []
    for host, slots in hosts:
        short = host.split(".")[0]
        for device in range(slots):
            lines.append(
                f"#  Rank {rank:2d} Group {0:2d} Pid {41000 + rank:6d} on {short:>10} device "
                f"{device:2d} [{0:04x}:{0x18 + 0x10 * device:02x}:{0:02x}] {GPU}"
            )
            rank_hosts.append((short, device))
            rank += 1
    ranks = len(rank_hosts)
    gdr = knobs.get("gpudirect", True) and all(w["gpudirect"] for w in workers.values())
    via = "NET/Socket/0" if transport == "Socket" else "NET/IB/0" + ("/GDRDMA" if gdr else "")
    # Rank 0 of each node speaks for its node: its network, then its ring's channels.
    firsts = [r for r, (_short, device) in enumerate(rank_hosts) if device == 0]
    speakers = []
    for index, first in enumerate(firsts):
        short = rank_hosts[first][0]
        rails = next(w["rails"] for h, w in workers.items() if h.split(".")[0] == short)
        prefix = f"{short}:{41000 + first}:{41000 + first} [0] NCCL INFO"
        address = f"10.128.{index}.12"
        lines += [
            f"{prefix} ENV/Plugin: Could not find: libnccl-env.so",
            f"{prefix} Bootstrap: Using eth0:{address}<0>",
            f"{prefix} cudaDriverVersion 13000",
            f"{prefix} NCCL version {NCCL_VERSION}",
            f"{prefix} NET/Plugin: Could not find: libnccl-net.so",
            *_net_lines(prefix, transport, rails, layer, address),
            f"{prefix} comm 0x55d0c0a0 rank {first} nRanks {ranks} nNodes {len(firsts)} "
            f"localRanks {len(firsts) and ranks // len(firsts)} localRank 0 MNNVL 0",
            f"{prefix} ncclCommInitRankConfig comm 0x55d0c0a0 rank {first} nranks {ranks} cudaDev "
            "0 nvmlDev 0 busId 18000 commId 0x6d1c3a5e7a10b2c4 - Init COMPLETE",
        ]
        before, after = (first - 1) % ranks, firsts[(index + 1) % len(firsts)]
        speakers.append(
            [
                f"{prefix} Channel 00/0 : {before}[{rank_hosts[before][1]}] -> {first}[0] "
                f"[receive] via {via}",
                f"{prefix} Channel 00/0 : {first}[0] -> {after}[0] [send] via {via}",
            ]
        )
    lines += [
        "#",
        f"# {'':>10}  {'':>12}  {'':>8}  {'':>6}  {'':>6}           out-of-place"
        "                       in-place          ",
        f"# {'size':>10}  {'count':>12}  {'type':>8}  {'redop':>6}  {'root':>6}  {'time':>7}  "
        f"{'algbw':>6}  {'busbw':>6}  {'#wrong':>6}  {'time':>7}  {'algbw':>6}  {'busbw':>6}  "
        f"{'#wrong':>6} ",
        f"# {'(B)':>10}  {'(elements)':>12}  {'':>8}  {'':>6}  {'':>6}  {'(us)':>7}  "
        f"{'(GB/s)':>6}  {'(GB/s)':>6}  {'':>6}  {'(us)':>7}  {'(GB/s)':>6}  {'(GB/s)':>6}  "
        f"{'':>6} ",
    ]
    for channels in speakers:  # NCCL connects the rings at the first collective
        lines += channels
    if failed:
        first = rank_hosts[0][0]
        first_rail = next(iter(workers.values()))["rails"][0]
        lines += [
            f"{first}:41000:41020 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got "
            "completion from peer 10.0.1.12<49221> with status=12 opcode=0 len=0 vendor err 129 "
            f"(Recv) localGid ::ffff:10.0.0.12 remoteGids::ffff:10.0.1.12 hca {first_rail}",
            f"{first}: Test NCCL failure common.cu:513 'remote process exited or there was a "
            "network error / NET/IB : Got completion from peer 10.0.1.12<49221> with status=12 "
            "opcode=0 len=0 vendor err 129 (Recv)'",
            f" .. {first} pid 41000: Test failure common.cu:632",
            f" .. {first} pid 41000: Test failure common.cu:1454",
        ]
        return "\n".join(lines) + "\n"
    rails = min(len(w["rails"]) for w in workers.values()) or 1
    if "busbw_gbytes" in knobs:
        peak = float(knobs["busbw_gbytes"])
    elif transport == "Socket":
        peak = 1.2
    else:
        peak = rails * float(knobs.get("rail_gbytes", 24.0)) * (1.0 if gdr else 0.55)
    in_run = {workers[host]["node"] for host, _slots in hosts}
    peak *= min(
        [float(slow["factor"]) for slow in knobs.get("slow") or [] if slow["node"] in in_run]
        or [1.0]
    )
    size = test["b"]
    total = 0.0
    count = 0
    failed_checks = 0
    factor = 2 * (ranks - 1) / ranks if ranks > 1 else 1
    while size <= test["e"]:
        busbw = peak * size / (size + (4 << 20))
        algbw = busbw / factor
        time_us = size / (algbw * 1e3) if algbw else 0.0
        elements = max(size // 4, 1)
        wrong = int(knobs.get("wrong", 0)) if size * 2 > test["e"] else 0
        failed_checks += 1 if wrong else 0
        lines.append(
            f"{size:12d}  {elements:12d}  {'float':>8}  {'sum':>6}  {-1:6d}"
            + _side(time_us, algbw, busbw, wrong)
            + _side(time_us, algbw, busbw, 0)
        )
        total += 2 * float(_cell(busbw, 6))
        count += 2
        size *= 2
    for first in firsts:
        short = rank_hosts[first][0]
        lines.append(
            f"{short}:{41000 + first}:{41000 + first} [0] NCCL INFO comm 0x55d0c0a0 rank {first} "
            f"nranks {ranks} cudaDev 0 busId 18000 - Destroy COMPLETE"
        )
    lines += [
        f"# {'Out of bounds values':<20} : {failed_checks} {'FAILED' if failed_checks else 'OK'}",
        f"# {'Avg bus bandwidth':<20} : {total / max(count, 1):g} ",
        "#",
        f"# Collective test concluded: {test['name']}",
        "#",
        "",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    command = Path(sys.argv[1]).name
    sys.exit(ssh(sys.argv[2:]) if command == "ssh" else mpirun(sys.argv[2:]))
