"""The multi-node NCCL test: all_reduce_perf across N nodes of a node group, one process per GPU,
from plain Kubernetes objects, and its judgement (pure: plan, nodes and key in, objects out; log
in, result out).

Objects, in the network's namespace, all labelled as the verify component:
- a Secret (Opaque: a Secret's type cannot change, so a same-named one can be taken over) with
  the run's SSH key pair, by one name (SECRET_NAME) that rbac/ grants alone;
- a headless Service whose name is the workers' subdomain, so the launcher reaches worker i as
  `<job>-<i>.<job>`;
- per node a worker pod pinned to it, asking for its GPUs and one of each rail's RDMA resource,
  attached to every rail's network, with IPC_LOCK, running an SSH server that accepts the key;
- a launcher pod (no GPU, no RDMA) on the first node, which takes the group's published NCCL
  settings with envFrom (the ConfigMap the bandwidth test wrote: what a training job gets), adds
  NCCL_DEBUG=INFO and runs mpirun over the workers (nccl_test.sh beside this file).

A run passes when its output parses (plugin_utils.nccl) and nccl.judge finds nothing: no socket
fallback, GPUDirect RDMA on the network channels, no wrong value, every node in the run, and an
average bus bandwidth at or above the threshold.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    new_object,
    ownership,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import VERIFY_NAMED
from ansible_collections.gpudirect.rdma.plugins.plugin_utils import floors, nccl, nccl_settings
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.message_size import (
    MESSAGE_SIZE,
    bytes_of,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.pods import (
    COMPONENT,
    GROUP_LABEL,
    NETWORKS_ANNOTATION,
    ROLE_LABEL,
    group_view,
    pod_name,
)

# The one Secret's name has its home in the step table (uninstall and rbac/ read it there).
(SECRET_NAME,) = (name for _api, kind, name in VERIFY_NAMED if kind == "Secret")
KEYS = "/etc/gpudirect-rdma/ssh"
SSHD = "/usr/sbin/sshd"
MPIRUN = "mpirun"
SCRIPT = (Path(__file__).parent / "nccl_test.sh").read_text()
_OUTPUT = re.compile(
    r"^gpudirect-rdma-verify: nccl output begin\n(.*?)^gpudirect-rdma-verify: nccl output end "
    r"\(exit (\d+)\)$",
    re.MULTILINE | re.DOTALL,
)


def _grouped(view: dict) -> bool:
    return len(view["groups"]) > 1


def job_name(view: dict) -> str:
    """The Service's name (the workers' subdomain) and the stem of the pods' names:
    gpudirect-rdma-verify-[<group>-]nccl, named as the bandwidth test's pods are."""
    return pod_name(view, "nccl")


def launcher_name(view: dict) -> str:
    return f"{job_name(view)}-launcher"


def worker_names(view: dict, nodes: list[str]) -> list[str]:
    return [f"{job_name(view)}-{index}" for index in range(len(nodes))]


def public_key(private_key: str) -> str:
    """The OpenSSH public key of an OpenSSH private key (ValueError when it is not one)."""
    # cryptography comes with ansible-core on the controller; imported here, where it is used.
    from cryptography.hazmat.primitives import serialization

    try:
        key = serialization.load_ssh_private_key(private_key.encode(), password=None)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"ssh_key: expected an unencrypted OpenSSH private key (gpudirect.rdma.ssh_key); "
            f"got one that does not load ({error})"
        ) from error
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
        + " gpudirect-rdma-verify-nccl\n"
    )


def _labels(view: dict, role: str) -> dict:
    return {ROLE_LABEL: role, **({GROUP_LABEL: view["name"]} if _grouped(view) else {})}


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _size(name: str, value) -> str:
    """value as a message size (MESSAGE_SIZE), or ValueError naming name."""
    text = str(value).strip().upper()
    if not MESSAGE_SIZE.match(text):
        raise ValueError(
            f"{name}: expected a size in bytes, or a whole number with K, M or G (8, 512M, 8G); "
            f"got {value!r}"
        )
    return text


