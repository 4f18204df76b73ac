"""Benchmarks on a local control plane of their own (etcd, kube-apiserver, controller manager and
the simulator, as the integration tests start them):

baseline  what any play costs here: ansible-playbook with one controller-side task, and one and
          five calls of an already met gpudirect.rdma.wait (the cost of one module call)
rerun     per method (RoCE): site.yml once to converge, then the measured converged re-run (wall
          time, module invocations, the playbook user's requests and writes in the audit log);
          then, in rounds, the converged re-run beside ansible-playbook running one debug task
          on the same inventory, one kubernetes.core.k8s task applying the tree render.yml writes
          for the same inventory (lookup kubernetes.core.kustomize, with --check: a server-side
          dry run) and the floor, `kubectl apply --server-side` of that tree; medians
gate      gate reaction: site.yml waits on the NicClusterPolicy gate with a 1800 s timeout; the
          simulator is told to report it ready while the gate waits; the time from that status
          write (audit log) to the next task's start (trace callback)
scale     1,000 fake nodes with 1, 8 and the plan's maximum of rails (64 asked): site.yml to
          converge, then the measured converged re-run (wall, peak memory, requests, writes)

    .venv/bin/python benchmarks/cluster.py                 # everything
    .venv/bin/python benchmarks/cluster.py --quick         # one method, one gate run, 1,000 x 1
    .venv/bin/python benchmarks/cluster.py --only rerun gate --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    REPO_ROOT,
    ansible_playbook,
    audit_events,
    finish,
    machine,
    start_playbook,
    timed,
    which_kubectl,
)
from plan_render import fit, inputs

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.harness.audit import AuditLog
from tests.harness.controlplane import (
    ADMIN_USER,
    SIMULATOR_USER,
    api_client,
    find_binaries,
    started,
)
from tests.simulator.core import DEFAULT_KNOBS, write_knobs
from tests.simulator.nodes import Hardware, Nic, register_nodes, remove_nodes
from tests.unit.inventories import inputs as inventory_inputs

SITE = REPO_ROOT / "playbooks" / "site.yml"
RENDER = REPO_ROOT / "playbooks" / "render.yml"
SIMULATED = REPO_ROOT / "molecule" / "shared" / "simulated-cluster.yml"
# Not the collection's own manager: the tree carries kustomize's Argo CD annotations, which the
# collection does not set; applied as gpudirect.rdma they would become its stale fields.
FIELD_MANAGER = "gpudirect-rdma-floor"
METHODS = ("shared-device-roce", "host-device-roce", "sriov-legacy-roce")
GATE_TASK = (
    "NVIDIA Network Operator - operator through OLM, its NicClusterPolicy and NicNodePolicies, "
    "ready"
)
ROUNDS = 11
GATE_TIMEOUT = 1800
SCALE_NODES = 1000


def inventory(name: str) -> Path:
    return REPO_ROOT / "inventories" / name


def nodes_for(harness, plan: dict, count: int = 2, prefix: str = "worker") -> None:
    """count fake nodes with the NICs of the plan's rails (NFD labels come from the simulator).
    A new prefix gives new node names, so no SR-IOV node state of an earlier node of the same
    name (and other NICs) is still around."""
    (group,) = plan["groups"]
    link_type = "ib" if group["fabric"] == "infiniband" else "eth"
    remove_nodes(harness)
    register_nodes(
        harness,
        count,
        prefix=prefix,
        nfd_labels=False,
        hardware=Hardware(nics=tuple(Nic(rail["interface"], link_type) for rail in group["rails"])),
    )


def site(plane, inventory_dir: Path, *extra: str):
    return ansible_playbook(
        SITE, "-i", str(inventory_dir), "-e", f"@{SIMULATED}", *extra, kubeconfig=plane.kubeconfig
    )


def measured_rerun(plane, inventory_dir: Path, *extra: str) -> dict:
    """site.yml to converge, then the converged re-run with the audit log marked."""
    first = site(plane, inventory_dir, *extra)
    audit = AuditLog(plane.audit_log).mark()
    second = site(plane, inventory_dir, *extra)
    requests = audit.requests(ADMIN_USER)
    writes = [str(r) for r in requests if r.is_write]
    changed = [r["task"] for r in second.trace.results if r["changed"]]
    return {
        "converge_seconds": round(first.wall, 2),
        "wall_seconds": round(second.wall, 2),
        "peak_rss_mib": round(second.peak_rss_mib, 1),
        "requests": len(requests),
        "requests_by_verb": count_by(r.verb for r in requests),
        "requests_by_resource": dict(
            sorted(
                count_by(r.resource or "(discovery)" for r in requests).items(), key=lambda i: -i[1]
            )
        ),
        "discovery_requests_by_uri": dict(
            sorted(
                count_by(r.uri for r in requests if not r.resource).items(), key=lambda i: -i[1]
            )[:12]
        ),
        "writes": len(writes),
        "write_requests": writes[:20],
        "changed_tasks": changed,
        **second.trace.summary(second.began, second.ended),
    }


def count_by(values) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items()))


# -- sections ------------------------------------------------------------------------------
def baseline(plane, work: Path) -> dict:
    """Fixed costs of any play here, for reading the re-run's figures."""

    def book(path: Path, tasks: list[dict]) -> Path:
        path.write_text(
            yaml.safe_dump(
                [
                    {
                        "name": "baseline",
                        "hosts": "localhost",
                        "connection": "local",
                        "gather_facts": False,
                        "tasks": tasks,
                    }
                ]
            )
        )
        return path

    wait = {
        "name": "An already met gate",
        "gpudirect.rdma.wait": {
            "timeout": 30,
            "gates": [
                {
                    "gate": "default namespace",
                    "api_version": "v1",
                    "kind": "Namespace",
                    "name": "default",
                    "path": "status.phase",
                    "equals": "Active",
                }
            ],
        },
    }
    inventory_file = work / "hosts.yml"
    inventory_file.write_text(
        "all:\n  hosts:\n    localhost:\n"
        "      ansible_python_interpreter: '{{ ansible_playbook_python }}'\n"
    )
    figures = {}
    for name, tasks in (
        ("one_controller_task", [{"name": "Nothing", "ansible.builtin.debug": {"msg": "x"}}]),
        ("one_wait_call", [wait]),
        ("five_wait_calls", [wait] * 5),
    ):
        runs = [
            ansible_playbook(
                book(work / f"{name}.yml", tasks),
                "-i",
                str(inventory_file),
                kubeconfig=plane.kubeconfig,
            )
            for _round in range(3)
        ]
        best = min(runs, key=lambda r: r.wall)
        figures[name] = {
            "wall_seconds": round(best.wall, 2),
            "peak_rss_mib": round(best.peak_rss_mib, 1),
            "startup_seconds": best.trace.summary(best.began, best.ended)["startup_seconds"],
        }
    figures["seconds_per_module_call"] = round(
        (figures["five_wait_calls"]["wall_seconds"] - figures["one_wait_call"]["wall_seconds"]) / 4,
        2,
    )
    print(
        f"\nbaseline (best of 3): ansible-playbook with one debug task "
        f"{figures['one_controller_task']['wall_seconds']} s (startup "
        f"{figures['one_controller_task']['startup_seconds']} s); one met wait "
        f"{figures['one_wait_call']['wall_seconds']} s, five "
        f"{figures['five_wait_calls']['wall_seconds']} s: "
        f"{figures['seconds_per_module_call']} s per module call"
    )
    return figures


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def k8s_task_playbook(path: Path, tree: Path, kubectl: str) -> Path:
    """One kubernetes.core.k8s task: server-side apply of the rendered tree as
    lookup('kubernetes.core.kustomize') builds it, with the floor's field manager."""
    play = {
        "name": "The rendered tree, applied by one kubernetes.core.k8s task",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "tasks": [
            {
                "name": "Server-side apply of the tree",
                "kubernetes.core.k8s": {
                    "definition": (
                        f"{{{{ lookup('kubernetes.core.kustomize', dir='{tree}', "
                        f"binary_path='{kubectl}') }}}}"
                    ),
                    "apply": True,
                    "server_side_apply": {"field_manager": FIELD_MANAGER, "force_conflicts": True},
                },
            }
        ],
    }
    path.write_text(yaml.safe_dump([play], sort_keys=False))
    return path


