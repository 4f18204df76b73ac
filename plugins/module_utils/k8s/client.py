"""The API connection of the collection's modules, with kubernetes.core's options and
K8S_AUTH_* environment variables, resource lookup that says clearly when a kind is not
served (its operator is not installed yet), every request the API server forbids (403)
turned into one message (who may not do what, and the RBAC the collection ships for it), and
an API server that stops answering reported with the request it was asked."""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import re
import ssl

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    HAS_KUBERNETES = True
    IMPORT_ERROR = None
except ImportError as error:  # pragma: no cover - reported by the module
    HAS_KUBERNETES = False
    IMPORT_ERROR = error
    ResourceNotFoundError = Exception

FIELD_MANAGER = "gpudirect.rdma"
_URLLIB3_PREFIX = re.compile(r"^(<[^>]*>|\w+ConnectionPool\([^)]*\)): ")

# The RBAC the collection ships (rbac/ at the collection root): what a user needs to run
# site.yml, verify.yml and uninstall.yml without being a cluster administrator.
RBAC_FILE = "rbac/gpudirect-rdma-installer.yaml"
RBAC_BINDING_FILE = "rbac/gpudirect-rdma-installer-binding.yaml"
CLUSTER_ROLE = "gpudirect-rdma-installer"
VERIFY_ROLE = "gpudirect-rdma-verify"

# How the API server's RBAC authorizer words a refusal.
_REFUSAL = re.compile(
    r'User "(?P<user>[^"]*)" cannot (?P<verb>\S+) resource "(?P<resource>[^"]+)"'
    r'(?: in API group "(?P<group>[^"]*)")?'
    r'(?: in the namespace "(?P<namespace>[^"]*)"| at the cluster scope)?'
)


def argument_spec(**extra) -> dict:
    """kubernetes.core's connection options plus the module's own."""
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    spec.update(extra)
    return spec


class NotServed(Exception):
    """The API server serves no such apiVersion/kind."""

    def __init__(self, api_version: str, kind: str):
        self.api_version = api_version
        self.kind = kind
        super().__init__(
            f"the API server does not serve {kind} ({api_version}); its CRD comes with the "
            "operator that owns it: is that operator installed and its CSV Succeeded?"
        )


def _server_message(error) -> str:
    """The message of the Status the API server answered with, else the body as it came."""
    body = getattr(error, "body", None)
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    try:
        return json.loads(body).get("message") or str(body)
    except (TypeError, ValueError, AttributeError):
        return str(body or error)


class Forbidden(Exception):
    """The API server refused a request (403). The message names the user, the verb, the
    resource and where, and the ClusterRole (and Role) the collection ships for its playbooks.
    status, reason and body are the API error's, so code that reads those keeps working."""

    status = 403

    def __init__(self, error, method: str = "", path: str = ""):
        self.reason = getattr(error, "reason", None) or "Forbidden"
        self.body = getattr(error, "body", None)
        self.server_message = _server_message(error)
        found = _REFUSAL.search(self.server_message)
        self.user = found["user"] if found else None
        self.verb = found["verb"] if found else method.lower()
        resource = found["resource"] if found else path
        self.resource = f"{resource}.{found['group']}" if found and found["group"] else resource
        self.namespace = found["namespace"] if found else None
        who = f'user "{self.user}"' if self.user else "the user of this connection"
        where = f" in namespace {self.namespace}" if self.namespace else ""
        if self.namespace and self.resource == "namespaces":  # the server names it so
            where = f" named {self.namespace}"
        if not found:
            # Not the authorizer: an admission plugin (a namespace being terminated, a quota).
            super().__init__(
                f"forbidden: the API server refused to {self.verb} {self.resource}: "
                f"{self.server_message}"
            )
            return
        super().__init__(
            f"forbidden: the API server does not allow {who} to {self.verb} {self.resource}"
            f"{where} ({self.server_message}). gpudirect.rdma needs the ClusterRole "
            f"{CLUSTER_ROLE} and, in the namespace of the bandwidth test's pods, the Role "
            f"{VERIFY_ROLE}: both are in {RBAC_FILE} in the collection (oc apply -n "
            f"<that namespace> -f {RBAC_FILE}); bind them to this user, as "
            f"{RBAC_BINDING_FILE} shows"
        )


def _explaining_refusals(request):
    """request, raising Forbidden instead of the dynamic client's 403 error."""

    @functools.wraps(request)
    def explained(method, path, *args, **kwargs):
        try:
            return request(method, path, *args, **kwargs)
        except Forbidden:
            raise
        except Exception as error:
            if getattr(error, "status", None) == 403:
                raise Forbidden(error, method, path) from None
            raise

    return explained


class ApiFailure(Exception):
    """The API server did not answer (down, restarting, unreachable), or answered a request with
    an error nobody handled: what was being done, where, and why."""

    def __init__(self, request: str, server: str | None, error: BaseException):
        self.request = request
        self.server = server
        self.error = error
        where = server or "(address unknown)"
        if getattr(error, "status", None) is None:
            text = (
                f"the API server {where} did not answer while {request}: {_reason(error)}. "
                "Is it running and reachable from here? Nothing after this request was done; "
                "once the API server answers again, run the playbook again: it continues from "
                "what exists."
            )
        else:
            text = f"the API server {where} refused {request}: {describe_status(error)}"
        super().__init__(text)


