"""The HTTP connection to the API server: where it is and how to log in (kubernetes.core's options,
the K8S_AUTH_* variables, a kubeconfig or the pod's service account, as kubernetes.core decides),
and requests over one kept-alive connection.

Why not the kubernetes client: importing it costs about 0.2 s in every task that talks to the
cluster, more than the requests of a converged run. The kubernetes package is still what reads a
kubeconfig this module does not (an exec or auth-provider user, several files in KUBECONFIG, a
kubeconfig given as a dict): it then only resolves the settings, the requests stay here.
"""

from __future__ import annotations

import base64
import dataclasses
import http.client
import json
import os
import socket
import ssl
import tempfile
import threading
import time
import urllib.parse

# kubernetes.core's option -> the kubernetes client's name of it (args_common.AUTH_ARG_MAP); the
# environment gives K8S_AUTH_<either name, upper case> where the option is unset.
AUTH_OPTIONS = {
    "kubeconfig": "kubeconfig",
    "context": "context",
    "host": "host",
    "api_key": "api_key",
    "username": "username",
    "password": "password",
    "validate_certs": "verify_ssl",
    "ca_cert": "ssl_ca_cert",
    "client_cert": "cert_file",
    "client_key": "key_file",
    "proxy": "proxy",
    "no_proxy": "no_proxy",
    "persist_config": "persist_config",
}
BOOLEAN_OPTIONS = ("validate_certs", "persist_config")
PROXY_HEADER_OPTIONS = ("proxy_basic_auth", "basic_auth", "user_agent")
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
# A request's answer is awaited this long by default (a frozen API server is reported, not waited
# on; gpudirect_rdma_request_timeout).
REQUEST_TIMEOUT = 60.0
# An answer with Retry-After (429, 503) is asked again this many times in all, waiting as it says
# (at most MAX_RETRY_AFTER seconds each time).
RETRIES = 10
MAX_RETRY_AFTER = 5.0
USER_AGENT = "gpudirect.rdma"
# What this module reads of a kubeconfig; a user or cluster with anything else is read by the
# kubernetes package.
_USER_KEYS = {"token", "tokenFile", "client-certificate", "client-certificate-data"}
_USER_KEYS |= {"client-key", "client-key-data", "username", "password"}
_CLUSTER_KEYS = {"server", "certificate-authority", "certificate-authority-data"}
_CLUSTER_KEYS |= {"insecure-skip-tls-verify", "tls-server-name", "extensions"}


class ApiError(Exception):
    """The API server answered with an error status: status, reason and body as it came."""

    def __init__(self, status: int, reason: str, body: bytes | str = b"", method="", path=""):
        self.status = status
        self.reason = reason
        self.body = body
        self.method = method
        self.path = path
        super().__init__(f"{status} {reason}: {self.summary()}")

    def summary(self) -> str:
        """The message of the Status the server answered with, else the body as it came."""
        body = self.body.decode("utf-8", "replace") if isinstance(self.body, bytes) else self.body
        try:
            return json.loads(body).get("message") or body
        except (TypeError, ValueError, AttributeError):
            return str(body)

    def status_details(self) -> dict | None:
        """The Status object of the answer, None when the body is not one (a path the server
        does not serve answers a plain '404 page not found')."""
        try:
            found = json.loads(self.body)
        except (TypeError, ValueError):
            return None
        return found if isinstance(found, dict) and found.get("kind") == "Status" else None


class Unreachable(ConnectionError):
    """No answer at all: refused, reset, timed out, a TLS failure. reason is the cause."""

    def __init__(self, server: str, reason: str):
        self.server = server
        self.reason = reason
        super().__init__(reason)


class SettingsError(ValueError):
    """A connection setting or kubeconfig that cannot be used, said with the value at fault."""


@dataclasses.dataclass
class Settings:
    server: str = ""
    verify: bool = True
    ca_file: str | None = None
    ca_data: str | None = None
    tls_server_name: str | None = None
    client_cert_file: str | None = None
    client_key_file: str | None = None
    client_cert_data: bytes | None = None
    client_key_data: bytes | None = None
    token: str | None = None
    username: str | None = None
    password: str | None = None
    proxy: str | None = None
    no_proxy: str | None = None
    proxy_headers: dict = dataclasses.field(default_factory=dict)
    headers: dict = dataclasses.field(default_factory=dict)


