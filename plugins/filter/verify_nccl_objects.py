"""gpudirect.rdma.verify_nccl_objects: the multi-node NCCL test's Secret, Service and pods."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_nccl_objects
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: The objects of the NCCL all_reduce_perf test across nodes of a node group
description:
  - "All in the network's namespace, labelled C(gpudirect.rdma/component=verify), in apply order:
    a Secret C(gpudirect-rdma-verify-nccl-ssh) (C(Opaque)) holding O(ssh_key) and
    its public key; a headless Service C(gpudirect-rdma-verify-[<group>-]nccl), the workers'
    subdomain; one worker pod per node of O(nodes), in rank order, pinned to it, asking for
    O(gpus) of that node's C(nvidia.com/gpu) and one of each rail's RDMA resource, attached to
    every rail's network, with C(IPC_LOCK), running the image's SSH server on O(ssh_port) that
    accepts only the key; and a launcher pod on the first node (no GPU, no RDMA)."
  - The launcher takes the node group's published NCCL settings with C(envFrom) (the ConfigMap
    C(gpudirect-rdma-nccl[-<group>]) the bandwidth test wrote, what a training job gets), sets
    C(NCCL_DEBUG=INFO), waits until it can log in to every worker, and runs
    C(mpirun -np <GPUs> <test> -b <min_bytes> -e <max_bytes> -f 2 -g 1 -c 1), one process per
    GPU, passing every C(NCCL_*) setting to every rank. Its log holds the output between
    markers, which P(gpudirect.rdma.verify_nccl_report#filter) reads.
  - "The image needs C(/usr/sbin/sshd), C(ssh-keygen), C(mpirun) and nccl-tests built with
    MPI; the pods run as the image's user (root in the default image), so on OpenShift the
    namespace's ServiceAccount needs an SCC that allows it and C(IPC_LOCK)."
options:
  _input:
    description: The plan from M(gpudirect.rdma.plan).
    type: dict
    required: true
  group:
    description: The node group (its C(name)); required when the plan has several.
    type: str
  nodes:
    description: Two or more node names of the group, the launcher's first.
    type: list
    elements: str
    required: true
  gpus:
    description: Per node name, how many GPUs its worker asks for (one MPI process each).
    type: dict
    required: true
  ssh_key:
    description: An unencrypted OpenSSH private key (L(gpudirect.rdma.ssh_key,../lookup/ssh_key.py)).
    type: str
    required: true
    no_log: true
  image:
    description: Image with MPI, an SSH server and nccl-tests. Default the verify role's C(verify_nccl_image).
    type: str
  test:
    description: Path of C(all_reduce_perf) in the image. Default the verify role's C(verify_nccl_test).
    type: str
  min_bytes:
    description: Smallest message (C(-b)), bytes or with K, M, G. Default the verify role's C(verify_nccl_min_bytes).
    type: str
  max_bytes:
    description: Largest message (C(-e)). Default the verify role's C(verify_nccl_max_bytes).
    type: str
  iters:
    description: Iterations per size (C(-n)). Default the verify role's C(verify_nccl_iters).
    type: int
  ssh_port:
    description: Port of the workers' SSH servers. Default the verify role's C(verify_nccl_ssh_port).
    type: int
  timeout:
    description: Seconds the launcher waits for the workers' SSH servers. Default the verify role's C(verify_timeout).
    type: int
"""

EXAMPLES = r"""
- name: The NCCL test across four nodes
  gpudirect.rdma.apply:
    objects: >-
      {{ rdma.plan | gpudirect.rdma.verify_nccl_objects(nodes=four, gpus=gpus_by_node,
         ssh_key=lookup('gpudirect.rdma.ssh_key')) }}
  no_log: true
"""

RETURN = r"""
_value:
  description: The Secret, the Service, the worker pods and the launcher pod.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.nccl_test import (  # noqa: E402
    objects,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.settings import (  # noqa: E402
    with_role_defaults,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.pods import (  # noqa: E402
    group_view,
)

# Option -> the verify role's setting that holds its default.
_DEFAULTS = {
    "image": "verify_nccl_image",
    "test": "verify_nccl_test",
    "min_bytes": "verify_nccl_min_bytes",
    "max_bytes": "verify_nccl_max_bytes",
    "iters": "verify_nccl_iters",
    "ssh_port": "verify_nccl_ssh_port",
    "timeout": "verify_timeout",
}


def verify_nccl_objects(plan, nodes, gpus, ssh_key, group=None, **settings):
    given = {
        "_input": plan,
        "group": group,
        "nodes": nodes,
        "gpus": gpus,
        "ssh_key": ssh_key,
        **settings,
    }
    args = validate(DOCUMENTATION, "gpudirect.rdma.verify_nccl_objects", given)
    chosen = with_role_defaults("verify", args, _DEFAULTS)
    try:
        counts = {str(node): int(count) for node, count in args["gpus"].items()}
        view = group_view(args["_input"], args["group"])
        return objects(view, args["nodes"], counts, chosen, args["ssh_key"])
    except (KeyError, ValueError, TypeError) as error:
        raise AnsibleFilterError(f"gpudirect.rdma.verify_nccl_objects: {error}") from error


class FilterModule:
    def filters(self):
        return {"verify_nccl_objects": verify_nccl_objects}
