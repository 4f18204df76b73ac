"""RDMA shared device: every pod on a node shares the NIC's RDMA device (the NicClusterPolicy's
or the group's NicNodePolicy's RDMA shared device plugin), over a MacvlanNetwork (RoCE) or an
IPoIBNetwork (InfiniBand) per rail."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import networks

from .rdma_methods import IPPOOL, method_step

STEP = method_step(
    "shared_device",
    "shared-device",
    "RDMA shared device",
    (
        (networks.API_VERSION, "MacvlanNetwork"),
        (networks.API_VERSION, "IPoIBNetwork"),
        IPPOOL,
    ),
)
