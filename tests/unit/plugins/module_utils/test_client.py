"""The connection's one place for refusals: a 403 from any request becomes Forbidden, naming
the user, the verb, the resource and where, and the RBAC the collection ships; other errors pass
unchanged."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.api import ApiError
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (
    CLUSTER_ROLE,
    RBAC_BINDING_FILE,
    RBAC_FILE,
    VERIFY_ROLE,
    Cluster,
    Forbidden,
)


def api_error(status: int, message: str) -> ApiError:
    """The error for an answer with this status and Status message."""
    body = json.dumps({"kind": "Status", "message": message, "code": status})
    return ApiError(status, "Forbidden" if status == 403 else "Not Found", body.encode())


class Answering:
    """api.Api as far as Cluster uses it: every request answered by raising error."""

    server = "https://127.0.0.1:6443"

    def __init__(self, error):
        self.error = error

    def request(self, method, path, **_kwargs):
        self.error.method, self.error.path = method, path
        raise self.error


def refusing(error):
    cluster = Cluster.__new__(Cluster)
    cluster.api, cluster._resources, cluster._server = Answering(error), {}, None

    def request(method, path):
        with cluster.requesting(f"{method} {path}"):
            cluster.api.request(method, path)

    return request


def test_a_refusal_at_the_cluster_scope():
    message = (
        'clusterversions.config.openshift.io "version" is forbidden: User "alice" cannot get '
        'resource "clusterversions" in API group "config.openshift.io" at the cluster scope'
    )
    request = refusing(api_error(403, message))
    with pytest.raises(Forbidden) as raised:
        request("GET", "/apis/config.openshift.io/v1/clusterversions/version")
    error = raised.value
    assert (error.user, error.verb, error.resource, error.namespace) == (
        "alice",
        "get",
        "clusterversions.config.openshift.io",
        None,
    )
    text = str(error)
    assert text.startswith(
        'forbidden: the API server does not allow user "alice" to get '
        f"clusterversions.config.openshift.io ({message}). gpudirect.rdma needs the ClusterRole "
        f"{CLUSTER_ROLE} and, in the namespace of the bandwidth test's pods, the Role {VERIFY_ROLE}"
    )
    assert RBAC_FILE in text and RBAC_BINDING_FILE in text
    assert (error.status, error.reason) == (403, "Forbidden")  # diagnostics reads these


def test_a_refusal_in_a_namespace_of_a_core_resource():
    message = (
        'pods "rdma-server-0" is forbidden: User "bob" cannot patch resource "pods" in API '
        'group "" in the namespace "default"'
    )
    with pytest.raises(Forbidden) as raised:
        refusing(api_error(403, message))("PATCH", "/api/v1/namespaces/default/pods/x")
    assert str(raised.value).startswith(
        'forbidden: the API server does not allow user "bob" to patch pods in namespace default ('
    )


def test_a_refused_namespace_is_named_as_such():
    message = (
        'namespaces "openshift-nfd" is forbidden: User "bob" cannot create resource "namespaces" '
        'in API group "" in the namespace "openshift-nfd"'
    )
    with pytest.raises(Forbidden) as raised:
        refusing(api_error(403, message))("PATCH", "/api/v1/namespaces/openshift-nfd")
    assert str(raised.value).startswith(
        'forbidden: the API server does not allow user "bob" to create namespaces named '
        "openshift-nfd ("
    )


def test_a_refusal_in_other_words_keeps_the_servers_message():
    request = refusing(api_error(403, "denied by a webhook"))
    with pytest.raises(Forbidden) as raised:
        request("DELETE", "/apis/nvidia.com/v1/clusterpolicies/gpu-cluster-policy")
    # Not the RBAC authorizer's words (a webhook, a namespace being terminated): no advice about
    # the shipped roles, which would not help.
    assert str(raised.value) == (
        "forbidden: the API server refused to delete "
        "/apis/nvidia.com/v1/clusterpolicies/gpu-cluster-policy: denied by a webhook"
    )


def test_other_errors_pass_unchanged():
    missing = api_error(404, "not found")
    with pytest.raises(type(missing)) as raised:
        refusing(missing)("GET", "/api/v1/nodes/x")
    assert raised.value is missing
