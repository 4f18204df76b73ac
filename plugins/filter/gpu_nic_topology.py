"""gpudirect.rdma.gpu_nic_topology: `nvidia-smi topo -m` output in, GPU-NIC relations out."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gpu_nic_topology
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Read the GPU-NIC PCIe topology from nvidia-smi topo -m
description:
  - Turns the matrix C(nvidia-smi topo -m) prints into data, so each rail's NIC can be paired with
    the GPU closest to it. The cells may be separated by tabs, as nvidia-smi prints them, or by
    spaces, as a copy pasted from a terminal shows them.
  - NICs are named by their RDMA device (C(mlx5_5)), from the C(NIC Legend) below the matrix
    (C(NIC5 = mlx5_5)); an older matrix whose columns are the RDMA devices needs no legend.
  - "Relations, closest first: C(PIX) (at most one PCIe bridge: the same PCIe switch), C(PXB)
    (several bridges, no host bridge), C(PHB) (through the PCIe host bridge, the CPU), C(NODE)
    (between host bridges of one NUMA node), C(SYS) (across the NUMA interconnect)."
  - Output that is no such matrix, or is cut short (a row with fewer cells than the header, a
    device without its row, a NIC without its legend entry), fails with a message that says
    which.
options:
  _input:
    description: The standard output of C(nvidia-smi topo -m).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: The GPU next to each NIC
  ansible.builtin.debug:
    msg: "{{ item.name }}: GPU {{ item.gpus[0].index }} ({{ item.gpus[0].relation }})"
  loop: "{{ (topo_output | gpudirect.rdma.gpu_nic_topology).nics }}"
"""

RETURN = r"""
_value:
  description: The relations of every NIC and every GPU.
  type: dict
  contains:
    nics:
      description: Per NIC, in the matrix's order, its RDMA device name and the GPUs, closest
        first (among equals, by index).
      type: list
      elements: dict
      contains:
        name:
          description: The RDMA device, e.g. C(mlx5_5).
          type: str
        gpus:
          description: "C({index, relation}) per GPU: the GPU's index and its relation to the NIC
            (C(PIX), C(PXB), C(PHB), C(NODE) or C(SYS)), closest first."
          type: list
          elements: dict
    gpus:
      description: Per GPU, by index, the NICs closest first and its CPU and NUMA affinity.
      type: list
      elements: dict
      contains:
        index:
          description: The GPU's index (C(GPU3) is 3).
          type: int
        nics:
          description: C({name, relation}) per NIC, closest first (among equals, in the matrix's
            order).
          type: list
          elements: dict
        cpu_affinity:
          description: The CPUs nvidia-smi gives as the GPU's affinity, e.g. C(0-55,112-167); null
            when the matrix has no such column.
          type: str
        numa_affinity:
          description: The GPU's NUMA node as nvidia-smi prints it, e.g. C(0); null when absent.
          type: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.topology import (  # noqa: E402
    TopologyError,
    parse,
)


def gpu_nic_topology(text):
    args = validate(DOCUMENTATION, "gpudirect.rdma.gpu_nic_topology", {"_input": text})
    try:
        return parse(args["_input"])
    except TopologyError as error:
        raise AnsibleFilterError(f"gpudirect.rdma.gpu_nic_topology: {error}") from error


class FilterModule:
    def filters(self):
        return {"gpu_nic_topology": gpu_nic_topology}
