"""The local control plane is a real API server: it validates against the upstream CRD schemas,
prunes unknown fields, enforces RBAC, and loads every CRD in ../shared/crds (not alternatives/)
plus OpenShift's ClusterVersion and Infrastructure (tests/harness/crds/) and the
prometheus-operator CRDs of the monitoring kinds (from the Go module proxy). A real
kube-controller-manager deletes what is in a deleted Namespace and collects garbage."""

from __future__ import annotations

import copy
import json
import socket
import time
import uuid

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import monitoring
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.harness import controlplane
from tests.harness.controlplane import (
    CONTROLLER_MANAGER_USER,
    api_client,
    crd_files,
    harness_crd_files,
    monitoring_crd_files,
)
from tests.unit.inventories import inputs

NIC_CLUSTER_POLICY = {
    "apiVersion": "mellanox.com/v1alpha1",
    "kind": "NicClusterPolicy",
    "metadata": {"name": "nic-cluster-policy"},
    "spec": {
        "ofedDriver": {
            "image": "doca-driver",
            "repository": "nvcr.io/nvidia/mellanox",
            "version": "doca3.4.1-26.04-1.1.0.0-1",
            "startupProbe": {"initialDelaySeconds": 10, "periodSeconds": 20},
        }
    },
}


def _create_cluster_policy(custom, body, **kwargs):
    return custom.create_cluster_custom_object(
        "mellanox.com", "v1alpha1", "nicclusterpolicies", body, **kwargs
    )


@pytest.fixture
def nic_cluster_policy(custom):
    yield copy.deepcopy(NIC_CLUSTER_POLICY)
    try:
        custom.delete_cluster_custom_object(
            "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
        )
    except ApiException as error:
        assert error.status == 404


def test_every_upstream_crd_is_established(harness):
    expected = set()
    for path in crd_files():
        # Of crds/alternatives/, only the newest Network Operator release line's.
        if "alternatives" in path.parts:
            assert path.parent.name == "network-operator-v26.7", path
        expected.add(path.name.removesuffix(".yaml"))
    crds = client.ApiextensionsV1Api(harness).list_custom_resource_definition().items
    established = {
        crd.metadata.name
        for crd in crds
        if any(c.type == "Established" and c.status == "True" for c in crd.status.conditions)
    }
    assert expected <= established
    # The upstream NFD CRDs are loaded, so NodeFeatureRule is cluster-scoped, not namespaced.
    rule = next(c for c in crds if c.metadata.name == "nodefeaturerules.nfd.k8s-sigs.io")
    assert rule.spec.scope == "Cluster"


def test_nic_cluster_policy_with_a_wrong_type_is_rejected(custom, nic_cluster_policy):
    nic_cluster_policy["spec"]["ofedDriver"]["startupProbe"]["initialDelaySeconds"] = "ten"
    with pytest.raises(ApiException) as raised:
        _create_cluster_policy(custom, nic_cluster_policy)
    assert raised.value.status == 422
    assert "spec.ofedDriver.startupProbe.initialDelaySeconds" in raised.value.body
    assert "must be of type integer" in raised.value.body


def test_nic_cluster_policy_missing_a_required_field_is_rejected(custom, nic_cluster_policy):
    del nic_cluster_policy["spec"]["ofedDriver"]["image"]
    with pytest.raises(ApiException) as raised:
        _create_cluster_policy(custom, nic_cluster_policy)
    assert raised.value.status == 422
    assert "spec.ofedDriver.image: Required value" in raised.value.body


def test_unknown_fields_are_pruned(custom, nic_cluster_policy):
    nic_cluster_policy["spec"]["ofedDriver"]["imageTag"] = "not-a-field"
    nic_cluster_policy["spec"]["notAComponent"] = {"enabled": True}
    stored = _create_cluster_policy(custom, nic_cluster_policy)
    assert stored["spec"] != nic_cluster_policy["spec"]
    assert "imageTag" not in stored["spec"]["ofedDriver"]
    assert "notAComponent" not in stored["spec"]
    assert stored["spec"]["ofedDriver"]["version"] == "doca3.4.1-26.04-1.1.0.0-1"


