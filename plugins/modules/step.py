#!/usr/bin/python
"""gpudirect.rdma.step: run steps of the configuration (the module; the action plugin of the
same name gives it the plan, the role settings and the registry login)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: step
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Install, apply and wait for one step of the GPUDirect RDMA configuration, or all
description:
  - Runs the steps of one role (O(role), in their order), one step (O(name)), or all of them in
    their order, with the one engine the roles, C(site.yml) and its converged check share.
  - The steps are the choices of O(name), in the order they are applied. They are the operators,
    the NicClusterPolicy and the node groups' NicNodePolicies, the MachineConfigs, the opt-in
    Maintenance Operator and NIC firmware settings, and one step per RDMA method, each for the
    node groups that use it. C(make docs) lists them in docs/steps.md, from the step table.
  - A step the plan leaves off (an opt-in turned off, a method no node group uses) installs and
    waits on nothing and removes what the collection made of its kinds, so switching a group's
    method leaves nothing of the previous one.
  - For each step, installs its operator through OLM (CatalogSource READY, Namespace,
    OperatorGroup, Subscription, the InstallPlan approved with C(Manual) approval, the CSV
    C(Succeeded)); applies its operand with server-side apply, built on the installed CSV where
    the step needs one (the ClusterPolicy's defaults);
    removes the collection's objects of its kinds that the plan no longer has (MachineConfigs,
    a method's RDMA networks and SR-IOV node policies); then waits until its gates
    are met (NFD labels, NicClusterPolicy ready, MachineConfigPool updated, ClusterPolicy
    ready, node resources and networks).
  - Before the first write, runs the preflight checks of M(gpudirect.rdma.preflight) for every
    object of the plan (the cluster read once for all of them; with O(preflight), only the checks
    an earlier run left skipped); an error fails the task and nothing is written.
  - In check mode nothing is written; objects that would change are applied with a server-side
    dry run, so the API server judges them against their schemas and admission, and the gates
    are read once. RV(converged) then says whether the cluster already is as planned; that is
    how C(site.yml) decides, in one module run, that it has nothing left to do.
  - The action plugin of the same name reads the plan (C(gpudirect_rdma_plan), else it plans
    from the C(gpudirect_rdma_*) variables), each step's role settings (for example
    C(nfd_install_timeout); the role's default when unset), C(gpudirect_rdma_take_over) and
    the registry login C(gpudirect_rdma_image_registry_username) and
    C(gpudirect_rdma_image_registry_password), so a role's task only names its step.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpudirect.rdma.cluster
attributes:
  check_mode:
    support: full
    description: Reads, dry-runs the objects on the API server, reads the gates once.
  diff_mode:
    support: full
    description: The objects before, and as the API server stores them (or would, in check mode).
options:
  role:
    description:
      - The role whose steps to run, in the table's order (what each role's task gives).
      - Give O(role) or O(name), not both.
    type: str
    choices: [nfd, sriov_network_operator, maintenance_operator, network_operator, node_config,
              nic_configuration, gpu_operator, shared_device, host_device, sriov_legacy, monitoring]
  name:
    description:
      - The step, or C(all) for every step in order.
      - Give O(role) or O(name), not both.
    type: str
    choices: [all, nfd, sriov-network-operator, maintenance-operator, network-operator, nic-node-policies,
              machine-config, nic-configuration, gpu-operator, shared-device, host-device, sriov-legacy,
              monitoring]
  plan:
    description: The plan M(gpudirect.rdma.plan) returns. The action plugin fills it in, from
      C(gpudirect_rdma_plan), else by planning from the inventory's variables as
      M(gpudirect.rdma.plan) does.
    type: dict
    required: true
  settings:
    description:
      - Per step name, its settings, read by the action plugin from the role variables
        (C(install_timeout), C(ready_timeout), C(stable_seconds), C(min_nodes)); a setting not
        given takes the default the step declares.
    type: dict
    default: {}
  take_over:
    description: Replace the content of same-named objects the collection did not create.
    type: bool
    default: false
  preflight:
    description:
      - An earlier run's preflight verdict (RV(preflight)) for the same plan; the action plugin
        gives C(gpudirect_rdma_preflight), which the step task of C(site.yml)'s check and of each
        role sets. Only the checks it left skipped (waiting for an operator, for NFD's labels)
        are judged, reading only what they read; without it, or for another plan, every check.
    type: dict
  registry_login:
    description: The mirror registry's login, when the plan has a pull Secret.
    type: dict
    suboptions:
      username:
        description: User name.
        type: str
        required: true
      password:
        description: Password or token (never shown in a result or a log).
        type: str
        required: true
"""

EXAMPLES = r"""
- name: Node Feature Discovery (the whole task of the gpudirect.rdma.nfd role)
  gpudirect.rdma.step:
    role: nfd

- name: The NicNodePolicies alone
  gpudirect.rdma.step:
    name: nic-node-policies

- name: Is anything left to do? (site.yml)
  gpudirect.rdma.step:
    name: all
  check_mode: true
  register: site_check
"""

