"""OLM and the marketplace operator, played on a bare API server.

- Marketplace: the `redhat-operators` and `certified-operators` CatalogSources exist in
  `openshift-marketplace`; every CatalogSource reports `READY` (or `TRANSIENT_FAILURE` by knob).
- Subscription: resolved against the catalog (real CSVs; the channels and edges of the cluster's
  OpenShift minor, catalog.py); an InstallPlan is created for the bundle (approved at once with
  `installPlanApproval: Automatic`, left `RequiresApproval` with `Manual` until somebody sets
  `spec.approved: true`); the Subscription status follows (`UpgradePending`, then
  `AtLatestKnown` with `installedCSV`). Once installed, the channel's successor of the
  installed CSV gets the next InstallPlan (an upgrade); a pending plan freezes the
  Subscription, a deleted one is resolved again.
- InstallPlan: once approved, it creates the bundle's ClusterServiceVersion in the
  Subscription's namespace (`spec.replaces`: the CSV it upgrades) and turns `Complete`.
- ClusterServiceVersion: checks the namespace's OperatorGroups against the CSV's installModes as
  OLM does (`NoOperatorGroup`, `TooManyOperatorGroups`, `UnsupportedOperatorGroup`), then walks
  `Pending`, `InstallReady`, `Installing`, `Succeeded`; an OperatorCondition per CSV, whose
  `Upgradeable: False` holds a replacing CSV `Pending`; the replaced CSV goes `Replacing`,
  `Deleting`, then away.
- OperatorGroup: `status.namespaces` from `spec.targetNamespaces`.
- Webhooks: for a Succeeded CSV, one ValidatingWebhookConfiguration per webhook definition
  whose path the simulator serves (admission.py), pointing at the simulator's HTTPS endpoint
  instead of the operator's Service, with OLM's owner labels; removed once the CSV is gone.
  Without an endpoint (the simulator started without --webhook-port) none is registered.
"""

from __future__ import annotations

import copy
import secrets
import string

from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.simulator.admission import SERVED_PATHS
from tests.simulator.catalog import CATALOG_PACKAGES, MARKETPLACE_NAMESPACE, Catalog
from tests.simulator.core import (
    DelayGate,
    World,
    create_if_absent,
    list_cluster,
    now,
    replace_status,
)

GROUP = "operators.coreos.com"
V1ALPHA1 = "v1alpha1"

_CSV_PHASES = ("Pending", "InstallReady", "Installing", "Succeeded")
_PHASE_REASONS = {
    "Pending": ("RequirementsUnknown", "requirements not yet checked"),
    "InstallReady": ("AllRequirementsMet", "all requirements found, attempting install"),
    "Installing": ("InstallSucceeded", "waiting for install components to report healthy"),
    "Succeeded": ("InstallSucceeded", "install strategy completed with no errors"),
}
# Reasons OLM leaves behind a Failed CSV that it retries once the OperatorGroups change.
_OPERATOR_GROUP_REASONS = {"NoOperatorGroup", "TooManyOperatorGroups", "UnsupportedOperatorGroup"}


def _suffix() -> str:
    return "".join(secrets.choice(string.ascii_lowercase + string.digits) for _position in range(5))


def _condition(type_: str, status: str, reason: str = "", message: str = "") -> dict:
    condition = {"type": type_, "status": status, "lastTransitionTime": now()}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def _owner(obj: dict, controller: bool = False) -> dict:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": False,
    }


def _package_label(package: str, namespace: str) -> str:
    return f"operators.coreos.com/{package}.{namespace}"


