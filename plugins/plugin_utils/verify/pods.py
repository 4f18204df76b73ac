"""The bandwidth test's pods: a server pod and a client pod per node group, each holding a whole
node's worth of the test (the GPUs it may choose from, one of each rail's RDMA resource, every
rail's network: net1 is rail 0's, net2 rail 1's, ...; IPC_LOCK), running verify_test.sh (in
plugins/plugin_utils); the servers' addresses for the client; the nodes that can run them.

Each pod first runs an init container that asks for one GPU and no RDMA resource and notes what
it finds in /dev/infiniband (none, where the device plugins alone decide): the host checks'
rdma-isolation, which catches a GPU Operator that puts every ibverbs device into GPU pods
(26.3.0 to 26.3.2, gpu-operator #2525)."""

from __future__ import annotations

import json
from pathlib import Path

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    group_plans,
    new_object,
)

COMPONENT = "verify"

ROLE_LABEL = "gpudirect.rdma/verify-role"

GROUP_LABEL = "gpudirect.rdma/node-group"

NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"

NETWORK_STATUS = "k8s.v1.cni.cncf.io/network-status"

SCRIPT = (Path(__file__).parents[1] / "verify_test.sh").read_text()

# The init container's finding reaches the test container through this file of an emptyDir.
ISOLATION_VOLUME = "rdma-isolation"
ISOLATION_FILE = "/var/run/gpudirect-rdma/rdma-isolation/seen"


def group_view(plan: dict, name: str | None) -> dict:
    """The plan as the named node group sees it (builders.common.group_plans); None names the
    only group."""
    views = group_plans(plan)
    names = [v["name"] for v in views]
    if name is None and len(views) == 1:
        return views[0]
    if name is not None and name in names:
        return views[names.index(name)]
    raise ValueError(
        f"group: expected one of the plan's node groups ({', '.join(map(str, names))}); got "
        f"{name!r}"
    )


def several_groups(plan: dict) -> bool:
    return len(plan["groups"]) > 1


def pod_name(view: dict, role: str) -> str:
    """view: a node group's view of the plan (group_view)."""
    group = f"{view['name']}-" if several_groups(view) else ""
    return f"gpudirect-rdma-verify-{group}{role}"


def bandwidth_pod(
    view: dict,
    role: str,
    node: str,
    settings: dict,
    gpus: int,
    server_addresses: list[str] | None = None,
) -> dict:
    """view: a node group's view of the plan (group_view). gpus: how many GPUs the pod asks
    for, to choose each rail's from."""
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        raise ValueError(f"gpus: expected a whole number of GPUs of at least 1; got {gpus!r}")
    env = {
        "ROLE": role,
        "RAILS": str(len(view["rails"])),
        "GPU_MEMORY": view["gpu"]["memory"],
        "SIZE": str(settings["size"]),
        "QPS": str(settings["qps"]),
        "DURATION": str(settings["duration"]),
        "PORT": str(settings["port"]),
        "PERFTEST": settings["perftest"],
        # CUDA numbers the GPUs as nvidia-smi does, so --use_cuda=N is topo -m's GPU<N>.
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    }
    if role == "client":
        env["SERVER_IPS"] = ",".join(server_addresses or [])
    resources = {"nvidia.com/gpu": str(gpus)}
    resources.update({rail["node_resource"]: "1" for rail in view["rails"]})
    isolation_mount = {"name": ISOLATION_VOLUME, "mountPath": ISOLATION_FILE.rsplit("/", 1)[0]}
    gpu_only = {"nvidia.com/gpu": "1"}
    return new_object(
        "v1",
        "Pod",
        pod_name(view, role),
        COMPONENT,
        namespace=view["network_namespace"],
        labels={ROLE_LABEL: role, **({GROUP_LABEL: view["name"]} if several_groups(view) else {})},
        annotations={NETWORKS_ANNOTATION: ",".join(rail["network_name"] for rail in view["rails"])},
        spec={
            "nodeName": node,
            "restartPolicy": "Never",
            "volumes": [{"name": ISOLATION_VOLUME, "emptyDir": {}}],
            "initContainers": [
                {
                    "name": ISOLATION_VOLUME,
                    "image": settings["image"],
                    "command": ["/bin/bash", "-c", SCRIPT],
                    "env": [
                        {"name": "ROLE", "value": "isolation"},
                        {"name": "ISOLATION_FILE", "value": ISOLATION_FILE},
                    ],
                    "resources": {"limits": dict(gpu_only), "requests": dict(gpu_only)},
                    "volumeMounts": [dict(isolation_mount)],
                }
            ],
            "containers": [
                {
                    "name": "perftest",
                    "image": settings["image"],
                    "command": ["/bin/bash", "-c", SCRIPT],
                    "env": [
                        {"name": k, "value": v}
                        for k, v in {**env, "ISOLATION_FILE": ISOLATION_FILE}.items()
                    ],
                    "resources": {"limits": dict(resources), "requests": dict(resources)},
                    "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
                    "volumeMounts": [dict(isolation_mount)],
                }
            ],
        },
    )


