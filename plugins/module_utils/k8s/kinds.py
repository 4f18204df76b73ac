"""Every kind of object the collection creates, in the order uninstall removes them.

One list for everyone who needs to find the collection's objects by their labels: uninstall,
diagnostics and preflight. Each kind names the uninstall stage it belongs to.
"""

from __future__ import annotations

METHOD_COMPONENTS = ("shared-device", "host-device", "sriov-legacy")

# (apiVersion, kind, stage). Stages go in this order on uninstall; within a stage, kinds are
# deleted together and waited for together.
MANAGED_KINDS = (
    ("v1", "Pod", "test-pods"),
    ("mellanox.com/v1alpha1", "MacvlanNetwork", "networks"),
    ("mellanox.com/v1alpha1", "IPoIBNetwork", "networks"),
    ("mellanox.com/v1alpha1", "HostDeviceNetwork", "networks"),
    ("sriovnetwork.openshift.io/v1", "SriovNetwork", "networks"),
    ("sriovnetwork.openshift.io/v1", "SriovIBNetwork", "networks"),
    ("nv-ipam.nvidia.com/v1alpha1", "IPPool", "networks"),
    ("sriovnetwork.openshift.io/v1", "SriovNetworkNodePolicy", "node-policies"),
    # The GPU driver (and nvidia-peermem) goes before the network driver it builds on.
    ("nvidia.com/v1", "ClusterPolicy", "cluster-policy"),
    ("mellanox.com/v1alpha1", "NicClusterPolicy", "nic-cluster-policy"),
    ("sriovnetwork.openshift.io/v1", "SriovOperatorConfig", "sriov-operator-config"),
    ("nfd.openshift.io/v1", "NodeFeatureDiscovery", "nfd-instance"),
    ("operators.coreos.com/v1alpha1", "Subscription", "operators"),
    ("operators.coreos.com/v1", "OperatorGroup", "operators"),
    ("machineconfiguration.openshift.io/v1", "MachineConfig", "machine-configs"),
    ("v1", "Namespace", "namespaces"),
)


# The mirror registry's pull Secret, made from gpudirect_rdma_image_registry_username/_password.
REGISTRY_SECRET_NAME = "gpudirect-rdma-image-registry"  # noqa: S105 - a name, not a password

# Objects the collection makes under a fixed name in the namespaces of its operators, found by
# that name and never by listing their kind: listing Secrets would take the right to read every
# Secret of the cluster, while rbac/ grants this one name only. (stage, apiVersion, kind, name)
NAMED_OBJECTS = (
    # The pull Secret made from gpudirect_rdma_image_registry_username/_password goes with the
    # NicClusterPolicy whose components pull with it.
    ("nic-cluster-policy", "v1", "Secret", REGISTRY_SECRET_NAME),
)


def named_objects(stage: str) -> list[dict]:
    """The fixed-name objects of one uninstall stage, as apiVersion/kind/name dicts."""
    return [
        {"apiVersion": api_version, "kind": kind, "name": name}
        for object_stage, api_version, kind, name in NAMED_OBJECTS
        if object_stage == stage
    ]


def kinds(stage: str | None = None) -> list[dict]:
    """The managed kinds (of one stage), as apiVersion/kind dicts."""
    return [
        {"apiVersion": api_version, "kind": kind}
        for api_version, kind, kind_stage in MANAGED_KINDS
        if stage is None or kind_stage == stage
    ]


# What applying a step removes when the plan no longer has it: the collection's objects of these
# stages' kinds carrying these component labels. The methods share one scope, so that switching
# method leaves nothing of the previous one.
_PRUNED = {
    "machine-config": (("machine-configs",), "gpudirect.rdma/component=machine-config"),
    **dict.fromkeys(
        METHOD_COMPONENTS,
        (
            ("networks", "node-policies"),
            f"gpudirect.rdma/component in ({','.join(METHOD_COMPONENTS)})",
        ),
    ),
}


def prune_scope(component: str) -> dict | None:
    """The kinds and label selector of what applying component prunes (the apply module's
    prune option), or None for a component that prunes nothing (the operators)."""
    if component not in _PRUNED:
        return None
    stages, label_selector = _PRUNED[component]
    return {
        "kinds": [kind for stage in stages for kind in kinds(stage)],
        "label_selector": label_selector,
    }
