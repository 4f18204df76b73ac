"""The connection as role variables (plugin_utils/connection.py): every module of the k8s action
group gets kubeconfig, context, ... from the gpudirect_rdma_* variables unless its task sets them,
and the roles call no module those variables do not reach."""

from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
import yaml
from ansible.module_utils.basic import env_fallback

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import argument_spec
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.connection import (
    ConnectionAction,
    Exited,
    ModuleHere,
    TaskAction,
    connection_args,
)
from tests.unit.roles import role_tasks

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
        # The actions that run the plan (step, upgrade, drift) build the module's options
        # themselves, with connection_args.
        assert action is ConnectionAction or (
            module in ("step", "upgrade", "drift")
            and "connection_args(" in inspect.getsource(action)
        ), f"plugins/action/{module}.py does not pass the connection"


def test_no_role_calls_a_module_the_connection_variables_do_not_reach():
    """Every read and write of the roles goes through the collection's actions, which take the
    gpudirect_rdma_* variables; a kubernetes.core module would need module_defaults of its own
    (the verify role had them, before gpudirect.rdma.read)."""

    used = {key for task in role_tasks() for key in task if key.count(".") == 2}
    assert "gpudirect.rdma.read" in used
    assert [m for m in used if not m.startswith(("gpudirect.rdma.", "ansible.builtin."))] == []


def module_here(args: dict, spec: dict | None = None, **kwargs) -> ModuleHere:
    spec = spec or {
        "name": {"type": "str", "required": True, "choices": ["a", "b"]},
        "count": {"type": "int", "default": 1},
        "token": {"type": "str", "no_log": True},
        "kubeconfig": {"type": "raw", "fallback": (env_fallback, ["K8S_AUTH_KUBECONFIG"])},
    }
    return ModuleHere("gpudirect.rdma.x", spec, args, check_mode=True, diff=False, **kwargs)


def ended(call) -> dict:
    with pytest.raises(Exited) as exited:
        call()
    return exited.value.result


