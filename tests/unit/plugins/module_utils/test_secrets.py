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
