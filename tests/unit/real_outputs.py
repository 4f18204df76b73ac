"""The corpus of real tool outputs, and every parser of the collection as the corpus test runs it.

Two folders hold it: `real-outputs/` of the shared folder (../shared, read-only: captured by
others, with a SOURCES.md per machine) and `tests/unit/fixtures/real-outputs/` (what this
project captured itself, make test-gpu's runs among them, each folder with its SOURCES.md).
Every file of every folder below them is a sample, except the SOURCES.md and README.md that say
where the files came from: a new folder is picked up without a code change, and fails the test
until its files have their expectations in tests/unit/real_outputs.yml.

Each parser is the collection's own function behind a small reader that turns its result into
a summary (what the expectations compare) and its refusal into Refused, so the test can ask of
every parser and every file: does it read what the file says, or refuse what it cannot
understand, with the message expected.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ansible_collections.gpudirect.rdma.plugins.plugin_utils import (
    host_checks,
    nccl,
    nccl_test,
    perftest,
    topology,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.log import pod_log
from tests.harness.controlplane import shared_dir

REPO = Path(__file__).resolve().parents[2]
CAPTURED = REPO / "tests" / "unit" / "fixtures" / "real-outputs"
EXPECTATIONS = REPO / "tests" / "unit" / "real_outputs.yml"
NOT_SAMPLES = ("SOURCES.md", "README.md")


def roots() -> list[Path]:
    return [shared_dir() / "real-outputs", CAPTURED]


def corpus_files() -> list[Path]:
    """Every sample of the corpus, by folder and name."""
    found = []
    for root in roots():
        found += [
            path
            for path in sorted(root.rglob("*"))
            if path.is_file() and path.name not in NOT_SAMPLES
        ]
    return found


def key(path: Path) -> str:
    """A sample's name in the expectations: its folder below the root and its file name."""
    root = next(r for r in roots() if r in path.parents)
    return path.relative_to(root).as_posix()


class Refused(ValueError):
    """The parser does not take the text: not its format, or not what it can understand."""


def _topology(text: str) -> dict:
    try:
        parsed = topology.parse(text)
    except topology.TopologyError as error:
        raise Refused(str(error)) from error
    return {
        "gpus": [gpu["index"] for gpu in parsed["gpus"]],
        "closest": {
            nic["name"]: [nic["gpus"][0]["index"], nic["gpus"][0]["relation"]]
            for nic in parsed["nics"]
        },
    }


def _nccl_summary(result: dict) -> dict:
    return {
        "ranks": result["ranks"],
        "nodes": result["nodes"],
        "transport": result["transport"],
        "gpudirect": result["gpudirect"],
        "devices": result["devices"],
        "rows": len(result["rows"]),
        "largest_bytes": result["largest"]["size"],
        "avg_busbw_gbytes": result["avg_busbw_gbytes"],
        "max_busbw_gbytes": result["max_busbw_gbytes"],
        "wrong": result["wrong"],
    }


def _nccl(parse: Callable[[str], dict]) -> Callable[[str], dict]:
    def read(text: str) -> dict:
        try:
            return _nccl_summary(parse(text))
        except nccl.NcclError as error:
            raise Refused(str(error)) from error

    return read


def _launcher(text: str) -> dict:
    """The NCCL test launcher's log (nccl_test.sh): mpirun's output between its markers."""
    output, code = nccl_test.output(text)
    if code is None:
        raise Refused("no NCCL test output markers (not the launcher's log)")
    return {"exit": code, **_nccl(nccl.parse)(output)}


def _perftest(text: str) -> dict:
    try:
        result = perftest.parse(text)
    except perftest.PerftestError as error:
        raise Refused(str(error)) from error
    keys = ("bw_average_gbps", "gpu_memory", "device", "link_type", "gid_index", "side")
    return {k: result[k] for k in keys}


def _reader(read: Callable[[str], object], what: str, name: str) -> Callable[[str], dict]:
    def summary(text: str) -> dict:
        value = read(text)
        if value is None:
            raise Refused(f"not {what}")
        return {name: value}

    return summary


def _pod_facts(text: str) -> dict:
    """A verification pod's log (verify_test.sh): its facts by key and each rail's pairing."""
    found = host_checks.facts(text)
    if not found:
        raise Refused("no fact lines (not a verification pod's log)")
    split = pod_log(text)
    return {
        "facts": sorted(found),
        "topology_error": split["topology_error"],
        "pairing": {
            str(rail): [entry.get("nic"), entry.get("gpu"), entry.get("relation")]
            for rail, entry in sorted(split["rails"].items())
        },
        "disagreements": split["checks"],
    }


PARSERS: dict[str, Callable[[str], dict]] = {
    "gpu_nic_topology": _topology,
    "nccl_results": _nccl(nccl.parse),
    "nccl_results_json": _nccl(nccl.parse_json),
    "nccl_launcher_log": _launcher,
    "perftest_results": _perftest,
    "pod_facts": _pod_facts,
    "boot_iommu_domain": _reader(host_checks.boot_iommu_domain, "a boot log", "default_domain"),
    "driver_flavour": _reader(host_checks.driver_flavour, "the GPU driver's version", "flavour"),
    "kernel_arguments": _reader(
        lambda text: (
            None
            if (arguments := host_checks.kernel_arguments(text)) is None
            else list(host_checks.iommu_from_arguments(arguments) or ("none", "no IOMMU mode"))
        ),
        "a kernel command line",
        "iommu",
    ),
}