def auth_options(params: dict, environ=None) -> dict:
    """The connection options as kubernetes.core takes them: each set one, else its K8S_AUTH_*
    variable (booleans as 'false', 'no', '0' or anything else)."""
    environ = os.environ if environ is None else environ
    found = {}
    for option, client_name in AUTH_OPTIONS.items():
        value = params.get(option)
        if value is None:
            value = environ.get(f"K8S_AUTH_{option.upper()}") or environ.get(
                f"K8S_AUTH_{client_name.upper()}"
            )
            if value is not None and option in BOOLEAN_OPTIONS:
                value = value.lower() not in ("0", "false", "no")
        if value is not None and value != "":
            found[option] = value
    headers = params.get("proxy_headers") or {}
    if not headers:
        for key in PROXY_HEADER_OPTIONS:
            value = environ.get(f"K8S_AUTH_PROXY_HEADERS_{key.upper()}")
            if value is not None:
                headers[key] = value
    found["proxy_headers"] = {k: v for k, v in headers.items() if v is not None}
    user = params.get("impersonate_user") or environ.get("K8S_AUTH_IMPERSONATE_USER")
    groups = params.get("impersonate_groups")
    if groups is None and environ.get("K8S_AUTH_IMPERSONATE_GROUPS"):
        groups = [g for g in environ["K8S_AUTH_IMPERSONATE_GROUPS"].split(",") if g]
    found["impersonate_user"], found["impersonate_groups"] = user, groups or []
    return found


def settings(params: dict, environ=None) -> Settings:
    """Where the API server is and how to log in, decided as kubernetes.core decides: host with
    a token, a password or a client certificate needs nothing else; else the kubeconfig (the
    option, else KUBECONFIG, else ~/.kube/config), the pod's service account first when neither
    kubeconfig nor context is given; then every option given overrides what that said."""
    environ = os.environ if environ is None else environ
    auth = auth_options(params, environ)
    explicit = auth.get("host") and (
        (auth.get("username") and auth.get("password"))
        or auth.get("api_key")
        or (auth.get("client_cert") and auth.get("client_key"))
    )
    if explicit:
        found = Settings()
    elif auth.get("kubeconfig") or auth.get("context"):
        found = from_kubeconfig(auth, environ)
    else:
        found = in_cluster(environ) or from_kubeconfig(auth, environ)
    overrides = {
        "server": (auth.get("host") or "").rstrip("/") or None,
        "token": auth.get("api_key"),
        "username": auth.get("username"),
        "password": auth.get("password"),
        "verify": auth.get("validate_certs"),
        "ca_file": auth.get("ca_cert"),
        "client_cert_file": auth.get("client_cert"),
        "client_key_file": auth.get("client_key"),
        "proxy": auth.get("proxy"),
        "no_proxy": auth.get("no_proxy"),
    }
    found = dataclasses.replace(found, **{k: v for k, v in overrides.items() if v is not None})
    if auth.get("ca_cert"):
        found.ca_data = None
    if auth.get("client_cert"):
        found.client_cert_data = None
    if auth.get("client_key"):
        found.client_key_data = None
    found.proxy_headers = auth["proxy_headers"] or found.proxy_headers
    if auth["impersonate_user"]:
        found.headers["Impersonate-User"] = auth["impersonate_user"]
    if auth["impersonate_groups"]:
        found.headers["Impersonate-Group"] = list(auth["impersonate_groups"])
    if not found.server:
        raise SettingsError(
            "no API server to connect to: give gpudirect_rdma_kubeconfig (or K8S_AUTH_KUBECONFIG"
            ", KUBECONFIG, ~/.kube/config), or gpudirect_rdma_host with a token or certificate"
        )
    return found


def in_cluster(environ) -> Settings | None:
    """The pod's service account, where the playbook runs in a pod (an AAP container group)."""
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
    token_file = os.path.join(SERVICE_ACCOUNT, "token")
    if not host or not port or not os.path.exists(token_file):
        return None
    with open(token_file, encoding="utf-8") as handle:
        token = handle.read().strip()
    host = f"[{host}]" if ":" in host else host
    return Settings(
        server=f"https://{host}:{port}",
        token=token,
        ca_file=os.path.join(SERVICE_ACCOUNT, "ca.crt"),
    )


