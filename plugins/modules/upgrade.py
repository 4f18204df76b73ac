#!/usr/bin/python
"""gpudirect.rdma.upgrade: step operators installed through OLM to the CSVs the plan pins."""

from __future__ import annotations

DOCUMENTATION = r"""
module: upgrade
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.2.0
short_description: Upgrade the operators through OLM's upgrade graph to the CSVs the plan pins
description:
  - Before any write, judges the plan's preflight checks (those of M(gpudirect.rdma.step)), with
    C(operator-versions) judged for an upgrade - each operator the plan installs runs the CSV it
    pins or has a way there through the certified catalog of the cluster's OpenShift minor, one
    release line per InstallPlan and never past the target, as NVIDIA supports upgrades. A
    downgrade (OLM never installs an older version), a target no channel reaches, a release the
    cluster's OpenShift does not support, a way the cluster's own catalog does not carry (its
    PackageManifest's channel entries, where that API is served) and an operator whose
    OperatorCondition says it is not upgradeable are refused, naming the installed CSV, the
    target, the channel and what to do.
  - Also before any write - C(upgrade-disruption) warns of the nodes a new CSV's operand defaults
    change (the GPU Operator's driver image, so every GPU node's driver rolls) and the pods there
    that hold GPUs or RDMA devices; C(openshift-target) checks the plan's
    C(openshift_target_version), the OpenShift minor the cluster moves to next, against the
    releases of the upgrade (their documented range and certified catalogs).
  - Then, for each operator of O(operators) in the order of the step table (the Network Operator
    before the GPU Operator, so that the DOCA driver is upgraded before the GPU driver built
    against it), walks the way one InstallPlan at a time from what the cluster shows - the
    Subscription held on Manual approval while it steps, an unapproved InstallPlan for another
    CSV deleted (a pending plan freezes the Subscription), the Subscription moved to the hop's
    channel, exactly the InstallPlan of the hop's CSV approved and no other, the new CSV
    C(Succeeded) and the one it replaced gone - and gives the Subscription back as the plan has it
    (channel, approval, startingCSV).
  - An interrupted run (Ctrl-C, an API server gone) continues from what the cluster shows when run
    again; nothing is approved twice.
  - It upgrades the operators only; their operands (the NicClusterPolicy's DOCA driver version,
    the ClusterPolicy) are the steps' (M(gpudirect.rdma.step)), which playbooks/upgrade.yml runs
    after each operator. Before an operator's first InstallPlan it makes what its step holds
    during an upgrade - the GPU Operator's step turns the ClusterPolicy's driver upgrade
    controller off, so that the GPU driver rolls once, to the last CSV's driver, when the step
    applies the ClusterPolicy again, not once per InstallPlan.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpudirect.rdma.cluster
attributes:
  check_mode:
    support: full
    description: Judges the preflight checks and returns the whole way, each InstallPlan of it, without writing.
  diff_mode:
    support: none
    description: The way (O(operators) from, to, each InstallPlan) is the result.
options:
  plan:
    description: The plan from M(gpudirect.rdma.plan); its operators' C(pinned_csv) is the target.
    type: dict
    required: true
  operators:
    description:
      - The operators to step, as keys of C(plan.operators) (C(nfd), C(sriov_network_operator),
        C(maintenance_operator), C(network_operator), C(gpu_operator)), in any order; they are
        stepped in the step table's. Default - every operator the plan installs.
      - The preflight checks judge every operator of the plan whichever are named, so that no
        operator is upgraded when another could not be.
    type: list
    elements: str
  role:
    description:
      - The operators of the steps this role runs (as M(gpudirect.rdma.step)'s C(role)), none for
        a role whose steps install no operator; playbooks/upgrade.yml names each role in turn.
        Not with O(operators).
    type: str
  graphs:
    description:
      - The certified catalogs' channels per operator key and OpenShift minor, as the release data
        keeps them (C(plugins/plugin_utils/releases.json) C(upgrade_graphs), which the action gives
        when this is left out).
    type: dict
  take_over:
    description: As M(gpudirect.rdma.step)'s C(take_over), for the preflight checks.
    type: bool
    default: false
  preflight:
    description:
      - An earlier run's preflight verdict for the same plan (the C(preflight) this module or
        M(gpudirect.rdma.step) returned); only the checks it left skipped are judged again. The
        action gives the play's C(gpudirect_rdma_preflight) when this is left out.
    type: dict
  timeout:
    description: Seconds for each InstallPlan of the way, from the channel change to the new CSV C(Succeeded).
    type: int
    default: 1800
"""

EXAMPLES = r"""
- name: Show the way to the pinned releases (reads only)
  gpudirect.rdma.upgrade:
    plan: "{{ gpudirect_rdma_plan }}"
  check_mode: true
  register: upgrade_way

- name: Upgrade the Network Operator
  gpudirect.rdma.upgrade:
    plan: "{{ gpudirect_rdma_plan }}"
    operators: [network_operator]
"""

