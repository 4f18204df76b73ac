"""The NIC policy model switched on a converged cluster, cluster to node and back, with the
Network Operator's policy webhooks registered (the simulator serves them; the API server calls
them on every write): each way the run says what it disrupts, the writes come in the one order
the webhooks accept (audit log), and afterwards one kind holds the per-node sections."""

from __future__ import annotations

import functools
import json

from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.harness.audit import AuditLog
from tests.harness.controlplane import ADMIN_USER
from tests.integration.test_site import nodes_for, recap, site

INVENTORY = "shared-device-roce"
POLICY_KINDS = ("nicclusterpolicies", "nicnodepolicies")


def policy_writes(audit: AuditLog) -> list[tuple[str, str, str]]:
    return [
        (w.verb, w.resource, w.name) for w in audit.writes(ADMIN_USER) if w.resource in POLICY_KINDS
    ]


def said(run) -> str:
    """What a run printed, warnings (on stderr) too, on one line."""
    return " ".join((run.stdout + run.stderr).split())


def policies(custom) -> dict[str, dict]:
    found = {}
    for plural in POLICY_KINDS:
        for item in custom.list_cluster_custom_object("mellanox.com", "v1alpha1", plural)["items"]:
            found[f"{plural}/{item['metadata']['name']}"] = set(item["spec"])
    return found


def test_switching_the_model_there_and_back_never_gives_a_section_two_owners(
    run_playbook, harness, custom, control_plane
):
    nodes_for(harness, INVENTORY)
    site(run_playbook, INVENTORY)
    webhooks = client.AdmissionregistrationV1Api(harness).list_validating_webhook_configuration()
    assert {w.webhooks[0].name for w in webhooks.items} >= {
        "vnicclusterpolicy.kb.io",
        "vnicnodepolicy.kb.io",
    }
    assert policies(custom) == {
        "nicclusterpolicies/nic-cluster-policy": {"ofedDriver", "rdmaSharedDevicePlugin"}
    }

    # Check mode says the same as the run will, and writes nothing.
    audit = AuditLog(control_plane.audit_log).mark()
    checked = site(run_playbook, INVENTORY, "-e", "gpudirect_rdma_nic_policy_model=node", "--check")
    checked_text = said(checked)
    assert "NIC policy model cluster to node" in checked_text, checked.stdout[-3000:]
    assert audit.writes(ADMIN_USER) == []

    audit = AuditLog(control_plane.audit_log).mark()
    to_node = site(run_playbook, INVENTORY, "-e", "gpudirect_rdma_nic_policy_model=node")
    text = said(to_node)
    assert (
        "NIC policy model cluster to node: NicClusterPolicy nic-cluster-policy is deleted "
        "(nothing cluster-wide is left for it) first, then NicNodePolicy gpudirect-rdma takes "
        "ofedDriver, rdmaSharedDevicePlugin" in text
    ), to_node.stdout[-3000:]
    assert "the DOCA driver DaemonSet is replaced on 2 node(s)" in text
    # Shared device over RoCE with whereabouts keeps nothing cluster-wide: the NicClusterPolicy
    # goes (and is gone) before the NicNodePolicy comes.
    assert policy_writes(audit) == [
        ("delete", "nicclusterpolicies", "nic-cluster-policy"),
        ("patch", "nicnodepolicies", "gpudirect-rdma"),
    ]
    assert policies(custom) == {
        "nicnodepolicies/gpudirect-rdma": {"nodeSelector", "ofedDriver", "rdmaSharedDevicePlugin"},
    }

    audit = AuditLog(control_plane.audit_log).mark()
    back = site(run_playbook, INVENTORY)
    text = said(back)
    assert (
        "NIC policy model node to cluster: NicNodePolicy gpudirect-rdma is deleted first, then "
        "NicClusterPolicy nic-cluster-policy takes ofedDriver, rdmaSharedDevicePlugin" in text
    ), back.stdout[-3000:]
    assert policy_writes(audit) == [
        ("delete", "nicnodepolicies", "gpudirect-rdma"),
        ("patch", "nicclusterpolicies", "nic-cluster-policy"),
    ]
    assert policies(custom) == {
        "nicclusterpolicies/nic-cluster-policy": {"ofedDriver", "rdmaSharedDevicePlugin"}
    }

    audit = AuditLog(control_plane.audit_log).mark()
    again = site(run_playbook, INVENTORY)
    assert recap(again.stdout)["changed"] == 0
    assert audit.writes(ADMIN_USER) == []


def _refusal(create) -> str:
    try:
        create()
    except ApiException as error:
        assert error.status == 403, error.body
        return json.loads(error.body)["message"]
    raise AssertionError("the API server took it")


def _node_policy(name: str, spec: dict) -> dict:
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicNodePolicy",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_the_served_webhooks_refuse_what_the_operators_refuse(run_playbook, harness, custom):
    """Once the Network Operator's CSV has installed, the API server calls the simulator's
    webhooks on each write, dry runs too, and says which webhook refused and why."""
    nodes_for(harness, INVENTORY)
    site(run_playbook, INVENTORY)  # the cluster model: the NicClusterPolicy has ofedDriver
    create = functools.partial(
        custom.create_cluster_custom_object, "mellanox.com", "v1alpha1", "nicnodepolicies"
    )
    driver = {"image": "doca-driver", "repository": "example.invalid", "version": "bad"}
    assert _refusal(lambda: create(_node_policy("x" * 31, {}))) == (
        'admission webhook "vnicnodepolicy.kb.io" denied the request: NicNodePolicy name '
        f"'{'x' * 31}' is 31 characters long; it must be at most 30"
    )
    assert "invalid OFED version 'bad'" in _refusal(
        lambda: create(_node_policy("pinned", {"ofedDriver": driver}), dry_run="All")
    )
    driver["version"] = "doca3.2.2-25.10-2.4.1.0-4"
    assert _refusal(lambda: create(_node_policy("pinned", {"ofedDriver": driver}))).endswith(
        "NicClusterPolicy already defines ofedDriver; NicNodePolicy 'pinned' cannot also define it"
    )
    create(_node_policy("first", {"nodeSelector": {"kubernetes.io/os": "linux"}}))
    try:
        assert _refusal(lambda: create(_node_policy("second", {}))).endswith(
            'node selector overlap detected: node "worker-0" is selected by policies: '
            "[first, second]"
        )
    finally:
        custom.delete_cluster_custom_object("mellanox.com", "v1alpha1", "nicnodepolicies", "first")


def test_a_nic_node_policy_not_ready_names_its_group_state_and_failing_applied_state(
    run_playbook, harness, knobs
):
    nodes_for(harness, "node-groups")
    knobs({"nic_node_policies": {"not_ready": ["h100"]}})
    result = site(
        run_playbook, "node-groups", "-e", "network_operator_ready_timeout=5", check=False
    )
    assert result.returncode != 0
    text = said(result)
    assert "gate 'NicNodePolicy h100 ready' not reached after 5s" in text, text[-3000:]
    assert (
        "NicNodePolicy h100 status.state is 'notReady', condition Ready False ComponentsNotReady; "
        "not ready: OFEDDriverReady False ComponentNotReady: DaemonSet pods are not ready yet"
        in text
    ), text[-3000:]
    assert "Look at: oc get nicnodepolicy h100 -o yaml" in text
