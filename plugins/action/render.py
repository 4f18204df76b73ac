"""gpudirect.rdma.render: plan from the inventory, build the objects, write the kustomize tree."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.doc_fragments.tree import ModuleDocFragment
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import nic_configuration
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import build_objects
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import spec_of
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.connection import ModuleAction
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import PlanError
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.render import kustomize_tree
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.variables import checked_inventory

WRITER = "gpudirect.rdma.manifest_tree"


class ActionModule(ModuleAction):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        # The options are the tree fragment's (gpudirect.rdma.render extends it, adding none).
        args = self.validate_argument_spec(spec_of(ModuleDocFragment.DOCUMENTATION))[1]
        try:
            plan = checked_inventory(self._templar, task_vars)["plan"]
        except PlanError as error:
            result.update(failed=True, msg=str(error), variable=error.variable)
            return result
        undiscovered = nic_configuration.undiscovered(plan)
        if undiscovered:
            # site.yml takes the NIC types from the cluster's NicDevices; a tree has no cluster.
            result.update(
                failed=True,
                variable="gpudirect_rdma_nic_type",
                msg=(
                    "gpudirect_rdma_nic_type: got nothing for "
                    + ", ".join(undiscovered)
                    + "; expected the NIC types to render NicConfigurationTemplates for (e.g. "
                    "[ConnectX-7]): site.yml can take them from the cluster's NicDevices, a "
                    "rendered tree cannot (set it globally or per node group)"
                ),
            )
            return result
        objects = build_objects(plan)
        written = self._run_module(
            WRITER,
            {"dest": args["dest"], "files": kustomize_tree(objects), "prune": args["prune"]},
            task_vars,
        )
        # Without its invocation, which would repeat every file written.
        result.update({key: value for key, value in written.items() if key != "invocation"})
        if not result.get("failed"):
            result["image_registry_secret"] = plan["image_registry_secret"]
        return result
