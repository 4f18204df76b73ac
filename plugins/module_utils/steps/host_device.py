"""RDMA host device: a pod takes a whole PF (the SR-IOV device plugin in host-device mode), over
a HostDeviceNetwork per rail."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import networks

from .rdma_methods import IPPOOL, method_step

STEP = method_step(
    "host_device",
    "host-device",
    "RDMA host device",
    ((networks.API_VERSION, "HostDeviceNetwork"), IPPOOL),
)
