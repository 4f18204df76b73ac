"""The bandwidth floors the verification judges against, from what the nodes report (pure).

A fixed floor (verify_min_gbps for a pair, verify_min_busbw_gbps for an NCCL run) is used as
given. Without one, the floor is derived from the port rate the kernel reports for each rail's
RDMA device (/sys/class/infiniband/<dev>/ports/1/rate, e.g. `400 Gb/sec (4X NDR)`), which the
test pods print, so a 2x100G cluster and an 8x400G one are each judged against their own fabric:

- a pair (one rail's ib_write_bw, GPU memory to GPU memory): PAIR_EFFICIENCY of the slower of
  the two ports. ib_write_bw with 64 KiB messages and 16 queue pairs reaches 90 % and more of
  the link on a healthy GPUDirect path (Red Hat's reference run: 180.47 Gb/s on 200 Gb/s);
- an NCCL run (all_reduce_perf across nodes, one rank per GPU): NCCL_EFFICIENCY of the rails'
  rates together (rails x the slowest rail's rate), against the bus bandwidth at the largest
  message size. nccl-tests' bus bandwidth "should reflect the speed of the hardware bottleneck"
  (its doc/PERFORMANCE.md), which across nodes is the network: one rank per GPU, NCCL spreads
  its channels over every rail, so at large sizes the bus bandwidth approaches the rails' sum.
  The average over every size is not what the derived floor judges: small sizes pull it down by
  as much as the sizes chosen.

A rate that is not known (no rate file, a pod that printed none) leaves DEFAULT_GBPS, and the
floor says so.
"""

from __future__ import annotations

import re

PAIR_EFFICIENCY = 0.8
NCCL_EFFICIENCY = 0.7
DEFAULT_GBPS = 100.0
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec\b")


def port_rate(text: str | None) -> float | None:
    """Gb/s of a port's rate file (`400 Gb/sec (4X NDR)`); None when it says no rate."""
    found = _RATE.match(text or "")
    return float(found[1]) if found else None


def _number(value: float) -> str:
    return f"{value:g}"


def pair_floor(fixed: float | None, rates: dict[str, float | None]) -> dict:
    """The floor of one pair: fixed (verify_min_gbps) when set, else PAIR_EFFICIENCY of the
    slower port; rates: the rail's port rate by side (server, client), None when unknown.
    {gbps, source (setting | port rate | default), why}."""
    if fixed is not None:
        return {"gbps": float(fixed), "source": "setting", "why": "verify_min_gbps"}
    known = {side: rate for side, rate in rates.items() if rate}
    if not known:
        return {
            "gbps": DEFAULT_GBPS,
            "source": "default",
            "why": f"no port rate was read on either side; the default {_number(DEFAULT_GBPS)} "
            "Gb/s (set verify_min_gbps to choose one)",
        }
    side, slowest = min(known.items(), key=lambda item: item[1])
    unknown = [s for s in rates if s not in known]
    return {
        "gbps": round(slowest * PAIR_EFFICIENCY, 3),
        "source": "port rate",
        "why": f"{PAIR_EFFICIENCY:.0%} of the {_number(slowest)} Gb/s port rate ({side} side"
        + (f"; the {unknown[0]} side printed none" if unknown else "")
        + ")",
    }


def nccl_floor(fixed: float | None, rails: int, rates: list[float | None]) -> dict:
    """The floor of an NCCL run of a node group: fixed (verify_min_busbw_gbps) against the
    average bus bandwidth when set; else NCCL_EFFICIENCY of rails x the slowest port rate the
    bandwidth test read on the group's rails (rates), against the bus bandwidth at the largest
    size. {gbps, source, measure (average | largest), why}."""
    if fixed is not None:
        return {
            "gbps": float(fixed),
            "source": "setting",
            "measure": "average",
            "why": "verify_min_busbw_gbps, against the average bus bandwidth",
        }
    known = [rate for rate in rates if rate]
    if not known:
        return {
            "gbps": DEFAULT_GBPS,
            "source": "default",
            "measure": "average",
            "why": "no port rate was read on the group's rails; the default "
            f"{_number(DEFAULT_GBPS)} Gb/s against the average bus bandwidth (set "
            "verify_min_busbw_gbps to choose one)",
        }
    slowest = min(known)
    return {
        "gbps": round(rails * slowest * NCCL_EFFICIENCY, 3),
        "source": "port rate",
        "measure": "largest",
        "why": f"{NCCL_EFFICIENCY:.0%} of {rails} rail(s) x {_number(slowest)} Gb/s (the "
        "slowest port rate the bandwidth test read on the group's rails), against the bus "
        "bandwidth at the largest message size",
    }
