"""Preflight findings from gathered facts, without a cluster: each check passes on a healthy
cluster and reports its error or warning when its condition is set up on purpose. A test
describes the cluster in a World (what each check looks at, compactly) that becomes the objects
preflight would have read (Facts)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import identity
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.preflight import (
    Facts,
    evaluate,
    summary,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import build_objects
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps.network_operator import (
    doca_streams,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.releases import (
    NETWORK_OPERATOR_RELEASES,
)
from tests.unit.inventories import NAMES, inputs, mixed_groups

OURS = {"app.kubernetes.io/managed-by": "gpudirect.rdma"}
# The RHCOS build the nodes run, which the Driver Toolkit has an image for.
RHCOS = "9.6.20251015-0"
NFD = {
    "feature.node.kubernetes.io/pci-15b3.present": "true",
    "feature.node.kubernetes.io/pci-10de.present": "true",
    "feature.node.kubernetes.io/system-os_release.OSTREE_VERSION": RHCOS,
}
SRIOV = "sriovnetwork.openshift.io/v1"
MELLANOX = "mellanox.com/v1alpha1"
NIC_CONFIGURATION = "configuration.net.nvidia.com/v1alpha1"
NFD_FEATURE = "nfd.k8s-sigs.io/v1alpha1"
OLM = "operators.coreos.com/v1alpha1"


def obj(api_version: str, kind: str, name: str, namespace=None, **rest) -> dict:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **rest}


@dataclass
class World:
    """A cluster as the checks see it."""

    api_error: str | None = None
    forbidden: str | None = None
    server: str = "https://api.example:6443"
    cluster_version: str | None = "4.20.8"
    openshift: bool = True
    olm: bool = True
    catalogs: dict = field(default_factory=dict)  # "ns/name" -> READY state, None if absent
    nodes: list = field(default_factory=list)  # {"name", "labels"}
    node_states: dict | None = None  # node -> [{"name", "linkType", "totalvfs"}]
    nic_devices: dict | None = None  # node -> [interface names]
    # node -> [(interface name, sriov_totalvfs)], as nfd-worker's NodeFeature lists them
    node_features: dict | None = None
    live: dict = field(default_factory=dict)  # identity of a planned object -> live object
    method_objects: list = field(default_factory=list)
    cluster_policies: list = field(default_factory=list)
    nic_node_policies: list = field(default_factory=list)
    nic_cluster_policy: dict | None = None
    pool_configs: list = field(default_factory=list)
    machine_config_pool: dict | None = None
    nic_config_devices: list | None = None  # {"name", "node", "type"}
    nic_config_templates: list = field(default_factory=list)
    maintenance_elsewhere: str | None = None  # "Subscription <namespace>/<name>"
    others: list = field(default_factory=list)  # any other object, as read
    # The tags of the Driver Toolkit's ImageStream (the RHCOS builds it has images for).
    driver_toolkit: tuple = (RHCOS, "latest")

    def facts(self, objects: list[dict]) -> Facts:
        """The objects preflight would have read of this cluster (objects: the plan's)."""
        if self.api_error or self.forbidden:
            return Facts(server=self.server, api_error=self.api_error, forbidden=self.forbidden)
        found = []
        if self.openshift:
            status = {"desired": {"version": self.cluster_version}}
            found.append(obj("config.openshift.io/v1", "ClusterVersion", "version", status=status))
        for where, state in self.catalogs.items():
            namespace, name = where.split("/")
            if state is not None:
                status = {"connectionState": {"lastObservedState": state}}
                found.append(obj(OLM, "CatalogSource", name, namespace, status=status))
        for node in self.nodes:
            found.append(obj("v1", "Node", node["name"]))
            found[-1]["metadata"]["labels"] = node["labels"]
            if node.get("os_image"):
                found[-1]["status"] = {"nodeInfo": {"osImage": node["os_image"]}}
        for node, interfaces in (self.node_states or {}).items():
            status = {"interfaces": interfaces}
            found.append(obj(SRIOV, "SriovNetworkNodeState", node, "sriov", status=status))
        for node, names in (self.nic_devices or {}).items():
            ports = [{"networkInterface": name} for name in names]
            status = {"node": node, "ports": ports}
            found.append(obj(NIC_CONFIGURATION, "NicDevice", f"{node}-nic", "nno", status=status))
        for node, interfaces in (self.node_features or {}).items():
            elements = [
                {"attributes": {"name": name, "operstate": "up", "sriov_totalvfs": str(vfs)}}
                for name, vfs in interfaces
            ]
            features = {"instances": {"network.device": {"elements": elements}}}
            feature = obj(
                NFD_FEATURE, "NodeFeature", node, "openshift-nfd", spec={"features": features}
            )
            feature["metadata"]["labels"] = {"nfd.node.kubernetes.io/node-name": node}
            found.append(feature)
        for device in self.nic_config_devices or []:
            status = {"node": device["node"], "type": device["type"]}
            found.append(obj(NIC_CONFIGURATION, "NicDevice", device["name"], "nno", status=status))
        planned = {identity(o): o for o in objects}
        for name, live in self.live.items():
            metadata = {**live["metadata"]}
            if planned[name]["metadata"].get("namespace"):
                metadata["namespace"] = planned[name]["metadata"]["namespace"]
            kind = {"apiVersion": planned[name]["apiVersion"], "kind": planned[name]["kind"]}
            found.append({**live, **kind, "metadata": metadata})
        found += self.method_objects
        found += [{**p, "apiVersion": "nvidia.com/v1"} for p in self.cluster_policies]
        for policy in self.nic_node_policies:
            found.append({**policy, "apiVersion": MELLANOX, "kind": "NicNodePolicy"})
        if self.nic_cluster_policy is not None:
            policy = {**self.nic_cluster_policy, "apiVersion": MELLANOX, "kind": "NicClusterPolicy"}
            found.append(policy)
        for config in self.pool_configs:
            found.append({**config, "apiVersion": SRIOV, "kind": "SriovNetworkPoolConfig"})
        if self.machine_config_pool is not None:
            pool = {**self.machine_config_pool, "kind": "MachineConfigPool"}
            found.append({**pool, "apiVersion": "machineconfiguration.openshift.io/v1"})
        for template in self.nic_config_templates:
            found.append(
                {**template, "apiVersion": NIC_CONFIGURATION, "kind": "NicConfigurationTemplate"}
            )
        if self.maintenance_elsewhere:
            namespace, name = self.maintenance_elsewhere.split(" ", 1)[1].split("/")
            spec = {"name": "nvidia-maintenance-operator"}
            found.append(obj(OLM, "Subscription", name, namespace, spec=spec))
        if self.openshift:
            found.append(
                obj(
                    "image.openshift.io/v1",
                    "ImageStream",
                    "driver-toolkit",
                    "openshift",
                    spec={"tags": [{"name": tag} for tag in self.driver_toolkit]},
                )
            )
        found += self.others
        not_served = set()
        if not self.openshift:
            not_served |= {
                ("config.openshift.io/v1", "ClusterVersion"),
                ("image.openshift.io/v1", "ImageStream"),
            }
        if not self.olm:
            not_served |= {(OLM, "CatalogSource"), (OLM, "Subscription")}
        if self.nic_config_devices is None and self.nic_devices is None:
            not_served.add((NIC_CONFIGURATION, "NicDevice"))
        return Facts(server=self.server, objects=tuple(found), not_served=frozenset(not_served))


def plan_of(name: str = "shared-device-roce", **overrides) -> dict:
    return build_plan({**inputs(name), **overrides})


def healthy(plan: dict, nodes: int = 2) -> World:
    """A cluster as the plan wants it: `nodes` nodes for each node group, with the group's
    labels and NICs."""
    one = len(plan["groups"]) == 1
    of_group = {
        (f"worker-{i}" if one else f"worker-{group['name']}-{i}"): group
        for group in plan["groups"]
        for i in range(nodes)
    }
    return World(
        catalogs={
            "openshift-marketplace/redhat-operators": "READY",
            "openshift-marketplace/certified-operators": "READY",
        },
        nodes=[
            {"name": n, "labels": {**NFD, **group["node_selector"]}}
            for n, group in of_group.items()
        ],
        node_states={
            n: [
                {
                    "name": r["interface"],
                    "linkType": "IB" if group["fabric"] == "infiniband" else "ETH",
                    "totalvfs": 16,
                }
                for r in group["rails"]
            ]
            for n, group in of_group.items()
        },
        machine_config_pool={
            "metadata": {"name": "worker"},
            "status": {"machineCount": len(of_group)},
        },
        others=[cluster_monitoring_config(user_workload=True, ethtool=True)],
    )


def cluster_monitoring_config(user_workload: bool, ethtool: bool, text: str | None = None) -> dict:
    """openshift-monitoring/cluster-monitoring-config with user-workload monitoring and
    node-exporter's ethtool collector on or off (text: its config.yaml as given)."""
    config = {
        "enableUserWorkload": user_workload,
        "nodeExporter": {"collectors": {"ethtool": {"enabled": ethtool}}},
    }
    data = {"config.yaml": text if text is not None else json.dumps(config)}
    found = obj("v1", "ConfigMap", "cluster-monitoring-config", "openshift-monitoring")
    return {**found, "data": data}


def run(plan, world, take_over=False):
    objects = build_objects(plan)
    findings = evaluate(plan, objects, world.facts(objects), take_over)
    return findings, {(f["check"], f["severity"]) for f in findings}


def messages(findings, severity):
    """The findings of a severity but the disruption check's (which lists what a run does to
    nodes, tests/unit/plugins/module_utils/test_disruption.py)."""
    return [
        f"{f['check']}: {f['message']}"
        for f in findings
        if f["severity"] == severity and f["check"] != "disruption"
    ]


@pytest.mark.parametrize("name", NAMES)
def test_a_healthy_cluster_has_no_error_and_no_warning(name):
    plan = plan_of(name)
    findings, _checks = run(plan, healthy(plan))
    assert messages(findings, "error") == []
    assert messages(findings, "warning") == []
    assert {f["check"] for f in findings} >= {
        "api",
        "openshift",
        "openshift-version",
        "catalogs",
        "nodes",
        "interfaces",
        "ownership",
        "method",
        "rdma-mode",
        "nic-policies",
    }


def test_unreachable_api_is_the_only_finding():
    plan = plan_of()
    findings, _checks = run(plan, World(api_error="MaxRetryError: connection refused"))
    assert len(findings) == 1
    assert findings[0]["severity"] == "error"
    assert "connection refused" in findings[0]["message"]
    assert "K8S_AUTH_KUBECONFIG" in findings[0]["message"]


def test_a_refused_read_is_the_only_finding_and_says_who_may_not_do_what():
    plan = plan_of()
    refusal = (
        'forbidden: the API server does not allow user "alice" to get '
        "clusterversions.config.openshift.io (...). gpudirect.rdma needs the ClusterRole ..."
    )
    findings, _checks = run(plan, World(forbidden=refusal))
    assert findings == [{"check": "api", "severity": "error", "message": refusal}]


def test_not_openshift():
    plan = plan_of()
    facts = healthy(plan)
    facts.openshift, facts.cluster_version = False, None
    findings, found = run(plan, facts)
    assert ("openshift", "error") in found
    assert "not an OpenShift cluster" in messages(findings, "error")[0]
    assert "4.17 to 4.22" in messages(findings, "error")[0]


def on_openshift(cluster_version: str, **overrides):
    """The findings on a healthy cluster that runs cluster_version, for the plan of overrides."""
    plan = plan_of(**overrides)
    facts = healthy(plan)
    facts.cluster_version = cluster_version
    return run(plan, facts)


def test_unsupported_openshift_version_says_which_are():
    findings, found = on_openshift("4.14.9")
    error = messages(findings, "error")[0]
    assert "OpenShift 4.14.9 is not supported by gpudirect.rdma: it supports 4.17 to 4.22" in error


def test_operator_release_range_is_a_warning():
    findings, found = on_openshift(
        "4.22.1", network_operator_release="26.4.1", openshift_version="4.22"
    )
    assert messages(findings, "error") == []
    warning = " ".join(messages(findings, "warning"))
    assert "NVIDIA Network Operator 26.4.1: it supports 4.17 to 4.20" in warning
    # Every Network Operator bundle says 4.20 at most, though the 4.22 catalog carries some.
    assert "4.20; no release the collection knows does" in warning


def test_a_release_the_clusters_catalog_does_not_carry_is_refused_naming_those_it_does():
    # The certified catalog of OpenShift 4.22 carries Network Operator 26.4.1 and 26.7, not
    # 26.4.0 (reference/catalog-templates/v4.22).
    findings, _found = on_openshift(
        "4.22.1", network_operator_release="26.4.0", openshift_version="4.22"
    )
    (error,) = messages(findings, "error")
    assert error == (
        "openshift-version: NVIDIA Network Operator 26.4.0 is not in the certified catalog of "
        "OpenShift 4.22 (its catalogs: 4.18, 4.19, 4.20, 4.21): OLM cannot install it on this "
        "cluster; releases that would do: 26.7.1, 26.7.0, 26.4.1"
    )


def test_a_minor_whose_catalog_was_not_read_is_judged_by_the_ranges_alone():
    findings, _found = on_openshift(
        "4.17.30", network_operator_release="26.4.0", openshift_version="4.17"
    )
    assert messages(findings, "error") == []


def test_openshift_version_variable_differs_from_the_cluster():
    plan = plan_of(openshift_version="4.18")
    findings, _checks = run(plan, healthy(plan))
    assert any("set it to 4.20" in m for m in messages(findings, "warning"))


def test_no_olm_and_missing_catalog():
    plan = plan_of()
    facts = healthy(plan)
    facts.catalogs["openshift-marketplace/certified-operators"] = None
    facts.catalogs["openshift-marketplace/redhat-operators"] = "TRANSIENT_FAILURE"
    findings, found = run(plan, facts)
    assert ("catalogs", "error") in found and ("catalogs", "warning") in found
    assert any("certified-operators does not exist" in m for m in messages(findings, "error"))
    facts.olm = False
    findings, found = run(plan, facts)
    assert any("OLM is not installed" in m for m in messages(findings, "error"))


def test_nodes_are_checked_only_once_nfd_labels_them():
    plan = plan_of()
    facts = healthy(plan)
    facts.nodes = [{"name": "worker-0", "labels": {}}, {"name": "worker-1", "labels": {}}]
    findings, found = run(plan, facts)
    assert ("nodes", "skipped") in found
    assert ("nodes", "error") not in found


def test_no_node_with_nics_or_gpus():
    plan = plan_of()
    facts = healthy(plan)
    facts.nodes = [{"name": "worker-0", "labels": {"feature.node.kubernetes.io/cpu-x": "true"}}]
    findings, _checks = run(plan, facts)
    assert any(
        "no node matches gpudirect_rdma_node_selector" in m for m in messages(findings, "error")
    )
    facts.nodes = [
        {"name": "worker-0", "labels": {"feature.node.kubernetes.io/pci-15b3.present": "true"}}
    ]
    findings, _checks = run(plan, facts)
    assert any("has an NVIDIA GPU" in m for m in messages(findings, "error"))


def test_one_gpu_node_and_intel_nics_are_warnings():
    plan = plan_of(blacklist_irdma=False)
    facts = healthy(plan, nodes=1)
    facts.nodes[0]["labels"]["feature.node.kubernetes.io/pci-8086.present"] = "true"
    findings, found = run(plan, facts)
    warnings = " ".join(messages(findings, "warning"))
    assert "verify.yml needs two" in warnings
    assert "gpudirect_rdma_blacklist_irdma: true" in warnings


def test_missing_interface_wrong_link_type_and_too_many_vfs():
    plan = plan_of("sriov-legacy-roce", sriov_num_vfs=32)
    facts = healthy(plan)
    facts.node_states["worker-0"] = [{"name": "ens1f0np0", "linkType": "ETH", "totalvfs": 8}]
    facts.node_states["worker-1"] = [{"name": "ens8f0np0", "linkType": "IB", "totalvfs": 8}]
    findings, _checks = run(plan, facts)
    errors = messages(findings, "error")
    assert any(
        "ens8f0np0 does not exist on node worker-0" in m and "ens1f0np0" in m for m in errors
    )
    assert any("ens8f0np0 on node worker-1 has link type IB" in m for m in errors)
    assert any("gpudirect_rdma_sriov_num_vfs is 32" in m and "at most 8 VFs" in m for m in errors)


def test_the_node_state_of_a_node_that_left_is_not_judged():
    plan = plan_of("sriov-legacy-roce")
    for labelled in (True, False):
        facts = healthy(plan)
        if not labelled:  # before NFD runs, every node counts
            facts.nodes = [{"name": n["name"], "labels": {}} for n in facts.nodes]
        facts.node_states["gone-7"] = [{"name": "ens1f0np0", "linkType": "ETH", "totalvfs": 8}]
        findings, _checks = run(plan, facts)
        assert messages(findings, "error") == [], labelled
        facts.node_states["worker-1"] = facts.node_states["gone-7"]
        findings, _checks = run(plan, facts)
        assert any("does not exist on node worker-1" in m for m in messages(findings, "error"))


def test_interfaces_from_nic_devices_and_skipped_without_reports():
    plan = plan_of()
    facts = healthy(plan)
    facts.node_states = None
    findings, found = run(plan, facts)
    assert ("interfaces", "skipped") in found
    facts.nic_devices = {"worker-0": ["ens8f0np0"], "worker-1": ["ens2f0np0"]}
    findings, _checks = run(plan, facts)
    assert any(
        "ens8f0np0 does not exist on node worker-1" in m and "NicDevice" in m
        for m in messages(findings, "error")
    )


def test_interfaces_from_nfds_node_features_before_any_other_operator_runs():
    """NFD installed before the collection (or by its first step): nfd-worker's NodeFeatures list
    the nodes' NICs, so a wrong interface is an error before the SR-IOV operator is installed."""
    plan = plan_of("sriov-legacy-roce")
    facts = healthy(plan)
    facts.node_states = None
    facts.node_features = {"worker-0": [("ens8f0np0", 4)], "worker-1": [("eno1", 0)]}
    findings, _checks = run(plan, facts)
    errors = messages(findings, "error")
    assert any(
        "ens8f0np0 does not exist on node worker-1 (its NodeFeature lists eno1)" in m
        for m in errors
    ), errors
    # What NFD read of the firmware's VF limit is judged as the node state's would be.
    vfs = plan["groups"][0]["sriov"]["num_vfs"]
    assert any(
        f"is {vfs} but ens8f0np0 on node worker-0 supports at most 4 VFs" in m for m in errors
    )


def test_foreign_nic_cluster_policy_needs_consent():
    plan = plan_of()
    facts = healthy(plan)
    facts.live["NicClusterPolicy nic-cluster-policy"] = {
        "kind": "NicClusterPolicy",
        "metadata": {"name": "nic-cluster-policy", "labels": {}},
    }
    findings, _checks = run(plan, facts)
    assert any(
        "NicClusterPolicy nic-cluster-policy exists and was not created by gpudirect.rdma" in m
        for m in messages(findings, "error")
    )
    findings, _checks = run(plan, facts, take_over=True)
    assert messages(findings, "error") == []
    assert any("its content will be replaced" in m for m in messages(findings, "warning"))


def test_existing_namespaces_are_adopted_and_own_objects_pass():
    plan = plan_of()
    facts = healthy(plan)
    facts.live["Namespace nvidia-gpu-operator"] = {"metadata": {"name": "nvidia-gpu-operator"}}
    facts.live["NicClusterPolicy nic-cluster-policy"] = {
        "metadata": {"name": "nic-cluster-policy", "labels": dict(OURS)}
    }
    findings, found = run(plan, facts)
    assert messages(findings, "error") == []
    assert any("nvidia-gpu-operator exists and will be adopted" in f["message"] for f in findings)


def test_another_cluster_policy():
    plan = plan_of()
    facts = healthy(plan)
    facts.cluster_policies = [{"kind": "ClusterPolicy", "metadata": {"name": "my-policy"}}]
    findings, _checks = run(plan, facts, take_over=True)
    assert any("ClusterPolicy my-policy exists" in m for m in messages(findings, "error"))


def test_a_telemetry_service_of_another_doca_release_than_the_driver_is_a_warning():
    plan = plan_of()  # Network Operator 26.7.1: DOCA driver doca3.5.0-26.07-0.7.7.0-1
    facts = healthy(plan)
    telemetry = {"image": "doca_telemetry", "version": "1.25.5-doca3.4.0-host"}
    facts.nic_cluster_policy = {
        "metadata": {"name": "nic-cluster-policy", "labels": dict(OURS)},
        "spec": {"docaTelemetryService": telemetry},
    }
    findings, _checks = run(plan, facts)
    (warning,) = [m for m in messages(findings, "warning") if m.startswith("telemetry-stream")]
    assert (
        "DOCA Telemetry Service 1.25.5-doca3.4.0-host is built for DOCA 3.4.0, the DOCA driver "
        "of the nodes is DOCA 3.5.0 (doca3.5.0-26.07-0.7.7.0-1)" in warning
    )
    telemetry["version"] = "1.26.5-doca3.5.0-host"
    findings, _checks = run(plan, facts)
    assert not [m for m in messages(findings, "warning") if m.startswith("telemetry-stream")]


@pytest.mark.parametrize(
    ("release", "streams"),
    [("26.7.0", ("3.4.0", "3.5.0")), ("26.7.1", None), ("26.4.1", ("3.4.0", "3.4.1"))],
)
def test_the_releases_own_telemetry_and_driver_streams(release, streams):
    """26.7.0 shipped the 26.4 telemetry image beside its DOCA 3.5 driver (its rebuilt bundle
    26.7.0-1 fixed that); 26.4.1 pairs DOCA 3.4.0 telemetry with the 3.4.1 driver."""
    components = NETWORK_OPERATOR_RELEASES[release]["components"]
    found = doca_streams(
        components["docaTelemetryService"]["version"], components["ofedDriver"]["version"]
    )
    assert found == streams


def test_a_gpu_cluster_beside_the_cluster_policy_is_refused():
    plan = plan_of()
    facts = healthy(plan)
    facts.others = [obj("nvidia.com/v1alpha1", "GPUCluster", "gpu-cluster")]
    findings, checks = run(plan, facts)
    assert ("gpu-cluster", "error") in checks
    (message,) = [m for m in messages(findings, "error") if m.startswith("gpu-cluster")]
    assert "GPUCluster gpu-cluster exists" in message
    assert "oc delete gpucluster gpu-cluster" in message


@pytest.mark.parametrize(
    ("pinned", "installed", "warned"),
    [
        ("gpu-operator-certified.v26.3.1", None, ["pins gpu-operator-certified.v26.3.1"]),
        (
            None,
            "gpu-operator-certified.v26.3.2",
            ["the cluster runs gpu-operator-certified.v26.3.2"],
        ),
        (None, "gpu-operator-certified.v26.3.3", []),
        ("gpu-operator-certified.v26.7.2", "gpu-operator-certified.v26.7.2", []),
    ],
)
def test_a_gpu_operator_that_puts_every_ibverbs_device_in_gpu_pods_is_warned_of(
    pinned, installed, warned
):
    operators = {"gpu_operator": {"approval": "Manual", "starting_csv": pinned}} if pinned else {}
    plan = plan_of(operators=operators)
    facts = healthy(plan)
    if installed:
        facts.others = [
            obj(
                OLM,
                "Subscription",
                "gpu-operator-certified",
                "nvidia-gpu-operator",
                spec={"name": "gpu-operator-certified"},
                status={"installedCSV": installed},
            )
        ]
    findings, _checks = run(plan, facts)
    found = [m for m in messages(findings, "warning") if m.startswith("gpu-operator-release")]
    assert len(found) == len(warned), found
    for message, words in zip(found, warned, strict=True):
        assert words in message
        assert "gpu-operator #2525" in message and "choose 26.3.3 or later" in message


GPU_CSV = "gpu-operator-certified.v{}"


@pytest.mark.parametrize(
    ("overrides", "installed", "severity", "words"),
    [
        ({}, "26.7.2", "ok", "NVIDIA GPU Operator: gpu-operator-certified.v26.7.2, as planned"),
        (
            {},
            "26.3.3",
            "error",
            "NVIDIA GPU Operator: the cluster runs gpu-operator-certified.v26.3.3; "
            "gpudirect_rdma_gpu_operator_release plans gpu-operator-certified.v26.7.2: an "
            "upgrade (OLM reads the Subscription's startingCSV only at install, so site.yml "
            "does not make it). Run playbooks/upgrade.yml, which steps through OLM's upgrade "
            "graph to it, or set gpudirect_rdma_gpu_operator_release to what runs",
        ),
        (
            {"gpu_operator_release": "26.7.1"},
            "26.7.2",
            "error",
            "gpudirect_rdma_gpu_operator_release plans gpu-operator-certified.v26.7.1: a "
            "downgrade, which OLM cannot make (OLM reads the Subscription's startingCSV only at "
            "install, and with Automatic approval follows its channel to the newest CSV)",
        ),
        (
            {
                "operators": {
                    "gpu_operator": {
                        "approval": "Manual",
                        "starting_csv": GPU_CSV.format("26.7.1"),
                    }
                }
            },
            "26.7.2",
            "error",
            "gpudirect_rdma_operators.gpu_operator.starting_csv plans "
            "gpu-operator-certified.v26.7.1: a downgrade, which OLM cannot make (OLM reads the "
            "Subscription's startingCSV only at install). Set",
        ),
    ],
)
def test_an_operator_that_runs_another_csv_than_planned_is_refused_before_any_write(
    overrides, installed, severity, words
):
    plan = plan_of(**overrides)
    facts = healthy(plan)
    facts.others = [
        obj(
            OLM,
            "Subscription",
            "gpu-operator-certified",
            "nvidia-gpu-operator",
            spec={"name": "gpu-operator-certified"},
            status={"installedCSV": GPU_CSV.format(installed)},
        )
    ]
    findings, _checks = run(plan, facts)
    found = [m for m in messages(findings, severity) if m.startswith("operator-versions")]
    assert len(found) == 1 and words in found[0], found
    advice = "playbooks/upgrade.yml" if "an upgrade" in words else "playbooks/uninstall.yml"
    assert advice in found[0] or severity == "ok"


def catalog_findings(**overrides) -> list[str]:
    plan = plan_of(**overrides)
    findings, _checks = run(plan, healthy(plan))
    return [
        f"{severity} {m}"
        for severity in ("error", "ok")
        for m in messages(findings, severity)
        if m.startswith("operator-catalog") and "GPU Operator" in m
    ]


def test_a_pinned_csv_the_catalog_channel_lacks_is_refused_naming_what_it_holds():
    """The certified catalog of OpenShift 4.20 (the cluster's), channel v26.7: a starting_csv
    it does not hold is refused before any write (it was written without a word before)."""
    found = catalog_findings(
        operators={
            "gpu_operator": {
                "approval": "Manual",
                "starting_csv": GPU_CSV.format("99.0.0"),
            }
        }
    )
    assert found == [
        "error operator-catalog: NVIDIA GPU Operator: channel v26.7 of the certified catalog of "
        "OpenShift 4.20 does not hold gpu-operator-certified.v99.0.0 "
        "(gpudirect_rdma_operators.gpu_operator.starting_csv): OLM cannot install it; the "
        "channel holds gpu-operator-certified.v26.7.2, gpu-operator-certified.v26.7.1, "
        "gpu-operator-certified.v26.7.0"
    ]
    held = catalog_findings(
        operators={"gpu_operator": {"approval": "Manual"}}, gpu_operator_release="26.7.1"
    )
    assert held == [
        "ok operator-catalog: NVIDIA GPU Operator: channel v26.7 of the certified catalog of "
        "OpenShift 4.20 holds gpu-operator-certified.v26.7.1"
    ]


def test_automatic_approval_of_a_csv_below_the_channels_head_is_refused():
    """OLM installs the head and follows every newer CSV: the release would not hold."""
    (found,) = catalog_findings(gpu_operator_release="26.7.1")
    assert found.startswith("error operator-catalog: NVIDIA GPU Operator: channel v26.7 ")
    assert (
        "with Automatic approval OLM installs its newest CSV, gpu-operator-certified.v26.7.2, not "
        "gpu-operator-certified.v26.7.1 (gpudirect_rdma_gpu_operator_release), and then each "
        "newer one: choose the release of gpu-operator-certified.v26.7.2, or approval Manual "
        "(gpudirect_rdma_operators.gpu_operator.approval) to hold gpu-operator-certified.v26.7.1"
        in found
    )
    assert catalog_findings()[0].startswith("ok operator-catalog"), "the default is the head"
    # A mirror is not the certified catalog: not judged.
    assert catalog_findings(gpu_operator_release="26.7.1", catalog_source="my-mirror") == []


def network(kind, name, labels=None, **spec):
    api = "sriovnetwork.openshift.io/v1" if kind.startswith("Sriov") else "mellanox.com/v1alpha1"
    namespace = "openshift-sriov-network-operator" if kind.startswith("Sriov") else None
    metadata = {"name": name, "labels": labels or {}}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": api, "kind": kind, "metadata": metadata, "spec": spec}


def test_switching_method_lists_what_goes():
    plan = plan_of("sriov-legacy-roce")
    facts = healthy(plan)
    facts.method_objects = [
        network(
            "MacvlanNetwork",
            "rdma-shared",
            {**OURS, "gpudirect.rdma/component": "shared-device"},
            master="ens8f0np0",
        )
    ]
    findings, _checks = run(plan, facts)
    assert messages(findings, "error") == []
    warning = " ".join(messages(findings, "warning"))
    assert "switching to sriov_legacy" in warning and "MacvlanNetwork rdma-shared" in warning


def test_foreign_objects_on_the_interfaces():
    plan = plan_of("sriov-legacy-roce")
    facts = healthy(plan)
    facts.method_objects = [
        network("SriovNetworkNodePolicy", "theirs", nicSelector={"pfNames": ["ens8f0np0#0-3"]}),
        network("MacvlanNetwork", "unrelated", master="eno1"),
        network(
            "SriovNetworkNodePolicy",
            "big-ib",
            linkType="ib",
            numVfs=32,
            nicSelector={"pfNames": ["ib9"]},
        ),
    ]
    findings, _checks = run(plan, facts)
    errors = messages(findings, "error")
    assert len(errors) == 1
    assert (
        "SriovNetworkNodePolicy openshift-sriov-network-operator/theirs (on ens8f0np0)" in errors[0]
    )
    assert "unrelated" not in errors[0]
    assert any("big-ib (numVfs 32)" in m for m in messages(findings, "warning"))
    findings, _checks = run(plan, facts, take_over=True)
    assert messages(findings, "error") == []


@pytest.mark.parametrize(
    ("interface", "group"), [("ens1f0np0", "a100"), ("ibp26s0", "h100"), ("ibp220s0", "h100")]
)
def test_a_foreign_policy_on_an_interface_of_any_group_is_an_error_naming_the_group(
    interface, group
):
    plan = plan_of("node-groups")
    facts = healthy(plan)
    facts.method_objects = [
        network("SriovNetworkNodePolicy", "theirs", nicSelector={"pfNames": [interface]})
    ]
    findings, _checks = run(plan, facts)
    (error,) = messages(findings, "error")
    assert f"theirs (on {interface} of group {group})" in error


def test_mixed_methods_are_judged_group_by_group():
    plan = build_plan(mixed_groups())
    facts = healthy(plan)
    # The collection's own objects of both methods stay: neither is "another method".
    facts.method_objects = [
        {**o, "metadata": {**o["metadata"], "labels": {**OURS, **o["metadata"]["labels"]}}}
        for o in build_objects(plan)
        if o["kind"] in ("SriovNetworkNodePolicy", "IPoIBNetwork")
    ]
    findings, _checks = run(plan, facts)
    assert messages(findings, "error") == []
    assert not any("switching to" in m for m in messages(findings, "warning"))
    (rdma_mode,) = [f for f in findings if f["check"] == "rdma-mode"]
    assert rdma_mode["message"] == "RDMA subsystem shared; method sriov_legacy, shared_device"
    facts.pool_configs = [{"metadata": {"name": "workers"}, "spec": {"rdmaMode": "exclusive"}}]
    findings, _checks = run(plan, facts)
    (error,) = messages(findings, "error")
    assert "the shared device method (group h100) needs the RDMA subsystem shared" in error


def test_exclusive_rdma_mode_and_shared_device_never_mix():
    pool = {"metadata": {"name": "workers"}, "spec": {"rdmaMode": "exclusive"}}
    plan = plan_of("shared-device-roce")
    facts = healthy(plan)
    facts.pool_configs = [pool]
    findings, _checks = run(plan, facts)
    assert any("rdmaMode: exclusive" in m for m in messages(findings, "error"))
    plan = plan_of("sriov-legacy-roce")
    facts = healthy(plan)
    facts.pool_configs = [pool]
    findings, _checks = run(plan, facts)
    assert messages(findings, "error") == []


def test_single_node_openshift():
    plan = plan_of("sriov-legacy-roce")
    facts = healthy(plan, nodes=1)
    facts.machine_config_pool = {"metadata": {"name": "worker"}, "status": {"machineCount": 0}}
    findings, _checks = run(plan, facts)
    errors = messages(findings, "error")
    assert any("gpudirect_rdma_machine_config_role: master" in m for m in errors)
    warnings = " ".join(messages(findings, "warning"))
    assert "single-node OpenShift" in warnings and "SR-IOV policy change" in warnings
    facts.machine_config_pool = None
    findings, _checks = run(plan, facts)
    assert any("there is no MachineConfigPool worker" in m for m in messages(findings, "error"))


@pytest.mark.parametrize(
    ("control_plane", "single"),
    [
        ({"sno-0": "node-role.kubernetes.io/master"}, True),
        ({"sno-0": "node-role.kubernetes.io/control-plane"}, True),
        ({"m-0": "node-role.kubernetes.io/master", "m-1": "node-role.kubernetes.io/master"}, False),
        ({}, False),
    ],
)
def test_single_node_openshift_with_workers_is_told_by_its_one_control_plane_node(
    control_plane, single
):
    """Workers added to single-node OpenShift: one node runs the control plane (the
    Infrastructure's controlPlaneTopology SingleReplica), and its reboot takes the API away."""
    plan = plan_of("sriov-legacy-roce")
    facts = healthy(plan, nodes=2)
    for name, label in control_plane.items():
        facts.nodes.append({"name": name, "labels": {label: "", **NFD}})
    findings, _checks = run(plan, facts)
    warned = any("single-node OpenShift" in m for m in messages(findings, "warning"))
    assert warned is single


def test_summary_counts_and_puts_errors_first():
    plan = plan_of()
    facts = healthy(plan)
    facts.cluster_version = "4.14.9"
    objects = build_objects(plan)
    lines = summary(evaluate(plan, objects, facts.facts(objects)))
    assert lines[0].startswith("preflight: 1 error(s), ")
    assert lines[1].startswith("ERROR   openshift-version: ")


def test_evaluate_changes_none_of_its_inputs():
    plan = plan_of()
    objects = build_objects(plan)
    facts = healthy(plan).facts(objects)
    before = copy.deepcopy((plan, objects, facts.objects))
    evaluate(plan, objects, facts)
    assert (plan, objects, facts.objects) == before


def test_sriov_objects_outside_the_operators_namespace_are_ignored():
    plan = plan_of("sriov-legacy-roce")
    facts = healthy(plan)
    elsewhere = network(
        "SriovNetworkNodePolicy", "elsewhere", nicSelector={"pfNames": ["ens8f0np0"]}
    )
    elsewhere["metadata"]["namespace"] = "test-1234"
    facts.method_objects = [elsewhere]
    findings, _checks = run(plan, facts)
    assert messages(findings, "error") == []


# -- node groups -------------------------------------------------------------------------------


def test_a_node_two_groups_select_is_an_error():
    plan = plan_of("node-groups")
    facts = healthy(plan)
    facts.nodes[0]["labels"]["gpudirect.example.com/pool"] = "a100"
    facts.nodes.append(
        {"name": "both", "labels": {**facts.nodes[0]["labels"], "gpudirect.example.com/x": "1"}}
    )
    plan["groups"][1]["node_selector"] = {"gpudirect.example.com/x": "1"}
    findings, _checks = run(plan, facts)
    assert messages(findings, "error") == [
        "node-groups: node both is selected by the node groups a100, h100: give the groups' "
        "node_selector labels that no node carries together (the Network Operator refuses two "
        "NicNodePolicies on one node)"
    ]


def test_a_group_that_matches_no_node_is_an_error_naming_the_group_and_its_selector():
    plan = plan_of("node-groups")
    facts = healthy(plan)
    facts.nodes = [n for n in facts.nodes if "h100" not in n["name"]]
    findings, _checks = run(plan, facts)
    assert messages(findings, "error") == [
        "nodes: group h100: no node matches gpudirect_rdma_node_groups[1].node_selector "
        "(gpudirect.example.com/pool=h100) among the 2 nodes: label the group's nodes, or remove "
        "the group"
    ]


def test_a_group_whose_nodes_nfd_has_not_labelled_yet_waits_for_nfd():
    """NFD labels one node after another: a group of new nodes without its labels yet is judged
    later (skipped, so the steps after NFD judge it), while another group's nodes are judged."""
    plan = plan_of("node-groups")
    facts = healthy(plan)
    for node in facts.nodes:
        if "h100" in node["name"]:
            node["labels"] = {k: v for k, v in node["labels"].items() if k not in NFD}
    findings, _checks = run(plan, facts)
    assert messages(findings, "skipped") == [
        "nodes: group h100: NFD has not labelled worker-h100-0, worker-h100-1 yet: checked once "
        "it has (the nfd role waits for its labels)"
    ]
    assert messages(findings, "error") == []
    # Labelled, and still no GPU: that is an error.
    for node in facts.nodes:
        if "h100" in node["name"]:
            node["labels"]["feature.node.kubernetes.io/pci-15b3.present"] = "true"
    findings, _checks = run(plan, facts)
    assert any("group h100: none of the nodes" in m for m in messages(findings, "error"))


def test_a_group_whose_interfaces_its_nodes_lack_is_an_error_naming_the_group():
    plan = plan_of("node-groups")
    facts = healthy(plan)
    # The a100 nodes' NICs are named as the h100 nodes' are: each group is judged on its own.
    for node, interfaces in facts.node_states.items():
        if "a100" in node:
            interfaces[0]["name"] = "ibp26s0"
    findings, _checks = run(plan, facts)
    errors = messages(findings, "error")
    assert len(errors) == 2
    assert errors[0].startswith(
        "interfaces: group a100: gpudirect_rdma_node_groups[0].interfaces: ens1f0np0 does not "
        "exist on node worker-a100-0"
    )


# -- NIC policies: the webhooks' rules before any write, and a change of model --------------------


def _node_policy(name: str, spec: dict, ours: bool = False) -> dict:
    labels = {**OURS} if ours else {"team": "network"}
    return {"metadata": {"name": name, "labels": labels}, "spec": spec}


def _ours(obj: dict) -> dict:
    return {**obj, "metadata": {**obj["metadata"], "labels": {**OURS}}}


def test_a_foreign_nic_node_policy_with_a_section_the_nic_cluster_policy_plans_is_an_error():
    plan = plan_of("shared-device-roce")
    facts = healthy(plan)
    facts.nic_node_policies = [
        _node_policy("theirs", {"nodeSelector": {"x": "y"}, "ofedDriver": {"version": "1"}})
    ]
    findings, _checks = run(plan, facts)
    assert messages(findings, "error") == [
        "nic-policies: NicNodePolicy theirs (not the collection's) defines ofedDriver, which the "
        "planned NicClusterPolicy defines too: the Network Operator refuses a section in both "
        "kinds. Set gpudirect_rdma_nic_policy_model: node, or remove that NicNodePolicy"
    ]


def test_a_foreign_nic_node_policy_on_a_groups_node_is_an_error():
    plan = plan_of("node-groups")
    facts = healthy(plan)
    facts.nic_node_policies = [
        _node_policy("theirs", {"nodeSelector": {"gpudirect.example.com/pool": "a100"}})
    ]
    findings, _checks = run(plan, facts)
    assert messages(findings, "error") == [
        "nic-policies: node worker-a100-0 would be selected by NicNodePolicy theirs (not the "
        "collection's) and by the planned a100: the Network Operator refuses two NicNodePolicies "
        "on one node. Narrow the node group's node_selector, or remove that NicNodePolicy"
    ]


def test_the_collections_own_nic_node_policies_are_no_finding():
    plan = plan_of("node-groups")
    facts = healthy(plan)
    facts.nic_node_policies = [o for o in build_objects(plan) if o["kind"] == "NicNodePolicy"]
    findings, checks = run(plan, facts)
    assert messages(findings, "error") == messages(findings, "warning") == []
    assert ("nic-policies", "ok") in checks


def test_cluster_to_node_says_what_moves_and_what_it_disrupts():
    cluster = plan_of("host-device-roce")
    node = plan_of("host-device-roce", nic_policy_model="node")
    facts = healthy(node)
    facts.nic_cluster_policy = _ours(
        next(o for o in build_objects(cluster) if o["kind"] == "NicClusterPolicy")
    )
    findings, _checks = run(node, facts)
    assert messages(findings, "warning") == [
        "nic-policies: NIC policy model cluster to node: NicClusterPolicy nic-cluster-policy is "
        "deleted (nothing cluster-wide is left for it) first, then NicNodePolicy gpudirect-rdma "
        "takes ofedDriver, sriovDevicePlugin; the DOCA driver DaemonSet is replaced on 2 node(s): "
        "the driver reloads there, and pods using RDMA devices on them lose those until the new "
        "device plugins are ready"
    ]


def test_cluster_to_node_keeps_the_nic_cluster_policy_for_what_is_cluster_wide():
    cluster = plan_of("shared-device-infiniband")
    node = plan_of("shared-device-infiniband", nic_policy_model="node")
    facts = healthy(node)
    facts.nic_cluster_policy = _ours(
        next(o for o in build_objects(cluster) if o["kind"] == "NicClusterPolicy")
    )
    findings, _checks = run(node, facts)
    assert messages(findings, "warning")[0].startswith(
        "nic-policies: NIC policy model cluster to node: NicClusterPolicy nic-cluster-policy "
        "gives up ofedDriver, rdmaSharedDevicePlugin first, then NicNodePolicy gpudirect-rdma "
        "takes ofedDriver, rdmaSharedDevicePlugin; the DOCA driver DaemonSet is replaced"
    )


def test_node_to_cluster_deletes_the_nic_node_policies_first():
    node = plan_of("shared-device-roce", nic_policy_model="node")
    cluster = plan_of("shared-device-roce")
    facts = healthy(cluster)
    facts.nic_node_policies = [
        _ours(o) for o in build_objects(node) if o["kind"] == "NicNodePolicy"
    ]
    findings, _checks = run(cluster, facts)
    assert messages(findings, "warning") == [
        "nic-policies: NIC policy model node to cluster: NicNodePolicy gpudirect-rdma is deleted "
        "first, then NicClusterPolicy nic-cluster-policy takes ofedDriver, "
        "rdmaSharedDevicePlugin; the DOCA driver DaemonSet is replaced on 2 node(s): the driver "
        "reloads there, and pods using RDMA devices on them lose those until the new device "
        "plugins are ready"
    ]


def test_policies_that_go_from_nodes_no_longer_labelled_reload_no_driver():
    node = plan_of("node-groups")
    cluster = plan_of("sriov-legacy-roce")
    facts = healthy(cluster)
    facts.nic_node_policies = [
        _ours(o) for o in build_objects(node) if o["kind"] == "NicNodePolicy"
    ]
    findings, _checks = run(cluster, facts)
    assert messages(findings, "warning") == [
        "nic-policies: NIC policy model node to cluster: NicNodePolicies a100, h100 are deleted "
        "first, then NicClusterPolicy nic-cluster-policy takes ofedDriver; no node is selected "
        "by the policies that go, so no driver reloads"
    ]


def test_a_foreign_nic_cluster_policy_with_a_section_the_nic_node_policies_plan_is_an_error():
    plan = plan_of("sriov-legacy-roce", nic_policy_model="node")
    facts = healthy(plan)
    facts.nic_cluster_policy = _node_policy("nic-cluster-policy", {"ofedDriver": {"version": "1"}})
    findings, _checks = run(plan, facts)
    assert messages(findings, "error") == [
        "nic-policies: NicClusterPolicy nic-cluster-policy (not the collection's) defines "
        "ofedDriver, which the planned NicNodePolicies define too: the Network Operator refuses a "
        "section in both kinds. Remove those sections from it (or the policy), or set "
        "gpudirect_rdma_nic_policy_model: cluster"
    ]


# -- the NIC firmware settings (gpudirect_rdma_nic_configuration) --------------------------------
def nic_devices(facts: World, nic_type: str = "1021") -> list[dict]:
    return [
        {"name": f"{n['name']}-{nic_type}-0000-08-00", "node": n["name"], "type": nic_type}
        for n in facts.nodes
    ]


def test_nic_types_are_checked_once_the_daemon_lists_the_nics():
    plan = plan_of("nic-configuration-roce")
    facts = healthy(plan)
    findings, checks = run(plan, facts)
    assert ("nic-configuration", "skipped") in checks
    facts.nic_config_devices = nic_devices(facts)
    findings, checks = run(plan, facts)
    assert ("nic-configuration", "ok") in checks
    assert messages(findings, "error") == []
    facts.nic_config_devices = nic_devices(facts, "101d")
    findings, _checks = run(plan, facts)
    assert messages(findings, "error") == [
        "nic-configuration: gpudirect_rdma_nic_type ConnectX-7 (1021): no NicDevice of that type "
        "on the selected nodes (they have ConnectX-6 Dx (101d)); its template would configure "
        "nothing"
    ]


def test_somebody_elses_template_on_the_same_devices_is_an_error_and_a_narrowed_one_a_warning():
    plan = plan_of("nic-configuration-roce")
    facts = healthy(plan)
    theirs = {
        "metadata": {"name": "site-cx7", "namespace": "nvidia-network-operator"},
        "spec": {"nodeSelector": {}, "nicSelector": {"nicType": "1021"}},
    }
    facts.nic_config_templates = [theirs]
    findings, _checks = run(plan, facts)
    (error,) = messages(findings, "error")
    assert (
        "NicConfigurationTemplate nvidia-network-operator/site-cx7 (not gpudirect.rdma's) " in error
    )
    assert "selects nicType 1021 on worker-0, worker-1, as gpudirect-rdma-connectx-7 does" in error
    theirs["spec"]["nicSelector"]["pciAddresses"] = ["0000:3b:00.0"]
    findings, _checks = run(plan, facts)
    assert messages(findings, "error") == []
    assert any("narrows it to some devices" in w for w in messages(findings, "warning"))
    # Another NIC type, or nodes of its own, or our own template: nothing to say.
    theirs["spec"]["nicSelector"] = {"nicType": "101d"}
    facts.nic_config_templates = [
        theirs,
        {**build_objects(plan)[-1], "metadata": {"name": "x", "labels": OURS}},
    ]
    findings, _checks = run(plan, facts)
    assert messages(findings, "error") == []


def test_somebody_elses_maintenance_operator_is_a_warning_that_it_is_used():
    plan = plan_of("nic-configuration-roce")
    facts = healthy(plan)
    facts.maintenance_elsewhere = "Subscription openshift-operators/maintenance"
    findings, _checks = run(plan, facts)
    assert messages(findings, "error") == []
    (warning,) = messages(findings, "warning")
    assert "Subscription openshift-operators/maintenance was installed by somebody else" in warning
    assert "used, not replaced" in warning


def test_a_link_type_or_vf_count_the_templates_change_is_a_warning_not_an_error():
    plan = plan_of("nic-configuration-roce")
    facts = healthy(plan)
    for interfaces in facts.node_states.values():
        for nic in interfaces:
            nic.update(linkType="IB", totalvfs=0)
    findings, _checks = run(plan, facts)
    assert messages(findings, "error") == []
    warnings = messages(findings, "warning")
    assert any("the NIC configuration sets ETH in its firmware" in w for w in warnings), warnings
    without = plan_of("sriov-legacy-roce")
    findings, _checks = run(without, facts)
    assert any("has link type IB" in e for e in messages(findings, "error"))


def test_the_preflight_module_describes_every_check_of_the_table():
    from ansible.module_utils.common.yaml import yaml_load

    from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.preflight import checks_of
    from ansible_collections.gpudirect.rdma.plugins.modules import preflight as module

    plan = plan_of("nic-configuration-roce")
    names = [check.name for check in checks_of(plan)]
    assert len(names) == len(set(names))
    description = " ".join(yaml_load(module.DOCUMENTATION)["description"])
    assert [name for name in names if f"C({name})" not in description] == []


def test_before_nfd_a_group_is_judged_on_the_nodes_its_own_labels_select():
    """Fresh nodes NFD has not labelled yet: a group whose selector is its own pool label is
    judged on its nodes, not on every node (whose NICs are another group's)."""
    plan = plan_of("mixed-methods")
    facts = healthy(plan)
    for node in facts.nodes:
        node["labels"] = {k: v for k, v in node["labels"].items() if k not in NFD}
    findings, _checks = run(plan, facts)
    assert [m for m in messages(findings, "error") if m.startswith("interfaces")] == []


def toolkit_findings(world) -> list[str]:
    plan = plan_of()
    findings, _checks = run(plan, world)
    return [f"{f['severity']} {f['message']}" for f in findings if f["check"] == "driver-toolkit"]


def test_a_node_whose_rhcos_build_the_driver_toolkit_lacks_is_refused_before_any_write():
    world = healthy(plan_of())
    assert toolkit_findings(world) == [f"ok the Driver Toolkit has images for RHCOS {RHCOS}"]
    world.driver_toolkit = ("9.6.20250909-0", "latest")
    (refused,) = toolkit_findings(world)
    assert refused.startswith(
        f"error 2 node(s) (worker-0, worker-1) run RHCOS {RHCOS}, and the ImageStream "
        "openshift/driver-toolkit has no tag 9.6.20251015-0 (its tags: 9.6.20250909-0, latest): "
        "the GPU and DOCA drivers build with that image on each node and would fail there"
    )


def test_a_stale_nfd_label_is_a_warning_naming_the_node():
    """gpu-operator#990: NFD kept the old OSTREE_VERSION after an OpenShift update."""
    world = healthy(plan_of())
    for node in world.nodes:
        node["os_image"] = "Red Hat Enterprise Linux CoreOS 9.6.20251120-0 (Plow)"
    found = toolkit_findings(world)
    assert found[0].startswith(
        f"warning node worker-0: NFD's feature.node.kubernetes.io/system-os_release.OSTREE_VERSION "
        f"says RHCOS {RHCOS}, its osImage says 'Red Hat Enterprise Linux CoreOS 9.6.20251120-0 "
        "(Plow)': the label is stale"
    )


# -- monitoring (steps/monitoring.py) -----------------------------------------------------------
def monitoring_findings(plan: dict, config: dict | None) -> list[tuple[str, str]]:
    world = healthy(plan)
    world.others = [config] if config else []
    findings, _checks = run(plan, world)
    return [(f["severity"], f["message"]) for f in findings if f["check"] == "cluster-monitoring"]


def test_monitoring_warns_while_user_workload_monitoring_and_ethtool_are_off():
    plan = plan_of("multi-rail-hgx")
    found = monitoring_findings(plan, None)
    assert [severity for severity, _message in found] == ["warning", "warning"]
    assert "user-workload monitoring is off" in found[0][1]
    assert "openshift-monitoring/cluster-monitoring-config" in found[0][1]
    assert "ethtool collector is off" in found[1][1]
    assert "GPUDirectRDMAPFCPauseStorm" in found[1][1]
    on = monitoring_findings(plan, cluster_monitoring_config(True, True))
    assert [severity for severity, _message in on] == ["ok", "ok"]
    ethtool_off = monitoring_findings(plan, cluster_monitoring_config(True, False))
    assert [severity for severity, _message in ethtool_off] == ["ok", "warning"]


def test_monitoring_on_infiniband_needs_no_ethtool_collector():
    plan = plan_of("shared-device-infiniband", monitoring=True)
    found = monitoring_findings(plan, cluster_monitoring_config(True, False))
    assert found == [("ok", "user-workload monitoring is on")]


def test_monitoring_config_that_is_not_yaml_is_a_warning_naming_it():
    plan = plan_of("multi-rail-hgx")
    found = monitoring_findings(plan, cluster_monitoring_config(True, True, text="a: [b"))
    assert len(found) == 1 and found[0][0] == "warning"
    assert found[0][1].startswith("openshift-monitoring/cluster-monitoring-config: its config.yaml")


def test_monitoring_off_reads_and_judges_nothing_of_openshift_monitoring():
    plan = plan_of("shared-device-roce")
    assert monitoring_findings(plan, None) == []


def test_the_planned_telemetry_service_is_judged_against_the_driver_before_it_is_applied():
    """With monitoring the run applies the release's DOCA Telemetry Service itself: 26.4.1's is
    of DOCA 3.4.0 beside the 3.4.1 driver, which is said before the first write."""
    plan = plan_of("multi-rail-hgx", network_operator_release="26.4.1")
    findings, _checks = run(plan, healthy(plan))
    (warning,) = [m for m in messages(findings, "warning") if m.startswith("telemetry-stream")]
    assert "DOCA Telemetry Service 1.25.5-doca3.4.0-host is built for DOCA 3.4.0" in warning
