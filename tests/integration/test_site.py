"""site.yml end to end on the local control plane, the simulator playing OLM and the operators:
every configuration converges and a second run writes nothing (audit log); switching method
leaves nothing of the previous one; a gate that never opens fails in time, naming itself, before
the GPU Operator's ClusterPolicy exists; check mode on an empty cluster writes nothing; roles
work alone from three-line playbooks."""

from __future__ import annotations

import re

import pytest
from kubernetes import client, dynamic
from kubernetes.client.rest import ApiException

from ansible_collections.gpudirect.rdma.plugins.filter.objects import objects as objects_filter
from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.harness.audit import AuditLog
from tests.harness.controlplane import ADMIN_USER, REPO_ROOT, api_client, started
from tests.integration.helpers import assert_kept, wait_for
from tests.simulator.nodes import Hardware, Nic, register_nodes, remove_nodes
from tests.unit.inventories import NAMES, inputs
from tests.unit.test_rbac import resource_of

SITE = REPO_ROOT / "playbooks" / "site.yml"
SIMULATED = REPO_ROOT / "molecule" / "shared" / "simulated-cluster.yml"
METHOD_KINDS = [
    ("mellanox.com", "v1alpha1", "macvlannetworks"),
    ("mellanox.com", "v1alpha1", "ipoibnetworks"),
    ("mellanox.com", "v1alpha1", "hostdevicenetworks"),
    ("sriovnetwork.openshift.io", "v1", "sriovnetworknodepolicies"),
    ("sriovnetwork.openshift.io", "v1", "sriovnetworks"),
    ("sriovnetwork.openshift.io", "v1", "sriovibnetworks"),
]


def recap(output: str) -> dict[str, int]:
    match = re.search(
        r"localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)", output
    )
    assert match, output[-2000:]
    return {"ok": int(match[1]), "changed": int(match[2]), "failed": int(match[3])}


def nodes_for(harness, inventory: str, count: int = 2) -> None:
    """count (two) fake nodes for each node group of the inventory, with the group's labels and
    the NICs of its rails, without NFD labels (worker-0 and worker-1 with one group); returns once
    the simulated Machine Config Operator counts them in the worker pool, as a cluster's pool
    counts its nodes long before anybody runs a playbook."""
    plan = build_plan(inputs(inventory))
    remove_nodes(harness)
    registered, interfaces = [], {}
    for group in plan["groups"]:
        link_type = "ib" if group["fabric"] == "infiniband" else "eth"
        names = register_nodes(
            harness,
            count,
            prefix=f"worker-{group['name']}" if group["name"] else "worker",
            nfd_labels=False,
            labels=group["node_selector"] if group["name"] else None,
            hardware=Hardware(
                nics=tuple(Nic(rail["interface"], link_type) for rail in group["rails"])
            ),
        )
        registered += names
        interfaces.update({name: [rail["interface"] for rail in group["rails"]] for name in names})
    wait_for(
        lambda: _worker_machines(harness) in (None, len(registered)),
        timeout=30,
        what=f"the worker MachineConfigPool to count {len(registered)} machines",
    )
    # Nodes of the same names as the last test's: their SR-IOV node states must list the new
    # NICs before preflight reads them.
    wait_for(
        lambda: _sriov_states_list(harness, interfaces),
        timeout=30,
        what=f"the SR-IOV node states to list the new nodes' NICs {interfaces}",
    )


def _sriov_states_list(harness, interfaces: dict[str, list[str]]) -> bool:
    """Every node's SriovNetworkNodeState lists its NICs (true where no state exists at all: the
    SR-IOV Network Operator is not installed)."""
    try:
        states = client.CustomObjectsApi(harness).list_cluster_custom_object(
            "sriovnetwork.openshift.io", "v1", "sriovnetworknodestates"
        )["items"]
    except ApiException as error:
        if error.status == 404:
            return True
        raise
    if not states:
        return True
    listed = {
        s["metadata"]["name"]: [i["name"] for i in (s.get("status") or {}).get("interfaces") or []]
        for s in states
    }
    return all(listed.get(node) == names for node, names in interfaces.items())


def _worker_machines(harness) -> int | None:
    """The worker pool's machineCount (None without a pool: no Machine Config Operator)."""
    try:
        pool = client.CustomObjectsApi(harness).get_cluster_custom_object(
            "machineconfiguration.openshift.io", "v1", "machineconfigpools", "worker"
        )
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    return (pool.get("status") or {}).get("machineCount")


def site(run_playbook, inventory: str, *extra: str, check: bool = True):
    return run_playbook(
        SITE,
        "-i",
        str(REPO_ROOT / "inventories" / inventory),
        "-e",
        f"@{SIMULATED}",
        *extra,
        check=check,
    )


