"""The RBAC the collection ships (rbac/) stays honest: what the code reads and writes is derived
by running the engine (preflight, the OLM install, apply and prune, uninstall's every stage,
diagnostics, the roles' gates) against a cluster that records each request, plus the
roles' object_info and k8s_log reads; the ClusterRole and the test pods' Role must allow every one
of those requests, hold no wildcard, and grant nothing that none of them uses."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpudirect.rdma.plugins.action.converged import reader_options
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import (
    COMPONENTS,
    build_objects,
    component_objects,
    select_part,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.gates import COMPONENTS as STEPS
from ansible_collections.gpudirect.rdma.plugins.module_utils.gates import gates_for
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    Applier,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.converged import check
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.diagnostics import (
    gather as gather_diagnostics,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.kinds import (
    MANAGED_KINDS,
    NAMED_OBJECTS,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.olm import install
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.preflight import (
    gather as gather_preflight,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.remove import STAGES, Remover
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.secrets import registry_secret
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import Gate, observe, to_gate
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.harness.controlplane import crd_files, harness_crd_files
from tests.unit.inventories import NAMES, bandwidth_pods, inputs

REPO_ROOT = Path(__file__).resolve().parents[2]
RBAC = REPO_ROOT / k8s_client.RBAC_FILE
BINDINGS = REPO_ROOT / k8s_client.RBAC_BINDING_FILE
ROLES = REPO_ROOT / "roles"
TEMPLATED = "<templated>"  # a namespace a role computes with Jinja


def documents(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def shipped(kind: str) -> dict:
    (found,) = [doc for doc in SHIPPED if doc["kind"] == kind]
    return found


SHIPPED = documents(RBAC)


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _plurals() -> dict[tuple[str, str], str]:
    """(group, kind) -> resource, from the CRDs the test control plane loads."""
    found = {}
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the CRDs are large
    for path in [*crd_files(), *harness_crd_files()]:
        for crd in yaml.load_all(path.read_text(), Loader=loader):
            if crd:
                names = crd["spec"]["names"]
                found[(crd["spec"]["group"], names["kind"])] = names["plural"]
    return found


PLURALS = _plurals()


def resource_of(api_version: str, kind: str) -> str:
    """The resource a kind is served as: its CRD's plural; built-in and aggregated kinds the way
    the API server names them (lower case, plural)."""
    found = PLURALS.get((group_of(api_version), kind))
    return found or kind.lower() + "s"


# -- a cluster that records every request ------------------------------------------------------
class Served:
    def __init__(self, body: dict):
        self.body = body

    def to_dict(self) -> dict:
        return self.body


class Resource:
    namespaced = True

    def __init__(self, cluster, api_version: str, kind: str):
        self.cluster, self.api_version, self.kind = cluster, api_version, kind

    def delete(self, name, namespace=None):
        self.cluster.note("delete", self.api_version, self.kind, namespace, name)
        self.cluster.gone.add((self.kind, namespace, name))

    def patch(self, body, name, namespace=None, content_type=None):
        self.cluster.note("patch", self.api_version, self.kind, namespace, name)


class Recorder:
    """Answers get from `existing` (kind -> function of name and namespace), list from `listed`
    (kind -> objects); records (verb, group, resource, namespace, name) of every request the
    engine makes. Server-side apply of an object that does not exist is a create and a patch to
    the API server's authorizer."""

    server = "https://recorder.invalid"

    def __init__(self, existing=None, listed=None):
        self.existing = existing or {}
        self.listed = listed or {}
        self.gone: set = set()
        self.requests: set = set()
        self.dynamic = self

    def note(self, verb, api_version, kind, namespace=None, name=None, subresource=None):
        resource = resource_of(api_version, kind)
        if subresource:
            resource += "/" + subresource
        self.requests.add((verb, group_of(api_version), resource, namespace, name))

    def resource(self, api_version, kind):
        return Resource(self, api_version, kind)

    def get(self, api_version, kind, name, namespace=None):
        self.note("get", api_version, kind, namespace, name)
        make = self.existing.get(kind)
        if make is None or (kind, namespace, name) in self.gone:
            return None
        return make(name, namespace)

    def list(self, api_version, kind, namespace=None, label_selector=None):
        self.note("list", api_version, kind, namespace)
        return [
            copy.deepcopy(item)
            for item in self.listed.get(kind, [])
            if namespace is None or item["metadata"].get("namespace") == namespace
        ]

    def log(self, name, namespace, container, tail_lines=None, previous=False, timeout=30):
        self.note("get", "v1", "Pod", namespace, name, subresource="log")
        return ""

    # Cluster's writes, through the same requests as the real one makes.
    def apply(self, obj):
        resource = self.resource(obj["apiVersion"], obj["kind"])
        namespace = obj["metadata"].get("namespace")
        return self.server_side_apply(resource, body=obj, namespace=namespace).to_dict()

    def delete(self, api_version, kind, name, namespace=None):
        self.resource(api_version, kind).delete(name=name, namespace=namespace)

    def patch(self, api_version, kind, name, namespace, body):
        return self.resource(api_version, kind).patch(
            body=body, name=name, namespace=namespace, content_type="application/merge-patch+json"
        )

    def server_side_apply(self, resource, body, namespace=None, **_options):
        name = body["metadata"]["name"]
        if self.get(resource.api_version, resource.kind, name, namespace) is None:
            self.note("create", resource.api_version, resource.kind, namespace, name)
        self.note("patch", resource.api_version, resource.kind, namespace, name)
        return Served(body)


