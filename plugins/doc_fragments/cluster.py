"""What every module that talks to the cluster takes besides kubernetes.core's connection options
(module_utils/k8s/client.CLUSTER_OPTIONS is the argument spec; the roles give them from the
gpudirect_rdma_request_timeout and gpudirect_rdma_progress_interval variables)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  request_timeout:
    description:
      - Seconds to wait for the API server's answer to one request. An API server that does not
        answer within them (frozen, or a network that drops packets) ends the task with the
        request it was asked and the server, instead of a silent wait.
    type: int
    default: 60
  progress_interval:
    description:
      - Seconds between two progress lines of a long wait (a gate, an operator's CSV, a
        deletion), each saying how long it has waited, of how long, for what and what it saw
        last. C(0) prints none. Printed when the module runs in the controller's process (a
        local connection, as the roles run it); a module shipped to another host prints
        nothing before it ends.
    type: int
    default: 30
"""
