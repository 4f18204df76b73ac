"""uninstall.yml on the local control plane: after each of the six configurations (and the two
node groups of inventories/node-groups, and the NIC firmware settings) it leaves
none of the collection's objects (nor the CSVs its Subscriptions installed), keeps a user's
objects of every same kind, removes in reverse order, writes nothing in check mode and nothing
on a second run."""

from __future__ import annotations

import contextlib

import pytest
from kubernetes import client, dynamic
from kubernetes.dynamic.exceptions import ConflictError, NotFoundError

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import managed_kinds
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.harness.audit import AuditLog
from tests.harness.controlplane import ADMIN_USER, REPO_ROOT
from tests.integration.helpers import wait_for
from tests.integration.test_site import nodes_for, recap, site
from tests.simulator.nodes import remove_nodes
from tests.unit.inventories import inputs

UNINSTALL = REPO_ROOT / "playbooks" / "uninstall.yml"
MANAGED = "app.kubernetes.io/managed-by=gpudirect.rdma"
CONFIGURATIONS = [
    "shared-device-roce",
    "shared-device-infiniband",
    "host-device-roce",
    "host-device-infiniband",
    "sriov-legacy-roce",
    "node-groups",
    "mixed-methods",
    "sriov-legacy-infiniband",
    "nic-configuration-roce",
]
USER_NAMESPACE = "team-rdma"
SRIOV_NAMESPACE = "openshift-sriov-network-operator"
IPAM = '{"type": "whereabouts", "range": "10.9.0.0/24"}'


def user_objects() -> list[dict]:
    """One object of every kind the collection manages, made by a user (no collection label)."""

    def obj(api_version, kind, name, namespace=None, spec=None):
        metadata = {"name": name, "labels": {"team": "rdma"}}
        if namespace:
            metadata["namespace"] = namespace
        found = {"apiVersion": api_version, "kind": kind, "metadata": metadata}
        if spec is not None:
            found["spec"] = spec
        return found

    return [
        obj("v1", "Namespace", USER_NAMESPACE),
        obj(
            "v1",
            "Pod",
            "team-pod",
            USER_NAMESPACE,
            {"containers": [{"name": "c", "image": "registry.invalid/busybox"}]},
        ),
        obj(
            "mellanox.com/v1alpha1",
            "MacvlanNetwork",
            "team-macvlan",
            spec={"networkNamespace": USER_NAMESPACE, "master": "eno1", "ipam": IPAM},
        ),
        obj(
            "mellanox.com/v1alpha1",
            "IPoIBNetwork",
            "team-ipoib",
            spec={"networkNamespace": USER_NAMESPACE, "master": "ib9", "ipam": IPAM},
        ),
        obj(
            "mellanox.com/v1alpha1",
            "HostDeviceNetwork",
            "team-hostdev",
            spec={"networkNamespace": USER_NAMESPACE, "resourceName": "team", "ipam": IPAM},
        ),
        obj(
            "sriovnetwork.openshift.io/v1",
            "SriovNetwork",
            "team-sriov",
            USER_NAMESPACE,
            {"networkNamespace": USER_NAMESPACE, "resourceName": "team", "ipam": IPAM},
        ),
        obj(
            "sriovnetwork.openshift.io/v1",
            "SriovIBNetwork",
            "team-sriov-ib",
            USER_NAMESPACE,
            {"networkNamespace": USER_NAMESPACE, "resourceName": "teamib", "ipam": IPAM},
        ),
        obj(
            "nv-ipam.nvidia.com/v1alpha1",
            "IPPool",
            "team-pool",
            USER_NAMESPACE,
            {"subnet": "10.9.0.0/16", "perNodeBlockSize": 16, "gateway": "10.9.0.1"},
        ),
        obj(
            "sriovnetwork.openshift.io/v1",
            "SriovNetworkNodePolicy",
            "team-policy",
            USER_NAMESPACE,
            {
                "resourceName": "team",
                "nodeSelector": {"team": "rdma"},
                "numVfs": 2,
                "nicSelector": {"pfNames": ["eno9"]},
            },
        ),
        obj(
            "nvidia.com/v1",
            "ClusterPolicy",
            "team-cluster-policy",
            spec={
                part: {}
                for part in (
                    "daemonsets",
                    "dcgm",
                    "dcgmExporter",
                    "devicePlugin",
                    "driver",
                    "gfd",
                    "nodeStatusExporter",
                    "operator",
                    "toolkit",
                )
            },
        ),
        obj(
            "mellanox.com/v1alpha1",
            "NicClusterPolicy",
            "team-nic-cluster-policy",
            spec={},
        ),
        obj(
            "mellanox.com/v1alpha1",
            "NicNodePolicy",
            "team-nic-node-policy",
            spec={"nodeSelector": {"example.com/team-pool": "none-yet"}},
        ),
        obj(
            "sriovnetwork.openshift.io/v1",
            "SriovOperatorConfig",
            "team-config",
            USER_NAMESPACE,
            {"logLevel": 2},
        ),
        obj(
            "nfd.openshift.io/v1",
            "NodeFeatureDiscovery",
            "team-nfd",
            USER_NAMESPACE,
            {"operand": {"image": "registry.invalid/nfd:1"}},
        ),
        obj(
            "operators.coreos.com/v1",
            "OperatorGroup",
            "team-group",
            USER_NAMESPACE,
            {"targetNamespaces": [USER_NAMESPACE]},
        ),
        obj(
            "operators.coreos.com/v1alpha1",
            "Subscription",
            "team-subscription",
            USER_NAMESPACE,
            {
                "name": "nfd",
                "channel": "stable",
                "source": "redhat-operators",
                "sourceNamespace": "openshift-marketplace",
            },
        ),
        obj(
            "machineconfiguration.openshift.io/v1",
            "MachineConfig",
            "99-team-kargs",
            spec={"kernelArguments": ["team=rdma"]},
        ),
        obj(
            "maintenance.nvidia.com/v1alpha1",
            "MaintenanceOperatorConfig",
            "team-maintenance",
            USER_NAMESPACE,
            {"maxParallelOperations": 2},
        ),
        obj(
            "configuration.net.nvidia.com/v1alpha1",
            "NicConfigurationTemplate",
            "team-template",
            USER_NAMESPACE,
            {
                "nodeSelector": {"example.com/team-pool": "none-yet"},
                "nicSelector": {"nicType": "101d"},
                "template": {"numVfs": 0, "linkType": "Ethernet"},
            },
        ),
    ]


