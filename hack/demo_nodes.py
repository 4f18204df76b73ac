"""make demo's fake nodes for any inventory: two per node group, with the group's labels, NICs,
fabric and NIC type, read from the inventory as Ansible reads it (`ansible-inventory --host
localhost`: group_vars, host_vars, any inventory format, anywhere on disk) and planned as the
playbooks plan it. Prints one line per group for hack/demo.sh:

    <name prefix> TAB <fabric> TAB <NIC type or -> TAB <label=value,...> TAB <interface ...>

A wrong inventory or a variable the plan refuses ends with the message, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import (  # noqa: E402
    PlanError,
    check_inventory,
)


class DemoError(Exception):
    pass


def inventory_variables(inventory: str, ansible_inventory: str = "ansible-inventory") -> dict:
    """The variables localhost has in the inventory (the playbooks run on localhost)."""
    if not Path(inventory).exists():
        raise DemoError(f"INVENTORY={inventory}: no such file or folder")
    found = subprocess.run(
        [ansible_inventory, "-i", inventory, "--host", "localhost"],
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        why = " ".join((found.stderr or found.stdout).split())[-500:]
        raise DemoError(
            f"INVENTORY={inventory}: ansible-inventory cannot read localhost's variables ({why}); "
            "the playbooks run on localhost: the inventory must have it, as inventories/*/hosts.yml"
        )
    variables = json.loads(found.stdout)
    if not any(name.startswith("gpudirect_rdma_") for name in variables):
        raise DemoError(
            f"INVENTORY={inventory}: localhost has no gpudirect_rdma_* variable; the playbooks run "
            "on localhost and read its variables (group_vars/all.yml, as in inventories/*/)"
        )
    return variables


def node_groups(variables: dict) -> list[dict]:
    """Each node group's fake nodes: their name prefix, fabric, NIC type, labels and NICs."""
    try:
        plan = check_inventory(variables)["plan"]
    except PlanError as error:
        raise DemoError(str(error)) from None
    groups = []
    for group in plan["groups"]:
        groups.append(
            {
                "prefix": f"worker-{group['name']}" if group["name"] else "worker",
                "fabric": group["fabric"],
                "nic_type": (group.get("nic_types") or [None])[0],
                # The implicit group's selector (NFD's label by default) comes from the
                # simulated NFD; a named group's labels are the node group's own.
                "labels": dict(group["node_selector"]) if group["name"] else {},
                "interfaces": [rail["interface"] for rail in group["rails"]],
            }
        )
    return groups


def lines(groups: list[dict]) -> list[str]:
    return [
        "\t".join(
            (
                g["prefix"],
                g["fabric"],
                g["nic_type"] or "-",
                ",".join(f"{k}={v}" for k, v in g["labels"].items()) or "-",
                " ".join(g["interfaces"]),
            )
        )
        for g in groups
    ]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: demo_nodes.py <inventory> <ansible-inventory>", file=sys.stderr)
        return 2
    try:
        print("\n".join(lines(node_groups(inventory_variables(argv[0], argv[1])))))
    except DemoError as error:
        print(f"make demo: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
