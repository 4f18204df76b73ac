"""gpudirect.rdma.nccl_results: nccl-tests output (text or -J JSON) in, bus bandwidth and NCCL's
path out."""

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_results
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Parse the output of nccl-tests (all_reduce_perf) with NCCL_DEBUG=INFO
description:
  - Reads the results table of C(all_reduce_perf) (or another nccl-tests binary), its
    C(# Avg bus bandwidth) line and its rank lines, and what NCCL said with C(NCCL_DEBUG=INFO)
    about its network and its channels.
  - "The network is the one NCCL names on C(Using network <name>) and C(Assigned NET plugin <name>
    to comm) (NCCL 2.19 and later): C(IB), C(Socket), or a net plugin's own name such as
    C(IBext_v8) (NVIDIA's plugin in HPC-X images) or C(AWS Libfabric). Older logs are read from
    C(NET/IB : Using) when it lists a device (NCCL 2.28's C(NET/IB : Using [RO]; OOB ...) before
    its socket fallback lists none), then C(NET/Socket : Using), then the channels."
  - "A channel C(via NET/<name>/<n>/GDRDMA) is GPUDirect RDMA, whatever the network's name
    (C(via NET/IB/0/GDRDMA), C(via NET/IBext_v8/0/GDRDMA)), also with the number of the proxy
    rank that carries it in parentheses after the device's, as newer NCCL prints it."
  - "A launcher's per-line prefix (Slurm's C( 0: ), mpirun's C([1,0]<stdout>:)) is taken off
    first; MPI's warnings and other lines are ignored. Rows with and without the C(root)
    column (nccl-tests 2.13 and later, and before) are read, cells in exponent form (C(2e+06))
    too; C(#wrong) C(N/A) (a run with C(-c 0)) is null."
  - Output without a results table fails quoting the C(NCCL WARN) lines and nccl-tests' own
    failure lines (C(Test NCCL failure ...), C(Test CUDA failure ...), C(Test failure ...),
    C(Invalid number of GPUs ...)), then its last lines; a run that says C(# Collective test
    starting) but never C(# Collective test concluded), or a table without its
    C(# Avg bus bandwidth) line, fails as cut short.
  - With O(format=json) the input is the file nccl-tests writes with C(-J file.json) (nccl-tests
    2.19, format version 3) and the result has the same keys; what only NCCL's own lines say is
    unknown there (RV(_value.transport) and RV(_value.gpudirect) null, RV(_value.devices) and
    RV(_value.warnings) empty). Anything else (not JSON, no C(version), another version, no
    C(results)) fails saying what arrived, and a non-empty C(errors) entry fails quoting it.
options:
  _input:
    description: The output of the nccl-tests run (e.g. the launcher pod's log), or with
      O(format=json) the content of its C(-J) file.
    type: str
    required: true
  format:
    description: What O(_input) is, C(text) (the output nccl-tests prints) or C(json) (the file
      of C(-J file.json)).
    type: str
    choices: [text, json]
    default: text
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

- name: Read the file that all_reduce_perf -J wrote
  ansible.builtin.set_fact:
    nccl_run: "{{ lookup('ansible.builtin.file', 'allreduce.json') | gpudirect.rdma.nccl_results(format='json') }}"
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
    max_busbw_gbps:
      description: The same in Gb/s (the unit of every bandwidth in the report).
      type: float
    ranks:
      description: Ranks the header lists (null when it lists none); with O(format=json), the
        ranks of C(config.devices).
      type: int
    nodes:
      description: Distinct hosts of those ranks (null when none is listed).
      type: int
    devices:
      description: "The NICs NCCL used, as its C(NET/IB : Using) lines name them, e.g.
        C(mlx5_0:1); empty over sockets, when NCCL_DEBUG was too quiet, and with O(format=json)."
      type: list
      elements: str
    transport:
      description: The network NCCL used, as it names it; C(IB) (InfiniBand or RoCE verbs),
        C(Socket) (NCCL fell back to TCP), a net plugin's name such as C(IBext_v8) or
        C(AWS Libfabric), or null when the log does not say (and with O(format=json)). Only
        C(Socket) counts as the socket fallback.
      type: str
    gpudirect:
      description: True when the network channels run C(/GDRDMA) (or NCCL reports GPU Direct RDMA
        enabled), false when they run without it or over sockets, null when NCCL_DEBUG was too
        quiet to tell (and with O(format=json)).
      type: bool
    wrong:
      description: The sum of C(#wrong) (C(nwrong) in JSON) over every row and side; when that is
        0, the C(# Out of bounds values) count (C(out_of_bounds.count)); 0 when none was checked.
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
    parse_json,
)

_PARSERS = {"text": parse, "json": parse_json}


def nccl_results(text, format="text"):
    args = validate(
        DOCUMENTATION, "gpudirect.rdma.nccl_results", {"_input": text, "format": format}
    )
    try:
        return _PARSERS[args["format"]](args["_input"])
    except NcclError as error:
        raise AnsibleFilterError(f"gpudirect.rdma.nccl_results: {error}") from error


class FilterModule:
    def filters(self):
        return {"nccl_results": nccl_results}