# A DOCA driver version somebody sets by hand (of a form the operator's webhook takes).
BY_HAND = "doca3.3.0-26.01-1.0.0.0-0"


def installed_csvs(custom) -> dict[str, str]:
    """The installed CSV of each of the collection's Subscriptions, by package (not those other
    tests of the same control plane made in namespaces of their own)."""
    return {
        s["spec"]["name"]: (s.get("status") or {}).get("installedCSV")
        for s in custom.list_cluster_custom_object(
            "operators.coreos.com",
            "v1alpha1",
            "subscriptions",
            label_selector="app.kubernetes.io/managed-by=gpudirect.rdma",
        )["items"]
    }


def list_all(custom, group, version, plural):
    return custom.list_cluster_custom_object(group, version, plural)["items"]


# Every example, node-groups too (molecule/default converges it as well, with molecule's own
# idempotence check; here the audit log proves the second run writes nothing).
CONVERGED_HERE = list(NAMES)


def node_sections(group: dict) -> set[str]:
    """The driver and the group's method's device plugin."""
    return {"ofedDriver"} | {
        "shared_device": {"rdmaSharedDevicePlugin"},
        "host_device": {"sriovDevicePlugin"},
        "sriov_legacy": set(),
    }[group["method"]]


def expected_policy_sections(plan: dict) -> set[str]:
    """The NicClusterPolicy's components for the plan: the driver and the method's device
    plugin with the cluster model; IPoIB and nv-ipam, which are cluster-wide, with either."""
    sections = node_sections(plan["groups"][0]) if plan["nic_policy_model"] == "cluster" else set()
    if any(g["method"] == "shared_device" and g["fabric"] == "infiniband" for g in plan["groups"]):
        sections.add("secondaryNetwork")
    if any(g["ipam"]["type"] == "nv-ipam" for g in plan["groups"]):
        sections.add("nvIpam")
    if plan["nic_configuration"]["enabled"]:
        sections.add("nicConfigurationOperator")
    if plan["monitoring"]["enabled"]:
        sections.add("docaTelemetryService")
    return sections


def assert_nic_configuration(plan: dict, custom) -> None:
    """With the NIC firmware settings: each planned template lists a device on each of its
    group's nodes, each such device holds the template and reached UpdateSuccessful at its
    generation, and no node is left in maintenance; without them, no template at all."""
    templates = custom.list_cluster_custom_object(
        "configuration.net.nvidia.com", "v1alpha1", "nicconfigurationtemplates"
    )["items"]
    planned = table.component_objects(plan, "nic-configuration")
    assert sorted(t["metadata"]["name"] for t in templates) == sorted(
        t["metadata"]["name"] for t in planned
    )
    if not planned:
        return
    namespace = plan["operators"]["network_operator"]["namespace"]
    devices = {
        d["metadata"]["name"]: d
        for d in custom.list_namespaced_custom_object(
            "configuration.net.nvidia.com", "v1alpha1", namespace, "nicdevices"
        )["items"]
    }
    for template in templates:
        listed = template["status"]["nicDevices"]
        assert len(listed) == 2 * len(plan["groups"][0]["rails"]), template["metadata"]["name"]
        for name in listed:
            device = devices[name]
            assert device["spec"]["configuration"]["template"] == template["spec"]["template"]
            (condition,) = [
                c for c in device["status"]["conditions"] if c["type"] == "ConfigUpdateInProgress"
            ]
            assert condition["reason"] == "UpdateSuccessful", (name, condition)
            assert condition["observedGeneration"] == device["metadata"]["generation"]
    assert (
        custom.list_cluster_custom_object("maintenance.nvidia.com", "v1alpha1", "nodemaintenances")[
            "items"
        ]
        == []
    )


