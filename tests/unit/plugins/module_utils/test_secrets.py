"""The registry pull Secret: its content is a registry login, and no diff shows it."""

from __future__ import annotations

import base64
import json

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import clean, decide
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.secrets import registry_secret

SECRET = "s3cr3t-Pa55:w0rd"  # noqa: S105 - a test value whose leaks the tests look for


def test_the_secret_holds_the_login_of_the_registry_with_the_collections_labels():
    secret = registry_secret(
        "gpudirect-rdma-image-registry",
        "nvidia-network-operator",
        "mirror.local:5000",
        "puller",
        SECRET,
        "network-operator",
    )
    assert secret["type"] == "kubernetes.io/dockerconfigjson"
    assert secret["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "gpudirect.rdma",
        "gpudirect.rdma/component": "network-operator",
    }
    config = json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))
    login = config["auths"]["mirror.local:5000"]
    assert login["username"] == "puller" and login["password"] == SECRET
    assert base64.b64decode(login["auth"]).decode() == f"puller:{SECRET}"
    # The same login gives the same bytes: a converged Secret is not written again.
    again = registry_secret(
        "gpudirect-rdma-image-registry",
        "nvidia-network-operator",
        "mirror.local:5000",
        "puller",
        SECRET,
        "network-operator",
    )
    assert (
        decide(
            again,
            {
                **secret,
                "metadata": {
                    **secret["metadata"],
                    "managedFields": [
                        {"manager": "gpudirect.rdma", "operation": "Apply", "fieldsV1": {}}
                    ],
                },
            },
        )[0]
        == "unchanged"
    )


def test_no_diff_or_result_shows_a_secrets_values():
    secret = registry_secret("s", "ns", "mirror.local", "puller", SECRET, "network-operator")
    shown = clean({**secret, "stringData": {"password": SECRET}})
    assert shown["data"] == {".dockerconfigjson": "(hidden)"}
    assert shown["stringData"] == {"password": "(hidden)"}
    assert SECRET not in json.dumps(shown)
    assert secret["data"][".dockerconfigjson"] not in json.dumps(shown)
    assert secret["data"][".dockerconfigjson"] != "(hidden)"  # the input is left alone


class StageCluster:
    """Lists objects by kind (the label selector is taken as matched), but never Secrets;
    reads one by name; records deletions, which take effect at once."""

    def __init__(self, objects):
        self.objects = objects
        self.deleted = []
        self.listed = []

    def list(self, api_version, kind, namespace=None, label_selector=None):
        self.listed.append(kind)
        return [o for o in self.objects if o["kind"] == kind and o not in self.deleted]

    def get(self, api_version, kind, name, namespace=None):
        for o in self.objects:
            metadata = o["metadata"]
            if (o["kind"], metadata["name"], metadata.get("namespace")) == (kind, name, namespace):
                return None if o in self.deleted else o
        return None

    def delete(self, api_version, kind, name, namespace=None):
        self.deleted.extend(
            o
            for o in self.objects
            if (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace"))
            == (kind, name, namespace)
        )


def test_uninstall_removes_the_pull_secret_with_the_nicclusterpolicy_and_shows_no_data():
    from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.remove import Remover

    secret = registry_secret(
        "gpudirect-rdma-image-registry",
        "nvidia-network-operator",
        "m",
        "puller",
        SECRET,
        "network-operator",
    )
    labels = secret["metadata"]["labels"]
    policy = {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "metadata": {"name": "nic-cluster-policy", "labels": labels},
    }
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "nvidia-network-operator", "labels": labels},
    }
    # Somebody else's Secret of that name in another namespace stays.
    foreign = registry_secret(
        "gpudirect-rdma-image-registry", "team", "m", "puller", SECRET, "network-operator"
    )
    foreign["metadata"]["labels"] = {}
    cluster = StageCluster([policy, secret, namespace, foreign])
    remover = Remover(cluster, check_mode=False, sleep=lambda _seconds: None)
    remover.remove("network-operator", "", timeout=5)
    assert cluster.deleted == [policy, secret]
    assert "Secret" not in cluster.listed, "Secrets are read by name, never listed"
    # A selector for other components leaves it.
    cluster = StageCluster([secret, namespace])
    Remover(cluster, check_mode=False, sleep=lambda _seconds: None).remove(
        "network-operator", "gpudirect.rdma/component=shared-device", timeout=5
    )
    assert cluster.deleted == []
    assert SECRET not in json.dumps(remover.diffs)
    assert secret["data"][".dockerconfigjson"] not in json.dumps(remover.diffs + remover.results)


def test_somebody_elses_secret_does_not_keep_a_namespace_of_the_collection():
    from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.remove import Remover

    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "nvidia-network-operator", "labels": {}},
    }
    token = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "operator-token", "namespace": "nvidia-network-operator"},
    }
    remover = Remover(StageCluster([namespace, token]), check_mode=True)
    assert remover._namespaces_to_delete([namespace]) == [namespace]
