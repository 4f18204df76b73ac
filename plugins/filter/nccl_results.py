"""gpudirect.rdma.nccl_results: nccl-tests output in, bus bandwidth and NCCL's path out."""

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_results
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Parse the output of nccl-tests (all_reduce_perf) with NCCL_DEBUG=INFO
description:
  - Reads the results table of C(all_reduce_perf) (or another nccl-tests binary), its
    C(# Avg bus bandwidth) line and its rank lines, and what NCCL said with C(NCCL_DEBUG=INFO)
    about its network (the NICs of C(NET/IB), a C(NET/Socket) fallback) and its channels
    (C(via NET/IB/0/GDRDMA) is GPUDirect RDMA).
  - "A launcher's per-line prefix (Slurm's C( 0: ), mpirun's C([1,0]<stdout>:)) is taken off
    first; MPI's warnings and other lines are ignored. Rows with and without the C(root)
    column (nccl-tests 2.13 and later, and before) are read; C(#wrong) C(N/A) (a run with
    C(-c 0)) is null."
  - Output without a results table fails with the C(NCCL WARN) lines it holds and its last
    lines; a table without its C(# Avg bus bandwidth) line fails as cut short.
options:
  _input:
    description: The output of the nccl-tests run (e.g. the launcher pod's log).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Judge the all-reduce
  ansible.builtin.assert:
    that:
      - result.avg_busbw_gbps >= 100
      - result.gpudirect
      - result.wrong == 0
  vars:
    result: "{{ launcher_log.log | gpudirect.rdma.nccl_results }}"
"""

RETURN = r"""
_value:
  description: The run's numbers and NCCL's path.
  type: dict
  contains:
    avg_busbw_gbytes:
      description: The GB/s nccl-tests prints on its C(# Avg bus bandwidth) line.
      type: float
    avg_busbw_gbps:
      description: The same in Gb/s (x 8).
      type: float
    rows:
      description: Per message size, C(size) (bytes), C(count), C(type), C(redop), and for
        C(out_of_place) and C(in_place) each C(time_us), C(algbw), C(busbw) (GB/s) and C(wrong)
        (null where nccl-tests prints N/A).
      type: list
      elements: dict
    largest:
      description: The row of the largest size.
      type: dict
    max_busbw_gbytes:
      description: The highest bus bandwidth of any row, out-of-place or in-place, in GB/s.
      type: float
    ranks:
      description: Ranks the header lists (null when it lists none).
      type: int
    nodes:
      description: Distinct hosts of those ranks (null when none is listed).
      type: int
    devices:
      description: The NICs NCCL used, as it names them, e.g. C(mlx5_0:1); empty over sockets or
        when NCCL_DEBUG was too quiet.
      type: list
      elements: str
    transport:
      description: C(IB) (InfiniBand or RoCE verbs), C(Socket) (NCCL fell back to TCP), or null
        when the log does not say.
      type: str
    gpudirect:
      description: True when the network channels run C(/GDRDMA) (or NCCL reports GPU Direct RDMA
        enabled), false when they run without it or over sockets, null when NCCL_DEBUG was too
        quiet to tell.
      type: bool
    wrong:
      description: The sum of C(#wrong) over every row and side (0 when none was checked).
      type: int
    warnings:
      description: The C(NCCL WARN) lines, once each.
      type: list
      elements: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.nccl import (  # noqa: E402
    NcclError,
    parse,
)


def nccl_results(text):
    args = validate(DOCUMENTATION, "gpudirect.rdma.nccl_results", {"_input": text})
    try:
        return parse(args["_input"])
    except NcclError as error:
        raise AnsibleFilterError(f"gpudirect.rdma.nccl_results: {error}") from error


class FilterModule:
    def filters(self):
        return {"nccl_results": nccl_results}
