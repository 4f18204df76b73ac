"""gpudirect.rdma.verify_report: the bandwidth test's logs in, a verdict per pair out."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_report
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Judge a GPUDirect bandwidth test run from its pods' logs
description:
  - Takes the test pods' logs by pod name (the names P(gpudirect.rdma.verify_pods#filter) gives).
  - Splits each pod's log into its rails (the script prints each rail's C(ib_write_bw) output
    between markers), the GPU the pod chose for each rail and how (from its
    C(nvidia-smi topo -m) matrix, by the rule of P(gpudirect.rdma.gpu_nic_topology#filter)'s
    code), and the matrix itself. The pair is judged on the GPU the pod used and the relation
    the pod read; the collection's own reading of the printed matrix must agree, or the pair
    fails saying that the two readings differ.
  - Parses each pair's server and client output with P(gpudirect.rdma.perftest_results#filter)
    and judges the pair. It passes when both sides hold a result, the client's average bandwidth
    reaches the pair's floor (O(min_gbps), or derived from the ports' rates), both sides registered GPU memory the way the plan says (DMA-BUF or
    nvidia-peermem), and on both sides the GPU the rail used shares a PCIe switch with the
    rail's NIC (C(PIX) or C(PXB)). A path through C(PHB), C(NODE) or C(SYS), or a pod that
    printed no matrix, fails the pair unless O(allow_cross_switch).
  - Judges the host checks from the facts each pod printed (see RV(_value.host_checks)); a failed
    one fails the report.
  - Returns the pairs with their numbers and problems, an overall verdict, and a table to print.
options:
  _input:
    description: The logs of the test pods, by pod name; a missing log counts as empty.
    type: dict
    required: true
  pairs:
    description:
      - For each node group of the plan, in its order, the node its servers ran on and the node
        its clients ran on (one such pair without node groups).
    type: list
    elements: list
    required: true
  plan:
    description: The plan from M(gpudirect.rdma.plan).
    type: dict
    required: true
  min_gbps:
    description:
      - Smallest acceptable average bandwidth of a pair, in Gb/s.
      - Null (the default) derives each pair's floor from the port rate its pods read
        (C(/sys/class/infiniband/<dev>/ports/1/rate)), 80% of the slower side's rate, or
        100 Gb/s when neither side read one. Each pair says which floor applied and why
        (RV(_value.pairs[].floor)).
    type: float
  nic_devices:
    description:
      - The NicDevice objects of the NIC configuration (C(gpudirect_rdma_nic_configuration)); the
        report shows those of the tested nodes (type, firmware, ports, configuration state).
    type: list
    elements: dict
    default: []
  allow_cross_switch:
    description:
      - Accept a pair whose GPU reaches its NIC through the CPU (C(PHB), C(NODE), C(SYS)) or
        whose path is unknown; the report lists it as a warning instead of a problem.
    type: bool
    default: false
  run:
    description:
      - What the run was, for the report's readers; the verify role gives C(date) (UTC),
        C(cluster) (the API server), C(inventory) (its sources) and C(versions) (the operators'
        installed CSVs by package). The collection's own version is added to C(versions).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Judge the run
  ansible.builtin.set_fact:
    verify_result: >-
      {{ logs | gpudirect.rdma.verify_report(plan=rdma.plan, pairs=[['worker-0', 'worker-1']],
         min_gbps=150) }}
"""