def from_kubeconfig(auth: dict, environ) -> Settings:
    kubeconfig = auth.get("kubeconfig")
    path = kubeconfig if isinstance(kubeconfig, str) else None
    if kubeconfig is None:
        path = environ.get("KUBECONFIG") or "~/.kube/config"
    if path is None or os.pathsep in path:  # a dict, or several files merged
        return _by_the_kubernetes_package(auth)
    path = os.path.expanduser(path)
    try:
        with open(path, encoding="utf-8") as handle:
            config = _yaml(handle.read())
    except OSError as error:
        if kubeconfig is None:  # none given: where kubectl would look
            source = "KUBECONFIG" if environ.get("KUBECONFIG") else "the default"
            raise SettingsError(
                f"no kubeconfig: none was given (gpudirect_rdma_kubeconfig, K8S_AUTH_KUBECONFIG) "
                f"and {source}, {path}, cannot be read ({error.strerror}); give one, or "
                "gpudirect_rdma_host with gpudirect_rdma_api_key"
            ) from None
        raise SettingsError(f"kubeconfig {path}: cannot be read: {error.strerror}") from None
    if not isinstance(config, dict):
        raise SettingsError(f"kubeconfig {path}: got {type(config).__name__}; expected a mapping")
    name = auth.get("context") or config.get("current-context")
    context = _named(config, "contexts", name, path, "context")
    cluster = _named(config, "clusters", context.get("cluster"), path, "cluster")
    user = _named(config, "users", context.get("user"), path, "user") if context.get("user") else {}
    if set(user) - _USER_KEYS or set(cluster) - _CLUSTER_KEYS:
        return _by_the_kubernetes_package(auth)  # exec, auth-provider, proxy-url, impersonation
    base = os.path.dirname(path)

    def file(entry: str) -> str | None:
        value = entry and os.path.expanduser(entry)
        return value if not value or os.path.isabs(value) else os.path.join(base, value)

    def data(entry: str | None, what: str) -> bytes | None:
        try:
            return base64.b64decode(entry) if entry else None
        except ValueError:
            raise SettingsError(f"kubeconfig {path}: {what} is not base64") from None

    token = user.get("token")
    if not token and user.get("tokenFile"):
        with open(file(user["tokenFile"]), encoding="utf-8") as handle:
            token = handle.read().strip()
    ca_data = data(cluster.get("certificate-authority-data"), "certificate-authority-data")
    return Settings(
        server=str(cluster.get("server") or "").rstrip("/"),
        verify=not cluster.get("insecure-skip-tls-verify", False),
        ca_file=file(cluster.get("certificate-authority")),
        ca_data=ca_data.decode() if ca_data else None,
        tls_server_name=cluster.get("tls-server-name"),
        client_cert_file=file(user.get("client-certificate")),
        client_key_file=file(user.get("client-key")),
        client_cert_data=data(user.get("client-certificate-data"), "client-certificate-data"),
        client_key_data=data(user.get("client-key-data"), "client-key-data"),
        token=token,
        username=user.get("username"),
        password=user.get("password"),
    )


def _yaml(text: str):
    import yaml

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except yaml.YAMLError as error:
        raise SettingsError(f"kubeconfig: not YAML: {error}") from None


def _named(config: dict, section: str, name, path: str, what: str) -> dict:
    for entry in config.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry.get(what) or {}
    names = [e.get("name") for e in config.get(section) or [] if isinstance(e, dict)]
    known = ", ".join(map(str, names)) or "none"
    raise SettingsError(f"kubeconfig {path}: {what} {name!r} not found; it has {known}")


