"""The local control plane is a real API server: it validates against the upstream CRD schemas,
prunes unknown fields, enforces RBAC, and loads every CRD in ../shared/crds (not alternatives/)."""

from __future__ import annotations

import copy
import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.harness.controlplane import api_client, crd_files

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
        assert "alternatives" not in path.parts
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


def test_sriov_node_policy_with_an_unknown_link_type_is_rejected(custom, namespace):
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
def test_sriov_node_policy_with_a_known_link_type_is_accepted(custom, namespace, link_type):
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
