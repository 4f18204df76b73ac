"""gpudirect.rdma.verify_report: the bandwidth test's logs in, a verdict per pair out."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_report
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Judge a GPUDirect bandwidth test run from its pods' logs
description:
  - Takes the test pods' logs by pod name (the names P(gpudirect.rdma.verify_pods#filter) gives).
  - Parses each pair's server and client logs with P(gpudirect.rdma.perftest_results#filter) and
    judges the pair. It passes when both logs hold a result, the client's average bandwidth
    reaches O(min_gbps), and both sides registered GPU memory the way the plan says (DMA-BUF or
    nvidia-peermem).
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
    description: Smallest acceptable average bandwidth of a pair, in Gb/s.
    type: float
    required: true
  nic_devices:
    description:
      - The NicDevice objects of the NIC configuration (C(gpudirect_rdma_nic_configuration)); the
        report shows those of the tested nodes (type, firmware, ports, configuration state).
    type: list
    elements: dict
    default: []
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
    passed:
      description: Every pair passed.
      type: bool
    pairs:
      description: Per rail (of each node group, named by C(group) when there are several), the
        nodes, the client's numbers (C(bw_average_gbps), C(bw_peak_gbps), C(msg_rate_mpps),
        C(device), C(link_type), C(gid_index), C(gpu_memory)), C(passed) and C(problems).
      type: list
      elements: dict
    nic_devices:
      description: The tested nodes' NICs as the NIC configuration daemon reports them (C(node),
        C(name), C(type), C(firmware), C(ports) as pci/netdev/RDMA device, C(configuration), the
        reason of C(ConfigUpdateInProgress)); empty without the NIC configuration.
      type: list
      elements: dict
    table:
      description: Lines of a table for people.
      type: list
      elements: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify import (  # noqa: E402
    report,
    runs_from_logs,
)


def verify_report(logs, plan, pairs, min_gbps, nic_devices=None):
    args = validate(
        DOCUMENTATION,
        "gpudirect.rdma.verify_report",
        {
            "_input": logs,
            "plan": plan,
            "pairs": pairs,
            "min_gbps": min_gbps,
            "nic_devices": nic_devices if nic_devices is not None else [],
        },
    )
    try:
        runs = runs_from_logs(args["plan"], args["_input"], args["pairs"])
        return report(args["plan"], runs, args["min_gbps"], args["nic_devices"])
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
