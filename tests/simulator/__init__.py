"""A stand-in for the controllers a bare API server lacks (OLM, operators, kubelet).

See README.md beside this file for exactly what it simulates.
"""

from __future__ import annotations


def build_simulator(
    api_client, interval: float = 0.2, webhooks=None, ready=None, exporters_port=None
):
    """The simulator with every controller it plays, over the real reference catalog; with
    webhooks (an admission.WebhookServer), OLM registers the policy webhooks it serves; ready is
    called once the first tick has done every controller's work; with exporters_port, the
    exporters' series (exporters.py) are served on it.

    The order matters: the NIC Configuration and Maintenance Operators read the CSVs,
    NicClusterPolicies and nodes that OLM and the operators before them listed in the same tick
    (World.listed), so they cost no request while there is nothing for them to do; the
    Maintenance Operator sees the NodeMaintenances the NIC configuration daemon asked for. The
    driver upgrade controllers come after it (they read its NodeMaintenances) and serve their
    driver pods' logs through the kubelet's log endpoint. One gate holds back every delayed step
    (keyed by object and step), so the loop knows when the next one falls due.

    The controllers are imported here, not when the package is: the stand-ins the simulated
    pods run (`python -m tests.simulator.perftest_standin`, ...) are modules of this package, and
    importing every controller (the kubernetes client among them) cost each of them 0.3 s."""
    from tests.simulator import (
        drivers,
        exporters,
        maintenance,
        nic_configuration,
        olm,
        openshift,
        operators,
        pods,
    )
    from tests.simulator.catalog import load_catalog
    from tests.simulator.core import DelayGate, Simulator

    gate = DelayGate()
    kubelet = pods.Pods(gate)
    return Simulator(
        api_client,
        [
            openshift.ClusterVersionOperator(),
            *olm.controllers(load_catalog(), gate, webhooks),
            *operators.controllers(gate),
            nic_configuration.NicConfigurationOperator(gate),
            maintenance.MaintenanceOperator(gate),
            *drivers.controllers(gate, kubelet.logs.logs),
            kubelet,
            *([exporters.Exporters(exporters_port)] if exporters_port is not None else []),
        ],
        gate,
        interval=interval,
        ready=ready,
    )
