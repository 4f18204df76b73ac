"""The RBAC the collection ships (rbac/) stays honest: what the code reads and writes is derived
by running the engine (every step of the table, for real and as site.yml's converged check,
with its preflight, OLM install, apply, prune and gates), the test pods' apply and prune,
uninstall's every stage with its gates, and diagnostics of every gate, against a cluster that
records each request, plus the roles' gpudirect.rdma.read reads (objects and logs); the
ClusterRole and the test pods' Role must allow every one of those requests, hold no wildcard,
and grant nothing that none of them uses."""

from __future__ import annotations

import copy
import functools
from contextlib import suppress
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import olm
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import Applier
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.diagnostics import (
    gather as gather_diagnostics,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.engine import Engine
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.preflight import (
    checks_of,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.preflight import (
    gather as gather_preflight,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.remove import STAGES, Remover
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.upgrade import (
    Way,
    upgrade_check,
    walk,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import (
    Gate,
    GateTimeout,
    observe,
    to_gate,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps.network_operator import (
    REGISTRY_SECRET_NAME,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.upgrade.graph import Hop
from ansible_collections.gpudirect.rdma.plugins.plugin_utils import (
    nccl_settings,
    nccl_test,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.releases import UPGRADE_GRAPHS
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.pods import (
    COMPONENT,
    group_view,
)
from tests.harness.controlplane import crd_files, harness_crd_files
from tests.unit.inventories import NAMES, bandwidth_pods, inputs
from tests.unit.roles import role_tasks

REPO_ROOT = Path(__file__).resolve().parents[2]
RBAC = REPO_ROOT / k8s_client.RBAC_FILE
BINDINGS = REPO_ROOT / k8s_client.RBAC_BINDING_FILE
TEMPLATED = "<templated>"  # a namespace a role computes with Jinja


def documents(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def shipped(kind: str) -> dict:
    (found,) = [doc for doc in SHIPPED if doc["kind"] == kind]
    return found


SHIPPED = documents(RBAC)
# The monitoring step's Role, in the namespace it names (openshift-config-managed).
MONITORING = documents(REPO_ROOT / "rbac" / "gpudirect-rdma-monitoring.yaml")
MONITORING_ROLE = next(doc for doc in MONITORING if doc["kind"] == "Role")


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

    def __init__(self, existing=None, listed=None, appear_when_applied=()):
        self.existing = existing or {}
        self.listed = listed or {}
        # Kinds whose objects exist only once applied (a Subscription the engine creates).
        self.appear_when_applied = appear_when_applied
        self.applied: set = set()
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
        if kind in self.appear_when_applied and (kind, namespace, name) not in self.applied:
            return None
        found = make(name, namespace)
        # As the API server answers: the object with its name (and namespace).
        metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
        return {**found, "metadata": {**metadata, **(found.get("metadata") or {})}}

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

    # Cluster's writes, through the same requests as the real one makes (a dry run asks the
    # authorizer the same).
    def apply(self, obj, dry_run=False):
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
        self.applied.add((resource.kind, namespace, name))
        return Served(body)


class UpgradingOLM(Recorder):
    """OLM as an upgrade's walk meets it, for one hop: the Subscription runs `old` on Automatic
    approval with an InstallPlan for another CSV pending (the walk deletes it), then OLM plans
    `new`; once that plan is approved, `new` runs, Succeeded, and `old` is gone."""

    def __init__(self, old: str, new: str):
        super().__init__()
        self.old, self.new = old, new
        self.planned = "operator.v0-elsewhere"
        self.approved = False

    def get(self, api_version, kind, name, namespace=None):
        self.note("get", api_version, kind, namespace, name)
        metadata = {"name": name, "namespace": namespace}
        if kind == "Subscription":
            return {
                "metadata": metadata,
                "spec": {"installPlanApproval": "Automatic", "channel": "before"},
                "status": {
                    "installedCSV": self.new if self.approved else self.old,
                    "installPlanRef": {"name": "install-1", "namespace": namespace},
                },
            }
        if kind == "InstallPlan":
            return {
                "metadata": metadata,
                "spec": {"approved": self.approved, "clusterServiceVersionNames": [self.planned]},
                "status": {"phase": "Complete" if self.approved else "RequiresApproval"},
            }
        if kind == "ClusterServiceVersion" and name == self.new and self.approved:
            return {"metadata": metadata, "status": {"phase": "Succeeded"}}
        if kind == "OperatorCondition":
            return {"metadata": metadata, "status": {"conditions": []}}
        return None

    def delete(self, api_version, kind, name, namespace=None):
        super().delete(api_version, kind, name, namespace)
        if kind == "InstallPlan":
            self.planned = self.new

    def patch(self, api_version, kind, name, namespace, body):
        answer = super().patch(api_version, kind, name, namespace, body)
        if kind == "InstallPlan":
            self.approved = True
        return answer


# -- what the code does, configuration by configuration ----------------------------------------
def owned(api_version: str, kind: str, namespace: str | None) -> dict:
    metadata = {"name": f"some-{kind.lower()}", "labels": {MANAGED_BY_LABEL: MANAGED_BY}}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}


def olm_cluster(plan: dict, listed: dict | None = None, empty: bool = False) -> Recorder:
    """An OpenShift cluster with two GPU + NIC nodes whose OLM answers: READY catalogs,
    Subscriptions with an InstallPlan to approve and an installed CSV that has Succeeded; and
    the objects of listed."""
    starting = [
        o["spec"].get("startingCSV")
        for o in table.build_objects(plan)
        if o["kind"] == "Subscription"
    ]
    pinned = {
        (o["namespace"], o["subscription"]): o["pinned_csv"] for o in plan["operators"].values()
    }

    def subscription(name, namespace):
        return {
            "metadata": {"name": name, "namespace": namespace},
            "status": {
                "installedCSV": pinned.get((namespace, name)) or "operator.v1",
                "installPlanRef": {"name": "install-1", "namespace": namespace},
            },
        }

    ready = {"connectionState": {"lastObservedState": "READY"}}
    labels = {"feature.node.kubernetes.io/pci-15b3.present": "true"}
    labels["feature.node.kubernetes.io/pci-10de.present"] = "true"
    # Two nodes for each node group, with its labels.
    nodes = [
        {"metadata": {"name": f"worker-{g}-{i}", "labels": {**labels, **group["node_selector"]}}}
        for g, group in enumerate(plan["groups"])
        for i in (0, 1)
    ]
    return Recorder(
        listed={
            "CatalogSource": [
                {"metadata": {"name": name, "namespace": "openshift-marketplace"}, "status": ready}
                for name in ("redhat-operators", "certified-operators")
            ],
            "Node": nodes,
            # A get of a CSV lists its namespace (Reads): each Subscription's installed CSV.
            "ClusterServiceVersion": [
                {
                    "metadata": {"name": csv or "operator.v1", "namespace": namespace},
                    "status": {"phase": "Succeeded"},
                }
                for (namespace, _subscription), csv in pinned.items()
            ],
            **(listed or {}),
        },
        existing={
            "ClusterVersion": lambda n, ns: {
                "status": {"desired": {"version": plan["openshift_version"] + ".1"}}
            },
            "CatalogSource": lambda n, ns: {"status": ready},
            "MachineConfigPool": lambda n, ns: {"metadata": {"name": n}},
            "Subscription": subscription,
            "InstallPlan": lambda n, ns: {
                "spec": {"approved": False, "clusterServiceVersionNames": starting}
            },
            "ClusterServiceVersion": lambda n, ns: {
                "metadata": {"name": n, "namespace": ns},
                "status": {"phase": "Succeeded"},
            },
        },
        appear_when_applied=("Subscription",) if empty else (),
    )


def literal(value):
    return TEMPLATED if isinstance(value, str) and "{{" in value else value


def every_gate(plan: dict) -> list[Gate]:
    """Every gate the collection waits on: each step's (the MachineConfig step's with a
    MachineConfig just removed), each step's after uninstall removed its objects, and those a
    role writes out itself (verify's)."""
    removed = [
        {"action": "deleted", "kind": kind, "name": "99-removed", "namespace": "somewhere"}
        for kind in ("SriovNetworkNodePolicy", "MachineConfig")
    ]
    options = [
        *(g for s in table.STEPS for g in s.gates(plan, {}, removed)),
        *(g for s in table.STEPS for g in s.uninstall_gates(removed)),
    ]
    gates = [to_gate({**o, "equals": "never"}) for o in options]
    for task in role_tasks():
        spec = task.get("gpudirect.rdma.wait")
        for each in (spec or {}).get("gates") or []:
            gates.append(
                to_gate(
                    {
                        **each,
                        "equals": "never",
                        "min_count": 1,
                        "name": literal(each.get("name")),
                        "namespace": literal(each.get("namespace")),
                        "label_selector": literal(each.get("label_selector")),
                    }
                )
            )
    return gates


def pinned_csv(plan: dict, subscription: dict) -> str:
    """The CSV the plan pins for a Subscription's operator (operator.v1 where none is)."""
    where = (subscription["metadata"]["namespace"], subscription["metadata"]["name"])
    pins = {
        (o["namespace"], o["subscription"]): o["pinned_csv"] for o in plan["operators"].values()
    }
    return pins.get(where) or "operator.v1"


def converged_cluster(plan: dict) -> Recorder:
    """A cluster where every object of the plan exists as the collection applied it, and every
    operator's CSV has Succeeded: the converged check goes through all of its reads."""
    applied = {"managedFields": [{"manager": k8s_client.FIELD_MANAGER, "operation": "Apply"}]}
    listed: dict[str, list] = {}
    for obj in table.build_objects(plan):
        status = {"installedCSV": pinned_csv(plan, obj)} if obj["kind"] == "Subscription" else {}
        live = {**obj, "metadata": {**obj["metadata"], **applied}, "status": status}
        listed.setdefault(obj["kind"], []).append(live)
    return olm_cluster(plan, listed)


def module_reads() -> set:
    """The roles' reads through gpudirect.rdma.read: a list of one kind, or pods' logs."""
    found = set()
    for task in role_tasks():
        read = task.get("gpudirect.rdma.read")
        if read and read.get("kind"):
            api_version = read.get("api_version", "v1")
            resource = resource_of(api_version, read["kind"])
            found.add(
                ("list", group_of(api_version), resource, literal(read.get("namespace")), None)
            )
        elif read:
            found.add(("get", "", "pods/log", literal(read.get("namespace")), None))
    assert found, "the verify role reads nodes, its pods and their logs"
    return found


LOGIN = {"username": "u", "password": "p"}
SSH_KEY = (
    ed25519.Ed25519PrivateKey.generate()
    .private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    .decode()
)
NCCL_SETTINGS = {
    "image": "nccl-tests",
    "test": "all_reduce_perf",
    "min_bytes": "1M",
    "max_bytes": "8G",
    "iters": 20,
    "ssh_port": 2222,
    "timeout": 60,
}


def verify_named() -> dict:
    """verify.yml's named objects (the NCCL test's Secret), there to be read by name."""

    def read(name: str, namespace: str, api: str, kind: str) -> dict:
        item = owned(api, kind, namespace)
        item["metadata"]["name"] = name
        item["metadata"]["labels"]["gpudirect.rdma/verify-role"] = "nccl"
        return item

    return {
        kind: lambda name, namespace, api=api, kind=kind: read(name, namespace, api, kind)
        for api, kind, _name in table.VERIFY_NAMED
    }


# Settings that make a real run of a step end at its gates at once: nothing here meets them.
AT_ONCE = {name: {"install_timeout": 1, "ready_timeout": 0} for name in table.NAMES}


def requests_of(name: str) -> set:
    plan = build_plan(inputs(name))
    # With Manual approval the engine approves the InstallPlan; with a mirror's login it applies
    # the pull Secret.
    plan["operators"] = {
        key: {**operator, "approval": "Manual"} for key, operator in plan["operators"].items()
    }
    plan["image_registry_secret"] = {
        "name": REGISTRY_SECRET_NAME,
        "namespace": plan["operators"]["network_operator"]["namespace"],
        "registry": "mirror.local",
    }
    objects = table.build_objects(plan)
    pods = bandwidth_pods(plan)
    namespace = plan["network_namespace"]
    found = set()

    def where(kind: str) -> str:
        """verify.yml's objects (pods, the NCCL test's Service and Secret, the NCCL settings'
        ConfigMaps) are in the network's namespace only; the collection's others anywhere."""
        return namespace if kind in ("Pod", "Service", "Secret", "ConfigMap") else "somewhere"

    # preflight: what it reads of an empty cluster, and of one whose OLM is installed
    for cluster in (Recorder(), olm_cluster(plan)):
        gather_preflight(cluster, plan, objects)
        # and an upgrade's (its operator-versions check reads the nodes and pods too)
        upgrade_checks = [
            upgrade_check(UPGRADE_GRAPHS) if c.name == "operator-versions" else c
            for c in checks_of(plan)
        ]
        gather_preflight(cluster, plan, objects, upgrade_checks)
        found |= cluster.requests

    # every step for real, one by one, as the roles run them: preflight, the OLM install (its
    # InstallPlan approved), the operand applied, what the plan no longer has removed, the gates
    ran = []
    for step in table.NAMES:
        cluster = olm_cluster(plan, empty=True)
        engine = Engine(cluster, plan, take_over=True, settings=AT_ONCE, login=LOGIN)
        with suppress(GateTimeout):  # the gates are read; most are not met here
            engine.run([step])
        ran += [s["step"] for s in engine.steps] or [step]
        found |= cluster.requests
    assert ran == list(table.NAMES), "every step of the table ran"

    # site.yml's converged check: every step in check mode, down to its gates
    cluster = converged_cluster(plan)
    engine = Engine(cluster, plan, check_mode=True, login=LOGIN)
    engine.run(list(table.NAMES))
    assert [s["step"] for s in engine.steps] == list(table.NAMES)
    assert engine.work and all(w.startswith("gate ") for w in engine.work), engine.work
    found |= cluster.requests

    # upgrade.yml: each operator's walk through one InstallPlan (a pending plan for another CSV
    # deleted, the way's approved, the Subscription held on Manual and given back as planned)
    for step in table.STEPS:
        if step.operator is None or not step.enabled(plan):
            continue
        cluster = UpgradingOLM("operator.v0", "operator.v1")
        hop = Hop(
            plan["operators"][step.operator.key]["channel"], "operator.v1", "1.0.0", "operator.v0"
        )
        way = Way(step.operator.key, "operator.v0", "operator.v1", "4.20", (hop,))
        operator = plan["operators"][step.operator.key]
        walk(
            cluster,
            operator,
            olm.subscription(plan, step.operator),
            way,
            False,
            5,
            sleep=lambda _s: None,
        )
        assert cluster.approved, step.name
        found |= cluster.requests

    # the verify role's test pods, applied; its NCCL settings' ConfigMap, applied; the NCCL
    # test's Secret, Service and pods, applied; all but the ConfigMap removed by its cleanup
    listed = {kind: [owned(api, kind, where(kind))] for api, kind in table.managed_kinds()}
    cluster = Recorder(listed=listed, existing=verify_named())
    applier = Applier(cluster, False)
    applier.apply(pods)
    view = group_view(plan, plan["groups"][0]["name"])
    applier.apply(
        [nccl_settings.config_map(view, False, {"NCCL_SOCKET_IFNAME": "eth0"}, ["a"], COMPONENT)]
    )
    nodes = ["worker-0", "worker-1"]
    applier.apply(nccl_test.objects(view, nodes, dict.fromkeys(nodes, 8), NCCL_SETTINGS, SSH_KEY))
    Remover(cluster, False, sleep=lambda _seconds: None).remove(
        "test-pods", "gpudirect.rdma/component=verify,gpudirect.rdma/verify-role", 5
    )
    found |= cluster.requests

    # uninstall, every stage, with one of the collection's objects of each kind to remove
    listed = {
        kind: [owned(api, kind, None if kind == "Namespace" else where(kind))]
        for api, kind in table.managed_kinds()
    }
    listed["Subscription"][0]["status"] = {"installedCSV": "operator.v1"}
    listed["ClusterServiceVersion"] = [owned("operators.coreos.com/v1alpha1", "X", "somewhere")]
    listed["ClusterServiceVersion"][0]["metadata"]["name"] = "operator.v1"
    existing = {
        kind: lambda name, namespace, api=api: {
            **owned(api, "x", namespace),
            "metadata": {**owned(api, "x", namespace)["metadata"], "name": name},
        }
        for s in table.STEPS
        for api, kind, _name in s.named
    }
    cluster = Recorder(existing={**existing, **verify_named()}, listed=listed)
    remover = Remover(cluster, False, sleep=lambda _seconds: None)
    for stage in STAGES:
        # The removal's gates are read; nothing here meets them. Then again with each step that
        # can undo what its objects did (the NICs reset to their defaults) asked to.
        for reset in ((), tuple(STAGES)):
            with suppress(GateTimeout):
                remover.remove(stage, "", 0, reset=reset)
    found |= cluster.requests

    # diagnostics of each gate failing (its objects read again by name), in the operators' and
    # the network's namespaces, with a pod whose log is read
    listed = {
        kind: [owned(api, kind, where(kind))]
        for api, kind in table.managed_kinds()
        if kind != "Namespace"
    }
    listed["Namespace"] = [owned("v1", "Namespace", None)]
    listed["Pod"][0]["spec"] = {"containers": [{"name": "main"}]}
    for gate in every_gate(plan):
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

    return found | gate_reads(every_gate(plan)) | module_reads()


def gate_reads(gates: list[Gate]) -> set:
    """The gates' own reads, of a cluster without their objects and of one where each check's
    objects are all there (a NIC template with a device waiting for maintenance)."""
    device = owned("configuration.net.nvidia.com/v1alpha1", "NicDevice", "somewhere")
    device["status"] = {
        "node": "worker-0",
        "conditions": [{"type": "ConfigUpdateInProgress", "reason": "UpdateStarted"}],
    }
    device["spec"] = {"configuration": {"template": None, "resetToDefault": False}}
    template = {"status": {"nicDevices": [device["metadata"]["name"]]}}
    found: set = set()
    for cluster in (
        Recorder(),
        Recorder(
            existing={"NicConfigurationTemplate": lambda n, ns: template},
            listed={"NicDevice": [device]},
        ),
    ):
        for gate in gates:
            observe(cluster, gate)
        found |= cluster.requests
    return found


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
    if namespace == MONITORING_ROLE["metadata"]["namespace"] and any(
        allows(r, verb, group, resource, name) for r in MONITORING_ROLE["rules"]
    ):
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


def test_the_collection_writes_test_pods_and_config_maps_only_where_the_role_is():
    """Pods and the NCCL settings' ConfigMaps are the kinds written in a namespace the user
    chooses: the Role there allows it, the ClusterRole never does."""
    pod_writes = {
        (verb, namespace)
        for verb, group, resource, namespace, _name in every_request()
        if (group, resource) == ("", "pods") and verb not in ("get", "list")
    }
    assert {verb for verb, _namespace in pod_writes} == set(shipped("Role")["rules"][0]["verbs"])
    for rule in shipped("ClusterRole")["rules"]:
        if "" in rule["apiGroups"] and {"pods", "configmaps"} & set(rule["resources"]):
            assert set(rule["verbs"]) <= {"get", "list"}, rule
    config_map_writes = {
        verb
        for verb, group, resource, _namespace, _name in every_request()
        if (group, resource) == ("", "configmaps") and verb not in ("get", "list")
    }
    assert config_map_writes <= set(shipped("Role")["rules"][1]["verbs"])
    assert config_map_writes, "the NCCL settings are written"


def test_every_kind_the_collection_manages_is_in_the_roles():
    for api_version, kind in table.managed_kinds():
        for verb in ("get", "list", "delete"):
            request = (verb, group_of(api_version), resource_of(api_version, kind), "default", None)
            assert allowed(request, "default"), request
    for api_version, kind, name in (named for s in table.STEPS for named in s.named):
        resource = resource_of(api_version, kind)
        for verb in ("get", "create", "patch", "delete"):
            request = (verb, group_of(api_version), resource, "somewhere", name)
            assert allowed(request, "default"), request
        # by name only: neither listed nor read under another name
        assert not allowed(("list", group_of(api_version), resource, "somewhere", None), "x")
        assert not allowed(("get", group_of(api_version), resource, "somewhere", "other"), "x")


def test_no_wildcard_and_nothing_unused():
    used = {(verb, group, resource) for verb, group, resource, _ns, _name in every_request()}
    for role in [*documents(RBAC), MONITORING_ROLE]:
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
    for obj in [*table.build_objects(plan), *bandwidth_pods(plan)]:
        assert group_of(obj["apiVersion"]) != "rbac.authorization.k8s.io", obj["kind"]
    assert not any(
        group_of(api) == "rbac.authorization.k8s.io" or kind == "ServiceAccount"
        for api, kind in table.managed_kinds()
    )


# -- drift.yml's read-only role ------------------------------------------------------------------
VIEWER = REPO_ROOT / "rbac" / "gpudirect-rdma-viewer.yaml"


def survey_requests(name: str) -> set:
    """What drift.yml's survey asks (every step in check mode, reading only, and the nodes), on a
    converged cluster, one whose operators wait on an InstallPlan, and an empty one; and every
    step's gates, which it reads once, in whatever state they are. With Manual approval, it
    reads the InstallPlan a Subscription waits on."""
    plan = build_plan(inputs(name))
    plan["operators"] = {
        key: {**operator, "approval": "Manual"} for key, operator in plan["operators"].items()
    }
    found: set = set()
    for cluster in (converged_cluster(plan), olm_cluster(plan), olm_cluster(plan, empty=True)):
        engine = Engine(cluster, plan, check_mode=True, take_over=True, sleep=lambda _s: None)
        engine.survey(list(table.NAMES))
        engine.reads.list("v1", "Node")
        found |= cluster.requests
    gates = [
        to_gate({**options, "equals": "never"})
        for step in table.STEPS
        for options in step.gates(plan, {}, [])
    ]
    return found | gate_reads(gates)


@pytest.mark.parametrize("inventory", NAMES)
def test_the_viewer_role_allows_every_read_of_drift_and_drift_writes_nothing(inventory):
    [viewer] = documents(VIEWER)
    assert viewer["kind"] == "ClusterRole" and viewer["metadata"]["name"] == "gpudirect-rdma-viewer"
    asked = survey_requests(inventory)
    assert {verb for verb, *_rest in asked} <= {"get", "list"}, "the survey wrote"
    refused = sorted(
        f"{verb} {resource}{'.' + group if group else ''}"
        for verb, group, resource, _namespace, name in asked
        if not any(allows(rule, verb, group, resource, name) for rule in viewer["rules"])
    )
    assert refused == [], f"rbac/gpudirect-rdma-viewer.yaml does not allow: {refused}"


def test_the_viewer_role_only_reads_what_the_installer_may_read():
    [viewer] = documents(VIEWER)
    for rule in viewer["rules"]:
        assert set(rule["verbs"]) <= {"get", "list"}, rule
        assert "nonResourceURLs" not in rule, rule
        for field in ("apiGroups", "resources", "resourceNames"):
            assert not any("*" in value for value in rule.get(field) or []), rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    for name in rule.get("resourceNames") or [None]:
                        assert allowed((verb, group, resource, None, name), "default"), (
                            f"viewer: {verb} {resource} ({group or 'core'}); installer: not"
                        )