def server_pods(view: dict, server_node: str, settings: dict, gpus: int) -> list[dict]:
    return [bandwidth_pod(view, "server", server_node, settings, gpus)]


def client_pods(
    view: dict, client_node: str, settings: dict, addresses: list[str], gpus: int
) -> list[dict]:
    if len(addresses) != len(view["rails"]):
        raise ValueError(
            f"server_addresses: expected one per rail ({len(view['rails'])}); got {addresses!r}"
        )
    return [bandwidth_pod(view, "client", client_node, settings, gpus, addresses)]


def server_addresses(view: dict, servers: list[dict]) -> list[str]:
    """Each rail's server address: net<N+1> of the server pod's
    k8s.v1.cni.cncf.io/network-status for rail N."""
    name = pod_name(view, "server")
    pod = next((p for p in servers if p["metadata"]["name"] == name), None)
    if pod is None:
        raise ValueError(
            f"servers: expected the server pod {name}; got "
            f"{[p['metadata']['name'] for p in servers]}"
        )
    raw = (pod["metadata"].get("annotations") or {}).get(NETWORK_STATUS, "[]")
    statuses = {n.get("interface"): n for n in json.loads(raw)}
    addresses = []
    for rail in view["rails"]:
        interface = f"net{rail['index'] + 1}"
        status = statuses.get(interface) or {}
        if not status.get("ips"):
            raise ValueError(
                f"servers: pod {name} has no {interface} address in its {NETWORK_STATUS} "
                f"annotation ({raw}): did Multus attach {rail['network_name']}?"
            )
        addresses.append(status["ips"][0])
    return addresses


def _allocatable(node: dict, resource: str) -> int:
    """How many of resource the node advertises as allocatable (0 when absent or not a count)."""
    value = str(((node.get("status") or {}).get("allocatable") or {}).get(resource, "0"))
    return int(value) if value.isdigit() else 0


def eligible_nodes(view: dict, nodes: list[dict]) -> tuple[list[str], dict[str, str]]:
    """Nodes that can run a test pod: schedulable, with a GPU and every rail's resource."""
    eligible, ineligible = [], {}
    wanted = ["nvidia.com/gpu", *[rail["node_resource"] for rail in view["rails"]]]
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        missing = [r for r in wanted if _allocatable(node, r) < 1]
        if (node.get("spec") or {}).get("unschedulable"):
            ineligible[name] = "unschedulable (cordoned)"
        elif missing:
            ineligible[name] = "advertises no " + ", ".join(missing)
        else:
            eligible.append(name)
    return eligible, ineligible


def chosen_pair(
    chosen, variable: str, eligible: list[str], ineligible: dict[str, str], group: str | None
) -> list[str]:
    """The two nodes the test runs between: those the user chose (a list, or the comma-separated
    string a survey or -e gives), checked against the group's nodes, else the first two eligible
    ones (fewer when the group has fewer). ValueError naming the variable, the node and why."""
    given = chosen.split(",") if isinstance(chosen, str) else chosen or []
    names = [str(n).strip() for n in given if str(n).strip()]
    if not names:
        return eligible[:2]
    where = f"group {group}'s" if group else "the selected"
    known = sorted([*eligible, *ineligible])
    if len(names) != 2 or names[0] == names[1]:
        raise ValueError(
            f"{variable}: got {', '.join(names)}; expected two different node names, server "
            f"first, among {where} nodes: {', '.join(known) or 'none'}"
        )
    for name in names:
        if name in ineligible:
            raise ValueError(
                f"{variable}: node {name} cannot run the test: {ineligible[name]}; the nodes "
                f"that can: {', '.join(eligible) or 'none'}"
            )
        if name not in eligible:
            raise ValueError(
                f"{variable}: node {name} is not one of {where} nodes (no such node, or not "
                f"selected by the node selector); they are: {', '.join(known) or 'none'}"
            )
    return names


def gpu_counts(nodes: list[dict]) -> dict[str, int]:
    """How many GPUs (nvidia.com/gpu) each node advertises as allocatable."""
    return {node["metadata"]["name"]: _allocatable(node, "nvidia.com/gpu") for node in nodes}
