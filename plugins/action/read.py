"""gpudirect.rdma.read: the module, with the connection options of the gpudirect_rdma_*
variables (plugin_utils/connection.py)."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.connection import (
    ConnectionAction as ActionModule,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.connection import (
    preload,
)

preload("gpudirect.rdma.read")

__all__ = ["ActionModule"]
