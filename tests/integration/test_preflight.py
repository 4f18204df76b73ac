"""Preflight on the local control plane: each finding is set up on purpose, site.yml reports it
in one summary, and when it is an error the run fails before its first write (audit log)."""

from __future__ import annotations

import pytest
from kubernetes.client.rest import ApiException

from tests.harness.audit import AuditLog
from tests.harness.controlplane import ADMIN_USER, REPO_ROOT
from tests.integration.helpers import wait_for
from tests.integration.test_site import nodes_for, recap, site
from tests.simulator.nodes import FAKE_NODE_LABEL, Hardware, Nic, register_nodes, remove_nodes

PREFLIGHT = REPO_ROOT / "playbooks" / "preflight.yml"
# The cluster these tests share was converged with other inventories before: what switching does
# to its nodes is test_disruption.py's subject, not these tests'.
AGREED = ("-e", "gpudirect_rdma_allow_disruption=all")
SRIOV_NAMESPACE = "openshift-sriov-network-operator"


def flat(result) -> str:
    return " ".join((result.stdout + result.stderr).split())


def fails_before_writing(control_plane, run_playbook, inventory: str, *extra: str) -> str:
    """Run site.yml, which must fail in preflight with no write by the playbook's user; return
    its output, whitespace folded."""
    audit = AuditLog(control_plane.audit_log).mark()
    result = site(run_playbook, inventory, *extra, check=False)
    output = flat(result)
    assert result.returncode != 0, output[-3000:]
    assert "preflight found" in output, output[-3000:]
    assert "nothing was written to the cluster" in output
    assert audit.writes(ADMIN_USER) == [], [str(w) for w in audit.writes(ADMIN_USER)]
    assert audit.requests(ADMIN_USER), "preflight read the cluster"
    return output


def cluster_version(custom) -> str | None:
    try:
        found = custom.get_cluster_custom_object(
            "config.openshift.io", "v1", "clusterversions", "version"
        )
    except ApiException as error:
        assert error.status == 404
        return None
    return ((found.get("status") or {}).get("desired") or {}).get("version")


def test_a_healthy_cluster_passes_with_a_summary(run_playbook, harness, control_plane):
    nodes_for(harness, "shared-device-roce")
    audit = AuditLog(control_plane.audit_log).mark()
    result = run_playbook(
        PREFLIGHT,
        "-i",
        str(REPO_ROOT / "inventories" / "shared-device-roce"),
        *AGREED,
        check=False,
    )
    output = flat(result)
    assert result.returncode == 0, output[-3000:]
    assert "preflight: 0 error(s)" in output
    assert "OK openshift: OpenShift 4.20.8" in output
    assert audit.writes(ADMIN_USER) == []


@pytest.fixture
def openshift_version(custom, knobs):
    """Make the simulated cluster report another OpenShift version (None: not OpenShift); the
    default comes back, and is awaited, afterwards."""

    def set_version(version):
        knobs({"openshift": {"version": version}})
        wait_for(lambda: cluster_version(custom) == version, what=f"ClusterVersion {version}")

    yield set_version
    knobs({})
    wait_for(lambda: cluster_version(custom) == "4.20.8", what="ClusterVersion back to 4.20.8")


def test_not_openshift(run_playbook, harness, openshift_version, control_plane):
    nodes_for(harness, "shared-device-roce")
    openshift_version(None)
    output = fails_before_writing(control_plane, run_playbook, "shared-device-roce")
    assert "ERROR openshift: this is not an OpenShift cluster" in output


