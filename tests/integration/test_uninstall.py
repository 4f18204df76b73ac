"""uninstall.yml on the local control plane: after each of the six configurations it leaves
none of the collection's objects (nor the CSVs its Subscriptions installed), keeps a user's
objects of every same kind, removes in reverse order, writes nothing in check mode and nothing
on a second run."""

from __future__ import annotations

import pytest
from kubernetes.client.rest import ApiException

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.kinds import MANAGED_KINDS
from tests.harness.audit import AuditLog
from tests.harness.controlplane import ADMIN_USER, REPO_ROOT
from tests.integration.helpers import wait_for
from tests.integration.test_site import nodes_for, recap, site

UNINSTALL = REPO_ROOT / "playbooks" / "uninstall.yml"
MANAGED = "app.kubernetes.io/managed-by=gpudirect.rdma"
CONFIGURATIONS = [
    "shared-device-roce",
    "shared-device-infiniband",
    "host-device-roce",
    "host-device-infiniband",
    "sriov-legacy-roce",
    "sriov-legacy-infiniband",
]
USER_NAMESPACE = "team-rdma"
SRIOV_NAMESPACE = "openshift-sriov-network-operator"
PLURALS = {
    "Pod": "pods",
    "MacvlanNetwork": "macvlannetworks",
    "IPoIBNetwork": "ipoibnetworks",
    "HostDeviceNetwork": "hostdevicenetworks",
    "SriovNetwork": "sriovnetworks",
    "SriovIBNetwork": "sriovibnetworks",
    "IPPool": "ippools",
    "SriovNetworkNodePolicy": "sriovnetworknodepolicies",
    "ClusterPolicy": "clusterpolicies",
    "NicClusterPolicy": "nicclusterpolicies",
    "SriovOperatorConfig": "sriovoperatorconfigs",
    "NodeFeatureDiscovery": "nodefeaturediscoveries",
    "Subscription": "subscriptions",
    "OperatorGroup": "operatorgroups",
    "MachineConfig": "machineconfigs",
    "Namespace": "namespaces",
}
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
    ]


def _api(api_version: str) -> tuple[str, str]:
    group, _slash, version = api_version.rpartition("/")
    return group, version


def create(harness_custom, core, obj: dict) -> None:
    kind, metadata = obj["kind"], obj["metadata"]
    try:
        if kind == "Namespace":
            core.create_namespace(obj)
        elif kind == "Pod":
            core.create_namespaced_pod(metadata["namespace"], obj)
        elif metadata.get("namespace"):
            harness_custom.create_namespaced_custom_object(
                *_api(obj["apiVersion"]), metadata["namespace"], PLURALS[kind], obj
            )
        else:
            harness_custom.create_cluster_custom_object(
                *_api(obj["apiVersion"]), PLURALS[kind], obj
            )
    except ApiException as error:
        if error.status != 409:
            raise


def exists(custom, core, obj: dict) -> bool:
    kind, metadata = obj["kind"], obj["metadata"]
    try:
        if kind == "Namespace":
            found = core.read_namespace(metadata["name"])
            return found.status.phase == "Active"
        if kind == "Pod":
            core.read_namespaced_pod(metadata["name"], metadata["namespace"])
        elif metadata.get("namespace"):
            custom.get_namespaced_custom_object(
                *_api(obj["apiVersion"]), metadata["namespace"], PLURALS[kind], metadata["name"]
            )
        else:
            custom.get_cluster_custom_object(
                *_api(obj["apiVersion"]), PLURALS[kind], metadata["name"]
            )
    except ApiException as error:
        assert error.status == 404, error
        return False
    return True


def managed_left(custom, core) -> list[str]:
    left = []
    for api_version, kind, _stage in MANAGED_KINDS:
        if kind == "Namespace":
            items = core.list_namespace(label_selector=MANAGED).items
            left += [f"Namespace {n.metadata.name}" for n in items]
        elif kind == "Pod":
            items = core.list_pod_for_all_namespaces(label_selector=MANAGED).items
            left += [f"Pod {p.metadata.namespace}/{p.metadata.name}" for p in items]
        else:
            items = custom.list_cluster_custom_object(
                *_api(api_version), PLURALS[kind], label_selector=MANAGED
            )["items"]
            left += [f"{kind} {i['metadata']['name']}" for i in items]
    return left


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
def users_objects(custom, core):
    """A user's object of every managed kind; removed afterwards, whatever the test did (a
    foreign ClusterPolicy left behind would stop every later site.yml in preflight)."""
    theirs = user_objects()
    yield theirs
    for obj in reversed(theirs):
        _delete(custom, core, obj)


