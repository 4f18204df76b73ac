"""One topology judgment: the verification pods decide each rail's GPU with the awk program in
verify_test.sh (the images have no Python), the report reads the same matrix with
plugin_utils/topology.py. This contract runs the very program the pods run (taken from the
script between its PAIR_RAILS markers) and the Python over every file of the real-output corpus
(tests/unit/real_outputs.py), every topology fixture, those matrices as nvidia-smi really prints
them (ANSI codes around the header, the GPU NUMA ID's empty cell), a RoCE LAG device, a header
cell nobody knows, and matrices cut short, with every awk found on this machine (mawk, gawk,
busybox), for many lists of rails; and requires the same answer, messages included."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ansible_collections.gpudirect.rdma.plugins.plugin_utils import topology
from tests.unit.real_outputs import corpus_files

REPO = Path(__file__).resolve().parents[4]
SCRIPT = REPO / "plugins" / "plugin_utils" / "verify_test.sh"
FIXTURES = REPO / "tests" / "unit" / "fixtures" / "topology"
PROGRAM = SCRIPT.read_text().split("<<'PAIR_RAILS' || true\n", 1)[1].split("\nPAIR_RAILS\n", 1)[0]

AWKS = [
    command
    for command in (["mawk"], ["gawk"], ["busybox", "awk"], ["original-awk"])
    if shutil.which(command[0])
]
assert AWKS, "no awk on this machine"
ANSI_HEADER = "\x1b[4m"


def awk_pairing(awk: list[str], text: str, rails: list[tuple[str, str | None]]) -> list | str:
    spec = ",".join(f"{device}:{pf or '-'}" for device, pf in rails)
    result = subprocess.run(
        [*awk, "-v", f"rails={spec}", PROGRAM],
        input=text,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    lines = result.stdout.splitlines()
    if lines and lines[0].startswith("error "):
        return lines[0].removeprefix("error ")
    chosen = []
    for line in lines:
        rail, gpu, relation, shared, found = line.split(" ")
        chosen.append(
            {
                "rail": int(rail),
                "gpu": None if gpu == "-" else int(gpu),
                "relation": relation,
                "shared_with": None if shared == "-" else int(shared),
                "matrix_nic": None if found == "-" else found,
            }
        )
    return chosen


def python_pairing(text: str, rails: list[tuple[str, str | None]]) -> list | str:
    try:
        parsed = topology.parse(text)
    except topology.TopologyError as error:
        return str(error)
    return [
        {key: entry[key] for key in ("rail", "gpu", "relation", "shared_with", "matrix_nic")}
        for entry in topology.pair_rails(parsed, rails)
    ]


def as_printed(matrix: str) -> str:
    """The matrix as nvidia-smi writes it to a file: the header wrapped in ANSI underline."""
    lines = matrix.splitlines()
    header = lines[0]
    indent = header[: len(header) - len(header.lstrip("\t"))]
    lines[0] = f"{indent}{ANSI_HEADER}{header.lstrip(chr(9))}\x1b[0m"
    return "\n".join(lines) + "\n"


def with_bond(matrix: str) -> str:
    """The HGX matrix with its NIC4 as a RoCE LAG device, as the NIC Legend names it."""
    return matrix.replace("  NIC4: mlx5_4", "  NIC4: mlx5_bond_0")


def with_header_cell(matrix: str, cell: str) -> str:
    lines = matrix.splitlines()
    cells = lines[0].split("\t")
    cells.insert(3, cell)
    lines[0] = "\t".join(cells)
    return "\n".join(lines) + "\n"


def cut_after(matrix: str, lines: int) -> str:
    return "\n".join(matrix.splitlines()[:lines]) + "\n"


def matrices() -> dict[str, str]:
    found = {}
    for path in corpus_files():
        found[f"corpus {path.parent.name}/{path.name}"] = path.read_text(errors="replace")
    for path in sorted(FIXTURES.glob("*.txt")):
        text = path.read_text()
        found[f"fixture {path.name}"] = text
        if "\t" in text.splitlines()[0]:
            found[f"fixture {path.name}, as printed"] = as_printed(text)
    hgx = (FIXTURES / "hgx_h100_8gpu_12nic_tabs.txt").read_text()
    found["hgx with mlx5_bond_0"] = as_printed(with_bond(hgx))
    found["hgx with a header cell nobody knows"] = with_header_cell(hgx, "PCIe Gen")
    found["hgx with a GPU column without a row"] = with_header_cell(hgx, "GPU9")
    found["hgx cut inside its rows"] = cut_after(hgx, 12)
    found["hgx cut before its legend"] = hgx.split("NIC Legend")[0]
    found["hgx with a cell that is no relation"] = hgx.replace("\tPIX\t", "\tPIXX\t", 1)
    found["hgx with an NVLink cell to a NIC"] = hgx.replace("\tPIX\t", "\tNV4\t", 1)
    found["hgx pasted, as printed"] = as_printed(
        (FIXTURES / "hgx_h100_8gpu_12nic_pasted.txt").read_text()
    )
    return found


MATRICES = matrices()


def rail_lists(text: str) -> list[list[tuple[str, str | None]]]:
    """Every NIC alone, all in the matrix's order and reversed, a VF found by its PF, a device
    that is not there, and more rails than GPUs (sharing)."""
    try:
        names = [nic["name"] for nic in topology.parse(text)["nics"]]
    except topology.TopologyError:
        names = ["mlx5_0", "mlx5_1"]
    lists = [[(name, None)] for name in names]
    lists += [[(n, None) for n in names], [(n, None) for n in reversed(names)]]
    lists += [[("mlx5_77", names[0]), ("mlx5_78", None), *[(n, None) for n in names]]]
    lists += [[(n, None) for n in names] * 2]
    return lists


@pytest.mark.parametrize("awk", AWKS, ids=lambda command: command[0])
@pytest.mark.parametrize("name", sorted(MATRICES))
def test_the_pods_awk_and_the_reports_python_give_the_same_answer(awk, name):
    text = MATRICES[name]
    for rails in rail_lists(text):
        assert awk_pairing(awk, text, rails) == python_pairing(text, rails), (name, rails)


def test_the_contract_covers_the_failures_the_issue_found():
    """The real 1-GPU matrix (ANSI header, no NIC), a LAG device, and a header cell nobody
    knows each get their own answer from both (not a shifted column, not 'no header')."""
    real = next(t for n, t in MATRICES.items() if n.endswith("nvidia-smi-topo-m.txt"))
    assert python_pairing(real, []) == (
        "the matrix has no NIC column: nvidia-smi sees no NIC on this node"
    )
    bond = python_pairing(MATRICES["hgx with mlx5_bond_0"], [("mlx5_bond_0", None)])
    assert [(e["gpu"], e["relation"]) for e in bond] == [(2, "PIX")]
    assert python_pairing(MATRICES["hgx with a header cell nobody knows"], []) == (
        "header cell 'PCIe Gen' is neither a device with a row of its own nor one of CPU "
        "Affinity, NUMA Affinity, GPU NUMA ID"
    )
    assert python_pairing(MATRICES["hgx with a GPU column without a row"], []).startswith(
        "no row for GPU9"
    )
    shared = python_pairing(
        MATRICES["fixture dgx_a100_4gpu_mlx5_columns.txt"], [("mlx5_0", None)] * 3
    )
    assert [(e["gpu"], e["shared_with"]) for e in shared] == [(0, None), (1, None), (0, 0)]
