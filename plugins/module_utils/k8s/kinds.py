"""The resources of the kinds the collection reads and writes: their plural names and whether they
live in a namespace, so that a request needs no discovery first.

The facts come from the kinds' CRDs (tests/unit compares every entry with the real CRDs under
../shared/crds) and from the API server itself (tests/integration compares every entry with the
discovery documents of the local control plane). A kind missing here is discovered on first use,
one request per group version.
"""

from __future__ import annotations

# (apiVersion, kind) -> (plural, namespaced)
RESOURCES: dict[tuple[str, str], tuple[str, bool]] = {
    ("v1", "ConfigMap"): ("configmaps", True),
    ("v1", "Event"): ("events", True),
    ("v1", "Namespace"): ("namespaces", False),
    ("v1", "Node"): ("nodes", False),
    ("v1", "Pod"): ("pods", True),
    ("v1", "Secret"): ("secrets", True),
    ("v1", "Service"): ("services", True),
    ("apps/v1", "DaemonSet"): ("daemonsets", True),
    ("config.openshift.io/v1", "ClusterVersion"): ("clusterversions", False),
    ("configuration.net.nvidia.com/v1alpha1", "NicConfigurationTemplate"): (
        "nicconfigurationtemplates",
        True,
    ),
    ("configuration.net.nvidia.com/v1alpha1", "NicDevice"): ("nicdevices", True),
    ("image.openshift.io/v1", "ImageStream"): ("imagestreams", True),
    ("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition"): (
        "network-attachment-definitions",
        True,
    ),
    ("machineconfiguration.openshift.io/v1", "MachineConfig"): ("machineconfigs", False),
    ("machineconfiguration.openshift.io/v1", "MachineConfigPool"): ("machineconfigpools", False),
    ("maintenance.nvidia.com/v1alpha1", "MaintenanceOperatorConfig"): (
        "maintenanceoperatorconfigs",
        True,
    ),
    ("maintenance.nvidia.com/v1alpha1", "NodeMaintenance"): ("nodemaintenances", True),
    ("mellanox.com/v1alpha1", "HostDeviceNetwork"): ("hostdevicenetworks", False),
    ("mellanox.com/v1alpha1", "IPoIBNetwork"): ("ipoibnetworks", False),
    ("mellanox.com/v1alpha1", "MacvlanNetwork"): ("macvlannetworks", False),
    ("mellanox.com/v1alpha1", "NicClusterPolicy"): ("nicclusterpolicies", False),
    ("mellanox.com/v1alpha1", "NicNodePolicy"): ("nicnodepolicies", False),
    ("monitoring.coreos.com/v1", "PrometheusRule"): ("prometheusrules", True),
    ("monitoring.coreos.com/v1", "ServiceMonitor"): ("servicemonitors", True),
    ("nfd.k8s-sigs.io/v1alpha1", "NodeFeature"): ("nodefeatures", True),
    ("nfd.openshift.io/v1", "NodeFeatureDiscovery"): ("nodefeaturediscoveries", True),
    ("nv-ipam.nvidia.com/v1alpha1", "IPPool"): ("ippools", True),
    ("nvidia.com/v1", "ClusterPolicy"): ("clusterpolicies", False),
    ("operators.coreos.com/v1", "OperatorGroup"): ("operatorgroups", True),
    ("operators.coreos.com/v1alpha1", "CatalogSource"): ("catalogsources", True),
    ("operators.coreos.com/v1alpha1", "ClusterServiceVersion"): (
        "clusterserviceversions",
        True,
    ),
    ("operators.coreos.com/v1alpha1", "InstallPlan"): ("installplans", True),
    ("operators.coreos.com/v1alpha1", "Subscription"): ("subscriptions", True),
    ("operators.coreos.com/v2", "OperatorCondition"): ("operatorconditions", True),
    ("packages.operators.coreos.com/v1", "PackageManifest"): ("packagemanifests", True),
    ("sriovnetwork.openshift.io/v1", "SriovIBNetwork"): ("sriovibnetworks", True),
    ("sriovnetwork.openshift.io/v1", "SriovNetwork"): ("sriovnetworks", True),
    ("sriovnetwork.openshift.io/v1", "SriovNetworkNodePolicy"): ("sriovnetworknodepolicies", True),
    ("sriovnetwork.openshift.io/v1", "SriovNetworkNodeState"): ("sriovnetworknodestates", True),
    ("sriovnetwork.openshift.io/v1", "SriovNetworkPoolConfig"): ("sriovnetworkpoolconfigs", True),
    ("sriovnetwork.openshift.io/v1", "SriovOperatorConfig"): ("sriovoperatorconfigs", True),
}

# Kinds of which a get lists the object's namespace once instead (Reads), with the label selector
# of that list: the RDMA method steps' gates ask for one NetworkAttachmentDefinition per rail,
# all in the network namespace; a converged run reads each operator's CSV, which a list of its
# namespace brings in the first round of reads, without the Subscription that names it. The
# copies OLM makes of an AllNamespaces operator's CSV in every namespace (labelled olm.copiedFrom,
# OLM's v1alpha1.CopiedLabelKey) are left out: they can be many and large, and nothing here reads
# a copy.
LISTED_BY_NAMESPACE: dict[tuple[str, str], str | None] = {
    ("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition"): None,
    ("operators.coreos.com/v1alpha1", "ClusterServiceVersion"): "!olm.copiedFrom",
}
