"""gpudirect.rdma.verify_pods: the bandwidth test's server or client pods, one per rail."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_pods
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: The GPUDirect bandwidth test pods of a plan
description:
  - One pod for the given role (a list of one), in the network's namespace, pinned to O(node),
    asking for O(gpus) C(nvidia.com/gpu) and one of each rail's RDMA resource, attached to every
    rail's network in rail order (C(k8s.v1.cni.cncf.io/networks); rail N is C(net<N+1>) in the
    pod), with C(IPC_LOCK).
  - The pod runs the collection's test script. For each rail it finds the RDMA device behind the
    rail's interface, the RoCE v2 GID index of its address on Ethernet (never assumed), and the
    GPU closest to that device in C(nvidia-smi topo -m) (C(PIX), then C(PXB), C(PHB), C(NODE),
    C(SYS); of GPUs as close, one no earlier rail took), then runs one
    C(ib_write_bw --use_cuda) per rail, all at once (with C(--use_cuda_dmabuf) in DMA-BUF mode;
    rail N on port O(port)+N). It prints the matrix and each rail's output between markers, which
    P(gpudirect.rdma.verify_report#filter) reads.
options:
  _input:
    description: The plan from M(gpudirect.rdma.plan).
    type: dict
    required: true
  role:
    description: C(server) pods first; C(client) pods once the servers' addresses are known.
    type: str
    choices: [server, client]
    required: true
  node:
    description: The node the pods run on.
    type: str
    required: true
  group:
    description:
      - The node group whose rails the pods test (its C(name) in C(gpudirect_rdma_node_groups));
        required when the plan has several. With several groups the pods' names carry the
        group's name and the label C(gpudirect.rdma/node-group).
    type: str
  gpus:
    description:
      - How many GPUs the pod asks for, to choose each rail's GPU from; the node's whole count
        lets every rail take the GPU on its NIC's PCIe switch.
    type: int
    default: 1
  servers:
    description:
      - For clients, the running server pods (as M(gpudirect.rdma.read) or
        M(kubernetes.core.k8s_info) return them); the client's rail N connects to the server's
        C(net<N+1>) address of its C(k8s.v1.cni.cncf.io/network-status) annotation.
    type: list
    elements: dict
    default: []
  image:
    description: Image with perftest built with CUDA. Default the verify role's C(verify_image).
    type: str
  perftest:
    description: Path of C(ib_write_bw) in the image. Default the verify role's C(verify_perftest).
    type: str
  duration:
    description: Seconds of traffic (C(-D)). Default the verify role's C(verify_duration).
    type: int
  size:
    description: Message size in bytes (C(-s)). Default the verify role's C(verify_size).
    type: int
  qps:
    description: Queue pairs (C(-q)). Default the verify role's C(verify_qps).
    type: int
  port:
    description: TCP port of the test's out-of-band exchange (C(-p)). Default the verify role's C(verify_port).
    type: int
"""

EXAMPLES = r"""
- name: Server pods on the first node
  gpudirect.rdma.apply:
    objects: "{{ rdma.plan | gpudirect.rdma.verify_pods(role='server', node='worker-0') }}"
"""

RETURN = r"""
_value:
  description: Pod objects (one).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.settings import (  # noqa: E402
    with_role_defaults,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.pods import (  # noqa: E402
    client_pods,
    group_view,
    server_addresses,
    server_pods,
)


def verify_pods(plan, role, node, servers=None, group=None, gpus=1, **settings):
    """settings: image, perftest, duration, size, qps, port (see DOCUMENTATION)."""
    given = {
        "_input": plan,
        "role": role,
        "node": node,
        "servers": servers,
        "group": group,
        "gpus": gpus,
        **settings,
    }
    args = validate(DOCUMENTATION, "gpudirect.rdma.verify_pods", given)
    keys = ("image", "perftest", "duration", "size", "qps", "port")
    settings = with_role_defaults("verify", args, {key: f"verify_{key}" for key in keys})
    try:
        view = group_view(args["_input"], args["group"])
        if args["role"] == "server":
            return server_pods(view, args["node"], settings, args["gpus"])
        addresses = server_addresses(view, args["servers"])
        return client_pods(view, args["node"], settings, addresses, args["gpus"])
    except (KeyError, ValueError) as error:
        raise AnsibleFilterError(f"gpudirect.rdma.verify_pods: {error}") from error


class FilterModule:
    def filters(self):
        return {"verify_pods": verify_pods}
