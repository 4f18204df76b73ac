"""The fabric's health on OpenShift monitoring (opt-in): on or off, and the alerts' thresholds,
each the input gpudirect_rdma_monitoring_<threshold> (builders/monitoring.py names them; a
threshold set while monitoring is off is kept with a warning, by unused.py's rule)."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.monitoring import THRESHOLDS

from .inputs import Inputs


def settings(inputs: Inputs) -> dict:
    """plan['monitoring']: on or off, and the thresholds."""
    return {
        "enabled": inputs.checked("monitoring"),
        "thresholds": {key: inputs.checked(f"monitoring_{key}") for key in THRESHOLDS},
    }