def test_a_release_the_clusters_catalog_lacks_is_refused(
    run_playbook, harness, openshift_version, control_plane
):
    """OpenShift 4.22's certified catalog carries Network Operator 26.4.1 and 26.7, not 26.4.0."""
    nodes_for(harness, "shared-device-roce")
    openshift_version("4.22.1")
    output = fails_before_writing(
        control_plane,
        run_playbook,
        "shared-device-roce",
        "-e",
        "gpudirect_rdma_network_operator_release=26.4.0",
        "-e",
        "gpudirect_rdma_openshift_version='4.22'",
        *AGREED,
    )
    assert (
        "ERROR openshift-version: NVIDIA Network Operator 26.4.0 is not in the certified catalog "
        "of OpenShift 4.22 (its catalogs: 4.18, 4.19, 4.20, 4.21): OLM cannot install it on this "
        "cluster; releases that would do: 26.7.1, 26.7.0, 26.4.1" in output
    ), output[-3000:]


def test_unsupported_openshift_version(run_playbook, harness, openshift_version, control_plane):
    nodes_for(harness, "shared-device-roce")
    openshift_version("4.14.9")
    output = fails_before_writing(control_plane, run_playbook, "shared-device-roce")
    assert (
        "ERROR openshift-version: OpenShift 4.14.9 is not supported by gpudirect.rdma: it "
        "supports 4.17 to 4.22" in output
    )


def test_an_unreachable_api_server(run_playbook, tmp_path, control_plane):
    kubeconfig = tmp_path / "kubeconfig"
    text = control_plane.kubeconfig.read_text()
    kubeconfig.write_text(text.replace(control_plane.server, "https://127.0.0.1:9"))
    result = run_playbook(
        PREFLIGHT,
        "-i",
        str(REPO_ROOT / "inventories" / "shared-device-roce"),
        check=False,
        kubeconfig=kubeconfig,
    )
    output = flat(result)
    assert result.returncode != 0
    assert "ERROR api: cannot read the cluster" in output
    assert "127.0.0.1" in output and "K8S_AUTH_KUBECONFIG" in output


def test_a_missing_catalog_source(run_playbook, harness, control_plane):
    nodes_for(harness, "shared-device-roce")
    output = fails_before_writing(
        control_plane,
        run_playbook,
        "shared-device-roce",
        "-e",
        "gpudirect_rdma_catalog_source=my-mirror",
    )
    assert "ERROR catalogs: CatalogSource openshift-marketplace/my-mirror does not exist" in output


def test_no_node_with_nvidia_nics_and_gpus(run_playbook, harness, core, control_plane):
    remove_nodes(harness)
    for index, labels in enumerate(
        [
            {"feature.node.kubernetes.io/cpu-cpuid.AVX512F": "true"},
            {"feature.node.kubernetes.io/pci-15b3.present": "true"},
        ]
    ):
        core.create_node(
            {
                "metadata": {
                    "name": f"plain-{index}",
                    "labels": {**labels, FAKE_NODE_LABEL: "true"},
                }
            }
        )
    try:
        output = fails_before_writing(control_plane, run_playbook, "shared-device-roce")
        assert (
            "ERROR nodes: none of the nodes with NVIDIA NICs (plain-1) has an NVIDIA GPU" in output
        )
    finally:
        remove_nodes(harness)


def _states_list(custom, interface: str, link: str):
    states = custom.list_namespaced_custom_object(
        "sriovnetwork.openshift.io", "v1", SRIOV_NAMESPACE, "sriovnetworknodestates"
    )["items"]
    return states and all(
        any(
            i["name"] == interface and i["linkType"] == link
            for i in (s.get("status") or {}).get("interfaces") or []
        )
        for s in states
    )


@pytest.mark.parametrize(
    ("nic", "expected"),
    [
        (
            Nic("ens1f0np0", "eth"),
            "ERROR interfaces: gpudirect_rdma_interfaces: ens8f0np0 does not exist on node "
            "worker-0 (its SriovNetworkNodeState lists ens1f0np0)",
        ),
        (
            Nic("ens8f0np0", "ib"),
            "ERROR interfaces: ens8f0np0 on node worker-0 has link type IB; gpudirect_rdma_fabric "
            "roce needs ETH",
        ),
    ],
)
def test_interfaces_that_are_missing_or_of_the_wrong_link_type(
    nic, expected, run_playbook, harness, custom, control_plane
):
    nodes_for(harness, "sriov-legacy-roce")
    site(run_playbook, "sriov-legacy-roce")  # the SR-IOV operator now reports the NICs
    remove_nodes(harness)
    register_nodes(harness, 2, nfd_labels=True, hardware=Hardware(nics=(nic,)))
    wait_for(
        lambda: _states_list(custom, nic.name, "IB" if nic.link_type == "ib" else "ETH"),
        what="node states reporting the new NICs",
    )
    output = fails_before_writing(control_plane, run_playbook, "sriov-legacy-roce")
    assert expected in output