def debug_playbook(path: Path) -> Path:
    """The floor of any playbook: one ansible.builtin.debug task, nothing else."""
    play = {
        "name": "One debug task",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "tasks": [{"name": "Nothing", "ansible.builtin.debug": {"msg": "x"}}],
    }
    path.write_text(yaml.safe_dump([play], sort_keys=False))
    return path


def floor_playbooks(work: Path) -> dict[str, Path]:
    """Two playbooks of the converged site.yml's shape (two tasks: an action, then meta:
    end_play), to tell what its time over one debug task is made of: two_tasks (a set_fact) is
    Ansible's own cost of the two tasks; two_tasks_code has as its first task an action that
    only imports the collection's code as the converged run does
    (action_plugins/import_collection_code.py, beside the playbook), from Python's bytecode
    cache once it is written (plugins/module_utils/bytecode_cache.py)."""
    shutil.copytree(Path(__file__).parent / "action_plugins", work / "action_plugins")
    firsts = {
        "two_tasks": {"name": "Fact", "ansible.builtin.set_fact": {"fact": 0}},
        "two_tasks_code": {"name": "Import the code", "import_collection_code": {}},
    }
    paths = {}
    for name, first in firsts.items():
        play = {
            "name": name,
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "tasks": [first, {"name": "End", "ansible.builtin.meta": "end_play"}],
        }
        paths[name] = work / f"{name}.yml"
        paths[name].write_text(yaml.safe_dump([play], sort_keys=False))
    return paths