def installed_csv(world: World, package: str, namespace: str | None = None) -> dict | None:
    """The Succeeded CSV of a package (told by OLM's `operators.coreos.com/<package>.<namespace>`
    label or the CSV's name), else the one being replaced, or None. With several (a cluster
    should have one; other tests' namespaces may hold more), the one in namespace (default: the
    package's own name) when there is one, else the oldest. Reads the CSVs the tick has listed
    already."""
    of_package = [
        csv
        for csv in list_cluster(world, GROUP, V1ALPHA1, "clusterserviceversions", reuse=True)
        if csv["metadata"]["name"].startswith(f"{package}.v")
        or any(
            label.startswith(f"operators.coreos.com/{package}.")
            for label in csv["metadata"].get("labels") or {}
        )
    ]
    # While a successor installs, the replaced CSV's operator still runs.
    found = [c for c in of_package if (c.get("status") or {}).get("phase") == "Succeeded"] or [
        c for c in of_package if (c.get("status") or {}).get("phase") == "Replacing"
    ]
    if not found:
        return None
    own = [csv for csv in found if csv["metadata"]["namespace"] == (namespace or package)]
    return min(
        own or found,
        key=lambda c: (c["metadata"].get("creationTimestamp") or "", c["metadata"]["namespace"]),
    )


def installed_namespace(world: World, package: str) -> str | None:
    """Where the operator of a package runs: the namespace of its installed_csv, or None."""
    csv = installed_csv(world, package)
    return csv["metadata"]["namespace"] if csv else None


def installed_version(world: World, package: str) -> tuple[int, ...] | None:
    """The release of a package's installed_csv as numbers (26.7.0-1 -> (26, 7, 0)), or None."""
    csv = installed_csv(world, package)
    if csv is None:
        return None
    release = str((csv.get("spec") or {}).get("version") or "0").split("-", maxsplit=1)[0]
    return tuple(int(part) for part in release.split(".") if part.isdigit())


def _named(items: list[dict], namespace: str, name: str) -> dict | None:
    """The object of that namespace and name among items, if any."""
    return next(
        (
            i
            for i in items
            if i["metadata"].get("namespace") == namespace and i["metadata"]["name"] == name
        ),
        None,
    )


class Marketplace:
    name = "marketplace"

    def __init__(self) -> None:
        self._ensured = False

    def _ensure_default_sources(self, world: World) -> None:
        create_if_absent(world.core.create_namespace, {"metadata": {"name": MARKETPLACE_NAMESPACE}})
        for name in CATALOG_PACKAGES:
            body = {
                "apiVersion": f"{GROUP}/{V1ALPHA1}",
                "kind": "CatalogSource",
                "metadata": {"name": name, "namespace": MARKETPLACE_NAMESPACE},
                "spec": {
                    "sourceType": "grpc",
                    "displayName": name.replace("-", " ").title(),
                    "publisher": "Red Hat",
                },
            }
            create_if_absent(
                world.custom.create_namespaced_custom_object,
                GROUP,
                V1ALPHA1,
                MARKETPLACE_NAMESPACE,
                "catalogsources",
                body,
            )
        self._ensured = True

    def reconcile(self, world: World) -> None:
        if not self._ensured:
            self._ensure_default_sources(world)
        unhealthy = set(world.knobs["olm"]["unhealthy_catalogs"])
        # Kept for the tick (list_cluster), with the state written here: the Subscriptions read it.
        for source in list_cluster(world, GROUP, V1ALPHA1, "catalogsources"):
            state = "TRANSIENT_FAILURE" if source["metadata"]["name"] in unhealthy else "READY"
            connection = (source.get("status") or {}).get("connectionState") or {}
            if connection.get("lastObservedState") == state:
                continue
            source["status"] = {
                "connectionState": {
                    "lastObservedState": state,
                    "lastConnect": now(),
                    "address": "{name}.{namespace}.svc:50051".format(**source["metadata"]),
                }
            }
            replace_status(world, GROUP, V1ALPHA1, "catalogsources", source)


