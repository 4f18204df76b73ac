"""Parse the output of perftest's ib_write_bw (server or client side) into numbers.

Pure: text in, dict out. The result row is the line under the header
` #bytes  #iterations  BW peak[Gb/sec]  BW average[Gb/sec]  MsgRate[Mpps]` (with
--report_gbits; without it the header says [MB/sec], perftest's MiB per second, converted here).
Whether GPU memory was really used is read from perftest's CUDA lines: DMA-BUF registration
(`using DMA-BUF for GPU buffer`, `ibv_reg_dmabuf_mr`) means dmabuf; a GPU buffer registered
without them means nvidia-peermem; no GPU buffer at all means none.
"""

from __future__ import annotations

import re

_HEADER = re.compile(
    r"#bytes\s+#iterations\s+BW peak\[(?P<unit>[GM]b?/sec|MB/sec|Gb/sec)\]"
    r"\s+BW average\[[^\]]+\]\s+MsgRate\[Mpps\]"
)
_ROW = re.compile(
    r"^\s*(?P<bytes>\d+)\s+(?P<iterations>\d+)\s+(?P<peak>[\d.]+)\s+"
    r"(?P<average>[\d.]+)\s+(?P<rate>[\d.]+)\s*$"
)
_FIELDS = {
    "device": re.compile(r"Device\s*:\s*(\S+)"),
    "link_type": re.compile(r"Link type\s*:\s*(\S+)"),
    "gid_index": re.compile(r"GID index\s*:\s*(\d+)"),
    "transport": re.compile(r"Transport type\s*:\s*(\S+)"),
    "qps": re.compile(r"Number of qps\s*:\s*(\d+)"),
    "mtu": re.compile(r"Mtu\s*:\s*(\d+)"),
    "connection": re.compile(r"Connection type\s*:\s*(\S+)"),
}
_CUDA_DEVICE = re.compile(r"Picking device No\.\s*(\d+)|dev\s*=\s*(\d+)\]")
_GPU_NAME = re.compile(r"device name\s*=\s*\[([^\]]+)\]")
_DMABUF = re.compile(r"using DMA-BUF for GPU buffer|ibv_reg_dmabuf_mr", re.IGNORECASE)
_GPU_BUFFER = re.compile(r"allocated GPU buffer|cuMemAlloc\(\)", re.IGNORECASE)
# (pattern, what it usually means) for output without a result row.
_FAILURES = (
    (
        re.compile(
            r"Couldn't connect to|Unable to init the socket connection|Connection refused",
            re.IGNORECASE,
        ),
        "the client could not reach the server: is the server pod running and is the address its "
        "net1 address?",
    ),
    (
        re.compile(r"Failed to modify QP .*to RTR|Unable to Connect the HCA", re.IGNORECASE),
        "the queue pairs did not connect: a wrong RoCE GID index (-x) or a link without a route "
        "between the two ports",
    ),
    (
        re.compile(
            r"cuInit\(0\) returned|CUDA error|Couldn't init GPU context|cuMemAlloc failed",
            re.IGNORECASE,
        ),
        "CUDA failed: is a GPU assigned to the pod (nvidia.com/gpu) and is the driver loaded?",
    ),
    (
        re.compile(
            r"Couldn't allocate MR|ibv_reg_mr failed|Failed to allocate|Couldn't get device",
            re.IGNORECASE,
        ),
        "the RDMA device could not register memory: DMA-BUF or nvidia-peermem not working, or no "
        "RDMA device in the pod",
    ),
)


class PerftestError(ValueError):
    """The output holds no result row; the message says what the output suggests."""


def _megabytes_to_gigabits(value: float) -> float:
    return value * 2**20 * 8 / 1e9


def parse(output: str) -> dict:
    lines = output.splitlines()
    unit = None
    result_row = None
    for index, line in enumerate(lines):
        header = _HEADER.search(line)
        if header:
            unit = header.group("unit")
            for candidate in lines[index + 1 :]:
                row = _ROW.match(candidate)
                if row:
                    result_row = row
                    break
    if result_row is None:
        tail = [line.strip() for line in lines if line.strip()][-3:]
        hint = next(
            (why for pattern, why in _FAILURES if pattern.search(output)), "the test did not finish"
        )
        raise PerftestError(
            "expected an ib_write_bw result row under the '#bytes #iterations BW peak ...' "
            f"header; found none: {hint}. Last lines: {' | '.join(tail) or '(no output)'}"
        )
    convert = (lambda v: v) if unit == "Gb/sec" else _megabytes_to_gigabits
    result = {
        "bytes": int(result_row["bytes"]),
        "iterations": int(result_row["iterations"]),
        # A duration run (-D, as the pods run it) measures no peak and prints 0.00: None then.
        "bw_peak_gbps": round(convert(float(result_row["peak"])), 3) or None,
        "bw_average_gbps": round(convert(float(result_row["average"])), 3),
        "msg_rate_mpps": float(result_row["rate"]),
        "side": "server" if "Waiting for client to connect" in output else "client",
    }
    for name, pattern in _FIELDS.items():
        match = pattern.search(output)
        value = match.group(1) if match else None
        result[name] = int(value) if value is not None and value.isdigit() else value
    if _DMABUF.search(output):
        result["gpu_memory"] = "dmabuf"
    elif _GPU_BUFFER.search(output):
        result["gpu_memory"] = "peermem"
    else:
        result["gpu_memory"] = "none"
    device = _CUDA_DEVICE.search(output)
    result["cuda_device"] = int(next(g for g in device.groups() if g)) if device else None
    gpu = _GPU_NAME.search(output)
    result["gpu_name"] = gpu.group(1) if gpu else None
    return result
