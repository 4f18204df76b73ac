"""The table of malformed inventories (tests/bad_inputs.py) against the local control plane: for
a case of each kind (tests/bad_inputs.py, END_TO_END: each playbook, each way a bad value arrives,
each sort of name), the playbook fails at its first task, the validation, with a message naming
the variable, the bad value and what is allowed, and the API server's audit log shows no write
request by the run's user. Every case of the table goes through its playbooks' first task in
tests/unit/test_bad_inputs.py, as these runs do, in one process.

One ansible-playbook per case and playbook, several at a time: each run has a user of its own (a
client certificate the test issues), so the audit log tells the runs apart. Two controls keep the
"no writes" assertion honest: a run of a small playbook that does write, under its own user,
shows up in the same audit window; and a Pod labelled as the collection's, which uninstall.yml
removes when its settings pass, is still there afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client

from tests.bad_inputs import END_TO_END, FIRST_TASK, PLAYBOOKS, write_inventory
from tests.harness.audit import AuditLog
from tests.harness.controlplane import MASTERS, REPO_ROOT
from tests.integration.helpers import playbook_command, playbook_env

CONTROL_PLAYBOOK = REPO_ROOT / "tests" / "integration" / "playbooks" / "configmap.yml"
# ansible-playbook is mostly start-up; two cores run four of them at a time without waiting.
WORKERS = int(os.environ.get("GPUDIRECT_RDMA_BAD_INPUT_WORKERS", "4"))
RUNS = END_TO_END


@dataclass
class Run:
    user: str
    returncode: int
    output: dict | None
    stdout: str
    stderr: str
    seconds: float

    def failed_task(self) -> tuple[str, str, str]:
        """(task name, action, message) of the task that failed."""
        assert self.output is not None, f"no JSON output:\n{self.stdout[-2000:]}\n{self.stderr}"
        for play in self.output["plays"]:
            for task in play["tasks"]:
                result = task["hosts"].get("localhost", {})
                if result.get("failed"):
                    return task["task"]["name"], result.get("action", ""), result.get("msg", "")
        raise AssertionError(f"no task failed: {json.dumps(self.output['stats'])}")


def ansible_playbook(
    user: str, playbook: Path, args: list[str], kubeconfig: Path, cwd: Path
) -> Run:
    started = time.monotonic()
    done = subprocess.run(
        playbook_command(playbook, *args),
        cwd=cwd,
        env=playbook_env(kubeconfig, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json"),
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        output = json.loads(done.stdout)
    except json.JSONDecodeError:
        output = None
    return Run(user, done.returncode, output, done.stdout, done.stderr, time.monotonic() - started)


@pytest.fixture(scope="module")
def probe(harness):
    """A Pod labelled as the collection's: uninstall.yml would delete it."""
    core = client.CoreV1Api(harness)
    namespace = f"bad-inputs-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": namespace}})
    pod = {
        "metadata": {
            "name": "probe",
            "labels": {
                "app.kubernetes.io/managed-by": "gpudirect.rdma",
                "app.kubernetes.io/component": "verify",
            },
        },
        "spec": {"containers": [{"name": "probe", "image": "registry.invalid/probe:1"}]},
    }
    core.create_namespaced_pod(namespace, pod)
    yield core, namespace
    core.delete_namespace(namespace)


@pytest.fixture(scope="module")
def runs(request, control_plane, probe, tmp_path_factory) -> dict:
    """Run every (case, playbook) of the table that this session selected (all, unless -k
    chose some), WORKERS at a time, each as a user of its own; also the control run. Returns the
    runs by (case id, playbook), the audit log from before the first run, and how long it all
    took."""
    selected = set()
    for item in request.session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if item.module is request.module and "case" in params:
            selected.add((params["case"].id, params["playbook"]))
    base = tmp_path_factory.mktemp("bad-inputs")
    jobs = []
    for index, (case, playbook) in enumerate(RUNS):
        if (case.id, playbook) not in selected:
            continue
        folder = base / f"{case.id}-{playbook}"
        user = f"gpudirect-rdma-bad-input-{index}"
        kubeconfig = folder / "kubeconfig"
        inventory = write_inventory(folder / "inventory", case)
        control_plane.write_kubeconfig(kubeconfig, user, [MASTERS])
        args = ["-i", str(inventory)]
        if case.extra:
            args += ["-e", json.dumps(case.extra_variables())]
        if playbook == "verify":
            args += ["-e", f"verify_report_dir={folder}"]
        jobs.append(((case.id, playbook), user, PLAYBOOKS[playbook], args, kubeconfig, folder))
    control_kubeconfig = base / "control-kubeconfig"
    control_plane.write_kubeconfig(
        control_kubeconfig, "gpudirect-rdma-bad-input-control", [MASTERS]
    )
    jobs.append(
        (
            ("control", "configmap"),
            "gpudirect-rdma-bad-input-control",
            CONTROL_PLAYBOOK,
            ["-e", f"audit_namespace={probe[1]}"],
            control_kubeconfig,
            base,
        )
    )

    def run(job):
        key, *arguments = job
        return key, ansible_playbook(*arguments)

    audit = AuditLog(control_plane.audit_log).mark()
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        results = dict(pool.map(run, jobs))
    return {"runs": results, "audit": audit, "seconds": time.monotonic() - started}


def test_the_controls_see_writes_and_the_probe_survives(runs, probe):
    control = runs["runs"][("control", "configmap")]
    assert control.returncode == 0, control.stdout[-2000:] + control.stderr
    writes = runs["audit"].writes(control.user)
    assert "configmaps" in [w.resource for w in writes], [str(w) for w in writes]
    core, namespace = probe
    assert core.read_namespaced_pod("probe", namespace).metadata.deletion_timestamp is None
    slowest = max(r.seconds for r in runs["runs"].values())
    print(f"{len(runs['runs'])} runs in {runs['seconds']:.1f}s, slowest {slowest:.1f}s")


@pytest.mark.parametrize(
    ("case", "playbook"), RUNS, ids=[f"{case.id}-{playbook}" for case, playbook in RUNS]
)
def test_a_bad_inventory_fails_before_any_write(runs, case, playbook):
    run = runs["runs"][(case.id, playbook)]
    assert run.returncode != 0, run.stdout[-2000:]
    task, action, message = run.failed_task()
    assert (task, action) == FIRST_TASK[playbook], message
    for fragment in case.fragments():
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert runs["audit"].writes(run.user) == [], [str(w) for w in runs["audit"].writes(run.user)]
