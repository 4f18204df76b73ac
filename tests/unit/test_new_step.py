"""A step added in one file (and its place in the table's order) reaches everything that reads
the table: the role that runs it, site.yml's real run and its converged check (check mode),
preflight, render, uninstall, diagnostics, the RBAC test and the documentation. The copy of the
collection with the step (tests/unit/new_step.py) is imported in a Python of its own; the real run
against the API server is tests/integration/test_new_step.py."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.unit.new_step import REPO_ROOT, collection_with_new_step

# Runs in a Python whose ansible_collections.gpudirect.rdma is the copy (argv[1]).
SCRIPT = r"""
import json, sys
import yaml
from pathlib import Path

import tests.unit  # this repository's tests, before the copy goes first on the path

sys.path.insert(0, sys.argv[1])
import ansible_collections.gpudirect.rdma as collection

assert str(collection.__path__[0]).startswith(sys.argv[1]), collection.__path__
from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s import diagnostics, remove
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.engine import Engine
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.preflight import checks_of
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import GateTimeout
from ansible_collections.gpudirect.rdma.plugins.modules.step import roles
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.render import kustomize_tree
from tests.unit import test_rbac
from tests.unit.inventories import inputs
from tests.unit.plugins.module_utils import test_engine

seen = {}
plan = build_plan(inputs("shared-device-roce"))
seen["order"] = list(table.NAMES)
seen["gpu_operator_role"] = table.selected(role="gpu_operator")
(account,) = table.component_objects(plan, "training-account")
seen["labels"] = account["metadata"]["labels"]

# site.yml's converged check over a cluster that has everything but the new step's object.
cluster = test_engine.converged_cluster(plan)
key = ("v1", "ServiceAccount", "default", "gpudirect-rdma-training")
del cluster.objects[key]
engine = Engine(cluster, plan, check_mode=True, sleep=lambda _s: None)
engine.run(list(table.NAMES))
seen["check_work"] = engine.all_work()
seen["check_roles"] = roles(engine, list(table.NAMES))
seen["preflight"] = [f["check"] for f in engine.findings]
seen["checks"] = [check.name for check in checks_of(plan)]

# The step for real, as the gpu_operator role runs it after the GPU Operator's: its object
# applied, then its gate waited on (here, not met: the recording cluster keeps nothing).
cluster = test_rbac.olm_cluster(plan, empty=True)
engine = Engine(cluster, plan, take_over=True, settings=test_rbac.AT_ONCE)
try:
    engine.run(["training-account"])
except GateTimeout as error:
    seen["gate"] = str(error)
seen["role_writes"] = sorted(
    f"{verb} {resource}" for verb, _g, resource, _ns, _n in cluster.requests
    if resource == "serviceaccounts"
)

files = kustomize_tree(table.build_objects(plan))
seen["render"] = [name for name in files if name.startswith("training-account/")]
seen["folders"] = yaml.safe_load(files["kustomization.yaml"])["resources"]
seen["stages"] = list(remove.STAGES)
seen["operand_stages"] = list(remove.OPERAND_STAGES)
seen["diagnostics"] = [list(k) for k in diagnostics.kinds_to_read() if k[1] == "ServiceAccount"]

# The RBAC the repository ships does not allow what the step writes: the RBAC test says so.
pods_namespace = plan["network_namespace"]
seen["refused"] = sorted(
    f"{verb} {resource}"
    for verb, group, resource, namespace, name in test_rbac.requests_of("shared-device-roce")
    if not test_rbac.allowed((verb, group, resource, namespace, name), pods_namespace)
)
print(json.dumps(seen))
"""


def test_a_step_added_in_one_file_reaches_everything_that_reads_the_table(tmp_path):
    collections = collection_with_new_step(tmp_path / "collections")
    root = collections / "ansible_collections" / "gpudirect" / "rdma"
    ran = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(collections)],
        cwd=REPO_ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    seen = json.loads(ran.stdout.splitlines()[-1])

    names = seen["order"]
    assert names[names.index("gpu-operator") + 1] == "training-account"
    assert seen["gpu_operator_role"] == ["gpu-operator", "training-account"]
    assert seen["labels"] == {
        "app.kubernetes.io/managed-by": "gpudirect.rdma",
        "gpudirect.rdma/component": "training-account",
    }
    # site.yml: its check names the step's object and gate as work, and the role that runs it.
    assert "ServiceAccount default/gpudirect-rdma-training would be created" in seen["check_work"]
    assert any(
        "ServiceAccount default/gpudirect-rdma-training exists" in w for w in seen["check_work"]
    )
    assert "gpu_operator" in seen["check_roles"]
    assert "training-account" in seen["preflight"] and "training-account" in seen["checks"]
    assert "ServiceAccount default/gpudirect-rdma-training exists" in seen["gate"]
    assert seen["role_writes"] and all(w.endswith("serviceaccounts") for w in seen["role_writes"])
    # render: a folder of its own, after the GPU Operator's.
    assert sorted(seen["render"]) == [
        "training-account/kustomization.yaml",
        "training-account/serviceaccount-gpudirect-rdma-training.yaml",
    ]
    folders = seen["folders"]
    assert folders[folders.index("gpu-operator") + 1] == "training-account"
    # uninstall: before the GPU Operator's objects, with the operands.
    stages = seen["stages"]
    assert stages[stages.index("gpu-operator") - 1] == "training-account"
    assert "training-account" in seen["operand_stages"]
    assert seen["diagnostics"] == [["v1", "ServiceAccount", "every one in the namespaces read"]]
    # RBAC: the shipped role lacks exactly what the new step writes and reads.
    assert seen["refused"] and all(r.endswith(" serviceaccounts") for r in seen["refused"])

    # The docs: make docs writes the step's row and its role's setting from the step file.
    docs = [sys.executable, str(REPO_ROOT / "hack" / "docs.py"), "--root", str(root)]
    check = subprocess.run([*docs, "--check"], capture_output=True, text=True, check=False)
    assert check.returncode == 1
    for page in (
        "docs/steps.md",
        "roles/gpu_operator/meta/argument_specs.yml",
        "roles/gpu_operator/defaults/main.yml",
        "roles/gpu_operator/README.md",
    ):
        assert page in check.stderr
    assert subprocess.run(docs, capture_output=True, text=True, check=False).returncode == 0
    assert "| 9 | `training-account` | `gpu_operator` |" in (root / "docs/steps.md").read_text()
    defaults = (root / "roles/gpu_operator/defaults/main.yml").read_text()
    assert "\ngpu_operator_training_account_timeout: 60\n" in defaults
