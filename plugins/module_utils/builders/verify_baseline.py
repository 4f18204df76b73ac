"""Where the cluster's verify baseline is kept (plugin_utils/verify/baseline.py records it), for
what reads it beside verify: the monitoring step takes the GPU-NIC pairing from it."""

from __future__ import annotations

import json

# A ConfigMap in the network's namespace, labelled as the verify test's objects.
NAME = "gpudirect-rdma-verify-baseline"
KEY = "baseline.json"


def from_config_map(found: dict | None) -> dict | None:
    """The baseline a ConfigMap holds, or None."""
    text = ((found or {}).get("data") or {}).get(KEY)
    return json.loads(text) if text else None