def assert_converged(plan: dict, custom, core) -> None:
    """The operators Succeeded, the policies ready with the method's components, every node
    advertising every rail, every rail's network rendered, nothing of another method."""
    for step in table.STEPS:
        if not step.operator or not step.enabled(plan):
            continue
        operator = plan["operators"][step.operator.key]
        csvs = custom.list_namespaced_custom_object(
            "operators.coreos.com", "v1alpha1", operator["namespace"], "clusterserviceversions"
        )["items"]
        assert [c["status"]["phase"] for c in csvs] == ["Succeeded"], operator["namespace"]
    policies = custom.list_cluster_custom_object("mellanox.com", "v1alpha1", "nicclusterpolicies")
    if expected_policy_sections(plan):
        (policy,) = policies["items"]
        assert policy["status"]["state"] == "ready"
        assert set(policy["spec"]) == expected_policy_sections(plan)
    else:
        # Nothing cluster-wide (mixed-methods): the NicNodePolicies hold everything.
        assert policies["items"] == []
    node_policies = {
        p["metadata"]["name"]: p
        for p in custom.list_cluster_custom_object("mellanox.com", "v1alpha1", "nicnodepolicies")[
            "items"
        ]
    }
    if plan["nic_policy_model"] == "node":
        assert set(node_policies) == {g["name"] or "gpudirect-rdma" for g in plan["groups"]}
        for group in plan["groups"]:
            nnp = node_policies[group["name"] or "gpudirect-rdma"]
            assert nnp["status"]["state"] == "ready"
            assert set(nnp["spec"]) == {"nodeSelector"} | node_sections(group)
            assert nnp["spec"]["nodeSelector"] == group["node_selector"]
    else:
        assert node_policies == {}
    assert_nic_configuration(plan, custom)
    gpu = custom.get_cluster_custom_object(
        "nvidia.com", "v1", "clusterpolicies", "gpu-cluster-policy"
    )
    assert gpu["status"]["state"] == "ready"
    nodes = core.list_node().items
    assert len(nodes) == 2 * len(plan["groups"])
    for group in plan["groups"]:
        mine = [
            n
            for n in nodes
            if all((n.metadata.labels or {}).get(k) == v for k, v in group["node_selector"].items())
        ]
        assert len(mine) == 2, group["name"]
        for node in mine:
            for rail in group["rails"]:
                assert int(node.status.allocatable[rail["node_resource"]]) >= 1
    nads = custom.list_namespaced_custom_object(
        "k8s.cni.cncf.io", "v1", plan["network_namespace"], "network-attachment-definitions"
    )["items"]
    planned = {r["network_name"] for g in plan["groups"] for r in g["rails"]}
    assert planned <= {n["metadata"]["name"] for n in nads}
    methods = {table.METHOD_STEPS[g["method"]].component for g in plan["groups"]}
    components = ",".join(sorted(methods))
    for api_version, kind in table.METHOD_KINDS:
        group, version = api_version.split("/")
        others = custom.list_cluster_custom_object(
            group,
            version,
            resource_of(api_version, kind),
            label_selector=f"app.kubernetes.io/managed-by=gpudirect.rdma,"
            f"gpudirect.rdma/component notin ({components})",
        )["items"]
        assert others == [], f"{kind} of another method left: {others}"


@pytest.mark.parametrize("inventory", CONVERGED_HERE)
def test_configuration_converges_and_a_second_run_writes_nothing(
    inventory, run_playbook, harness, custom, core, control_plane
):
    nodes_for(harness, inventory)
    first = site(run_playbook, inventory)
    assert recap(first.stdout)["failed"] == 0
    audit = AuditLog(control_plane.audit_log).mark()
    second = site(run_playbook, inventory)
    assert recap(second.stdout)["changed"] == 0, second.stdout[-3000:]
    assert audit.writes(ADMIN_USER) == [], [str(w) for w in audit.writes(ADMIN_USER)]
    plan = build_plan(inputs(inventory))
    requests = audit.requests(ADMIN_USER)
    assert requests, "the second run read the cluster"
    # One read per kind, without discovery (k8s/kinds.py names every kind the steps read): 30,
    # the NIC firmware opt-in's four (the Maintenance Operator's CSV and its config, the
    # NicDevices, the NodeMaintenances), and the monitoring opt-in's five (its PrometheusRules,
    # ServiceMonitors, Services and ConfigMaps, and OpenShift monitoring's settings).
    limit = 30
    limit += 4 if plan["nic_configuration"]["enabled"] else 0
    limit += 5 if plan["monitoring"]["enabled"] else 0
    assert len(requests) <= limit, "\n".join(str(r) for r in requests)
    assert [r for r in requests if not r.resource] == [], "a discovery request"
    # ... and took the converged check's word for it: no step ran
    assert "the cluster already is as planned" in " ".join(second.stdout.split())
    assert "TASK [gpudirect.rdma.nfd" not in second.stdout
    assert_converged(plan, custom, core)
    assert_holds_what_render_writes(plan, harness)


