"""Benchmark: plan + render for 1 node and for 1,000 nodes x 8 rails.

Nodes enter the plan through persistent NIC names (one udev rule per NIC MAC address, so 1,000
nodes x 8 rails = 8,000 rules); rails multiply resources and networks. Two measurements per
case: the engine alone (plan + objects + kustomize layout, best of several runs, in-process)
and the whole `ansible-playbook playbooks/render.yml` run (wall time, one run, files written).

    make benchmark-render      # or: .venv/bin/python benchmarks/plan_render.py
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / ".collections"))

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.builders import (  # noqa: E402
    build_objects,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.render import (  # noqa: E402
    kustomize_tree,
)


def inputs(nodes: int, rails: int) -> dict:
    interfaces = [f"ens{i + 1}f0np0" for i in range(rails)]
    names = [
        {"mac": f"b8:3f:d2:{n >> 8 & 0xFF:02x}:{n & 0xFF:02x}:{r:02x}", "name": interfaces[r]}
        for n in range(nodes)
        for r in range(rails)
    ]
    return {
        "method": "shared_device",
        "fabric": "roce",
        "interfaces": interfaces,
        "ipam_range": "10.100.0.0/16",
        "persistent_nic_names": names,
        "crio_memlock": True,
        "blacklist_irdma": True,
    }


def engine(case: dict, repeat: int) -> tuple[float, int, int]:
    best = float("inf")
    for _round in range(repeat):
        began = time.perf_counter()
        objects = build_objects(build_plan(case))
        files = kustomize_tree(objects)
        best = min(best, time.perf_counter() - began)
    return best, len(objects), sum(len(text) for text in files.values())


def playbook(case: dict) -> float:
    with tempfile.TemporaryDirectory() as work:
        inventory = Path(work) / "inventory"
        (inventory / "group_vars").mkdir(parents=True)
        (inventory / "hosts.yml").write_text(
            "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
            "      ansible_python_interpreter: '{{ ansible_playbook_python }}'\n"
        )
        variables = {f"gpudirect_rdma_{k}": v for k, v in case.items()}
        (inventory / "group_vars" / "all.yml").write_text(yaml.safe_dump(variables))
        env = {
            **os.environ,
            "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
            "ANSIBLE_COLLECTIONS_PATH": str(REPO_ROOT / ".collections"),
        }
        began = time.perf_counter()
        subprocess.run(
            [
                str(Path(sys.executable).parent / "ansible-playbook"),
                "-i",
                str(inventory),
                str(REPO_ROOT / "playbooks" / "render.yml"),
                "-e",
                f"gpudirect_rdma_render_dir={work}/tree",
            ],
            check=True,
            capture_output=True,
            env=env,
            cwd=REPO_ROOT,
        )
        return time.perf_counter() - began


def main() -> None:
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )
    print(
        f"{'case':<22}{'objects':>8}{'udev rules':>12}{'tree bytes':>12}"
        f"{'engine ms':>11}{'render.yml s':>14}"
    )
    for nodes, rails in ((1, 1), (1000, 8)):
        case = inputs(nodes, rails)
        seconds, objects, size = engine(case, repeat=20 if nodes == 1 else 5)
        wall = playbook(case)
        print(
            f"{f'{nodes} node(s) x {rails} rail(s)':<22}{objects:>8}{nodes * rails:>12}"
            f"{size:>12}{seconds * 1000:>11.1f}{wall:>14.2f}"
        )


if __name__ == "__main__":
    main()