def _by_the_kubernetes_package(auth: dict) -> Settings:
    """The settings the kubernetes package resolves from the kubeconfig (an exec plugin's token
    or certificate, an auth-provider, merged files)."""
    try:
        from kubernetes import client, config
    except ImportError as error:
        raise SettingsError(
            f"this kubeconfig needs the kubernetes Python package to be read: {error}"
        ) from None
    configuration = client.Configuration()
    options = {"context": auth.get("context"), "persist_config": auth.get("persist_config")}
    kubeconfig = auth.get("kubeconfig")
    if isinstance(kubeconfig, dict):
        config.load_kube_config_from_dict(
            config_dict=kubeconfig, client_configuration=configuration, **options
        )
    else:
        config.load_kube_config(
            config_file=kubeconfig, client_configuration=configuration, **options
        )
    authorization = (  # "Bearer <token>", by its name in this or older kubernetes releases
        configuration.get_api_key_with_prefix("BearerToken")
        or configuration.get_api_key_with_prefix("authorization")
        or ""
    )
    return Settings(
        server=configuration.host.rstrip("/"),
        verify=configuration.verify_ssl,
        ca_file=configuration.ssl_ca_cert,
        tls_server_name=getattr(configuration, "tls_server_name", None),
        client_cert_file=configuration.cert_file,
        client_key_file=configuration.key_file,
        token=authorization.removeprefix("Bearer ") or None,
        username=configuration.username or None,
        password=configuration.password or None,
        proxy=configuration.proxy,
    )


def _tls_context(found: Settings) -> ssl.SSLContext:
    if found.verify:
        context = ssl.create_default_context(cafile=found.ca_file, cadata=found.ca_data)
    else:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    cert, key = found.client_cert_file, found.client_key_file
    if found.client_cert_data or found.client_key_data:
        # The ssl module loads a certificate from a file only: a private one, gone once loaded.
        with tempfile.TemporaryDirectory(prefix="gpudirect-rdma-") as folder:
            if found.client_cert_data:
                cert = _write(folder, "cert.pem", found.client_cert_data)
            if found.client_key_data:
                key = _write(folder, "key.pem", found.client_key_data)
            context.load_cert_chain(cert, key)
    elif cert:
        context.load_cert_chain(cert, key)
    return context


def _write(folder: str, name: str, data: bytes) -> str:
    path = os.path.join(folder, name)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as handle:
        handle.write(data)
    return path


def _bypasses_proxy(host: str, no_proxy: str | None) -> bool:
    for entry in (no_proxy or "").replace(" ", "").split(","):
        entry = entry.lstrip(".")
        if entry == "*" or (entry and (host == entry or host.endswith("." + entry))):
            return True
    return False


class _Tls(http.client.HTTPSConnection):
    """An HTTPS connection that checks the certificate against tls_server_name when given."""

    def __init__(self, *args, server_name: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._server_name = server_name

    def connect(self):
        if not self._server_name:
            return super().connect()
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self._server_name)


