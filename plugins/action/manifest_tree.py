"""gpudirect.rdma.manifest_tree: the module, in the action's process on a local connection
(plugin_utils/connection.py); it writes files and takes no connection options."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.connection import (
    TaskAction as ActionModule,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.connection import (
    preload,
)

preload("gpudirect.rdma.manifest_tree")

__all__ = ["ActionModule"]