def test_a_module_here_validates_as_ansible_module_does(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", "/from/env")
    here = module_here({"name": "a", "count": "3"})
    assert here.params == {"name": "a", "count": 3, "token": None, "kubeconfig": "/from/env"}
    assert here.check_mode is True and here._diff is False
    refused = ended(lambda: module_here({"name": "c"}))
    assert refused["failed"] is True
    assert "value of name must be one of: a, b, got: c" in refused["msg"]
    unknown = ended(lambda: module_here({"name": "a", "colour": "red"}))
    assert unknown["msg"].startswith("Unsupported parameters for (gpudirect.rdma.x) module: colour")


def test_a_module_here_ends_with_what_the_module_would_print():
    here = module_here({"name": "a", "token": "s3cret"})
    here.warn("careful")
    result = ended(lambda: here.exit_json(changed=False, kinds=("A", "B"), said="token s3cret"))
    invocation = {
        "module_args": {"name": "a", "count": 1, "token": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"}
        | {"kubeconfig": None}
    }
    assert result == {
        "changed": False,
        "kinds": ["A", "B"],
        "said": "token ********",
        "warnings": ["careful"],
        "invocation": invocation,
    }
    failed = ended(lambda: here.fail_json(msg="no s3cret here", gate={"name": "g"}))
    assert failed == {
        "failed": True,
        "msg": "no ******** here",
        "gate": {"name": "g"},
        "warnings": ["careful"],
        "invocation": invocation,
    }


def local_action(module: str, *, transport="local", become=False, async_val=0):
    task = mock.MagicMock(args={}, async_val=async_val, check_mode=False, diff=False)
    task.environment = None
    task.resolved_action = f"gpudirect.rdma.{module}"
    connection = mock.MagicMock(transport=transport)
    play_context = mock.MagicMock(become=become)
    return ConnectionAction(task, connection, play_context, None, None, None)


@pytest.mark.parametrize(
    "module",
    [
        "apply",
        "wait",
        "remove",
        "step",
        "preflight",
        "diagnostics",
        "manifest_tree",
        "upgrade",
        "read",
    ],
)
def test_every_module_runs_in_the_actions_process_on_a_local_connection(module):
    code = importlib.import_module(f"ansible_collections.gpudirect.rdma.plugins.modules.{module}")
    found = local_action(module)._code_here(f"gpudirect.rdma.{module}")
    assert found is not None, f"plugins/modules/{module}.py cannot run in the action's process"
    spec, _run = found
    shipped = getattr(code, "ARGUMENT_SPEC", None) or argument_spec(**code.OPTIONS)
    assert spec == shipped
    for elsewhere in (
        local_action(module, transport="ssh"),
        local_action(module, become=True),
        local_action(module, async_val=30),
    ):
        assert elsewhere._code_here(f"gpudirect.rdma.{module}") is None


def test_the_shipped_module_uses_the_argument_spec_the_action_validates_with():
    for module in ("preflight", "diagnostics", "manifest_tree"):
        code = importlib.import_module(
            f"ansible_collections.gpudirect.rdma.plugins.modules.{module}"
        )
        with (
            mock.patch.object(code, "AnsibleModule") as made,
            mock.patch.object(code, "run") as run,
        ):
            code.main()
        assert made.call_args.kwargs["argument_spec"] is code.ARGUMENT_SPEC
        run.assert_called_once_with(made.return_value)


def test_a_local_run_of_the_tree_writes_what_the_shipped_module_would(tmp_path, monkeypatch):
    action = local_action("manifest_tree")
    files = {"kustomization.yaml": "# rendered\nresources: []\n", "a/b.yaml": "# rendered\nx: 1\n"}
    result = action._run_module(
        "gpudirect.rdma.manifest_tree", {"dest": str(tmp_path), "files": files}, {}
    )
    assert result.pop("invocation")["module_args"]["files"] == files
    assert result == {
        "changed": True,
        "created": ["a/b.yaml", "kustomization.yaml"],
        "updated": [],
        "removed": [],
        "unchanged": 0,
    }
    assert (tmp_path / "a" / "b.yaml").read_text() == files["a/b.yaml"]
    again = action._run_module(
        "gpudirect.rdma.manifest_tree", {"dest": str(tmp_path), "files": files}, {}
    )
    assert again["changed"] is False and again["unchanged"] == 2


def test_the_tasks_environment_applies_to_a_local_run_and_only_to_it(monkeypatch):
    monkeypatch.delenv("K8S_AUTH_KUBECONFIG", raising=False)
    action = local_action("step")
    action._task.environment = [{"K8S_AUTH_KUBECONFIG": "/from/task"}]
    action._templar = mock.MagicMock(template=lambda value: value)
    seen = {}

    def run(module):
        seen.update(module.params)
        module.exit_json(changed=False)

    spec = {"kubeconfig": {"type": "raw", "fallback": (env_fallback, ["K8S_AUTH_KUBECONFIG"])}}
    with mock.patch.object(action, "_code_here", return_value=(spec, run)):
        result = action._run_module("gpudirect.rdma.step", {}, {})
    assert result == {"changed": False, "invocation": {"module_args": {"kubeconfig": "/from/task"}}}
    assert seen == {"kubeconfig": "/from/task"}
    assert "K8S_AUTH_KUBECONFIG" not in os.environ


def test_a_module_here_gets_plain_arguments_as_a_shipped_module_does():
    from ansible._internal._datatag._tags import Origin

    tagged = Origin(path="/roles/x/tasks/main.yml").tag("a")
    here = module_here({"name": tagged})
    assert here.params["name"] == "a"
    assert yaml.safe_dump(here.params)  # a tagged str is a subclass SafeDumper refuses


def test_every_module_runs_here_without_importing_the_kubernetes_package():
    """The modules talk to the API server over module_utils/k8s/api.py: the kubernetes package's
    import (about 0.2 s a task) is made only for a kubeconfig that needs it (an exec user)."""
    modules = (
        "apply",
        "wait",
        "step",
        "preflight",
        "diagnostics",
        "remove",
        "manifest_tree",
        "upgrade",
        "read",
    )
    for module in modules:
        assert local_action(module)._code_here(f"gpudirect.rdma.{module}") is not None, module
    imports = "; ".join(
        f"import ansible_collections.gpudirect.rdma.plugins.modules.{m}" for m in modules
    )
    heavy = "('kubernetes', 'urllib3')"
    check = f"import sys; {imports}; print([m for m in sys.modules if m.split('.')[0] in {heavy}])"
    paths = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    found = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, check=True, env=paths
    ).stdout
    assert found.strip() == "[]"


def test_the_tree_writer_runs_here_with_the_tasks_arguments_only(tmp_path):
    """manifest_tree's action (TaskAction) adds no connection option, which the module would
    refuse, whatever gpudirect_rdma_* variables the play sets; it writes in this process."""
    files = {"verify-report.json": "{}\n"}
    task = mock.MagicMock(
        args={"dest": str(tmp_path), "files": files, "prune": False},
        async_val=0,
        check_mode=False,
        diff=False,
    )
    task.environment = None
    task.resolved_action = "gpudirect.rdma.manifest_tree"
    action = TaskAction(
        task, mock.MagicMock(transport="local"), mock.MagicMock(become=False), None, None, None
    )
    with mock.patch.object(action, "_execute_module") as shipped:
        result = action.run(task_vars={"gpudirect_rdma_kubeconfig": "/nowhere/kubeconfig"})
    shipped.assert_not_called()
    assert result["changed"] is True and result["created"] == ["verify-report.json"]
    assert "kubeconfig" not in result["invocation"]["module_args"]
    assert (tmp_path / "verify-report.json").read_text() == "{}\n"
