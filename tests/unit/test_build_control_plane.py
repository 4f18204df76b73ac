"""hack/build-control-plane.sh run by two clones at once, on an empty cache.

The real build takes minutes; here a stand-in for the go command answers the few calls the
script makes (the go.mod of k8s.io/kubernetes, go get, go build), and each `go build` takes a
second, so two runs started together overlap for certain. What is tested is the script: its
cache check, its lock, its own output directory and the move into place."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.harness.controlplane import BUILD_SCRIPT

BINARIES = ("kube-apiserver", "kubectl", "kube-controller-manager", "etcd")

FAKE_GO = r"""#!/usr/bin/env bash
# A stand-in for the go command: only what build-control-plane.sh calls.
set -euo pipefail
case "$1" in
  mod)   # go mod download -json k8s.io/kubernetes@<version>
    gomod="${FAKE_GO_DIR}/kubernetes.go.mod"
    cat > "${gomod}" <<'EOF'
module k8s.io/kubernetes

go 1.24.0

require (
    go.etcd.io/etcd/server/v3 v3.6.5
)

replace (
    k8s.io/api => ./staging/src/k8s.io/api
    k8s.io/client-go => ./staging/src/k8s.io/client-go
)
EOF
    printf '{\n\t"Path": "k8s.io/kubernetes",\n\t"GoMod": "%s",\n}\n' "${gomod}"
    ;;
  get)
    touch go.sum
    ;;
  build)   # go build -trimpath -ldflags <flags> -o <output> <package>
    shift
    while [[ "$1" != "-o" ]]; do shift; done
    output="$2"
    echo "$$ ${output}" >> "${FAKE_GO_DIR}/builds.log"
    sleep "${FAKE_GO_BUILD_SECONDS:-1}"
    printf '#!/bin/sh\necho fake\n' > "${output}"
    chmod +x "${output}"
    ;;
  *)
    echo "fake go: unexpected call: $*" >&2
    exit 2
    ;;
esac
"""


@pytest.fixture
def fake_go(tmp_path) -> dict:
    """An environment whose go is the stand-in and whose cache is empty."""
    tools = tmp_path / "tools"
    tools.mkdir()
    go = tools / "go"
    go.write_text(FAKE_GO)
    go.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{tools}:{os.environ['PATH']}",
        "FAKE_GO_DIR": str(tmp_path),
        "GPUDIRECT_RDMA_CACHE": str(tmp_path / "cache"),
        "KUBE_VERSION": "v1.35.4",
    }
    env.pop("KUBEBUILDER_ASSETS", None)
    return env


def _run_together(env: dict, count: int) -> list[subprocess.CompletedProcess]:
    runs = [
        subprocess.Popen(
            ["bash", str(BUILD_SCRIPT)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _index in range(count)
    ]
    results = []
    for run in runs:
        stdout, stderr = run.communicate(timeout=120)
        results.append(subprocess.CompletedProcess(run.args, run.returncode, stdout, stderr))
    return results


def test_two_builds_started_together_both_succeed_with_one_complete_directory(fake_go, tmp_path):
    cache = tmp_path / "cache" / "control-plane"
    # A third run's work in progress: no run may remove it.
    foreign = cache / "v1.35.4.partial.other"
    foreign.mkdir(parents=True)
    (foreign / "etcd").write_text("another run's output")

    first, second = _run_together(fake_go, 2)

    for run in (first, second):
        assert run.returncode == 0, run.stderr
        assert run.stdout.splitlines()[-2:] == [
            f"{cache / 'v1.35.4'}/kube-controller-manager",
            str(cache / "v1.35.4"),
        ]
    assert sorted(p.name for p in (cache / "v1.35.4").iterdir()) == sorted(
        [*BINARIES, "go.mod", "go.sum"]
    )
    for binary in BINARIES:
        assert os.access(cache / "v1.35.4" / binary, os.X_OK)
    # One run built, the other waited for it and found its binaries.
    builds = (tmp_path / "builds.log").read_text().splitlines()
    assert len(builds) == len(BINARIES)
    messages = first.stderr + second.stderr
    assert "another build of v1.35.4 runs" in messages
    assert "cached (built by the other run)" in messages
    # Nothing of either run is left beside the entry; the third run's directory is untouched.
    assert sorted(p.name for p in cache.iterdir()) == [
        "v1.35.4",
        "v1.35.4.lock",
        "v1.35.4.partial.other",
    ]
    assert (foreign / "etcd").read_text() == "another run's output"


def test_a_build_reports_each_binary_and_its_time(fake_go):
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], env=fake_go, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    for binary in BINARIES:
        assert f"[build-control-plane]   {binary}: " in result.stderr
    assert "[build-control-plane] built in " in result.stderr
    again = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], env=fake_go, capture_output=True, text=True, check=False
    )
    assert again.returncode == 0
    assert again.stderr.startswith("[build-control-plane] cached: ")
    assert again.stdout == result.stdout


def test_a_failed_build_leaves_no_directory_behind(fake_go, tmp_path):
    env = {**fake_go, "FAKE_GO_BUILD_SECONDS": "not-a-number"}
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode != 0
    cache = tmp_path / "cache" / "control-plane"
    assert sorted(p.name for p in cache.iterdir()) == ["v1.35.4.lock"]