def side_by_side(plane, kubectl: str, inventory_dir: Path, work: Path, extra: list[str]) -> dict:
    """The converged re-run of site.yml, ansible-playbook running one debug task on the same
    inventory (the floor of any playbook), one kubernetes.core.k8s task applying the same
    rendered tree with --check (a server-side dry run: it writes nothing), and `kubectl apply
    --server-side` of that tree (the floor of an apply), ROUNDS rounds of each; in a round the
    API server's heavy work goes first and site.yml and the debug task last, side by side, in
    alternating order; medians, and the median of the rounds' site/debug ratios. The tree is
    render.yml's for the same inventory and extra variables, so the three hold the same objects
    (the floor's first apply settles Argo CD's annotations)."""
    tree = work / "tree"
    ansible_playbook(
        RENDER, "-i", str(inventory_dir), *extra, "-e", f"gpudirect_rdma_render_dir={tree}"
    )
    _seconds, built = timed([kubectl, "kustomize", str(tree)])
    manifest = work / "all.yaml"
    manifest.write_text(built.stdout)
    apply = [
        kubectl,
        "--kubeconfig",
        str(plane.kubeconfig),
        "apply",
        "--server-side",
        f"--field-manager={FIELD_MANAGER}",
        "--force-conflicts",
        "-f",
        str(manifest),
    ]
    timed(apply)
    playbook = k8s_task_playbook(work / "k8s-task.yml", tree, kubectl)
    ansible_playbook(playbook, kubeconfig=plane.kubeconfig)
    debug = debug_playbook(work / "debug.yml")
    floors = floor_playbooks(work)
    walls: dict[str, list[float]] = {
        "site": [],
        "debug": [],
        "two_tasks": [],
        "two_tasks_code": [],
        "k8s_task": [],
        "floor": [],
    }
    writes = 0

    def run_site() -> float:
        nonlocal writes
        audit = AuditLog(plane.audit_log).mark()
        run = site(plane, inventory_dir, *extra)
        writes += len([r for r in audit.requests(ADMIN_USER) if r.is_write])
        assert "the cluster already is as planned" in " ".join(run.output.split()), run.output[
            -3000:
        ]
        return run.wall

    def run_debug() -> float:
        return ansible_playbook(
            debug, "-i", str(inventory_dir), *extra, kubeconfig=plane.kubeconfig
        ).wall

    for number in range(ROUNDS):
        # The API server's heavy work first (the k8s task's dry-run applies, kubectl's apply),
        # then the playbooks that do not reach it, then site.yml and the debug task side by
        # side, which of them first alternating: neither meets the other's leftovers more.
        walls["k8s_task"].append(
            ansible_playbook(playbook, "--check", kubeconfig=plane.kubeconfig).wall
        )
        walls["floor"].append(timed(apply)[0])
        for name, path in floors.items():
            walls[name].append(
                ansible_playbook(
                    path, "-i", str(inventory_dir), *extra, kubeconfig=plane.kubeconfig
                ).wall
            )
        pair = (("site", run_site), ("debug", run_debug))
        for name, run in pair if number % 2 == 0 else reversed(pair):
            walls[name].append(run())
    medians = {name: round(median(values), 2) for name, values in walls.items()}
    # The fastest of each: the run the machine's other work disturbed least.
    best = {name: round(min(values), 2) for name, values in walls.items()}
    return {
        "rounds": ROUNDS,
        "medians": medians,
        "best": best,
        "walls": {name: [round(v, 2) for v in values] for name, values in walls.items()},
        "site_writes": writes,
        "site_over_k8s_task": round(medians["site"] / medians["k8s_task"], 2),
        "site_over_debug": round(medians["site"] / medians["debug"], 2),
        "best_site_over_debug": round(best["site"] / best["debug"], 2),
        # Each round's pair, run side by side: the median of their ratios.
        "round_site_over_debug": round(
            median(s / d for s, d in zip(walls["site"], walls["debug"], strict=True)), 2
        ),
        "two_tasks_over_debug": round(medians["two_tasks"] / medians["debug"], 2),
        "two_tasks_code_over_debug": round(medians["two_tasks_code"] / medians["debug"], 2),
    }