RETURN = r"""
converged:
  description: Nothing would change, every operator's CSV is Succeeded and every gate is met
    (meaningful in check mode).
  returned: always
  type: bool
work:
  description: What would change or is not met yet, one line each; empty when converged.
  returned: always
  type: list
  elements: str
steps:
  description: Per step run, its name, title, component, operator install, object results and
    gates.
  returned: always
  type: list
  elements: dict
findings:
  description: The preflight findings (check, severity, message).
  returned: always
  type: list
  elements: dict
plan:
  description: The plan the action made from the inventory, where neither the task (C(plan)) nor
    the play (C(gpudirect_rdma_plan)) gave one, as C(gpudirect.rdma.plan) returns it; site.yml's
    first task plans so. Left out when the cluster already is as planned.
  returned: when planned here and not converged
  type: dict
preflight:
  description:
    - The preflight verdict of the run, for the next (O(preflight)); the action plugin also sets
      it as the fact C(gpudirect_rdma_preflight).
    - C(plan), the plan it holds for (a digest); C(pending), the checks still skipped;
      C(written), the steps this run has applied so far (a later preflight failure names them).
  returned: always
  type: dict
summary:
  description: The preflight findings, one line each, errors first.
  returned: always
  type: list
  elements: str
roles:
  description: The roles that run the steps asked for, in the order of the step table;
    C(site.yml) runs them in this order. A step the plan leaves off (an opt-in, a method no node
    group uses) is left out, unless it has objects of the collection to remove.
  returned: always
  type: list
  elements: str
  sample: [nfd, sriov_network_operator, network_operator, node_config, gpu_operator, shared_device]
msg:
  description: One line on what was done, or what is left to do.
  returned: always
  type: str
"""

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.engine import (  # noqa: E402
    Engine,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.module import (  # noqa: E402
    progress_of,
    run_module,
    say,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.preflight import (  # noqa: E402
    summary,
)

OPTIONS = {
    "role": {"type": "str", "choices": list(table.ROLES)},
    "name": {"type": "str", "choices": ["all", *table.NAMES]},
    "plan": {"type": "dict", "required": True},
    "settings": {"type": "dict", "default": {}},
    "take_over": {"type": "bool", "default": False},
    "preflight": {"type": "dict"},
    "registry_login": {
        "type": "dict",
        "options": {
            "username": {"type": "str", "required": True},
            "password": {"type": "str", "required": True, "no_log": True},
        },
    },
}


def message(engine: Engine, names: list[str]) -> str:
    work = [*engine.object_work(), *engine.work]
    adoption = engine.adoption_line()
    if engine.check_mode and (work or adoption):
        first = (
            [work[0] + (f" (and {len(work) - 1} more)" if len(work) > 1 else "")] if work else []
        )
        return "work to do, the steps run: " + "; ".join(
            [*first, *([adoption] if adoption else [])]
        )
    results = engine.applier.results
    unchanged = sum(1 for r in results if r["action"] == "unchanged")
    operators = sum(1 for s in engine.steps if s.get("operator"))
    gates = sum(len(s["gates"]) for s in engine.steps)
    if engine.check_mode:
        return (
            f"the cluster already is as planned: {unchanged} objects unchanged, nothing to "
            f"remove, {operators} operators Succeeded, {gates} gates met"
        )
    counts = ", ".join(
        f"{sum(1 for r in results if r['action'] == action)} {action}"
        for action in ("created", "updated", "deleted", "unchanged")
    )
    return f"{', '.join(names)}: {counts}; {operators} operators Succeeded, {gates} gates met" + (
        f"; {adoption}" if adoption else ""
    )


def roles(engine: Engine, names: list[str]) -> list[str]:
    """The roles of the steps, once each (network_operator runs two). An opt-in step the plan
    leaves off has no role to run, unless it has something of the collection's to remove (the
    opt-in was turned off)."""
    removing = {
        record["step"]
        for record in engine.steps
        if any(r["action"] == "deleted" for r in record.get("results") or [])
    }
    return list(
        dict.fromkeys(
            table.step(name).role
            for name in names
            if table.step(name).enabled(engine.plan) or name in removing
        )
    )


def written(engine, decided: dict | None) -> list[str]:
    """The steps this run has written so far: the earlier tasks' (the verdict they passed on) and
    this task's that changed something (none in check mode)."""
    found = list((decided or {}).get("written") or [])
    if not engine.check_mode:
        found += [
            s["step"]
            for s in engine.steps
            if s["step"] not in found
            and any(r["action"] != "unchanged" for r in s.get("results") or [])
        ]
    return found


def body(module, cluster, done) -> dict:
    params = module.params
    names = table.selected(params["name"], params["role"])
    engine = Engine(
        cluster,
        params["plan"],
        check_mode=module.check_mode,
        take_over=params["take_over"],
        settings=params["settings"],
        login=params["registry_login"],
        decided=params["preflight"],
        progress=progress_of(module),
    )
    done["steps"] = engine.steps
    done["results"] = engine.applier.results
    engine.run(names)
    for finding in engine.findings:
        if finding["severity"] == "warning":
            module.warn(f"preflight {finding['check']}: {finding['message']}")
        elif finding["severity"] == "skipped":
            say(
                module,
                f"preflight {finding['check']} skipped: {finding['message']}; judged again before "
                "each step that follows, until it can run",
            )
    work = engine.all_work() if module.check_mode else []
    result = {
        "changed": engine.changed,
        "converged": not work and not engine.changed,
        "work": work,
        "steps": engine.steps,
        "findings": engine.findings,
        "preflight": {**engine.verdict, "written": written(engine, params["preflight"])},
        "summary": summary(engine.findings),
        # A role that runs several steps (network_operator) is named once, at its first.
        "roles": roles(engine, names),
        "msg": message(engine, names),
    }
    if module._diff:
        result["diff"] = engine.applier.diffs
    return result


def one_of_name_and_role(module) -> None:
    """name or role, not both (the action plugin checks the same before it plans)."""
    try:
        table.selected(module.params["name"], module.params["role"])
    except ValueError as error:
        module.fail_json(msg=str(error))


def main():
    run_module(OPTIONS, body, before=one_of_name_and_role, supports_check_mode=True)


if __name__ == "__main__":
    main()
