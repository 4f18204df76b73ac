"""The NodeFeatureDiscovery instance, with Red Hat's values for GPUDirect RDMA."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    new_object,
)

# PCI classes 02 (network), 03 (display), 0200 (Ethernet), 0207 (InfiniBand), 12 (accelerator):
# NFD then labels nodes feature.node.kubernetes.io/pci-15b3.present and pci-10de.present.
WORKER_CONFIG = """\
core:
  sleepInterval: 60s
sources:
  pci:
    deviceClassWhitelist: ["02", "03", "0200", "0207", "12"]
    deviceLabelFields: ["vendor"]
"""
# The labels NFD then puts on nodes with an NVIDIA GPU, an NVIDIA (Mellanox) NIC.
GPU_LABEL = "feature.node.kubernetes.io/pci-10de.present"
NIC_LABEL = "feature.node.kubernetes.io/pci-15b3.present"


def node_feature_discovery(plan: dict) -> dict:
    """The instance; its operand image only where the inventory sets one. Left out, the NFD
    operator runs its own NODE_FEATURE_DISCOVERY_IMAGE (the CSV's), and moves the operand with it
    on every operator upgrade; a pinned image stays behind, which the operator reports with its
    OperandImagePinned condition (openshift/cluster-nfd-operator, getOperandImage in
    internal/controllers/nodefeaturediscovery_reconciler.go, and commit a314b315). So
    render.yml, which reads no CSV, writes what site.yml applies."""
    operand = {"servicePort": 12000}
    if plan["nfd"]["operand_image"]:
        operand = {"image": plan["nfd"]["operand_image"], **operand}
    return new_object(
        "nfd.openshift.io/v1",
        "NodeFeatureDiscovery",
        "nfd-instance",
        namespace=plan["operators"]["nfd"]["namespace"],
        spec={
            "instance": "",
            "operand": operand,
            "prunerOnDelete": False,
            "topologyUpdater": False,
            "workerConfig": {"configData": WORKER_CONFIG},
        },
    )