def rerun(plane, harness, kubectl: str, work: Path, methods) -> dict:
    results = {}
    for name in methods:
        nodes_for(harness, build_plan(inventory_inputs(name)))
        site(plane, inventory(name))
        measured = measured_rerun(plane, inventory(name))
        measured["side_by_side"] = side_by_side(plane, kubectl, inventory(name), work / name, [])
        results[name] = measured
    print(
        f"\n{'converged re-run':<22}{'site s':>8}{'debug s':>9}{'site/debug':>11}{'pairs':>6}"
        f"{'k8s task s':>12}{'floor s':>9}{'site/k8s':>10}"
        f"{'modules':>9}{'requests':>10}{'writes':>8}   (medians of {ROUNDS} rounds; pairs: the "
        "median of each round's site/debug)"
    )
    for name, r in results.items():
        side = r["side_by_side"]
        print(
            f"{name:<22}{side['medians']['site']:>8.2f}{side['medians']['debug']:>9.2f}"
            f"{side['site_over_debug']:>11.2f}{side['round_site_over_debug']:>6.2f}"
            f"{side['medians']['k8s_task']:>12.2f}"
            f"{side['medians']['floor']:>9.2f}{side['site_over_k8s_task']:>10.2f}"
            f"{r['module_invocations']:>9}{r['requests']:>10}{r['writes'] + side['site_writes']:>8}"
        )
    for name, r in results.items():
        print(
            f"  {name}: startup {r['startup_seconds']} s, tasks {r['tasks_seconds']} s "
            f"(module tasks {r['module_tasks_seconds']} s), teardown {r['teardown_seconds']} s; "
            f"modules {r['module_invocations_by_action']}; requests {r['requests_by_verb']}"
        )
        side = r["side_by_side"]
        print(
            f"    two tasks as site's converged run: {side['medians']['two_tasks']} s "
            f"({side['two_tasks_over_debug']}x debug); with the collection's code imported "
            f"(nothing done): {side['medians']['two_tasks_code']} s "
            f"({side['two_tasks_code_over_debug']}x debug)"
        )
        print(f"    every round: {r['side_by_side']['walls']}")
        print(f"    requests by resource: {r['requests_by_resource']}")
        print(f"    discovery requests (most asked): {r['discovery_requests_by_uri']}")
        if r["writes"] or r["changed_tasks"]:
            print(f"    WRITES {r['write_requests']} changed tasks {r['changed_tasks']}")
    return results


