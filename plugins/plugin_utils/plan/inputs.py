"""The plan's inputs, declared once: the type, choices, elements and default of each are the
options of the gpudirect.rdma.plan module's DOCUMENTATION (what ansible-doc shows); what a
declaration cannot say (a range, a form) is in RULES. The rules of one input alone are here (the
node selector, the MachineConfigs), those between inputs in the modules beside this one.

Ansible's ArgumentSpecValidator is not run on them: it takes True for the number 1 and 'on', 'y'
or 1 for true, and its messages name neither the inventory variable nor the range."""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.gpudirect.rdma.plugins.modules.plan import DOCUMENTATION
from ansible_collections.gpudirect.rdma.plugins.plugin_utils import yaml_cache

from . import checks
from .checks import PlanError

PREFIX = "gpudirect_rdma_"
OPTIONS: dict[str, dict] = yaml_cache.load(DOCUMENTATION)["options"]
TASK_ONLY = ("scope",)  # options of the task, which no inventory variable sets
DEFAULTS = {name: spec.get("default") for name, spec in OPTIONS.items() if name not in TASK_ONLY}
METHODS = tuple(OPTIONS["method"]["choices"])
FABRICS = tuple(OPTIONS["fabric"]["choices"])
MAX_VFS = 127
# One udev rule is about 135 bytes once base64-encoded; the MachineConfig carrying them must stay
# well under the API server's 1.5 MiB request limit.
MAX_PERSISTENT_NIC_NAMES = 10000
_LABEL_KEY_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_MAC_6 = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
_MAC_20 = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){19}$")


_REGISTRY = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9._-]+)*$")
RULES = {
    "catalog_source": checks.dns_subdomain,
    "driver_upgrade_max_parallel": checks.whole(0, 1000),
    "driver_upgrade_drain_timeout_seconds": checks.whole(1, 86400),
    "doca_driver_repository": functools.partial(
        checks.string,
        pattern=_REGISTRY,
        expected="an image repository, e.g. nvcr.io/nvidia/mellanox or "
        "mirror.example.com:5000/nvidia/mellanox",
    ),
    "catalog_source_namespace": checks.dns_label,
    "image_pull_secrets": checks.each(checks.dns_subdomain),
    "image_registry": functools.partial(
        checks.string,
        pattern=_REGISTRY,
        expected="a registry host with optional port and path, e.g. mirror.example.com:5000/nvidia",
    ),
    "ipam_per_node_block_size": checks.whole(1, 65536),
    "machine_config_role": checks.dns_label,
    "monitoring_for_minutes": checks.whole(1, 1440),
    "monitoring_link_down_per_hour": checks.whole(1, 1000),
    "monitoring_symbol_errors_per_10m": checks.whole(1, None),
    "monitoring_out_of_sequence_per_second": checks.whole(1, None),
    "monitoring_cnp_per_second": checks.whole(1, None),
    "monitoring_pfc_pause_per_second": checks.whole(1, None),
    "monitoring_nvlink_errors_per_10m": checks.whole(1, None),
    "monitoring_port_rate_gbps_below": checks.whole(0, 3200, " Gb/s (0: no such alert)"),
    "maintenance_timeout_seconds": checks.whole(60, 604800),
    "network_namespace": checks.dns_label,
    "nfd_operand_image": functools.partial(checks.string, expected="a container image reference"),
    "rdma_hca_max": checks.whole(1, 1000),
    "roce_pfc_priority": checks.whole(0, 7, " (an IEEE 802.1p priority)"),
    "roce_cable_length": checks.whole(1, 10000, " meters"),
    "sriov_num_vfs": checks.whole(1, MAX_VFS),
    "sriov_policy_name": checks.dns_subdomain,
    "sriov_priority": checks.whole(0, 99),
    "vlan": checks.whole(0, 4094),
}


class Inputs(dict):
    """The inputs by their short names with the defaults filled in, and the variable that names
    each in a message: the inventory's, unless `names` gives another (say, a node group's key)."""

    def __init__(self, given: Mapping, names: Mapping[str, str] | None = None):
        super().__init__({**DEFAULTS, **{k: v for k, v in given.items() if v is not None}})
        self.names = dict(names or {})

    def name(self, key: str) -> str:
        return self.names.get(key, PREFIX + key)

    def checked(self, key: str) -> Any:
        """The value of key as its declaration and RULES allow; None when it is not set."""
        if self[key] is None:
            return None
        return checks.declared(self.name(key), self[key], OPTIONS[key], RULES.get(key))


