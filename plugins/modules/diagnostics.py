#!/usr/bin/python
"""gpudirect.rdma.diagnostics: gather the state that explains a failure into one archive."""

from __future__ import annotations

DOCUMENTATION = r"""
module: diagnostics
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Gather the cluster state that explains a failure into one archive
description:
  - Reads, and only reads, what explains a failed (or a suspicious) install of GPUDirect RDMA,
    and packs it into one C(gpudirect-rdma-diagnostics-<UTC timestamp>.tar.gz) in O(dest).
  - "Read: every object the collection created (label C(app.kubernetes.io/managed-by=gpudirect.rdma)),
    with its status; in the collection's namespaces (Namespaces with that label) and in O(namespaces):
    CatalogSources (and those of C(openshift-marketplace)), OperatorGroups, Subscriptions, InstallPlans,
    ClusterServiceVersions (without C(spec.install), the icon, CRD descriptions and C(alm-examples)),
    NetworkAttachmentDefinitions, Pods with the last O(log_lines) lines of each container's log, and
    Events sorted by time; in the whole cluster: Nodes (labels, annotations, capacity, allocatable,
    conditions), MachineConfigPools, NicClusterPolicies, ClusterPolicies and SriovNetworkNodeStates,
    labelled or not."
  - Secrets are never read.
  - The first file of the archive is C(summary.yaml) - when, the API server, the O(failure) and, when the
    failure came from a gate of M(gpudirect.rdma.wait), the gate with its objects read again (identity
    and status) - then the index of files, the kinds the API server does not serve (their operator is
    not installed yet) and every read that failed. The gate's objects are whole in C(gate.yaml).
  - A kind that is not served, a log the API server cannot serve or a forbidden read is noted in the
    summary and the rest goes on; an API server that cannot be reached at all gives no archive
    (there is nothing in it to read), only the error (and a warning).
  - Beside the dated archives, C(gpudirect-rdma-diagnostics-latest.tar.gz) links to the newest.
  - Returns C(changed=false) - nothing in the cluster changes; the archive is a new report each time.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpudirect.rdma.cluster
attributes:
  check_mode:
    support: full
    description: The cluster is only read; the archive is a local file, written in check mode too, so
      that a failed check run can be explained as well.
  diff_mode:
    support: none
    description: Reads only.
options:
  dest:
    description: Directory the archive is written to; created when missing.
    type: path
    required: true
  failure:
    description:
      - The failure to explain, written to the summary; omit when gathering on demand.
      - In a C(rescue), C(task) is C(ansible_failed_task.name), C(msg) is C(ansible_failed_result.msg)
        and C(gate) is C(ansible_failed_result.gate) (returned by M(gpudirect.rdma.wait) on failure).
    type: dict
    suboptions:
      task:
        description: Name of the task that failed.
        type: str
      msg:
        description: Its message, written to the summary as C(message).
        type: str
      gate:
        description: The gate that was not met, as M(gpudirect.rdma.wait) returns it; its C(objects) are
          read again and put in the summary with their status.
        type: dict
  namespaces:
    description: Namespaces to read besides the collection's own and those of O(plan).
    type: list
    elements: str
    default: []
  plan:
    description:
      - The plan from M(gpudirect.rdma.plan), when the playbook made one. The namespaces of its
        steps are read too, since they may have existed before the collection labelled them -
        each operator's and its catalog's, the RDMA network's, the SR-IOV operator's for
        C(sriov_legacy), the Machine Config Operator's.
    type: dict
  log_lines:
    description: Lines at the end of each container's log to keep; C(0) reads no logs.
    type: int
    default: 200
"""