def describe_status(error: BaseException) -> str:
    """An API error as 'status reason: message'."""
    reason = getattr(error, "reason", "") or ""
    status = getattr(error, "status", "")
    return f"{status} {reason}: {_server_message(error)}".replace("  ", " ")


def _reason(error: BaseException) -> str:
    """The innermost cause of a connection error (refused, reset, timed out, TLS)."""
    cause = getattr(error, "reason", None) or error.__cause__ or error.__context__ or error
    # urllib3 starts the text with its connection object or pool: "<...HTTPSConnection object
    # at 0x7f...>: Failed to establish a new connection: [Errno 111] Connection refused"
    return _URLLIB3_PREFIX.sub("", str(cause))


def server_of(error: BaseException) -> str | None:
    """The API server a connection error names (urllib3 errors carry their pool, the
    collection's ApiFailure its server)."""
    if isinstance(getattr(error, "server", None), str):
        return error.server
    pool = getattr(error, "pool", None)
    host = getattr(pool, "host", None)
    if not host:
        return None
    return f"{getattr(pool, 'scheme', 'https')}://{host}:{getattr(pool, 'port', '')}".rstrip(":")


def _connection_error(error: BaseException) -> bool:
    """No HTTP answer at all: refused, reset, timed out, TLS."""
    if isinstance(error, (NotServed, ApiFailure)) or getattr(error, "status", None) is not None:
        return False
    # Not any OSError: the collection's own TimeoutError (objects still there after a wait)
    # is no connection error.
    http_errors: tuple = (ConnectionError, ssl.SSLError)
    try:
        import urllib3.exceptions

        http_errors += (urllib3.exceptions.HTTPError,)
    except ImportError:  # pragma: no cover - the kubernetes package needs urllib3
        pass
    return isinstance(error, http_errors)


def _api_status_error(error: BaseException) -> bool:
    """An answer with an error status (kubernetes ApiException, DynamicApiError)."""
    return getattr(error, "status", None) is not None and hasattr(error, "reason")


def _as_read(_client, data: dict) -> dict:
    """The response as the JSON decoder gave it: the dynamic client's ResourceInstance wraps
    every field and costs more than the read itself for a list of 1,000 nodes."""
    return data