class Api:
    """Requests to one API server over a kept-alive connection per thread (the modules make one
    request at a time, but for the reads made several at a time: reads.Reads.prefetch); JSON in
    and out."""

    def __init__(self, found: Settings, request_timeout: float = REQUEST_TIMEOUT):
        self.settings = found
        self.request_timeout = request_timeout
        self.server = found.server
        parsed = urllib.parse.urlsplit(found.server)
        if parsed.scheme not in ("https", "http") or not parsed.hostname:
            raise SettingsError(
                f"API server: got {found.server!r}; expected https://<host>[:<port>]"
            )
        self._secure = parsed.scheme == "https"
        self._host = parsed.hostname
        self._port = parsed.port or (443 if self._secure else 80)
        self._prefix = parsed.path.rstrip("/")
        self._context = _tls_context(found) if self._secure else None
        self._headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if found.token:
            self._headers["Authorization"] = f"Bearer {found.token}"
        elif found.username and found.password:
            pair = f"{found.username}:{found.password}".encode()
            self._headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        self._local = threading.local()  # the connection of each thread
        # Kept-alive connections a thread gave back (release), for the next thread that needs one.
        self._idle: list[http.client.HTTPConnection] = []
        self._idle_lock = threading.Lock()
        self.sleep = time.sleep

    @property
    def _connection(self) -> http.client.HTTPConnection | None:
        return getattr(self._local, "connection", None)

    @_connection.setter
    def _connection(self, connection: http.client.HTTPConnection | None) -> None:
        self._local.connection = connection

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        found = self.settings
        proxy = found.proxy and not _bypasses_proxy(self._host, found.no_proxy)
        if proxy:
            target = urllib.parse.urlsplit(found.proxy)
            host, port = target.hostname, target.port or 3128
        else:
            host, port = self._host, self._port
        if self._secure:
            connection = _Tls(
                host, port, timeout=timeout, context=self._context,
                server_name=found.tls_server_name,
            )  # fmt: skip
        else:
            connection = http.client.HTTPConnection(host, port, timeout=timeout)
        if proxy:
            connection.set_tunnel(self._host, self._port, headers=self._proxy_headers())
        return connection

    def _proxy_headers(self) -> dict:
        given = self.settings.proxy_headers or {}
        headers = {}
        if given.get("proxy_basic_auth"):
            token = base64.b64encode(given["proxy_basic_auth"].encode()).decode()
            headers["Proxy-Authorization"] = f"Basic {token}"
        if given.get("basic_auth"):
            headers["Authorization"] = (
                "Basic " + base64.b64encode(given["basic_auth"].encode()).decode()
            )
        if given.get("user_agent"):
            headers["User-Agent"] = given["user_agent"]
        return headers

    def request(
        self,
        method: str,
        path: str,
        query: list | dict | None = None,
        body=None,
        content_type: str = "application/json",
        timeout: float | None = None,
        raw: bool = False,
    ):
        """The answer's JSON (raw: its bytes); ApiError for an error status, Unreachable for no
        answer."""
        url = self._prefix + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        headers = dict(self._headers)
        if data is not None:
            headers["Content-Type"] = content_type
        for _attempt in range(RETRIES):
            status, reason, answer, wait = self._exchange(method, url, data, headers, timeout)
            # Asked to come back (a CRD's storage re-initializing after a restart, overload):
            # the request was not served, so it is made again, as client-go does.
            if wait is None or status not in (429, 503):
                break
            self.sleep(min(wait, MAX_RETRY_AFTER))
        if status >= 400:
            raise ApiError(status, reason, answer, method, path)
        if raw:
            return answer
        return json.loads(answer) if answer else {}

    def _exchange(self, method, url, data, headers, timeout):
        timeout = self.request_timeout if timeout is None else timeout
        impersonated = headers.pop("Impersonate-Group", None) or self.settings.headers.get(
            "Impersonate-Group"
        )
        for name, value in self.settings.headers.items():
            if name != "Impersonate-Group":
                headers[name] = value
        for attempt in (1, 2):
            if self._connection is None:
                self._connection = self._idle_connection()
            reused = self._connection is not None
            if not reused:
                self._connection = self._connect(timeout)
            connection = self._connection
            connection.timeout = timeout
            if connection.sock is not None:
                connection.sock.settimeout(timeout)
            try:
                connection.putrequest(method, url, skip_accept_encoding=True)
                for name, value in headers.items():
                    connection.putheader(name, value)
                for group in impersonated or []:
                    connection.putheader("Impersonate-Group", group)
                if data is not None:
                    connection.putheader("Content-Length", str(len(data)))
                connection.endheaders(data)
                response = connection.getresponse()
                answer = response.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as error:
                self.close()
                if reused and attempt == 1:
                    continue  # the server closed the kept-alive connection: once more, anew
                raise Unreachable(self.server, _why(error)) from None
            except (OSError, http.client.HTTPException) as error:
                self.close()
                raise Unreachable(self.server, _why(error, timeout)) from None
            if response.will_close:
                self.close()
            return (
                response.status,
                response.reason,
                answer,
                _seconds(response.getheader("Retry-After")),
            )
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """Close the calling thread's connection."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def release(self) -> None:
        """Give the calling thread's connection, kept alive, to the next thread that needs one
        (the reads made in parallel, round after round, open their connections once)."""
        if self._connection is not None:
            with self._idle_lock:
                self._idle.append(self._connection)
            self._connection = None

    def _idle_connection(self) -> http.client.HTTPConnection | None:
        with self._idle_lock:
            return self._idle.pop() if self._idle else None


def _seconds(value: str | None) -> float | None:
    """A Retry-After header's delay (seconds; a date is taken as one second)."""
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        return 1.0


def _why(error: BaseException, timeout: float | None = None) -> str:
    if isinstance(error, (socket.timeout, TimeoutError)):
        return f"no answer within {timeout:g} s (timed out)"
    if isinstance(error, ssl.SSLError):
        return f"TLS: {error.reason or error}"
    if isinstance(error, http.client.RemoteDisconnected):
        return f"the connection was closed without an answer ({error})"
    return str(error) or type(error).__name__