# -- what the code does, configuration by configuration ----------------------------------------
def owned(api_version: str, kind: str, namespace: str | None) -> dict:
    metadata = {"name": f"some-{kind.lower()}", "labels": {MANAGED_BY_LABEL: MANAGED_BY}}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}


def olm_cluster(plan: dict) -> Recorder:
    """A cluster whose OLM answers: READY catalogs, Subscriptions with an InstallPlan to approve
    and an installed CSV that has Succeeded."""
    starting = [
        o["spec"].get("startingCSV") for o in build_objects(plan) if o["kind"] == "Subscription"
    ]

    def subscription(name, namespace):
        return {
            "metadata": {"name": name, "namespace": namespace},
            "status": {
                "installedCSV": "operator.v1",
                "installPlanRef": {"name": "install-1", "namespace": namespace},
            },
        }

    return Recorder(
        existing={
            "CatalogSource": lambda n, ns: {
                "status": {"connectionState": {"lastObservedState": "READY"}}
            },
            "Subscription": subscription,
            "InstallPlan": lambda n, ns: {
                "spec": {"approved": False, "clusterServiceVersionNames": starting}
            },
            "ClusterServiceVersion": lambda n, ns: {
                "metadata": {"name": n, "namespace": ns},
                "status": {"phase": "Succeeded"},
            },
        }
    )


def role_tasks() -> list[dict]:
    tasks = []
    for path in sorted(ROLES.glob("*/tasks/*.yml")):
        for task in yaml.safe_load(path.read_text()) or []:
            tasks.extend([task, *(task.get("block") or []), *(task.get("rescue") or [])])
    return tasks


def literal(value):
    return TEMPLATED if isinstance(value, str) and "{{" in value else value


def role_gates(plan: dict) -> list[Gate]:
    """The gates the roles wait on: those written out in a role (uninstall's), and those a role
    takes from gpudirect.rdma.gates, which are the steps' (the MachineConfig step's with a
    MachineConfig just removed)."""
    gates = [
        to_gate({**options, "equals": "never"})
        for step in STEPS
        for options in gates_for(plan, step, removed_machine_configs=["99-removed"])
    ]
    for task in role_tasks():
        spec = task.get("gpudirect.rdma.wait")
        if not spec:
            continue
        if isinstance(spec["gates"], str):
            assert "gpudirect.rdma.gates(" in spec["gates"] + str(task.get("vars")), task
            continue
        for options in spec["gates"]:
            gates.append(
                to_gate(
                    {
                        **options,
                        "equals": "never",
                        "min_count": 1,
                        "name": literal(options.get("name")),
                        "namespace": literal(options.get("namespace")),
                        "label_selector": literal(options.get("label_selector")),
                    }
                )
            )
    assert gates, "the roles wait on gates"
    return gates