def check_known(given: Mapping) -> None:
    """Every input is an option; a misspelt one is named with the option it probably is."""
    for key in given:
        if key not in DEFAULTS:
            close = difflib.get_close_matches(key, DEFAULTS, n=1, cutoff=0.8)
            hint = f"did you mean {PREFIX + close[0]}?" if close else "a known variable"
            raise PlanError(PREFIX + key, given[key], hint)


def check_required(inputs: Inputs) -> None:
    for key, spec in OPTIONS.items():
        if spec.get("required") and inputs[key] in (None, "", []):
            allowed = (
                "one of " + ", ".join(spec["choices"])
                if "choices" in spec
                else "a non-empty list of PF interface names, e.g. [ens8f0np0] "
                "or 'ens8f0np0,ens8f1np0'"
            )
            raise PlanError(inputs.name(key), inputs[key], allowed)


def node_selector(inputs: Inputs) -> dict:
    name = inputs.name("node_selector")
    selector = inputs.checked("node_selector")
    if not selector:
        raise PlanError(
            name,
            selector,
            "at least one label, e.g. {'feature.node.kubernetes.io/pci-15b3.present': 'true'}",
        )
    result = {}
    for key, value in selector.items():
        key_name = key.rsplit("/", 1)[-1] if isinstance(key, str) else key
        if (
            not isinstance(key, str)
            or not _LABEL_KEY_NAME.match(key_name or "")
            or len(key_name) > 63
        ):
            raise PlanError(f"{name} key", key, "a label key, e.g. node-role.kubernetes.io/worker")
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            raise PlanError(f"{name}[{key}]", value, "a label value string (quote 'true')")
        result[key] = value
    return result


def machine_configs(inputs: Inputs) -> dict:
    return {
        "role": inputs.checked("machine_config_role"),
        "blacklist_irdma": inputs.checked("blacklist_irdma"),
        "crio_memlock": inputs.checked("crio_memlock"),
        "persistent_nic_names": _persistent_nic_names(inputs),
    }


def _persistent_nic_names(inputs: Inputs) -> list[dict]:
    name = inputs.name("persistent_nic_names")
    entries = inputs.checked("persistent_nic_names")
    if len(entries) > MAX_PERSISTENT_NIC_NAMES:
        raise PlanError(
            name,
            f"{len(entries)} entries",
            f"at most {MAX_PERSISTENT_NIC_NAMES} (they share one MachineConfig, which "
            "must stay under the API server's 1.5 MiB request limit)",
        )
    rules = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        where = f"{name}[{index}]"
        if not isinstance(entry, Mapping) or set(entry) != {"mac", "name"}:
            raise PlanError(where, entry, "a mapping with exactly 'mac' and 'name'")
        mac = entry["mac"]
        normalised = mac.lower() if isinstance(mac, str) else mac
        if isinstance(normalised, str) and _MAC_6.match(normalised):
            link_type = 1  # ARPHRD_ETHER
        elif isinstance(normalised, str) and _MAC_20.match(normalised):
            link_type = 32  # ARPHRD_INFINIBAND (IPoIB hardware address, 20 bytes)
        else:
            raise PlanError(
                f"{where}.mac",
                mac,
                "a MAC address: 6 bytes for Ethernet "
                "(b8:3f:d2:3b:51:29) or 20 bytes for IPoIB, hex pairs joined by ':'",
            )
        if normalised in seen:
            raise PlanError(
                f"{where}.mac", mac, f"an address not already in {name}[{seen[normalised]}]"
            )
        seen[normalised] = index
        # One name for many addresses is the point: every node's NIC of a rail gets the rail's
        # name (the MachineConfig goes to every node of the pool, each has its own addresses).
        nic_name = checks.interface_name(f"{where}.name", entry["name"])
        rules.append({"mac": normalised, "name": nic_name, "type": link_type})
    return rules
