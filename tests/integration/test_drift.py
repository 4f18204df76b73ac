"""drift.yml on the local control plane: a converged cluster (two node groups, the NIC firmware
opt-in, the operators at older releases with Manual approval) reports no drift, as a user bound
only to rbac/gpudirect-rdma-viewer.yaml, writing nothing; then each kind of drift made by hand
(another field manager's edit, a deleted object, a relabelled node, a NIC reset to its defaults,
an upgrade approved beside the pin) is in the report with its step, object, field and who changed
it, the play fails, the JUnit file reads as JUnit readers read it and the page opens in Chromium."""

from __future__ import annotations

import json

import junitparser
import pytest
import yaml
from kubernetes import dynamic

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import group_name
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.harness.audit import AuditLog
from tests.harness.controlplane import REPO_ROOT
from tests.integration.browser import open_page, page_errors
from tests.integration.helpers import wait_for
from tests.integration.test_site import SIMULATED, nodes_for, recap, site
from tests.integration.test_upgrade import MANUAL, OLDER
from tests.simulator.core import DEFAULT_KNOBS
from tests.unit.inventories import inputs

DRIFT = REPO_ROOT / "playbooks" / "drift.yml"
UNINSTALL = REPO_ROOT / "playbooks" / "uninstall.yml"
VIEWER = REPO_ROOT / "rbac" / "gpudirect-rdma-viewer.yaml"
INVENTORY = "node-groups"
# The NIC firmware opt-in, and the operators at older releases on Manual approval: OLM plans
# the channel's next CSV and waits for its approval, which the test gives by hand.
ARGS = ("-e", "gpudirect_rdma_nic_configuration=true", *OLDER)
VIEWER_USER = "gpudirect-rdma-auditor"
EVERYTHING = (
    "-e",
    "uninstall_timeout=90",
    "-e",
    "uninstall_namespaces=true",
    "-e",
    "uninstall_machine_configs=true",
)
NV_CONFIG_ANNOTATION = "simulator.gpudirect.rdma/nic-nv-config"
# The channel of the GPU Operator release after the older one (upgrade.yml's first hop).
UPGRADED_CHANNEL = "v26.3"
EDITED_VERSION = "24.10-0.7.0.0-1"


def drift(run_playbook, folder, *extra: str, kubeconfig=None):
    return run_playbook(
        DRIFT,
        "-i",
        str(REPO_ROOT / "inventories" / INVENTORY),
        "-e",
        f"@{SIMULATED}",
        *ARGS,
        "-e",
        f"drift_report_dir={folder}",
        *extra,
        check=False,
        kubeconfig=kubeconfig,
    )


def report(folder) -> dict:
    return json.loads((folder / "drift-report.json").read_text())


@pytest.fixture(scope="module")
def converged(control_plane, run_playbook, harness):
    """node-groups converged with the NIC firmware opt-in at the older releases, on a plane
    without the collection's objects (OLM does not go back a release); everything removed at the
    end."""
    run_playbook(UNINSTALL, *EVERYTHING)
    nodes_for(harness, INVENTORY)
    first = site(run_playbook, INVENTORY, *ARGS)
    assert recap(first.stdout)["failed"] == 0
    yield build_plan(
        {
            **inputs(INVENTORY),
            "nic_configuration": True,
            "network_operator_release": "26.1.0",
            "gpu_operator_release": "25.10.1",
            **{key.removeprefix("gpudirect_rdma_"): v for key, v in json.loads(MANUAL).items()},
        }
    )
    run_playbook(UNINSTALL, *EVERYTHING)


@pytest.fixture(scope="module")
def viewer(control_plane, harness, tmp_path_factory):
    """A user in no group bound to the shipped viewer ClusterRole alone."""
    kube = dynamic.DynamicClient(harness)
    [role] = [doc for doc in yaml.safe_load_all(VIEWER.read_text()) if doc]
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "gpudirect-rdma-viewer-test"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role["metadata"]["name"],
        },
        "subjects": [
            {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": VIEWER_USER}
        ],
    }
    for obj in (role, binding):
        kube.resources.get(api_version=obj["apiVersion"], kind=obj["kind"]).server_side_apply(
            body=obj, field_manager="test-harness"
        )
    kubeconfig = tmp_path_factory.mktemp("viewer") / "viewer.kubeconfig"
    control_plane.write_kubeconfig(kubeconfig, VIEWER_USER, [])
    yield kubeconfig
    for obj in (binding, role):
        kube.resources.get(api_version=obj["apiVersion"], kind=obj["kind"]).delete(
            name=obj["metadata"]["name"]
        )


