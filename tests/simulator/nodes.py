"""Fake worker Nodes: registered as a kubelet would register them, with the labels NFD puts on
nodes that have NVIDIA GPUs and NVIDIA (Mellanox) NICs.

Each node also carries the hardware it pretends to have in the annotation HARDWARE_ANNOTATION
(JSON: GPUs, and NICs with name, link type, MAC, NIC type (PCI device ID; an annotation
without `nicType` means DEFAULT_NIC_TYPE), the VFs the firmware allows, the PCIe path to the
nearest GPU (`gpuPath`, PIX when absent) and the port's rate (`rateGbps`, DEFAULT_RATE_GBPS when
absent)), which later simulated operators and the test pods' made-up node (testbed.py) read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.simulator.core import now

HARDWARE_ANNOTATION = "simulator.gpudirect.rdma/hardware"
# Every node the simulator registers carries this label, so tests can find and remove them.
FAKE_NODE_LABEL = "simulator.gpudirect.rdma/node"

# What NFD, configured as Red Hat documents for GPUDirect RDMA, labels such a node with.
# The RHCOS build every fake node runs (its osImage, NFD's OSTREE_VERSION label, and the tag
# of the Driver Toolkit ImageStream that openshift.py keeps).
RHCOS = "9.6.20251015-0"
OSTREE_LABEL = "feature.node.kubernetes.io/system-os_release.OSTREE_VERSION"
NFD_GPU_NIC_LABELS = {
    # NFD's system source: the RHCOS build the drivers are built for (with the Driver Toolkit).
    OSTREE_LABEL: RHCOS,
    "feature.node.kubernetes.io/pci-15b3.present": "true",
    "feature.node.kubernetes.io/pci-15b3.sriov.capable": "true",
    "feature.node.kubernetes.io/pci-10de.present": "true",
    "feature.node.kubernetes.io/rdma.capable": "true",
    "feature.node.kubernetes.io/network-sriov.capable": "true",
}


# The NIC type a NIC is unless told otherwise: ConnectX-7 (its PCI device ID).
DEFAULT_NIC_TYPE = "1021"
# The port rate a NIC has unless told otherwise (HDR, 200 Gb/s).
DEFAULT_RATE_GBPS = 200


@dataclass(frozen=True)
class Nic:
    name: str
    link_type: str = "eth"  # eth | ib
    mac: str = ""
    total_vfs: int = 0  # 0: what the NIC's firmware allows by default (16 on IB, 127 on Ethernet)
    nic_type: str = DEFAULT_NIC_TYPE  # PCI device ID: 101d ConnectX-6 Dx, 1021 ConnectX-7, ...
    # The PCIe path to the GPU nearest to the NIC in `nvidia-smi topo -m` (testbed.py): PIX (the
    # same switch), or PHB, NODE, SYS for a NIC on a root port of its own.
    gpu_path: str = "PIX"
    # The port's rate in Gb/s, as /sys/class/infiniband/<dev>/ports/1/rate says it (testbed.py).
    rate_gbps: int = DEFAULT_RATE_GBPS


@dataclass(frozen=True)
class Hardware:
    gpus: int = 8
    nics: tuple[Nic, ...] = field(default_factory=lambda: (Nic("ens8f0np0"),))

    def as_annotation(self) -> str:
        return json.dumps(
            {
                "gpus": self.gpus,
                "nics": [
                    {
                        "name": n.name,
                        "linkType": n.link_type,
                        "mac": n.mac,
                        "nicType": n.nic_type,
                        **({"totalVfs": n.total_vfs} if n.total_vfs else {}),
                        **({"gpuPath": n.gpu_path} if n.gpu_path != "PIX" else {}),
                        **({"rateGbps": n.rate_gbps} if n.rate_gbps != DEFAULT_RATE_GBPS else {}),
                    }
                    for n in self.nics
                ],
            },
            sort_keys=True,
        )


def _mac(index: int, port: int) -> str:
    return f"b8:3f:d2:{(index >> 8) & 0xFF:02x}:{index & 0xFF:02x}:{port:02x}"


def node_object(
    name: str, index: int, hardware: Hardware, nfd_labels: bool, labels: dict | None = None
) -> dict:
    nics = tuple(
        Nic(
            n.name,
            n.link_type,
            n.mac or _mac(index, port),
            n.total_vfs,
            n.nic_type,
            n.gpu_path,
            n.rate_gbps,
        )
        for port, n in enumerate(hardware.nics)
    )
    hardware = Hardware(hardware.gpus, nics)
    extra = labels or {}
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node-role.kubernetes.io/worker": "",
        FAKE_NODE_LABEL: "true",
    }
    if nfd_labels:
        labels.update(NFD_GPU_NIC_LABELS)
    labels.update(extra)  # a node group's labels, say
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {HARDWARE_ANNOTATION: hardware.as_annotation()},
        },
        "spec": {},
    }


def node_status() -> dict:
    stamp = now()
    resources = {"cpu": "64", "memory": "512Gi", "pods": "250", "ephemeral-storage": "500Gi"}
    return {
        "capacity": resources,
        "allocatable": resources,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status (simulated)",
                "lastHeartbeatTime": stamp,
                "lastTransitionTime": stamp,
            }
        ],
        "addresses": [],
        "nodeInfo": {
            "architecture": "amd64",
            "operatingSystem": "linux",
            "osImage": f"Red Hat Enterprise Linux CoreOS {RHCOS} (Plow)",
            "kernelVersion": "5.14.0-simulated",
            "containerRuntimeVersion": "cri-o://simulated",
            "kubeletVersion": "v1.35.4",
            "kubeProxyVersion": "",
            "bootID": "",
            "machineID": "",
            "systemUUID": "",
        },
    }


def remove_nodes(api_client: client.ApiClient) -> list[str]:
    """Delete every node the simulator registered; return their names."""
    core = client.CoreV1Api(api_client)
    names = [
        n.metadata.name for n in core.list_node(label_selector=f"{FAKE_NODE_LABEL}=true").items
    ]
    for name in names:
        core.delete_node(name)
    return names


def register_nodes(
    api_client: client.ApiClient,
    count: int = 2,
    *,
    prefix: str = "worker",
    hardware: Hardware | None = None,
    nfd_labels: bool = True,
    labels: dict | None = None,
) -> list[str]:
    """Create count Ready worker nodes (prefix-0, prefix-1, ...), with labels beside the usual
    ones, and return their names. Nodes that already exist are left as they are."""
    core = client.CoreV1Api(api_client)
    hardware = hardware or Hardware()
    names = []
    for index in range(count):
        name = f"{prefix}-{index}"
        try:
            core.create_node(node_object(name, index, hardware, nfd_labels, labels))
        except ApiException as error:
            if error.status != 409:
                raise
        else:
            core.patch_node_status(name, {"status": node_status()})
        names.append(name)
    return names


def nic_type_of(nic: dict) -> str:
    """The NIC type (PCI device ID) of a NIC of a hardware annotation."""
    return str(nic.get("nicType") or DEFAULT_NIC_TYPE)


def total_vfs_of(nic: dict) -> int:
    """The VFs a NIC of a hardware annotation allows (its firmware's default when not given)."""
    return int(nic.get("totalVfs") or (16 if nic["linkType"] == "ib" else 127))
