"""The fabric's health on OpenShift monitoring (opt-in): on or off, and the alerts' thresholds,
each the input gpudirect_rdma_monitoring_<threshold> (builders/monitoring.py names them)."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.monitoring import THRESHOLDS

from .inputs import DEFAULTS, PREFIX, Inputs


def threshold_input(key: str) -> str:
    return f"monitoring_{key}"


def settings(inputs: Inputs, warnings: list[str]) -> dict:
    """plan['monitoring']: on or off, and the thresholds. A threshold set while monitoring is off
    is kept, with a warning (turning it off keeps the settings for when it is on again)."""
    enabled = inputs.checked("monitoring")
    thresholds = {key: inputs.checked(threshold_input(key)) for key in THRESHOLDS}
    if not enabled:
        for key, value in thresholds.items():
            if value != DEFAULTS[threshold_input(key)]:
                warnings.append(
                    f"{inputs.name(threshold_input(key))} is set but unused while "
                    f"{PREFIX}monitoring is false: only the monitoring step's alerts use it "
                    "(kept for when it is turned on again)"
                )
    return {"enabled": enabled, "thresholds": thresholds}