EXAMPLES = r"""
- name: Apply and wait, and explain a failure
  block:
    - name: NVIDIA Network Operator
      ansible.builtin.import_role:
        name: gpudirect.rdma.network_operator
  rescue:
    - name: Gather diagnostics
      gpudirect.rdma.diagnostics:
        dest: /var/tmp/gpudirect-rdma-diagnostics
        failure:
          task: "{{ ansible_failed_task.name }}"
          msg: "{{ ansible_failed_result.msg }}"
          gate: "{{ ansible_failed_result.gate | default(none) }}"
        namespaces: [nvidia-network-operator]
      register: diagnostics

    - name: Fail, saying where the archive is
      ansible.builtin.fail:
        msg: "{{ ansible_failed_result.msg }} Diagnostics: {{ diagnostics.archive }}"

- name: Gather on demand, with the logs' last 1000 lines
  gpudirect.rdma.diagnostics:
    dest: "{{ lookup('ansible.builtin.env', 'PWD') }}/gpudirect-rdma-diagnostics"
    log_lines: 1000
"""

RETURN = r"""
archive:
  description: Path of the archive written; null when nothing could be read (RV(error) says why).
  returned: always
  type: str
  sample: /home/me/gpudirect-rdma-output/gpudirect-rdma-diagnostics-20250601T120000Z.tar.gz
latest:
  description: The link C(gpudirect-rdma-diagnostics-latest.tar.gz) to it, beside it; null with no archive.
  returned: always
  type: str
  sample: /home/me/gpudirect-rdma-output/gpudirect-rdma-diagnostics-latest.tar.gz
files:
  description: The files in the archive, C(summary.yaml) first.
  returned: always
  type: list
  elements: str
  sample: [summary.yaml, gate.yaml, namespaces.yaml, clusterserviceversions.yaml, logs/default/gpudirect-rdma-verify-client/perftest.log]
unreadable:
  description: What could not be read, and why (a log the API server could not serve, a forbidden list).
  returned: always
  type: list
  elements: dict
  sample: [{"what": "log of default/pod container c", "error": "400 Bad Request: container c is waiting to start"}]
not_served:
  description: Kinds the API server does not serve (their operator is not installed), so not read.
  returned: always
  type: list
  elements: str
  sample: ["NicClusterPolicy (mellanox.com/v1alpha1)"]
namespaces:
  description: The namespaces read (the collection's and O(namespaces)).
  returned: always
  type: list
  elements: str
  sample: [default, nvidia-network-operator, openshift-nfd]
api_server:
  description: The API server read.
  returned: always
  type: str
  sample: https://api.cluster.example.com:6443
error:
  description: Why the API server could not be read at all (no archive is written then); null when it was.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (  # noqa: E402
    Cluster,
    argument_spec,
    server_of,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.diagnostics import (  # noqa: E402
    collect,
    describe,
    plan_namespaces,
)

FAILURE_SPEC = {
    "task": {"type": "str"},
    "msg": {"type": "str"},
    "gate": {"type": "dict"},
}


def summary_failure(failure):
    """The failure as the summary names it: msg becomes message."""
    if failure is None:
        return None
    return {"task": failure["task"], "message": failure["msg"], "gate": failure["gate"]}


ARGUMENT_SPEC = argument_spec(
    dest={"type": "path", "required": True},
    failure={"type": "dict", "options": FAILURE_SPEC},
    namespaces={"type": "list", "elements": "str", "default": []},
    plan={"type": "dict"},
    log_lines={"type": "int", "default": 200},
)


def main():
    run(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True))


def run(module):
    if module.params["log_lines"] < 0:
        module.fail_json(
            msg=f"log_lines: got {module.params['log_lines']}; expected 0 (no logs) or more lines"
        )
    cluster, server, error = None, module.params.get("host"), None
    try:
        cluster = Cluster(module)
        server = cluster.server
    except Exception as exc:  # any failure to connect is said, not raised
        server, error = server_of(exc) or server, describe(exc)
    try:
        result = collect(
            cluster,
            module.params["dest"],
            failure=summary_failure(module.params["failure"]),
            namespaces=[*module.params["namespaces"], *plan_namespaces(module.params["plan"])],
            log_lines=module.params["log_lines"],
            server=server,
            error=error,
        )
    except OSError as exc:
        module.fail_json(
            msg=f"dest: could not write the archive into {module.params['dest']}: {exc}; "
            "expected a directory this user can create and write to"
        )
    if result["error"]:
        module.warn(result["error"])
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