def converged_cluster(plan: dict, options: dict) -> Recorder:
    """A cluster where every object of the plan exists as the collection applied it, and every
    operator's CSV has Succeeded: the converged check goes through all of its reads."""
    applied = {"managedFields": [{"manager": k8s_client.FIELD_MANAGER, "operation": "Apply"}]}
    by_key = {
        (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]): obj
        for obj in options["objects"]
    }

    def live(kind):
        def found(name, namespace):
            obj = by_key.get((kind, namespace, name))
            if obj is None:
                return None
            status = {"installedCSV": "operator.v1"} if kind == "Subscription" else {}
            return {**obj, "metadata": {**obj["metadata"], **applied}, "status": status}

        return found

    existing = {kind: live(kind) for kind, _namespace, _name in by_key}
    existing["ClusterServiceVersion"] = lambda n, ns: {
        "metadata": {"name": n, "namespace": ns},
        "status": {"phase": "Succeeded"},
    }
    return Recorder(existing=existing)


def module_reads() -> set:
    """The roles' reads of objects (gpudirect.rdma.object_info: one by name, else a list) and of
    a pod's log (kubernetes.core.k8s_log)."""
    found = set()
    for task in role_tasks():
        info = task.get("gpudirect.rdma.object_info")
        if info:
            api_version = info.get("api_version", "v1")
            verb = "get" if info.get("name") else "list"
            resource = resource_of(api_version, info["kind"])
            found.add((verb, group_of(api_version), resource, literal(info.get("namespace")), None))
        log = task.get("kubernetes.core.k8s_log")
        if log:
            found.add(("get", "", "pods/log", literal(log.get("namespace")), None))
    assert found, "the verify role reads nodes, its pods and their logs"
    return found


