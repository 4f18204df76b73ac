"""The NVIDIA Maintenance Operator (opt-in, with gpudirect_rdma_nic_configuration): it drains
and reboots the nodes whose NIC firmware changes, within the inventory's budgets (its `default`
MaintenanceOperatorConfig)."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import nic_configuration
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.olm import (
    subscription_elsewhere,
)

from .base import EVERYWHERE, Operator, Step, install_timeout
from .checks import Check, Facts, Read, finding

OPERATOR = Operator(
    key="maintenance_operator",
    namespace="nvidia-maintenance-operator",
    package="nvidia-maintenance-operator",
    operator_group="nvidia-maintenance-operator",
    subscription="nvidia-maintenance-operator",
    channel="stable",
    source="certified-operators",
    # The CSV of the 26.4 line, which Network Operator 26.4.x pairs with.
    default_csv="nvidia-maintenance-operator.v26.4.0",
    opt_in="nic_configuration",
)

SUBSCRIPTION = ("operators.coreos.com/v1alpha1", "Subscription")


def check_installed_elsewhere(plan: dict, objects: list, facts: Facts, take_over: bool) -> list:
    """A Maintenance Operator somebody else installed is used, with its own budgets."""
    elsewhere = subscription_elsewhere(
        facts.all(*SUBSCRIPTION), plan["operators"][OPERATOR.key]["package"]
    )
    if not elsewhere:
        return []
    return [
        finding(
            "maintenance-operator",
            "warning",
            f"the NVIDIA Maintenance Operator of {elsewhere} was installed by somebody else: it "
            "is used, not replaced, and its own MaintenanceOperatorConfig's budgets apply "
            "(gpudirect_rdma_maintenance_* are not written)",
        )
    ]


STEP = Step(
    name="maintenance-operator",
    title="NVIDIA Maintenance Operator (opt-in: gpudirect_rdma_nic_configuration)",
    role="maintenance_operator",
    operator=OPERATOR,
    operand=lambda plan, csv: nic_configuration.maintenance_operator_config(plan),
    kinds=((nic_configuration.MAINTENANCE_API_VERSION, "MaintenanceOperatorConfig"),),
    settings=(install_timeout("maintenance_operator"),),
    # Before the Network Operator, whose DOCA driver upgrades and NIC configuration daemon ask
    # it for maintenance.
    wave=1,
    # Anybody's config (only `default` is honoured), and the maintenances that drain the nodes.
    diagnostics=(
        (nic_configuration.MAINTENANCE_API_VERSION, "MaintenanceOperatorConfig", EVERYWHERE),
        (nic_configuration.MAINTENANCE_API_VERSION, "NodeMaintenance", EVERYWHERE),
    ),
    enabled=nic_configuration.enabled,
    opt_in="nic_configuration",
    uses_installed=True,
    preflight=(
        Check(
            "maintenance-operator",
            check_installed_elsewhere,
            lambda plan, objects: (Read(*SUBSCRIPTION),),
        ),
    ),
)
