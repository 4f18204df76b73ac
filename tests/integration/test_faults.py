"""Faults on a control plane of this module's own: the API server killed in the middle of
site.yml (the run fails naming what it was doing and where; once the API server is back a re-run
converges with nothing lost or duplicated), two site.yml runs at once (the same objects as one
run), an operator whose status flaps between ready and not ready (the play neither hangs nor
passes on a ready moment when the gate asks for a stable state), a gate never met (a progress line
every interval) and a frozen API server (the task ends at the request timeout)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.dynamic import DynamicClient

from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import managed_kinds
from tests.harness.audit import AuditLog
from tests.harness.controlplane import ADMIN_USER, REPO_ROOT, api_client, started
from tests.integration.helpers import playbook_command, playbook_env, wait_for
from tests.integration.test_site import SIMULATED, nodes_for, recap
from tests.simulator.core import DEFAULT_KNOBS, write_knobs

INVENTORY = "shared-device-roce"
PLAYBOOKS = REPO_ROOT / "playbooks"
MANAGED = "app.kubernetes.io/managed-by=gpudirect.rdma"


@pytest.fixture(scope="module")
def plane(tmp_path_factory):
    """A control plane of this module's own: its API server is killed and restarted."""
    with started(tmp_path_factory.mktemp("faults")) as plane:
        nodes_for(api_client(plane.harness_kubeconfig), INVENTORY)
        yield plane


@pytest.fixture(scope="module")
def one_run() -> dict:
    """The objects as one converged site.yml left them (shape()): the first test that has them
    keeps them here, so the next need not run site.yml again only for that."""
    return {}


def fresh_client(plane) -> client.ApiClient:
    """A new API client (its connections do not outlive an API server restart)."""
    return api_client(plane.harness_kubeconfig)


def ansible_playbook(
    plane, playbook: Path, *args: str, output: Path | None = None, env: dict | None = None
):
    """Start ansible-playbook as a user would (admin kubeconfig); returns the Popen, its
    output going to `output`."""
    stream = output.open("w") if output else subprocess.PIPE
    return subprocess.Popen(
        playbook_command(playbook, *args),
        cwd=REPO_ROOT,
        env=playbook_env(plane.kubeconfig, **(env or {})),
        stdout=stream,
        stderr=subprocess.STDOUT,
        text=True,
    )


def site_args(*extra: str) -> list[str]:
    return ["-i", str(REPO_ROOT / "inventories" / INVENTORY), "-e", f"@{SIMULATED}", *extra]


def run(
    plane, playbook: Path, *args: str, timeout: float = 300, env: dict | None = None
) -> tuple[int, str]:
    process = ansible_playbook(plane, playbook, *args, env=env)
    out, _err = process.communicate(timeout=timeout)
    RUNS.append(out)
    return process.returncode, out


RUNS: list[str] = []


@pytest.fixture(autouse=True)
def keep_outputs(tmp_path):
    """Every run's full output beside the test, for a failure's post-mortem."""
    RUNS.clear()
    yield
    for index, out in enumerate(RUNS):
        (tmp_path / f"run-{index}.log").write_text(out)


def converge(plane) -> str:
    code, out = run(plane, PLAYBOOKS / "site.yml", *site_args())
    assert code == 0, out[-4000:]
    return out


def clear(output: str) -> str:
    return " ".join(output.split())


def assert_no_traceback(output: str) -> None:
    for crash in ("Traceback (most recent call last)", "MODULE FAILURE", "object at 0x"):
        assert crash not in output, output[-4000:]


def managed_objects(plane) -> dict[tuple, dict]:
    """Every object carrying the collection's label, by (apiVersion, kind, namespace, name)."""
    dynamic = DynamicClient(fresh_client(plane))
    found = {}
    for api_version, kind in managed_kinds():
        resource = dynamic.resources.get(api_version=api_version, kind=kind)
        for item in resource.get(label_selector=MANAGED).to_dict()["items"]:
            metadata = item["metadata"]
            found[(api_version, kind, metadata.get("namespace"), metadata["name"])] = item
    return found


def shape(obj: dict) -> dict:
    """What must be the same after one run and after two at once: the labels, annotations and
    content the collection sets, and who manages the object (status writers left out)."""
    metadata = obj["metadata"]
    managers = sorted(
        {
            (entry["manager"], entry["operation"])
            for entry in metadata.get("managedFields") or []
            if entry.get("subresource") != "status"
        }
    )
    content = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
    return {
        "labels": metadata.get("labels"),
        "annotations": metadata.get("annotations"),
        "content": content,
        "managers": managers,
    }


def rendered_identities(plane, tmp_path: Path) -> set[tuple]:
    """The objects render.yml writes for the inventory."""
    dest = tmp_path / "rendered"
    code, out = run(
        plane, PLAYBOOKS / "render.yml", *site_args("-e", f"gpudirect_rdma_render_dir={dest}")
    )
    assert code == 0, out[-3000:]
    identities = set()
    for path in dest.rglob("*.yaml"):
        for document in yaml.safe_load_all(path.read_text()):
            if document and document.get("kind") != "Kustomization":
                metadata = document["metadata"]
                identities.add(
                    (
                        document["apiVersion"],
                        document["kind"],
                        metadata.get("namespace"),
                        metadata["name"],
                    )
                )
    return identities