def test_a_nic_with_fewer_vfs_than_asked(run_playbook, harness, custom, control_plane):
    nodes_for(harness, "sriov-legacy-roce")
    site(run_playbook, "sriov-legacy-roce")  # the SR-IOV operator now reports the NICs
    remove_nodes(harness)
    register_nodes(
        harness, 2, nfd_labels=True, hardware=Hardware(nics=(Nic("ens8f0np0", total_vfs=4),))
    )

    def reports_four():
        states = custom.list_namespaced_custom_object(
            "sriovnetwork.openshift.io", "v1", SRIOV_NAMESPACE, "sriovnetworknodestates"
        )["items"]
        return states and all(
            i.get("totalvfs") == 4
            for s in states
            for i in (s.get("status") or {}).get("interfaces") or []
        )

    wait_for(reports_four, what="node states reporting 4 VFs")
    output = fails_before_writing(control_plane, run_playbook, "sriov-legacy-roce")
    assert (
        "ERROR interfaces: gpudirect_rdma_sriov_num_vfs is 8 but ens8f0np0 on node worker-0 "
        "supports at most 4 VFs" in output
    )
    nodes_for(harness, "sriov-legacy-roce")


def test_intel_nics_without_the_irdma_blacklist_are_a_warning(run_playbook, harness, core):
    nodes_for(harness, "shared-device-roce")
    core.patch_node(
        "worker-0",
        {"metadata": {"labels": {"feature.node.kubernetes.io/pci-8086.present": "true"}}},
    )
    result = run_playbook(
        PREFLIGHT,
        "-i",
        str(REPO_ROOT / "inventories" / "shared-device-roce"),
        *AGREED,
        "-e",
        "gpudirect_rdma_blacklist_irdma=false",
        check=False,
    )
    output = flat(result)
    assert result.returncode == 0, output[-3000:]
    assert (
        "WARNING irdma: nodes with Intel NICs (worker-0) may load irdma, which breaks the DOCA "
        "driver reload: set gpudirect_rdma_blacklist_irdma: true" in output
    )


def _foreign_nic_cluster_policy(custom) -> dict:
    try:
        custom.delete_cluster_custom_object(
            "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
        )
    except ApiException as error:
        assert error.status == 404
    wait_for(
        lambda: (
            not custom.list_cluster_custom_object("mellanox.com", "v1alpha1", "nicclusterpolicies")[
                "items"
            ]
        ),
        what="no NicClusterPolicy",
    )
    return custom.create_cluster_custom_object(
        "mellanox.com",
        "v1alpha1",
        "nicclusterpolicies",
        {
            "apiVersion": "mellanox.com/v1alpha1",
            "kind": "NicClusterPolicy",
            "metadata": {"name": "nic-cluster-policy", "labels": {"team": "network"}},
            "spec": {
                "ofedDriver": {
                    "image": "doca-driver",
                    "repository": "example.invalid/mine",
                    "version": "doca3.3.0-26.01-1.0.0.0-0",
                }
            },
        },
    )