def assert_holds_what_render_writes(plan: dict, harness) -> None:
    """site.yml applied, field for field, what render.yml writes for the inventory: the objects
    filter's objects, which test_render proves are the rendered tree's (the NFD operand image
    and the ClusterPolicy included, which site.yml could take from the installed CSVs)."""
    resources = dynamic.DynamicClient(harness).resources
    for obj in objects_filter(plan):
        name, namespace = obj["metadata"]["name"], obj["metadata"].get("namespace")
        api = resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        stored = api.get(name=name, namespace=namespace).to_dict()
        where = f"{obj['kind']} {namespace or ''}/{name}"
        assert_kept(stored["metadata"], obj["metadata"], where + " metadata")
        for key in set(obj) - {"apiVersion", "kind", "metadata"}:
            assert_kept(stored.get(key), obj[key], f"{where} {key}")


def test_a_converged_cluster_changed_by_hand_is_put_back_by_the_steps(
    run_playbook, harness, custom, control_plane
):
    nodes_for(harness, "shared-device-roce")
    site(run_playbook, "shared-device-roce")
    custom.patch_cluster_custom_object(
        "mellanox.com",
        "v1alpha1",
        "nicclusterpolicies",
        "nic-cluster-policy",
        {"spec": {"ofedDriver": {"version": BY_HAND}}},
    )
    checked = site(run_playbook, "shared-device-roce", "--check")
    output = " ".join(checked.stdout.split())
    assert (
        "work to do, the steps run: NicClusterPolicy nic-cluster-policy would be updated "
        "(fields differ)" in output
    )
    assert "TASK [gpudirect.rdma.network_operator" in checked.stdout
    assert recap(checked.stdout)["changed"] == 1, checked.stdout[-3000:]
    repaired = site(run_playbook, "shared-device-roce")
    assert recap(repaired.stdout)["changed"] == 1, repaired.stdout[-3000:]
    policy = custom.get_cluster_custom_object(
        "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
    )
    assert policy["spec"]["ofedDriver"]["version"] != BY_HAND
    audit = AuditLog(control_plane.audit_log).mark()
    again = site(run_playbook, "shared-device-roce", "--check")
    assert "the cluster already is as planned" in " ".join(again.stdout.split())
    assert audit.writes(ADMIN_USER) == []


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("nfd_min_nodes=abc", "nfd_min_nodes: got 'abc'; expected a whole number of 1 or more"),
        (
            "gpu_operator_ready_stable_seconds=-5",
            "gpu_operator_ready_stable_seconds: got '-5'; expected a number of seconds of 0",
        ),
    ],
)
def test_a_bad_role_setting_stops_site_before_any_write(
    setting, expected, run_playbook, harness, control_plane
):
    nodes_for(harness, "shared-device-roce")
    audit = AuditLog(control_plane.audit_log).mark()
    result = site(run_playbook, "shared-device-roce", "-e", setting, check=False)
    assert result.returncode != 0
    assert expected in " ".join(result.stdout.split()), result.stdout[-3000:]
    assert audit.writes(ADMIN_USER) == [], [str(w) for w in audit.writes(ADMIN_USER)]


def test_switching_shared_device_to_sriov_legacy_leaves_nothing_behind(
    run_playbook, harness, custom
):
    nodes_for(harness, "shared-device-roce")
    site(run_playbook, "shared-device-roce")
    assert [
        n["metadata"]["name"]
        for n in list_all(custom, "mellanox.com", "v1alpha1", "macvlannetworks")
    ] == ["rdmashared-net"]
    site(run_playbook, "sriov-legacy-roce")
    for kind in ("macvlannetworks", "ipoibnetworks", "hostdevicenetworks"):
        assert list_all(custom, "mellanox.com", "v1alpha1", kind) == [], kind
    policy = custom.get_cluster_custom_object(
        "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
    )
    assert set(policy["spec"]) == {"ofedDriver"}
    nads = custom.list_namespaced_custom_object(
        "k8s.cni.cncf.io", "v1", "default", "network-attachment-definitions"
    )["items"]
    assert [n["metadata"]["name"] for n in nads] == ["sriov-network"]


def test_a_gate_that_never_opens_fails_in_time_and_the_gpu_driver_waits(
    run_playbook, harness, custom, knobs
):
    nodes_for(harness, "host-device-roce")
    try:
        custom.delete_cluster_custom_object(
            "nvidia.com", "v1", "clusterpolicies", "gpu-cluster-policy"
        )
    except ApiException as error:
        assert error.status == 404
    knobs({"network_operator": {"never_ready": True}})
    result = site(
        run_playbook, "host-device-roce", "-e", "network_operator_ready_timeout=5", check=False
    )
    assert result.returncode != 0
    output = " ".join(result.stdout.split())
    assert "gate 'NicClusterPolicy ready' not reached after 5s" in output
    # The 26.7 policy's conditions name each component not ready.
    assert (
        "expected NicClusterPolicy nic-cluster-policy with status.state ready and, from 26.7, "
        "condition Ready True; last seen: NicClusterPolicy nic-cluster-policy status.state is "
        "'notReady', condition Ready False ComponentsNotReady; not ready: OFEDDriverReady False "
        "ComponentNotReady; SRIOVDevicePluginReady False ComponentNotReady" in output
    ), output[-3000:]
    assert "Look at: oc get nicclusterpolicy nic-cluster-policy" in output
    with pytest.raises(ApiException) as missing:
        custom.get_cluster_custom_object(
            "nvidia.com", "v1", "clusterpolicies", "gpu-cluster-policy"
        )
    assert missing.value.status == 404


