"""What the steps' preflight checks share: the reads they declare, the facts those reads gave,
findings, and what several checks derive from the facts (the nodes a selector matches, the NICs
the nodes report).

A step declares its checks (steps.base.Step.preflight): each names what it reads (Read) and
judges the facts into findings, purely. Preflight (k8s/preflight.py) makes the reads of every
check of a run once, then runs each check on the same facts. A finding has a check name, a
severity and a message:

- error:   the configuration would fail or harm the cluster; nothing is written.
- warning: it can go on, but the user should know (and may want to stop).
- ok:      the check passed.
- skipped: the check cannot run yet (say, NFD has not labelled the nodes); it says when it will,
           and the steps that follow judge it again once what it waits for is there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import selects

SEVERITIES = ("error", "warning", "ok", "skipped")
NFD_LABEL_PREFIX = "feature.node.kubernetes.io/"
NODE = ("v1", "Node")
CLUSTER_VERSION = ("config.openshift.io/v1", "ClusterVersion")
SRIOV_NODE_STATE = ("sriovnetwork.openshift.io/v1", "SriovNetworkNodeState")
NIC_DEVICE = ("configuration.net.nvidia.com/v1alpha1", "NicDevice")
# What nfd-worker found on its node (NFD's network source: network.device, one element per
# interface with a PCI device, its name and sriov_totalvfs among the attributes).
NODE_FEATURE = ("nfd.k8s-sigs.io/v1alpha1", "NodeFeature")
NODE_FEATURE_NODE = "nfd.node.kubernetes.io/node-name"


def finding(check: str, severity: str, message: str) -> dict:
    return {"check": check, "severity": severity, "message": message}


@dataclass(frozen=True)
class Read:
    """One read a check needs: every object of a kind (name None; with label_selector, those it
    matches), or one object by name; with unless, only when the reads before it found no object
    of those kinds (a source of last resort, not read when a better one answered)."""

    api_version: str
    kind: str
    name: str | None = None
    namespace: str | None = None
    label_selector: str | None = None
    unless: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Check:
    """A preflight check: its name (unique in the table; a check several steps share runs
    once), (plan, the objects to apply, facts, take_over) -> findings, and (plan, the objects
    to apply) -> what it reads."""

    name: str
    judge: Callable[[dict, list[dict], Facts, bool], list[dict]]
    reads: Callable[[dict, list[dict]], tuple[Read, ...]] = lambda plan, objects: ()


@dataclass(frozen=True)
class Facts:
    """The cluster as preflight read it: every object read (each with its apiVersion and kind),
    and the kinds the API server does not serve. server, api_error and forbidden say where it
    was read and why it could not be."""

    server: str = ""
    api_error: str | None = None
    forbidden: str | None = None
    objects: tuple[dict, ...] = ()
    not_served: frozenset = field(default_factory=frozenset)

    def served(self, api_version: str, kind: str) -> bool:
        return (api_version, kind) not in self.not_served

    def all(self, api_version: str, kind: str) -> list[dict]:
        """Every object of the kind that was read (none when the kind is not served)."""
        return [o for o in self.objects if (o["apiVersion"], o["kind"]) == (api_version, kind)]

    def one(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict | None:
        for obj in self.all(api_version, kind):
            metadata = obj.get("metadata") or {}
            if metadata.get("name") == name and metadata.get("namespace") == namespace:
                return obj
        return None

    @property
    def nodes(self) -> list[dict]:
        """The nodes, as {"name", "labels"}."""
        return [
            {"name": n["metadata"]["name"], "labels": n["metadata"].get("labels") or {}}
            for n in self.all(*NODE)
        ]


def matching(selector: dict, nodes: list[dict]) -> list[dict]:
    """The nodes ({"name", "labels"}) a node selector matches (an empty one matches all)."""
    return [n for n in nodes if selects(selector, n["labels"])]


def nfd_labelled(facts: Facts) -> bool:
    return any(nfd_labelled_node(n) for n in facts.nodes)


def nfd_labelled_node(node: dict) -> bool:
    """Whether NFD has labelled the node ({"name", "labels"})."""
    return any(k.startswith(NFD_LABEL_PREFIX) for k in node["labels"])


def variable(view: dict, key: str) -> str:
    """The inventory variable of a group's key: the global one for the implicit group."""
    if view["name"] is None:
        return f"gpudirect_rdma_{key}"
    index = [g["name"] for g in view["groups"]].index(view["name"])
    return f"gpudirect_rdma_node_groups[{index}].{key}"


def which(view: dict) -> str:
    """The start of a finding about one node group ('' for the implicit one)."""
    return f"group {view['name']}: " if view["name"] else ""


def methods(plan: dict) -> list[str]:
    """The methods of the plan's node groups, each once, in the groups' order."""
    return list(dict.fromkeys(group["method"] for group in plan["groups"]))


def node_nics(facts: Facts) -> tuple[str, dict[str, dict[str, dict]]] | None:
    """The NICs each node reports, by node and interface name, and where from: the SR-IOV
    operator's node states ({"name", "linkType", "totalvfs"}), else the NIC configuration
    daemon's NicDevices (names only), else NFD's NodeFeatures (names and totalvfs: NFD runs
    before any other operator, and may have been installed before the collection); None while
    none reports any."""
    states = {
        s["metadata"]["name"]: {
            i.get("name"): {
                "name": i.get("name"),
                "linkType": i.get("linkType"),
                "totalvfs": i.get("totalvfs"),
            }
            for i in (s.get("status") or {}).get("interfaces") or []
        }
        for s in facts.all(*SRIOV_NODE_STATE)
        if (s.get("status") or {}).get("interfaces")
    }
    if states:
        return "SriovNetworkNodeState", states
    devices: dict[str, dict[str, dict]] = {}
    for device in facts.all(*NIC_DEVICE):
        status = device.get("status") or {}
        for port in status.get("ports") or []:
            if port.get("networkInterface"):
                name = port["networkInterface"]
                devices.setdefault(status.get("node"), {})[name] = {"name": name}
    if devices:
        return "NicDevice", devices
    features = {}
    for feature in facts.all(*NODE_FEATURE):
        metadata = feature.get("metadata") or {}
        node = (metadata.get("labels") or {}).get(NODE_FEATURE_NODE) or metadata.get("name")
        instances = ((feature.get("spec") or {}).get("features") or {}).get("instances") or {}
        elements = (instances.get("network.device") or {}).get("elements") or []
        for element in elements:
            attributes = element.get("attributes") or {}
            if attributes.get("name"):
                totalvfs = attributes.get("sriov_totalvfs")
                features.setdefault(node, {})[attributes["name"]] = {
                    "name": attributes["name"],
                    "totalvfs": int(totalvfs) if str(totalvfs).isdigit() else None,
                }
    return ("NodeFeature", features) if features else None


NODE_READS = (Read(*NODE),)
# In node_nics' order of preference: a source is read only when none before it has objects.
NIC_READS = (
    Read(*SRIOV_NODE_STATE),
    Read(*NIC_DEVICE, unless=(SRIOV_NODE_STATE,)),
    Read(*NODE_FEATURE, unless=(SRIOV_NODE_STATE, NIC_DEVICE)),
)
