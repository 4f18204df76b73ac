#!/usr/bin/python
"""gpudirect.rdma.preflight: can this cluster take the planned configuration? Reads only."""

from __future__ import annotations

DOCUMENTATION = r"""
module: preflight
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Check that the cluster can take the planned configuration, before any write
description:
  - Reads the cluster, never writes, and reports every finding at once, each as C(error),
    C(warning), C(ok) or C(skipped) (a check that cannot run yet, with when it will).
  - "C(api): the API server answers with the given credentials, and lets their user read what the
    checks read; a refused read (403) names the user, the verb and the resource, and the ClusterRole
    the collection ships in C(rbac/gpudirect-rdma-installer.yaml)."
  - "C(openshift), C(openshift-version): a ClusterVersion exists (OpenShift), its version is one
    the collection supports (error otherwise), the certified catalog of its minor carries the
    chosen Network Operator and GPU Operator releases (error otherwise, for the minors whose
    catalogs the release data read, naming the releases it carries), their ranges cover it
    (warning otherwise, naming the releases that would), and
    C(gpudirect_rdma_openshift_version) matches it."
  - "C(olm), C(catalogs): OLM is served; the Subscriptions' CatalogSources exist (error) and are
    READY (warning)."
  - "C(nodes), C(node-groups): once NFD has labelled nodes, each node group's selector matches
    nodes with NVIDIA NICs that carry NVIDIA GPUs; fewer than two is a warning (the bandwidth test
    needs two); a node two groups select is an error."
  - "C(irdma): Intel NICs on the groups' nodes without the irdma blacklist are a warning."
  - "C(interfaces): from SriovNetworkNodeStates (or NicDevices), every group's interfaces exist
    on every node it selects, their link type matches the group's fabric, and they support the
    VFs asked for (warnings where the NIC configuration sets them)."
  - "C(ownership): no object of the plan exists without the collection's label (error, or a
    warning with O(take_over)); no other OperatorGroup in an operator's namespace."
  - "C(operator-versions): each operator the run installs runs the CSV the plan pins (the
    release's for the NVIDIA operators, else C(starting_csv)); another version is an error
    naming both and the input that pins: OLM reads C(startingCSV) only at install, so site.yml
    never upgrades an installed operator, and OLM cannot go down a version."
  - "C(operator-catalog): before the Network or GPU Operator is installed from the certified
    catalog, the channel of the cluster's OpenShift minor holds the pinned CSV (an error naming
    what it holds), and with Automatic approval the pinned CSV is the channel's newest (OLM
    installs that one and follows each newer CSV: an error). A mirrored catalog is not judged."
  - "C(disruption): every change of this run that reboots, drains or reloads a node (a
    MachineConfig, an SR-IOV node policy, a NIC policy's DOCA driver or device plugin, a NIC
    firmware template, the GPU driver), with its objects and nodes; an error on nodes that already
    run the collection's configuration unless the plan's C(allow_disruption) names its effect,
    else a warning."
  - "C(cluster-policy): no ClusterPolicy other than the collection's (the GPU Operator honours
    one)."
  - "C(telemetry-stream): a warning when the NicClusterPolicy's DOCA Telemetry Service image is
    built for another DOCA release than a node group's DOCA driver (C(1.25.5-doca3.4.0-host)
    beside C(doca3.5.0-...)), a pair NVIDIA's reviews flag as a risk."
  - "C(driver-toolkit): every NVIDIA GPU or NIC node runs an RHCOS build (NFD's
    C(system-os_release.OSTREE_VERSION) label) that the ImageStream C(openshift/driver-toolkit) has
    a tag for, or the GPU and DOCA drivers would not build there (an error); a label that its
    node's osImage contradicts is stale (a warning, gpu-operator#990). Skipped until NFD labels."
  - "C(gpu-cluster): no GPUCluster (GPU Operator 26.7's DRA stack) where the ClusterPolicy is to
    be created: the operator runs one or the other (an error). Read while no ClusterPolicy exists."
  - "C(gpu-operator-release): a warning when the GPU Operator pinned (starting_csv) or installed
    is 26.3.0 to 26.3.2, which put every ibverbs device into every GPU pod (fixed in 26.3.3)."
  - "C(nic-policies): no NicNodePolicy of somebody else holds a section the NicClusterPolicy plans
    or selects a group's node; a change of the NIC policy model says what moves and which nodes'
    DOCA driver reloads."
  - "C(method), C(infiniband-vfs): objects of another RDMA method created by the collection are
    listed (they will be removed); objects of others on the configured interfaces are an error
    (a warning with O(take_over); they are never removed); foreign InfiniBand SR-IOV policies
    above 16 VFs are a warning."
  - "C(rdma-mode): a SriovNetworkPoolConfig with C(rdmaMode: exclusive) and the shared device
    method are never mixed (error)."
  - "C(machine-configs), C(single-node): the MachineConfigPool of the role exists and has machines;
    single-node OpenShift limits are warnings."
  - "With the NIC configuration opt-in, C(nic-configuration): every NIC type of a group is on its
    nodes, and no template of somebody else selects the same devices; C(maintenance-operator): a
    Maintenance Operator somebody else installed is used (warning)."
  - Each step declares its checks and what they read (C(plugins/module_utils/steps/)); the
    cluster is read once for all of them.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpudirect.rdma.cluster
attributes:
  check_mode:
    support: full
    description: Reads only, in check mode as otherwise.
  diff_mode:
    support: none
    description: Reads only.
options:
  plan:
    description: The plan from M(gpudirect.rdma.plan).
    type: dict
    required: true
  objects:
    description: The objects the plan will apply (C(plan | gpudirect.rdma.objects)).
    type: list
    elements: dict
    required: true
  take_over:
    description: The user allows replacing objects the collection did not create (same names).
    type: bool
    default: false
  fail_on_errors:
    description: Fail when a finding is an error; the message is the whole summary.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Check the cluster before anything is written
  gpudirect.rdma.preflight:
    plan: "{{ gpudirect_rdma_plan }}"
    objects: "{{ gpudirect_rdma_plan | gpudirect.rdma.objects }}"
  register: preflight

- name: Show every finding
  ansible.builtin.debug:
    msg: "{{ preflight.summary }}"
"""

