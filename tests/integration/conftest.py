"""Fixtures for tests against the real local control plane.

`make integration` starts one control plane (with the simulator) and passes its state directory
in GPUDIRECT_RDMA_STATE_DIR; run alone, pytest starts its own in a temporary directory and stops
it at the end. With pytest-xdist (`make integration` runs `-n 4 --dist loadfile`: the tests
wait on the simulator far more than they compute), the first worker takes that control plane and
every other worker starts one of its own, so no two tests ever share a cluster at once; a test
file's tests run in one worker, in their order.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.harness.audit import AuditLog
from tests.harness.controlplane import REPO_ROOT, ControlPlane, api_client, started
from tests.integration.helpers import playbook_command, playbook_env
from tests.integration.history import History
from tests.integration.timings import Timings
from tests.simulator.core import DEFAULT_KNOBS, write_knobs

# Where the time goes, per test file (timings.py), printed at the end of the run.
TIMINGS = Timings()


# The longest files first: pytest-xdist (--dist loadfile) hands the files out in the order
# collected, and the longest of them, started near the end of the alphabet, ran on alone for the
# last minute of a run. From the time-per-file table (longest first, 7 December 2026).
LONGEST_FIRST = (
    "test_uninstall.py",
    "test_releases.py",
    "test_verify_nccl.py",
    "test_site.py",
    "test_verify.py",
    "test_harness_lifecycle.py",
    "test_nic_configuration.py",
    "test_upgrade_drivers.py",
)


def pytest_collection_modifyitems(items):
    def rank(item):
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each file's tests keep their order


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    TIMINGS.test_started(item.location[0])
    start = time.monotonic()
    yield
    TIMINGS.test_done(item.location[0], time.monotonic() - start)


def pytest_sessionfinish(session):
    output = getattr(session.config, "workeroutput", None)
    if output is not None:  # a pytest-xdist worker: the controller prints
        output["timings"] = TIMINGS.dumps()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    text = getattr(node, "workeroutput", {}).get("timings")
    if text:
        TIMINGS.merge(text)


def pytest_terminal_summary(terminalreporter):
    if TIMINGS.files and not hasattr(terminalreporter.config, "workeroutput"):
        terminalreporter.section("time per test file (tests/integration/timings.py)")
        for line in TIMINGS.table():
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory) -> ControlPlane:
    state_dir = os.environ.get("GPUDIRECT_RDMA_STATE_DIR")
    first_worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0") == "gw0"
    if state_dir and first_worker:
        plane = ControlPlane(Path(state_dir))
        if not plane.running():
            pytest.fail(f"GPUDIRECT_RDMA_STATE_DIR={state_dir} names no running control plane")
        yield plane
        return
    with started(tmp_path_factory.mktemp("envtest")) as plane:
        # Whatever this worker runs talks to its own plane, a playbook given no kubeconfig too.
        os.environ["K8S_AUTH_KUBECONFIG"] = str(plane.kubeconfig)
        yield plane


@pytest.fixture(scope="session")
def harness(control_plane) -> client.ApiClient:
    """An API client with the harness identity, for test set-up and reading results."""
    return api_client(control_plane.harness_kubeconfig)


@pytest.fixture(scope="session")
def custom(harness) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(harness)


@pytest.fixture(scope="session")
def core(harness) -> client.CoreV1Api:
    return client.CoreV1Api(harness)


@pytest.fixture
def namespace(core):
    """A fresh namespace for one test, deleted with what the test left in it: the plane serves
    the worker's later test files, whose simulator would otherwise go on reconciling those
    Subscriptions and CSVs every tick, and whose tests list the cluster's objects."""
    name = f"test-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    try:
        core.delete_namespace(name)
    except ApiException as error:
        if error.status not in (404, 409):  # the test deleted it already (gone, or going)
            raise


@pytest.fixture
def knobs(harness):
    """Set simulator knobs for one test; the defaults come back afterwards."""

    def set_knobs(values: dict) -> None:
        write_knobs(harness, values)
        time.sleep(0.5)  # the simulator reads knobs once per tick

    yield set_knobs
    write_knobs(harness, DEFAULT_KNOBS)


@pytest.fixture
def audit(control_plane) -> AuditLog:
    return AuditLog(control_plane.audit_log).mark()


@pytest.fixture(scope="session")
def run_playbook(control_plane):
    """Run ansible-playbook as a user would, with the admin kubeconfig."""

    def run(
        playbook: Path, *args: str, check: bool = True, kubeconfig: Path | None = None
    ) -> subprocess.CompletedProcess:
        with TIMINGS.playbook():
            result = subprocess.run(
                playbook_command(playbook, *args),
                cwd=REPO_ROOT,
                env=playbook_env(kubeconfig or control_plane.kubeconfig),
                capture_output=True,
                text=True,
                check=False,
            )
        if check and result.returncode != 0:
            pytest.fail(
                f"ansible-playbook {playbook.name} failed:\n{result.stdout}\n{result.stderr}"
            )
        return result

    return run


UNINSTALL = REPO_ROOT / "playbooks" / "uninstall.yml"


@pytest.fixture(scope="module", autouse=True)
def no_nic_configuration_left(request):
    """After a test file that configured NICs, uninstall: the next file's fresh fake nodes would
    otherwise meet the NIC configuration templates, and the simulated NIC Configuration Operator
    would put them under maintenance (cordoned) while that file's tests run."""
    uses_the_plane = any(
        "control_plane" in item.fixturenames
        for item in request.session.items
        if item.module is request.module
    )
    if not uses_the_plane:
        yield
        return
    custom = request.getfixturevalue("custom")
    run_playbook = request.getfixturevalue("run_playbook")
    yield
    try:
        left = custom.list_cluster_custom_object(
            "configuration.net.nvidia.com", "v1alpha1", "nicconfigurationtemplates"
        )["items"]
    except ApiException as error:
        if error.status != 404:  # a plane without the NIC Configuration Operator's CRDs
            raise
        left = []
    if left:
        run_playbook(UNINSTALL, "-e", "uninstall_timeout=90")


@pytest.fixture
def history():
    """start(): a new History, stopped at the end of the test."""
    recorders = []

    def start() -> History:
        recorders.append(History())
        return recorders[-1]

    yield start
    for recorder in recorders:
        recorder.stop()