def objects(
    view: dict, nodes: list[str], gpus: dict[str, int], settings: dict, private_key: str
) -> list[dict]:
    """The test's Secret, Service, worker pods (one per node, in rank order) and launcher pod.
    view: a group's plan (verify.group_view); gpus: per node how many GPUs its worker asks for
    (one process each); settings: image, test, min_bytes, max_bytes, iters, ssh_port, timeout."""
    if len(nodes) < 2 or len(set(nodes)) != len(nodes):
        raise ValueError(f"nodes: expected two or more different node names; got {nodes!r}")
    for node in nodes:
        count = gpus.get(node)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ValueError(
                f"gpus: expected a whole number of at least 1 for node {node}; got {count!r}"
            )
    min_bytes = _size("min_bytes", settings["min_bytes"])
    max_bytes = _size("max_bytes", settings["max_bytes"])
    if bytes_of(min_bytes) > bytes_of(max_bytes):
        raise ValueError(
            f"min_bytes: expected at most max_bytes ({max_bytes}); got {settings['min_bytes']!r}"
        )
    namespace = view["network_namespace"]
    name = job_name(view)
    secret = new_object("v1", "Secret", SECRET_NAME, COMPONENT, namespace=namespace)
    secret["metadata"]["labels"][ROLE_LABEL] = "nccl"
    secret.update(
        type="Opaque",
        data={
            "ssh-privatekey": _b64(private_key),
            "ssh-publickey": _b64(public_key(private_key)),
        },
    )
    port = int(settings["ssh_port"])
    service = new_object(
        "v1",
        "Service",
        name,
        COMPONENT,
        namespace=namespace,
        labels=_labels(view, "nccl"),
        spec={
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {**ownership(COMPONENT), **_labels(view, "nccl-worker")},
            "ports": [{"name": "ssh", "port": port, "targetPort": port, "protocol": "TCP"}],
        },
    )
    keys = {"name": "ssh-keys", "secret": {"secretName": SECRET_NAME, "defaultMode": 0o400}}
    mount = {"name": "ssh-keys", "mountPath": KEYS, "readOnly": True}
    common = {"SSH_PORT": str(port), "KEYS": KEYS, "SSHD": SSHD}
    names = worker_names(view, nodes)
    workers = []
    for worker, node in zip(names, nodes, strict=True):
        resources = {"nvidia.com/gpu": str(gpus[node])}
        resources.update({rail["node_resource"]: "1" for rail in view["rails"]})
        workers.append(
            _pod(
                view,
                worker,
                "nccl-worker",
                node,
                settings["image"],
                {"ROLE": "worker", **common},
                {
                    "hostname": worker,
                    "subdomain": name,
                    "volumes": [keys],
                },
                resources=resources,
                mounts=[mount],
                annotations={
                    NETWORKS_ANNOTATION: ",".join(r["network_name"] for r in view["rails"])
                },
            )
        )
    env = {
        "ROLE": "launcher",
        **common,
        "WORKERS": ",".join(
            f"{worker}.{name}:{gpus[node]}" for worker, node in zip(names, nodes, strict=True)
        ),
        "NCCL_TEST": settings["test"],
        "MIN_BYTES": min_bytes,
        "MAX_BYTES": max_bytes,
        "ITERS": str(int(settings["iters"])),
        "WAIT_SECONDS": str(int(settings["timeout"])),
        "MPIRUN": MPIRUN,
        "NCCL_DEBUG": "INFO",
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    }
    config_map = nccl_settings.config_map_name(view, _grouped(view))
    launcher = _pod(
        view,
        launcher_name(view),
        "nccl-launcher",
        nodes[0],
        settings["image"],
        env,
        {"volumes": [keys]},
        mounts=[mount],
        env_from=[{"configMapRef": {"name": config_map}}],
    )
    return [secret, service, *workers, launcher]


def _pod(
    view: dict,
    name: str,
    role: str,
    node: str,
    image: str,
    env: dict,
    spec: dict,
    *,
    resources: dict | None = None,
    mounts: list | None = None,
    annotations: dict | None = None,
    env_from: list | None = None,
) -> dict:
    container = {
        "name": "nccl",
        "image": image,
        "command": ["/bin/bash", "-c", SCRIPT],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "volumeMounts": mounts or [],
    }
    if env_from:
        container["envFrom"] = env_from
    if resources:
        container["resources"] = {"limits": dict(resources), "requests": dict(resources)}
        container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    return new_object(
        "v1",
        "Pod",
        name,
        COMPONENT,
        namespace=view["network_namespace"],
        labels=_labels(view, role),
        annotations=annotations,
        spec={"nodeName": node, "restartPolicy": "Never", **spec, "containers": [container]},
    )


def output(log: str) -> tuple[str, int | None]:
    """The launcher's mpirun output between the script's markers, and mpirun's exit code; the
    whole log and None when the script stopped before (it could not log in to a worker)."""
    found = _OUTPUT.search(log or "")
    return (found[1], int(found[2])) if found else (log or "", None)