@pytest.fixture(scope="module")
def kube(harness) -> dynamic.DynamicClient:
    return dynamic.DynamicClient(harness)


def _resource(kube, obj: dict):
    return kube.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])


def create(kube, obj: dict) -> None:
    with contextlib.suppress(ConflictError):
        _resource(kube, obj).create(body=obj, namespace=obj["metadata"].get("namespace"))


def on_server(kube, obj: dict):
    """The object as the server has it, terminating or not; None when it is gone."""
    metadata = obj["metadata"]
    try:
        return _resource(kube, obj).get(name=metadata["name"], namespace=metadata.get("namespace"))
    except NotFoundError:
        return None


def exists(kube, obj: dict) -> bool:
    """There, and for a Namespace still Active (not terminating)."""
    there = on_server(kube, obj)
    return there is not None and (obj["kind"] != "Namespace" or there.status.phase == "Active")


def delete(kube, obj: dict) -> None:
    metadata = obj["metadata"]
    with contextlib.suppress(NotFoundError):
        _resource(kube, obj).delete(name=metadata["name"], namespace=metadata.get("namespace"))


def managed_left(kube) -> list[str]:
    left = []
    for api_version, kind in managed_kinds():
        items = _resource(kube, {"apiVersion": api_version, "kind": kind}).get(
            label_selector=MANAGED
        )
        for item in items.to_dict()["items"]:
            where = item["metadata"].get("namespace")
            left.append(f"{kind} {where + '/' if where else ''}{item['metadata']['name']}")
    return left


def uninstall_everything(run_playbook):
    """uninstall.yml with the Namespaces and MachineConfigs it created removed too."""
    return run_playbook(
        UNINSTALL,
        "-e",
        "uninstall_namespaces=true",
        "-e",
        "uninstall_machine_configs=true",
        "-e",
        "uninstall_timeout=90",
    )


