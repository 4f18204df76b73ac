#!/usr/bin/python
"""gpudirect.rdma.drift: what differs between the plan and the cluster (the module; the action
plugin of the same name gives it the plan and the role settings)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: drift
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Report every difference between the GPUDirect RDMA plan and the cluster, reading only
description:
  - Runs every step of the step table in check mode, as C(site.yml)'s converged check does, but
    none stops the others and nothing ends at the first difference; writes nothing, whatever
    the task's check mode.
  - "Reports each difference as an item of RV(differences), under its step (RV(steps), in the table's
    order, the cluster's own first) with its kind, which RV(counts) lists. C(changed): a field
    of a planned object holds another value or was taken away, with the field managers that
    hold it (C(changed_by), from the object's C(managedFields); for a field taken away, the
    manager that wrote the object last). C(stale): a field an earlier plan set and this one does
    not. C(missing): a planned object that is not there. C(extra): an object of the
    collection's that the plan lacks. C(not the collection's): a planned object that exists
    without the collection's label. C(operator): an operator whose CSV is not C(Succeeded) or
    an InstallPlan waiting for approval. C(not ready): a gate not met (a MachineConfigPool not
    rolled out, a NicConfigurationTemplate whose NICs do not hold its settings, a policy not
    ready, node resources missing). C(node): a node that its labels took out of its node group
    or into another while it still advertises that group's resources, or that lacks one of its
    group's resources. C(preflight): an error or warning of the preflight checks (operators
    beside the CSV the plan pins among them). C(not judged): a step that could not be judged."
  - The action plugin of the same name reads the plan (C(gpudirect_rdma_plan), else it plans
    from the C(gpudirect_rdma_*) variables) and each step's role settings, as
    M(gpudirect.rdma.step)'s does.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpudirect.rdma.cluster
attributes:
  check_mode:
    support: full
    description: It only reads, in check mode or not.
  diff_mode:
    support: none
    description: It changes nothing, so there is no diff to show; the report holds each difference.
options:
  plan:
    description: The plan M(gpudirect.rdma.plan) returns. The action plugin fills it in, from
      C(gpudirect_rdma_plan), else by planning from the inventory's variables.
    type: dict
    required: true
  settings:
    description:
      - Per step name, its settings, read by the action plugin from the role variables; a
        setting not given takes the default the step declares.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: What differs from the plan? (reads only)
  gpudirect.rdma.drift:
  register: drift

- name: Fail a pipeline on drift
  ansible.builtin.fail:
    msg: "{{ drift.msg }}"
  when: drift.drifted
"""

RETURN = r"""
drifted:
  description: Whether anything differs.
  returned: always
  type: bool
differences:
  description: Every difference, each with C(step), C(kind), C(object) (kind, namespace, name),
    C(message), and where they apply C(field), C(planned), C(found), C(changed_by) (a list of
    C(manager), C(operation), C(time)) and C(node).
  returned: always
  type: list
  elements: dict
steps:
  description: The differences by step, C(cluster) first, then the steps of the table in their
    order (each with C(step), C(title) and C(differences), empty where nothing differs).
  returned: always
  type: list
  elements: dict
counts:
  description: The number of differences of each kind.
  returned: always
  type: dict
findings:
  description: Every preflight finding (check, severity, message).
  returned: always
  type: list
  elements: dict
run:
  description: The cluster's API server (C(cluster)) and each operator's installed CSV by step
    (C(versions)).
  returned: always
  type: dict
msg:
  description: One line on what differs, or that nothing does.
  returned: always
  type: str
"""

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (  # noqa: E402
    identity,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.nic_configuration import (  # noqa: E402
    API_VERSION as NIC_API_VERSION,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s import drift  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (  # noqa: E402
    VIEWER_RBAC_FILE,
    VIEWER_ROLE,
    Forbidden,
    list_if_served,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.engine import (  # noqa: E402
    Engine,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.module import (  # noqa: E402
    ModuleFailure,
    progress_of,
    run_module,
)

NIC_TEMPLATE = (NIC_API_VERSION, "NicConfigurationTemplate")
OPTIONS = {
    "plan": {"type": "dict", "required": True},
    "settings": {"type": "dict", "default": {}},
}


def message(items: list[dict], counts: dict[str, int]) -> str:
    if not items:
        return "no drift: the cluster is as the plan says"
    kinds = ", ".join(f"{count} {kind}" for kind, count in counts.items() if count)
    steps = list(dict.fromkeys(i["step"] for i in items))
    return f"drift: {len(items)} difference(s) ({kinds}) in {', '.join(steps)}"


def steps_of_checks() -> dict[str, str]:
    """Each preflight check's step (the first that declares it); the checks of every run have
    none: they are the cluster's."""
    found: dict[str, str] = {}
    for step in table.STEPS:
        for check in step.preflight:
            found.setdefault(check.name, step.name)
    return found


def body(module, cluster, done) -> dict:
    params = module.params
    plan = params["plan"]
    engine = Engine(
        cluster,
        plan,
        check_mode=True,
        # Judged object by object: a planned object somebody else made is an item, not a stop.
        take_over=True,
        settings=params["settings"],
        progress=progress_of(module),
    )
    done["steps"] = engine.steps
    try:
        engine.survey(list(table.NAMES))
    except Forbidden as error:
        raise ModuleFailure(
            f"{error.refused}. drift.yml only reads: it needs the ClusterRole {VIEWER_ROLE} "
            f"of {VIEWER_RBAC_FILE} in the collection (oc apply -f {VIEWER_RBAC_FILE}; oc adm "
            f"policy add-cluster-role-to-user {VIEWER_ROLE} <user>)"
        ) from None
    compared = {identity(desired): (desired, live) for desired, live in engine.applier.compared}
    items = drift.finding_items(engine.findings, steps_of_checks())
    for record in engine.steps:
        items.extend(drift.step_items(record, compared))
    for step in table.STEPS:  # the NICs of the step that configures their firmware
        if step.enabled(plan) and NIC_TEMPLATE in step.kinds:
            devices = list_if_served(engine.reads, NIC_API_VERSION, "NicDevice") or []
            items.extend(drift.nic_device_items(step.name, devices))
    items.extend(drift.node_items(plan, engine.reads.list("v1", "Node")))
    counts = drift.counts(items)
    titles = {step.name: step.title for step in table.STEPS}
    steps = [
        {**group, "title": titles.get(group["step"], "The cluster: nodes, preflight")}
        for group in drift.by_step(items, list(table.NAMES))
    ]
    versions = {
        record["step"]: record["operator"]["csv_name"]
        for record in engine.steps
        if (record.get("operator") or {}).get("csv_name")
    }
    return {
        "changed": False,
        "run": {"cluster": cluster.server, "versions": versions},
        "drifted": bool(items),
        "differences": items,
        "steps": steps,
        "counts": counts,
        "findings": engine.findings,
        "msg": message(items, counts),
    }


def main():
    run_module(OPTIONS, body, supports_check_mode=True)


if __name__ == "__main__":
    main()
