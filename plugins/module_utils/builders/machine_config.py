"""The three optional MachineConfigs of the worker pool (each one reboots the pool)."""

from __future__ import annotations

import base64

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    new_object,
)

API_VERSION = "machineconfiguration.openshift.io/v1"
ROLE_LABEL = "machineconfiguration.openshift.io/role"
IGNITION_VERSION = "3.2.0"
UDEV_RULES_PATH = "/etc/udev/rules.d/70-persistent-net.rules"
CRIO_DROP_IN_PATH = "/etc/crio/crio.conf.d/10-custom"
CRIO_MEMLOCK = '[crio.runtime]\ndefault_ulimits = [\n"memlock=-1:-1"\n]\n'
FILE_MODE = 420  # 0644


def _data_url(text: str) -> str:
    return "data:text/plain;base64," + base64.b64encode(text.encode()).decode()


def _machine_config(plan: dict, name: str, spec: dict) -> dict:
    role = plan["machine_configs"]["role"]
    return new_object(API_VERSION, "MachineConfig", name, labels={ROLE_LABEL: role}, spec=spec)


def udev_rules(rules: list[dict]) -> str:
    """One rule per MAC address: the NIC keeps its name (ATTR{type} 1 Ethernet, 32 IPoIB)."""
    return "".join(
        f'SUBSYSTEM=="net",ACTION=="add",ATTR{{address}}=="{r["mac"]}",'
        f'ATTR{{type}}=="{r["type"]}",NAME="{r["name"]}"\n'
        for r in rules
    )


def machine_configs(plan: dict) -> list[dict]:
    settings = plan["machine_configs"]
    role = settings["role"]
    result = []
    if settings["blacklist_irdma"]:
        result.append(
            _machine_config(
                plan, f"99-{role}-blacklist-irdma", {"kernelArguments": ["module_blacklist=irdma"]}
            )
        )
    if settings["persistent_nic_names"]:
        result.append(
            _machine_config(
                plan,
                "99-machine-config-udev-network",
                {
                    "config": {
                        "ignition": {"version": IGNITION_VERSION},
                        "storage": {
                            "files": [
                                {
                                    "path": UDEV_RULES_PATH,
                                    "mode": FILE_MODE,
                                    "contents": {
                                        "source": _data_url(
                                            udev_rules(settings["persistent_nic_names"])
                                        )
                                    },
                                }
                            ]
                        },
                    },
                },
            )
        )
    if settings["crio_memlock"]:
        result.append(
            _machine_config(
                plan,
                f"02-{role}-container-runtime",
                {
                    "config": {
                        "ignition": {"version": IGNITION_VERSION},
                        "storage": {
                            "files": [
                                {
                                    "path": CRIO_DROP_IN_PATH,
                                    "mode": FILE_MODE,
                                    "overwrite": True,
                                    "contents": {"source": _data_url(CRIO_MEMLOCK)},
                                }
                            ]
                        },
                    },
                },
            )
        )
    return result