class SubscriptionController:
    name = "olm-subscriptions"

    def __init__(self, catalog: Catalog, gate: DelayGate) -> None:
        self.catalog = catalog
        self.gate = gate

    def _serves(self, source: dict, package: str) -> bool:
        """The two OpenShift catalogs serve their own packages; any other (a mirror) all."""
        served = CATALOG_PACKAGES.get(source["metadata"]["name"])
        if source["metadata"]["namespace"] == MARKETPLACE_NAMESPACE and served is not None:
            return package in served
        return True

    def _set_status(self, world: World, sub: dict, status: dict) -> None:
        current = sub.get("status") or {}
        if {k: v for k, v in current.items() if k != "lastUpdated"} == status:
            return
        sub["status"] = {**status, "lastUpdated": now()}
        replace_status(world, GROUP, V1ALPHA1, "subscriptions", sub)

    def reconcile(self, world: World) -> None:
        subs = world.custom.list_cluster_custom_object(GROUP, V1ALPHA1, "subscriptions")
        for sub in subs["items"]:
            self._reconcile_one(world, sub)

    def _reconcile_one(self, world: World, sub: dict) -> None:
        spec = sub["spec"]
        status = {k: v for k, v in (sub.get("status") or {}).items() if k != "lastUpdated"}
        package = spec["name"]

        # The tick's list (the Marketplace lists them first), not a read per Subscription.
        source = _named(
            list_cluster(world, GROUP, V1ALPHA1, "catalogsources", reuse=True),
            spec["sourceNamespace"],
            spec["source"],
        )
        healthy = source is not None and (
            (source.get("status") or {}).get("connectionState", {}).get("lastObservedState")
            == "READY"
        )
        if not healthy:
            problem = "missing" if source is None else "unhealthy"
            self._set_status(
                world,
                sub,
                {
                    **{k: v for k, v in status.items() if k not in ("conditions", "catalogHealth")},
                    "catalogHealth": [],
                    "conditions": [
                        _condition(
                            "CatalogSourcesUnhealthy",
                            "True",
                            "UnhealthyCatalogSourceFound",
                            f"targeted catalogsource {spec['sourceNamespace']}/{spec['source']} "
                            f"{problem}",
                        )
                    ],
                },
            )
            return

        if status.get("installPlanRef"):
            if not self._follow_install_plan(world, sub, status):
                return
            status = {k: v for k, v in (sub.get("status") or {}).items() if k != "lastUpdated"}

        minor = _openshift_minor(world)
        installed = status.get("installedCSV")
        if installed:
            # Upgrades: the channel's entry that replaces or skips the installed CSV, if any.
            bundle = self.catalog.successor(package, spec.get("channel"), installed, minor)
            if bundle is None or bundle.csv_name == installed:
                self._set_status(world, sub, {**status, "state": "AtLatestKnown"})
                return
            if self.gate.due(
                sub["metadata"]["uid"], f"resolve {bundle.csv_name}", world.knobs["delay_seconds"]
            ):
                self._create_plan(world, sub, status, bundle, replaces=installed)
            return

        bundle = None
        if package not in world.knobs["olm"]["unresolvable_packages"] and self._serves(
            source, package
        ):
            bundle = self.catalog.resolve(
                package, spec.get("channel"), spec.get("startingCSV"), minor
            )
        if bundle is None:
            wanted = f"channel {spec.get('channel') or '(default)'} of package {package}"
            if spec.get("startingCSV"):
                wanted = f"{spec['startingCSV']} in {wanted}"
            self._set_status(
                world,
                sub,
                {
                    "catalogHealth": [],
                    "conditions": [
                        _condition(
                            "ResolutionFailed",
                            "True",
                            "ConstraintsNotSatisfiable",
                            f"constraints not satisfiable: no operators found in {wanted} in "
                            f"the catalog referenced by subscription {sub['metadata']['name']}",
                        )
                    ],
                },
            )
            return
        if not self.gate.due(sub["metadata"]["uid"], "resolve", world.knobs["delay_seconds"]):
            return
        self._create_plan(world, sub, status, bundle, replaces="")

    def _create_plan(self, world: World, sub: dict, status: dict, bundle, replaces: str) -> None:
        """An InstallPlan for the bundle (approved at once unless the approval is Manual); the
        Subscription's currentCSV names it, its state is UpgradePending."""
        spec = sub["spec"]
        namespace = sub["metadata"]["namespace"]
        approval = spec.get("installPlanApproval") or "Automatic"
        generation = int(status.get("installPlanGeneration", 0)) + 1
        # OLM's ensureInstallPlan: a plan of this generation already there is the one (made by
        # a tick whose Subscription status write then lost a race), not a reason for another.
        plan = _plan_of(world, sub, generation) or world.custom.create_namespaced_custom_object(
            GROUP,
            V1ALPHA1,
            namespace,
            "installplans",
            {
                "apiVersion": f"{GROUP}/{V1ALPHA1}",
                "kind": "InstallPlan",
                "metadata": {
                    "name": f"install-{_suffix()}",
                    "namespace": namespace,
                    "labels": {_package_label(bundle.package, namespace): ""},
                    "ownerReferences": [_owner(sub)],
                },
                "spec": {
                    "approval": approval,
                    "approved": approval == "Automatic",
                    "clusterServiceVersionNames": [bundle.csv_name],
                    "generation": generation,
                },
            },
        )
        if not plan.get("status"):
            plan["status"] = {
                "phase": "RequiresApproval" if approval == "Manual" else "Installing",
                "catalogSources": [spec["source"]],
                "bundleLookups": [
                    {
                        "identifier": bundle.csv_name,
                        "path": f"simulated/{bundle.package}:{bundle.version}",
                        "catalogSourceRef": {
                            "name": spec["source"],
                            "namespace": spec["sourceNamespace"],
                        },
                        "replaces": replaces,
                    }
                ],
            }
            plan = replace_status(world, GROUP, V1ALPHA1, "installplans", plan)
        self._set_status(
            world,
            sub,
            {
                **{k: v for k, v in status.items() if k not in ("conditions",)},
                "catalogHealth": [],
                "currentCSV": bundle.csv_name,
                "installPlanGeneration": plan["spec"]["generation"],
                "installPlanRef": {
                    "apiVersion": f"{GROUP}/{V1ALPHA1}",
                    "kind": "InstallPlan",
                    "name": plan["metadata"]["name"],
                    "namespace": namespace,
                    "resourceVersion": plan["metadata"]["resourceVersion"],
                    "uid": plan["metadata"]["uid"],
                },
                "installplan": {
                    "apiVersion": f"{GROUP}/{V1ALPHA1}",
                    "kind": "InstallPlan",
                    "name": plan["metadata"]["name"],
                    "uuid": plan["metadata"]["uid"],
                },
                "state": "UpgradePending",
                "conditions": [
                    _condition(
                        "InstallPlanPending",
                        "True",
                        "RequiresApproval" if approval == "Manual" else "Installing",
                    )
                ],
            },
        )

    def _follow_install_plan(self, world: World, sub: dict, status: dict) -> bool:
        """The Subscription after its InstallPlan: True when resolution may run (the plan is
        Complete and its CSV installed, or gone), False while it is pending or failed (a
        pending plan freezes the Subscription, as OLM's nothingToUpdate does)."""
        ref = status["installPlanRef"]
        try:
            # From the tick's list of plans; one it lacks is read by name before it counts as
            # gone (it may be newer than the list).
            plan = _named(
                list_cluster(world, GROUP, V1ALPHA1, "installplans", reuse=True),
                ref["namespace"],
                ref["name"],
            ) or world.custom.get_namespaced_custom_object(
                GROUP, V1ALPHA1, ref["namespace"], "installplans", ref["name"]
            )
        except ApiException as error:
            if error.status != 404:
                raise
            # A missing plan clears the reference and resets the state; resolution runs again.
            kept = {
                k: v
                for k, v in status.items()
                if k not in ("installPlanRef", "installplan", "currentCSV", "state", "conditions")
            }
            if status.get("installedCSV"):
                kept["currentCSV"] = status["installedCSV"]
            self._set_status(world, sub, kept)
            return True
        phase = (plan.get("status") or {}).get("phase")
        if phase == "Complete":
            if status.get("installedCSV") == status.get("currentCSV"):
                return True
            self._set_status(
                world,
                sub,
                {
                    **status,
                    "installedCSV": status.get("currentCSV"),
                    "state": "AtLatestKnown",
                    "conditions": [],
                },
            )
        elif phase == "Failed":
            self._set_status(
                world,
                sub,
                {
                    **status,
                    "conditions": [
                        _condition("InstallPlanFailed", "True", "InstallComponentFailed")
                    ],
                },
            )
        return False


