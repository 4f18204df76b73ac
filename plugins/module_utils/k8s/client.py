"""The API connection of the collection's modules, with kubernetes.core's options and
K8S_AUTH_* environment variables, resource lookup that says clearly when a kind is not
served (its operator is not installed yet), every request the API server forbids (403)
turned into one message (who may not do what, and the RBAC the collection ships for it), and
an API server that stops answering reported with the request it was asked."""

from __future__ import annotations

import contextlib
import copy
import json
import re
import ssl

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s import api, progress
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.api import (
    ApiError,
    SettingsError,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.kinds import RESOURCES

FIELD_MANAGER = "gpudirect.rdma"

# The RBAC the collection ships (rbac/ at the collection root): what a user needs to run
# site.yml, verify.yml and uninstall.yml without being a cluster administrator.
RBAC_FILE = "rbac/gpudirect-rdma-installer.yaml"
RBAC_BINDING_FILE = "rbac/gpudirect-rdma-installer-binding.yaml"
# What drift.yml needs: reads only.
VIEWER_RBAC_FILE = "rbac/gpudirect-rdma-viewer.yaml"
VIEWER_ROLE = "gpudirect-rdma-viewer"
CLUSTER_ROLE = "gpudirect-rdma-installer"
VERIFY_ROLE = "gpudirect-rdma-verify"

# How the API server's RBAC authorizer words a refusal.
_REFUSAL = re.compile(
    r'User "(?P<user>[^"]*)" cannot (?P<verb>\S+) resource "(?P<resource>[^"]+)"'
    r'(?: in API group "(?P<group>[^"]*)")?'
    r'(?: in the namespace "(?P<namespace>[^"]*)"| at the cluster scope)?'
)


# What every module that talks to the cluster takes besides kubernetes.core's connection options
# (doc_fragments/cluster.py documents them; the gpudirect_rdma_<option> variables give them).
CLUSTER_OPTIONS = {
    "request_timeout": {"type": "int", "default": int(api.REQUEST_TIMEOUT)},
    "progress_interval": {"type": "int", "default": progress.EVERY},
}


def argument_spec(**extra) -> dict:
    """kubernetes.core's connection options, the collection's own (CLUSTER_OPTIONS), plus the
    module's."""
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    spec.update(copy.deepcopy(CLUSTER_OPTIONS))
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
            self.refused = (
                f"forbidden: the API server refused to {self.verb} {self.resource}: "
                f"{self.server_message}"
            )
            super().__init__(self.refused)
            return
        # What was refused, without what to grant (drift.yml names its own read-only role).
        self.refused = (
            f"forbidden: the API server does not allow {who} to {self.verb} {self.resource}"
            f"{where} ({self.server_message})"
        )
        super().__init__(
            f"{self.refused}. gpudirect.rdma needs the ClusterRole "
            f"{CLUSTER_ROLE} and, in the namespace of the bandwidth test's pods, the Role "
            f"{VERIFY_ROLE}: both are in {RBAC_FILE} in the collection (oc apply -n "
            f"<that namespace> -f {RBAC_FILE}); bind them to this user, as "
            f"{RBAC_BINDING_FILE} shows"
        )


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
    return str(cause)


def server_of(error: BaseException) -> str | None:
    """The API server a connection error names (api.Unreachable and ApiFailure carry it)."""
    if isinstance(getattr(error, "server", None), str):
        return error.server
    return None


def _connection_error(error: BaseException) -> bool:
    """No HTTP answer at all: refused, reset, timed out, TLS."""
    if isinstance(error, (NotServed, ApiFailure)) or getattr(error, "status", None) is not None:
        return False
    # Not any OSError: the collection's own TimeoutError (objects still there after a wait)
    # is no connection error; api.Unreachable is a ConnectionError.
    return isinstance(error, (ConnectionError, ssl.SSLError))


def _api_status_error(error: BaseException) -> bool:
    """An answer with an error status (kubernetes ApiException, DynamicApiError)."""
    return getattr(error, "status", None) is not None and hasattr(error, "reason")


class Resource:
    """Where the objects of one kind are served."""

    def __init__(self, api_version: str, kind: str, plural: str, namespaced: bool):
        self.api_version = api_version
        self.kind = kind
        self.plural = plural
        self.namespaced = namespaced

    def path(self, namespace: str | None = None, name: str | None = None, sub: str = "") -> str:
        root = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        where = f"/namespaces/{namespace}" if namespace and self.namespaced else ""
        return (
            f"{root}{where}/{self.plural}"
            + (f"/{name}" if name else "")
            + (f"/{sub}" if sub else "")
        )


def _absent(error: ApiError, name: str) -> bool:
    """A 404 that says the object is not there; any other 404 says the API server does not
    serve the kind at all (a plain '404 page not found')."""
    status = error.status_details() or {}
    return status.get("reason") == "NotFound" and (status.get("details") or {}).get("name") == name


class Cluster:
    """The requests of the collection's modules (api.Api underneath). Every request it makes is
    remembered (request), so that an API server that stops answering is reported with what was
    being done; a 403 becomes Forbidden."""

    def __init__(self, module):
        auth = {name: module.params.get(name) for name in AUTH_ARG_SPEC}
        self.request = "connecting"
        self._server = auth.get("host")
        timeout = module.params.get("request_timeout") or api.REQUEST_TIMEOUT
        self.api = api.Api(api.settings(auth), request_timeout=float(timeout))
        self._resources: dict = {}

    @property
    def server(self) -> str:
        return self.api.server

    def close(self) -> None:
        """Close the calling thread's connection."""
        self.api.close()

    def release(self) -> None:
        """Give the calling thread's connection to the next thread that needs one."""
        self.api.release()

    @contextlib.contextmanager
    def requesting(self, request: str):
        """Remember request; turn a connection error into ApiFailure naming it and the
        server, and a 403 into Forbidden."""
        self.request = request
        try:
            yield
        except ApiError as error:
            if error.status == 403:
                raise Forbidden(error, error.method, error.path) from None
            raise  # API errors are the caller's to handle (a 404 often means "absent")
        except Exception as error:
            if not _connection_error(error):
                raise
            raise ApiFailure(request, self._address(error), error) from None

    def _address(self, error: BaseException | None = None) -> str | None:
        connection = getattr(self, "api", None)
        if connection is not None:
            return connection.server
        return (error is not None and server_of(error)) or self._server

    def resource(self, api_version: str, kind: str) -> Resource:
        """The kind's resource: from kinds.RESOURCES, else from the API server's discovery
        document of its group version (NotServed when it serves no such kind)."""
        key = (api_version, kind)
        if key not in self._resources:
            if key in RESOURCES:
                self._resources[key] = Resource(api_version, kind, *RESOURCES[key])
            elif (api_version, "") not in self._resources:  # its group version's, once
                self._resources[(api_version, "")] = None
                self._discover(api_version)
            if key not in self._resources:
                raise NotServed(api_version, kind)
        return self._resources[key]

    def _discover(self, api_version: str) -> None:
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        try:
            with self.requesting(f"asking whether the API server serves {api_version}"):
                found = self.api.request("GET", path)
        except ApiError as error:
            if error.status == 404:
                return
            raise
        for entry in found.get("resources") or []:
            if "/" not in entry.get("name", "/"):
                key = (api_version, entry.get("kind"))
                self._resources.setdefault(
                    key, Resource(api_version, entry["kind"], entry["name"], entry["namespaced"])
                )

    def _call(self, request: str, resource: Resource, method: str, path: str, **kwargs):
        """One request; a 404 that is no object's answer means the kind is not served."""
        try:
            with self.requesting(request):
                return self.api.request(method, path, **kwargs)
        except ApiError as error:
            name = path.rsplit("/", 1)[-1]
            if error.status == 404 and not _absent(error, name):
                raise NotServed(resource.api_version, resource.kind) from None
            raise

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None):
        """The object as a dict, or None when it does not exist."""
        resource = self.resource(api_version, kind)
        where = f"{namespace}/" if namespace and resource.namespaced else ""
        try:
            return self._call(
                f"reading {kind} {where}{name}", resource, "GET", resource.path(namespace, name)
            )
        except ApiError as error:
            if error.status == 404:
                return None
            raise

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
        query = {"labelSelector": label_selector} if label_selector else None
        found = self._call(
            f"listing {kind}{where}{which}",
            resource,
            "GET",
            resource.path(namespace),
            query=query,
        )
        return found.get("items") or []

    def apply(self, obj: dict, dry_run: bool = False) -> dict:
        """Server-side apply obj with the collection's field manager; the live object (with
        dry_run, the object the API server would store, nothing written)."""
        resource = self.resource(obj["apiVersion"], obj["kind"])
        metadata = obj["metadata"]
        where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
        verb = "dry-run applying" if dry_run else "applying"
        query = {"fieldManager": FIELD_MANAGER, "force": "true"}
        if dry_run:
            query["dryRun"] = "All"
        return self._call(
            f"{verb} {obj['kind']} {where}{metadata['name']}",
            resource,
            "PATCH",
            resource.path(metadata.get("namespace"), metadata["name"]),
            query=query,
            body=obj,
            content_type="application/apply-patch+yaml",
        )

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        """Delete one object; one that is already gone is what was asked."""
        resource = self.resource(api_version, kind)
        where = f"{namespace}/" if namespace else ""
        try:
            self._call(
                f"deleting {kind} {where}{name}", resource, "DELETE", resource.path(namespace, name)
            )
        except ApiError as error:
            if error.status != 404:
                raise

    def patch(self, api_version: str, kind: str, name: str, namespace: str | None, body: dict):
        """A JSON merge patch of one object."""
        resource = self.resource(api_version, kind)
        where = f"{namespace}/" if namespace else ""
        return self._call(
            f"patching {kind} {where}{name}",
            resource,
            "PATCH",
            resource.path(namespace, name),
            body=body,
            content_type="application/merge-patch+json",
        )

    def log(
        self,
        name: str,
        namespace: str,
        container: str | None = None,
        tail_lines: int | None = None,
        previous: bool = False,
        timeout: float = 30,
    ) -> str:
        """The log of one container of a pod (its last tail_lines lines; the previous run's);
        without container, of the pod's only container."""
        query = [("container", container)] if container else []
        if tail_lines:
            query.append(("tailLines", tail_lines))
        if previous:
            query.append(("previous", "true"))
        pods = self.resource("v1", "Pod")
        which = f" {container}" if container else ""
        with self.requesting(f"reading the log of {namespace}/{name}{which}"):
            answer = self.api.request(
                "GET", pods.path(namespace, name, "log"), query=query, timeout=timeout, raw=True
            )
        return answer.decode("utf-8", errors="replace")


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
        elif isinstance(error, SettingsError):
            module.fail_json(msg=f"cannot connect to the API server: {error}", **reported())
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
