"""The NIC firmware settings on the local control plane, the simulator playing the NIC
configuration daemon and the Maintenance Operator: each device error reason and a paused
Maintenance Operator end site.yml at once with their own message and a diagnostics archive that
holds the devices; without NIC types the templates are named after the NicDevices' types;
somebody else's Maintenance Operator is used, not replaced; turning the opt-in off removes the
templates; uninstall's reset sets resetToDefault, waits for the NICs, then removes the templates.
(The example converging with a second run of no writes is test_site's, uninstall without reset
test_uninstall's.)"""

from __future__ import annotations

import re
import tarfile
import time

import pytest
import yaml

from tests.harness.audit import AuditLog
from tests.harness.controlplane import ADMIN_USER, REPO_ROOT, SIMULATOR_USER
from tests.integration.helpers import wait_for
from tests.integration.test_site import nodes_for, recap, site

INVENTORY = "nic-configuration-roce"
UNINSTALL = REPO_ROOT / "playbooks" / "uninstall.yml"
NS = "nvidia-network-operator"
GROUP = "configuration.net.nvidia.com"
# The gate's timeout in molecule/shared/simulated-cluster.yml, which site() passes.
GATE_TIMEOUT = 60


def templates(custom) -> list[dict]:
    return custom.list_cluster_custom_object(GROUP, "v1alpha1", "nicconfigurationtemplates")[
        "items"
    ]


def devices(custom) -> list[dict]:
    return custom.list_namespaced_custom_object(GROUP, "v1alpha1", NS, "nicdevices")["items"]


def reason_of(device: dict) -> str | None:
    for condition in (device.get("status") or {}).get("conditions") or []:
        if condition["type"] == "ConfigUpdateInProgress":
            return condition.get("reason")
    return None


def gate_seconds(output: str) -> int:
    """How long the NIC configuration gate waited before it failed, as its message says."""
    found = re.search(r"gate 'NicConfigurationTemplate [^']+' failed after (\d+)s", output)
    assert found, output[-3000:]
    return int(found[1])


def archive_of(output: str, tmp_path) -> dict[str, str]:
    """The files of the diagnostics archive the failed play names."""
    path = next(p for p in tmp_path.glob("gpudirect-rdma-diagnostics-*.tar.gz"))
    assert str(path) in " ".join(output.split()) or path.name in output
    with tarfile.open(path) as tar:
        return {
            m.name.split("/", 1)[-1]: tar.extractfile(m).read().decode()
            for m in tar.getmembers()
            if m.isfile()
        }


@pytest.fixture
def fresh(run_playbook, harness, knobs):
    """The example's nodes with none of the collection's objects left from an earlier test (the
    simulated NICs keep the firmware settings they were given, as NICs do)."""
    run_playbook(UNINSTALL, "-e", "uninstall_timeout=90")
    nodes_for(harness, INVENTORY)
    return knobs


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("IncorrectSpec", "IncorrectSpec"),
        ("SpecValidationFailed", "SpecValidationFailed"),
        ("NonVolatileConfigUpdateFailed", "NonVolatileConfigUpdateFailed"),
        ("RuntimeConfigUpdateFailed", "RuntimeConfigUpdateFailed"),
        ("FirmwareError", "FirmwareError: firmware configuration failed to apply after reboot"),
    ],
)
def test_each_device_error_ends_the_play_at_once_with_its_device_node_and_message(
    reason, words, fresh, run_playbook, custom, tmp_path
):
    fresh({"nic_configuration": {"error_reason": reason, "error_nodes": ["worker-1"]}})
    began = time.monotonic()
    result = site(run_playbook, INVENTORY, "-e", f"diagnostics_dir={tmp_path}", check=False)
    took = time.monotonic() - began
    output = " ".join(result.stdout.split())
    assert result.returncode != 0
    assert "gate 'NicConfigurationTemplate gpudirect-rdma-connectx-7 applied' failed" in output
    assert "on node worker-1: " + words in output, result.stdout[-3000:]
    assert gate_seconds(output) < GATE_TIMEOUT
    assert took < 4 * GATE_TIMEOUT, f"{took:.0f}s"
    # It failed before the RDMA method's objects and the GPU Operator.
    assert not custom.list_cluster_custom_object("nvidia.com", "v1", "clusterpolicies")["items"]
    files = archive_of(result.stdout, tmp_path)
    listed = yaml.safe_load(files["nicdevices.yaml"])
    assert any(reason_of(d) == reason for d in listed), [reason_of(d) for d in listed]
    assert yaml.safe_load(files["nicconfigurationtemplates.yaml"])
    summary = yaml.safe_load(files["summary.yaml"])
    assert summary["gate"]["kind"] == "NicConfigurationTemplate"


def test_a_paused_maintenance_operator_is_reported_as_the_reason_not_as_a_timeout(
    fresh, run_playbook, custom, tmp_path
):
    began = time.monotonic()
    result = site(
        run_playbook,
        INVENTORY,
        "-e",
        "gpudirect_rdma_maintenance_max_unavailable=0",
        "-e",
        f"diagnostics_dir={tmp_path}",
        check=False,
    )
    took = time.monotonic() - began
    output = " ".join(result.stdout.split())
    assert result.returncode != 0
    assert (
        "the Maintenance Operator is paused (MaintenanceOperatorConfig "
        "nvidia-maintenance-operator/default has maxUnavailable 0)" in output
    ), result.stdout[-3000:]
    assert "stays UpdateStarted" in output
    assert "not reached after" not in output
    assert gate_seconds(output) < GATE_TIMEOUT
    assert took < 4 * GATE_TIMEOUT, f"{took:.0f}s"
    files = archive_of(result.stdout, tmp_path)
    maintenances = yaml.safe_load(files["nodemaintenances.yaml"])
    assert maintenances, "the node maintenances the daemon asked for"
    assert (
        yaml.safe_load(files["maintenanceoperatorconfigs.yaml"])[0]["spec"]["maxUnavailable"] == 0
    )


