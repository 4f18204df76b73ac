"""YAML read by the harness and the simulator at every start (the CRDs, the CSVs and the catalog
templates of ../shared), parsed with libyaml when PyYAML has it. In pure Python the CRDs alone
(2.3 MB) took 1.9 s of CPU at each control plane start, and an integration run starts about 20;
with libyaml, 0.16 s. Both loaders build the same plain objects (safe tags only)."""

from __future__ import annotations

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(text: str):
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader, C or Python


def load_all(text: str):
    return yaml.load_all(text, Loader=_LOADER)
