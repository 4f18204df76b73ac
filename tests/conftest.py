"""Make the collection importable as ansible_collections.gpudirect.rdma, as `make venv` does,
so `pytest` works without make too."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
COLLECTIONS = REPO_ROOT / ".collections"
LINK = COLLECTIONS / "ansible_collections" / "gpudirect" / "rdma"

if not LINK.exists():
    LINK.parent.mkdir(parents=True, exist_ok=True)
    LINK.symlink_to(REPO_ROOT)
os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", str(COLLECTIONS))
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))
