"""The pull Secret of a registry that needs a login, made from its credentials (pure).

The credentials arrive as module options marked no_log; the Secret's data is their base64 form,
which no result, message or diff of the collection ever shows (see apply.clean)."""

from __future__ import annotations

import base64
import json

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import ownership

DOCKER_CONFIG_JSON = "kubernetes.io/dockerconfigjson"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def docker_config_json(registry: str, username: str, password: str) -> str:
    """The .dockerconfigjson document of one registry login (keys sorted: the same input gives
    the same bytes, so a converged Secret is not written again)."""
    auths = {
        registry: {
            "username": username,
            "password": password,
            "auth": _b64(f"{username}:{password}"),
        }
    }
    return json.dumps({"auths": auths}, sort_keys=True, separators=(",", ":"))


def registry_secret(
    name: str, namespace: str, registry: str, username: str, password: str, component: str
) -> dict:
    """A kubernetes.io/dockerconfigjson Secret with the collection's labels."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": ownership(component),
        },
        "type": DOCKER_CONFIG_JSON,
        "data": {".dockerconfigjson": _b64(docker_config_json(registry, username, password))},
    }
