"""make demo's fake nodes (hack/demo_nodes.py), planned from any inventory as Ansible reads it:
two per node group with the group's labels and NICs; a wrong inventory is one line, never a
traceback."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_INVENTORY = str(Path(sys.executable).parent / "ansible-inventory")
spec = importlib.util.spec_from_file_location("demo_nodes", ROOT / "hack" / "demo_nodes.py")
demo_nodes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(demo_nodes)


def groups_of(inventory) -> list[dict]:
    variables = demo_nodes.inventory_variables(str(inventory), ANSIBLE_INVENTORY)
    return demo_nodes.node_groups(variables)


def test_a_copy_of_the_node_groups_example_elsewhere_gives_each_group_its_labels(tmp_path):
    copy = tmp_path / "somewhere" / "rack7"
    shutil.copytree(ROOT / "inventories" / "node-groups", copy)
    a100, h100 = groups_of(copy)
    assert (a100["prefix"], a100["fabric"], a100["labels"]) == (
        "worker-a100",
        "roce",
        {"gpudirect.example.com/pool": "a100"},
    )
    assert a100["interfaces"] == ["ens1f0np0", "ens2f0np0", "ens3f0np0", "ens4f0np0"]
    assert (h100["prefix"], h100["fabric"], len(h100["interfaces"])) == (
        "worker-h100",
        "infiniband",
        8,
    )
    assert demo_nodes.lines([a100])[0] == (
        "worker-a100\troce\t-\tgpudirect.example.com/pool=a100\t"
        "ens1f0np0 ens2f0np0 ens3f0np0 ens4f0np0"
    )


def test_one_group_is_worker_0_and_1_with_nfd_giving_the_labels():
    (group,) = groups_of(ROOT / "inventories" / "shared-device-roce")
    assert (group["prefix"], group["labels"], group["interfaces"]) == ("worker", {}, ["ens8f0np0"])


def written(name: str, text: str):
    def setup(folder: Path) -> Path:
        (folder / name).write_text(text)
        return folder / name

    return setup


MISSPELT = """all:
  hosts:
    localhost:
  vars:
    gpudirect_rdma_method: shared_devcie
    gpudirect_rdma_fabric: roce
    gpudirect_rdma_interfaces: [ens8f0np0]
"""


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda folder: folder / "missing", "no such file or folder"),
        (
            written("hosts.yml", "all:\n  hosts:\n    node1:\n"),
            "localhost has no gpudirect_rdma_* variable",
        ),
        (
            written("vars.yml", MISSPELT),
            "gpudirect_rdma_method: got 'shared_devcie'; expected one of shared_device",
        ),
    ],
)
def test_a_wrong_inventory_is_one_message(tmp_path, capsys, setup, message):
    inventory = setup(tmp_path)
    assert demo_nodes.main([str(inventory), ANSIBLE_INVENTORY]) == 1
    err = capsys.readouterr().err
    assert err.startswith("make demo: ") and message in err, err
    assert "Traceback" not in err