@pytest.mark.parametrize("inventory", CONFIGURATIONS)
def test_uninstall_leaves_nothing_of_the_collection_and_keeps_the_users_objects(
    inventory, run_playbook, harness, custom, core, control_plane, users_objects
):
    nodes_for(harness, inventory)
    assert recap(site(run_playbook, inventory).stdout)["failed"] == 0
    assert csvs(custom, OPERATOR_NAMESPACES), "the operators are installed"
    theirs = users_objects
    for obj in theirs:
        create(custom, core, obj)

    audit = AuditLog(control_plane.audit_log).mark()
    check = run_playbook(UNINSTALL, "--check", "--diff")
    assert recap(check.stdout)["changed"] > 0
    assert "(deleted)" in check.stdout
    assert audit.writes(ADMIN_USER) == [], "check mode writes nothing"

    result = run_playbook(
        UNINSTALL,
        "-e",
        "gpudirect_rdma_uninstall_namespaces=true",
        "-e",
        "gpudirect_rdma_uninstall_machine_configs=true",
        "-e",
        "gpudirect_rdma_uninstall_timeout=90",
    )
    assert recap(result.stdout)["failed"] == 0
    assert managed_left(custom, core) == []
    assert [ns for ns in OPERATOR_NAMESPACES if exists(custom, core, _ns(ns))] == []
    kept = [f"{o['kind']} {o['metadata']['name']}" for o in theirs if not exists(custom, core, o)]
    assert kept == [], f"user objects removed: {kept}"

    deletes = [w for w in audit.writes(ADMIN_USER) if w.verb == "delete"]
    order = [w.resource for w in deletes]
    assert order.index("nicclusterpolicies") > max(
        i for i, r in enumerate(order) if r.endswith("networks") or r == "sriovnetworknodepolicies"
    ), order
    assert order.index("clusterpolicies") < order.index("nicclusterpolicies"), order
    assert order.index("subscriptions") > order.index("nodefeaturediscoveries"), order
    assert order.index("clusterserviceversions") > order.index("subscriptions"), order
    assert order.index("namespaces") == len(order) - len(OPERATOR_NAMESPACES), order
    assert not any(w.namespace == USER_NAMESPACE for w in deletes)

    again = AuditLog(control_plane.audit_log).mark()
    second = run_playbook(
        UNINSTALL,
        "-e",
        "gpudirect_rdma_uninstall_namespaces=true",
        "-e",
        "gpudirect_rdma_uninstall_machine_configs=true",
    )
    assert recap(second.stdout)["changed"] == 0
    assert again.writes(ADMIN_USER) == []


def _ns(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _delete(custom, core, obj: dict) -> None:
    kind, metadata = obj["kind"], obj["metadata"]
    try:
        if kind == "Namespace":
            core.delete_namespace(metadata["name"])
        elif kind == "Pod":
            core.delete_namespaced_pod(metadata["name"], metadata["namespace"])
        elif metadata.get("namespace"):
            custom.delete_namespaced_custom_object(
                *_api(obj["apiVersion"]), metadata["namespace"], PLURALS[kind], metadata["name"]
            )
        else:
            custom.delete_cluster_custom_object(
                *_api(obj["apiVersion"]), PLURALS[kind], metadata["name"]
            )
    except ApiException as error:
        if error.status != 404:
            raise


def test_namespaces_that_existed_before_or_hold_a_users_objects_are_kept(
    run_playbook, harness, custom, core
):
    run_playbook(UNINSTALL, "-e", "gpudirect_rdma_uninstall_namespaces=true")
    wait_for(
        lambda: not any(exists(custom, core, _ns(n)) for n in OPERATOR_NAMESPACES),
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
    create(custom, core, theirs)

    result = run_playbook(UNINSTALL, "-e", "gpudirect_rdma_uninstall_namespaces=true", "-v")
    output = " ".join(result.stdout.split())
    assert "it existed before gpudirect.rdma adopted it" in output
    assert (
        "it holds objects gpudirect.rdma did not create: SriovNetworkNodePolicy "
        "openshift-sriov-network-operator/team-policy" in output
    )
    assert core.read_namespace("nvidia-gpu-operator").status.phase == "Active"
    assert exists(custom, core, theirs)
    assert not exists(custom, core, _ns("openshift-nfd"))
    _delete(custom, core, theirs)
    core.delete_namespace("nvidia-gpu-operator")