def csvs(custom, namespaces) -> list[str]:
    found = []
    for namespace in namespaces:
        found += [
            f"{namespace}/{c['metadata']['name']}"
            for c in custom.list_namespaced_custom_object(
                "operators.coreos.com", "v1alpha1", namespace, "clusterserviceversions"
            )["items"]
        ]
    return found


OPERATOR_NAMESPACES = [
    "openshift-nfd",
    "openshift-sriov-network-operator",
    "nvidia-network-operator",
    "nvidia-gpu-operator",
]


@pytest.fixture
def users_objects(kube):
    """A user's object of every managed kind; removed afterwards, whatever the test did (a
    foreign ClusterPolicy left behind would stop every later site.yml in preflight)."""
    theirs = user_objects()
    yield theirs
    for obj in reversed(theirs):
        delete(kube, obj)
    # A Namespace goes after its namespace controller emptied it: the next case's Pod would be
    # refused while it is still terminating.
    wait_for(
        lambda: all(on_server(kube, obj) is None for obj in theirs), what="the user's objects gone"
    )


@pytest.mark.parametrize("inventory", CONFIGURATIONS)
def test_uninstall_leaves_nothing_of_the_collection_and_keeps_the_users_objects(
    inventory, run_playbook, harness, custom, kube, control_plane, users_objects
):
    nodes_for(harness, inventory)
    assert recap(site(run_playbook, inventory).stdout)["failed"] == 0
    nic_configuration = "nic-configuration" in inventory
    # The Maintenance Operator's, when the NIC firmware settings are on or were on in an earlier
    # test on this cluster (turning them off leaves the operator, uninstall removes it).
    maintenance = "nvidia-maintenance-operator"
    namespaces = OPERATOR_NAMESPACES + (
        [maintenance] if nic_configuration or exists(kube, _ns(maintenance)) else []
    )
    assert csvs(custom, namespaces), "the operators are installed"
    # mixed-methods has nothing cluster-wide (no IPoIB): its NicNodePolicies hold everything.
    cluster_wide = any(
        o["kind"] == "NicClusterPolicy" for o in table.build_objects(build_plan(inputs(inventory)))
    )
    if cluster_wide:
        policy = custom.get_cluster_custom_object(
            "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
        )
        assert policy["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpudirect.rdma"
    theirs = users_objects
    for obj in theirs:
        create(kube, obj)

    audit = AuditLog(control_plane.audit_log).mark()
    check = run_playbook(UNINSTALL, "--check", "--diff")
    assert recap(check.stdout)["changed"] > 0
    assert "(deleted)" in check.stdout
    assert audit.writes(ADMIN_USER) == [], "check mode writes nothing"

    result = uninstall_everything(run_playbook)
    assert recap(result.stdout)["failed"] == 0
    assert managed_left(kube) == []
    assert [ns for ns in namespaces if exists(kube, _ns(ns))] == []
    kept = [f"{o['kind']} {o['metadata']['name']}" for o in theirs if not exists(kube, o)]
    assert kept == [], f"user objects removed: {kept}"

    deletes = [w for w in audit.writes(ADMIN_USER) if w.verb == "delete"]
    order = [w.resource for w in deletes]
    # The network driver goes after the networks that use its device plugins and after the GPU
    # driver that builds on it: the NicNodePolicies (node groups), then the NicClusterPolicy.
    drivers = [r for r in ("nicnodepolicies", "nicclusterpolicies") if r in order]
    assert drivers, [str(w) for w in audit.requests(ADMIN_USER)]
    first = order.index(drivers[0])
    assert first > max(
        i for i, r in enumerate(order) if r.endswith("networks") or r == "sriovnetworknodepolicies"
    ), order
    assert order.index("clusterpolicies") < first, order
    if inventory in ("node-groups", "mixed-methods"):
        assert order.count("nicnodepolicies") == 2, order
    if cluster_wide and "nicnodepolicies" in order:
        assert order.index("nicnodepolicies") < order.index("nicclusterpolicies"), order
    # With the Network Operator's CSV gone, OLM removed the webhooks it had registered for it
    # (a CSV another test installed in a namespace of its own keeps its own).
    registered = client.AdmissionregistrationV1Api(harness).list_validating_webhook_configuration
    ours = "olm.owner.kind=ClusterServiceVersion,olm.owner.namespace=nvidia-network-operator"
    wait_for(
        lambda: registered(label_selector=ours).items == [],
        what="the CSV's webhooks unregistered",
    )
    if nic_configuration:
        # The templates go while the NIC Configuration Operator still runs, and without being
        # asked the NICs are not reset first; the Maintenance Operator's config goes after the
        # NicClusterPolicy, whose daemon asks it for maintenance.
        assert "nicconfigurationtemplates" not in [
            w.resource for w in audit.writes(ADMIN_USER) if w.verb == "patch"
        ]
        assert order.index("nicconfigurationtemplates") < order.index("nicclusterpolicies"), order
        assert order.index("maintenanceoperatorconfigs") > order.index("nicclusterpolicies"), order
        assert "NIC firmware settings: kept as they are" in " ".join(result.stdout.split())
    assert order.index("subscriptions") > order.index("nodefeaturediscoveries"), order
    assert order.index("clusterserviceversions") > order.index("subscriptions"), order
    assert order.index("namespaces") == len(order) - len(namespaces), order
    assert not any(w.namespace == USER_NAMESPACE for w in deletes)

    again = AuditLog(control_plane.audit_log).mark()
    second = run_playbook(
        UNINSTALL,
        "-e",
        "uninstall_namespaces=true",
        "-e",
        "uninstall_machine_configs=true",
    )
    assert recap(second.stdout)["changed"] == 0
    assert again.writes(ADMIN_USER) == []


def _ns(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def test_namespaces_that_existed_before_or_hold_a_users_objects_are_kept(
    run_playbook, harness, core, kube
):
    run_playbook(UNINSTALL, "-e", "uninstall_namespaces=true")
    wait_for(
        lambda: not any(exists(kube, _ns(n)) for n in OPERATOR_NAMESPACES),
        what="the operator namespaces gone",
    )
    nodes_for(harness, "sriov-legacy-roce")
    core.create_namespace({"metadata": {"name": "nvidia-gpu-operator", "labels": {"team": "gpu"}}})
    site(run_playbook, "sriov-legacy-roce")
    adopted = core.read_namespace("nvidia-gpu-operator")
    assert adopted.metadata.annotations["gpudirect.rdma/adopted"] == "true"
    theirs = {
        **next(o for o in user_objects() if o["kind"] == "SriovNetworkNodePolicy"),
    }
    theirs["metadata"] = {**theirs["metadata"], "namespace": SRIOV_NAMESPACE}
    create(kube, theirs)

    result = run_playbook(UNINSTALL, "-e", "uninstall_namespaces=true", "-v")
    output = " ".join(result.stdout.split())
    assert "it existed before gpudirect.rdma adopted it" in output
    assert (
        "it holds objects gpudirect.rdma did not create: SriovNetworkNodePolicy "
        "openshift-sriov-network-operator/team-policy" in output
    )
    assert core.read_namespace("nvidia-gpu-operator").status.phase == "Active"
    assert exists(kube, theirs)
    assert not exists(kube, _ns("openshift-nfd"))
    delete(kube, theirs)
    core.delete_namespace("nvidia-gpu-operator")


def test_sriov_policies_on_a_cluster_whose_nodes_left_are_removed_without_waiting_for_vfs(
    run_playbook, harness, custom, kube
):
    """No SriovNetworkNodeState is left once the SR-IOV nodes are gone: there is no VF to wait
    for, so uninstall deletes the policies and goes on instead of waiting for a state."""
    nodes_for(harness, "sriov-legacy-roce")
    site(run_playbook, "sriov-legacy-roce")
    remove_nodes(harness)
    wait_for(
        lambda: (
            not custom.list_namespaced_custom_object(
                "sriovnetwork.openshift.io", "v1", SRIOV_NAMESPACE, "sriovnetworknodestates"
            )["items"]
        ),
        what="the node states of the gone nodes deleted",
    )
    result = uninstall_everything(run_playbook)
    assert recap(result.stdout)["failed"] == 0
    assert managed_left(kube) == []