class Cluster:
    """A thin handle over the dynamic client. Every request it makes is remembered (request),
    so that an API server that stops answering is reported with what was being done; and every
    request goes through the client's request method, where a 403 becomes Forbidden."""

    def __init__(self, module):
        if not HAS_KUBERNETES:
            module.fail_json(msg=f"the kubernetes Python package is required: {IMPORT_ERROR}")
        auth = {name: module.params.get(name) for name in AUTH_ARG_SPEC}
        self.request = "connecting (discovery of the served APIs)"
        self._server = auth.get("host")
        with self.requesting(self.request):
            self.dynamic = get_api_client(**auth).client
        self.dynamic.request = _explaining_refusals(self.dynamic.request)
        self._resources: dict = {}

    @property
    def server(self) -> str:
        return self.dynamic.configuration.host

    @contextlib.contextmanager
    def requesting(self, request: str):
        """Remember request; turn a connection error into ApiFailure naming it and the
        server."""
        self.request = request
        try:
            yield
        except Exception as error:
            if not _connection_error(error):
                raise  # API errors are the caller's to handle (a 404 often means "absent")
            raise ApiFailure(request, self._address(error), error) from None

    def _address(self, error: BaseException | None = None) -> str | None:
        dynamic = getattr(self, "dynamic", None)
        if dynamic is not None:
            return dynamic.configuration.host
        return (error is not None and server_of(error)) or self._server

    def resource(self, api_version: str, kind: str):
        key = (api_version, kind)
        if key not in self._resources:
            if not self.group_version_served(api_version):
                raise NotServed(api_version, kind)
            try:
                with self.requesting(f"looking up the {kind} ({api_version}) API"):
                    self._resources[key] = self.dynamic.resources.get(
                        api_version=api_version, kind=kind
                    )
            except ResourceNotFoundError:
                raise NotServed(api_version, kind) from None
        return self._resources[key]

    def group_version_served(self, api_version: str) -> bool:
        """Whether the server serves the group version, asked without dropping the discovery
        cache: a lookup that misses makes the dynamic client invalidate its cache and rediscover
        every group it needs (a few requests in every module call that asks about a kind whose
        operator is absent, such as PackageManifest). A group version in the cache is taken as
        served (a kind gone since is still found missing by the lookup); any other costs one
        GET of its discovery document."""
        group, _slash, version = api_version.rpartition("/")
        if not group:
            return True  # the core group
        cached = self.dynamic.resources.parse_api_groups(request_resources=False)
        if version in (cached.get("apis") or {}).get(group, {}):
            return True
        from kubernetes.dynamic.exceptions import NotFoundError

        try:
            with self.requesting(f"asking whether the API server serves {api_version}"):
                self.dynamic.request("GET", f"/apis/{group}/{version}")
        except NotFoundError:
            return False
        return True

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None):
        """The object as a dict, or None when it does not exist."""
        from kubernetes.dynamic.exceptions import NotFoundError

        resource = self.resource(api_version, kind)
        where = f"{namespace}/" if namespace and resource.namespaced else ""
        try:
            with self.requesting(f"reading {kind} {where}{name}"):
                found = resource.get(
                    name=name,
                    namespace=namespace if resource.namespaced else None,
                    serializer=_as_read,
                )
        except NotFoundError:
            return None
        return found

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[dict]:
        resource = self.resource(api_version, kind)
        where = f" in {namespace}" if namespace and resource.namespaced else ""
        which = f" matching {label_selector}" if label_selector else ""
        with self.requesting(f"listing {kind}{where}{which}"):
            found = resource.get(
                namespace=namespace if resource.namespaced else None,
                label_selector=label_selector,
                serializer=_as_read,
            )
        return found.get("items") or []

    def apply(self, obj: dict, dry_run: bool = False) -> dict:
        """Server-side apply obj with the collection's field manager; the live object (with
        dry_run, the object the API server would store, nothing written)."""
        resource = self.resource(obj["apiVersion"], obj["kind"])
        metadata = obj["metadata"]
        where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
        verb = "dry-run applying" if dry_run else "applying"
        with self.requesting(f"{verb} {obj['kind']} {where}{metadata['name']}"):
            return self.dynamic.server_side_apply(
                resource,
                body=obj,
                namespace=metadata.get("namespace"),
                field_manager=FIELD_MANAGER,
                force_conflicts=True,
                dry_run="All" if dry_run else None,
                serializer=_as_read,
            )

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        """Delete one object; one that is already gone is what was asked."""
        from kubernetes.dynamic.exceptions import NotFoundError

        where = f"{namespace}/" if namespace else ""
        try:
            with self.requesting(f"deleting {kind} {where}{name}"):
                self.resource(api_version, kind).delete(name=name, namespace=namespace)
        except NotFoundError:
            return

    def patch(self, api_version: str, kind: str, name: str, namespace: str | None, body: dict):
        """A JSON merge patch of one object."""
        where = f"{namespace}/" if namespace else ""
        with self.requesting(f"patching {kind} {where}{name}"):
            return self.resource(api_version, kind).patch(
                body=body,
                name=name,
                namespace=namespace,
                content_type="application/merge-patch+json",
            )

    def log(
        self,
        name: str,
        namespace: str,
        container: str,
        tail_lines: int | None = None,
        previous: bool = False,
        timeout: float = 30,
    ) -> str:
        """The log of one container of a pod (its last tail_lines lines; the previous run's)."""
        query = [("container", container)]
        if tail_lines:
            query.append(("tailLines", tail_lines))
        if previous:
            query.append(("previous", "true"))
        with self.requesting(f"reading the log of {namespace}/{name} {container}"):
            response = self.resource("v1", "Pod").log.get(
                name=name,
                namespace=namespace,
                query_params=query,
                serialize=False,
                _request_timeout=timeout,
            )
        return response.data.decode("utf-8", errors="replace")


def list_if_served(
    cluster, api_version: str, kind: str, namespace=None, label_selector=None
) -> list[dict] | None:
    """cluster.list, or None when the API server does not serve the kind (its operator is not
    installed, so there are no such objects)."""
    try:
        return cluster.list(api_version, kind, namespace, label_selector)
    except NotServed:
        return None


def get_if_served(cluster, api_version: str, kind: str, name: str, namespace=None) -> dict | None:
    """cluster.get, or None when the kind is not served (no such object either)."""
    try:
        return cluster.get(api_version, kind, name, namespace)
    except NotServed:
        return None


@contextlib.contextmanager
def failing_clearly(module, cluster=None, so_far=dict, **result):
    """Inside the block, a refused request (Forbidden), an API server that stops answering
    (ApiFailure) or one that answers an error nothing handled ends the module with a message
    naming the request and the server instead of a traceback, with the result entries of
    so_far() (what was done until then) and result (callables are called then)."""

    def reported() -> dict:
        entries = {key: value() if callable(value) else value for key, value in result.items()}
        return {**so_far(), **entries}

    try:
        yield
    except Exception as error:
        if isinstance(error, Forbidden):  # who may not do what, and the RBAC that allows it
            module.fail_json(msg=str(error), **reported())
        elif isinstance(error, ApiFailure) or _api_status_error(error) or _connection_error(error):
            failure = error
            if not isinstance(error, ApiFailure):
                request = getattr(cluster, "request", None) or "talking to it"
                server = cluster._address(error) if cluster is not None else server_of(error)
                failure = ApiFailure(request, server, error)
            module.fail_json(
                msg=str(failure),
                api_server=failure.server,
                request=failure.request,
                **reported(),
            )
        else:
            raise
