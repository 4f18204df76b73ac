"""The collection's modules through Python's bytecode cache (module_utils/bytecode_cache.py)."""

from __future__ import annotations

import importlib.machinery
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils.bytecode_cache import (
    ANSIBLE_FINDER,
    PACKAGE,
    CachedSourceFinder,
    install,
)
from tests.harness.controlplane import REPO_ROOT

K8S = REPO_ROOT / "plugins" / "module_utils" / "k8s"


def test_a_module_of_the_collection_on_disk_is_a_source_file_with_its_cache():
    spec = CachedSourceFinder.find_spec(PACKAGE + "module_utils.k8s.reads", [str(K8S)])
    assert isinstance(spec.loader, importlib.machinery.SourceFileLoader)
    assert spec.origin == str(K8S / "reads.py")
    assert spec.cached.endswith(".pyc") and "__pycache__" in spec.cached
    package = CachedSourceFinder.find_spec(PACKAGE + "module_utils.k8s", [str(K8S.parent)])
    assert package.submodule_search_locations == [str(K8S)]


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("ansible_collections.kubernetes.core.plugins.module_utils.k8s", [str(K8S.parent)]),
        (PACKAGE + "module_utils.k8s.reads", None),  # a top-level name: Ansible's
        (PACKAGE + "module_utils.k8s.no_such_module", [str(K8S)]),
    ],
)
def test_anything_else_is_left_to_the_loaders_after_it(name, path):
    assert CachedSourceFinder.find_spec(name, path) is None


def test_a_module_inside_a_zip_as_ansiballz_ships_it_is_left_to_ansible(tmp_path):
    payload = tmp_path / "payload.zip"
    with zipfile.ZipFile(payload, "w") as archive:
        archive.write(K8S / "reads.py", "ansible_collections/gpudirect/rdma/plugins/k8s/reads.py")
    inside = f"{payload}/ansible_collections/gpudirect/rdma/plugins/k8s"
    assert CachedSourceFinder.find_spec(PACKAGE + "module_utils.k8s.reads", [inside]) is None


IMPORT = """
import sys
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader([sys.argv[1]])
import ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.reads as reads
print(type(reads.__loader__).__name__, reads.__cached__)
"""


def run_import(collections: Path, **env: str) -> list[str]:
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environment.update(PYTHONPATH="", **env)
    done = subprocess.run(
        [sys.executable, "-c", IMPORT, str(collections)],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def test_an_ansible_run_writes_the_bytecode_once_and_reads_it_after(tmp_path):
    collections = tmp_path / "collections"
    copy = collections / "ansible_collections" / "gpudirect" / "rdma"
    shutil.copytree(
        REPO_ROOT / "plugins", copy / "plugins", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(REPO_ROOT / "meta", copy / "meta")
    shutil.copy(REPO_ROOT / "galaxy.yml", copy)
    pyc = copy / "plugins" / "module_utils" / "k8s" / "__pycache__"

    assert run_import(collections, PYTHONDONTWRITEBYTECODE="1")[0] == "SourceFileLoader"
    assert not pyc.exists()  # as asked: compiled, nothing written

    loader, cached = run_import(collections)
    assert loader == "SourceFileLoader"
    assert Path(cached).parent == pyc and Path(cached).is_file()
    written = Path(cached).stat().st_mtime_ns
    os.utime(cached, ns=(written, written))
    assert run_import(collections) == [loader, cached]
    assert Path(cached).stat().st_mtime_ns == written  # read, not written again


def test_the_finder_goes_just_before_ansibles_and_leaves_what_is_first_in_front():
    """ansible-test's import sanity test puts its own finder first and requires it to stay
    there; ansible-playbook has Ansible's first. Told by its class's name, Ansible's finder must
    be found on the ansible-core under test (else the cache is silently off)."""
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

    assert _AnsibleCollectionFinder.__name__ == ANSIBLE_FINDER
    ansible = next(f for f in sys.meta_path if type(f).__name__ == ANSIBLE_FINDER)
    first = type("First", (), {"find_spec": staticmethod(lambda *_args: None)})()
    saved = list(sys.meta_path)
    try:
        sys.meta_path[:] = [first, ansible, *(f for f in saved if f is not ansible)]
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, CachedSourceFinder)]
        install()
        install()  # once
        assert sys.meta_path[0] is first
        assert isinstance(sys.meta_path[1], CachedSourceFinder)
        assert sys.meta_path[2] is ansible
        assert sum(isinstance(f, CachedSourceFinder) for f in sys.meta_path) == 1
        sys.meta_path[:] = [f for f in saved if type(f).__name__ != ANSIBLE_FINDER]
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, CachedSourceFinder)]
        install()  # no Ansible finder: nothing
        assert not any(isinstance(f, CachedSourceFinder) for f in sys.meta_path)
    finally:
        sys.meta_path[:] = saved