def olm_objects(plane, kind: str) -> list[str]:
    custom = client.CustomObjectsApi(fresh_client(plane))
    version = "v1" if kind == "operatorgroups" else "v1alpha1"
    items = custom.list_cluster_custom_object("operators.coreos.com", version, kind)["items"]
    return sorted(f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in items)


def test_api_server_killed_mid_run_fails_clearly_and_a_rerun_converges(plane, one_run, tmp_path):
    core = client.CoreV1Api(fresh_client(plane))
    output = tmp_path / "killed.log"
    process = ansible_playbook(plane, PLAYBOOKS / "site.yml", *site_args(), output=output)
    try:
        # The first objects exist: the run is writing. Now the API server dies.
        wait_for(
            lambda: core.list_namespace(label_selector=MANAGED).items,
            timeout=120,
            what="the first Namespace of the run",
        )
        plane.kill("kube-apiserver")
        process.wait(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
    text = output.read_text()
    assert process.returncode != 0, text[-4000:]
    assert_no_traceback(text)
    assert f"the API server {plane.server} did not answer while " in clear(text), text[-4000:]
    assert "run the playbook again" in clear(text)

    plane.restart("kube-apiserver")
    converge(plane)

    # Nothing lost, nothing extra: exactly the objects render.yml writes for the inventory.
    assert set(managed_objects(plane)) == rendered_identities(plane, tmp_path)
    # Nothing duplicated: one OperatorGroup and one Subscription per operator namespace.
    for kind in ("operatorgroups", "subscriptions"):
        found = olm_objects(plane, kind)
        namespaces = [name.split("/")[0] for name in found]
        assert len(namespaces) == len(set(namespaces)) == 4, (kind, found)

    audit = AuditLog(plane.audit_log).mark()
    third = converge(plane)
    assert recap(third)["changed"] == 0
    assert audit.writes(ADMIN_USER) == [], [str(w) for w in audit.writes(ADMIN_USER)]
    one_run.update({key: shape(obj) for key, obj in managed_objects(plane).items()})


def test_two_runs_at_once_end_in_the_objects_of_one_run(plane, one_run, tmp_path):
    if not one_run:  # run alone
        converge(plane)
        one_run.update({key: shape(obj) for key, obj in managed_objects(plane).items()})
    code, out = run(
        plane,
        PLAYBOOKS / "uninstall.yml",
        *site_args(
            "-e",
            "uninstall_namespaces=true",
            "-e",
            "uninstall_machine_configs=true",
        ),
    )
    assert code == 0, out[-4000:]
    assert managed_objects(plane) == {}

    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    runs = [
        ansible_playbook(plane, PLAYBOOKS / "site.yml", *site_args(), output=log) for log in logs
    ]
    codes = [process.wait(timeout=300) for process in runs]
    texts = [log.read_text() for log in logs]
    assert 0 in codes, texts[0][-3000:] + texts[1][-3000:]
    for code, text in ((codes[0], texts[0]), (codes[1], texts[1])):
        assert_no_traceback(text)
        if code != 0:  # allowed, but it must say why
            assert "fatal: [localhost]" in text and '"msg":' in text, text[-4000:]

    both = {key: shape(obj) for key, obj in managed_objects(plane).items()}
    assert sorted(both) == sorted(one_run)
    for key, expected in one_run.items():
        assert both[key] == expected, key
    audit = AuditLog(plane.audit_log).mark()
    further = converge(plane)
    assert recap(further)["changed"] == 0
    assert audit.writes(ADMIN_USER) == [], [str(w) for w in audit.writes(ADMIN_USER)]


# Each task's duration at the end of the output (ansible.posix, which the ansible package carries).
PROFILED = {"ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks"}
WAIT_TASK = re.compile(
    r"NVIDIA Network Operator - operator through OLM, its NicClusterPolicy and NicNodePolicies, "
    r"ready -+ ([0-9.]+)s"
)


def wait_task_seconds(output: str) -> float:
    """How long the role's one task took (its install finds the operator installed, its
    operand unchanged: the rest is the wait), as profile_tasks measured it."""
    found = WAIT_TASK.findall(output)
    assert found, output[-3000:]
    return float(found[-1])


@contextlib.contextmanager
def network_operator_knobs(plane, **values):
    """The simulated Network Operator's knobs set for a block; the defaults back after it."""
    harness = fresh_client(plane)
    write_knobs(harness, {"network_operator": values})
    time.sleep(0.5)  # the simulator reads knobs once per tick
    try:
        yield
    finally:
        write_knobs(harness, DEFAULT_KNOBS)


@pytest.fixture
def flapping(plane):
    with network_operator_knobs(plane, flap_seconds=2):
        yield


def test_a_flapping_operator_neither_hangs_the_play_nor_passes_a_stability_gate(
    plane, flapping, tmp_path
):
    playbook = network_operator_role(tmp_path)

    # Asked for 5 stable seconds of a state that holds for 2: it ends at the timeout, naming
    # the gate and the state it last saw.
    code, out = run(
        plane,
        playbook,
        *site_args(
            "-e",
            "network_operator_ready_timeout=10",
            "-e",
            "network_operator_ready_stable_seconds=5",
        ),
        env=PROFILED,
    )
    text = clear(out)
    assert code != 0, out[-3000:]
    assert_no_traceback(out)
    assert "gate 'NicClusterPolicy ready' not stable after 1" in text, out[-3000:]
    assert "in every read for 5s" in text
    assert (
        "last seen not met: NicClusterPolicy nic-cluster-policy status.state is 'notReady'" in text
    )
    # The gate's own clock stops at the timeout; the task adds the module's start (Python, the
    # kubernetes client, API discovery: seconds on a busy machine).
    waited = int(re.search(r"not stable after (\d+)s", text)[1])
    assert 10 <= waited <= 12, text
    took = wait_task_seconds(out)
    assert 10 <= took < 10 + 10, f"the wait task took {took:.0f}s on a 10s gate"

    # Without a stability requirement the same role does not hang either: it moves on at a
    # ready read.
    code, out = run(
        plane, playbook, *site_args("-e", "network_operator_ready_timeout=30"), env=PROFILED
    )
    assert code == 0, out[-3000:]
    assert wait_task_seconds(out) < 30


@pytest.fixture
def never_ready(plane):
    with network_operator_knobs(plane, never_ready=True):
        yield


PROGRESS = re.compile(
    r"\[localhost\] waiting (\d+)s of (\d+)s for gate 'NicClusterPolicy ready': "
    r"NicClusterPolicy nic-cluster-policy status.state is 'notReady'"
)


def network_operator_role(tmp_path: Path) -> Path:
    """A playbook of the network_operator role alone."""
    playbook = tmp_path / "network.yml"
    playbook.write_text("- hosts: localhost\n  roles:\n    - gpudirect.rdma.network_operator\n")
    return playbook


def test_a_long_gate_says_every_interval_how_long_and_what_it_sees(plane, never_ready, tmp_path):
    code, out = run(
        plane,
        network_operator_role(tmp_path),
        *site_args(
            "-e",
            "network_operator_ready_timeout=7",
            "-e",
            "gpudirect_rdma_progress_interval=2",
        ),
    )
    assert code != 0, out[-3000:]
    assert_no_traceback(out)
    lines = [(int(waited), int(of)) for waited, of in PROGRESS.findall(out)]
    # A line every 2 s of the 7 s (the polls fall about a second apart), in order, then the end.
    assert len(lines) >= 2 and all(of == 7 for _waited, of in lines), out[-3000:]
    assert [waited for waited, _of in lines] == sorted({waited for waited, _of in lines})
    assert lines[0][0] in (2, 3) and lines[-1][0] <= 7
    assert "gate 'NicClusterPolicy ready' not reached after 7s" in clear(out)

    # Set to 0, the same wait prints no line.
    code, out = run(
        plane,
        network_operator_role(tmp_path),
        *site_args(
            "-e",
            "network_operator_ready_timeout=4",
            "-e",
            "gpudirect_rdma_progress_interval=0",
        ),
    )
    assert code != 0 and "not reached after 4s" in clear(out), out[-3000:]
    assert PROGRESS.findall(out) == []


def test_a_frozen_api_server_ends_the_task_at_the_request_timeout(plane, never_ready, tmp_path):
    output = tmp_path / "frozen.log"
    process = ansible_playbook(
        plane,
        network_operator_role(tmp_path),
        *site_args(
            "-e",
            "network_operator_ready_timeout=300",
            "-e",
            "gpudirect_rdma_progress_interval=1",
            "-e",
            "gpudirect_rdma_request_timeout=5",
        ),
        output=output,
    )
    try:
        # The run waits on the gate (its first progress line is out); now the API server hangs.
        wait_for(
            lambda: PROGRESS.search(output.read_text()),
            timeout=180,
            what="the gate's first progress line",
        )
        with plane.frozen("kube-apiserver"):
            froze = time.monotonic()
            process.wait(timeout=120)
            ended = time.monotonic() - froze
    finally:
        if process.poll() is None:
            process.kill()
    text = output.read_text()
    assert process.returncode != 0, text[-4000:]
    assert_no_traceback(text)
    assert f"the API server {plane.server} did not answer while " in clear(text), text[-4000:]
    assert "no answer within 5 s" in clear(text), text[-4000:]
    # One request's 5 s, the poll's pause and the play's end; not the gate's 300 s.
    assert ended < 30, f"the run ended {ended:.0f}s after the API server froze"
    RUNS.append(text)
