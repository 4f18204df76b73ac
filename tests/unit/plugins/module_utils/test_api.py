"""The connection to the API server (module_utils/k8s/api.py): settings decided as kubernetes.core
decides them, compared with the kubernetes package itself on the same kubeconfigs; the kinds
table against the real CRDs; requests over a kept-alive connection against a local server."""

from __future__ import annotations

import base64
import dataclasses
import json
import select
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s import api
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.kinds import RESOURCES
from tests.harness.controlplane import crd_files, harness_crd_files, monitoring_crd_files

CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def kubeconfig(tmp_path, user: dict, cluster: dict | None = None, name="kubeconfig") -> str:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "c", "cluster": {"server": "https://api.lab:6443", **(cluster or {})}}
        ],
        "users": [{"name": "u", "user": user}],
        "contexts": [
            {"name": "main", "context": {"cluster": "c", "user": "u"}},
            {"name": "other", "context": {"cluster": "c", "user": "u", "namespace": "x"}},
        ],
        "current-context": "main",
    }
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config))
    return str(path)


def by_the_kubernetes_package(path: str, context: str | None = None):
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=path, context=context, client_configuration=configuration)
    return configuration


def test_a_token_user_is_read_as_the_kubernetes_package_reads_it(tmp_path):
    (tmp_path / "ca.crt").write_text(CA)
    path = kubeconfig(tmp_path, {"token": "sha256~abc"}, {"certificate-authority": "ca.crt"})
    found = api.settings({"kubeconfig": path}, environ={})
    reference = by_the_kubernetes_package(path)
    assert found.server == reference.host == "https://api.lab:6443"
    token = reference.get_api_key_with_prefix("BearerToken").removeprefix("Bearer ")
    assert found.token == token == "sha256~abc"  # noqa: S105
    # A relative certificate-authority is relative to the kubeconfig's folder.
    assert found.ca_file == str(tmp_path / "ca.crt")
    assert Path(found.ca_file).read_text() == Path(reference.ssl_ca_cert).read_text()
    assert found.verify is reference.verify_ssl is True


def test_certificates_as_data_and_insecure_skip_tls_verify(tmp_path):
    data = {
        "client-certificate-data": base64.b64encode(b"CERT").decode(),
        "client-key-data": base64.b64encode(b"KEY").decode(),
    }
    path = kubeconfig(tmp_path, data, {"insecure-skip-tls-verify": True})
    found = api.settings({"kubeconfig": path}, environ={})
    reference = by_the_kubernetes_package(path)
    assert (found.client_cert_data, found.client_key_data) == (b"CERT", b"KEY")
    assert Path(reference.cert_file).read_bytes() == b"CERT"
    assert found.verify is reference.verify_ssl is False


def test_the_options_and_their_variables_win_over_the_kubeconfig(tmp_path):
    path = kubeconfig(tmp_path, {"token": "from-file"})
    environ = {"K8S_AUTH_KUBECONFIG": path, "K8S_AUTH_VERIFY_SSL": "no"}
    found = api.settings({"host": "https://other:6443/", "api_key": "given"}, environ=environ)
    # host and api_key together need no kubeconfig (kubernetes.core does the same).
    assert (found.server, found.token, found.verify) == ("https://other:6443", "given", False)
    found = api.settings({"context": "other"}, environ=environ)
    assert (found.server, found.token) == ("https://api.lab:6443", "from-file")
    found = api.settings(
        {"kubeconfig": path, "impersonate_user": "alice", "impersonate_groups": ["a", "b"]},
        environ={},
    )
    assert found.headers == {"Impersonate-User": "alice", "Impersonate-Group": ["a", "b"]}


def test_an_exec_user_is_left_to_the_kubernetes_package(tmp_path):
    script = tmp_path / "token.sh"
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": "from-exec"},
    }
    script.write_text(f"#!/bin/sh\necho '{json.dumps(credential)}'\n")
    script.chmod(0o755)
    exec_user = {"exec": {"apiVersion": credential["apiVersion"], "command": str(script)}}
    path = kubeconfig(tmp_path, exec_user)
    found = api.settings({"kubeconfig": path}, environ={})
    assert (found.server, found.token) == ("https://api.lab:6443", "from-exec")