RETURN = r"""
findings:
  description: Every finding, in the order the checks ran.
  returned: always
  type: list
  elements: dict
  contains:
    check:
      description: The check, e.g. C(interfaces).
      type: str
    severity:
      description: C(error), C(warning), C(ok) or C(skipped).
      type: str
    message:
      description: What was found, naming the variable or object and what to do.
      type: str
summary:
  description: A count line, then one line per finding, errors first.
  returned: always
  type: list
  elements: str
error_count:
  description: How many findings are errors.
  returned: always
  type: int
warning_count:
  description: How many findings are warnings.
  returned: always
  type: int
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.api import (  # noqa: E402
    ApiError,
    SettingsError,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (  # noqa: E402
    ApiFailure,
    Cluster,
    Forbidden,
    argument_spec,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.preflight import (  # noqa: E402
    Facts,
    evaluate,
    judge,
    summary,
)

ARGUMENT_SPEC = argument_spec(
    plan={"type": "dict", "required": True},
    objects={"type": "list", "elements": "dict", "required": True},
    take_over={"type": "bool", "default": False},
    fail_on_errors={"type": "bool", "default": True},
)


def main():
    run(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True))


def run(module):
    plan = module.params["plan"]
    objects = module.params["objects"]
    take_over = module.params["take_over"]
    try:
        cluster = Cluster(module)
        findings, _verdict = judge(cluster, plan, objects, take_over, cluster.server)
    except Forbidden as error:
        findings = evaluate(plan, objects, Facts(forbidden=str(error)), take_over)
    except ApiError as error:
        if error.status != 401:  # logged in, but a read the checks need failed
            module.fail_json(
                msg=f"preflight could not read the cluster: {error.status} {error.reason}: "
                f"{error.summary()}. The user running the playbook needs read access to "
                "the kinds the collection manages."
            )
        findings = evaluate(plan, objects, Facts(api_error=str(error)), take_over)
    except (ApiFailure, SettingsError) as error:  # no answer, TLS, an unusable kubeconfig
        server = error.server if isinstance(error, ApiFailure) else None
        facts = Facts(server=server or "", api_error=f"{type(error).__name__}: {error}")
        findings = evaluate(plan, objects, facts, take_over)
    lines = summary(findings)
    errors = sum(1 for f in findings if f["severity"] == "error")
    warnings = sum(1 for f in findings if f["severity"] == "warning")
    for item in findings:
        if item["severity"] == "warning":
            module.warn(f"preflight {item['check']}: {item['message']}")
    result = {
        "changed": False,
        "findings": findings,
        "summary": lines,
        "error_count": errors,
        "warning_count": warnings,
    }
    if errors and module.params["fail_on_errors"]:
        module.fail_json(
            msg="preflight found "
            f"{errors} error(s); nothing was written to the cluster.\n" + "\n".join(lines),
            **result,
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