def gate(plane, harness, custom, rounds: int, hold: float) -> dict:
    """The NicClusterPolicy gate of site.yml, with a long timeout, opened while it waits."""
    name = "shared-device-roce"
    nodes_for(harness, build_plan(inventory_inputs(name)))
    site(plane, inventory(name))  # converged: every earlier gate is met at once
    samples = []
    for _round in range(rounds):
        write_knobs(harness, {"network_operator": {"never_ready": True}})
        wait_until(lambda: policy_state(custom) == "notReady", "the NicClusterPolicy notReady")
        with tempfile.TemporaryDirectory() as work, tempfile.TemporaryFile() as log:
            trace = Path(work) / "trace.jsonl"
            began = time.time()
            process = start_playbook(
                SITE,
                "-i",
                str(inventory(name)),
                "-e",
                f"@{SIMULATED}",
                "-e",
                f"network_operator_ready_timeout={GATE_TIMEOUT}",
                kubeconfig=plane.kubeconfig,
                trace=trace,
                log=log,
            )
            wait_until(partial(gate_started, trace), f"the task '{GATE_TASK}...'", timeout=300)
            time.sleep(hold)  # the gate is waiting, well into its polling
            offset = plane.audit_log.stat().st_size
            opened = time.time()
            write_knobs(harness, DEFAULT_KNOBS)
            run = finish(process, began, log, trace, check=True)
        ready_at = next(
            e["at"]
            for e in audit_events(plane.audit_log, offset)
            if e["user"]["username"] == SIMULATOR_USER
            and e["verb"] == "update"
            and e.get("objectRef", {}).get("resource") == "nicclusterpolicies"
            and e.get("objectRef", {}).get("subresource") == "status"
        )
        starts = run.trace.starts
        index = next(i for i, s in enumerate(starts) if GATE_TASK in s["task"])
        gate_result = next(r["t"] for r in run.trace.results if GATE_TASK in r["task"])
        samples.append(
            {
                "knob_to_status_write_seconds": round(ready_at - opened, 2),
                "status_write_to_gate_result_seconds": round(gate_result - ready_at, 2),
                "status_write_to_next_task_seconds": round(starts[index + 1]["t"] - ready_at, 2),
                "next_task": starts[index + 1]["task"],
                "gate_waited_seconds": round(gate_result - starts[index]["t"], 2),
            }
        )
    print(
        f"\ngate reaction (NicClusterPolicy ready, timeout {GATE_TIMEOUT} s, "
        f"opened after {hold} s):"
    )
    for sample in samples:
        print(
            f"  status written {sample['knob_to_status_write_seconds']} s after the knob; "
            f"gate result {sample['status_write_to_gate_result_seconds']} s and next task "
            f"'{sample['next_task'][:50]}' {sample['status_write_to_next_task_seconds']} s after "
            f"the write (gate waited {sample['gate_waited_seconds']} s)"
        )
    return {"timeout": GATE_TIMEOUT, "hold_seconds": hold, "samples": samples}


def policy_state(custom) -> str | None:
    try:
        policy = custom.get_cluster_custom_object(
            "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
        )
    except ApiException:  # not there yet
        return None
    return (policy.get("status") or {}).get("state")


def gate_started(trace: Path) -> bool:
    return trace.exists() and any(
        GATE_TASK in json.loads(line).get("task", "")
        for line in trace.read_text().splitlines()
        if line
    )