@pytest.fixture
def empty_cluster(tmp_path_factory):
    with started(tmp_path_factory.mktemp("empty")) as plane:
        yield plane


def test_check_mode_on_an_empty_cluster_writes_nothing_and_says_what_it_would_do(
    empty_cluster, run_playbook
):
    # Empty of the collection's objects; nodes exist (preflight refuses a cluster without any).
    register_nodes(api_client(empty_cluster.harness_kubeconfig), 2, nfd_labels=False)
    audit = AuditLog(empty_cluster.audit_log).mark()
    result = run_playbook(
        SITE,
        "--check",
        "--diff",
        "-i",
        str(REPO_ROOT / "inventories" / "sriov-legacy-infiniband"),
        check=False,
        kubeconfig=empty_cluster.kubeconfig,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    # Every role with objects would change something (its one task runs its steps): the four
    # operators with their operands, the MachineConfigs, the method; the NicNodePolicies' step
    # has none with the cluster model (the check of site.yml reports none itself).
    plan = build_plan(inputs("sriov-legacy-infiniband"))
    changing = {s.role for s in table.STEPS if table.objects(s, plan)}
    assert recap(result.stdout)["changed"] == len(changing)
    for shown in (
        "+++ after: Subscription openshift-nfd/nfd",
        "+++ after: NicClusterPolicy nic-cluster-policy",
        "+++ after: SriovIBNetwork openshift-sriov-network-operator/sriov-ib-network",
        "+++ after: ClusterPolicy gpu-cluster-policy",
    ):
        assert shown in result.stdout
    assert audit.writes(ADMIN_USER) == [], [str(w) for w in audit.writes(ADMIN_USER)]
    core = client.CoreV1Api(api_client(empty_cluster.harness_kubeconfig))
    assert "openshift-nfd" not in [n.metadata.name for n in core.list_namespace().items]


@pytest.mark.parametrize("role", ["nfd", "network_operator"])
def test_a_role_works_alone_from_a_three_line_playbook(
    role, run_playbook, harness, custom, tmp_path
):
    nodes_for(harness, "shared-device-infiniband")
    playbook = tmp_path / "mine.yml"
    playbook.write_text(f"- hosts: localhost\n  roles:\n    - gpudirect.rdma.{role}\n")
    result = run_playbook(
        playbook,
        "-i",
        str(REPO_ROOT / "inventories" / "shared-device-infiniband"),
        "-e",
        f"@{SIMULATED}",
    )
    assert recap(result.stdout)["failed"] == 0
    if role == "nfd":
        instance = custom.get_namespaced_custom_object(
            "nfd.openshift.io", "v1", "openshift-nfd", "nodefeaturediscoveries", "nfd-instance"
        )
        # No image pinned: the operator runs its own (its CSV's NODE_FEATURE_DISCOVERY_IMAGE).
        assert instance["spec"]["operand"] == {"servicePort": 12000}
    else:
        policy = custom.get_cluster_custom_object(
            "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
        )
        assert set(policy["spec"]) == {"ofedDriver", "rdmaSharedDevicePlugin", "secondaryNetwork"}
        assert policy["status"]["state"] == "ready"


def test_a_failed_sriov_node_state_stops_the_wait_at_once(run_playbook, harness, knobs):
    nodes_for(harness, "sriov-legacy-roce")
    knobs({"sriov": {"failing": True}})
    result = site(run_playbook, "sriov-legacy-roce", check=False)
    assert result.returncode != 0
    output = " ".join(result.stdout.split())
    # 'failed', not 'timed out': the gate stopped on the Failed state, before its 60 s timeout
    # (the wait's own clock, not the play's, which a loaded machine stretches).
    waited = re.search(r"gate 'SR-IOV node states synced' failed after (\d+)s", output)
    assert waited, output[-2000:]
    assert int(waited.group(1)) < 60
    assert "gate 'SR-IOV node states synced' timed out" not in output
    assert "status.syncStatus is 'Failed'" in output
    assert "lastSyncError" in output, "the message says where to look"