def _not_replaced_without_consent(control_plane, run_playbook, custom, theirs: dict) -> None:
    """site.yml refuses to touch the user's NicClusterPolicy; it stays as it was."""
    output = fails_before_writing(control_plane, run_playbook, "shared-device-roce")
    assert (
        "ERROR ownership: NicClusterPolicy nic-cluster-policy exists and was not created by "
        "gpudirect.rdma" in output
    )
    assert "gpudirect_rdma_take_over: true" in output
    after = custom.get_cluster_custom_object(
        "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
    )
    # The simulated operator writes its status; the spec and labels are still the user's.
    assert after["spec"] == theirs["spec"]
    assert after["metadata"]["labels"] == {"team": "network"}
    assert not any(
        entry["manager"] == "gpudirect.rdma" for entry in after["metadata"]["managedFields"]
    )


def test_a_users_nic_cluster_policy_is_replaced_only_with_consent(
    run_playbook, harness, custom, control_plane
):
    nodes_for(harness, "shared-device-roce")
    theirs = _foreign_nic_cluster_policy(custom)
    try:
        _not_replaced_without_consent(control_plane, run_playbook, custom, theirs)
    except BaseException:
        custom.delete_cluster_custom_object(
            "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
        )
        raise

    result = site(run_playbook, "shared-device-roce", "-e", "gpudirect_rdma_take_over=true")
    assert recap(result.stdout)["failed"] == 0
    assert "its content will be replaced" in flat(result)
    replaced = custom.get_cluster_custom_object(
        "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
    )
    assert replaced["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpudirect.rdma"
    assert replaced["spec"]["ofedDriver"]["repository"] != "example.invalid/mine"


def _policy(name: str, pf: str, link_type: str = "eth", num_vfs: int = 4) -> dict:
    return {
        "apiVersion": "sriovnetwork.openshift.io/v1",
        "kind": "SriovNetworkNodePolicy",
        "metadata": {"name": name, "namespace": SRIOV_NAMESPACE},
        "spec": {
            "resourceName": name.replace("-", ""),
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "numVfs": num_vfs,
            "linkType": link_type,
            "nicSelector": {"pfNames": [pf]},
        },
    }


def test_switching_method_is_reported_and_foreign_policies_on_the_interface_stop_it(
    run_playbook, harness, custom, control_plane
):
    nodes_for(harness, "shared-device-roce")
    site(run_playbook, "shared-device-roce")
    custom.create_namespaced_custom_object(
        "sriovnetwork.openshift.io",
        "v1",
        SRIOV_NAMESPACE,
        "sriovnetworknodepolicies",
        _policy("team-vfs", "ens8f0np0#0-3"),
    )
    custom.create_namespaced_custom_object(
        "sriovnetwork.openshift.io",
        "v1",
        SRIOV_NAMESPACE,
        "sriovnetworknodepolicies",
        _policy("team-ib", "ibp9s0", "ib", 32),
    )
    try:
        output = fails_before_writing(control_plane, run_playbook, "sriov-legacy-roce")
        assert (
            "WARNING method: switching to sriov_legacy: these objects of another method, created "
            "by gpudirect.rdma, will be removed: MacvlanNetwork rdmashared-net (shared-device)"
            in output
        )
        assert (
            "ERROR method: objects that gpudirect.rdma did not create already use the configured "
            "interfaces: SriovNetworkNodePolicy openshift-sriov-network-operator/team-vfs "
            "(on ens8f0np0)" in output
        )
        assert "WARNING infiniband-vfs:" in output and "team-ib (numVfs 32)" in output
    finally:
        for name in ("team-vfs", "team-ib"):
            custom.delete_namespaced_custom_object(
                "sriovnetwork.openshift.io", "v1", SRIOV_NAMESPACE, "sriovnetworknodepolicies", name
            )
    result = site(run_playbook, "sriov-legacy-roce")
    assert "switching to sriov_legacy" in flat(result)


def test_exclusive_rdma_mode_and_the_shared_device_plugin_are_never_mixed(
    run_playbook, harness, custom, control_plane
):
    nodes_for(harness, "sriov-legacy-roce")
    site(run_playbook, "sriov-legacy-roce")  # the SR-IOV operator serves SriovNetworkPoolConfig
    custom.create_namespaced_custom_object(
        "sriovnetwork.openshift.io",
        "v1",
        SRIOV_NAMESPACE,
        "sriovnetworkpoolconfigs",
        {
            "apiVersion": "sriovnetwork.openshift.io/v1",
            "kind": "SriovNetworkPoolConfig",
            "metadata": {"name": "rdma-exclusive", "namespace": SRIOV_NAMESPACE},
            "spec": {"rdmaMode": "exclusive", "nodeSelector": {"matchLabels": {"x": "y"}}},
        },
    )
    try:
        output = fails_before_writing(control_plane, run_playbook, "shared-device-roce")
        assert (
            "ERROR rdma-mode: SriovNetworkPoolConfig rdma-exclusive sets rdmaMode: exclusive"
            in output
        )
    finally:
        custom.delete_namespaced_custom_object(
            "sriovnetwork.openshift.io",
            "v1",
            SRIOV_NAMESPACE,
            "sriovnetworkpoolconfigs",
            "rdma-exclusive",
        )


def test_more_than_16_vfs_on_infiniband_fails_before_any_write(run_playbook, control_plane):
    audit = AuditLog(control_plane.audit_log).mark()
    result = site(
        run_playbook,
        "sriov-legacy-infiniband",
        "-e",
        "gpudirect_rdma_sriov_num_vfs=32",
        check=False,
    )
    assert result.returncode != 0
    assert "at most 16 VFs per PF on InfiniBand" in flat(result)
    assert audit.writes(ADMIN_USER) == []
    assert audit.requests(ADMIN_USER) == [], "bad input is refused before the cluster is read"


def test_single_node_openshift(run_playbook, harness, core, knobs, control_plane):
    remove_nodes(harness)
    register_nodes(harness, 1, prefix="sno", nfd_labels=True)
    core.patch_node("sno-0", {"metadata": {"labels": {"node-role.kubernetes.io/master": ""}}})
    knobs({"openshift": {"topology": "SingleReplica"}})
    try:
        output = fails_before_writing(control_plane, run_playbook, "shared-device-roce")
        assert (
            "ERROR machine-configs: MachineConfigPool worker has no machines: the MachineConfigs "
            "would reach no node (single-node OpenShift: set gpudirect_rdma_machine_config_role: "
            "master)" in output
        )
        assert "WARNING single-node: single-node OpenShift: verify.yml needs two nodes" in output
        result = run_playbook(
            PREFLIGHT,
            "-i",
            str(REPO_ROOT / "inventories" / "shared-device-roce"),
            *AGREED,
            "-e",
            "gpudirect_rdma_machine_config_role=master",
            check=False,
        )
        assert result.returncode == 0, flat(result)[-3000:]
        assert "WARNING single-node" in flat(result)
    finally:
        remove_nodes(harness)


def test_a_gpu_cluster_is_refused_before_any_write(run_playbook, harness, custom, control_plane):
    """GPU Operator 26.7's GPUCluster cannot coexist with the ClusterPolicy site.yml applies:
    refused by name before the first write (it is read while no ClusterPolicy exists)."""
    nodes_for(harness, "shared-device-roce")
    for policy in custom.list_cluster_custom_object("nvidia.com", "v1", "clusterpolicies")["items"]:
        custom.delete_cluster_custom_object(
            "nvidia.com", "v1", "clusterpolicies", policy["metadata"]["name"]
        )
    cluster = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "GPUCluster",
        "metadata": {"name": "gpu-cluster"},
        "spec": {"draDriver": {"computeDomains": {"enabled": True}}},
    }
    custom.create_cluster_custom_object("nvidia.com", "v1alpha1", "gpuclusters", cluster)
    try:
        output = fails_before_writing(control_plane, run_playbook, "shared-device-roce", *AGREED)
    finally:
        custom.delete_cluster_custom_object("nvidia.com", "v1alpha1", "gpuclusters", "gpu-cluster")
    assert "ERROR gpu-cluster: GPUCluster gpu-cluster exists" in output, output[-3000:]
