"""gpudirect.rdma.gpu_nic_topology on real-shaped `nvidia-smi topo -m` matrices: an 8-GPU HGX
node with 12 mlx5 ports (tabs as printed, spaces as pasted), an older driver's matrix named by
RDMA device, and outputs that are cut short or not a matrix at all."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpudirect.rdma.plugins.filter.gpu_nic_topology import gpu_nic_topology

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "topology"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


# The HGX board of the fixture: the compute NIC on each GPU's PCIe switch.
PIX = {
    0: "mlx5_0",
    1: "mlx5_3",
    2: "mlx5_4",
    3: "mlx5_5",
    4: "mlx5_6",
    5: "mlx5_9",
    6: "mlx5_10",
    7: "mlx5_11",
}


@pytest.mark.parametrize("name", ["hgx_h100_8gpu_12nic_tabs.txt", "hgx_h100_8gpu_12nic_pasted.txt"])
def test_an_hgx_node_pairs_each_compute_nic_with_the_gpu_on_its_switch(name):
    found = gpu_nic_topology(fixture(name))
    assert [n["name"] for n in found["nics"]] == [f"mlx5_{i}" for i in range(12)]
    assert [g["index"] for g in found["gpus"]] == list(range(8))
    for gpu in found["gpus"]:
        assert gpu["nics"][0] == {"name": PIX[gpu["index"]], "relation": "PIX"}
        relations = [n["relation"] for n in gpu["nics"]]
        assert relations == sorted(relations, key=["PIX", "PXB", "PHB", "NODE", "SYS"].index)
        assert gpu["numa_affinity"] == ("0" if gpu["index"] < 4 else "1")
        assert gpu["cpu_affinity"] == ("0-55,112-167" if gpu["index"] < 4 else "56-111,168-223")
    by_name = {n["name"]: n["gpus"] for n in found["nics"]}
    assert by_name["mlx5_3"][0] == {"index": 1, "relation": "PIX"}
    # A storage port on no GPU's switch: its closest GPUs are those of its NUMA node, by index.
    assert by_name["mlx5_1"][:5] == [
        {"index": 0, "relation": "NODE"},
        {"index": 1, "relation": "NODE"},
        {"index": 2, "relation": "NODE"},
        {"index": 3, "relation": "NODE"},
        {"index": 4, "relation": "SYS"},
    ]


def test_tabs_and_a_pasted_copy_read_the_same():
    assert gpu_nic_topology(fixture("hgx_h100_8gpu_12nic_tabs.txt")) == gpu_nic_topology(
        fixture("hgx_h100_8gpu_12nic_pasted.txt")
    )


def test_an_older_matrix_names_the_nics_by_rdma_device_without_a_legend():
    found = gpu_nic_topology(fixture("dgx_a100_4gpu_mlx5_columns.txt"))
    assert found["nics"] == [
        {
            "name": "mlx5_0",
            "gpus": [
                {"index": 0, "relation": "PXB"},
                {"index": 1, "relation": "PXB"},
                {"index": 2, "relation": "SYS"},
                {"index": 3, "relation": "SYS"},
            ],
        },
        {
            "name": "mlx5_1",
            "gpus": [
                {"index": 2, "relation": "PXB"},
                {"index": 3, "relation": "PHB"},
                {"index": 0, "relation": "SYS"},
                {"index": 1, "relation": "SYS"},
            ],
        },
    ]
    assert found["gpus"][3] == {
        "index": 3,
        "nics": [{"name": "mlx5_1", "relation": "PHB"}, {"name": "mlx5_0", "relation": "SYS"}],
        "cpu_affinity": "20-39,60-79",
        "numa_affinity": "1",
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "no output"),
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
            "a header line starting with GPU0",
        ),
        (fixture("truncated.txt"), "no row for GPU5, GPU6, GPU7, NIC0"),
        (
            fixture("hgx_h100_8gpu_12nic_tabs.txt").split("NIC Legend")[0],
            "column NIC0 has no entry in the NIC Legend",
        ),
        (
            "\tGPU0\tNIC0\nGPU0\t X \nNIC0\tPIX\t X \n\nNIC Legend:\n\n  NIC0: mlx5_0\n",
            "row GPU0 has 1 cell(s), expected 2",
        ),
        (
            "\tGPU0\tNIC0\nGPU0\t X \tNV4\nNIC0\tNV4\t X \n\nNIC Legend:\n\n  NIC0: mlx5_0\n",
            "GPU0 to mlx5_0 (NIC0): got 'NV4'; expected one of PIX, PXB, PHB, NODE, SYS",
        ),
        ("\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tNV4\t X \n", "the matrix has no NIC column"),
    ],
)
def test_output_that_is_no_matrix_or_is_cut_short_says_what_is_wrong(text, expected):
    with pytest.raises(AnsibleFilterError) as raised:
        gpu_nic_topology(text)
    assert str(raised.value).startswith("gpudirect.rdma.gpu_nic_topology: ")
    assert expected in str(raised.value)


def test_a_value_that_is_not_text_is_refused():
    with pytest.raises(AnsibleFilterError):
        gpu_nic_topology(["GPU0"])