def test_a_kubeconfig_that_cannot_be_used_names_what_is_wrong(tmp_path):
    path = kubeconfig(tmp_path, {"token": "t"})
    with pytest.raises(api.SettingsError, match=r"context 'nope' not found; it has main, other"):
        api.settings({"kubeconfig": path, "context": "nope"}, environ={})
    with pytest.raises(api.SettingsError, match="cannot be read: No such file"):
        api.settings({"kubeconfig": str(tmp_path / "missing")}, environ={})
    with pytest.raises(api.SettingsError, match=r"got 'api.lab:6443'; expected https://"):
        api.Api(api.Settings(server="api.lab:6443"))


def test_every_custom_kind_of_the_table_is_as_its_crd_says():
    """The plural and scope of each kind the collection requests without discovery, from the
    real CRDs (../shared/crds, the harness's for OpenShift's config kinds, and
    prometheus-operator's)."""
    crds = {}
    for path in [*crd_files(), *harness_crd_files(), *monitoring_crd_files()]:
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            for version in spec["versions"]:
                if version.get("served"):
                    key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
                    crds[key] = (spec["names"]["plural"], spec["scope"] == "Namespaced")
    # The kinds of a group of its own (core v1 and apps/v1 are Kubernetes' built-in kinds, which
    # the integration test compares with the local API server's discovery).
    custom = {key: value for key, value in RESOURCES.items() if key[0] not in ("v1", "apps/v1")}
    # Served by OpenShift and OLM's aggregated API, without a CRD in ../shared: the integration
    # test compares them with the local API server's discovery.
    without_crd = {
        ("machineconfiguration.openshift.io/v1", "MachineConfig"),
        ("machineconfiguration.openshift.io/v1", "MachineConfigPool"),
        ("packages.operators.coreos.com/v1", "PackageManifest"),
    }
    compared = {key: crds.get(key) for key in custom if key not in without_crd}
    assert compared == {key: custom[key] for key in compared}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    answered: list = []

    def do_GET(self):
        Handler.answered.append((self.path, self.headers.get("Authorization")))
        if self.path.startswith("/close"):
            self.close_connection = True
        body = json.dumps({"path": self.path}).encode()
        status = 404 if self.path.startswith("/missing") else 200
        busy = self.path.startswith("/busy") and len(Handler.answered) <= 2
        self.send_response(429 if busy else status)
        if busy:  # as a CRD's storage re-initializing after a restart answers
            self.send_header("Retry-After", "1")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


@pytest.fixture
def server():
    Handler.answered = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_requests_keep_one_connection_and_open_another_when_the_server_closes_it(server):
    connection = api.Api(api.Settings(server=server, token="t"))  # noqa: S106
    assert connection.request("GET", "/a", query={"labelSelector": "x=y"}) == {
        "path": "/a?labelSelector=x%3Dy"
    }
    first = connection._connection
    connection.request("GET", "/close")
    connection.request("GET", "/b")  # on a new connection, without an error
    assert connection._connection is not first
    assert Handler.answered == [
        ("/a?labelSelector=x%3Dy", "Bearer t"),
        ("/close", "Bearer t"),
        ("/b", "Bearer t"),
    ]
    with pytest.raises(api.ApiError) as raised:
        connection.request("GET", "/missing")
    assert (raised.value.status, raised.value.path) == (404, "/missing")


def test_each_thread_asks_on_a_connection_of_its_own_and_closes_it(server):
    connection = api.Api(api.Settings(server=server, token="t"))  # noqa: S106
    connection.request("GET", "/main")
    mine = connection._connection
    seen = {}

    def other():
        connection.request("GET", "/other")
        seen["connection"] = connection._connection
        connection.close()
        seen["after close"] = connection._connection

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen["connection"] is not None and seen["connection"] is not mine
    assert seen["after close"] is None
    assert connection._connection is mine  # the other thread's close left this one open
    connection.request("GET", "/main-again")
    assert connection._connection is mine
    assert [path for path, _auth in Handler.answered] == ["/main", "/other", "/main-again"]


