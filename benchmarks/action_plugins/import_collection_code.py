"""For benchmarks/cluster.py's floor of the converged re-run: an action that does nothing but
import the collection's code as site.yml's converged run imports it (the plan and step action
plugins, and through them the plan, the step table, the builders and the engine). Ansible's
collection loader compiles that code from source in every run; this measures what that costs."""

from __future__ import annotations

import importlib

from ansible.plugins.action import ActionBase

for plugin in ("plan", "step"):
    importlib.import_module(f"ansible_collections.gpudirect.rdma.plugins.action.{plugin}")


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        return {"changed": False}
