"""The NCCL test's objects (pure builders), its script run here with stand-ins for sshd, ssh and
mpirun, and the judgement of its launcher's log on the run-shaped fixtures."""

from __future__ import annotations

import base64
import os
import stat
import subprocess
from pathlib import Path

import junitparser
import pytest
from ansible.errors import AnsibleFilterError, AnsibleLookupError

from ansible_collections.gpudirect.rdma.plugins.filter.verify_nccl_objects import (
    verify_nccl_objects,
)
from ansible_collections.gpudirect.rdma.plugins.filter.verify_nccl_report import (
    verify_nccl_report,
)
from ansible_collections.gpudirect.rdma.plugins.lookup.ssh_key import LookupModule
from ansible_collections.gpudirect.rdma.plugins.plugin_utils import floors, nccl_test, report_files
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.unit.inventories import inputs

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nccl"
SCRIPT = Path(nccl_test.__file__).with_name("nccl_test.sh")
KEY = LookupModule().run([])[0]
NODES = ("worker-0", "worker-1", "worker-2")


def objects(inventory="shared-device-roce", nodes=NODES, group=None, **settings):
    plan = build_plan(inputs(inventory))
    return verify_nccl_objects(
        plan, nodes=list(nodes), gpus=dict.fromkeys(nodes, 8), ssh_key=KEY, group=group, **settings
    )


def env_of(pod: dict) -> dict:
    return {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}


