"""The local control plane's life cycle as a newcomer meets it (`make cluster-up`, `make demo`,
`make test` all go through `python -m tests.harness up`): the readiness deadline starts once the
binaries are there, a start that fails stops everything it started, a start that was killed is
reported as partial and the next `up` recovers from it. Each test runs control planes of its own
in a temporary state directory, beside the shared one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.harness import controlplane
from tests.harness.controlplane import REPO_ROOT, ControlPlane
from tests.integration.helpers import wait_for


def harness(state_dir: Path, action: str, env: dict | None = None, **kwargs):
    """python -m tests.harness <action>, as make runs it."""
    return subprocess.run(
        [sys.executable, "-m", "tests.harness", action, "--state-dir", str(state_dir)],
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        **kwargs,
    )


def processes_of(state_dir: Path) -> list[str]:
    """The command lines of every process on this machine that names state_dir (etcd's data
    directory, kube-apiserver's certificates, the simulator's kubeconfig)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        line = " ".join(part.decode(errors="replace") for part in argv)
        if str(state_dir) in line:
            found.append(f"{entry.name}: {line[:160]}")
    return found


@pytest.fixture(scope="module")
def binaries() -> controlplane.Binaries:
    return controlplane.find_binaries()


@pytest.fixture
def state_dir(tmp_path):
    """A state directory of the test's own; whatever still names it afterwards (a test that
    failed halfway) is stopped, then killed."""
    path = tmp_path / "plane"
    yield path
    ControlPlane(path).stop()
    for line in processes_of(path):
        os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)


def test_the_readiness_deadline_starts_after_the_binaries_are_found(state_dir, monkeypatch):
    """A build on a cold cache takes minutes; the clock the harness reads jumps past the whole
    timeout while the binaries are found, as it would during such a build."""
    timeout = 120.0
    shift = {"seconds": 0.0}

    class Clock:
        @staticmethod
        def monotonic() -> float:
            return time.monotonic() + shift["seconds"]

        sleep = staticmethod(time.sleep)
        strftime = staticmethod(time.strftime)

    real_find = controlplane.find_binaries

    def slow_build():
        found = real_find()
        shift["seconds"] += timeout + 60
        return found

    monkeypatch.setattr(controlplane, "time", Clock)
    monkeypatch.setattr(controlplane, "find_binaries", slow_build)
    plane = ControlPlane(state_dir)
    try:
        plane.start(timeout=timeout)
        assert shift["seconds"] > timeout
        assert plane.health().state == "running"
        state = json.loads(plane.state_file.read_text())
        # The ready time counts from the binaries, not from the start of the call.
        assert state["ready_seconds"] < timeout
    finally:
        plane.stop()


def _assets_with_a_failing_api_server(tmp_path: Path, binaries) -> Path:
    assets = tmp_path / "assets"
    assets.mkdir()
    (assets / "etcd").symlink_to(binaries.directory / "etcd")
    (assets / "kube-controller-manager").symlink_to(binaries.controller_manager)
    api_server = assets / "kube-apiserver"
    api_server.write_text("#!/bin/sh\necho 'E0101 simulated: cannot start' >&2\nexit 1\n")
    api_server.chmod(0o755)
    return assets


def test_a_start_that_fails_halfway_leaves_nothing_running_and_the_next_up_succeeds(
    tmp_path, state_dir, binaries
):
    assets = _assets_with_a_failing_api_server(tmp_path, binaries)

    failed = harness(state_dir, "up", env={"KUBEBUILDER_ASSETS": str(assets)})

    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "Traceback" not in failed.stderr
    errors = [line for line in failed.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: kube-apiserver (pid {errors[0].split('pid ')[1].split(')')[0]}) exited while "
        f"waiting for kube-apiserver; see {state_dir / 'kube-apiserver.log'}"
    ]
    # etcd was up (its log has its start), and is stopped now: nothing names the directory.
    assert (state_dir / "etcd.log").stat().st_size > 0
    assert processes_of(state_dir) == []
    assert not (state_dir / "state.json").exists()
    status = harness(state_dir, "status")
    assert status.returncode == 1
    assert status.stdout.splitlines()[-1].startswith("absent: no control plane recorded")

    up = harness(state_dir, "up")
    try:
        assert up.returncode == 0, up.stderr
        assert "control plane ready in" in up.stdout
        assert harness(state_dir, "status").returncode == 0
    finally:
        down = harness(state_dir, "down")
    assert down.returncode == 0
    assert processes_of(state_dir) == []


def test_a_start_killed_midway_is_reported_partial_and_up_recovers(state_dir):
    state_file = state_dir / "state.json"
    starter = subprocess.Popen(
        [sys.executable, "-m", "tests.harness", "up", "--state-dir", str(state_dir)],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def recorded() -> list[str]:
        try:
            return [p["name"] for p in json.loads(state_file.read_text())["processes"]]
        except (OSError, ValueError):
            return []

    try:
        wait_for(lambda: "kube-apiserver" in recorded(), timeout=300, what="kube-apiserver")
        while_starting = harness(state_dir, "status")
        assert while_starting.returncode == 1
        assert while_starting.stdout.splitlines()[-1] == (
            f"starting: process {starter.pid} is starting it"
        )
        # No clean-up is possible: as when a terminal is closed or a CI job is killed.
        starter.send_signal(signal.SIGKILL)
        starter.wait(timeout=10)
    finally:
        if starter.poll() is None:
            starter.kill()
    left = {p["name"]: p["pid"] for p in json.loads(state_file.read_text())["processes"]}
    assert {"etcd", "kube-apiserver"} <= set(left)
    assert processes_of(state_dir), "the killed start left its processes running"

    status = harness(state_dir, "status")
    assert status.returncode == 1
    last = status.stdout.splitlines()[-1]
    assert last.startswith("partial: a start that did not finish left etcd, kube-apiserver")
    assert "`make cluster-up` stops what is left and starts again" in last

    up = harness(state_dir, "up")
    try:
        assert up.returncode == 0, up.stderr
        assert "control plane: a start that did not finish left etcd, kube-apiserver" in up.stdout
        assert "stopping that and starting again" in up.stdout
        for name, pid in left.items():
            assert not Path(f"/proc/{pid}").exists(), f"the old {name} (pid {pid}) still runs"
        assert harness(state_dir, "status").returncode == 0
    finally:
        harness(state_dir, "down")
    assert processes_of(state_dir) == []


def test_a_dead_process_makes_the_plane_partial_and_up_starts_it_again(state_dir):
    plane = ControlPlane(state_dir)
    plane.start(simulator=True)
    simulator_log = plane.state_dir / "simulator.log"
    try:
        killed = plane.kill("kube-apiserver")
        status = harness(plane.state_dir, "status")
        assert status.returncode == 1
        assert f"{'kube-apiserver':24} pid {killed.pid:<8} gone" in status.stdout
        assert status.stdout.splitlines()[-1].startswith(
            f"partial: kube-apiserver (pid {killed.pid}) gone"
        )
        # The simulator, left without its API server, says so in one line and keeps going.
        wait_for(
            lambda: "API server unreachable" in simulator_log.read_text(),
            timeout=30,
            what="the simulator's line about the API server",
        )
        time.sleep(1)  # a few more ticks without the server
        log = simulator_log.read_text()
        assert log.count("API server unreachable") == 1
        assert "Traceback" not in log

        up = harness(plane.state_dir, "up")
        assert up.returncode == 0, up.stderr
        assert f"control plane: kube-apiserver (pid {killed.pid}) gone" in up.stdout
        assert plane.health().state == "running"
    finally:
        plane.stop()
