"""Benchmark: plan + render for 1 node x 1 rail, for 1,000 nodes x 1, 8 and 64 rails, and for
1,000 nodes in 4 node groups of 8 rails (the node model: a NicNodePolicy, networks and pools per
group).

Nodes enter the plan through persistent NIC names (one udev rule per NIC MAC address, so 1,000
nodes x 8 rails = 8,000 rules); rails multiply resources and networks. 64 rails is beyond the
plan's limit (MAX_RAILS): the case prints the plan's error and is measured at the limit. Two
measurements per case: the engine alone (plan + objects + kustomize layout, best of several
runs, in a process of its own so that its peak memory is the case's) and the whole
`ansible-playbook playbooks/render.yml` run (wall time, median of 3, and peak memory), beside
the same run with the inventory written as JSON and a playbook of one `debug` task on the same
inventory (what ansible-playbook itself costs to load those variables and run a task).

    make benchmark-quick       # or: .venv/bin/python benchmarks/plan_render.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / ".collections"))

from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import (  # noqa: E402
    build_objects,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import PlanError, build_plan  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.inputs import (  # noqa: E402
    MAX_PERSISTENT_NIC_NAMES,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.rails import MAX_RAILS  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.render import (  # noqa: E402
    kustomize_tree,
)


def fit(nodes: int, rails: int) -> tuple[int, int, list[str]]:
    """The rails and the nodes with persistent NIC names that the plan takes for the case asked,
    and the plan's own words about the rest: at most MAX_RAILS rails, and at most
    MAX_PERSISTENT_NIC_NAMES names (they share one MachineConfig, under the API server's
    request limit), so the nodes beyond that keep the names their NICs have."""
    notes = []
    try:
        build_plan(inputs(1, rails))
    except PlanError as error:
        notes.append(str(error))
        rails = MAX_RAILS
    named = nodes
    if nodes * rails > MAX_PERSISTENT_NIC_NAMES:
        try:
            build_plan(inputs(nodes, rails))
        except PlanError as error:
            notes.append(str(error))
        named = MAX_PERSISTENT_NIC_NAMES // rails
    return rails, named, notes


def _interfaces(rails: int, group: int) -> list[str]:
    """The rails' names: RoCE ens<N>f0np0, and ibp<N>s0 for the InfiniBand groups (the odd ones)."""
    return [f"ibp{i + 1}s0" if group % 2 else f"ens{i + 1}f0np0" for i in range(rails)]