def test_without_nic_types_the_templates_follow_the_nicdevices(fresh, run_playbook, custom):
    result = site(run_playbook, INVENTORY, "-e", "gpudirect_rdma_nic_type=")
    assert recap(result.stdout)["failed"] == 0
    # The simulated nodes have ConnectX-7s (PCI device ID 1021).
    assert [t["metadata"]["name"] for t in templates(custom)] == ["gpudirect-rdma-connectx-7"]
    assert {reason_of(d) for d in devices(custom)} == {"UpdateSuccessful"}


def test_turning_it_off_removes_the_templates_and_leaves_the_nics_as_they_are(
    fresh, run_playbook, custom
):
    site(run_playbook, INVENTORY)
    configured = {d["metadata"]["name"]: d for d in devices(custom)}
    assert configured and {reason_of(d) for d in configured.values()} == {"UpdateSuccessful"}
    result = site(run_playbook, INVENTORY, "-e", "gpudirect_rdma_nic_configuration=false")
    assert recap(result.stdout)["failed"] == 0
    assert templates(custom) == []
    # The inventory's NIC settings stay for when it is on again, and the plan says so.
    said = " ".join((result.stdout + result.stderr).split())
    assert (
        "gpudirect_rdma_nic_type is set but unused while gpudirect_rdma_nic_configuration is false"
        in said
    )
    policy = custom.get_cluster_custom_object(
        "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
    )
    assert "nicConfigurationOperator" not in policy["spec"]


def test_somebody_elses_maintenance_operator_is_used_not_replaced(
    fresh, run_playbook, custom, core, control_plane
):
    theirs = "team-maintenance"
    core.create_namespace({"metadata": {"name": theirs}})
    custom.create_namespaced_custom_object(
        "operators.coreos.com",
        "v1",
        theirs,
        "operatorgroups",
        {
            "apiVersion": "operators.coreos.com/v1",
            "kind": "OperatorGroup",
            "metadata": {"name": "team"},
            "spec": {"targetNamespaces": [theirs]},
        },
    )
    custom.create_namespaced_custom_object(
        "operators.coreos.com",
        "v1alpha1",
        theirs,
        "subscriptions",
        {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": "maintenance"},
            "spec": {
                "name": "nvidia-maintenance-operator",
                "channel": "stable",
                "source": "certified-operators",
                "sourceNamespace": "openshift-marketplace",
            },
        },
    )

    def succeeded() -> bool:
        found = custom.list_namespaced_custom_object(
            "operators.coreos.com", "v1alpha1", theirs, "clusterserviceversions"
        )["items"]
        return any((c.get("status") or {}).get("phase") == "Succeeded" for c in found)

    try:
        wait_for(succeeded, what="their Maintenance Operator's CSV Succeeded")
        audit = AuditLog(control_plane.audit_log).mark()
        result = site(run_playbook, INVENTORY)
        # Ansible writes warnings to stderr.
        output = " ".join((result.stdout + result.stderr).split())
        assert recap(result.stdout)["failed"] == 0
        assert (
            "the NVIDIA Maintenance Operator of Subscription team-maintenance/maintenance "
            "(CSV nvidia-maintenance-operator.v26.4.0) was installed by somebody else" in output
        ), result.stdout[-3000:]
        written = {(w.resource, w.namespace) for w in audit.writes(ADMIN_USER)}
        assert not any(ns == "nvidia-maintenance-operator" for _r, ns in written), written
        assert not any(r == "maintenanceoperatorconfigs" for r, _ns in written), written
        assert {reason_of(d) for d in devices(custom)} == {"UpdateSuccessful"}
    finally:
        core.delete_namespace(theirs)
        # Until it is gone, its Subscription is somebody else's Maintenance Operator to every
        # later test of this worker (their site.yml would use it, not install the collection's).
        wait_for(
            lambda: theirs not in {n.metadata.name for n in core.list_namespace().items},
            timeout=120,
            what=f"namespace {theirs} to be gone",
        )


def test_uninstall_with_reset_returns_the_nics_to_their_defaults_before_the_templates_go(
    fresh, run_playbook, custom, control_plane
):
    site(run_playbook, INVENTORY)
    (template,) = templates(custom)
    name = template["metadata"]["name"]
    audit = AuditLog(control_plane.audit_log).mark()
    checked = run_playbook(UNINSTALL, "--check", "-e", "uninstall_nic_configuration=reset")
    assert audit.writes(ADMIN_USER) == []
    assert "REBOOTS" in checked.stdout
    result = run_playbook(
        UNINSTALL, "-e", "uninstall_nic_configuration=reset", "-e", "uninstall_timeout=90"
    )
    assert recap(result.stdout)["failed"] == 0
    writes = [
        (w.verb, w.resource, w.name)
        for w in audit.writes(ADMIN_USER)
        if w.resource == "nicconfigurationtemplates"
    ]
    assert writes == [("patch", "nicconfigurationtemplates", name)] + [
        ("delete", "nicconfigurationtemplates", name)
    ], writes
    # The simulated NICs are back at their firmware defaults: site.yml configures them again
    # through maintenance, which NICs that kept their settings would not need.
    assert templates(custom) == []
    again = AuditLog(control_plane.audit_log).mark()
    result = site(run_playbook, INVENTORY)
    assert recap(result.stdout)["failed"] == 0
    asked = [
        w
        for w in again.writes(SIMULATOR_USER)
        if w.resource == "nodemaintenances" and w.verb == "create"
    ]
    assert len(asked) == 2, [str(w) for w in asked]
