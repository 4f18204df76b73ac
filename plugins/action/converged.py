"""gpudirect.rdma.converged: whether the cluster already is as the plan asks (reads only).

The builders and the gates live on the controller, so this action builds what every step of
site.yml would apply and wait for, and one run of the gpudirect.rdma.convergence_info module
takes the decisions on the cluster. The objects built from the installed CSVs (the
NodeFeatureDiscovery and the ClusterPolicy) are decided here, on their live versions that the
module returns with the CSVs.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import (
    COMPONENTS,
    OLM_KINDS,
    component_objects,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    GPU_OPERATOR,
    MACHINE_CONFIG,
    METHOD_COMPONENTS,
    NFD,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.olm import subscription
from ansible_collections.gpudirect.rdma.plugins.module_utils.gates import COMPONENTS as STEPS
from ansible_collections.gpudirect.rdma.plugins.module_utils.gates import gates_for
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.converged import work_on_read
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.kinds import prune_scope
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import plain
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import (
    OPERATORS,
    PlanError,
    check_integer,
    check_number,
)

# Components whose operand is built on the installed CSV's alm-examples, by operator.
BUILT_ON_CSV = {"nfd": NFD, "gpu_operator": GPU_OPERATOR}
# The roles' settings that their gates depend on.
ROLE_SETTINGS = (
    "nfd_min_nodes",
    "network_operator_ready_stable_seconds",
    "gpu_operator_ready_stable_seconds",
)
OWN_OPTIONS = ("plan", *ROLE_SETTINGS, "image_registry_username", "image_registry_password")
READER = "gpudirect.rdma.convergence_info"


def role_settings(args: dict) -> dict:
    """The roles' settings as numbers, with the roles' defaults; PlanError naming a bad one."""
    return {
        "nfd_min_nodes": check_integer("nfd_min_nodes", args.get("nfd_min_nodes", 1), 1, None),
        **{
            name: check_number(name, args.get(name, 0), 0, None, "seconds")
            for name in ROLE_SETTINGS[1:]
        },
    }


def options_error(args: dict) -> str | None:
    """What is wrong with the options, naming the variable, or None."""
    plan = args.get("plan")
    if not isinstance(plan, dict) or "rails" not in plan or "method" not in plan:
        return (
            "plan: expected the plan returned by gpudirect.rdma.plan (with method and rails); "
            f"got {type(plan).__name__}"
        )
    try:
        role_settings(args)
    except PlanError as error:
        return str(error)
    if plan.get("image_registry_secret") and not (
        args.get("image_registry_username") and args.get("image_registry_password")
    ):
        return (
            "image_registry_username, image_registry_password: the plan has a pull Secret "
            f"({plan['image_registry_secret']['name']}); expected its login, got none"
        )
    return None


def reader_options(plan: dict, min_nodes: int, stable_for: float, login: dict | None) -> dict:
    """The convergence_info options for the whole plan: what the objects built on CSVs need is
    read and returned, the rest is decided by the module."""
    objects, read = [], []
    built_on_csv = set(BUILT_ON_CSV.values())
    for component in COMPONENTS:
        for obj in component_objects(plan, component):
            if component in built_on_csv and obj["kind"] not in OLM_KINDS:
                metadata = obj["metadata"]
                read.append(
                    {
                        "apiVersion": obj["apiVersion"],
                        "kind": obj["kind"],
                        "name": metadata["name"],
                        "namespace": metadata.get("namespace"),
                    }
                )
            else:
                objects.append(obj)
    options = {
        "objects": objects,
        "read": read,
        "prune": [
            prune_scope(MACHINE_CONFIG),
            prune_scope(METHOD_COMPONENTS[plan["method"]]),
        ],
        "subscriptions": {operator: subscription(plan, operator) for operator in OPERATORS},
        "gates": [gate for step in STEPS for gate in gates_for(plan, step, min_nodes=min_nodes)],
        "stable_for": stable_for,
    }
    if login:
        options["registry_secret"] = {
            **{
                key: plan["image_registry_secret"][key] for key in ("name", "namespace", "registry")
            },
            **login,
        }
    return options


def built_on_csvs(plan: dict, csvs: dict) -> list[dict]:
    """The operands built on the installed CSVs."""
    return [
        obj
        for operator, component in BUILT_ON_CSV.items()
        for obj in component_objects(plan, component, {operator: csvs.get(operator)})
        if obj["kind"] not in OLM_KINDS
    ]


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        problem = options_error(args)
        if problem:
            result.update(failed=True, msg=f"gpudirect.rdma.converged: {problem}")
            return result
        plan = plain(args["plan"])
        login = None
        if plan.get("image_registry_secret"):
            login = {
                "username": args["image_registry_username"],
                "password": args["image_registry_password"],
            }
        settings = role_settings(args)
        options = reader_options(
            plan,
            settings["nfd_min_nodes"],
            max(
                settings["network_operator_ready_stable_seconds"],
                settings["gpu_operator_ready_stable_seconds"],
            ),
            login,
        )
        # The connection options (kubeconfig, context, host, ...) go to the module as given.
        options.update({k: v for k, v in args.items() if k not in OWN_OPTIONS})
        found = self._execute_module(module_name=READER, module_args=options, task_vars=task_vars)
        if found.get("failed"):
            # The module's failure as it is (api_server and request of an API server out of
            # reach), without its arguments: every object of the plan.
            result.update({key: value for key, value in found.items() if key != "invocation"})
            return result
        work = list(found["work"])
        if found["converged"]:
            work = work_on_read(built_on_csvs(plan, found["csvs"]), found["live"])
        checked = {
            "objects": len(options["objects"]) + len(options["read"]) + (1 if login else 0),
            "operators": len(options["subscriptions"]),
            "gates": len(options["gates"]),
        }
        if work:
            msg = f"work to do, the steps run: {work[0]}"
            if len(work) > 1:
                msg += f" (and {len(work) - 1} more)"
        else:
            msg = (
                f"the cluster already is as planned: {checked['objects']} objects unchanged, "
                f"nothing to remove, {checked['operators']} operators Succeeded, "
                f"{checked['gates']} gates met"
            )
        result.update(changed=False, converged=not work, work=work, checked=checked, msg=msg)
        return result
