"""meta/execution-environment.yml: `ansible-builder create` writes a build context offline, and the
image's galaxy and introspection stages, run here on that context, install the collection and find
its Python dependencies (no container runtime or Galaxy needed)."""

from __future__ import annotations

import filecmp
import shutil
import sysconfig
import time
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet

from tests.artifact.conftest import BIN, GALAXY, REPO_ROOT, TARBALL, ansible_env, run

EE_FILE = REPO_ROOT / "meta" / "execution-environment.yml"
EE = yaml.safe_load(EE_FILE.read_text())
SITE_COLLECTIONS = Path(sysconfig.get_paths()["purelib"]) / "ansible_collections"


@pytest.fixture(scope="module")
def context(tarball, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ee") / "context"
    started = time.monotonic()
    run(
        [
            BIN / "ansible-builder",
            "create",
            "-f",
            EE_FILE,
            "-c",
            path,
            "--output-filename",
            "Containerfile",
        ],
        cwd=REPO_ROOT,
        env=ansible_env(None),
    )
    print(f"ansible-builder create: {time.monotonic() - started:.2f}s")
    return path


@pytest.fixture(scope="module")
def galaxy_stage(context, tmp_path_factory) -> Path:
    """The image's galaxy stage: `ansible-galaxy collection install -r requirements.yml` in _build.

    kubernetes.core, which the image gets from Galaxy at the pinned version, is the ansible
    package's copy here, put in place beforehand; --offline proves nothing else is fetched."""
    path = tmp_path_factory.mktemp("ee-collections")
    shutil.copytree(
        SITE_COLLECTIONS / "kubernetes" / "core", path / "ansible_collections/kubernetes/core"
    )
    run(
        [
            BIN / "ansible-galaxy",
            "collection",
            "install",
            "-r",
            "requirements.yml",
            "-p",
            path,
            "--offline",
        ],
        cwd=context / "_build",
        env=ansible_env(None),
    )
    return path


def test_the_definition_pins_what_the_tests_run_with():
    deps = EE["dependencies"]
    assert EE["version"] == 3
    assert deps["ansible_core"]["package_pip"] == f"ansible-core=={version('ansible-core')}"
    collections = yaml.safe_load((EE_FILE.parent / deps["galaxy"]).read_text())["collections"]
    pins = {c["name"]: c.get("version") for c in collections if c.get("type") != "file"}
    site_core = yaml.safe_load((SITE_COLLECTIONS / "kubernetes/core/MANIFEST.json").read_text())
    assert pins == {"kubernetes.core": site_core["collection_info"]["version"]}
    for name, spec in GALAXY["dependencies"].items():
        assert pins[name] in SpecifierSet(spec), f"{name} {pins[name]} outside galaxy.yml's {spec}"
    # This collection, at galaxy.yml's version, from the tarball make build writes.
    assert [c["name"] for c in collections if c.get("type") == "file"] == [
        f"collections/{TARBALL.name}"
    ]
    assert EE["additional_build_files"] == [
        {"src": f"../build/{TARBALL.name}", "dest": "collections"}
    ]


def test_the_python_requirements_resolve_for_both_readers():
    """ansible-builder reads dependencies.python relative to meta/, its introspection of the
    installed collection relative to the collection root: both must be the one file."""
    name = EE["dependencies"]["python"]
    assert (REPO_ROOT / "meta" / name).is_file() and not (REPO_ROOT / "meta" / name).is_symlink()
    assert (REPO_ROOT / name).resolve() == (REPO_ROOT / "meta" / name).resolve()
    assert "system" not in EE["dependencies"]


def test_create_writes_the_context_with_the_collections_dependencies(context, tarball):
    containerfile = (context / "Containerfile").read_text()
    assert f'ARG EE_BASE_IMAGE="{EE["images"]["base_image"]["name"]}"' in containerfile
    assert f"ansible-core=={version('ansible-core')}" in containerfile
    assert "ansible-galaxy collection install" in containerfile
    assert "introspect.py introspect --user-pip=requirements.txt" in containerfile

    build = context / "_build"
    assert (build / "requirements.txt").read_text() == (
        REPO_ROOT / "meta/requirements.txt"
    ).read_text()
    assert {"kubernetes", "jmespath", "PyYAML"} <= {
        line.split("==")[0]
        for line in (build / "requirements.txt").read_text().splitlines()
        if line and not line.startswith("#")
    }
    assert yaml.safe_load((build / "requirements.yml").read_text()) == yaml.safe_load(
        (REPO_ROOT / "meta" / EE["dependencies"]["galaxy"]).read_text()
    )
    assert filecmp.cmp(build / "collections" / tarball.name, tarball, shallow=False)
    assert (build / "exclude-bindep.txt").read_text().split() == [
        "kubernetes-client",
        "openshift-clients",
    ]


def test_the_galaxy_stage_installs_the_collection_from_the_context(galaxy_stage):
    manifest = yaml.safe_load(
        (galaxy_stage / "ansible_collections/gpudirect/rdma/MANIFEST.json").read_text()
    )
    assert manifest["collection_info"]["version"] == GALAXY["version"]


def test_introspection_finds_the_collections_python_dependencies(context, galaxy_stage):
    """The builder stage's introspect.py, with the Containerfile's arguments, on what the galaxy
    stage installed: our pins from the collection and the user file, kubernetes.core's, no system
    packages (kubectl excluded)."""
    build = context / "_build"
    out = run(
        [
            BIN / "python",
            build / "scripts/introspect.py",
            "introspect",
            galaxy_stage,
            "--user-pip=requirements.txt",
            "--exclude-bindep-reqs=exclude-bindep.txt",
        ],
        cwd=build,
        env=ansible_env(None),
    ).stdout
    found = yaml.safe_load(out[out.index("---") :])
    pins = [
        line
        for line in (REPO_ROOT / "meta/requirements.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    # introspection leaves out PyYAML (in every image already) when a collection asks for it
    ours = {
        f"{pin}  # from collection gpudirect.rdma" for pin in pins if not pin.startswith("PyYAML")
    }
    assert ours | {"kubernetes>=24.2.0  # from collection kubernetes.core"} <= set(found["python"])
    assert {f"{pin}  # from collection user" for pin in pins} <= set(found["python"])
    assert found["system"] == []
