"""gpudirect.rdma.perftest_results: ib_write_bw output in, numbers out."""

from __future__ import annotations

DOCUMENTATION = r"""
name: perftest_results
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Parse the output of perftest's ib_write_bw
description:
  - Reads the result row of C(ib_write_bw) (server or client side) and the test's header and CUDA
    lines, and returns the bandwidth, message rate, link type, device, GID index, and whether GPU
    memory was really used.
  - With C(--report_gbits) the row is in Gb/s; without it perftest reports MiB/s, converted here to
    Gb/s (MiB/s x 2^20 x 8 / 10^9).
  - C(gpu_memory) is C(dmabuf) when perftest registered the GPU buffer through DMA-BUF
    (C(using DMA-BUF for GPU buffer), C(ibv_reg_dmabuf_mr)), C(peermem) when it registered a GPU
    buffer without DMA-BUF (nvidia-peermem), C(none) when it used host memory.
  - Output without a result row (connection refused, wrong GID index, CUDA error) fails with a
    message that says what the output suggests and quotes its last lines.
options:
  _input:
    description: The standard output of C(ib_write_bw), e.g. a pod's log.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Read the client's log
  kubernetes.core.k8s_log:
    namespace: default
    name: gpudirect-rdma-verify-client-0
  register: client_log

- name: Parse it
  ansible.builtin.set_fact:
    result: "{{ client_log.log | gpudirect.rdma.perftest_results }}"

- name: Average bandwidth
  ansible.builtin.debug:
    msg: "{{ result.bw_average_gbps }} Gb/s through {{ result.device }} ({{ result.gpu_memory }})"
"""

RETURN = r"""
_value:
  description: The numbers of the run.
  type: dict
  contains:
    bw_average_gbps:
      description: Average bandwidth in Gb/s.
      type: float
    bw_peak_gbps:
      description: Peak bandwidth in Gb/s (perftest reports 0 with C(-D), a duration).
      type: float
    msg_rate_mpps:
      description: Message rate in millions of packets per second.
      type: float
    bytes:
      description: Message size.
      type: int
    iterations:
      description: Messages sent.
      type: int
    link_type:
      description: C(Ethernet) (RoCE) or C(IB).
      type: str
    device:
      description: The RDMA device, e.g. C(mlx5_2).
      type: str
    gid_index:
      description: The GID index used (RoCE), null on InfiniBand.
      type: int
    gpu_memory:
      description: C(dmabuf), C(peermem) or C(none).
      type: str
    cuda_device:
      description: The CUDA device perftest picked, null without CUDA.
      type: int
    gpu_name:
      description: Its name, null without CUDA.
      type: str
    side:
      description: C(server) or C(client).
      type: str
    transport:
      description: Transport type as perftest prints it.
      type: str
    qps:
      description: Number of queue pairs.
      type: int
    mtu:
      description: MTU in bytes.
      type: int
    connection:
      description: Connection type, e.g. C(RC).
      type: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.perftest import (  # noqa: E402
    PerftestError,
    parse,
)


def perftest_results(output):
    if not isinstance(output, str):
        raise AnsibleFilterError(
            "gpudirect.rdma.perftest_results: expected the text of an ib_write_bw run (_input); "
            f"got {type(output).__name__}"
        )
    args = validate(DOCUMENTATION, "gpudirect.rdma.perftest_results", {"_input": output})
    try:
        return parse(args["_input"])
    except PerftestError as error:
        raise AnsibleFilterError(f"gpudirect.rdma.perftest_results: {error}") from error


class FilterModule:
    def filters(self):
        return {"perftest_results": perftest_results}
