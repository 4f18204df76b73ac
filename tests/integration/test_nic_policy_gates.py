"""The NIC policies on the default releases (Network Operator 26.7): the API server serves the
26.7 CRDs, the simulated operator writes status.conditions as upstream's computes them, and the
NicClusterPolicy gate names a component in error with its reason and message; the 26.7 RoCE QoS
fields of the NIC firmware templates are kept by the 26.7 schema."""

from __future__ import annotations

from kubernetes import dynamic

from ansible_collections.gpudirect.rdma.plugins.filter.objects import objects as objects_filter
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.integration.helpers import assert_kept, server_side_dry_run
from tests.integration.test_site import installed_csvs, nodes_for, recap, site
from tests.unit.inventories import inputs

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


NEWER_QOS = {"roce_ecn": True, "roce_pause_frames": False, "roce_cable_length": 5}


def dry_run_templates(harness, plan) -> list[dict]:
    """The plan's NicConfigurationTemplates as the server would store them (strict field
    validation), with their Namespace created first; under a name of their own, so that a
    template a converge left does not conflict."""
    resources = dynamic.DynamicClient(harness)
    stored = []
    for obj in objects_filter(plan):
        if obj["kind"] in ("Namespace", "NicConfigurationTemplate"):
            if obj["kind"] == "NicConfigurationTemplate":
                obj = {**obj, "metadata": {**obj["metadata"], "name": "dry-run-template"}}
            kept = server_side_dry_run(resources, obj)
            if obj["kind"] == "NicConfigurationTemplate":
                assert_kept(kept["spec"], obj["spec"], obj["metadata"]["name"])
                stored.append(kept)
    return stored


def test_the_26_7_qos_fields_are_kept_by_the_26_7_schema(harness):
    plan = build_plan({**inputs("nic-configuration-roce"), **NEWER_QOS})
    (template,) = dry_run_templates(harness, plan)
    assert template["spec"]["template"]["roceOptimized"]["qos"] == {
        "trust": "dscp",
        "pfc": "0,0,0,1,0,0,0,0",
        "ecn": {"enabled": True, "priority": 3},
        "pauseFrames": {"enabled": False},
        "cableLen": 5,
    }