def test_a_connection_given_back_is_taken_by_the_next_thread_that_asks(server):
    connection = api.Api(api.Settings(server=server, token="t"))  # noqa: S106
    used = {}

    def ask(path):
        connection.request("GET", path)
        used[path] = connection._connection
        connection.release()
        used[path + " after"] = connection._connection

    for path in ("/first", "/close", "/third"):
        thread = threading.Thread(target=ask, args=(path,))
        thread.start()
        thread.join()
    assert used["/first after"] is None
    assert used["/close"] is used["/first"]  # the second thread opened none of its own
    # The server closed that one after /close: the third thread's request on it failed at once,
    # and it was made again, without an error, on a new connection.
    assert used["/third"] is not used["/close"]
    assert [path for path, _auth in Handler.answered] == ["/first", "/close", "/third"]
    connection.request("GET", "/main")  # the main thread, too, takes the one given back
    assert connection._connection is used["/third"]


def test_an_answer_asking_to_come_back_later_is_asked_again(server):
    connection = api.Api(api.Settings(server=server))
    waits = []
    connection.sleep = waits.append
    assert connection.request("GET", "/busy") == {"path": "/busy"}
    assert waits == [1.0, 1.0]  # two 429 answers with Retry-After: 1, then 200


def test_without_any_kubeconfig_the_error_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(api.SettingsError) as raised:
        api.settings({}, environ={})
    assert str(raised.value) == (
        "no kubeconfig: none was given (gpudirect_rdma_kubeconfig, K8S_AUTH_KUBECONFIG) and the "
        f"default, {tmp_path}/.kube/config, cannot be read (No such file or directory); give "
        "one, or gpudirect_rdma_host with gpudirect_rdma_api_key"
    )


def test_in_a_pod_the_service_account_is_used_before_any_kubeconfig(tmp_path, monkeypatch):
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("pod-token\n")
    (account / "ca.crt").write_text(CA)
    monkeypatch.setattr(api, "SERVICE_ACCOUNT", str(account))
    path = kubeconfig(tmp_path, {"token": "from-file"})
    environ = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    found = api.settings({}, environ={**environ, "KUBECONFIG": path})
    assert (found.server, found.token) == ("https://10.0.0.1:443", "pod-token")
    assert found.ca_file == str(account / "ca.crt")
    # A kubeconfig or context given wins over the pod's account, as with kubernetes.core.
    found = api.settings({"kubeconfig": path}, environ=environ)
    assert (found.server, found.token) == ("https://api.lab:6443", "from-file")
    found = api.settings({}, environ={**environ, "KUBERNETES_SERVICE_HOST": "fd00::1"})
    assert found.server == "https://[fd00::1]:443"


class Tunnel(BaseHTTPRequestHandler):
    """An HTTP proxy that only tunnels (CONNECT), as a corporate proxy in front of an API server
    does; it records each tunnel asked for and its Proxy-Authorization."""

    asked: list = []

    def do_CONNECT(self):
        Tunnel.asked.append((self.path, self.headers.get("Proxy-Authorization")))
        host, port = self.path.rsplit(":", 1)
        with socket.create_connection((host, int(port))) as upstream:
            self.send_response(200, "Connection established")
            self.end_headers()
            ends = [self.connection, upstream]
            while True:
                ready, _w, _x = select.select(ends, [], [], 5)
                if not ready:
                    return
                for end in ready:
                    data = end.recv(65536)
                    if not data:
                        return
                    (upstream if end is self.connection else self.connection).sendall(data)

    def log_message(self, *_args):
        pass


def test_a_proxy_is_asked_for_a_tunnel_unless_no_proxy_names_the_server(server):
    Tunnel.asked = []
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Tunnel)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        through = api.Settings(
            server=server,
            proxy=f"http://127.0.0.1:{proxy.server_address[1]}",
            proxy_headers={"proxy_basic_auth": "user:secret"},
        )
        assert api.Api(through).request("GET", "/a") == {"path": "/a"}
        target = server.removeprefix("http://")
        assert Tunnel.asked == [(target, "Basic " + base64.b64encode(b"user:secret").decode())]
        direct = dataclasses.replace(through, no_proxy="localhost,127.0.0.1")
        assert api.Api(direct).request("GET", "/b") == {"path": "/b"}
        assert len(Tunnel.asked) == 1
    finally:
        proxy.shutdown()
        proxy.server_close()
