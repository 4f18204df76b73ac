"""Registry credentials are never printed: site.yml, render.yml, diagnostics.yml, a run that fails
on bad input and one that fails on a gate, all at -vvvv, with a recognisable password. Neither
the password nor any base64 form of it (alone, as user:password, inside the dockerconfigjson)
appears in their output, in the rendered tree or in the diagnostics archive; the pull Secret
exists in the cluster with the login, and the NicClusterPolicy pulls with it; uninstall.yml
(reading the Secret by its name, never listing Secrets) removes it and leaves a user's Secret of
the same name in another namespace."""

from __future__ import annotations

import base64
import json
import tarfile
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from tests.harness.controlplane import REPO_ROOT
from tests.integration.test_diagnostics import DIAGNOSTICS, archive_in
from tests.integration.test_site import SIMULATED, SITE, nodes_for

INVENTORY = REPO_ROOT / "inventories" / "shared-device-roce"
RENDER = REPO_ROOT / "playbooks" / "render.yml"
UNINSTALL = REPO_ROOT / "playbooks" / "uninstall.yml"
REGISTRY = "mirror.example.internal:5000"
USER = "gdr-puller"
PASSWORD = "gdr-Vault-Pa55word-7f3c9e"  # noqa: S105 - the value the test looks for everywhere
SECRET_NAME = "gpudirect-rdma-image-registry"  # noqa: S105 - a name
NAMESPACE = "nvidia-network-operator"


def base64_forms(value: str) -> list[str]:
    """What of value's base64 encoding shows whatever precedes it: one core per alignment."""
    forms = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + value.encode()).decode()
        start = -(-shift * 4 // 3)  # the characters that also encode the padding in front
        forms.append(encoded[start + 1 : -4])
    return forms


LEAKS = [
    PASSWORD,
    *base64_forms(PASSWORD),
    *base64_forms(f"{USER}:{PASSWORD}"),
    # The auth field, itself base64, inside the base64 of the dockerconfigjson.
    *base64_forms(base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()),
]


def assert_not_leaked(text: str, where: str) -> None:
    for form in LEAKS:
        assert form not in text, f"{where} shows {form!r}"


@pytest.fixture
def credentials(tmp_path) -> Path:
    """The login as a vars file, as Ansible Vault or an AAP credential would give it."""
    path = tmp_path / "registry.yml"
    path.write_text(
        yaml.safe_dump(
            {
                "gpudirect_rdma_image_registry": f"{REGISTRY}/nvidia",
                "gpudirect_rdma_image_registry_username": USER,
                "gpudirect_rdma_image_registry_password": PASSWORD,
            }
        )
    )
    return path


def playbook(run_playbook, path: Path, credentials: Path, *extra: str, check: bool = True):
    result = run_playbook(
        path,
        "-vvvv",
        "-i",
        str(INVENTORY),
        "-e",
        f"@{SIMULATED}",
        "-e",
        f"@{credentials}",
        *extra,
        check=check,
    )
    assert_not_leaked(result.stdout + result.stderr, f"{path.name} {' '.join(extra)}")
    return result


def test_the_registry_password_is_never_printed_rendered_or_archived(
    run_playbook, harness, knobs, credentials, tmp_path
):
    assert all(len(form) >= 12 for form in LEAKS)
    nodes_for(harness, "shared-device-roce")
    playbook(run_playbook, SITE, credentials)

    core = client.CoreV1Api(harness)
    secret = core.read_namespaced_secret(SECRET_NAME, NAMESPACE)
    assert secret.type == "kubernetes.io/dockerconfigjson"
    assert secret.metadata.labels["app.kubernetes.io/managed-by"] == "gpudirect.rdma"
    # The forms looked for do find the Secret's own data, had it been shown.
    assert any(form in secret.data[".dockerconfigjson"] for form in LEAKS)
    config = json.loads(base64.b64decode(secret.data[".dockerconfigjson"]))
    login = config["auths"][REGISTRY]
    assert (login["username"], login["password"]) == (USER, PASSWORD)
    assert base64.b64decode(login["auth"]).decode() == f"{USER}:{PASSWORD}"
    policy = client.CustomObjectsApi(harness).get_cluster_custom_object(
        "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
    )
    driver = policy["spec"]["ofedDriver"]
    assert driver["repository"].startswith(f"{REGISTRY}/")
    assert SECRET_NAME in driver["imagePullSecrets"]

    # The tree names the Secret and says how to create it, but holds no credential.
    tree = tmp_path / "rendered"
    rendered = playbook(
        run_playbook, RENDER, credentials, "-e", f"gpudirect_rdma_render_dir={tree}"
    )
    assert f"create secret docker-registry {SECRET_NAME}" in " ".join(rendered.stdout.split())
    files = [path for path in tree.rglob("*") if path.is_file()]
    assert files
    for path in files:
        assert_not_leaked(path.read_text(), str(path))
    assert not [p for p in files if "kind: Secret" in p.read_text()]

    # The archive never reads Secrets.
    archives = tmp_path / "archives"
    playbook(run_playbook, DIAGNOSTICS, credentials, "-e", f"diagnostics_dir={archives}")
    with tarfile.open(archive_in(archives)) as archive:
        for member in archive.getmembers():
            if member.isfile():
                text = archive.extractfile(member).read().decode("utf-8", errors="replace")
                assert_not_leaked(text, member.name)
                assert SECRET_NAME not in text or member.name.endswith("nicclusterpolicies.yaml")

    # Failures: a bad input (before any write) and a gate that does not open (with the
    # diagnostics of site.yml's rescue), with the Secret already there.
    bad = playbook(
        run_playbook,
        SITE,
        credentials,
        "-e",
        "gpudirect_rdma_image_registry_username=gdr:puller",
        check=False,
    )
    assert bad.returncode != 0
    assert "gpudirect_rdma_image_registry_username: got 'gdr:puller'" in bad.stdout
    knobs({"network_operator": {"never_ready": True}})
    failed = playbook(
        run_playbook,
        SITE,
        credentials,
        "-e",
        "network_operator_ready_timeout=3",
        "-e",
        f"diagnostics_dir={archives}",
        check=False,
    )
    assert failed.returncode != 0
    assert "gate 'NicClusterPolicy ready' not reached" in " ".join(failed.stdout.split())
    for path in archives.glob("*.tar.gz"):
        with tarfile.open(path) as archive:
            for member in archive.getmembers():
                if member.isfile():
                    text = archive.extractfile(member).read().decode("utf-8", errors="replace")
                    assert_not_leaked(text, f"{path.name}:{member.name}")

    # Uninstall removes the pull Secret, found by its name; a user's Secret of that name stays.
    users = {"metadata": {"name": SECRET_NAME}, "stringData": {"note": "the user's own"}}
    core.create_namespaced_secret("default", users)
    try:
        playbook(run_playbook, UNINSTALL, credentials)
        with pytest.raises(client.ApiException) as gone:
            core.read_namespaced_secret(SECRET_NAME, NAMESPACE)
        assert gone.value.status == 404
        assert core.read_namespaced_secret(SECRET_NAME, "default").data["note"]
    finally:
        core.delete_namespaced_secret(SECRET_NAME, "default")