def test_unknown_fields_are_refused_with_strict_validation(custom, nic_cluster_policy):
    nic_cluster_policy["spec"]["ofedDriver"]["imageTag"] = "not-a-field"
    with pytest.raises(ApiException) as raised:
        _create_cluster_policy(custom, nic_cluster_policy, field_validation="Strict")
    assert raised.value.status == 400
    assert 'unknown field "spec.ofedDriver.imageTag"' in json.loads(raised.value.body)["message"]


def test_a_valid_nic_cluster_policy_is_stored_with_the_schema_defaults(custom, nic_cluster_policy):
    _create_cluster_policy(custom, nic_cluster_policy)
    read = custom.get_cluster_custom_object(
        "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
    )
    # Everything sent is kept; the schema's `default:` values are the only additions.
    assert read["spec"]["ofedDriver"] == {
        **NIC_CLUSTER_POLICY["spec"]["ofedDriver"],
        "forcePrecompiled": False,
        "imagePullSecrets": [],
        "terminationGracePeriodSeconds": 300,
    }


def _node_policy(link_type: str, namespace: str) -> dict:
    return {
        "apiVersion": "sriovnetwork.openshift.io/v1",
        "kind": "SriovNetworkNodePolicy",
        "metadata": {"name": f"policy-{link_type.lower()}", "namespace": namespace},
        "spec": {
            "deviceType": "netdevice",
            "nicSelector": {"vendor": "15b3", "pfNames": ["ens8f0np0#0-7"]},
            "nodeSelector": {"feature.node.kubernetes.io/pci-15b3.present": "true"},
            "numVfs": 8,
            "resourceName": "sriovlegacy",
            "isRdma": True,
            "linkType": link_type,
        },
    }


@pytest.fixture
def policy_namespace(core, custom, namespace):
    """A fresh namespace for SriovNetworkNodePolicies. Afterwards its policies are deleted at once
    (a later preflight would find them on the interfaces it configures), then the namespace."""
    yield namespace
    custom.delete_collection_namespaced_custom_object(
        "sriovnetwork.openshift.io", "v1", namespace, "sriovnetworknodepolicies"
    )
    core.delete_namespace(namespace)


def test_sriov_node_policy_with_an_unknown_link_type_is_rejected(custom, policy_namespace):
    namespace = policy_namespace
    with pytest.raises(ApiException) as raised:
        custom.create_namespaced_custom_object(
            "sriovnetwork.openshift.io",
            "v1",
            namespace,
            "sriovnetworknodepolicies",
            _node_policy("foo", namespace),
        )
    assert raised.value.status == 422
    body = json.loads(raised.value.body)
    assert "spec.linkType" in body["message"]
    assert 'supported values: "eth", "ETH", "ib", "IB"' in body["message"]


@pytest.mark.parametrize("link_type", ["eth", "IB"])
def test_sriov_node_policy_with_a_known_link_type_is_accepted(custom, policy_namespace, link_type):
    namespace = policy_namespace
    stored = custom.create_namespaced_custom_object(
        "sriovnetwork.openshift.io",
        "v1",
        namespace,
        "sriovnetworknodepolicies",
        _node_policy(link_type, namespace),
    )
    assert stored["spec"]["linkType"] == link_type


def test_rbac_is_enforced_for_a_user_without_bindings(control_plane, tmp_path):
    kubeconfig = tmp_path / "nobody.kubeconfig"
    control_plane.write_kubeconfig(kubeconfig, "nobody", [])
    with pytest.raises(ApiException) as raised:
        client.CoreV1Api(api_client(kubeconfig)).list_namespace()
    assert raised.value.status == 403
    assert (
        'User "nobody" cannot list resource "namespaces"'
        in json.loads(raised.value.body)["message"]
    )


# -- kube-controller-manager: namespace and garbage-collector controllers --------------------


