"""Preflight's reads of the cluster in one site.yml run, counted.

A site.yml run calls the step module once for its check of every step (check mode), then once
for each task of the roles it runs (roles/<role>/tasks/main.yml, in the order of the step
table). This replays those calls' preflight (the engine's check, nothing else) against an
in-memory cluster that counts every get and list, for each example inventory, on two clusters:

fresh      what a first run meets: the platform (ClusterVersion, catalogs, the worker pool) and
           the nodes without NFD's labels, no operator, no NIC report: the checks that wait for
           NFD and the SR-IOV operator stay skipped at every call
converged  everything as planned (what a re-run after a change meets)

Each call is passed the verdict the one before it returned (gpudirect_rdma_preflight), where
the engine takes one. It reads the tree it is run from (PYTHONPATH), so the same script counts
an older checkout too:

    .venv/bin/python benchmarks/preflight_reads.py [--json out.json]
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import sys
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / ".collections"))

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.engine import (  # noqa: E402
    Engine,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan  # noqa: E402
from tests.unit.inventories import NAMES, inputs  # noqa: E402
from tests.unit.plugins.module_utils.test_engine import (  # noqa: E402
    Cluster,
    converged_cluster,
    platform,
)

ROLES = REPO_ROOT / "roles"


def calls(plan: dict) -> list[dict]:
    """The step module's arguments of one site.yml run that does work: the check of every step,
    then each task of each role the check names (the roles of the steps the plan turns on)."""
    found = [{"name": "all"}]
    roles = dict.fromkeys(s.role for s in table.STEPS if s.enabled(plan))
    for role in roles:
        for task in yaml.safe_load((ROLES / role / "tasks" / "main.yml").read_text()):
            found.append(task["gpudirect.rdma.step"])
    return found


def names_of(args: dict) -> list[str]:
    if args.get("role"):
        return [s.name for s in table.STEPS if s.role == args["role"]]
    return list(table.NAMES) if args["name"] == "all" else [args["name"]]


def fresh_cluster(plan: dict) -> Cluster:
    objects = copy.deepcopy(platform(plan))
    for obj in objects:
        if obj["kind"] == "Node":
            obj["metadata"]["labels"] = {}
    return Cluster(objects)


def replay(plan: dict, make_cluster) -> dict:
    """Preflight's reads at each call of one run, each on a cluster as make_cluster makes it."""
    takes_verdict = "decided" in inspect.signature(Engine).parameters
    verdict = None
    reads = []
    for args in calls(plan):
        cluster = make_cluster(plan)
        extra = {"decided": verdict} if takes_verdict else {}
        engine = Engine(cluster, plan, check_mode=True, **extra)
        if "names" in inspect.signature(engine.check).parameters:
            engine.check(names_of(args))
        else:
            engine.check()
        verdict = getattr(engine, "verdict", None)
        reads.append(len(cluster.reads))
    return {"calls": len(reads), "reads": sum(reads), "per_call": reads}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    figures = {}
    print(f"{'inventory':<26}{'calls':>6}{'fresh':>8}{'converged':>11}   reads per call (fresh)")
    for name in NAMES:
        plan = build_plan(inputs(name))
        fresh = replay(plan, fresh_cluster)
        converged = replay(plan, converged_cluster)
        figures[name] = {"fresh": fresh, "converged": converged}
        print(
            f"{name:<26}{fresh['calls']:>6}{fresh['reads']:>8}{converged['reads']:>11}   "
            + " ".join(map(str, fresh["per_call"]))
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