def _plan_of(world: World, sub: dict, generation: int) -> dict | None:
    """The Subscription's InstallPlan of a generation, if one exists. (OLM counts generations
    per namespace, for all its Subscriptions together; the simulator counts them per
    Subscription, so the owner tells whose plan it is.)"""
    uid = sub["metadata"]["uid"]
    for plan in list_cluster(world, GROUP, V1ALPHA1, "installplans"):
        owners = plan["metadata"].get("ownerReferences") or []
        if plan["spec"].get("generation") == generation and any(o["uid"] == uid for o in owners):
            return plan
    return None


def _openshift_minor(world: World) -> str | None:
    """The cluster's OpenShift minor (4.20 of 4.20.8), whose certified catalog OLM reads."""
    version = (world.knobs.get("openshift") or {}).get("version")
    return ".".join(str(version).split(".")[:2]) if version else None


def _operator_group_annotations(world: World, namespace: str) -> dict:
    """OLM marks each CSV with the OperatorGroup it was installed under."""
    groups = world.custom.list_namespaced_custom_object(GROUP, "v1", namespace, "operatorgroups")
    if len(groups["items"]) != 1:
        return {}
    group = groups["items"][0]
    targets = (group.get("spec") or {}).get("targetNamespaces") or []
    return {
        "olm.operatorGroup": group["metadata"]["name"],
        "olm.operatorNamespace": namespace,
        "olm.targetNamespaces": ",".join(targets),
    }