RETURN = r"""
_value:
  description: The verdict.
  type: dict
  contains:
    run:
      description:
        - O(run) with the collection's version in C(versions), and C(groups), each node group's
          C(name), C(method), C(fabric) and the C(nodes) tested.
      type: dict
    passed:
      description: Every pair passed.
      type: bool
    pairs:
      description: Per rail (of each node group, named by C(group) when there are several), the
        nodes, the client's numbers (C(bw_average_gbps), C(bw_peak_gbps), C(msg_rate_mpps),
        C(device), C(link_type), C(gid_index), C(gpu_memory)), the ports' rates each side read
        (C(server_port_gbps), C(client_port_gbps); null when unknown), C(passed), C(problems)
        and C(warnings).
      type: list
      elements: dict
      contains:
        floor_gbps:
          description: The smallest average bandwidth the pair had to reach, in Gb/s.
          type: float
        floor:
          description: Which floor applied and why (C(verify_min_gbps), or 80% of the slower
            port's rate, or the default when no rate was read).
          type: str
        server_gpu:
          description: The GPU the server side of the rail used and its path to the rail's NIC.
          type: dict
          contains:
            gpu:
              description: The GPU's index (C(GPU<n>) of C(nvidia-smi topo -m), the CUDA device
                with C(CUDA_DEVICE_ORDER=PCI_BUS_ID)); null when the pod never chose one.
              type: int
            bus_id:
              description: The GPU's PCI bus id as C(nvidia-smi) prints it (C(00000000:18:00.0)).
              type: str
            nic:
              description: The rail's RDMA device (C(mlx5_0)).
              type: str
            relation:
              description: C(PIX), C(PXB), C(PHB), C(NODE), C(SYS) as the pod read it, or
                C(unknown) where it read no matrix or the NIC is not in it.
              type: str
            source:
              description: How the pod chose the GPU, C(matrix) (the closest in
                C(nvidia-smi topo -m)), C(numa) (the first on the NIC's NUMA node, no matrix to
                read) or C(first) (GPU 0, nothing to go by).
              type: str
            pf:
              description: The PF's RDMA device of a VF that the matrix was searched by; absent
                for a PF.
              type: str
            shared_with:
              description: The rail that took the GPU first, when every GPU as close was
                taken; absent otherwise.
              type: int
            why:
              description: Why the path is unknown, when it is.
              type: str
            disagreement:
              description: What the collection reads in the pod's matrix where it differs from
                what the pod decided (the pair then fails).
              type: str
        client_gpu:
          description: The same for the client side.
          type: dict
    nic_devices:
      description: The tested nodes' NICs as the NIC configuration daemon reports them (C(node),
        C(name), C(type), C(firmware), C(ports) as pci/netdev/RDMA device, C(configuration), the
        reason of C(ConfigUpdateInProgress)); empty without the NIC configuration.
      type: list
      elements: dict
    host_checks:
      description:
        - The host checks of every tested node, from the facts its pod printed before the traffic
          (kernel command line, GPU driver flavour, nvidia_peermem, per rail the port state, the
          MTU and the ACS control of the PCIe bridges between the rail's GPU and NIC).
        - Each is C(node), C(check) (C(acs), C(iommu), C(gpu-driver), C(peermem), C(link),
          C(mtu), or C(facts) when the pod printed none), C(rail) for a rail's, C(status)
          (C(ok), C(warning), C(failure), C(unknown)), C(detail), C(fix) and C(reference); and
          C(group) with node groups. A C(failure) fails the report.
      type: list
      elements: dict
    heading:
      description: A line or two for people above the table, saying what the run was (RV(_value.run)).
      type: list
      elements: str
    table:
      description: Lines of a table for people.
      type: list
      elements: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.about import (  # noqa: E402
    collection_version,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.judge import (  # noqa: E402
    host_findings,
    report,
    runs_from_logs,
)


def verify_report(
    logs, plan, pairs, min_gbps=None, nic_devices=None, allow_cross_switch=False, run=None
):
    args = validate(
        DOCUMENTATION,
        "gpudirect.rdma.verify_report",
        {
            "_input": logs,
            "plan": plan,
            "pairs": pairs,
            "min_gbps": min_gbps,
            "nic_devices": nic_devices if nic_devices is not None else [],
            "allow_cross_switch": allow_cross_switch,
            "run": run if run is not None else {},
        },
    )
    given = args["run"]
    versions = {"gpudirect.rdma": collection_version(), **(given.get("versions") or {})}
    try:
        runs = runs_from_logs(args["plan"], args["_input"], args["pairs"])
        return report(
            args["plan"],
            runs,
            args["min_gbps"],
            args["nic_devices"],
            allow_cross_switch=args["allow_cross_switch"],
            findings=host_findings(args["plan"], args["_input"], args["pairs"]),
            context={**given, "versions": versions},
        )
    except ValueError as error:
        raise AnsibleFilterError(f"gpudirect.rdma.verify_report: {error}") from error
    except (KeyError, IndexError, TypeError) as error:
        raise AnsibleFilterError(
            f"gpudirect.rdma.verify_report: expected the plan of gpudirect.rdma.plan and logs by "
            f"pod name; {type(error).__name__}: {error}"
        ) from error


class FilterModule:
    def filters(self):
        return {"verify_report": verify_report}