def _wait_until_gone(read, *args, timeout: float = 30.0) -> float:
    """Poll read(*args) until it answers 404; return the seconds that took."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        try:
            read(*args)
        except ApiException as error:
            assert error.status == 404, error.body
            return time.monotonic() - began
        time.sleep(0.2)
    pytest.fail(f"{getattr(read, '__name__', read)}{args} still there after {timeout}s")


def _network_attachment_definition(name: str) -> dict:
    return {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name},
        "spec": {"config": json.dumps({"cniVersion": "0.3.1", "name": name, "type": "macvlan"})},
    }


def test_a_deleted_namespace_goes_with_everything_in_it(core, custom, namespace, audit):
    nad = ("k8s.cni.cncf.io", "v1", namespace, "network-attachment-definitions")
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "settings"}})
    custom.create_namespaced_custom_object(*nad, _network_attachment_definition("rdma-net"))

    core.delete_namespace(namespace)
    # The API server only marks it; the namespace controller empties and removes it.
    assert core.read_namespace(namespace).status.phase == "Terminating"
    _wait_until_gone(core.read_namespace, namespace)

    assert core.list_namespaced_config_map(namespace).items == []
    assert custom.list_namespaced_custom_object(*nad)["items"] == []
    cleared = {
        w.resource for w in audit.writes(CONTROLLER_MANAGER_USER) if w.namespace == namespace
    }
    assert {"configmaps", "network-attachment-definitions", "namespaces/finalize"} <= cleared


def test_an_object_whose_owner_is_deleted_is_garbage_collected(core, namespace, audit):
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    keeper = core.create_namespaced_config_map(namespace, {"metadata": {"name": "keeper"}})

    def owned_by(name: str, by) -> dict:
        reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": by.metadata.name}
        reference["uid"] = by.metadata.uid
        return {"metadata": {"name": name, "ownerReferences": [reference]}}

    core.create_namespaced_config_map(namespace, owned_by("dependent", owner))
    core.create_namespaced_config_map(namespace, owned_by("kept", keeper))

    core.delete_namespaced_config_map("owner", namespace)
    _wait_until_gone(core.read_namespaced_config_map, "dependent", namespace)

    collected = [
        (w.verb, w.resource, w.name)
        for w in audit.writes(CONTROLLER_MANAGER_USER)
        if w.namespace == namespace
    ]
    assert collected == [("delete", "configmaps", "dependent")]
    # An object whose owner still exists stays.
    assert core.read_namespaced_config_map("kept", namespace).metadata.name == "kept"


OPENSHIFT_CONFIG = {
    "ClusterVersion": (
        "clusterversions",
        {"channel": "stable-4.20", "clusterID": str(uuid.uuid4())},
        {
            "desired": {"version": "4.20.3", "channels": ["stable-4.20", "fast-4.20"]},
            "history": [
                {"version": "4.20.3", "state": "Completed"},
                {"version": "4.20.1", "state": "Completed"},
            ],
        },
    ),
    "Infrastructure": (
        "infrastructures",
        {"platformSpec": {"type": "BareMetal"}},
        {
            "controlPlaneTopology": "HighlyAvailable",
            "infrastructureTopology": "HighlyAvailable",
            "platform": "BareMetal",
        },
    ),
}


@pytest.fixture
def openshift_config(custom):
    """Create one object of a config.openshift.io/v1 kind (status through its subresource), named
    apart from the simulator's `version` and `cluster`; delete it afterwards."""
    created = []

    def create(kind: str, status: dict | None = None) -> dict:
        plural, spec, default_status = OPENSHIFT_CONFIG[kind]
        name = f"test-{uuid.uuid4().hex[:8]}"
        body = {
            "apiVersion": "config.openshift.io/v1",
            "kind": kind,
            "metadata": {"name": name},
            "spec": spec,
        }
        stored = custom.create_cluster_custom_object("config.openshift.io", "v1", plural, body)
        created.append((plural, name))
        stored["status"] = status or default_status
        return custom.replace_cluster_custom_object_status(
            "config.openshift.io", "v1", plural, name, stored
        )

    yield create
    for plural, name in created:
        custom.delete_cluster_custom_object("config.openshift.io", "v1", plural, name)


