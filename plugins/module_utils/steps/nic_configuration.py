"""The NICs' firmware settings for GPUDirect RDMA (opt-in, gpudirect_rdma_nic_configuration): one
NicConfigurationTemplate per node group and NIC type, which the NIC Configuration Operator (run
by the NicClusterPolicy) applies node by node under the Maintenance Operator's budgets."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils import gates as gate
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import nic_configuration

from .base import EVERYWHERE, Setting, Step


def gates(plan: dict, settings: dict, results: list[dict]) -> list[dict]:
    """Each NicConfigurationTemplate is applied: every NicDevice it lists has it in its spec and
    ConfigUpdateInProgress reason UpdateSuccessful at its current generation (the NIC
    configuration check, k8s/nic_configuration.py: device errors and a paused Maintenance
    Operator fail the gate, a node in maintenance or rebooting is progress)."""
    return [gate.template_applied(t) for t in nic_configuration.nic_configuration_templates(plan)]


def reset_done(template: dict) -> list[dict]:
    """Once a live template asks for resetToDefault, each of its devices is back at the
    firmware's defaults (the same check: the devices hold the reset in their spec)."""
    return [gate.template_applied(template, "reset to the firmware defaults")]


STEP = Step(
    name="nic-configuration",
    title="NIC firmware configuration (opt-in: gpudirect_rdma_nic_configuration)",
    role="nic_configuration",
    operator=None,
    operand=lambda plan, csv: nic_configuration.nic_configuration_templates(plan),
    kinds=((nic_configuration.API_VERSION, "NicConfigurationTemplate"),),
    gates=gates,
    settings=(
        Setting(
            "ready_timeout",
            "nic_configuration_timeout",
            3600,
            (
                "Seconds to wait until every NicDevice of every template reports "
                "C(UpdateSuccessful) (nodes drain and reboot one maintenance budget at a time), "
                "and, without C(gpudirect_rdma_nic_type), for the NicDevices to appear.",
            ),
        ),
    ),
    # Once the DOCA driver is ready (the NicClusterPolicy's or the NicNodePolicies'), as NVIDIA
    # requires, after the MachineConfigs' reboots, beside the GPU Operator's wave, and before
    # the RDMA method's objects, which use the configured NICs.
    wave=4,
    prunes=True,
    enabled=nic_configuration.enabled,
    discover=nic_configuration.with_discovered_types,
    # resetToDefault: every device goes back to its firmware defaults (a reboot each).
    reset=({"spec": {"resetToDefault": True}}, reset_done),
    namespaces=lambda plan: [plan["operators"]["maintenance_operator"]["namespace"]],
    # Anybody's templates (two on one device apply neither), and the devices with their
    # conditions.
    diagnostics=(
        (nic_configuration.API_VERSION, "NicConfigurationTemplate", EVERYWHERE),
        (nic_configuration.API_VERSION, "NicDevice", EVERYWHERE),
    ),
)