RETURN = r"""
ways:
  description: Per operator stepped, in the order stepped - what ran, the target, and each InstallPlan of the way.
  returned: always
  type: list
  elements: dict
  sample:
    - operator: gpu_operator
      installed: gpu-operator-certified.v25.10.1
      target: gpu-operator-certified.v26.7.2
      openshift: "4.20"
      hops:
        - {channel: v26.3, csv: gpu-operator-certified.v26.3.3, replaces: gpu-operator-certified.v25.10.1, install_plan: install-x7k2p}
        - {channel: v26.7, csv: gpu-operator-certified.v26.7.2, replaces: gpu-operator-certified.v26.3.3, install_plan: install-q9d4m}
install_plans:
  description: How many InstallPlans the way holds (approved by this run, or to approve in check mode).
  returned: always
  type: int
  sample: 2
lines:
  description: The way, one line per InstallPlan (or "as planned"), as the play prints it.
  returned: always
  type: list
  elements: str
findings:
  description: The preflight findings of this run (as M(gpudirect.rdma.step) returns them).
  returned: always
  type: list
  elements: dict
preflight:
  description: This run's preflight verdict, for the steps that follow (C(gpudirect_rdma_preflight)).
  returned: always
  type: dict
"""

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import olm  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.engine import (  # noqa: E402
    Engine,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.module import (  # noqa: E402
    ModuleFailure,
    progress_of,
    run_module,
    say,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.olm import OLM  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.upgrade import (  # noqa: E402
    openshift_minor,
    upgrade_check,
    walk,
    way,
)

OPTIONS = {
    "plan": {"type": "dict", "required": True},
    "operators": {"type": "list", "elements": "str"},
    "role": {"type": "str"},
    "graphs": {"type": "dict"},
    "take_over": {"type": "bool", "default": False},
    "preflight": {"type": "dict"},
    "timeout": {"type": "int", "default": 1800},
}


def installing_steps(plan: dict) -> list[table.Step]:
    """The steps the plan turns on that install an operator, in the table's order."""
    return [s for s in table.STEPS if s.operator is not None and s.enabled(plan)]


def chosen(module) -> list[table.Step]:
    """The steps of the operators O(operators) names, or of O(role), in the table's order."""
    steps = installing_steps(module.params["plan"])
    names, role = module.params["operators"], module.params["role"]
    if role is not None:
        roles = list(dict.fromkeys(s.role for s in table.STEPS))
        if role not in roles:
            raise ModuleFailure(f"role: got {role!r}; expected one of {', '.join(roles)}")
        return [s for s in steps if s.role == role]
    if names is None:
        return steps
    known = [s.operator.key for s in steps]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ModuleFailure(
            f"operators: got {', '.join(map(repr, unknown))}; expected operators the plan "
            f"installs: {', '.join(known)}"
        )
    return [s for s in steps if s.operator.key in names]


def before(module) -> None:
    if module.params["operators"] is not None and module.params["role"] is not None:
        raise ModuleFailure("operators, role: got both; expected one of them, or neither")
    chosen(module)
    if module.params["timeout"] < 1:
        raise ModuleFailure(f"timeout: got {module.params['timeout']}; expected 1 or more seconds")


def hold(module, cluster, step: table.Step, plan: dict) -> bool:
    """Make the step's upgrade holds (steps.base.Step.upgrade_holds) on the objects that exist;
    whether one was written."""
    written = False
    for held in step.upgrade_holds(plan):
        where = (held["api_version"], held["kind"], held["name"], held["namespace"])
        if cluster.get(*where) is None:
            continue
        cluster.patch(*where, held["patch"])
        say(module, f"{step.name}: {held['kind']} {held['name']} held: {held['why']}")
        written = True
    return written


def body(module, cluster, done) -> dict:
    params = module.params
    plan, graphs = params["plan"], params["graphs"] or {}
    engine = Engine(
        cluster,
        plan,
        check_mode=True,
        take_over=params["take_over"],
        decided=params["preflight"],
        progress=progress_of(module),
        replacing=(upgrade_check(graphs),),
    )
    done["findings"] = engine.check()
    verdict = engine.verdict
    minor = openshift_minor(cluster)
    ways, lines, changed = [], [], False
    for step in chosen(module):
        key = step.operator.key
        operator = plan["operators"][key]
        live = cluster.get(OLM, "Subscription", operator["subscription"], operator["namespace"])
        if not ((live or {}).get("status") or {}).get("installedCSV"):
            lines.append(f"{key}: not installed yet; its step installs it")
            continue
        planned = way(cluster, key, operator, graphs.get(key) or {}, minor)
        lines += planned.lines()
        if planned.hops and not module.check_mode:
            say(module, f"{key}: {planned.installed} -> {planned.target}")
            changed = hold(module, cluster, step, plan) or changed
        hops = walk(
            cluster,
            operator,
            olm.subscription(plan, step.operator),
            planned,
            module.check_mode,
            params["timeout"],
            progress=progress_of(module),
        )
        changed = changed or (not module.check_mode and any(h["install_plan"] for h in hops))
        ways.append(
            {
                "operator": key,
                "installed": planned.installed,
                "target": planned.target,
                "openshift": planned.minor,
                "hops": hops,
            }
        )
        done["ways"] = list(ways)
    return {
        "changed": changed,
        "ways": ways,
        "install_plans": sum(len(w["hops"]) for w in ways),
        "lines": lines,
        "findings": engine.findings,
        "preflight": verdict,
        "msg": "; ".join(lines) or "no operator to upgrade",
    }


def main():
    run_module(OPTIONS, body, before=before, supports_check_mode=True)


if __name__ == "__main__":
    main()
