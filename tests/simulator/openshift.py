"""OpenShift's own configuration API, as the cluster-version and config operators keep it.

- ClusterVersion `version`: status.desired.version and a Completed history entry for the release
  in the knob `openshift.version`; with the knob set to None there is no ClusterVersion, as on a
  Kubernetes cluster that is not OpenShift.
- Infrastructure `cluster`: status.controlPlaneTopology and infrastructureTopology from the knob
  `openshift.topology` (SingleReplica for single-node OpenShift).
- The Namespaces every OpenShift cluster has that the collection writes into or reads from:
  `openshift-config-managed` (the console's dashboards) and `openshift-monitoring` (the
  cluster monitoring settings), made by the cluster-version operator from the release payload.
- ImageStream `openshift/driver-toolkit`, as the cluster-version operator publishes it: a tag
  for the RHCOS build the fake nodes run (nodes.RHCOS) and `latest`; with the knob
  `openshift.driver_toolkit_missing` true, `latest` only (a build the Driver Toolkit has no image
  for: gpu-operator#990's failed builds).

The kinds are served from CRDs the harness loads (tests/harness/crds/); when they are not
served, this controller does nothing.
"""

from __future__ import annotations

from kubernetes.client.rest import ApiException

from tests.simulator.core import World, create_if_absent, now, replace_status
from tests.simulator.nodes import RHCOS

GROUP, VERSION = "config.openshift.io", "v1"
PLATFORM_NAMESPACES = ("openshift-config-managed", "openshift-monitoring")


def _get(world: World, plural: str, name: str) -> dict | None:
    try:
        return world.custom.get_cluster_custom_object(GROUP, VERSION, plural, name)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


class ClusterVersionOperator:
    name = "cluster-version-operator"

    def __init__(self):
        self._namespaces_made = False

    def reconcile(self, world: World) -> None:
        knobs = world.knobs.get("openshift") or {}
        self._cluster_version(world, knobs.get("version"))
        self._infrastructure(world, knobs.get("topology") or "HighlyAvailable")
        if knobs.get("version") is not None:
            self._platform_namespaces(world)
            self._driver_toolkit(world, bool(knobs.get("driver_toolkit_missing")))

    def _platform_namespaces(self, world: World) -> None:
        """Once per simulator: they are the payload's, nothing here deletes them."""
        if self._namespaces_made:
            return
        for name in PLATFORM_NAMESPACES:
            create_if_absent(
                world.core.create_namespace,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
            )
        self._namespaces_made = True

    def _ensure(self, world: World, plural: str, kind: str, name: str, spec: dict) -> dict | None:
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": kind,
            "metadata": {"name": name},
            "spec": spec,
        }
        # Read first: a create that the API server refuses as a conflict costs it a write's work,
        # in every tick.
        try:
            live = _get(world, plural, name)
            if live is not None:
                return live
            create_if_absent(
                world.custom.create_cluster_custom_object, GROUP, VERSION, plural, body
            )
        except ApiException as error:
            if error.status == 404:  # the kind is not served
                return None
            raise
        return _get(world, plural, name)

    def _cluster_version(self, world: World, version: str | None) -> None:
        if version is None:
            try:
                world.custom.delete_cluster_custom_object(
                    GROUP, VERSION, "clusterversions", "version"
                )
            except ApiException as error:
                if error.status != 404:
                    raise
            return
        live = self._ensure(
            world, "clusterversions", "ClusterVersion", "version", {"channel": "stable-4.20"}
        )
        if live is None or ((live.get("status") or {}).get("desired") or {}).get("version") == str(
            version
        ):
            return
        stamp = now()
        live["status"] = {
            "desired": {"version": str(version)},
            "history": [
                {
                    "version": str(version),
                    "state": "Completed",
                    "startedTime": stamp,
                    "completionTime": stamp,
                    "verified": False,
                }
            ],
            "observedGeneration": live["metadata"].get("generation", 1),
        }
        replace_status(world, GROUP, VERSION, "clusterversions", live)

    def _infrastructure(self, world: World, topology: str) -> None:
        live = self._ensure(world, "infrastructures", "Infrastructure", "cluster", {})
        if live is None:
            return
        status = {"controlPlaneTopology": topology, "infrastructureTopology": topology}
        if {k: (live.get("status") or {}).get(k) for k in status} != status:
            live["status"] = {**(live.get("status") or {}), **status}
            replace_status(world, GROUP, VERSION, "infrastructures", live)

    @staticmethod
    def _driver_toolkit(world: World, missing: bool) -> None:
        """The ImageStream openshift/driver-toolkit with the fake nodes' RHCOS build as a tag
        (not when missing) and latest."""
        tags = ([] if missing else [RHCOS]) + ["latest"]
        body = {
            "apiVersion": "image.openshift.io/v1",
            "kind": "ImageStream",
            "metadata": {"name": "driver-toolkit", "namespace": "openshift"},
            "spec": {"tags": [{"name": tag} for tag in tags]},
        }
        try:
            live = world.custom.get_namespaced_custom_object(
                "image.openshift.io", "v1", "openshift", "imagestreams", "driver-toolkit"
            )
        except ApiException as error:
            if error.status != 404:
                raise
            create_if_absent(
                world.core.create_namespace,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "openshift"}},
            )
            try:
                world.custom.create_namespaced_custom_object(
                    "image.openshift.io", "v1", "openshift", "imagestreams", body
                )
            except ApiException as error:
                if error.status not in (404, 409):  # not served, or raced
                    raise
            return
        if live.get("spec") != body["spec"]:
            world.custom.patch_namespaced_custom_object(
                "image.openshift.io",
                "v1",
                "openshift",
                "imagestreams",
                "driver-toolkit",
                {"spec": body["spec"]},
            )
