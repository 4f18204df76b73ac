"""The roles' tasks as the tests read them: every task of every roles/*/tasks/*.yml, those inside
a block, rescue or always section too, in file order."""

from __future__ import annotations

from pathlib import Path

import yaml

ROLES = Path(__file__).resolve().parents[2] / "roles"
SECTIONS = ("block", "rescue", "always")


def _flattened(tasks: list[dict] | None) -> list[dict]:
    found = []
    for task in tasks or []:
        found.append(task)
        for section in SECTIONS:
            found.extend(_flattened(task.get(section)))
    return found


def role_tasks() -> list[dict]:
    """Every task of the roles, a block itself and then the tasks of its sections."""
    return [
        task
        for path in sorted(ROLES.glob("*/tasks/*.yml"))
        for task in _flattened(yaml.safe_load(path.read_text()))
    ]
