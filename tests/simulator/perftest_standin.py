"""ib_write_bw as the simulator's fake node runs it (testbed.py): reads the command line the
verification script built and prints output shaped like a captured run (perftest_output),
for that device, GID index, GPU and GPU memory mode. It imports nothing of the simulator: it runs
once per rail of every test pod. The perftest knobs come in
SIMULATED_PERFTEST (JSON): bw_gbps, gpu_memory (as_requested | none), failure
("" | connection_refused | wrong_gid), slow (a list of {node, device, factor}: a client on that
node, on that RDMA device, reports bw_gbps times factor), and node (the pod's node, which
testbed.py adds)."""

from __future__ import annotations

import json
import os
import sys


def perftest_output(
    role: str,
    link_type: str,
    gpu_memory: str,
    bw_gbps: float,
    device: str,
    address: str,
    gid_index: int | None,
    failure: str,
    cuda_device: int = 0,
) -> str:
    """ib_write_bw output of one side, in the shape of the captured runs."""
    lines = []
    if gpu_memory != "none":
        lines += [
            "initializing CUDA",
            "Listing all CUDA devices in system:",
            "CUDA device 0: PCIe address is 17:00",
            "",
            f"Picking device No. {cuda_device}",
            f"[pid = 61, dev = {cuda_device}] device name = [NVIDIA A100-SXM4-80GB]",
            "creating CUDA Ctx",
            "making it the current CUDA Ctx",
            "CUDA device integrated: 0",
            "cuMemAlloc() of a 2097152 bytes GPU buffer",
            "allocated GPU buffer address at 00007f3a7e000000 pointer=0x7f3a7e000000",
        ]
        if gpu_memory == "dmabuf":
            lines += [
                "using DMA-BUF for GPU buffer address at 0x7f3a7e000000 aligned at "
                "0x7f3a7e000000 with aligned size 2097152",
                "Calling ibv_reg_dmabuf_mr(offset=0, size=2097152, addr=0x7f3a7e000000, "
                "fd=42) for QP #0",
            ]
    if role == "server":
        lines += [
            "",
            "************************************",
            "* Waiting for client to connect... *",
            "************************************",
        ]
    if failure == "connection_refused" and role == "client":
        return (
            "\n".join(
                lines
                + [f"Couldn't connect to {address}:10000", "Unable to init the socket connection"]
            )
            + "\n"
        )
    rule = "-" * 87
    lines += [
        rule,
        "                    RDMA_Write BW Test",
        f" Dual-port       : OFF\t\tDevice         : {device}",
        " Number of qps   : 16\t\tTransport type : IB",
        " Connection type : RC\t\tUsing SRQ      : OFF",
        " PCIe relax order: ON",
        " ibv_wr* API     : ON",
        " CQ Moderation   : 100",
        " Mtu             : 4096[B]",
        f" Link type       : {'Ethernet' if link_type == 'eth' else 'IB'}",
    ]
    if gid_index is not None:
        lines.append(f" GID index       : {gid_index}")
    lines += [
        " Max inline data : 0[B]",
        " rdma_cm QPs\t : OFF",
        " Data ex. method : Ethernet",
        rule,
    ]
    if failure == "wrong_gid":
        return (
            "\n".join(
                lines
                + [
                    " Failed to modify QP 294 to RTR",
                    " Unable to Connect the HCA's through the link",
                ]
            )
            + "\n"
        )
    lines += [
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
        f" 65536      10329004         0.00               {bw_gbps:.2f}"
        f"               {bw_gbps * 1e9 / 8 / 65536 / 1e6:.6f}",
        rule,
    ]
    if gpu_memory != "none":
        lines += ["deallocating GPU buffer 00007f3a7e000000", "destroying current CUDA Ctx"]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    knobs = json.loads(os.environ.get("SIMULATED_PERFTEST") or "{}")

    def value(flag: str) -> str | None:
        return argv[argv.index(flag) + 1] if flag in argv else None

    cuda = next((a.split("=", 1)[1] for a in argv if a.startswith("--use_cuda=")), None)
    client = not argv[-1].startswith("-")  # a client's last argument is its server's address
    role = "client" if client else "server"
    if knobs.get("gpu_memory", "as_requested") != "as_requested" or cuda is None:
        gpu_memory = "none"
    else:
        gpu_memory = "dmabuf" if "--use_cuda_dmabuf" in argv else "peermem"
    gid = value("-x")
    bw_gbps = float(knobs.get("bw_gbps", 180.47))
    for slow in knobs.get("slow") or []:
        if client and (slow.get("node"), slow.get("device")) == (knobs.get("node"), value("-d")):
            bw_gbps *= float(slow.get("factor", 1))
    output = perftest_output(
        role,
        "eth" if gid is not None else "ib",
        gpu_memory,
        bw_gbps,
        device=value("-d") or "?",
        address=argv[-1] if client else (value("--source_ip") or "?"),
        gid_index=int(gid) if gid is not None else None,
        failure=knobs.get("failure", ""),
        cuda_device=int(cuda) if cuda is not None else 0,
    )
    sys.stdout.write(output)
    return 0 if "#bytes" in output else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
