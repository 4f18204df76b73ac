"""Unit tests of the test harness itself: audit log parsing, the catalog, knobs and nodes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
import yaml

from tests.harness import controlplane
from tests.harness.audit import AuditLog
from tests.harness.controlplane import REPO_ROOT, crd_files, network_operator_crd_line
from tests.simulator.catalog import load_catalog
from tests.simulator.core import DEFAULT_KNOBS, merge
from tests.simulator.nodes import HARDWARE_ANNOTATION, Hardware, Nic, node_object
from tests.simulator.olm import _install_mode


def _event(
    verb, user="alice", stage="ResponseComplete", uri="/api/v1/namespaces/x", code=200, **ref
):
    return json.dumps(
        {
            "stage": stage,
            "verb": verb,
            "requestURI": uri,
            "user": {"username": user},
            "objectRef": ref,
            "responseStatus": {"code": code},
        }
    )


def test_audit_log_counts_writes_since_the_mark(tmp_path):
    path = tmp_path / "audit.log"
    path.write_text(_event("create", resource="namespaces", name="before") + "\n")
    log = AuditLog(path).mark()
    with path.open("a") as out:
        out.write(_event("get", resource="namespaces", name="a") + "\n")
        out.write(_event("create", stage="RequestReceived", resource="configmaps") + "\n")
        out.write(_event("create", resource="configmaps", name="c", namespace="x") + "\n")
        out.write(_event("patch", uri="/apis/x?dryRun=All", resource="configmaps") + "\n")
        out.write(_event("update", resource="pods", subresource="status", user="bob") + "\n")
        out.write(_event("delete", resource="pods", name="p", namespace="x") + "\n")
    assert len(log.requests()) == 5
    assert [(r.verb, r.resource) for r in log.writes()] == [
        ("create", "configmaps"),
        ("update", "pods/status"),
        ("delete", "pods"),
    ]
    assert [r.verb for r in log.writes("alice")] == ["create", "delete"]
    assert str(log.writes("alice")[0]) == "alice create x/configmaps/c -> 200"


def test_audit_log_without_a_file_has_no_requests(tmp_path):
    assert AuditLog(tmp_path / "absent.log").mark().requests() == []


def test_crd_files_take_one_release_line_of_the_network_operator():
    older = crd_files(network_operator="26.4")
    newest = crd_files()
    assert older, "the upstream CRDs are found in ../shared/crds"
    assert not [f for f in older if "alternatives" in f.parts]
    assert {f.parent.name for f in older} >= {
        "network-operator",
        "gpu-operator",
        "operator-framework-api",
    }
    # 26.7 replaces each Network Operator CRD (and the NIC Configuration Operator's it ships)
    # by name; nothing else comes from alternatives/, and no CRD is there twice.
    replaced = {f.name for f in newest if "alternatives" in f.parts}
    assert {f.parent.name for f in newest if "alternatives" in f.parts} == {
        "network-operator-v26.7"
    }
    assert "nicclusterpolicies.mellanox.com.yaml" in replaced
    assert len({f.name for f in newest}) == len(newest)
    assert {f.name for f in newest} == {f.name for f in older} | replaced


def test_the_etcd_template_key_follows_the_binaries_and_every_crd_file(tmp_path):
    binaries = tmp_path / "bin"
    binaries.mkdir()
    for name in ("etcd", "kube-apiserver"):
        (binaries / name).write_text(name)
    found = controlplane.Binaries(directory=binaries, controller_manager=binaries / "kcm")
    crds = [tmp_path / "a.yaml", tmp_path / "b.yaml"]
    for path in crds:
        path.write_text(f"name: {path.stem}\n")
    key = controlplane.etcd_template_key(found, crds)
    assert key == controlplane.etcd_template_key(found, crds)
    assert key != controlplane.etcd_template_key(found, crds[:1]), "a CRD fewer"
    crds[1].write_text("name: b\nchanged: true\n")
    changed = controlplane.etcd_template_key(found, crds)
    assert changed != key, "a CRD changed"
    (binaries / "kube-apiserver").write_text("another build")
    assert controlplane.etcd_template_key(found, crds) not in (key, changed), "another binary"


def test_pruning_keeps_the_template_in_use_and_the_newest_others(tmp_path):
    kept = controlplane.ETCD_TEMPLATES_KEPT
    names = [f"t{i}" for i in range(kept + 3)]
    for age, name in enumerate(names):  # t0 the newest
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (1e9 - age, 1e9 - age))
    (tmp_path / "t0.lock").write_text("")
    half_made_old, half_made_new = tmp_path / ".t9.123", tmp_path / ".t8.456"
    for folder in (half_made_old, half_made_new):
        folder.mkdir()
    os.utime(half_made_old, (0, 0))
    in_use = tmp_path / names[-1]  # the oldest, but the one this start uses
    controlplane._prune_etcd_templates(tmp_path, in_use)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [*names[:kept], in_use.name, "t0.lock", half_made_new.name]
    )


@pytest.mark.parametrize(
    ("release", "line"),
    [("26.7.1", "26.7"), ("26.7.0-1", "26.7"), ("26.4.1", "26.4"), ("25.10.0", "26.4")],
)
def test_each_release_takes_the_crds_of_its_line(release, line):
    assert network_operator_crd_line(release) == line


@pytest.mark.parametrize(
    ("package", "channel", "starting", "expected"),
    [
        ("gpu-operator-certified", "stable", None, "gpu-operator-certified.v26.7.2"),
        ("gpu-operator-certified", "v26.3", None, "gpu-operator-certified.v26.3.3"),
        ("gpu-operator-certified", None, None, "gpu-operator-certified.v26.7.2"),
        (
            "gpu-operator-certified",
            "v25.10",
            "gpu-operator-certified.v25.10.1",
            "gpu-operator-certified.v25.10.1",
        ),
        ("gpu-operator-certified", "v26.3", "gpu-operator-certified.v26.7.0", None),
        ("nvidia-network-operator", "stable", None, "nvidia-network-operator.v26.7.1"),
        ("nvidia-network-operator", "v26.4", None, "nvidia-network-operator.v26.4.1"),
        (
            "nvidia-network-operator",
            "v26.7",
            "nvidia-network-operator.v26.7.0-1",
            "nvidia-network-operator.v26.7.0-1",
        ),
        ("nvidia-network-operator", "v26.1", None, "nvidia-network-operator.v26.1.2"),
        ("sriov-network-operator", "stable", None, "sriov-network-operator.v5.0.0"),
        ("sriov-network-operator", "alpha", None, None),
        ("nfd", "stable", None, "nfd.v5.0.0"),
        ("nfd", "v9", None, None),
        ("not-a-package", "stable", None, None),
    ],
)
def test_catalog_resolves_like_olm(package, channel, starting, expected):
    bundle = load_catalog().resolve(package, channel, starting)
    assert (bundle.csv_name if bundle else None) == expected


def test_catalog_holds_the_real_install_modes():
    bundle = load_catalog().resolve("nvidia-network-operator", "stable", None)
    assert bundle.install_modes == {
        "OwnNamespace": True,
        "SingleNamespace": True,
        "MultiNamespace": False,
        "AllNamespaces": False,
    }


@pytest.mark.parametrize(
    ("targets", "mode"),
    [
        (None, "AllNamespaces"),
        ([], "AllNamespaces"),
        (["ns"], "OwnNamespace"),
        (["other"], "SingleNamespace"),
        (["a", "b"], "MultiNamespace"),
    ],
)
def test_install_mode_of_an_operator_group(targets, mode):
    spec = {} if targets is None else {"targetNamespaces": targets}
    assert _install_mode({"spec": spec}, "ns") == mode


def test_knobs_merge_keeps_defaults_and_does_not_mutate():
    override = {"olm": {"failing_packages": ["nfd"]}}
    merged = merge(DEFAULT_KNOBS, override)
    assert merged["olm"]["failing_packages"] == ["nfd"]
    assert merged["olm"]["unhealthy_catalogs"] == []
    assert merged["delay_seconds"] == 0
    assert DEFAULT_KNOBS["olm"]["failing_packages"] == []


def test_node_object_describes_its_hardware():
    node = node_object(
        "w-3", 3, Hardware(gpus=4, nics=(Nic("ibs2f0", "ib"), Nic("ibs2f1", "ib"))), True
    )
    hardware = json.loads(node["metadata"]["annotations"][HARDWARE_ANNOTATION])
    assert hardware["gpus"] == 4
    assert [n["name"] for n in hardware["nics"]] == ["ibs2f0", "ibs2f1"]
    assert {n["linkType"] for n in hardware["nics"]} == {"ib"}
    macs = [n["mac"] for n in hardware["nics"]]
    assert len(set(macs)) == 2 and all(len(m.split(":")) == 6 for m in macs)
    assert node["metadata"]["labels"]["feature.node.kubernetes.io/pci-10de.present"] == "true"


# -- one line, no traceback, on a user's path ------------------------------------------------


def _python_module(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def _kubeconfig(path, server: str) -> str:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return str(path)


@pytest.mark.parametrize("content", [None, "", "\n"])
@pytest.mark.parametrize("command", [["nodes"], ["knobs", "{}"], ["run"]])
def test_the_simulator_without_a_kubeconfig_says_so_in_one_line(tmp_path, content, command):
    kubeconfig = tmp_path / "simulator.kubeconfig"
    if content is not None:
        kubeconfig.write_text(content)
    result = _python_module("tests.simulator", "--kubeconfig", str(kubeconfig), *command)
    assert result.returncode == 1
    assert result.stderr == (
        f"error: no kubeconfig at {kubeconfig} (missing or empty): start the local control plane "
        "first (make cluster-up), or pass --kubeconfig\n"
    )


@pytest.mark.parametrize("command", [["nodes"], ["run"]])
def test_the_simulator_with_a_dead_api_server_says_so_in_one_line(tmp_path, command):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    kubeconfig = _kubeconfig(tmp_path / "k", f"https://127.0.0.1:{port}")
    result = _python_module("tests.simulator", "--kubeconfig", kubeconfig, *command)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(
        f"error: the API server at https://127.0.0.1:{port} does not answer ("
    )
    assert "Connection refused" in lines[0]
    assert lines[0].endswith(
        "is the local control plane running? (make cluster-status; make cluster-up starts it)"
    )


def test_the_simulator_with_a_kubeconfig_that_is_not_one_says_so(tmp_path):
    kubeconfig = tmp_path / "k"
    kubeconfig.write_text("just: text\n")
    result = _python_module("tests.simulator", "--kubeconfig", str(kubeconfig), "nodes")
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {kubeconfig} is not a usable kubeconfig: ")
    assert "Traceback" not in result.stderr


def test_harness_status_of_an_empty_directory_is_absent(tmp_path):
    result = _python_module("tests.harness", "status", "--state-dir", str(tmp_path))
    assert result.returncode == 1
    assert result.stdout == (
        f"absent: no control plane recorded in {tmp_path}; start one with `make cluster-up`\n"
    )


def test_harness_with_an_unreadable_state_file_says_so_in_one_line(tmp_path):
    (tmp_path / "state.json").write_text('{"processes": [')
    status = _python_module("tests.harness", "status", "--state-dir", str(tmp_path))
    assert status.returncode == 1
    assert status.stderr.startswith(f"error: {tmp_path / 'state.json'} is not readable JSON (")
    assert len(status.stderr.splitlines()) == 1
    down = _python_module("tests.harness", "down", "--state-dir", str(tmp_path))
    assert down.returncode == 0
    assert "nothing recorded can be stopped" in down.stderr
    assert down.stdout == "stopped: nothing\n"
    assert not (tmp_path / "state.json").exists()


def test_harness_status_of_a_record_whose_processes_are_gone_is_partial(tmp_path):
    record = {"name": "etcd", "pid": 2**22 + 1, "executable": "/nonexistent/etcd"}
    state = {"processes": [record], "ready": True, "server": "https://127.0.0.1:1"}
    (tmp_path / "state.json").write_text(json.dumps(state))
    result = _python_module("tests.harness", "status", "--state-dir", str(tmp_path))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"etcd                     pid {2**22 + 1:<8} gone",
        f"partial: etcd (pid {2**22 + 1}) gone; `make cluster-up` stops what is left and starts "
        "again, `make cluster-down` only stops it",
    ]


def test_the_control_plane_certificates_pass_strict_verification(tmp_path):
    """Python 3.13's ssl verifies with VERIFY_X509_STRICT by default, which refuses a certificate
    that names no Authority Key Identifier: a TLS handshake with that flag on, on this Python."""
    import ssl
    import threading

    from tests.harness.certs import CertificateAuthority

    authority = CertificateAuthority.create(tmp_path)
    server_pair = authority.issue("server", "localhost", server=True)
    client_pair = authority.issue("client", "alice", organizations=("system:masters",))
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(server_pair.cert, server_pair.key)
    server_context.load_verify_locations(authority.cert_path)
    server_context.verify_mode = ssl.CERT_REQUIRED
    server_context.verify_flags |= ssl.VERIFY_X509_STRICT
    client_context = ssl.create_default_context(cafile=str(authority.cert_path))
    client_context.verify_flags |= ssl.VERIFY_X509_STRICT
    client_context.load_cert_chain(client_pair.cert, client_pair.key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    seen = {}

    def serve():
        connection, _address = listener.accept()
        with server_context.wrap_socket(connection, server_side=True) as tls:
            seen["client"] = dict(x[0] for x in tls.getpeercert()["subject"])["commonName"]
            tls.sendall(b"ok")

    thread = threading.Thread(target=serve)
    thread.start()
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        client_context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        assert tls.recv(2) == b"ok"
    thread.join(timeout=10)
    listener.close()
    assert seen == {"client": "alice"}
