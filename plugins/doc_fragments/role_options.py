"""The role variables several roles take, declared once: make docs (hack/docs.py) writes them
into each role's meta/argument_specs.yml, between the GENERATED markers. DOCUMENTATION: the
connection every role that talks to the cluster takes (kubernetes.core's options, and the
collection's request timeout and progress interval) (plugin_utils/connection.py reads the
names); STEP_ROLES: what every role that runs steps of the step table takes besides."""

from __future__ import annotations


class ModuleDocFragment:
    # The connection (plugin_utils/connection.py takes its names from here): each
    # gpudirect_rdma_<option> gives the modules' <option>.
    DOCUMENTATION = r"""
options:
  gpudirect_rdma_kubeconfig:
    description: >-
      Path to the kubeconfig of the cluster, as kubernetes.core's C(kubeconfig) (default:
      C(K8S_AUTH_KUBECONFIG), else C(~/.kube/config)). Unset: module_defaults
      (group/gpudirect.rdma.k8s) or the K8S_AUTH_* variables decide.
    type: path
  gpudirect_rdma_context:
    description: >-
      Context of the kubeconfig to use (kubernetes.core's C(context)). Unset: module_defaults
      (group/gpudirect.rdma.k8s) or the K8S_AUTH_* variables decide.
    type: str
  gpudirect_rdma_host:
    description: >-
      URL of the API server (kubernetes.core's C(host)). Unset: module_defaults
      (group/gpudirect.rdma.k8s) or the K8S_AUTH_* variables decide.
    type: str
  gpudirect_rdma_api_key:
    description: >-
      Token for the API server (kubernetes.core's C(api_key)); vault it. Unset: module_defaults
      (group/gpudirect.rdma.k8s) or the K8S_AUTH_* variables decide.
    type: str
    no_log: true
  gpudirect_rdma_validate_certs:
    description: >-
      Verify the API server's certificate (kubernetes.core's C(validate_certs)). Unset:
      module_defaults (group/gpudirect.rdma.k8s) or the K8S_AUTH_* variables decide.
    type: bool
  gpudirect_rdma_ca_cert:
    description: >-
      CA certificate of the API server (kubernetes.core's C(ca_cert)). Unset: module_defaults
      (group/gpudirect.rdma.k8s) or the K8S_AUTH_* variables decide.
    type: path
  gpudirect_rdma_client_cert:
    description: >-
      Client certificate (kubernetes.core's C(client_cert)). Unset: module_defaults
      (group/gpudirect.rdma.k8s) or the K8S_AUTH_* variables decide.
    type: path
  gpudirect_rdma_client_key:
    description: >-
      Client key (kubernetes.core's C(client_key)). Unset: module_defaults
      (group/gpudirect.rdma.k8s) or the K8S_AUTH_* variables decide.
    type: path
  gpudirect_rdma_request_timeout:
    description: >-
      Seconds to wait for the API server's answer to one request (the modules'
      C(request_timeout)); an API server that does not answer in time ends the task with the
      request it was asked. Unset: 60.
    type: int
  gpudirect_rdma_progress_interval:
    description: >-
      Seconds between two progress lines of a long wait (a gate, an operator's CSV, a deletion):
      how long it has waited, of how long, for what, and what it saw last (the modules'
      C(progress_interval)). C(0) prints none. Unset: 30.
    type: int
"""

    # What every role of the step table takes besides.
    STEP_ROLES = r"""
options:
  gpudirect_rdma_plan:
    description:
      - The plan from M(gpudirect.rdma.plan). When absent, the role plans from the
        C(gpudirect_rdma_*) inventory variables itself (see C(ansible-doc gpudirect.rdma.plan)) and
        keeps the result in this variable for the roles that follow.
    type: dict
  gpudirect_rdma_preflight:
    description:
      - The preflight verdict of the run so far, which each step task sets (the first, of
        C(site.yml)'s check, judged every check); the role judges only the checks it left skipped.
        Unset, or for another plan, the role judges every check.
    type: dict
  gpudirect_rdma_take_over:
    description: >-
      Let the role replace the content of same-named objects that this collection did not create.
    type: bool
    default: false
"""
