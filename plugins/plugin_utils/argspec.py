"""Validate a plugin's arguments against the options in its own DOCUMENTATION."""

from __future__ import annotations

import json

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpudirect.rdma.plugins.plugin_utils import yaml_cache

_SPEC_KEYS = ("type", "required", "choices", "default", "elements")


def _spec(options: dict) -> dict:
    spec = {}
    for name, option in options.items():
        spec[name] = {key: option[key] for key in _SPEC_KEYS if key in option}
        if "suboptions" in option:
            spec[name]["options"] = _spec(option["suboptions"])
    return spec


def spec_of(documentation: str) -> dict:
    """The argument spec of the options a plugin's DOCUMENTATION declares."""
    return _spec(yaml_cache.load(documentation)["options"])


def plain(value):
    """The value as plain dicts, lists, strings and numbers (templated values arrive as
    subclasses carrying Ansible's tags, which YAML dumpers and deep copies do not want)."""
    return json.loads(json.dumps(value))


def validate(documentation: str, filter_name: str, arguments: dict) -> dict:
    """The validated arguments (with defaults) as plain data, or AnsibleFilterError saying
    what was wrong."""
    options = yaml_cache.load(documentation)["options"]
    # Plain data first: the validator deep-copies what it is given, and a deep copy of a
    # templated value walks Ansible's lazy containers item by item (1.7 s for a plan with 8,000
    # persistent NIC names, 20 ms as plain data).
    given = {name: plain(value) for name, value in arguments.items() if value is not None}
    result = ArgumentSpecValidator(_spec(options)).validate(given)
    if result.error_messages:
        raise AnsibleFilterError(f"{filter_name}: " + "; ".join(result.error_messages))
    return {name: result.validated_parameters.get(name) for name in options}
