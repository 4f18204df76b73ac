"""Every example inventory on an older release of each NVIDIA operator (Network Operator 26.4.1,
GPU Operator 26.3.3) while the defaults are 26.7: on this worker's control plane with the Network
Operator CRDs of 26.4 (the API server judges every object by that release's schema), each
converges, installs the release's CSVs from their version channels, re-runs with 0 writes and
verifies. The 26.7 CRDs are back afterwards, for the next test file."""

from __future__ import annotations

import json

import pytest
from kubernetes import dynamic

from ansible_collections.gpudirect.rdma.plugins.filter.objects import objects as objects_filter
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import PlanError, build_plan
from tests.harness.audit import AuditLog
from tests.harness.controlplane import (
    ADMIN_USER,
    LATEST_NETWORK_OPERATOR_CRDS,
    REPO_ROOT,
    network_operator_crd_line,
    use_network_operator_crds,
)
from tests.integration.helpers import server_side_dry_run
from tests.integration.test_nic_policy_gates import NEWER_QOS, dry_run_templates
from tests.integration.test_site import installed_csvs, nodes_for, recap, site
from tests.integration.test_verify import verify
from tests.unit.inventories import NAMES, inputs

UNINSTALL = REPO_ROOT / "playbooks" / "uninstall.yml"
NETWORK_OPERATOR = "26.4.1"
GPU_OPERATOR = "26.3.3"
RELEASES = (
    "-e",
    f"gpudirect_rdma_network_operator_release={NETWORK_OPERATOR}",
    "-e",
    f"gpudirect_rdma_gpu_operator_release={GPU_OPERATOR}",
)


@pytest.fixture(scope="module")
def older_crds(control_plane, run_playbook):
    """A plane without the collection's objects (OLM does not go back a release on its own),
    serving the Network Operator CRDs of 26.4; the newest again at the end."""
    run_playbook(UNINSTALL, "-e", "uninstall_timeout=90")
    line = network_operator_crd_line(NETWORK_OPERATOR)
    assert line != LATEST_NETWORK_OPERATOR_CRDS
    replaced = use_network_operator_crds(control_plane.harness_kubeconfig, line)
    assert "nicclusterpolicies.mellanox.com" in replaced
    yield
    run_playbook(UNINSTALL, "-e", "uninstall_timeout=90")
    use_network_operator_crds(control_plane.harness_kubeconfig, LATEST_NETWORK_OPERATOR_CRDS)


def test_the_plane_serves_the_older_schema(older_crds, harness):
    from kubernetes import client

    crd = client.ApiextensionsV1Api(harness).read_custom_resource_definition(
        "nicclusterpolicies.mellanox.com"
    )
    status = crd.spec.versions[0].schema.open_apiv3_schema.properties["status"]
    assert "conditions" not in status.properties
    assert {"state", "appliedStates"} <= set(status.properties)


# The NIC firmware example last: the next example's fresh nodes would meet its templates and be
# put under maintenance (cordoned) while they are verified (conftest.no_nic_configuration_left).
ORDER = sorted(NAMES, key=lambda name: name == "nic-configuration-roce")


@pytest.mark.parametrize("inventory", ORDER)
def test_an_example_converges_and_verifies_on_the_older_releases(
    inventory, older_crds, run_playbook, harness, custom, control_plane, tmp_path
):
    nodes_for(harness, inventory)
    first = site(run_playbook, inventory, *RELEASES)
    assert recap(first.stdout)["failed"] == 0
    csvs = installed_csvs(custom)
    assert csvs["nvidia-network-operator"] == f"nvidia-network-operator.v{NETWORK_OPERATOR}"
    assert csvs["gpu-operator-certified"] == f"gpu-operator-certified.v{GPU_OPERATOR}"
    for policy in custom.list_cluster_custom_object(
        "mellanox.com", "v1alpha1", "nicclusterpolicies"
    )["items"]:
        assert policy["status"]["state"] == "ready"
        assert "conditions" not in policy["status"]  # 26.4 writes none, its CRD has none
        driver = (policy["spec"].get("ofedDriver") or {}).get("version")
        assert driver in (None, "doca3.4.1-26.04-1.1.0.0-1")
    audit = AuditLog(control_plane.audit_log).mark()
    second = site(run_playbook, inventory, *RELEASES)
    assert recap(second.stdout)["changed"] == 0, second.stdout[-3000:]
    assert audit.writes(ADMIN_USER) == [], [str(w) for w in audit.writes(ADMIN_USER)]
    result = verify(run_playbook, inventory, tmp_path, *RELEASES)
    assert recap(result.stdout)["failed"] == 0
    report = json.loads((tmp_path / "verify-report.json").read_text())
    assert report["passed"] is True


def test_the_templates_are_valid_for_the_26_4_schema_and_the_newer_qos_is_not(older_crds, harness):
    """Without the 26.7 QoS settings the NIC firmware templates are what the 26.4 schema takes;
    their fields would be dropped by the 26.4 schema, and so the plan refuses them on 26.4.1."""
    plan = build_plan({**inputs("nic-configuration-roce"), "network_operator_release": "26.4.1"})
    (template,) = dry_run_templates(harness, plan)
    assert "ecn" not in template["spec"]["template"]["roceOptimized"]["qos"]
    newer = build_plan({**inputs("nic-configuration-roce"), **NEWER_QOS})
    resources = dynamic.DynamicClient(harness)
    (sent,) = [o for o in objects_filter(newer) if o["kind"] == "NicConfigurationTemplate"]
    sent["metadata"]["name"] = "dry-run-template"  # beside any template a converge left
    stored = server_side_dry_run(resources, sent)
    assert set(stored["spec"]["template"]["roceOptimized"]["qos"]) == {"trust", "pfc"}
    with pytest.raises(PlanError, match="gpudirect_rdma_roce_ecn: got True; expected it unset"):
        build_plan(
            {**inputs("nic-configuration-roce"), **NEWER_QOS, "network_operator_release": "26.4.1"}
        )
