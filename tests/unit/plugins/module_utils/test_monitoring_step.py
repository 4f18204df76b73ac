"""The monitoring step (steps/monitoring.py) and what the plan gives it: its objects, the DOCA
Telemetry Service and DCGM ServiceMonitor it adds to the operators' policies, the rail map taken
from the verify baseline, its thresholds as inventory inputs, and, off, how little it costs."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import (
    dashboard,
    monitoring,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    COMPONENT_LABEL,
    IMPLICIT_GROUP,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.remove import Remover
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import (
    monitoring as monitoring_step,
)
from ansible_collections.gpudirect.rdma.plugins.modules.plan import DOCUMENTATION
from ansible_collections.gpudirect.rdma.plugins.plugin_utils import yaml_cache
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import PlanError, build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify import baseline
from tests.unit.plugins.module_utils.test_engine import as_applied, checked, converged_cluster
from tests.unit.plugins.module_utils.test_engine import inputs as engine_inputs

MONITORING_KINDS = {"PrometheusRule", "ServiceMonitor"}


def plan_with(**given) -> dict:
    return build_plan({**engine_inputs("shared-device-roce"), **given})


def pfc_alert(plan: dict) -> dict:
    rule = table.component_objects(plan, "monitoring")[1]
    rules = [a for g in rule["spec"]["groups"] for a in g["rules"]]
    return next(a for a in rules if a.get("alert") == "GPUDirectRDMAPFCPauseStorm")


def kinds_of(objects: list[dict]) -> list[tuple[str, str | None, str]]:
    return [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects]


def test_the_step_applies_its_namespace_rules_telemetry_scrape_and_dashboard():
    plan = plan_with(monitoring=True)
    objects = table.component_objects(plan, "monitoring")
    assert kinds_of(objects) == [
        ("Namespace", None, "gpudirect-rdma-monitoring"),
        ("PrometheusRule", "gpudirect-rdma-monitoring", "gpudirect-rdma-fabric"),
        ("Service", "nvidia-network-operator", "gpudirect-rdma-doca-telemetry"),
        ("ServiceMonitor", "nvidia-network-operator", "gpudirect-rdma-doca-telemetry"),
        ("ConfigMap", "openshift-config-managed", "gpudirect-rdma-fabric"),
    ]
    assert {o["metadata"]["labels"][COMPONENT_LABEL] for o in objects} == {"monitoring"}
    assert objects[0]["metadata"]["labels"]["openshift.io/cluster-monitoring"] == "true"
    assert objects[4]["metadata"]["labels"][dashboard.LABEL] == "true"
    service, monitor = objects[2], objects[3]
    # The Service selects the DOCA Telemetry Service's pods (the Network Operator's label) on
    # its port; the ServiceMonitor selects the Service by the collection's label only.
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": "doca-telemetry"}
    assert service["spec"]["ports"][0]["port"] == 9189
    assert monitor["spec"]["selector"]["matchLabels"] == {"gpudirect.rdma/scrape": "doca-telemetry"}
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]


def test_the_policies_carry_telemetry_and_the_dcgm_service_monitor_only_with_monitoring():
    on, off = plan_with(monitoring=True), plan_with()
    ncp_on = table.component_objects(on, "network-operator")[-1]
    ncp_off = table.component_objects(off, "network-operator")[-1]
    assert ncp_on["kind"] == ncp_off["kind"] == "NicClusterPolicy"
    telemetry = ncp_on["spec"]["docaTelemetryService"]
    assert telemetry["image"] == "doca_telemetry"
    assert telemetry["version"] == on["images"]["docaTelemetryService"]["version"]
    assert "docaTelemetryService" not in ncp_off["spec"]
    gpu_on = table.component_objects(on, "gpu-operator")[-1]["spec"]["dcgmExporter"]
    gpu_off = table.component_objects(off, "gpu-operator")[-1]["spec"]["dcgmExporter"]
    assert gpu_on["serviceMonitor"] == {
        "enabled": True,
        "relabelings": [monitoring.NODE_AS_INSTANCE],
    }
    assert gpu_off.get("serviceMonitor") != gpu_on["serviceMonitor"]


def test_the_implicit_group_has_a_name_in_the_rules():
    plan = plan_with(monitoring=True)
    rule = table.component_objects(plan, "monitoring")[1]
    (group_rule,) = [
        r for r in rule["spec"]["groups"][0]["rules"] if r["record"] == monitoring.NODE_GROUP
    ]
    assert group_rule["labels"] == {"group": IMPLICIT_GROUP}


def baseline_config_map(plan: dict) -> dict:
    report = {
        "run": {"date": "2026-12-01T10:00:00Z"},
        "pairs": [
            {
                "rail": 0,
                "interface": "ens8f0np0",
                "device": "mlx5_2",
                "bw_average_gbps": 371.5,
                "server_gpu": {"gpu": 4},
            }
        ],
    }
    return as_applied(baseline.config_map(plan, report))


def test_the_rail_map_comes_from_the_clusters_verify_baseline():
    plan = plan_with(monitoring=True)
    found = baseline_config_map(plan)
    somebody_elses = {**found, "metadata": {**found["metadata"], "namespace": "elsewhere"}}
    listed = []

    def list_objects(api_version, kind, namespace=None, label_selector=None):
        listed.append((api_version, kind, namespace, label_selector))
        return [found, somebody_elses]

    with_map, missing = monitoring_step.with_baseline(plan, list_objects)
    assert missing is None
    assert listed == [("v1", "ConfigMap", "default", "app.kubernetes.io/managed-by=gpudirect.rdma")]
    rules = monitoring_step.operand(with_map)[1]["spec"]["groups"][0]["rules"]
    rail = next(r for r in rules if r["record"] == monitoring.RAIL)
    # Verify names no group in a plan of one: the implicit group's rail 0 is found all the same.
    assert rail["labels"] == {"rail": "0", "interface": "ens8f0np0", "device": "mlx5_2", "gpu": "4"}
    assert rail["expr"] == f'{monitoring.NODE_GROUP}{{group="{IMPLICIT_GROUP}"}}'
    (base,) = [r for r in rules if r["record"] == monitoring.RAIL_BASELINE]
    assert base["expr"].endswith("* 0 + 371.5")
    without, _missing = monitoring_step.with_baseline(plan, lambda *a, **k: [])
    assert without["monitoring"]["baseline"] is None
    assert not any(
        r["record"] == monitoring.RAIL
        for r in monitoring_step.operand(without)[1]["spec"]["groups"][0]["rules"]
    )


def test_a_converged_cluster_with_monitoring_is_converged_and_a_baseline_is_work():
    plan = plan_with(monitoring=True)
    cluster = converged_cluster(plan)
    engine = checked(plan, cluster)
    assert engine.all_work() == []
    # A baseline recorded since: the rules gain the rails.
    found = baseline_config_map(plan)
    cluster.objects[("v1", "ConfigMap", "default", found["metadata"]["name"])] = found
    engine = checked(plan, cluster)
    assert engine.all_work() == [
        "PrometheusRule gpudirect-rdma-monitoring/gpudirect-rdma-fabric would be updated "
        "(fields differ)"
    ]


def test_off_and_never_on_the_step_reads_none_of_its_kinds():
    plan = plan_with()
    cluster = converged_cluster(plan)
    engine = checked(plan, cluster)
    assert engine.all_work() == []
    read = {kind for _verb, kind in cluster.reads}
    assert not read & MONITORING_KINDS, cluster.reads
    (record,) = [s for s in engine.steps if s["step"] == "monitoring"]
    assert record["skipped"] == "off in the plan" and record["results"] == []


def test_turned_off_the_step_removes_what_it_made_while_its_namespace_is_there():
    plan = plan_with()
    cluster = converged_cluster(plan)
    left = [
        as_applied(o) for o in table.component_objects(plan_with(monitoring=True), "monitoring")
    ]
    for obj in left:
        cluster.objects[
            (
                obj["apiVersion"],
                obj["kind"],
                obj["metadata"].get("namespace"),
                obj["metadata"]["name"],
            )
        ] = obj
    engine = checked(plan, cluster)
    assert sorted(engine.all_work()) == sorted(
        [
            "ConfigMap openshift-config-managed/gpudirect-rdma-fabric would be removed "
            "(no longer part of the plan)",
            "Namespace gpudirect-rdma-monitoring would be removed (no longer part of the plan)",
            "PrometheusRule gpudirect-rdma-monitoring/gpudirect-rdma-fabric would be removed "
            "(no longer part of the plan)",
            "Service nvidia-network-operator/gpudirect-rdma-doca-telemetry would be removed "
            "(no longer part of the plan)",
            "ServiceMonitor nvidia-network-operator/gpudirect-rdma-doca-telemetry would be "
            "removed (no longer part of the plan)",
        ]
    )


def test_the_thresholds_are_inputs_with_the_rules_defaults():
    options = yaml_cache.load(DOCUMENTATION)["options"]
    assert {key: options[f"monitoring_{key}"]["default"] for key in monitoring.THRESHOLDS} == (
        monitoring.THRESHOLDS
    )
    plan = plan_with(monitoring=True, monitoring_pfc_pause_per_second="250")
    assert plan["monitoring"]["thresholds"]["pfc_pause_per_second"] == 250
    storm = pfc_alert(plan)
    assert ">= 250)" in storm["expr"]


def test_a_threshold_set_while_monitoring_is_off_is_kept_with_a_warning():
    plan = plan_with(monitoring_cnp_per_second=100)
    assert plan["monitoring"]["thresholds"]["cnp_per_second"] == 100
    assert plan["warnings"] == [
        "gpudirect_rdma_monitoring_cnp_per_second is set but unused while "
        "gpudirect_rdma_monitoring is false: only gpudirect_rdma_monitoring: true (its alerts) "
        "uses it (kept for when it is turned on again)"
    ]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            {"monitoring_for_minutes": 0},
            "gpudirect_rdma_monitoring_for_minutes: got 0; expected a whole number from 1 to 1440",
        ),
        (
            {"monitoring_link_down_per_hour": "often"},
            "gpudirect_rdma_monitoring_link_down_per_hour: got 'often'; expected a whole number "
            "from 1 to 1000",
        ),
        (
            {"monitoring_port_rate_gbps_below": -1},
            "gpudirect_rdma_monitoring_port_rate_gbps_below: got -1; expected a whole number "
            "from 0 to 3200 Gb/s",
        ),
    ],
)
def test_a_bad_threshold_is_named(given, expected):
    with pytest.raises(PlanError, match="^" + expected.replace("(", r"\(").replace(")", r"\)")):
        plan_with(monitoring=True, **given)


def test_the_pfc_priority_is_used_by_the_pfc_alert_on_roce():
    plan = plan_with(monitoring=True, roce_pfc_priority=5)
    storm = pfc_alert(plan)
    assert "node_ethtool_received_prio5_pause" in storm["expr"]
    assert plan["warnings"] == []
    # Neither the alert nor the NIC firmware opt-in: kept for when one is turned on, and said.
    (warning,) = plan_with(roce_pfc_priority=5)["warnings"]
    assert warning.startswith(
        "gpudirect_rdma_roce_pfc_priority is set but unused while "
        "gpudirect_rdma_nic_configuration and gpudirect_rdma_monitoring are false: only "
    )
    assert "gpudirect_rdma_monitoring: true on one (its PFC pause alert)" in warning


def test_uninstall_removes_the_steps_namespace_and_none_of_the_operators():
    """The monitoring stage lists the collection's Namespaces (its own is one of its kinds): it
    takes only the one of its component; the operators' go in the last stage."""
    on = plan_with(monitoring=True)
    cluster = converged_cluster(on)
    remover = Remover(cluster, check_mode=True, sleep=lambda _s: None)
    remover.remove("monitoring", "", 5)
    assert sorted(r["object"] for r in remover.results) == sorted(
        [
            "ConfigMap openshift-config-managed/gpudirect-rdma-fabric",
            "Namespace gpudirect-rdma-monitoring",
            "PrometheusRule gpudirect-rdma-monitoring/gpudirect-rdma-fabric",
            "Service nvidia-network-operator/gpudirect-rdma-doca-telemetry",
            "ServiceMonitor nvidia-network-operator/gpudirect-rdma-doca-telemetry",
        ]
    )
