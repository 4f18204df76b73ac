"""The NodeFeatureDiscovery instance, with Red Hat's values for GPUDirect RDMA."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    NFD,
    alm_example,
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
OPERAND_IMAGE_ENV = "NODE_FEATURE_DISCOVERY_IMAGE"
# The labels NFD then puts on nodes with an NVIDIA GPU, an NVIDIA (Mellanox) NIC.
GPU_LABEL = "feature.node.kubernetes.io/pci-10de.present"
NIC_LABEL = "feature.node.kubernetes.io/pci-15b3.present"


def operand_image_from_csv(csv: dict | None) -> str | None:
    """The operand image an NFD CSV ships: its alm-examples, else its operator's environment."""
    if not csv:
        return None
    example = alm_example(csv, "NodeFeatureDiscovery") or {}
    image = example.get("spec", {}).get("operand", {}).get("image")
    if image:
        return image
    deployments = csv.get("spec", {}).get("install", {}).get("spec", {}).get("deployments", [])
    for deployment in deployments:
        for container in (
            deployment.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
        ):
            for env in container.get("env") or []:
                if env.get("name") == OPERAND_IMAGE_ENV and env.get("value"):
                    return env["value"]
    return None


def node_feature_discovery(plan: dict, csv: dict | None = None) -> dict:
    settings = plan["nfd"]
    image = (
        settings["operand_image"]
        or operand_image_from_csv(csv)
        or settings["default_operand_image"]
    )
    return new_object(
        "nfd.openshift.io/v1",
        "NodeFeatureDiscovery",
        "nfd-instance",
        NFD,
        namespace=plan["operators"]["nfd"]["namespace"],
        spec={
            "instance": "",
            "operand": {"image": image, "servicePort": 12000},
            "prunerOnDelete": False,
            "topologyUpdater": False,
            "workerConfig": {"configData": WORKER_CONFIG},
        },
    )
