"""Stand-ins for what the NCCL test's launcher runs: `ssh` (logging in to a worker) and `mpirun`
(all_reduce_perf across the workers), shaped like the captured runs (tests/unit/fixtures/nccl).

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
- wrong: wrong values in the largest size's row.

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


def _output(facts: dict, knobs: dict, hosts: list, transport: str, failed: bool, test: dict) -> str:
    workers = facts["workers"]
    layer = "RoCE" if facts.get("link_layer") == "Ethernet" else "IB"
    lines = [
        f"# nThread 1 nGpus 1 minBytes {test['b']} maxBytes {test['e']} step: 2(factor) warmup "
        f"iters: 5 iters: {test['n']} agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    rank = 0
    rank_hosts = []
    for host, slots in hosts:
        short = host.split(".")[0]
        for device in range(slots):
            lines.append(
                f"#  Rank {rank:2d} Group  0 Pid {41000 + rank:6d} on {short:>10} device "
                f"{device:2d} [0x{0x18 + 0x10 * device:02x}] NVIDIA H100 80GB HBM3"
            )
            rank_hosts.append((short, device))
            rank += 1
    lines += [
        "#",
        "#                                                              out-of-place         "
        "              in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
        "     (us)  (GB/s)  (GB/s)       ",
    ]
    gdr = knobs.get("gpudirect", True) and all(w["gpudirect"] for w in workers.values())
    for short, device in [rh for rh in rank_hosts if rh[1] == 0]:
        rails = next(w["rails"] for h, w in workers.items() if h.split(".")[0] == short)
        prefix = f"{short}:{41000 + rank_hosts.index((short, 0))}:41014 [0] NCCL INFO"
        lines += [
            f"{prefix} Bootstrap : Using eth0:10.128.{device}.12<0>",
            f"{prefix} NET/Plugin: No plugin found (libnccl-net.so)",
        ]
        if transport == "Socket":
            lines += [
                f"{prefix} NET/IB : No device found.",
                f"{prefix} NET/Socket : Using [0]eth0:10.128.0.12<0>",
                f"{prefix} Using network Socket",
            ]
            via = "NET/Socket/0"
        else:
            used = " ".join(f"[{i}]{d}:1/{layer}" for i, d in enumerate(rails))
            lines += [
                f"{prefix} NET/IB : Using {used} ; OOB eth0:10.128.0.12<0>",
                f"{prefix} Using network IB",
            ]
            via = "NET/IB/0" + ("/GDRDMA" if gdr else "")
        lines += [
            f"{prefix} Channel 00/0 : {rank - 1}[0] -> 0[0] [receive] via {via}",
            f"{prefix} Channel 00/0 : 0[0] -> 1[0] [send] via {via}",
            f"{prefix} Connected all rings",
        ]
    if failed:
        first = rank_hosts[0][0]
        first_rail = next(iter(workers.values()))["rails"][0]
        lines += [
            f"{first}:41000:41020 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion "
            "from peer 10.0.1.12<49221> with status=12 opcode=0 len=0 vendor err 129 (Recv) "
            f"localGid ::ffff:10.0.0.12 remoteGids::ffff:10.0.1.12 hca {first_rail}",
            f"{first}: Test NCCL failure common.cu:1279 'remote process exited or there was a "
            "network error / '",
        ]
        return "\n".join(lines) + "\n"
    rails = min(len(w["rails"]) for w in workers.values()) or 1
    if "busbw_gbytes" in knobs:
        peak = float(knobs["busbw_gbytes"])
    elif transport == "Socket":
        peak = 1.2
    else:
        peak = rails * float(knobs.get("rail_gbytes", 24.0)) * (1.0 if gdr else 0.55)
    size = test["b"]
    total = 0.0
    count = 0
    factor = 2 * (ranks - 1) / ranks if (ranks := len(rank_hosts)) > 1 else 1
    while size <= test["e"]:
        busbw = peak * size / (size + (4 << 20))
        algbw = busbw / factor
        time_us = size / (algbw * 1e3) if algbw else 0.0
        elements = max(size // 4, 1)
        wrong = int(knobs.get("wrong", 0)) if size * 2 > test["e"] else 0
        lines.append(
            f"{size:>12} {elements:>13}     float     sum      -1 {time_us:8.2f} {algbw:7.2f} "
            f"{busbw:7.2f} {wrong:6d} {time_us:8.2f} {algbw:7.2f} {busbw:7.2f} {0:6d}"
        )
        total += 2 * round(busbw, 2)
        count += 2
        size *= 2
    lines += [
        "# Out of bounds values : 0 OK",
        f"# Avg bus bandwidth    : {total / max(count, 1):.4f} ",
        "#",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    command = Path(sys.argv[1]).name
    sys.exit(ssh(sys.argv[2:]) if command == "ssh" else mpirun(sys.argv[2:]))
