"""The NIC policies on the default releases (Network Operator 26.7): the API server serves the
26.7 CRDs, the simulated operator writes status.conditions as upstream's computes them, and the
NicClusterPolicy gate names a component in error with its reason and message."""

from __future__ import annotations

from tests.integration.test_site import installed_csvs, nodes_for, recap, site

ERROR = "failed to create k8s objects from manifest: image doca-driver:doca3.5.0 not found"


def test_the_default_releases_install_and_their_policies_carry_conditions(
    run_playbook, harness, custom
):
    nodes_for(harness, "node-groups")
    result = site(run_playbook, "node-groups")
    assert recap(result.stdout)["failed"] == 0
    csvs = installed_csvs(custom)
    assert csvs["nvidia-network-operator"] == "nvidia-network-operator.v26.7.1"
    assert csvs["gpu-operator-certified"] == "gpu-operator-certified.v26.7.2"
    for plural in ("nicclusterpolicies", "nicnodepolicies"):
        for policy in custom.list_cluster_custom_object("mellanox.com", "v1alpha1", plural)[
            "items"
        ]:
            conditions = {c["type"]: c for c in policy["status"]["conditions"]}
            assert conditions["Ready"]["status"] == "True", policy["status"]
            assert conditions["Ready"]["reason"] == "AllComponentsReady"
            generation = policy["metadata"]["generation"]
            assert {c["observedGeneration"] for c in conditions.values()} == {generation}
            if plural == "nicnodepolicies":
                assert set(conditions) == {
                    "Ready",
                    "OFEDDriverReady",
                    "RDMASharedDevicePluginReady",
                }


def test_a_component_in_error_fails_the_gate_naming_it(run_playbook, harness, knobs):
    nodes_for(harness, "shared-device-roce")
    knobs({"network_operator": {"error_component": "state-OFED", "error_message": ERROR}})
    result = site(
        run_playbook,
        "shared-device-roce",
        "-e",
        "network_operator_ready_timeout=5",
        "-e",
        "gpudirect_rdma_allow_disruption=all",
        check=False,
    )
    assert result.returncode != 0
    output = " ".join(result.stdout.split())
    assert "gate 'NicClusterPolicy ready' not reached after 5s" in output
    assert (
        "last seen: NicClusterPolicy nic-cluster-policy status.state is 'notReady', condition "
        f"Ready False ComponentError; not ready: OFEDDriverReady False ComponentError: {ERROR}"
    ) in output, output[-3000:]
