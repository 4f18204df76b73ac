"""What the collection says about itself in a report: its version, from the MANIFEST.json of an
installed collection, else the galaxy.yml of a checkout."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def collection_version(root: Path = ROOT) -> str:
    """The collection's version ('unknown' when neither file says)."""
    manifest = root / "MANIFEST.json"
    if manifest.is_file():
        return str(json.loads(manifest.read_text())["collection_info"]["version"])
    galaxy = root / "galaxy.yml"
    if galaxy.is_file():
        return str((yaml.safe_load(galaxy.read_text()) or {}).get("version", "unknown"))
    return "unknown"
