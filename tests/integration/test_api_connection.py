"""The collection's own connection (module_utils/k8s/api.py) against the real API server: the
kinds it requests without discovery are where the server serves them, and a 404 tells an
absent object from a kind the server does not serve, in the server's own words."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s import api
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (
    Cluster,
    NotServed,
    Resource,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.kinds import RESOURCES


class Module:
    def __init__(self, kubeconfig):
        self.params = {"kubeconfig": str(kubeconfig)}


# OLM's package server serves it (an aggregated API, not a CRD), which the local control plane
# lacks: `oc get packagemanifests -n openshift-marketplace` on OpenShift.
NOT_SERVED_HERE = {("packages.operators.coreos.com/v1", "PackageManifest")}


def test_every_kind_of_the_table_is_served_where_the_table_says(control_plane):
    connection = api.Api(api.settings({"kubeconfig": str(control_plane.kubeconfig)}, environ={}))
    table = {key: value for key, value in RESOURCES.items() if key not in NOT_SERVED_HERE}
    served = {}
    for api_version in sorted({api_version for api_version, _kind in table}):
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        for entry in connection.request("GET", path)["resources"]:
            if "/" not in entry["name"]:
                served[(api_version, entry["kind"])] = (entry["name"], entry["namespaced"])
    assert {key: served.get(key) for key in table} == table


def test_a_missing_object_is_none_and_a_kind_not_served_says_so(control_plane):
    cluster = Cluster(Module(control_plane.kubeconfig))
    assert cluster.get("v1", "Node", "no-such-node") is None
    assert cluster.get("mellanox.com/v1alpha1", "NicClusterPolicy", "no-such-policy") is None
    # A kind the table would name, of a group the server does not serve.
    cluster._resources[("example.com/v1", "Widget")] = Resource(
        "example.com/v1", "Widget", "widgets", False
    )
    with pytest.raises(NotServed, match="Widget"):
        cluster.get("example.com/v1", "Widget", "w")
    with pytest.raises(NotServed, match="Widget"):
        cluster.list("example.com/v1", "Widget")
    with pytest.raises(NotServed, match="Gadget"):  # not in the table: discovery says so
        cluster.resource("example.com/v1", "Gadget")
