"""The first task of a playbook, run here as ansible-playbook runs it, for many inventories in one
process: the playbook loaded by Ansible, the inventory read by Ansible's InventoryManager, extra
variables as `-e` gives them, the task's variables from Ansible's VariableManager, and the task's
own action plugin run on them, with a Templar over those variables as Ansible gives it one.
What it leaves out is what every run shares (the CLI, the strategy's worker process, the
callbacks): tests/integration/test_bad_inputs.py runs the real ansible-playbook for a case of each
kind and reads the API server's audit log.

Each run is a process of its own, forked from one that has loaded Ansible and the collection once
(and run a first task with no extra variables, so that what Ansible loads on first use is loaded):
Ansible keeps state between runs in a process (the extra variables, read once). As many runs go at
once as there are CPUs.

A module task must not reach the cluster: its action's module run is replaced by one that fails
the run with "reached the cluster", so a bad input that slipped through shows as such.

    python -m tests.harness.first_task < runs.json > results.json

Input: a JSON list of {"playbook", "inventory", "extra_vars": [JSON strings, as -e takes]}.
Output: a JSON list, one {"task", "action", "failed", "msg", "bad_input"} per run, in order.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback

from ansible import constants, context
from ansible.inventory.manager import InventoryManager
from ansible.module_utils.common.collections import ImmutableDict
from ansible.parsing.dataloader import DataLoader
from ansible.playbook import Playbook
from ansible.playbook.block import Block
from ansible.playbook.play_context import PlayContext
from ansible.plugins.loader import action_loader, connection_loader, init_plugin_loader
from ansible.template import Templar
from ansible.vars.manager import VariableManager


class ReachedTheCluster(Exception):
    pass


def _first_task(blocks):
    """The first task of the play's blocks, depth first, that is not a meta task."""
    for block in blocks:
        for item in block.block:
            found = _first_task([item]) if isinstance(item, Block) else item
            if found is not None and found.action not in ("meta", "ansible.builtin.meta"):
                return found
    return None


def _forbidden(*_args, **_kwargs):
    raise ReachedTheCluster("reached the cluster: the module would have run")


def run(playbook: str, inventory: str, extra_vars: list[str]) -> dict:
    context.CLIARGS = ImmutableDict(
        extra_vars=tuple(extra_vars), check=False, diff=False, tags=(), skip_tags=()
    )
    loader = DataLoader()
    hosts = InventoryManager(loader=loader, sources=[inventory])
    variables = VariableManager(loader=loader, inventory=hosts)
    play = Playbook.load(playbook, variable_manager=variables, loader=loader).get_plays()[0]
    task = _first_task(play.compile())
    host = hosts.get_hosts(play.hosts)[0]
    task_vars = variables.get_vars(play=play, host=host, task=task)
    # The first tasks' arguments and keywords are plain values: nothing of them to template.
    templar = Templar(loader=loader, variables=task_vars)
    play_context = PlayContext(play=play)
    connection = connection_loader.get("local", play_context, None)
    action = action_loader.get(
        task.action,
        task=task,
        connection=connection,
        play_context=play_context,
        loader=loader,
        templar=templar,
        shared_loader_obj=None,
    )
    action._run_module = _forbidden
    action._execute_module = _forbidden
    try:
        result = action.run(task_vars=task_vars)
    except ReachedTheCluster as error:
        result = {"failed": True, "msg": str(error)}
    return {
        "task": task.get_name(),
        "action": task.action,
        "failed": bool(result.get("failed")),
        "msg": str(result.get("msg", "")),
        "bad_input": bool(result.get("bad_input")),
    }


def _start(given: dict) -> tuple[int, int]:
    """run(...) in a child process; its answer (an exception as {"error": its traceback}) comes
    back as JSON on the returned pipe."""
    readable, writable = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(readable)
        try:
            answer = run(given["playbook"], given["inventory"], given["extra_vars"])
        except BaseException:  # the parent reports it
            answer = {"error": traceback.format_exc()}
        with os.fdopen(writable, "w") as pipe:
            json.dump(answer, pipe)
        os._exit(0)
    os.close(writable)
    return child, readable


def _collect(child: int, readable: int) -> dict:
    with os.fdopen(readable) as pipe:
        answer = pipe.read()
    os.waitpid(child, 0)
    return json.loads(answer) if answer else {"error": "the run's process died"}


def run_all(runs: list[dict]) -> list[dict]:
    at_once = max(1, len(os.sched_getaffinity(0)))
    started: list[tuple[int, int]] = []
    answers: list[dict] = []
    for given in runs:
        if len(started) - len(answers) >= at_once:
            answers.append(_collect(*started[len(answers)]))
        started.append(_start(given))
    answers.extend(_collect(*pair) for pair in started[len(answers) :])
    return answers


def main() -> None:
    init_plugin_loader(constants.COLLECTIONS_PATHS)
    for action in ("plan", "step"):
        importlib.import_module(f"ansible_collections.gpudirect.rdma.plugins.action.{action}")
    runs = json.load(sys.stdin)
    if runs:
        # Loads here, once, what Ansible loads on first use; no extra variables, so none are kept.
        run(runs[0]["playbook"], runs[0]["inventory"], [])
    json.dump(run_all(runs), sys.stdout)


if __name__ == "__main__":
    main()
