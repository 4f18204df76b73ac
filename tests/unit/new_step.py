"""A step added the way docs/steps.md says, for the tests that follow one through everything
(tests/unit/test_new_step.py, tests/integration/test_new_step.py).

`collection_with_new_step(folder)` copies the collection into folder as
ansible_collections/gpudirect/rdma, adds the file steps/training_account.py and puts the step in
the table's order after the GPU Operator, in the gpu_operator role: nothing else of the copy is
touched. The step applies a ServiceAccount for training jobs in the network's namespace, waits
for it, declares a setting, a preflight check and what diagnostics reads, and uninstall removes
it with the operands.
"""

from __future__ import annotations

import shutil
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
NAME = "training-account"
ACCOUNT = "gpudirect-rdma-training"
SETTING = "gpu_operator_training_account_timeout"
# What a copy of the collection holds (what the built collection holds, plus the docs).
TREE = ("README.md", "galaxy.yml", "meta", "plugins", "roles", "playbooks", "docs", "rbac")

STEP_FILE = '''"""The training jobs' ServiceAccount, in the network's namespace (made by a test)."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    new_object,
    owned_by_collection,
)

from .base import NAMESPACES, Setting, Step
from .checks import Check, Read, finding

KIND = ("v1", "ServiceAccount")
NAME = "gpudirect-rdma-training"


def account(plan: dict) -> list[dict]:
    return [new_object(*KIND, NAME, namespace=plan["network_namespace"])]


def gates(plan: dict, settings: dict, results: list[dict]) -> list[dict]:
    namespace = plan["network_namespace"]
    return [
        {
            "gate": f"ServiceAccount {namespace}/{NAME} exists",
            "api_version": KIND[0],
            "kind": KIND[1],
            "name": NAME,
            "namespace": namespace,
            "path": "metadata.name",
            "equals": NAME,
            "hint": f"oc -n {namespace} get serviceaccount {NAME}",
        }
    ]


def check_account(plan: dict, objects: list, facts, take_over: bool) -> list[dict]:
    live = facts.one(*KIND, NAME, plan["network_namespace"])
    if live is not None and not owned_by_collection(live):
        return [finding("training-account", "warning", f"ServiceAccount {NAME} is somebody's")]
    return [finding("training-account", "ok", f"ServiceAccount {NAME} is free or ours")]


STEP = Step(
    name="training-account",
    title="The training jobs' ServiceAccount",
    role="gpu_operator",
    operator=None,
    operand=lambda plan, csv: account(plan),
    kinds=(KIND,),
    gates=gates,
    settings=(
        Setting(
            "ready_timeout",
            "gpu_operator_training_account_timeout",
            60,
            ("Seconds to wait for the training jobs' ServiceAccount.",),
        ),
    ),
    wave=4,
    diagnostics=((*KIND, NAMESPACES),),
    preflight=(
        Check(
            "training-account",
            check_account,
            lambda plan, objects: (Read(*KIND, NAME, plan["network_namespace"]),),
        ),
    ),
)
'''


def collection_with_new_step(folder: Path) -> Path:
    """The collection copied to folder/ansible_collections/gpudirect/rdma with the new step;
    returns folder (what ANSIBLE_COLLECTIONS_PATH and sys.path take)."""
    root = folder / "ansible_collections" / "gpudirect" / "rdma"
    for name in TREE:
        source, target = REPO_ROOT / name, root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target)
    steps = root / "plugins" / "module_utils" / "steps"
    (steps / "training_account.py").write_text(STEP_FILE)
    table = steps / "__init__.py"
    text = table.read_text()
    for before, after in (
        ("    sriov_network_operator,\n)", "    sriov_network_operator,\n    training_account,\n)"),
        ("    gpu_operator.STEP,\n", "    gpu_operator.STEP,\n    training_account.STEP,\n"),
    ):
        assert text.count(before) == 1, f"the table's order no longer reads {before!r}"
        text = text.replace(before, after)
    table.write_text(text)
    return folder
