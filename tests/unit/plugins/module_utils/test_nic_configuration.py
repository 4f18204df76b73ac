"""The NIC firmware settings (opt-in): the plan's inputs, the objects (NicConfigurationTemplates
with NVIDIA's values for GPUDirect RDMA, the MaintenanceOperatorConfig, the NicClusterPolicy's
nicConfigurationOperator, the Subscription's environment, the SriovOperatorConfig), the NIC types
taken from the NicDevices, the gate that reads the devices' conditions, the engine's opt-in and
somebody else's Maintenance Operator, and the reset before uninstall."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import nic_configuration
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.engine import Engine
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.remove import Remover
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import (
    GateFailed,
    GateTimeout,
    observe,
    to_gate,
    wait_for,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import PlanError, build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.releases import (
    LATEST_NETWORK_OPERATOR,
)
from tests.unit.inventories import NAMES, inputs

NS = "nvidia-network-operator"
EXAMPLE = "nic-configuration-roce"


def plan_of(name: str = EXAMPLE, **changes) -> dict:
    return build_plan({**inputs(name), **changes})


def templates(plan: dict) -> list[dict]:
    return table.component_objects(plan, "nic-configuration")


def of_kind(plan: dict, kind: str) -> list[dict]:
    return [o for o in table.build_objects(plan) if o["kind"] == kind]


# -- the objects ----------------------------------------------------------------------------------
def test_roce_on_connectx7_carries_the_reference_values():
    (template,) = templates(plan_of())
    assert template["metadata"]["name"] == "gpudirect-rdma-connectx-7"
    assert template["metadata"]["namespace"] == NS
    assert template["spec"] == {
        "nodeSelector": {"feature.node.kubernetes.io/pci-15b3.present": "true"},
        "nicSelector": {"nicType": "1021"},
        "resetToDefault": False,
        "template": {
            "numVfs": 8,
            "linkType": "Ethernet",
            "pciPerformanceOptimized": {"enabled": True, "maxReadRequest": 4096},
            "gpuDirectOptimized": {"enabled": True, "env": "Baremetal"},
            "roceOptimized": {"enabled": True, "qos": {"trust": "dscp", "pfc": "0,0,0,1,0,0,0,0"}},
        },
    }


def test_infiniband_on_connectx7_has_no_roce_qos_and_the_infiniband_link():
    plan = plan_of("sriov-legacy-infiniband", nic_configuration=True, nic_type=["ConnectX-7"])
    (template,) = templates(plan)
    assert template["spec"]["template"] == {
        "numVfs": plan["groups"][0]["sriov"]["num_vfs"],
        "linkType": "Infiniband",
        "pciPerformanceOptimized": {"enabled": True, "maxReadRequest": 4096},
        "gpuDirectOptimized": {"enabled": True, "env": "Baremetal"},
    }


@pytest.mark.parametrize("name", ["shared-device-roce", "host-device-infiniband"])
def test_methods_without_vfs_turn_sriov_off_in_the_firmware(name):
    (template,) = templates(plan_of(name, nic_configuration=True, nic_type="BlueField-3"))
    assert template["spec"]["template"]["numVfs"] == 0
    assert template["spec"]["nicSelector"] == {"nicType": "a2dc"}
    assert template["metadata"]["name"] == "gpudirect-rdma-bluefield-3"


def test_the_lossless_priority_and_the_trust_come_from_the_inventory():
    (template,) = templates(plan_of(roce_pfc_priority=5, roce_qos_trust="pfc"))
    assert template["spec"]["template"]["roceOptimized"]["qos"] == {
        "trust": "pfc",
        "pfc": "0,0,0,0,0,1,0,0",
    }


def test_one_template_per_group_and_nic_type_with_the_groups_selectors():
    plan = plan_of("node-groups", nic_configuration=True, nic_type="ConnectX-7")
    groups = inputs("node-groups")["node_groups"]
    groups = [{**groups[0], "nic_type": ["ConnectX-6 Dx", "1021"]}, *groups[1:]]
    plan = plan_of("node-groups", nic_configuration=True, nic_type="ConnectX-7", node_groups=groups)
    found = {t["metadata"]["name"]: t["spec"] for t in templates(plan)}
    assert list(found) == ["a100-connectx-6-dx", "a100-connectx-7", "h100-connectx-7"]
    assert found["a100-connectx-7"]["nodeSelector"] == groups[0]["node_selector"]
    assert found["h100-connectx-7"]["nodeSelector"] == groups[1]["node_selector"]
    # Each group's fabric decides its link and whether the RoCE QoS is there.
    links = {name: spec["template"]["linkType"] for name, spec in found.items()}
    assert links == {
        "a100-connectx-6-dx": "Ethernet",
        "a100-connectx-7": "Ethernet",
        "h100-connectx-7": "Infiniband",
    }
    assert "roceOptimized" not in found["h100-connectx-7"]["template"]


def test_the_maintenance_operator_config_holds_the_budgets():
    (config,) = of_kind(plan_of(), "MaintenanceOperatorConfig")
    assert config["metadata"]["name"] == "default"
    assert config["metadata"]["namespace"] == "nvidia-maintenance-operator"
    assert config["spec"] == {"maxParallelOperations": 1, "maxNodeMaintenanceTimeSeconds": 3600}
    (config,) = of_kind(
        plan_of(maintenance_max_parallel="25%", maintenance_max_unavailable="0"),
        "MaintenanceOperatorConfig",
    )
    assert config["spec"]["maxParallelOperations"] == "25%"
    assert config["spec"]["maxUnavailable"] == 0


def test_the_maintenance_operator_is_installed_through_olm_before_the_network_operator():
    names = [s.name for s in table.STEPS]
    assert names.index("maintenance-operator") < names.index("network-operator")
    subscription = next(
        o
        for o in of_kind(plan_of(), "Subscription")
        if o["spec"]["name"] == "nvidia-maintenance-operator"
    )
    assert subscription["metadata"]["namespace"] == "nvidia-maintenance-operator"
    assert subscription["spec"]["source"] == "certified-operators"
    assert subscription["spec"]["channel"] == "stable"
    manual = plan_of(operators={"maintenance_operator": {"approval": "Manual"}})
    (manual_sub,) = [
        o
        for o in of_kind(manual, "Subscription")
        if o["spec"]["name"] == "nvidia-maintenance-operator"
    ]
    assert manual_sub["spec"]["startingCSV"] == "nvidia-maintenance-operator.v26.4.0"


def test_the_nic_cluster_policy_runs_the_nic_configuration_operator_of_the_release():
    (policy,) = of_kind(plan_of(), "NicClusterPolicy")
    section = policy["spec"]["nicConfigurationOperator"]
    assert section["operator"]["image"] == "nic-configuration-operator"
    assert section["configurationDaemon"]["image"] == "nic-configuration-operator-daemon"
    for image in (section["operator"], section["configurationDaemon"]):
        assert image["repository"] == "nvcr.io/nvidia/mellanox"
        assert image["version"] == f"network-operator-v{LATEST_NETWORK_OPERATOR}"
    assert "env" not in section
    (policy,) = of_kind(
        plan_of(nic_firmware_reset=True, image_registry="mirror.local:5000"), "NicClusterPolicy"
    )
    section = policy["spec"]["nicConfigurationOperator"]
    assert section["env"] == [{"name": "FW_RESET_AFTER_CONFIG_UPDATE", "value": "true"}]
    assert section["operator"]["repository"] == "mirror.local:5000/nvidia/mellanox"


def test_driver_upgrades_ask_the_maintenance_operator_and_sriov_stays_out_of_the_way():
    plan = plan_of()
    subscription = next(
        o for o in of_kind(plan, "Subscription") if o["spec"]["name"] == "nvidia-network-operator"
    )
    assert subscription["spec"]["config"]["env"] == [
        {"name": "MAINTENANCE_OPERATOR_ENABLED", "value": "true"},
        # The NodeMaintenance CRD refuses an empty requestorID, and the library has no default.
        {"name": "MAINTENANCE_OPERATOR_REQUESTOR_ID", "value": "nvidia.doca-driver-upgrade"},
        {
            "name": "MAINTENANCE_OPERATOR_REQUESTOR_NAMESPACE",
            "value": "nvidia-maintenance-operator",
        },
    ]
    (config,) = of_kind(plan, "SriovOperatorConfig")
    assert config["spec"]["disablePlugins"] == ["mellanox"]
    assert (
        config["spec"]["configDaemonNodeSelector"][
            "network.nvidia.com/operator.nic-configuration.wait"
        ]
        == "false"
    )
    # The SR-IOV node policy and the template ask for the same VF count.
    (policy,) = of_kind(plan, "SriovNetworkNodePolicy")
    assert policy["spec"]["numVfs"] == templates(plan)[0]["spec"]["template"]["numVfs"]


@pytest.mark.parametrize("name", [n for n in NAMES if n != EXAMPLE])
def test_off_nothing_of_it_is_planned(name):
    plan = plan_of(name)
    objects = table.build_objects(plan)
    kinds = {o["kind"] for o in objects}
    assert not kinds & {"NicConfigurationTemplate", "MaintenanceOperatorConfig"}
    assert all(
        o["spec"]["name"] != "nvidia-maintenance-operator"
        for o in objects
        if o["kind"] == "Subscription"
    )
    assert all("config" not in o["spec"] for o in objects if o["kind"] == "Subscription")
    for policy in (o for o in objects if o["kind"] == "NicClusterPolicy"):
        assert "nicConfigurationOperator" not in policy["spec"]
    for config in (o for o in objects if o["kind"] == "SriovOperatorConfig"):
        assert "disablePlugins" not in config["spec"]
    assert not any(
        s.enabled(plan)
        for s in table.STEPS
        if s.name.endswith(("maintenance-operator", "nic-configuration"))
    )


# -- the plan -------------------------------------------------------------------------------------
def test_nic_types_by_name_or_id_in_a_list_or_a_survey_string():
    plan = plan_of(nic_type="ConnectX-6 Dx, connectx-7,A2DC")
    assert plan["groups"][0]["nic_types"] == ["101d", "1021", "a2dc"]


def test_a_nic_type_the_collection_does_not_name_is_taken_by_its_device_id():
    (template,) = templates(plan_of(nic_type=["a2d9"]))
    assert template["metadata"]["name"] == "gpudirect-rdma-a2d9"
    assert template["spec"]["nicSelector"]["nicType"] == "a2d9"


def test_roce_qos_on_an_infiniband_only_plan_is_refused():
    with pytest.raises(PlanError) as raised:
        plan_of("shared-device-infiniband", nic_configuration=True, roce_qos_trust="pfc")
    assert raised.value.variable == "gpudirect_rdma_roce_qos_trust"
    assert "IncorrectSpec" in str(raised.value)


# -- the NIC types taken from the NicDevices ------------------------------------------------------
def device(name: str, node: str, nic_type: str = "1021", **status) -> dict:
    return {
        "apiVersion": "configuration.net.nvidia.com/v1alpha1",
        "kind": "NicDevice",
        "metadata": {"name": name, "namespace": NS, "generation": status.pop("generation", 1)},
        "spec": status.pop("spec", {}),
        "status": {"node": node, "type": nic_type, **status},
    }


def node(name: str, **labels) -> dict:
    base = {"feature.node.kubernetes.io/pci-15b3.present": "true"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {**base, **labels}},
    }


def lister(objects: list[dict]):
    def list_objects(api_version, kind, namespace=None, label_selector=None):
        return [
            copy.deepcopy(o)
            for o in objects
            if o["kind"] == kind
            and (namespace is None or o["metadata"].get("namespace") == namespace)
        ]

    return list_objects


def test_without_nic_types_the_groups_take_those_of_the_nicdevices_on_their_nodes():
    plan = plan_of(nic_type=[])
    assert templates(plan) == []
    assert nic_configuration.undiscovered(plan) == ["gpudirect-rdma"]
    cluster = [
        node("worker-0"),
        node("worker-1"),
        node("other", **{"feature.node.kubernetes.io/pci-15b3.present": "false"}),
        device("worker-0-1021-0000-08-00", "worker-0"),
        device("worker-1-101d-0000-08-00", "worker-1", "101d"),
        device("other-a2dc-0000-08-00", "other", "a2dc"),
    ]
    found, missing = nic_configuration.with_discovered_types(plan, lister(cluster))
    assert missing is None
    assert found["groups"][0]["nic_types"] == ["101d", "1021"]
    assert plan["groups"][0]["nic_types"] == []  # the plan given is not changed
    assert [t["metadata"]["name"] for t in templates(found)] == [
        "gpudirect-rdma-connectx-6-dx",
        "gpudirect-rdma-connectx-7",
    ]
    _found, missing = nic_configuration.with_discovered_types(plan, lister([node("worker-0")]))
    assert "no NicDevice in nvidia-network-operator on the nodes of gpudirect-rdma" in missing
    assert "gpudirect_rdma_nic_type" in missing


# -- the gate -------------------------------------------------------------------------------------
class Cluster:
    """Objects answered by get and list; a patch is applied as a JSON merge patch of spec."""

    server = "https://cluster.invalid"

    def __init__(self, objects):
        self.objects = list(objects)
        self.patches, self.deleted = [], []

    def _find(self, kind, name, namespace):
        return next(
            (
                o
                for o in self.objects
                if o["kind"] == kind
                and o["metadata"]["name"] == name
                and o["metadata"].get("namespace") == namespace
            ),
            None,
        )

    def get(self, api_version, kind, name, namespace=None):
        return copy.deepcopy(self._find(kind, name, namespace))

    def list(self, api_version, kind, namespace=None, label_selector=None):
        wanted = dict(r.split("=", 1) for r in (label_selector or "").split(",") if "=" in r)
        return [
            copy.deepcopy(o)
            for o in self.objects
            if o["kind"] == kind
            and (namespace is None or o["metadata"].get("namespace") == namespace)
            and all((o["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())
        ]

    def patch(self, api_version, kind, name, namespace, body):
        self.patches.append((kind, name, body))
        found = self._find(kind, name, namespace)
        found["spec"] = {**found["spec"], **body["spec"]}
        return copy.deepcopy(found)

    def delete(self, api_version, kind, name, namespace=None):
        self.deleted.append((kind, name))
        self.objects = [o for o in self.objects if o is not self._find(kind, name, namespace)]


def applied_template(plan: dict, devices: list[str]) -> dict:
    (template,) = templates(plan)
    return {**copy.deepcopy(template), "status": {"nicDevices": devices}}


def configured(template: dict, name: str, node_name: str, reason: str, **condition) -> dict:
    generation = condition.pop("generation", 2)
    observed = condition.pop("observed", generation)
    return device(
        name,
        node_name,
        generation=generation,
        spec={
            "configuration": {
                "template": template["spec"]["template"],
                "resetToDefault": template["spec"]["resetToDefault"],
            }
        },
        conditions=[
            {
                "type": "ConfigUpdateInProgress",
                "status": "True" if reason in ("UpdateStarted", "PendingReboot") else "False",
                "reason": reason,
                "observedGeneration": observed,
                **condition,
            }
        ],
    )


def maintenance(node_name: str, reason: str | None) -> dict:
    found = {
        "apiVersion": "maintenance.nvidia.com/v1alpha1",
        "kind": "NodeMaintenance",
        "metadata": {
            "name": f"nic-configuration-operator-maintenance-{node_name}",
            "namespace": NS,
        },
        "spec": {"nodeName": node_name},
    }
    if reason:
        found["status"] = {
            "conditions": [{"type": "Ready", "status": str(reason == "Ready"), "reason": reason}]
        }
    return found


def the_gate(plan: dict):
    (options,) = table.step("nic-configuration").gates(plan, {}, [])
    return to_gate(options)


def test_the_template_is_applied_when_every_listed_device_reached_update_successful():
    plan = plan_of()
    template = applied_template(plan, ["a", "b"])
    cluster = Cluster(
        [
            template,
            configured(template, "a", "worker-0", "UpdateSuccessful"),
            configured(template, "b", "worker-1", "UpdateSuccessful"),
        ]
    )
    seen = observe(cluster, the_gate(plan))
    assert (seen.met, seen.failed) == (True, False), seen.seen
    assert seen.seen == "2 NicDevice(s) UpdateSuccessful"


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"observed": 1}, "NicDevice a on node worker-0: the daemon has not seen generation 2 yet"),
        (
            {"reason": "DeviceConfigSpecEmpty"},
            "ConfigUpdateInProgress reason DeviceConfigSpecEmpty",
        ),
    ],
)
def test_an_older_generation_or_another_reason_is_still_waiting(change, expected):
    plan = plan_of()
    template = applied_template(plan, ["a"])
    reason = change.pop("reason", "UpdateSuccessful")
    cluster = Cluster([template, configured(template, "a", "worker-0", reason, **change)])
    seen = observe(cluster, the_gate(plan))
    assert (seen.met, seen.failed) == (False, False)
    assert expected in seen.seen


def test_a_device_whose_spec_is_not_the_template_yet_is_waiting():
    plan = plan_of()
    template = applied_template(plan, ["a"])
    old = configured(template, "a", "worker-0", "UpdateSuccessful")
    old["spec"]["configuration"]["template"] = {**template["spec"]["template"], "numVfs": 4}
    seen = observe(Cluster([template, old]), the_gate(plan))
    assert not seen.met
    assert "its spec does not hold this template yet" in seen.seen


def test_no_device_listed_says_what_the_template_selects():
    plan = plan_of()
    seen = observe(Cluster([applied_template(plan, [])]), the_gate(plan))
    assert (seen.met, seen.failed) == (False, False)
    assert "no NicDevice is listed yet (nicType 1021 on nodes matching " in seen.seen
    missing = observe(Cluster([]), the_gate(plan))
    assert "does not exist" in missing.seen


@pytest.mark.parametrize(
    "reason, state",
    [("UpdateStarted", "Draining"), ("UpdateStarted", None), ("PendingReboot", "Ready")],
)
def test_maintenance_and_reboot_are_progress_shown_with_the_node_and_its_maintenance(reason, state):
    plan = plan_of()
    template = applied_template(plan, ["a"])
    cluster = Cluster(
        [
            template,
            configured(template, "a", "worker-0", reason),
            maintenance("worker-0", state),
        ]
    )
    seen = observe(cluster, the_gate(plan))
    assert (seen.met, seen.failed) == (False, False)
    assert f"NicDevice a on node worker-0: {reason}" in seen.seen
    expected = state or "no status (is the Maintenance Operator running?)"
    assert (
        f"NodeMaintenance nic-configuration-operator-maintenance-worker-0: {expected}" in seen.seen
    )


@pytest.mark.parametrize(
    "reason",
    [
        "IncorrectSpec",
        "SpecValidationFailed",
        "NonVolatileConfigUpdateFailed",
        "RuntimeConfigUpdateFailed",
        "FirmwareError",
    ],
)
def test_each_error_reason_fails_at_once_with_the_device_the_node_and_the_message(reason):
    plan = plan_of()
    template = applied_template(plan, ["a", "b"])
    cluster = Cluster(
        [
            template,
            configured(template, "a", "worker-0", "UpdateSuccessful"),
            configured(template, "b", "worker-1", reason, message="the daemon's words"),
        ]
    )
    clock = iter(range(100))
    with pytest.raises(GateFailed) as raised:
        wait_for(
            cluster, [the_gate(plan)], timeout=60, clock=lambda: next(clock), sleep=lambda s: None
        )
    text = str(raised.value)
    assert f"NicDevice b on node worker-1: {reason}: the daemon's words" in text
    assert "failed after" in text
    assert raised.value.report()["objects"][0]["kind"] == "NicConfigurationTemplate"


def test_a_paused_maintenance_operator_is_the_reason_nothing_moves_not_a_timeout():
    plan = plan_of(maintenance_max_unavailable=0)
    template = applied_template(plan, ["a"])
    (config,) = of_kind(plan, "MaintenanceOperatorConfig")
    cluster = Cluster(
        [
            template,
            configured(template, "a", "worker-0", "UpdateStarted"),
            maintenance("worker-0", "Pending"),
            config,
        ]
    )
    with pytest.raises(GateFailed) as raised:
        wait_for(cluster, [the_gate(plan)], timeout=3600, sleep=lambda s: None)
    text = str(raised.value)
    assert "the Maintenance Operator is paused (MaintenanceOperatorConfig " in text
    assert "nvidia-maintenance-operator/default has maxUnavailable 0" in text
    assert "NicDevice a on node worker-0 stays UpdateStarted" in text
    assert "gpudirect_rdma_maintenance_max_unavailable" in text
    # Not paused: the same device is only waiting, and the wait ends at its timeout.
    config["spec"]["maxUnavailable"] = 1
    clock = iter(range(100))
    with pytest.raises(GateTimeout):
        wait_for(
            cluster, [the_gate(plan)], timeout=5, clock=lambda: next(clock), sleep=lambda s: None
        )


# -- the engine -----------------------------------------------------------------------------------
def test_off_the_steps_have_no_role_and_turning_it_off_removes_the_templates():
    on = plan_of()
    # Off, the NIC settings are kept for when it is on again, with a warning (plan/unused.py).
    off = plan_of(nic_configuration=False)
    assert off["warnings"] == [
        "gpudirect_rdma_nic_type is set but unused while gpudirect_rdma_nic_configuration is "
        "false: only gpudirect_rdma_nic_configuration: true (the NIC Configuration Operator's "
        "templates) uses it (kept for when it is turned on again)"
    ]
    assert on["warnings"] == []
    step = table.step("nic-configuration")
    assert step.enabled(on) and not step.enabled(off)
    assert table.objects(table.step("maintenance-operator"), off) == []
    # Check mode over a cluster that still has the collection's template: it would go.
    (template,) = templates(on)
    template["metadata"]["managedFields"] = [{"manager": "gpudirect.rdma", "operation": "Apply"}]
    cluster = Cluster([template])
    cluster.apply = lambda obj, dry_run=False: obj
    engine = Engine(cluster, off, check_mode=True, sleep=lambda s: None)
    engine._run_step(step)
    assert engine.steps[-1]["skipped"] == "off in the plan"
    assert [(r["kind"], r["action"]) for r in engine.steps[-1]["results"]] == [
        ("NicConfigurationTemplate", "deleted")
    ]
    assert cluster.deleted == []  # check mode


def test_a_maintenance_operator_somebody_else_installed_is_used_not_replaced():
    plan = plan_of()
    theirs = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": "maintenance", "namespace": "openshift-operators"},
        "spec": {"name": "nvidia-maintenance-operator"},
        "status": {"installedCSV": "nvidia-maintenance-operator.v26.4.0"},
    }
    cluster = Cluster([theirs])
    engine = Engine(cluster, plan, check_mode=True, sleep=lambda s: None)
    engine._run_step(table.step("maintenance-operator"))
    record = engine.steps[-1]
    assert record["operator"] == {
        "used": "Subscription openshift-operators/maintenance "
        "(CSV nvidia-maintenance-operator.v26.4.0)"
    }
    assert record["results"] == [] and engine.applier.results == []


def test_check_mode_without_nic_types_reports_the_nicdevices_it_waits_for():
    plan = plan_of(nic_type=[])
    cluster = Cluster([node("worker-0")])
    engine = Engine(cluster, plan, check_mode=True, sleep=lambda s: None)
    engine._run_step(table.step("nic-configuration"))
    assert any("no NicDevice in nvidia-network-operator" in w for w in engine.work)


# -- uninstall ------------------------------------------------------------------------------------
def test_reset_sets_reset_to_default_waits_for_the_devices_then_deletes():
    plan = plan_of()
    (template,) = templates(plan)
    template["status"] = {"nicDevices": ["a"]}
    reset = nic_configuration.reset_to_default(template)
    done = configured(reset, "a", "worker-0", "UpdateSuccessful")
    cluster = Cluster([template, done])
    remover = Remover(cluster, False, sleep=lambda s: None)
    remover.remove("nic-configuration", "", 60, reset=("nic-configuration",))
    assert cluster.patches == [
        (
            "NicConfigurationTemplate",
            template["metadata"]["name"],
            {"spec": {"resetToDefault": True}},
        )
    ]
    assert remover.waited == [
        f"NicConfigurationTemplate {template['metadata']['name']} reset to the firmware defaults"
    ]
    assert cluster.deleted == [("NicConfigurationTemplate", template["metadata"]["name"])]
    assert [r["action"] for r in remover.results] == ["reset", "deleted"]


def test_without_reset_the_templates_just_go_and_the_nics_keep_their_settings():
    plan = plan_of()
    (template,) = templates(plan)
    cluster = Cluster([template])
    remover = Remover(cluster, False, sleep=lambda s: None)
    remover.remove("nic-configuration", "", 60)
    assert cluster.patches == []
    assert cluster.deleted == [("NicConfigurationTemplate", template["metadata"]["name"])]


# -- verify ---------------------------------------------------------------------------------------
def test_the_verify_report_shows_the_tested_nodes_nics_and_their_configuration_state():
    from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.judge import (
        report,
    )

    plan = plan_of()
    (template,) = templates(plan)
    tested = configured(template, "worker-0-1021-0000-08-00", "worker-0", "UpdateSuccessful")
    tested["status"].update(
        firmwareVersion="28.43.1014",
        ports=[{"pci": "0000:08:00.0", "networkInterface": "ens8f0np0", "rdmaInterface": "mlx5_0"}],
    )
    elsewhere = configured(template, "worker-9-1021-0000-08-00", "worker-9", "UpdateStarted")
    runs = [
        {
            "group": None,
            "rail": 0,
            "server_node": "worker-0",
            "client_node": "worker-1",
            "server_log": "",
            "client_log": "",
        }
    ]
    found = report(plan, runs, 100, [tested, elsewhere])
    assert found["nic_devices"] == [
        {
            "node": "worker-0",
            "name": "worker-0-1021-0000-08-00",
            "type": "ConnectX-7 (1021)",
            "firmware": "28.43.1014",
            "ports": ["0000:08:00.0/ens8f0np0/mlx5_0"],
            "configuration": "UpdateSuccessful",
        }
    ]
    assert found["table"][-1].startswith("worker-0")
    assert "UpdateSuccessful" in found["table"][-1]
    assert report(plan, runs, 100)["nic_devices"] == []


def test_the_26_7_roce_qos_goes_into_the_roce_templates_only_when_set():
    (plain,) = of_kind(plan_of(), "NicConfigurationTemplate")
    assert set(plain["spec"]["template"]["roceOptimized"]["qos"]) == {"trust", "pfc"}
    (template,) = of_kind(
        plan_of(roce_ecn=True, roce_pause_frames=False, roce_cable_length=30, roce_pfc_priority=4),
        "NicConfigurationTemplate",
    )
    assert template["spec"]["template"]["roceOptimized"]["qos"] == {
        "trust": "dscp",
        "pfc": "0,0,0,0,1,0,0,0",
        "ecn": {"enabled": True, "priority": 4},
        "pauseFrames": {"enabled": False},
        "cableLen": 30,
    }
