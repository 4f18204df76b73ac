"""Tests of the built collection: the tarball `make build` writes, installed from the tarball and
run by FQCN, and the execution environment's build context made from it. `make artifact` builds
the tarball first, then runs these; run alone, they need `make build` to have written it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
GALAXY = yaml.safe_load((REPO_ROOT / "galaxy.yml").read_text())
FQCN = f"{GALAXY['namespace']}.{GALAXY['name']}"
TARBALL = REPO_ROOT / "build" / f"{GALAXY['namespace']}-{GALAXY['name']}-{GALAXY['version']}.tar.gz"
BIN = Path(sys.executable).parent


def ansible_env(collections_path: Path | None) -> dict[str, str]:
    """The environment of a user's shell: no ansible.cfg or collection path of this repository
    (the Makefile exports both), ANSIBLE_COLLECTIONS_PATH only when given. Collections of the
    ansible package (kubernetes.core) are found in site-packages, as for any user of it."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("ANSIBLE_CONFIG", "ANSIBLE_COLLECTIONS_PATH", "PYTHONPATH")
    }
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    if collections_path is not None:
        env["ANSIBLE_COLLECTIONS_PATH"] = str(collections_path)
    return env


def run(args: list[str | Path], *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [str(arg) for arg in args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, (
        f"{' '.join(map(str, args))} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    )
    return result


@pytest.fixture(scope="session")
def tarball() -> Path:
    if not TARBALL.is_file():
        pytest.fail(
            f"{TARBALL} not found: `make build` writes it (`make artifact` builds, then tests)"
        )
    return TARBALL


@pytest.fixture(scope="session")
def installed(tarball, tmp_path_factory) -> Path:
    """The tarball installed into a collections path of its own, the way a user installs it.

    No --no-deps: ansible-galaxy finds the dependency kubernetes.core already installed (the
    ansible package's copy in site-packages) and skips it: --offline needs nothing from Galaxy."""
    path = tmp_path_factory.mktemp("collections")
    result = run(
        [BIN / "ansible-galaxy", "collection", "install", tarball, "-p", path, "--offline"],
        cwd=path,
        env=ansible_env(None),
    )
    assert "'kubernetes.core:" in result.stdout and "is already installed" in result.stdout, (
        result.stdout
    )
    return path