def requests_of(name: str) -> set:
    plan = build_plan(inputs(name))
    objects = build_objects(plan)
    pods = bandwidth_pods(plan)
    namespace = plan["network_namespace"]
    found = set()

    def where(kind: str) -> str:
        """The collection's pods (the bandwidth test's) are in the network's namespace only;
        its other objects anywhere."""
        return namespace if kind == "Pod" else "somewhere"

    # preflight: what it reads of an empty cluster, and of one whose OLM is installed
    for cluster in (Recorder(), olm_cluster(plan)):
        gather_preflight(cluster, plan, objects)
        found |= cluster.requests

    # the OLM install of each operator (Manual approval: its InstallPlan is approved)
    for component in COMPONENTS:
        operator = select_part(component_objects(plan, component), "olm")
        if not operator:
            continue
        for obj in operator:
            if obj["kind"] == "Subscription":
                obj["spec"]["installPlanApproval"] = "Manual"
        cluster = olm_cluster(plan)
        install(cluster, Applier(cluster, False, take_over=True), operator, 5, True, False)
        found |= cluster.requests

    # apply of every object, the test pods and the registry pull Secret included, into an empty
    # cluster; then the prune of objects the plan no longer has (switching method, the test's
    # cleanup)
    listed = {kind: [owned(api, kind, where(kind))] for api, kind, _stage in MANAGED_KINDS}
    cluster = Recorder(listed=listed)
    applier = Applier(cluster, False)
    named = [
        registry_secret(name, "somewhere", "mirror.local", "u", "p", "network-operator")
        for _stage, _api, kind, name in NAMED_OBJECTS
        if kind == "Secret"
    ]
    assert named, "the pull Secret is the one named object"
    applier.apply([*objects, *pods, *named])
    applier.prune([], [{"apiVersion": a, "kind": k} for a, k, _s in MANAGED_KINDS], "", 5)
    found |= cluster.requests

    # uninstall, every stage, with one of the collection's objects of each kind to remove
    listed = {
        kind: [owned(api, kind, None if kind == "Namespace" else where(kind))]
        for api, kind, _stage in MANAGED_KINDS
    }
    listed["Subscription"][0]["status"] = {"installedCSV": "operator.v1"}
    listed["ClusterServiceVersion"] = [owned("operators.coreos.com/v1alpha1", "X", "somewhere")]
    listed["ClusterServiceVersion"][0]["metadata"]["name"] = "operator.v1"
    existing = {
        kind: lambda name, namespace, api=api: {
            **owned(api, "x", namespace),
            "metadata": {**owned(api, "x", namespace)["metadata"], "name": name},
        }
        for _stage, api, kind, _name in NAMED_OBJECTS
    }
    cluster = Recorder(existing=existing, listed=listed)
    remover = Remover(cluster, False, sleep=lambda _seconds: None)
    for stage in STAGES:
        remover.remove(stage, "", 5)
    found |= cluster.requests

    # diagnostics of each gate failing (its objects read again by name), in the operators' and
    # the network's namespaces, with a pod whose log is read
    listed = {
        kind: [owned(api, kind, where(kind))]
        for api, kind, _stage in MANAGED_KINDS
        if kind != "Namespace"
    }
    listed["Namespace"] = [owned("v1", "Namespace", None)]
    listed["Pod"][0]["spec"] = {"containers": [{"name": "main"}]}
    for gate in role_gates(plan):
        cluster = Recorder(listed=listed)
        failure = {
            "gate": gate.name,
            "api_version": gate.api_version,
            "kind": gate.kind,
            "name": gate.object_name,
            "namespace": gate.namespace,
            "objects": [
                {"apiVersion": gate.api_version, "kind": gate.kind, "name": "read-at-the-last-poll"}
            ],
        }
        gather_diagnostics(cluster, {"task": "t", "msg": "m", "gate": failure}, [namespace])
        found |= cluster.requests

    # site.yml's converged check of the whole plan, down to its gates
    options = reader_options(plan, 1, 0, None)
    cluster = converged_cluster(plan, options)
    verdict = check(
        cluster,
        options["objects"],
        options["prune"],
        options["subscriptions"],
        [to_gate(gate) for gate in options["gates"]],
        read=options["read"],
    )
    assert verdict["work"][0].startswith("gate "), verdict["work"]  # it got as far as the gates
    found |= cluster.requests

    # the roles' gates, and the verify role's kubernetes.core reads
    cluster = Recorder()
    for gate in role_gates(plan):
        observe(cluster, gate)
    found |= cluster.requests
    return found | module_reads()


@functools.cache
def requests() -> dict[str, set]:
    """Every configuration's requests (computed once, when a test first asks)."""
    return {name: requests_of(name) for name in NAMES}


def every_request() -> set:
    return set().union(*requests().values())


# -- what the shipped roles allow ---------------------------------------------------------------
def allows(rule: dict, verb: str, group: str, resource: str, name: str | None) -> bool:
    return (
        group in rule["apiGroups"]
        and resource in rule["resources"]
        and verb in rule["verbs"]
        and (not rule.get("resourceNames") or name in rule["resourceNames"])
    )


def allowed(request: tuple, test_pods_namespace: str) -> bool:
    verb, group, resource, namespace, name = request
    if any(allows(r, verb, group, resource, name) for r in shipped("ClusterRole")["rules"]):
        return True
    return namespace == test_pods_namespace and any(
        allows(r, verb, group, resource, name) for r in shipped("Role")["rules"]
    )