def test_a_converged_cluster_has_no_drift_even_for_a_reader_who_may_only_read(
    converged, run_playbook, viewer, control_plane, tmp_path
):
    audit = AuditLog(control_plane.audit_log).mark()
    result = drift(run_playbook, tmp_path, kubeconfig=viewer)
    assert result.returncode == 0, result.stdout[result.stdout.find("msg:") :][:800]
    assert "no drift: the cluster is as the plan says" in " ".join(result.stdout.split())
    asked = audit.requests(VIEWER_USER)
    assert asked, "the viewer read the cluster"
    assert [str(r) for r in asked if r.code == 403] == []
    assert audit.writes(VIEWER_USER) == []
    found = report(tmp_path)
    assert found["drifted"] is False and found["differences"] == []
    assert found["run"]["cluster"] and found["run"]["date"]
    suite = junitparser.JUnitXml.fromfile(str(tmp_path / "drift-report.xml"))
    cases = [case for each in suite for case in each]
    assert len(cases) == len(found["steps"]) and all(case.is_passed for case in cases)


def test_each_drift_made_by_hand_is_reported_with_its_step_object_and_who(
    converged, run_playbook, harness, core, custom, knobs, tmp_path
):
    plan = converged
    kube = dynamic.DynamicClient(harness)
    policies = kube.resources.get(api_version="mellanox.com/v1alpha1", kind="NicNodePolicy")
    first, second = plan["groups"]
    # Another field manager's edit of a NicNodePolicy.
    edited = group_name(first)
    policies.patch(
        name=edited,
        body={"spec": {"ofedDriver": {"version": EDITED_VERSION}}},
        content_type="application/merge-patch+json",
        field_manager="alice-edit",
    )
    # A deleted object: the first group's first RDMA network.
    method = table.METHOD_STEPS[first["method"]]
    network = next(o for o in table.objects(method, plan) if o["kind"].endswith("Network"))
    deleted = f"{network['kind']} {network['metadata']['name']}"
    kube.resources.get(api_version=network["apiVersion"], kind=network["kind"]).delete(
        name=network["metadata"]["name"]
    )
    # A node of the first group relabelled into the second.
    nodes = core.list_node().items
    moved = next(
        n.metadata.name
        for n in nodes
        if all((n.metadata.labels or {}).get(k) == v for k, v in first["node_selector"].items())
    )
    core.patch_node(
        moved, {"metadata": {"labels": second["node_selector"]}}, field_manager="carol-relabel"
    )
    # The NICs of a node of the second group reset to their factory settings (InfiniBand links
    # back to Ethernet): the NIC daemon sees it and configures them again.
    reset = next(
        n.metadata.name
        for n in nodes
        if all((n.metadata.labels or {}).get(k) == v for k, v in second["node_selector"].items())
    )
    assert NV_CONFIG_ANNOTATION in (core.read_node(reset).metadata.annotations or {})
    # Its reboot does not come while the test runs: the devices stay not ready for the report,
    # however fast the simulator goes.
    knobs({"nic_configuration": {**DEFAULT_KNOBS["nic_configuration"], "hold_nodes": [reset]}})
    core.patch_node(reset, {"metadata": {"annotations": {NV_CONFIG_ANNOTATION: "{}"}}})

    def reconfiguring() -> list[str]:
        devices = custom.list_cluster_custom_object(
            "configuration.net.nvidia.com", "v1alpha1", "nicdevices"
        )["items"]
        return [
            c["reason"]
            for d in devices
            if d["status"].get("node") == reset
            for c in d["status"].get("conditions") or []
            if c["type"] == "ConfigUpdateInProgress" and c["reason"] != "UpdateSuccessful"
        ]

    wait_for(reconfiguring, timeout=30, what=f"the NIC daemon to see {reset}'s NICs reset")
    # The GPU Operator moved by hand to the next release's channel, whose CSV OLM plans and
    # (Manual approval) waits to have approved; approved by hand too.
    gpu = plan["operators"]["gpu_operator"]
    olm = ("operators.coreos.com", "v1alpha1", gpu["namespace"])

    def subscription() -> dict:
        return custom.get_namespaced_custom_object(*olm, "subscriptions", gpu["subscription"])

    before = subscription()["status"]
    subscriptions = kube.resources.get(
        api_version="operators.coreos.com/v1alpha1", kind="Subscription"
    )
    subscriptions.patch(
        name=gpu["subscription"],
        namespace=gpu["namespace"],
        body={"spec": {"channel": UPGRADED_CHANNEL}},
        content_type="application/merge-patch+json",
        field_manager="bob-console",
    )
    waiting = wait_for(
        lambda: (
            (ref := subscription()["status"].get("installPlanRef"))
            and ref["name"] != before["installPlanRef"]["name"]
            and ref["name"]
        ),
        timeout=60,
        what="OLM's InstallPlan for the new channel",
    )
    custom.patch_namespaced_custom_object(
        *olm, "installplans", waiting, {"spec": {"approved": True}}
    )
    wait_for(
        lambda: subscription()["status"].get("installedCSV") not in (None, before["installedCSV"]),
        timeout=60,
        what="the approved upgrade",
    )

    result = drift(run_playbook, tmp_path)
    assert result.returncode != 0, "drift fails the play"
    assert recap(result.stdout)["failed"] == 1
    found = report(tmp_path)
    assert found["drifted"] is True
    items = found["differences"]

    def one(kind: str, step: str, what: str) -> dict:
        matching = [
            i for i in items if i["kind"] == kind and i["step"] == step and what in i["object"]
        ]
        assert matching, f"no {kind} of {what} under {step}: {json.dumps(items, indent=1)}"
        return matching[0]

    edit = one("changed", "nic-node-policies", f"NicNodePolicy {edited}")
    assert edit["field"] == "spec.ofedDriver.version"
    assert edit["found"] == EDITED_VERSION and edit["planned"] != EDITED_VERSION
    assert [w["manager"] for w in edit["changed_by"]] == ["alice-edit"]
    assert edit["changed_by"][0]["operation"] == "Update"
    one("missing", method.name, deleted)
    relabelled = one("node", "cluster", f"Node {moved}")
    assert f"in node group {group_name(second)}" in relabelled["message"]
    assert [w["manager"] for w in relabelled["changed_by"]] == ["carol-relabel"]
    reconfigured = [
        i
        for i in items
        if (i["kind"], i["step"], i.get("node")) == ("not ready", "nic-configuration", reset)
    ]
    assert reconfigured, json.dumps(items, indent=1)
    assert all("does not hold its template's settings" in i["message"] for i in reconfigured)
    # Configured again: waiting for maintenance, or written and rebooting.
    assert all(
        "UpdateStarted" in i["message"] or "PendingReboot" in i["message"] for i in reconfigured
    ), reconfigured
    upgraded = one("preflight", "cluster", "operator-versions")
    assert "the cluster runs" in upgraded["message"] and gpu["pinned_csv"] in upgraded["message"]
    channel = one("changed", "gpu-operator", "Subscription")
    assert channel["field"] == "spec.channel" and channel["found"] == UPGRADED_CHANNEL
    assert [w["manager"] for w in channel["changed_by"]] == ["bob-console"]

    suite = junitparser.JUnitXml.fromfile(str(tmp_path / "drift-report.xml"))
    cases = {case.classname: case for each in suite for case in each}
    for step in ("cluster", "nic-node-policies", method.name, "nic-configuration"):
        case = cases[f"gpudirect.rdma.drift.{step}"]
        assert not case.is_passed, step
    assert cases["gpudirect.rdma.drift.sriov-network-operator"].is_passed
    dom, picture, log = open_page(tmp_path / "drift-report.html", "drift-report.html.png", 2400)
    assert page_errors(log) == []
    assert "alice-edit" in dom and network["metadata"]["name"] in dom and moved in dom
    print(f"screenshot: {picture}")
