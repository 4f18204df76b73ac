"""The collection tarball carries everything and runs by FQCN from where ansible-galaxy put it."""

from __future__ import annotations

import json
import subprocess
import tarfile
from pathlib import Path

import yaml

from tests.artifact.conftest import BIN, FQCN, GALAXY, REPO_ROOT, ansible_env, run

# What a user runs or reads: every file git tracks under these goes into the tarball, and nothing
# else does (but what ansible-galaxy writes: MANIFEST.json, FILES.json).
SHIPPED = (
    "plugins",
    "roles",
    "playbooks",
    "meta",
    "inventories",
    "rbac",
    "changelogs/changelog.yaml",
    "changelogs/config.yaml",
    "tests/sanity",
    "docs",
    "README.md",
    "LICENSE",
    "requirements.txt",
)
WRITTEN_BY_GALAXY = ("MANIFEST.json", "FILES.json")
# What develops or tests the collection, named so that a failure says which one leaked in.
NOT_SHIPPED = (
    "tests/artifact",
    "tests/gpu",
    "tests/ansible-matrix.txt",
    "tests/harness",
    "tests/integration",
    "tests/simulator",
    "tests/unit",
    "molecule",
    "benchmarks",
    "hack",
    "changelogs/fragments",
    "Makefile",
    "pyproject.toml",
    "requirements-test.txt",
    "ansible.cfg",
    ".ansible-lint",
    ".yamllint",
    ".ci",
)


def members(tarball: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(tarball) as tar:
        return {member.name: member for member in tar.getmembers()}


def tracked(prefix: str) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "--", prefix], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout
    return out.split()


def test_the_tarball_carries_plugins_roles_playbooks_inventories_and_metadata(tarball):
    names = members(tarball)
    missing = [path for prefix in SHIPPED for path in tracked(prefix) if path not in names]
    assert not missing, f"tracked files missing from {tarball.name}: {missing}"
    for path in ("README.md", "LICENSE", *WRITTEN_BY_GALAXY, "requirements.txt"):
        assert path in names, path
    # The collection's Python requirements at the root, for ansible-builder's introspection.
    assert (
        names["requirements.txt"].issym()
        and names["requirements.txt"].linkname == "meta/requirements.txt"
    )
    for path in names:
        assert not path.startswith((".venv/", ".collections/", ".envtest/", "build/", ".git/")), (
            path
        )


def under(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path == prefix or path.startswith(f"{prefix}/") for prefix in prefixes)


def test_the_tarball_carries_nothing_but_the_collection(tarball):
    names = members(tarball)
    tests = sorted(
        path for path in names if under(path, ("tests",)) and not under(path, ("tests/sanity",))
    )
    # The tests/ folder itself holds tests/sanity, and nothing else.
    assert tests == ["tests"], f"tests/ other than tests/sanity in {tarball.name}: {tests}"
    leaked = sorted(path for path in names if under(path, NOT_SHIPPED))
    assert not leaked, f"development and test files in {tarball.name}: {leaked}"
    tracked_elsewhere = [
        path
        for path in subprocess.run(
            ["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        ).stdout.split()
        if under(path, NOT_SHIPPED)
    ]
    assert tracked_elsewhere, "NOT_SHIPPED names nothing that git tracks: the check proves nothing"
    folders = {path for path in names if names[path].isdir()}
    unexpected = sorted(
        path
        for path in names
        if path not in WRITTEN_BY_GALAXY
        and not under(path, SHIPPED)
        and not any(prefix.startswith(f"{path}/") for prefix in SHIPPED if path in folders)
    )
    assert not unexpected, f"{tarball.name} carries files that are not the collection: {unexpected}"


def test_the_manifest_declares_galaxy_yml_and_its_dependency(tarball):
    with tarfile.open(tarball) as tar:
        manifest = json.load(tar.extractfile("MANIFEST.json"))["collection_info"]
    assert (manifest["namespace"], manifest["name"], manifest["version"]) == (
        GALAXY["namespace"],
        GALAXY["name"],
        GALAXY["version"],
    )
    assert manifest["dependencies"] == GALAXY["dependencies"] == {"kubernetes.core": ">=5.0.0"}
    repository = "https://github.com/gpudirect-rdma/gpudirect.rdma"
    assert {
        key: manifest[key] for key in ("repository", "documentation", "homepage", "issues")
    } == {
        "repository": repository,
        "documentation": f"{repository}/tree/main/docs",
        "homepage": repository,
        "issues": f"{repository}/issues",
    }
    assert manifest["license"] == ["Apache-2.0"]


def test_only_the_installed_copy_is_on_the_collection_path(installed):
    listed = run(
        [BIN / "ansible-galaxy", "collection", "list", FQCN, "--format", "json"],
        cwd=installed,
        env=ansible_env(installed),
    )
    assert json.loads(listed.stdout) == {
        str(installed / "ansible_collections"): {FQCN: {"version": GALAXY["version"]}}
    }


def test_render_runs_by_fqcn_from_the_installed_collection(installed, tmp_path):
    """render.yml from the install path writes the tree the working copy writes, file for file."""
    inventory = installed / "ansible_collections/gpudirect/rdma/inventories/shared-device-roce"
    from_tarball, from_source = tmp_path / "installed", tmp_path / "source"
    result = run(
        [
            BIN / "ansible-playbook",
            f"{FQCN}.render",
            "-i",
            inventory,
            "-e",
            f"gpudirect_rdma_render_dir={from_tarball}",
        ],
        cwd=tmp_path,
        env=ansible_env(installed),
    )
    assert "failed=0" in result.stdout
    run(
        [
            BIN / "ansible-playbook",
            f"{FQCN}.render",
            "-i",
            REPO_ROOT / "inventories/shared-device-roce",
            "-e",
            f"gpudirect_rdma_render_dir={from_source}",
        ],
        cwd=tmp_path,
        env=ansible_env(REPO_ROOT / ".collections"),
    )

    files = sorted(p.relative_to(from_tarball) for p in from_tarball.rglob("*") if p.is_file())
    assert Path("kustomization.yaml") in files
    kinds = {yaml.safe_load((from_tarball / f).read_text())["kind"] for f in files}
    assert {"Kustomization", "NicClusterPolicy", "ClusterPolicy", "MacvlanNetwork"} <= kinds
    assert files == sorted(
        p.relative_to(from_source) for p in from_source.rglob("*") if p.is_file()
    )
    for name in files:
        assert (from_tarball / name).read_text() == (from_source / name).read_text(), name


def test_site_and_a_module_resolve_from_the_installed_collection(installed, tmp_path):
    """site.yml with every role it imports parses by FQCN; a module's docs find their doc fragment
    from kubernetes.core (the ansible package's copy: the dependency is met without Galaxy)."""
    inventory = installed / "ansible_collections/gpudirect/rdma/inventories/sriov-legacy-roce"
    env = ansible_env(installed)
    run(
        [BIN / "ansible-playbook", f"{FQCN}.site", "-i", inventory, "--syntax-check"],
        cwd=tmp_path,
        env=env,
    )
    doc = json.loads(
        run([BIN / "ansible-doc", "--json", f"{FQCN}.apply"], cwd=tmp_path, env=env).stdout
    )
    options = doc[f"{FQCN}.apply"]["doc"]["options"]
    assert "kubeconfig" in options, "the kubernetes.core.k8s_auth_options fragment was not merged"
