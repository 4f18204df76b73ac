"""Play variables as an action plugin reads them."""

from __future__ import annotations

import json
from collections.abc import Mapping

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import plain
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import check_inventory
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.inputs import DEFAULTS, PREFIX
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.settings import settings, watched

# What starts a Jinja expression, statement or comment in a variable's value (Ansible's
# delimiters; only a template file's own header can change them).
_TEMPLATE_STARTS = ("{{", "{%", "{#")


def templated(templar, value):
    """templar.template(value), skipped for plain data without a template (the templar walks
    every item: 0.45 s for 8,000 persistent NIC names). JSON tells at C speed: outside strings it
    never writes "{{", "{%" or "{#"; what it cannot write (a vaulted value) goes to the templar."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        return templar.template(value)
    if any(start in text for start in _TEMPLATE_STARTS):
        return templar.template(value)
    return value


def checked_inventory(
    templar, task_vars: Mapping, overrides: Mapping | None = None, scope: str = "all"
) -> dict:
    """plan.check_inventory over the task's variables: the inputs and settings templated, the
    other watched names by name only (the check of misspelt names), all as plain data (no tags,
    which YAML dumpers refuse). PlanError on a bad value."""
    readable = {*(PREFIX + name for name in DEFAULTS), *settings()}
    variables = {
        name: templated(templar, value) if name in readable else None
        for name, value in task_vars.items()
        if watched(name)
    }
    return check_inventory(plain(variables), overrides=plain(overrides or {}), scope=scope)
