"""gpudirect.rdma.verify_baseline: the ConfigMap that keeps a verify run as the cluster's
baseline."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_baseline
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.2.0
short_description: Keep a verify run as the cluster's baseline, in a ConfigMap
description:
  - Takes a verify report (P(gpudirect.rdma.verify_report#filter)'s result, with
    P(gpudirect.rdma.verify_nccl_report#filter)'s runs when the NCCL test ran) and returns the
    ConfigMap C(gpudirect-rdma-verify-baseline) in the network's namespace that keeps it
    (labelled as the verify test's; data key C(baseline.json)).
  - "What is kept: the run (date, cluster, inventory, versions), and per node group each rail's
    pair (nodes, NIC, average bandwidth, how GPU memory moved, each side's GPU next to the NIC and
    their relation, each side's port rate) and each NCCL run (nodes, ranks, bus bandwidth,
    transport, GPUDirect). P(gpudirect.rdma.verify_compare#filter) judges a later run against it."
options:
  _input:
    description: The verify report to keep.
    type: dict
    required: true
  plan:
    description: The plan (M(gpudirect.rdma.plan)); its network's namespace holds the ConfigMap.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Keep this run as the baseline
  gpudirect.rdma.apply:
    objects: ["{{ verify_result | gpudirect.rdma.verify_baseline(plan=gpudirect_rdma_plan) }}"]
"""

RETURN = r"""
_value:
  description: The ConfigMap.
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.baseline import (  # noqa: E402
    config_map,
)


def verify_baseline(report, plan):
    args = validate(
        DOCUMENTATION, "gpudirect.rdma.verify_baseline", {"_input": report, "plan": plan}
    )
    try:
        return config_map(args["plan"], args["_input"])
    except (KeyError, TypeError) as error:
        raise AnsibleFilterError(
            "gpudirect.rdma.verify_baseline: expected a verify report (pairs with rail and nodes) "
            f"and the plan (network_namespace); {type(error).__name__}: {error}"
        ) from error


class FilterModule:
    def filters(self):
        return {"verify_baseline": verify_baseline}
