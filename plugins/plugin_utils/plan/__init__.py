"""The one validation and normalisation step: inventory values in, a plan out.

`build_plan(inputs)` takes the inputs by their short names (`method`, `ipam_range`, ...; the
inventory variables are the same names with the `gpudirect_rdma_` prefix) and returns a new dict
that every builder reads; `check_inventory(variables)`, what a playbook runs first, checks the
names, the plan and the settings. Every bad value raises `PlanError` naming the variable, the value
and what is allowed, before anything is written anywhere. The rules are split by subject:
inputs.py (the declaration, one input alone), rails.py, groups.py, operators.py, settings.py,
nic_configuration.py, monitoring.py, unused.py (a setting nothing in the plan would use), checks.py.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.releases import GPU_OPERATOR_RELEASES

from . import checks, groups, monitoring, nic_configuration, operators, settings
from .checks import PlanError, check_integer, check_number
from .inputs import DEFAULTS, OPTIONS, PREFIX, Inputs, check_known, machine_configs
from .operators import OPERATORS

# What the action and filter plugins import from here; the rest from the modules beside this one.
__all__ = [
    "OPERATORS",
    "PlanError",
    "build_plan",
    "check_integer",
    "check_inventory",
    "check_number",
]


def check_inventory(
    variables: Mapping, overrides: Mapping | None = None, scope: str = "all"
) -> dict:
    """The validation a playbook runs first, over its variables (by name; names neither of the
    collection's prefix nor of a settings role's are ignored): an old or misspelt name, then the
    plan's inputs (scope 'all'; overrides, short names, win over the variables), then the
    settings. Returns {'plan': ..., 'settings': ...}."""
    checks.choice("scope", scope, tuple(OPTIONS["scope"]["choices"]))
    misspelt = settings.unknown_variables(variables, scope)
    if misspelt:
        raise settings.MisspeltVariable(*misspelt[0])
    result = {}
    if scope == "all":
        inputs = {
            name.removeprefix(PREFIX): value
            for name, value in variables.items()
            if name.startswith(PREFIX) and name.removeprefix(PREFIX) in DEFAULTS
        }
        result["plan"] = build_plan({**inputs, **(overrides or {})})
    result["settings"] = settings.check_settings(variables)
    return result


def driver_upgrades(inputs: Inputs) -> dict:
    """The GPU and DOCA drivers' upgrade budgets (their upgradePolicy): nodes at once (0: no
    limit), GPU nodes unavailable at once, and the seconds a pod deletion or a drain may take."""
    # At least one node: 0 would hold every GPU driver upgrade for good. An empty survey answer
    # is the default.
    unavailable = nic_configuration.node_budget(inputs, "driver_upgrade_max_unavailable", 1)
    return {
        "max_parallel": inputs.checked("driver_upgrade_max_parallel"),
        "max_unavailable": DEFAULTS["driver_upgrade_max_unavailable"]
        if unavailable is None
        else unavailable,
        "drain_timeout_seconds": inputs.checked("driver_upgrade_drain_timeout_seconds"),
    }


def build_plan(given: Mapping) -> dict:
    """Validate the inputs (short names) and return the normalised plan (a new dict)."""
    check_known(given)
    inputs = Inputs(given)
    network_release, gpu_release = operators.releases(inputs)
    images = operators.images(inputs, network_release)
    warnings: list[str] = []
    node_groups = groups.groups(inputs, images["ofedDriver"]["version"], warnings)
    olm = operators.olm(inputs, network_release, gpu_release)
    version = operators.openshift_version(inputs)
    nfd_image = inputs.checked("nfd_operand_image")
    pull_secrets = inputs.checked("image_pull_secrets")
    secret = operators.registry_secret(inputs, olm["network_operator"]["namespace"])
    if secret and secret["name"] not in pull_secrets:
        pull_secrets.append(secret["name"])
    return {
        "groups": node_groups,
        "nic_policy_model": groups.model(inputs, len(node_groups)),
        "network_namespace": inputs.checked("network_namespace"),
        "gpu": {
            "memory": inputs.checked("gpu_memory"),
            "gds": inputs.checked("gpu_gds"),
            "gdrcopy": inputs.checked("gpu_gdrcopy"),
            "release": gpu_release,
            # The release's default ClusterPolicy, for when no installed CSV gives one.
            "default_spec": GPU_OPERATOR_RELEASES[gpu_release]["cluster_policy_spec"],
        },
        "operators": olm,
        "network_operator_release": network_release,
        "images": images,
        "image_pull_secrets": pull_secrets,
        "image_registry_secret": secret,
        "openshift_version": version,
        # The OpenShift minor the cluster moves to next, which upgrade.yml checks the releases
        # against (None: none planned).
        "openshift_target_version": operators.openshift_version(inputs, "openshift_target_version"),
        "openshift_support": operators.openshift_support(network_release, gpu_release),
        # The operator's own image unless the inventory pins one (builders/nfd.py says why).
        "nfd": {"operand_image": nfd_image},
        "machine_configs": machine_configs(inputs),
        "driver_upgrades": driver_upgrades(inputs),
        "nic_configuration": nic_configuration.settings(inputs, node_groups, network_release),
        "monitoring": monitoring.settings(inputs),
        # The disruptions of nodes in service the inventory agrees to (k8s/disruption.py).
        "allow_disruption": inputs.checked("allow_disruption"),
        # What the plan ignores and says so (gpudirect.rdma.plan shows them as warnings).
        "warnings": warnings,
    }