class InstallPlanController:
    name = "olm-installplans"

    def __init__(self, catalog: Catalog, gate: DelayGate) -> None:
        self.catalog = catalog
        self.gate = gate

    def reconcile(self, world: World) -> None:
        plans = world.custom.list_cluster_custom_object(GROUP, V1ALPHA1, "installplans")
        for plan in plans["items"]:
            status = plan.get("status") or {}
            if status.get("phase") in ("Complete", "Failed") or not status:
                continue
            if not plan["spec"].get("approved"):
                continue
            if not self.gate.due(plan["metadata"]["uid"], "install", world.knobs["delay_seconds"]):
                continue
            namespace = plan["metadata"]["namespace"]
            replaces = {
                lookup.get("identifier"): lookup.get("replaces")
                for lookup in status.get("bundleLookups") or []
            }
            for csv_name in plan["spec"]["clusterServiceVersionNames"]:
                bundle = self.catalog.bundle(csv_name)
                if bundle is None:
                    continue
                csv = copy.deepcopy(bundle.csv)
                csv.pop("status", None)
                # The new CSV replaces the installed one, also after a skipRange jump.
                csv["spec"].pop("replaces", None)
                if replaces.get(csv_name):
                    csv["spec"]["replaces"] = replaces[csv_name]
                metadata = csv["metadata"]
                csv["metadata"] = {
                    "name": metadata["name"],
                    "namespace": namespace,
                    "annotations": {
                        **(metadata.get("annotations") or {}),
                        **_operator_group_annotations(world, namespace),
                    },
                    "labels": {
                        **(metadata.get("labels") or {}),
                        _package_label(bundle.package, namespace): "",
                    },
                }
                try:
                    world.custom.create_namespaced_custom_object(
                        GROUP, V1ALPHA1, namespace, "clusterserviceversions", csv
                    )
                except ApiException as error:
                    if error.status != 409:
                        raise
            plan["status"] = {
                **status,
                "phase": "Complete",
                "startTime": status.get("startTime", now()),
            }
            replace_status(world, GROUP, V1ALPHA1, "installplans", plan)


