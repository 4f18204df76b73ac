"""The API connection of the collection's modules, with kubernetes.core's options and
K8S_AUTH_* environment variables, and resource lookup that says clearly when a kind is not
served (its operator is not installed yet)."""

from __future__ import annotations

import copy

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


class Cluster:
    """A thin handle over the dynamic client."""

    def __init__(self, module):
        if not HAS_KUBERNETES:
            module.fail_json(msg=f"the kubernetes Python package is required: {IMPORT_ERROR}")
        auth = {name: module.params.get(name) for name in AUTH_ARG_SPEC}
        self.dynamic = get_api_client(**auth).client
        self._resources: dict = {}

    @property
    def server(self) -> str:
        return self.dynamic.configuration.host

    def resource(self, api_version: str, kind: str):
        key = (api_version, kind)
        if key not in self._resources:
            if not self.group_version_served(api_version):
                raise NotServed(api_version, kind)
            try:
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
            self.dynamic.request("GET", f"/apis/{group}/{version}")
        except NotFoundError:
            return False
        return True

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