def test_the_objects_are_a_key_a_headless_service_a_worker_per_node_and_a_launcher():
    secret, service, *workers, launcher = objects()
    assert [o["kind"] for o in (secret, service, *workers, launcher)] == [
        "Secret",
        "Service",
        "Pod",
        "Pod",
        "Pod",
        "Pod",
    ]
    assert secret["metadata"]["name"] == "gpudirect-rdma-verify-nccl-ssh"
    assert secret["type"] == "Opaque"
    assert base64.b64decode(secret["data"]["ssh-privatekey"]).decode() == KEY
    public = base64.b64decode(secret["data"]["ssh-publickey"]).decode()
    assert public.startswith("ssh-ed25519 ") and public == nccl_test.public_key(KEY)
    assert service["spec"]["clusterIP"] == "None"
    for worker, node in zip(workers, NODES, strict=True):
        spec = worker["spec"]
        assert (spec["nodeName"], spec["subdomain"]) == (node, service["metadata"]["name"])
        labels = worker["metadata"]["labels"]
        assert all(labels[k] == v for k, v in service["spec"]["selector"].items())
        container = spec["containers"][0]
        assert container["resources"]["limits"] == {
            "nvidia.com/gpu": "8",
            "rdma/rdma_shared_device_eth": "1",
        }
        assert container["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
        assert worker["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "rdmashared-net"
    assert not set(service["spec"]["selector"].items()) <= set(
        launcher["metadata"]["labels"].items()
    )
    env = env_of(launcher)
    assert env["WORKERS"] == ",".join(
        f"gpudirect-rdma-verify-nccl-{i}.gpudirect-rdma-verify-nccl:8" for i in range(3)
    )
    assert (env["NCCL_DEBUG"], env["MIN_BYTES"], env["MAX_BYTES"]) == ("INFO", "1M", "8G")
    container = launcher["spec"]["containers"][0]
    assert container["envFrom"] == [{"configMapRef": {"name": "gpudirect-rdma-nccl"}}]
    assert "resources" not in container and launcher["spec"]["nodeName"] == "worker-0"


def test_with_node_groups_the_names_carry_the_group():
    plan = build_plan(inputs("node-groups"))
    group = plan["groups"][1]["name"]
    _secret, service, *workers, launcher = objects("node-groups", group=group)
    assert service["metadata"]["name"] == f"gpudirect-rdma-verify-{group}-nccl"
    assert launcher["metadata"]["labels"]["gpudirect.rdma/node-group"] == group
    assert launcher["spec"]["containers"][0]["envFrom"] == [
        {"configMapRef": {"name": f"gpudirect-rdma-nccl-{group}"}}
    ]
    assert all(w["metadata"]["labels"]["gpudirect.rdma/node-group"] == group for w in workers)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"nodes": ["worker-0"]}, "nodes: expected two or more different node names"),
        ({"nodes": ["worker-0", "worker-0"]}, "nodes: expected two or more different node names"),
        ({"min_bytes": "8G", "max_bytes": "1M"}, "min_bytes: expected at most max_bytes (1M)"),
        ({"max_bytes": "1.5G"}, "max_bytes: expected a size in bytes"),
    ],
)
def test_bad_arguments_are_refused_naming_them(given, message):
    with pytest.raises(AnsibleFilterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        objects(**given)


def test_a_key_that_is_not_an_openssh_key_is_refused():
    plan = build_plan(inputs("shared-device-roce"))
    with pytest.raises(AnsibleFilterError, match="ssh_key: expected an unencrypted OpenSSH"):
        verify_nccl_objects(plan, nodes=list(NODES[:2]), gpus=dict.fromkeys(NODES, 8), ssh_key="x")


def test_the_lookup_makes_a_new_key_each_time_and_takes_no_terms():
    assert LookupModule().run([])[0] != KEY
    with pytest.raises(AnsibleLookupError, match="expected no terms"):
        LookupModule().run(["x"])


# -- the script ----------------------------------------------------------------------------
def executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/bash\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def script(tmp_path: Path, pod: dict, **extra) -> subprocess.CompletedProcess:
    keys = tmp_path / "keys"
    keys.mkdir(exist_ok=True)
    secret = objects()[0]
    for name, value in secret["data"].items():
        (keys / name).write_text(base64.b64decode(value).decode())
    env = {
        **env_of(pod),
        "KEYS": str(keys),
        "HOME": str(tmp_path / "home"),
        "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin",
        **extra,
    }
    return subprocess.run(
        ["/bin/bash", "-c", pod["spec"]["containers"][0]["command"][2]],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=30,
    )


def test_a_worker_runs_the_ssh_server_with_the_secrets_public_key_only(tmp_path):
    worker = objects()[2]
    calls = tmp_path / "sshd-args"
    executable(tmp_path / "bin" / "sshd", f'echo "$@" > {calls}\n')
    result = script(tmp_path, worker, SSHD=str(tmp_path / "bin" / "sshd"))
    assert result.returncode == 0, result.stderr
    authorized = (tmp_path / "home" / ".ssh" / "authorized_keys").read_text()
    assert authorized == nccl_test.public_key(KEY)
    assert oct((tmp_path / "home" / ".ssh" / "authorized_keys").stat().st_mode)[-3:] == "600"
    args = calls.read_text().split()
    assert args[:4] == ["-D", "-e", "-p", "2222"]
    assert "PasswordAuthentication=no" in args
    assert f"AuthorizedKeysFile={tmp_path / 'home' / '.ssh' / 'authorized_keys'}" in args


def test_a_worker_without_an_ssh_server_says_what_the_image_needs(tmp_path):
    result = script(tmp_path, objects()[2], SSHD=str(tmp_path / "no-sshd"))
    assert result.returncode == 3
    assert "needs openssh-server, MPI and nccl-tests built with MPI=1" in result.stderr


def test_the_launcher_waits_for_every_worker_then_runs_one_rank_per_gpu(tmp_path):
    launcher = objects()[-1]
    log = tmp_path / "ssh-log"
    executable(tmp_path / "bin" / "ssh", f'echo "$@" >> {log}\n')
    executable(
        tmp_path / "bin" / "mpirun",
        'echo "mpirun $*"; for a in "$@"; do case "$a" in /*hostfile*|/tmp/*) ;; esac; done\n'
        'while [ $# -gt 0 ]; do [ "$1" = --hostfile ] && cat "$2"; shift; done\n',
    )
    result = script(tmp_path, launcher, NCCL_IB_HCA="=mlx5_0:1", NCCL_IB_GID_INDEX="3")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    logins = log.read_text().splitlines()
    assert [line.split()[2] for line in logins] == [
        f"gpudirect-rdma-verify-nccl-{i}.gpudirect-rdma-verify-nccl" for i in range(3)
    ]
    assert "nccl launcher: 24 ranks on 3 nodes" in out
    (command,) = [line for line in out.splitlines() if line.startswith("mpirun ")]
    assert " -np 24 " in command and " --bind-to none " in command
    assert f" --prefix {tmp_path} " in command, "where the image's mpirun is installed"
    for name in ("NCCL_DEBUG", "NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "PATH", "LD_LIBRARY_PATH"):
        assert f" -x {name} " in command
    assert command.endswith(
        "/opt/nccl-tests/build/all_reduce_perf -b 1M -e 8G -f 2 -g 1 -c 1 -n 20"
    )
    assert "gpudirect-rdma-verify-nccl-2.gpudirect-rdma-verify-nccl slots=8" in out
    assert out.rstrip().endswith("gpudirect-rdma-verify: nccl output end (exit 0)")


def test_a_launcher_that_cannot_log_in_stops_naming_the_worker(tmp_path):
    executable(
        tmp_path / "bin" / "ssh", 'echo "ssh: Could not resolve hostname $3" >&2; exit 255\n'
    )
    result = script(tmp_path, objects()[-1], WAIT_SECONDS="0")
    assert result.returncode == 4
    assert (
        "cannot log in to gpudirect-rdma-verify-nccl-0.gpudirect-rdma-verify-nccl on port 2222 "
        "after 0 s: ssh: Could not resolve hostname" in result.stdout
    )
    report = nccl_test.run_report(
        view(), list(NODES), result.stdout, floors.nccl_floor(100, 1, []), "roce"
    )
    assert report["passed"] is False and report["exit"] is None
    assert report["problems"][0].startswith("gpudirect-rdma-verify: nccl launcher: cannot log in")


# -- the judgement -------------------------------------------------------------------------
def view():
    plan = build_plan(inputs("shared-device-roce"))
    return {**plan, **plan["groups"][0]}


def launcher_log(fixture: str, code: int = 0) -> str:
    text = (FIXTURES / f"{fixture}.txt").read_text()
    return (
        "gpudirect-rdma-verify: nccl launcher: 16 ranks on 2 nodes (...)\n"
        f"gpudirect-rdma-verify: nccl output begin\n{text}"
        f"gpudirect-rdma-verify: nccl output end (exit {code})\n"
    )


def test_a_good_run_passes_and_the_report_adds_it():
    result = verify_nccl_report(
        {"passed": True, "table": ["pairs"]},
        plan=build_plan(inputs("shared-device-infiniband")),
        runs=[
            {
                "group": None,
                "nodes": ["gpu-a", "gpu-b"],
                "log": launcher_log("ib_gdrdma_2nodes_16ranks"),
            }
        ],
        min_busbw_gbps=100,
    )
    (run,) = result["nccl"]
    assert result["passed"] is True and run["passed"] is True, run["problems"]
    assert (run["ranks"], run["transport"], run["gpudirect"], run["exit"]) == (16, "IB", True, 0)
    assert result["table"][0] == "pairs" and result["nccl_table"][2].endswith("pass")
    assert result["nccl_table"][3] == (
        "  2 nodes floor 100 Gb/s: verify_min_busbw_gbps, against the average bus bandwidth"
    )


def test_without_verify_min_busbw_gbps_the_groups_port_rates_set_the_floor():
    """The bandwidth test's pairs read 400 Gb/s ports on the one rail: 280 Gb/s at 8 GiB."""
    pairs = [{"rail": 0, "server_port_gbps": 400.0, "client_port_gbps": 400.0}]
    result = verify_nccl_report(
        {"passed": True, "table": [], "pairs": pairs},
        plan=build_plan(inputs("shared-device-infiniband")),
        runs=[
            {
                "group": None,
                "nodes": ["gpu-a", "gpu-b"],
                "log": launcher_log("ib_gdrdma_2nodes_16ranks"),
            }
        ],
    )
    (run,) = result["nccl"]
    assert (run["floor_gbps"], run["floor_measure"]) == (280, "largest")
    assert run["floor"].startswith("70% of 1 rail(s) x 400 Gb/s")
    assert run["busbw_judged_gbps"] == 2988.4 and run["passed"] is True


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("socket_fallback_2nodes", "NCCL fell back to sockets"),
        ("ib_wrong_values", "wrong value(s) in the results"),
        ("failure_network_error", "the output holds no results table"),
    ],
)
def test_a_failed_run_fails_the_report_with_its_cause(fixture, expected):
    result = verify_nccl_report(
        {"passed": True, "table": []},
        plan=build_plan(inputs("shared-device-roce")),
        runs=[{"group": None, "nodes": ["gpu-a", "gpu-b"], "log": launcher_log(fixture, 1)}],
        min_busbw_gbps=0,
    )
    assert result["passed"] is False
    assert any(expected in problem for problem in result["nccl"][0]["problems"])


