"""The connection as role variables (plugin_utils/connection.py): every module of the k8s action
group gets kubeconfig, context, ... from the gpudirect_rdma_* variables unless its task sets them,
and the verify role gives the same to kubernetes.core's reads."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import yaml

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.connection import (
    CONNECTION_OPTIONS,
    ConnectionAction,
    connection_args,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_variables_fill_what_the_task_lacks():
    task_vars = {"gpudirect_rdma_kubeconfig": "/k", "gpudirect_rdma_context": "c", "other": 1}
    args = connection_args({"context": "mine", "objects": []}, task_vars, lambda value: value)
    assert args == {"context": "mine", "objects": [], "kubeconfig": "/k"}
    assert connection_args({}, {}, lambda value: value) == {}


def test_every_module_of_the_k8s_group_has_an_action_that_passes_the_variables():
    runtime = yaml.safe_load((REPO_ROOT / "meta" / "runtime.yml").read_text())
    modules = [m for m in runtime["action_groups"]["k8s"] if isinstance(m, str)]
    assert modules
    for module in modules:
        action = importlib.import_module(
            f"ansible_collections.gpudirect.rdma.plugins.action.{module}"
        ).ActionModule
        # The step action builds the module's options itself, with connection_args.
        assert action is ConnectionAction or (
            module == "step" and "connection_args(" in inspect.getsource(action)
        ), f"plugins/action/{module}.py does not pass the connection"


def test_the_verify_role_gives_kubernetes_core_the_same_connection():
    tasks = yaml.safe_load((REPO_ROOT / "roles" / "verify" / "tasks" / "main.yml").read_text())
    block = next(t for t in tasks if "block" in t)
    defaults = block["module_defaults"]["group/kubernetes.core.k8s"]
    assert tuple(defaults) == CONNECTION_OPTIONS
    for option, value in defaults.items():
        assert value == f"{{{{ gpudirect_rdma_{option} | default(omit) }}}}"