def run_report(view: dict, nodes: list[str], log: str, floor: dict, fabric: str) -> dict:
    """One run's entry of the report: its nodes, the ConfigMap whose settings it used, its floor
    (floors.nccl_floor), the parsed numbers (nccl.parse) and what fails it (nccl.judge), or the
    parse error."""
    text, code = output(log)
    entry = {
        **({"group": view["name"]} if _grouped(view) else {}),
        "nodes": list(nodes),
        "config_map": f"{view['network_namespace']}/"
        + nccl_settings.config_map_name(view, _grouped(view)),
        "floor_gbps": floor["gbps"],
        "floor_measure": floor["measure"],
        "floor": floor["why"],
        "exit": code,
    }
    try:
        result = nccl.parse(text)
    except nccl.NcclError as error:
        problem = str(error)
        if code is None:
            # The script stopped before mpirun: its last line says why (a worker it cannot reach).
            lines = [line for line in (log or "").splitlines() if line.strip()]
            problem = lines[-1] if lines else "the launcher printed nothing"
        return {**entry, "passed": False, "problems": [problem]}
    problems = nccl.judge(result, floor, fabric, len(nodes))
    if code not in (0, None) and not problems:
        problems.append(f"mpirun exited with {code} after the results table")
    keep = (
        "avg_busbw_gbytes",
        "avg_busbw_gbps",
        "max_busbw_gbytes",
        "max_busbw_gbps",
        "ranks",
        "devices",
        "transport",
        "gpudirect",
        "wrong",
        "rows",
        "largest",
        "warnings",
    )
    return {
        **entry,
        "nodes_in_run": result["nodes"],
        "busbw_judged_gbps": nccl.busbw_judged(result, floor["measure"]),
        **{key: result[key] for key in keep},
        "passed": not problems,
        "problems": problems,
    }


def gpudirect_shown(run: dict) -> str:
    """A run's GPUDirect verdict in words: yes, no, unknown (NCCL_DEBUG too quiet), or - when
    the output did not parse."""
    if "gpudirect" not in run:
        return "-"
    return {True: "yes", False: "no", None: "unknown"}[run["gpudirect"]]


def table(runs: list[dict]) -> list[str]:
    """The NCCL runs as lines: nodes, ranks, transport, GPUDirect, bus bandwidth, the floor,
    result; each run's floor and why, and its problems, on lines of their own."""
    if not runs:
        return []
    wide = max([10, *(len(run.get("transport") or "") + 2 for run in runs)])
    lines = [
        "",
        f"{'NCCL all_reduce_perf':<34}{'ranks':>6}  {'transport':<{wide}}{'GPUDirect':<10}"
        f"{'avg busbw Gb/s':>15}{'busbw at largest GB/s':>23}{'floor Gb/s':>12}  result",
    ]
    notes = []
    for run in runs:
        where = (f"group {run['group']}: " if "group" in run else "") + f"{len(run['nodes'])} nodes"
        largest = run.get("largest")
        best = (
            max(largest["out_of_place"]["busbw"], largest["in_place"]["busbw"]) if largest else "-"
        )
        lines.append(
            f"{where:<34}{run.get('ranks') or '-':>6}  {run.get('transport') or '-':<{wide}}"
            f"{gpudirect_shown(run):<10}{run.get('avg_busbw_gbps', '-'):>15}"
            f"{best:>23}{run['floor_gbps']:>12g}  " + ("pass" if run["passed"] else "FAIL")
        )
        notes.append(f"  {where} floor {run['floor_gbps']:g} Gb/s: {run['floor']}")
        notes += [f"  {where} FAIL: {problem}" for problem in run["problems"]]
    return lines + notes


def group_floor(report: dict, view: dict, fixed: float | None) -> dict:
    """The floor of a node group's NCCL run (floors.nccl_floor): fixed (verify_min_busbw_gbps)
    when set, else from the port rates the bandwidth test's pairs of the group read (report:
    verify.report's result)."""
    pairs = [
        p for p in report.get("pairs") or [] if not _grouped(view) or p.get("group") == view["name"]
    ]
    rates = [p.get(f"{side}_port_gbps") for p in pairs for side in ("server", "client")]
    return floors.nccl_floor(fixed, len(view["rails"]), rates)


def judged(report: dict, plan: dict, runs: list[dict], fixed: float | None) -> list[dict]:
    """Each run (group, nodes, the launcher's log) judged against its group's floor
    (group_floor): run_report's entries."""
    entries = []
    for run in runs:
        view = group_view(plan, run.get("group") or None)
        floor = group_floor(report, view, fixed)
        entries.append(
            run_report(view, list(run["nodes"]), run.get("log") or "", floor, view["fabric"])
        )
    return entries


def with_runs(result: dict, runs: list[dict]) -> dict:
    """The verify report (verify.report's result) with the NCCL runs (run_report's entries):
    a new report that passes when the pairs, the host checks and every run pass."""
    return {
        **result,
        "passed": result["passed"] and all(run["passed"] for run in runs),
        "nccl": list(runs),
        "nccl_table": table(runs),
        "table": [*result["table"], *table(runs)],
    }