@pytest.mark.parametrize("kind", ["ClusterVersion", "Infrastructure"])
def test_openshift_config_kinds_are_served(harness, custom, openshift_config, kind):
    plural, spec, status = OPENSHIFT_CONFIG[kind]
    crd = client.ApiextensionsV1Api(harness).read_custom_resource_definition(
        f"{plural}.config.openshift.io"
    )
    assert crd.spec.scope == "Cluster"
    assert any(c.type == "Established" and c.status == "True" for c in crd.status.conditions)
    assert f"{plural}.config.openshift.io.yaml" not in {p.name for p in crd_files()}
    assert [p.name for p in harness_crd_files()] == [
        "config.openshift.io.yaml",
        "gpuclusters.nvidia.com.yaml",
        "image.openshift.io.yaml",
    ]
    # Written here only while ../shared lacks the upstream file.
    assert "gpuclusters.nvidia.com.yaml" not in {p.name for p in crd_files()}

    name = openshift_config(kind)["metadata"]["name"]
    read = custom.get_cluster_custom_object("config.openshift.io", "v1", plural, name)
    assert read["kind"] == kind
    # Every field is kept, the typed ones and the rest: spec and status preserve unknown fields.
    assert read["spec"] == spec
    assert read["status"] == status


@pytest.mark.parametrize(
    ("kind", "status", "field"),
    [
        ("ClusterVersion", {"history": [{"version": "4.20.3", "state": "Done"}]}, "state"),
        ("ClusterVersion", {"desired": {"version": 4.2}}, "status.desired.version"),
        ("Infrastructure", {"controlPlaneTopology": "TwoNodes"}, "controlPlaneTopology"),
    ],
)
def test_openshift_config_typed_fields_are_validated(openshift_config, kind, status, field):
    with pytest.raises(ApiException) as raised:
        openshift_config(kind, status)
    assert raised.value.status == 422
    assert field in raised.value.body


def test_a_port_taken_before_etcd_binds_it_starts_again_on_new_ports(tmp_path, monkeypatch, capsys):
    """Another run on the machine may take a port between free_port() and the bind."""
    taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    ports = iter([taken.getsockname()[1]])
    real_free_port = controlplane.free_port
    monkeypatch.setattr(controlplane, "free_port", lambda: next(ports, None) or real_free_port())
    plane = controlplane.ControlPlane(tmp_path / "plane")
    try:
        plane.start()
        assert plane.running()
        assert "etcd found its port taken; starting again on new ports" in capsys.readouterr().out
    finally:
        plane.stop()
        taken.close()


def test_the_monitoring_kinds_are_served_by_their_real_crds_and_judge_the_fabric_rule(
    custom,
):
    """The prometheus-operator CRDs (fetched from the Go module proxy, not ../shared) are served:
    the fabric's PrometheusRule (builders/monitoring.py) is taken whole by their schema, and one
    with a duration the schema's pattern refuses is not."""
    assert [p.name for p in monitoring_crd_files()] == [
        "monitoring.coreos.com_prometheusrules.yaml",
        "monitoring.coreos.com_servicemonitors.yaml",
    ]
    assert (
        custom.list_cluster_custom_object("monitoring.coreos.com", "v1", "servicemonitors")["items"]
        == []
    )
    plan = build_plan(inputs("node-groups"))
    rule = monitoring.prometheus_rule(
        plan, "default", {("a100", 3): {"device": "mlx5_3", "gpu": 3}}, monitoring.THRESHOLDS
    )

    def dry_run(body):
        return custom.create_namespaced_custom_object(
            "monitoring.coreos.com", "v1", "default", "prometheusrules", body, dry_run="All"
        )

    assert dry_run(rule)["spec"] == rule["spec"], "the schema pruned a field of the rule"
    bad = copy.deepcopy(rule)
    bad["spec"]["groups"][1]["rules"][0]["for"] = "5 minutes"
    with pytest.raises(ApiException) as refused:
        dry_run(bad)
    assert refused.value.status == 422
    assert "spec.groups[1].rules[0].for" in refused.value.body