def _install_mode(operator_group: dict, namespace: str) -> str:
    targets = [t for t in (operator_group.get("spec") or {}).get("targetNamespaces") or [] if t]
    if not targets:
        return "AllNamespaces"
    if targets == [namespace]:
        return "OwnNamespace"
    if len(targets) == 1:
        return "SingleNamespace"
    return "MultiNamespace"


_MODE_WORDS = {
    "AllNamespaces": "all namespaces",
    "OwnNamespace": "own namespace",
    "SingleNamespace": "one namespace",
    "MultiNamespace": "multiple namespaces",
}


class ClusterServiceVersionController:
    name = "olm-csvs"

    def __init__(self, catalog: Catalog, gate: DelayGate) -> None:
        self.catalog = catalog
        self.gate = gate

    def _operator_group_problem(self, world: World, csv: dict) -> tuple[str, str] | None:
        namespace = csv["metadata"]["namespace"]
        groups = world.custom.list_namespaced_custom_object(
            GROUP, "v1", namespace, "operatorgroups"
        )["items"]
        if not groups:
            return "NoOperatorGroup", "csv in namespace with no operatorgroups"
        if len(groups) > 1:
            return (
                "TooManyOperatorGroups",
                "csv created in namespace with multiple operatorgroups, "
                "can't pick one automatically",
            )
        mode = _install_mode(groups[0], namespace)
        supported = {m["type"]: m["supported"] for m in csv["spec"].get("installModes", [])}
        if not supported.get(mode):
            return (
                "UnsupportedOperatorGroup",
                f"InstallModeType not supported, cannot configure to watch {_MODE_WORDS[mode]}",
            )
        return None

    def _package(self, csv: dict) -> str | None:
        bundle = next(
            (b for b in self.catalog.bundles if b.csv_name == csv["metadata"]["name"]), None
        )
        return bundle.package if bundle else None

    def reconcile(self, world: World) -> None:
        csvs = list_cluster(world, GROUP, V1ALPHA1, "clusterserviceversions")
        conditions = {
            (c["metadata"]["namespace"], c["metadata"]["name"])
            for c in list_cluster(world, GROUP, "v2", "operatorconditions")
        }
        for csv in csvs:
            if (csv["metadata"]["namespace"], csv["metadata"]["name"]) not in conditions:
                self._condition_for(world, csv)
            status = csv.get("status") or {}
            phase = status.get("phase")
            replacer = next(
                (
                    c
                    for c in csvs
                    if c["metadata"]["namespace"] == csv["metadata"]["namespace"]
                    and (c.get("spec") or {}).get("replaces") == csv["metadata"]["name"]
                ),
                None,
            )
            # A CSV is replaced once it has installed (an intermediate CSV of a chain installs
            # first); its successor goes on meanwhile.
            if replacer is not None and phase in ("Succeeded", "Replacing", "Deleting"):
                self._replaced_by(world, csv, replacer)
                continue
            if phase == "Deleting":
                self._delete(world, csv)
                continue
            if phase == "Succeeded":
                continue
            if phase == "Failed" and status.get("reason") not in _OPERATOR_GROUP_REASONS:
                continue
            problem = self._operator_group_problem(world, csv)
            if problem is None and self._package(csv) in world.knobs["olm"]["failing_packages"]:
                problem = ("InstallComponentFailed", "install strategy failed: simulated failure")
            if problem is not None:
                reason, message = problem
                if phase != "Failed" or status.get("reason") != reason:
                    self._write_phase(world, csv, "Failed", reason, message)
                continue
            next_phase = (
                _CSV_PHASES[_CSV_PHASES.index(phase) + 1] if phase in _CSV_PHASES else "Pending"
            )
            if next_phase == "InstallReady":
                hold = self._upgrade_hold(world, csv)
                if hold is not None:
                    if status.get("reason") != "OperatorConditionNotUpgradeable" or (
                        status.get("message") != hold
                    ):
                        self._write_phase(
                            world, csv, "Pending", "OperatorConditionNotUpgradeable", hold
                        )
                    continue
            if not self.gate.due(csv["metadata"]["uid"], next_phase, world.knobs["delay_seconds"]):
                continue
            self._write_phase(world, csv, next_phase, *_PHASE_REASONS[next_phase])

    @staticmethod
    def _condition_for(world: World, csv: dict) -> None:
        """OLM's OperatorCondition of each CSV, of the same name, owned by it."""
        create_if_absent(
            world.custom.create_namespaced_custom_object,
            GROUP,
            "v2",
            csv["metadata"]["namespace"],
            "operatorconditions",
            {
                "apiVersion": f"{GROUP}/v2",
                "kind": "OperatorCondition",
                "metadata": {
                    "name": csv["metadata"]["name"],
                    "namespace": csv["metadata"]["namespace"],
                    "ownerReferences": [_owner(csv, controller=True)],
                },
                "spec": {"deployments": [], "serviceAccounts": []},
            },
        )

    @staticmethod
    def _upgrade_hold(world: World, csv: dict) -> str | None:
        """Why a replacing CSV stays Pending: the replaced CSV's OperatorCondition says it is
        not Upgradeable (spec.overrides first, then status.conditions), as OLM reads it."""
        replaced = (csv.get("spec") or {}).get("replaces")
        if not replaced:
            return None
        try:
            condition = world.custom.get_namespaced_custom_object(
                GROUP, "v2", csv["metadata"]["namespace"], "operatorconditions", replaced
            )
        except ApiException as error:
            if error.status != 404:
                raise
            return None
        spec, status = condition.get("spec") or {}, condition.get("status") or {}
        for source in (spec.get("overrides") or [], status.get("conditions") or []):
            upgradeable = next((c for c in source if c.get("type") == "Upgradeable"), None)
            if upgradeable is not None:
                if upgradeable.get("status") == "False":
                    return f"The operator is not upgradeable: {upgradeable.get('message', '')}"
                return None
        return None

    def _replaced_by(self, world: World, csv: dict, replacer: dict) -> None:
        """The replaced CSV: Replacing while its successor installs, Deleting once the successor
        has Succeeded (whatever becomes of the successor later), then gone."""
        phase = (csv.get("status") or {}).get("phase")
        installed = (replacer.get("status") or {}).get("phase") in (
            "Succeeded",
            "Replacing",
            "Deleting",
        )
        if phase == "Deleting":
            self._delete(world, csv)
        elif installed:
            self._write_phase(
                world,
                csv,
                "Deleting",
                "Replaced",
                "has been replaced by a newer ClusterServiceVersion that has successfully "
                "installed.",
            )
        elif phase != "Replacing":
            self._write_phase(
                world,
                csv,
                "Replacing",
                "BeingReplaced",
                "being replaced by csv: " + replacer["metadata"]["name"],
            )

    def _delete(self, world: World, csv: dict) -> None:
        """A Deleting CSV goes (after the delay), whatever became of its successor."""
        if not self.gate.due(csv["metadata"]["uid"], "delete", world.knobs["delay_seconds"]):
            return
        try:
            world.custom.delete_namespaced_custom_object(
                GROUP,
                V1ALPHA1,
                csv["metadata"]["namespace"],
                "clusterserviceversions",
                csv["metadata"]["name"],
            )
        except ApiException as error:
            if error.status != 404:
                raise

    def _write_phase(self, world: World, csv: dict, phase: str, reason: str, message: str) -> None:
        status = csv.get("status") or {}
        stamp = now()
        history = list(status.get("conditions") or [])
        history.append(
            {
                "phase": phase,
                "reason": reason,
                "message": message,
                "lastTransitionTime": stamp,
                "lastUpdateTime": stamp,
            }
        )
        csv["status"] = {
            **status,
            "phase": phase,
            "reason": reason,
            "message": message,
            "lastTransitionTime": stamp,
            "lastUpdateTime": stamp,
            "conditions": history,
        }
        replace_status(world, GROUP, V1ALPHA1, "clusterserviceversions", csv)