def test_the_junit_file_and_the_page_show_the_runs(tmp_path):
    report = verify_nccl_report(
        {"passed": True, "table": [], "pairs": [], "min_gbps": 100},
        plan=build_plan(inputs("shared-device-roce")),
        runs=[
            {"group": None, "nodes": ["gpu-a", "gpu-b"], "log": launcher_log(name)}
            for name in ("ib_gdrdma_2nodes_16ranks", "socket_fallback_2nodes")
        ],
        min_busbw_gbps=100,
    )
    (tmp_path / "report.xml").write_text(report_files.junit(report))
    suites = {s.name: s for s in junitparser.JUnitXml.fromfile(str(tmp_path / "report.xml"))}
    nccl = suites["gpudirect.rdma verify: NCCL all_reduce_perf"]
    assert (nccl.tests, nccl.failures) == (2, 1)
    page = report_files.html(report)
    assert page.count('<polyline class="busbw"') == 2
    assert "NCCL fell back to sockets" in page and "floor 100 Gb/s (average)" in page
    assert "<script" not in page and " src=" not in page


def test_the_settings_check_refuses_one_node_and_odd_sizes():
    from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.settings import (
        check_settings,
    )

    with pytest.raises(ValueError, match=r"verify_nccl_nodes: got 1; expected 0 \(every"):
        check_settings({"verify_nccl_nodes": 1})
    with pytest.raises(ValueError, match="verify_nccl_max_bytes: got '1.5G'; expected a size"):
        check_settings({"verify_nccl_max_bytes": "1.5G"})
    assert check_settings({"verify_nccl_nodes": 0})["verify_nccl_nodes"] == 0
    assert os.path.basename(check_settings({})["verify_nccl_test"]) == "all_reduce_perf"