def inputs(nodes: int, rails: int, groups: int = 1) -> dict:
    interfaces = _interfaces(rails, 0)
    names = [
        {
            "mac": f"b8:3f:d2:{n >> 8 & 0xFF:02x}:{n & 0xFF:02x}:{r:02x}",
            "name": _interfaces(rails, n * groups // nodes)[r],
        }
        for n in range(nodes)
        for r in range(rails)
    ]
    case = {
        "method": "shared_device",
        "fabric": "roce",
        "interfaces": interfaces,
        "ipam_range": "10.100.0.0/16",
        "persistent_nic_names": names,
        "crio_memlock": True,
        "blacklist_irdma": True,
    }
    if groups > 1:
        # Every group on its own labels, rails and range; the odd ones on InfiniBand.
        del case["interfaces"]
        case["node_groups"] = [
            {
                "name": f"pool{g}",
                "node_selector": {"gpudirect.example.com/pool": f"pool{g}"},
                "interfaces": _interfaces(rails, g),
                **({"fabric": "infiniband", "mtu": 4092} if g % 2 else {}),
                "ipam_range": f"10.{101 + g}.0.0/16",
            }
            for g in range(groups)
        ]
    return case


def engine(case: dict, repeat: int) -> dict:
    best = float("inf")
    for _round in range(repeat):
        began = time.perf_counter()
        objects = build_objects(build_plan(case))
        files = kustomize_tree(objects)
        best = min(best, time.perf_counter() - began)
    return {
        "engine_ms": round(best * 1000, 1),
        "objects": len(objects),
        "tree_bytes": sum(len(text) for text in files.values()),
        "largest_object_bytes": max(len(json.dumps(obj)) for obj in objects),
        "engine_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def engine_alone(nodes: int, rails: int, groups: int, repeat: int) -> dict:
    """engine() in a fresh Python process, so that the peak memory is this case's alone."""
    result = subprocess.run(
        [sys.executable, __file__, "--engine", str(nodes), str(rails), str(groups), str(repeat)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(result.stdout)


NOOP = """\
- name: ansible-playbook alone, on the same inventory
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: One task
      ansible.builtin.debug:
        msg: done
"""


def playbook(case: dict, book: Path, form: str = "yaml") -> tuple[float, float]:
    """Wall time and peak memory (the largest process) of one run of the playbook on an
    inventory holding the case (group_vars/all.yml, or all.json with form json)."""
    with tempfile.TemporaryDirectory() as work:
        inventory = Path(work) / "inventory"
        (inventory / "group_vars").mkdir(parents=True)
        (inventory / "hosts.yml").write_text(
            "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
            "      ansible_python_interpreter: '{{ ansible_playbook_python }}'\n"
        )
        variables = {f"gpudirect_rdma_{k}": v for k, v in case.items()}
        if form == "json":
            (inventory / "group_vars" / "all.json").write_text(json.dumps(variables))
        else:
            (inventory / "group_vars" / "all.yml").write_text(yaml.safe_dump(variables))
        env = {
            **os.environ,
            "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
            "ANSIBLE_COLLECTIONS_PATH": str(REPO_ROOT / ".collections"),
        }
        began = time.perf_counter()
        with tempfile.TemporaryFile() as log:
            process = subprocess.Popen(
                [
                    str(Path(sys.executable).parent / "ansible-playbook"),
                    "-i",
                    str(inventory),
                    str(book),
                    "-e",
                    f"gpudirect_rdma_render_dir={work}/tree",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=REPO_ROOT,
            )
            _pid, status, usage = os.wait4(process.pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                log.seek(0)
                raise RuntimeError(f"{book.name} failed:\n{log.read().decode()[-3000:]}")
        return time.perf_counter() - began, usage.ru_maxrss / 1024


def median_of(runs: int, *args) -> tuple[float, float]:
    """The median wall time of runs of playbook(*args), with the largest peak memory."""
    results = sorted(playbook(*args) for _run in range(runs))
    return results[len(results) // 2][0], max(peak for _wall, peak in results)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="plan + render at 1 node and at 1,000 nodes")
    parser.add_argument(
        "--quick", action="store_true", help="1 x 1, 1,000 x 8, and 1,000 x 8 in 4 groups only"
    )
    parser.add_argument(
        "--engine",
        nargs=4,
        type=int,
        metavar=("NODES", "RAILS", "GROUPS", "REPEAT"),
        help=argparse.SUPPRESS,
    )
    parser.add_argument(
        "--json", type=Path, default=REPO_ROOT / "build" / "benchmarks" / "plan_render.json"
    )
    args = parser.parse_args(argv)
    if args.engine:
        nodes, rails, groups, repeat = args.engine
        print(json.dumps(engine(inputs(nodes, rails, groups), repeat)))
        return
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.2f}"
    )
    cases = (
        ((1, 1, 1), (1000, 8, 1), (1000, 8, 4))
        if args.quick
        else ((1, 1, 1), (1000, 1, 1), (1000, 8, 1), (1000, 64, 1), (1000, 8, 4))
    )
    print(
        f"{'case (/ groups)':<36}{'objects':>8}{'udev rules':>12}{'tree bytes':>12}"
        f"{'largest obj':>13}"
        f"{'engine ms':>11}{'engine MiB':>12}{'render.yml s':>14}{'render MiB':>12}"
        f"{'as JSON s':>11}{'1 task s':>10}"
    )
    figures = []
    for nodes, asked, groups in cases:
        rails, named, notes = fit(nodes, asked)
        for note in notes:
            print(f"{nodes} nodes x {asked} rails: {note}")
        if named < nodes:
            print(f"  measured with {rails} rails, persistent NIC names for {named} of the nodes")
        measured = engine_alone(named, rails, groups, repeat=20 if nodes == 1 else 3)
        case = inputs(named, rails, groups)
        render_yml = REPO_ROOT / "playbooks" / "render.yml"
        wall, peak = median_of(3, case, render_yml)
        wall_json, _peak = median_of(3, case, render_yml, "json")
        with tempfile.NamedTemporaryFile("w", suffix=".yml") as noop:
            noop.write(NOOP)
            noop.flush()
            alone, _peak = median_of(3, case, Path(noop.name))
        figures.append(
            {
                "nodes": nodes,
                "node_groups": groups,
                "nodes_named": named,
                "rails_asked": asked,
                "rails": rails,
                "udev_rules": named * rails,
                "plan_limits": notes,
                **measured,
                "render_yml_seconds": round(wall, 2),
                "render_yml_peak_rss_mib": round(peak, 1),
                "render_yml_json_inventory_seconds": round(wall_json, 2),
                "one_task_same_inventory_seconds": round(alone, 2),
            }
        )
        label = f"{nodes} node(s) x {rails} rail(s)" + (f" / {groups} groups" if groups > 1 else "")
        print(
            f"{label:<36}"
            f"{measured['objects']:>8}{named * rails:>12}"
            f"{measured['tree_bytes']:>12}{measured['largest_object_bytes']:>13}"
            f"{measured['engine_ms']:>11.1f}{measured['engine_peak_rss_mib']:>12.1f}"
            f"{wall:>14.2f}{peak:>12.1f}{wall_json:>11.2f}{alone:>10.2f}"
        )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"figures: {args.json}")


if __name__ == "__main__":
    main()
