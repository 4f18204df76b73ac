"""The monitoring step end to end on the local control plane (the real prometheus-operator CRDs
served): site.yml with gpudirect_rdma_monitoring applies the PrometheusRule, the dashboard and
the DOCA Telemetry Service's scrape, and the two policies' sections; a verify baseline recorded,
the next run labels the rules with each rail's RDMA device and GPU; a converged run writes
nothing; turned off, everything it made goes, and a run after that reads none of its kinds;
uninstall removes it all."""

from __future__ import annotations

import json

from kubernetes.client.rest import ApiException

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import monitoring
from tests.harness.audit import AuditLog
from tests.harness.controlplane import ADMIN_USER
from tests.integration.helpers import wait_for
from tests.integration.test_site import nodes_for, recap, site
from tests.integration.test_uninstall import uninstall_everything
from tests.integration.test_verify import verify

INVENTORY = "multi-rail-hgx"
OFF = ("-e", "gpudirect_rdma_monitoring=false")
NETWORK_OPERATOR = "nvidia-network-operator"


def rule(custom) -> dict | None:
    try:
        return custom.get_namespaced_custom_object(
            "monitoring.coreos.com",
            "v1",
            monitoring.NAMESPACE,
            "prometheusrules",
            monitoring.RULE_NAME,
        )
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def records(found: dict, name: str) -> list[dict]:
    return [r for g in found["spec"]["groups"] for r in g["rules"] if r.get("record") == name]


def namespace_left(core) -> bool:
    return monitoring.NAMESPACE in {n.metadata.name for n in core.list_namespace().items}


def made(custom, core) -> dict[str, bool]:
    """Which of the step's objects and sections the cluster holds."""
    there = namespace_left(core)
    dashboards = {
        c.metadata.name for c in core.list_namespaced_config_map("openshift-config-managed").items
    }
    services = {s.metadata.name for s in core.list_namespaced_service(NETWORK_OPERATOR).items}
    monitors = custom.list_namespaced_custom_object(
        "monitoring.coreos.com", "v1", NETWORK_OPERATOR, "servicemonitors"
    )["items"]
    policy = custom.get_cluster_custom_object(
        "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
    )
    gpu = custom.get_cluster_custom_object(
        "nvidia.com", "v1", "clusterpolicies", "gpu-cluster-policy"
    )
    return {
        "namespace": there,
        "rule": there and rule(custom) is not None,
        "dashboard": "gpudirect-rdma-fabric" in dashboards,
        "service": monitoring.TELEMETRY in services,
        "service monitor": [m["metadata"]["name"] for m in monitors] == [monitoring.TELEMETRY],
        "telemetry": "docaTelemetryService" in policy["spec"],
        "dcgm": (gpu["spec"].get("dcgmExporter") or {}).get("serviceMonitor")
        == monitoring.DCGM_SERVICE_MONITOR,
    }


def test_monitoring_converges_takes_the_rail_map_from_the_baseline_and_goes_when_off(
    run_playbook, harness, custom, core, control_plane, tmp_path
):
    nodes_for(harness, INVENTORY)
    first = site(run_playbook, INVENTORY)
    assert recap(first.stdout)["failed"] == 0
    assert set(made(custom, core).values()) == {True}, made(custom, core)
    namespace = core.read_namespace(monitoring.NAMESPACE)
    assert namespace.metadata.labels["openshift.io/cluster-monitoring"] == "true"
    # Preflight said what OpenShift monitoring lacks here (nothing turned it on).
    assert "user-workload monitoring is off" in " ".join((first.stdout + first.stderr).split())
    # No baseline yet: the node groups, no rails.
    assert records(rule(custom), monitoring.RAIL) == []
    assert len(records(rule(custom), monitoring.NODE_GROUP)) == 1

    # A baseline recorded: the next run gives every rail its RDMA device and GPU.
    report_dir = tmp_path / "record"
    recorded = verify(run_playbook, INVENTORY, report_dir, "-e", "verify_baseline=record")
    assert recap(recorded.stdout)["failed"] == 0
    kept = json.loads((report_dir / "verify-baseline.json").read_text())
    again = site(run_playbook, INVENTORY)
    assert recap(again.stdout)["changed"] > 0
    rails = records(rule(custom), monitoring.RAIL)
    assert [
        (int(r["labels"]["rail"]), r["labels"]["device"], int(r["labels"]["gpu"])) for r in rails
    ] == [(p["rail"], p["device"], p["server_gpu"]["gpu"]) for p in kept["pairs"]]
    baselines = records(rule(custom), monitoring.RAIL_BASELINE)
    assert len(baselines) == len(kept["pairs"]) == 8

    # Converged: nothing written, and the requests the run made, counted.
    audit = AuditLog(control_plane.audit_log).mark()
    converged = site(run_playbook, INVENTORY)
    assert recap(converged.stdout)["changed"] == 0, converged.stdout[-3000:]
    assert audit.writes(ADMIN_USER) == [], [str(w) for w in audit.writes(ADMIN_USER)]
    requests = audit.requests(ADMIN_USER)
    print(f"converged run with monitoring: {len(requests)} requests")
    assert len(requests) <= 35, "\n".join(str(r) for r in requests)
    assert [r for r in requests if not r.resource] == [], "a discovery request"

    # Off: everything it made goes, the policies lose their sections.
    off = site(run_playbook, INVENTORY, *OFF)
    assert recap(off.stdout)["failed"] == 0
    wait_for(lambda: not namespace_left(core), 60, what=f"Namespace {monitoring.NAMESPACE} gone")
    assert set(made(custom, core).values()) == {False}, made(custom, core)
    # ... and a run with it off reads none of its kinds: its Namespace is gone.
    audit = AuditLog(control_plane.audit_log).mark()
    assert recap(site(run_playbook, INVENTORY, *OFF).stdout)["changed"] == 0
    read = {r.resource for r in audit.requests(ADMIN_USER)}
    assert not read & {"prometheusrules", "servicemonitors"}, read

    # On again, then uninstall: nothing of it is left.
    assert recap(site(run_playbook, INVENTORY).stdout)["failed"] == 0
    assert made(custom, core)["rule"]
    assert recap(uninstall_everything(run_playbook).stdout)["failed"] == 0
    wait_for(lambda: not namespace_left(core), 60, what=f"Namespace {monitoring.NAMESPACE} gone")
    dashboards = {
        c.metadata.name for c in core.list_namespaced_config_map("openshift-config-managed").items
    }
    assert "gpudirect-rdma-fabric" not in dashboards