@pytest.mark.parametrize("inventory", NAMES)
def test_the_shipped_roles_allow_every_request_the_collection_makes(inventory):
    pods_namespace = build_plan(inputs(inventory))["network_namespace"]
    refused = sorted(
        f"{verb} {resource}{'.' + group if group else ''}"
        f"{' in ' + namespace if namespace else ''}{' named ' + name if name else ''}"
        for verb, group, resource, namespace, name in requests()[inventory]
        if not allowed((verb, group, resource, namespace, name), pods_namespace)
    )
    assert refused == [], f"{k8s_client.RBAC_FILE} does not allow: {refused}"


def test_the_collection_writes_test_pods_only_where_the_role_is():
    """Pods are the one kind written in a namespace the user chooses: the Role there allows it,
    the ClusterRole never does."""
    pod_writes = {
        (verb, namespace)
        for verb, group, resource, namespace, _name in every_request()
        if (group, resource) == ("", "pods") and verb not in ("get", "list")
    }
    assert {verb for verb, _namespace in pod_writes} == set(shipped("Role")["rules"][0]["verbs"])
    for rule in shipped("ClusterRole")["rules"]:
        if "" in rule["apiGroups"] and "pods" in rule["resources"]:
            assert set(rule["verbs"]) <= {"get", "list"}, rule


def test_every_kind_the_collection_manages_is_in_the_roles():
    for api_version, kind, _stage in MANAGED_KINDS:
        for verb in ("get", "list", "delete"):
            request = (verb, group_of(api_version), resource_of(api_version, kind), "default", None)
            assert allowed(request, "default"), request
    for _stage, api_version, kind, name in NAMED_OBJECTS:
        resource = resource_of(api_version, kind)
        for verb in ("get", "create", "patch", "delete"):
            request = (verb, group_of(api_version), resource, "somewhere", name)
            assert allowed(request, "default"), request
        # by name only: neither listed nor read under another name
        assert not allowed(("list", group_of(api_version), resource, "somewhere", None), "x")
        assert not allowed(("get", group_of(api_version), resource, "somewhere", "other"), "x")


def test_no_wildcard_and_nothing_unused():
    used = {(verb, group, resource) for verb, group, resource, _ns, _name in every_request()}
    for role in documents(RBAC):
        for rule in role["rules"]:
            assert "nonResourceURLs" not in rule, rule
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert not any("*" in value for value in rule.get(field) or []), rule
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        assert (verb, group, resource) in used, (
                            f"{role['kind']} {role['metadata']['name']} grants {verb} on "
                            f"{resource} ({group or 'core'}), which the collection never does"
                        )


def test_the_binding_example_and_the_messages_name_the_shipped_roles():
    names = {doc["kind"]: doc["metadata"]["name"] for doc in documents(RBAC)}
    assert names == {
        "ClusterRole": k8s_client.CLUSTER_ROLE,
        "Role": k8s_client.VERIFY_ROLE,
    }
    assert "namespace" not in shipped("Role")["metadata"], "oc apply -n chooses the namespace"
    refs = {doc["kind"]: doc["roleRef"] for doc in documents(BINDINGS)}
    assert refs["ClusterRoleBinding"]["name"] == k8s_client.CLUSTER_ROLE
    assert refs["ClusterRoleBinding"]["kind"] == "ClusterRole"
    assert refs["RoleBinding"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": k8s_client.VERIFY_ROLE,
    }


@pytest.mark.parametrize("name", NAMES)
def test_the_collection_creates_no_rbac_objects(name):
    """Creating RBAC would need escalate and bind: the collection must never need them."""
    plan = build_plan(inputs(name))
    for obj in [*build_objects(plan), *bandwidth_pods(plan)]:
        assert group_of(obj["apiVersion"]) != "rbac.authorization.k8s.io", obj["kind"]
    assert not any(
        group_of(api) == "rbac.authorization.k8s.io" or kind == "ServiceAccount"
        for api, kind, _stage in MANAGED_KINDS
    )
