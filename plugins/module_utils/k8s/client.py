"""The API connection of the collection's modules, with kubernetes.core's options and
K8S_AUTH_* environment variables, resource lookup that says clearly when a kind is not
served (its operator is not installed yet), and every request the API server forbids (403)
turned into one message: who may not do what, and the RBAC the collection ships for it."""

from __future__ import annotations

import copy
import functools
import json
import re

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


class Cluster:
    """A thin handle over the dynamic client. Every request it makes (discovery, reads,
    applies, patches, deletes, logs) goes through the client's request method: a 403 there
    becomes Forbidden, in this one place."""

    def __init__(self, module):
        if not HAS_KUBERNETES:
            module.fail_json(msg=f"the kubernetes Python package is required: {IMPORT_ERROR}")
        auth = {name: module.params.get(name) for name in AUTH_ARG_SPEC}
        self.dynamic = get_api_client(**auth).client
        self.dynamic.request = _explaining_refusals(self.dynamic.request)
        self._resources: dict = {}

    @property
    def server(self) -> str:
        return self.dynamic.configuration.host

    def resource(self, api_version: str, kind: str):
        key = (api_version, kind)
        if key not in self._resources:
            try:
                self._resources[key] = self.dynamic.resources.get(
                    api_version=api_version, kind=kind
                )
            except ResourceNotFoundError:
                raise NotServed(api_version, kind) from None
        return self._resources[key]

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None):
        """The object as a dict, or None when it does not exist."""
        from kubernetes.dynamic.exceptions import NotFoundError

        resource = self.resource(api_version, kind)
        try:
            found = resource.get(name=name, namespace=namespace if resource.namespaced else None)
        except NotFoundError:
            return None
        return found.to_dict()

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[dict]:
        resource = self.resource(api_version, kind)
        found = resource.get(
            namespace=namespace if resource.namespaced else None, label_selector=label_selector
        )
        return found.to_dict().get("items") or []

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