class OperatorGroupController:
    name = "olm-operatorgroups"

    def reconcile(self, world: World) -> None:
        groups = world.custom.list_cluster_custom_object(GROUP, "v1", "operatorgroups")
        for group in groups["items"]:
            targets = (group.get("spec") or {}).get("targetNamespaces") or [""]
            if (group.get("status") or {}).get("namespaces") == targets:
                continue
            group["status"] = {"namespaces": targets, "lastUpdated": now()}
            replace_status(world, GROUP, "v1", "operatorgroups", group)


class WebhookRegistrar:
    """OLM's webhook registration for installed CSVs, pointed at the simulator's endpoint."""

    name = "olm-webhooks"

    def __init__(self, webhooks) -> None:
        self.webhooks = webhooks  # admission.WebhookServer

    def reconcile(self, world: World) -> None:
        api = client.AdmissionregistrationV1Api(world.api_client)
        registered = api.list_validating_webhook_configuration(
            label_selector="olm.owner.kind=ClusterServiceVersion"
        ).items
        wanted = set()
        for csv in list_cluster(world, GROUP, V1ALPHA1, "clusterserviceversions"):
            if (csv.get("status") or {}).get("phase") != "Succeeded":
                continue
            for definition in csv["spec"].get("webhookdefinitions") or []:
                if (
                    definition.get("type") != "ValidatingAdmissionWebhook"
                    or definition.get("webhookPath") not in SERVED_PATHS
                ):
                    continue
                labels = {
                    "olm.owner": csv["metadata"]["name"],
                    "olm.owner.namespace": csv["metadata"]["namespace"],
                    "olm.owner.kind": "ClusterServiceVersion",
                    "olm.webhook-description-generate-name": definition["generateName"],
                }
                wanted.add(tuple(sorted(labels.items())))
                if any(_has_labels(c, labels) for c in registered):
                    continue
                api.create_validating_webhook_configuration(self._configuration(definition, labels))
        for configuration in registered:
            labels = configuration.metadata.labels or {}
            if tuple(sorted(labels.items())) not in wanted:
                api.delete_validating_webhook_configuration(configuration.metadata.name)

    def _configuration(self, definition: dict, labels: dict) -> dict:
        webhook = {
            "name": definition["generateName"],
            "admissionReviewVersions": definition.get("admissionReviewVersions") or ["v1"],
            "clientConfig": {
                "url": self.webhooks.url(definition["webhookPath"]),
                "caBundle": self.webhooks.ca_bundle,
            },
            "rules": definition.get("rules") or [],
            "failurePolicy": definition.get("failurePolicy") or "Fail",
            "sideEffects": definition.get("sideEffects") or "None",
            "timeoutSeconds": definition.get("timeoutSeconds") or 10,
        }
        return {
            "metadata": {"generateName": f"{definition['generateName']}-", "labels": labels},
            "webhooks": [webhook],
        }


def _has_labels(configuration, labels: dict) -> bool:
    present = configuration.metadata.labels or {}
    return all(present.get(k) == v for k, v in labels.items())


def controllers(catalog: Catalog, gate: DelayGate, webhooks=None) -> list:
    return [
        Marketplace(),
        OperatorGroupController(),
        SubscriptionController(catalog, gate),
        InstallPlanController(catalog, gate),
        ClusterServiceVersionController(catalog, gate),
        *([WebhookRegistrar(webhooks)] if webhooks is not None else []),
    ]
