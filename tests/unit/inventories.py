"""The example inventories as plan inputs (variables without the gpudirect_rdma_ prefix)."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
INVENTORIES = REPO_ROOT / "inventories"
NAMES = sorted(p.name for p in INVENTORIES.iterdir() if (p / "group_vars" / "all.yml").exists())


def inputs(name: str) -> dict:
    variables = yaml.safe_load((INVENTORIES / name / "group_vars" / "all.yml").read_text())
    return {key.removeprefix("gpudirect_rdma_"): value for key, value in variables.items()}