def wait_until(predicate, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise RuntimeError(f"timed out after {timeout}s waiting for {what}")


def scale_inventory(work: Path, rails: int, nodes: int) -> Path:
    """The inventory of plan_render's case: rails, and persistent NIC names for nodes."""
    variables = {f"gpudirect_rdma_{k}": v for k, v in inputs(nodes, rails).items()}
    directory = work / f"scale-{rails}"
    (directory / "group_vars").mkdir(parents=True, exist_ok=True)
    (directory / "hosts.yml").write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
        "      ansible_python_interpreter: '{{ ansible_playbook_python }}'\n"
    )
    (directory / "group_vars" / "all.yml").write_text(yaml.safe_dump(variables))
    return directory


def scale(plane, harness, work: Path, rails_cases) -> dict:
    results = {}
    for asked in rails_cases:
        rails, named, notes = fit(SCALE_NODES, asked)
        for note in notes:
            print(f"\n{SCALE_NODES} nodes x {asked} rails: {note}")
        plan = build_plan(
            {
                "method": "shared_device",
                "fabric": "roce",
                "interfaces": [f"ens{i + 1}f0np0" for i in range(rails)],
                "ipam_range": "10.100.0.0/16",
            }
        )
        began = time.monotonic()
        nodes_for(harness, plan, SCALE_NODES, prefix=f"rails{rails}-worker")
        registered = time.monotonic() - began
        measured = measured_rerun(plane, scale_inventory(work, rails, named))
        measured["nodes_registration_seconds"] = round(registered, 1)
        results[f"{SCALE_NODES}x{rails}"] = {
            "rails_asked": asked,
            "rails": rails,
            "nodes_with_persistent_nic_names": named,
            "plan_limits": notes,
            **measured,
        }
        case = f"{SCALE_NODES}x{rails}"
        r = results[case]
        print(
            f"\n{'scale (shared_device)':<22}{'converge s':>11}{'re-run s':>10}{'peak MiB':>10}"
            f"{'modules':>9}{'requests':>10}{'writes':>8}"
        )
        print(
            f"{case + ' nodes x rails':<22}{r['converge_seconds']:>11.1f}{r['wall_seconds']:>10.2f}"
            f"{r['peak_rss_mib']:>10.1f}{r['module_invocations']:>9}{r['requests']:>10}"
            f"{r['writes']:>8}",
            flush=True,
        )
        print(
            "    slowest: "
            + "; ".join(f"{t['task'][:50]} {t['seconds']} s" for t in r["slowest_tasks"][:4])
        )
        print(f"    requests by resource: {r['requests_by_resource']}", flush=True)
    remove_nodes(harness)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--only", nargs="+", choices=("baseline", "rerun", "gate", "scale"))
    parser.add_argument(
        "--quick", action="store_true", help="one method, one gate round, 1,000 nodes x 1 rail"
    )
    parser.add_argument(
        "--json", type=Path, default=REPO_ROOT / "build" / "benchmarks" / "cluster.json"
    )
    args = parser.parse_args(argv)
    sections = args.only or ["baseline", "rerun", "gate", "scale"]
    figures = {"machine": machine(), "quick": args.quick}
    print(f"machine: {figures['machine']}")
    with tempfile.TemporaryDirectory(prefix="gpudirect-rdma-bench-") as tmp:
        work = Path(tmp)
        kubectl = which_kubectl(find_binaries().directory)
        with started(work / "envtest") as plane:
            harness = api_client(plane.harness_kubeconfig)
            custom = client.CustomObjectsApi(harness)
            if "baseline" in sections:
                figures["baseline"] = baseline(plane, work)
            if "rerun" in sections:
                methods = METHODS[:1] if args.quick else METHODS
                figures["rerun"] = rerun(plane, harness, kubectl, work, methods)
            if "gate" in sections:
                figures["gate"] = gate(plane, harness, custom, 1 if args.quick else 3, hold=5.0)
            if "scale" in sections:
                figures["scale"] = scale(plane, harness, work, (1,) if args.quick else (1, 8, 64))
    figures["machine"]["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"\nfigures: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
