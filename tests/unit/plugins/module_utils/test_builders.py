"""The CR builders: golden files for every example inventory, Red Hat's field values for the
four configurations Red Hat documents, and each builder's own rules.

Regenerate the golden files after an intended change with
    GPUDIRECT_RDMA_UPDATE_GOLDEN=1 pytest tests/unit/plugins/plugin_utils/test_builders.py
and review the diff."""

from __future__ import annotations

import base64
import copy
import json
import os
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import (
    gpu,
    machine_config,
    nfd,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import (
    build_objects,
    component_objects,
    components,
    step,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps.base import labelled
from ansible_collections.gpudirect.rdma.plugins.module_utils.yaml_text import to_yaml
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.releases import (
    LATEST_GPU_OPERATOR,
)
from tests.unit.inventories import NAMES, inputs

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
UPDATE = os.environ.get("GPUDIRECT_RDMA_UPDATE_GOLDEN") == "1"


def objects_of(name: str, **overrides) -> list[dict]:
    return build_objects(build_plan({**inputs(name), **overrides}))


def find(objects, kind, name=None):
    found = [
        o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]
    assert len(found) == 1, f"expected one {kind} {name or ''}; found {len(found)}"
    return found[0]


def ipam(obj) -> dict:
    return json.loads(obj["spec"]["ipam"])


@pytest.mark.parametrize("name", NAMES)
def test_golden(name):
    text = "".join(f"---\n{to_yaml(obj)}" for obj in objects_of(name))
    path = GOLDEN / f"{name}.yaml"
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"no golden file {path}; run with GPUDIRECT_RDMA_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name} differs from {path}; regenerate if intended"


def test_every_inventory_has_a_golden_file_and_no_golden_file_is_orphaned():
    assert sorted(p.stem for p in GOLDEN.glob("*.yaml")) == NAMES
    assert len(NAMES) == 10


# -- Red Hat's values ------------------------------------------------------------------------
RED_HAT_DRIVER = {
    "image": "doca-driver",
    "repository": "nvcr.io/nvidia/mellanox",
    "startupProbe": {"initialDelaySeconds": 10, "periodSeconds": 20},
    "livenessProbe": {"initialDelaySeconds": 30, "periodSeconds": 30},
    "readinessProbe": {"initialDelaySeconds": 10, "periodSeconds": 30},
    "env": [
        {"name": "UNLOAD_STORAGE_MODULES", "value": "true"},
        {"name": "RESTORE_DRIVER_ON_POD_TERMINATION", "value": "true"},
        {"name": "CREATE_IFNAMES_UDEV", "value": "true"},
    ],
}
RED_HAT_HOSTDEV_IPAM = {
    "type": "whereabouts",
    "range": "192.168.3.225/28",
    "exclude": ["192.168.3.229/30", "192.168.3.236/32"],
}


def assert_contains(actual: dict, expected: dict, path: str = "") -> None:
    """Every field of expected is in actual with the same value (actual may have more)."""
    for key, value in expected.items():
        assert key in actual, f"{path}{key} missing"
        if isinstance(value, dict):
            assert_contains(actual[key], value, f"{path}{key}.")
        else:
            assert actual[key] == value, f"{path}{key}: {actual[key]!r} != {value!r}"


@pytest.mark.parametrize(
    "name",
    ["shared-device-roce", "shared-device-infiniband", "host-device-roce", "sriov-legacy-roce"],
)
def test_driver_carries_red_hats_values(name):
    policy = find(objects_of(name), "NicClusterPolicy", "nic-cluster-policy")
    assert_contains(policy["spec"]["ofedDriver"], RED_HAT_DRIVER)


def test_shared_device_roce_is_red_hats():
    objects = objects_of("shared-device-roce")
    policy = find(objects, "NicClusterPolicy")
    config = json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])
    assert config == {
        "configList": [
            {
                "resourceName": "rdma_shared_device_eth",
                "rdmaHcaMax": 63,
                "selectors": {"ifNames": ["ens8f0np0"]},
            }
        ]
    }
    assert policy["spec"]["rdmaSharedDevicePlugin"]["image"] == "k8s-rdma-shared-dev-plugin"
    assert "secondaryNetwork" not in policy["spec"]
    network = find(objects, "MacvlanNetwork", "rdmashared-net")
    assert {k: v for k, v in network["spec"].items() if k != "ipam"} == {
        "networkNamespace": "default",
        "master": "ens8f0np0",
        "mode": "bridge",
        "mtu": 1500,
    }
    assert ipam(network) == {
        "type": "whereabouts",
        "range": "192.168.2.0/24",
        "gateway": "192.168.2.1",
    }


def test_shared_device_infiniband_is_red_hats():
    objects = objects_of("shared-device-infiniband")
    policy = find(objects, "NicClusterPolicy")
    config = json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])
    assert config == {
        "configList": [
            {
                "resourceName": "rdma_shared_device_ib",
                "rdmaHcaMax": 63,
                "selectors": {"ifNames": ["ibs2f0"]},
            }
        ]
    }
    assert policy["spec"]["secondaryNetwork"]["ipoib"]["image"] == "ipoib-cni"
    network = find(objects, "IPoIBNetwork", "example-ipoibnetwork")
    assert {k: v for k, v in network["spec"].items() if k != "ipam"} == {
        "networkNamespace": "default",
        "master": "ibs2f0",
    }
    assert ipam(network) == {
        "type": "whereabouts",
        "range": "192.168.6.225/28",
        "exclude": ["192.168.6.229/30", "192.168.6.236/32"],
    }


def test_host_device_roce_is_red_hats_but_for_the_pf_it_names():
    objects = objects_of("host-device-roce")
    policy = find(objects, "NicClusterPolicy")
    # Red Hat's selector is vendor and isRdma only: every RDMA-capable NVIDIA PF of the node.
    # The pool takes the inventory's interface, and no port the node may need for itself.
    assert json.loads(policy["spec"]["sriovDevicePlugin"]["config"]) == {
        "resourceList": [
            {
                "resourcePrefix": "nvidia.com",
                "resourceName": "hostdev",
                "selectors": {"vendors": ["15b3"], "isRdma": True, "pfNames": ["ens8f0np0"]},
            }
        ]
    }
    assert set(policy["spec"]) == {"ofedDriver", "sriovDevicePlugin"}
    network = find(objects, "HostDeviceNetwork", "hostdev-net")
    assert {k: v for k, v in network["spec"].items() if k != "ipam"} == {
        "networkNamespace": "default",
        "resourceName": "hostdev",
    }
    assert ipam(network) == RED_HAT_HOSTDEV_IPAM


def test_sriov_legacy_roce_is_red_hats():
    objects = objects_of("sriov-legacy-roce")
    assert set(find(objects, "NicClusterPolicy")["spec"]) == {"ofedDriver"}
    policy = find(objects, "SriovNetworkNodePolicy", "sriov-legacy-policy")
    assert policy["metadata"]["namespace"] == "openshift-sriov-network-operator"
    assert_contains(
        policy["spec"],
        {
            "deviceType": "netdevice",
            "mtu": 1500,
            "numVfs": 8,
            "priority": 90,
            "isRdma": True,
            "resourceName": "sriovlegacy",
            "nicSelector": {"vendor": "15b3", "pfNames": ["ens8f0np0#0-7"]},
            "nodeSelector": {"feature.node.kubernetes.io/pci-15b3.present": "true"},
        },
    )
    assert policy["spec"]["linkType"] == "eth"
    network = find(objects, "SriovNetwork", "sriov-network")
    assert network["metadata"]["namespace"] == "openshift-sriov-network-operator"
    assert {k: v for k, v in network["spec"].items() if k != "ipam"} == {
        "vlan": 0,
        "networkNamespace": "default",
        "resourceName": "sriovlegacy",
    }
    assert ipam(network) == RED_HAT_HOSTDEV_IPAM


def test_common_objects_are_red_hats():
    objects = objects_of("shared-device-roce")
    instance = find(objects, "NodeFeatureDiscovery", "nfd-instance")
    assert instance["metadata"]["namespace"] == "openshift-nfd"
    assert_contains(
        instance["spec"],
        {
            "instance": "",
            "operand": {"servicePort": 12000},
            "prunerOnDelete": False,
            "topologyUpdater": False,
        },
    )
    assert yaml.safe_load(instance["spec"]["workerConfig"]["configData"]) == {
        "core": {"sleepInterval": "60s"},
        "sources": {
            "pci": {
                "deviceClassWhitelist": ["02", "03", "0200", "0207", "12"],
                "deviceLabelFields": ["vendor"],
            }
        },
    }
    config = find(objects, "SriovOperatorConfig", "default")
    assert_contains(
        config["spec"],
        {
            "enableInjector": True,
            "enableOperatorWebhook": True,
            "logLevel": 2,
            "configDaemonNodeSelector": {
                "network.nvidia.com/operator.mofed.wait": "false",
                "node-role.kubernetes.io/worker": "",
                "feature.node.kubernetes.io/pci-15b3.sriov.capable": "true",
            },
        },
    )
    namespace = find(objects, "Namespace", "openshift-sriov-network-operator")
    assert namespace["metadata"]["annotations"] == {"workload.openshift.io/allowed": "management"}
    assert (
        find(objects, "Namespace", "openshift-nfd")["metadata"]["labels"]["name"] == "openshift-nfd"
    )
    group = find(objects, "OperatorGroup", "sriov-network-operators")
    assert group["spec"] == {"targetNamespaces": ["openshift-sriov-network-operator"]}
    subscription = find(objects, "Subscription", "sriov-network-operator-subscription")
    assert_contains(
        subscription["spec"],
        {
            "name": "sriov-network-operator",
            "channel": "stable",
            "source": "redhat-operators",
            "sourceNamespace": "openshift-marketplace",
        },
    )


def test_machine_configs_are_red_hats():
    objects = objects_of("shared-device-roce")
    irdma = find(objects, "MachineConfig", "99-worker-blacklist-irdma")
    assert irdma["metadata"]["labels"]["machineconfiguration.openshift.io/role"] == "worker"
    assert irdma["spec"] == {"kernelArguments": ["module_blacklist=irdma"]}
    udev = find(objects, "MachineConfig", "99-machine-config-udev-network")
    (file,) = udev["spec"]["config"]["storage"]["files"]
    assert udev["spec"]["config"]["ignition"]["version"] == "3.2.0"
    assert (file["path"], file["mode"]) == ("/etc/udev/rules.d/70-persistent-net.rules", 420)
    assert base64.b64decode(file["contents"]["source"].split(",", 1)[1]).decode() == (
        'SUBSYSTEM=="net",ACTION=="add",ATTR{address}=="b8:3f:d2:3b:51:29",ATTR{type}=="1",'
        'NAME="ens8f0np0"\n'
    )
    crio = find(objects, "MachineConfig", "02-worker-container-runtime")
    (file,) = crio["spec"]["config"]["storage"]["files"]
    assert (file["path"], file["mode"], file["overwrite"]) == (
        "/etc/crio/crio.conf.d/10-custom",
        420,
        True,
    )
    assert base64.b64decode(file["contents"]["source"].split(",", 1)[1]).decode() == (
        '[crio.runtime]\ndefault_ulimits = [\n"memlock=-1:-1"\n]\n'
    )


# -- builder rules ---------------------------------------------------------------------------
def test_every_object_carries_the_ownership_labels():
    for name in NAMES:
        for obj in objects_of(name):
            labels = obj["metadata"]["labels"]
            assert labels["app.kubernetes.io/managed-by"] == "gpudirect.rdma"
            assert labels["gpudirect.rdma/component"] in components()


def test_machine_configs_are_opt_in():
    built = machine_config.machine_configs(build_plan(inputs("host-device-infiniband")))
    assert [labelled(obj, "machine-config") for obj in built] == [
        find(objects_of("host-device-infiniband"), "MachineConfig")
    ]
    plan = build_plan({**inputs("host-device-infiniband"), "crio_memlock": False})
    assert machine_config.machine_configs(plan) == []


def test_ipoib_persistent_names_use_type_32():
    address = ":".join(["80"] * 20)
    plan = build_plan(
        {
            **inputs("shared-device-infiniband"),
            "persistent_nic_names": [{"mac": address, "name": "ibs2f0"}],
        }
    )
    udev = find(build_objects(plan), "MachineConfig", "99-machine-config-udev-network")
    source = udev["spec"]["config"]["storage"]["files"][0]["contents"]["source"]
    assert 'ATTR{type}=="32",NAME="ibs2f0"' in base64.b64decode(source.split(",", 1)[1]).decode()


def test_multi_rail_gives_each_rail_a_resource_and_a_network():
    objects = objects_of("multi-rail-hgx")
    config = json.loads(
        find(objects, "NicClusterPolicy")["spec"]["rdmaSharedDevicePlugin"]["config"]
    )
    assert [(c["resourceName"], c["selectors"]["ifNames"]) for c in config["configList"]] == [
        (f"rdma_shared_device_eth_rail{i}", [f"ens{i + 1}f0np0"]) for i in range(8)
    ]
    networks = [o for o in objects if o["kind"] == "MacvlanNetwork"]
    assert [(n["metadata"]["name"], n["spec"]["master"], ipam(n)["range"]) for n in networks] == [
        (f"rdmashared-net-rail{i}", f"ens{i + 1}f0np0", f"10.100.{i}.0/24") for i in range(8)
    ]
    assert {n["spec"]["mtu"] for n in networks} == {9000}


def test_multi_rail_host_device_selects_each_pf_by_name():
    plan = build_plan(
        {
            **inputs("host-device-infiniband"),
            "interfaces": ["ibs1f0", "ibs2f0"],
            "ipam_gateway": None,
        }
    )
    policy = find(build_objects(plan), "NicClusterPolicy")
    config = json.loads(policy["spec"]["sriovDevicePlugin"]["config"])
    assert [r["selectors"] for r in config["resourceList"]] == [
        {"vendors": ["15b3"], "isRdma": True, "linkTypes": ["infiniband"], "pfNames": ["ibs1f0"]},
        {"vendors": ["15b3"], "isRdma": True, "linkTypes": ["infiniband"], "pfNames": ["ibs2f0"]},
    ]
    assert [r["resourceName"] for r in config["resourceList"]] == ["hostdev_rail0", "hostdev_rail1"]


def test_multi_rail_sriov_has_a_policy_and_network_per_rail():
    plan = build_plan(
        {
            **inputs("sriov-legacy-infiniband"),
            "interfaces": ["ibs1f0", "ibs2f0"],
            "ipam_exclude": None,
            "ipam_range": "192.168.6.0/24",
        }
    )
    objects = build_objects(plan)
    policies = [o for o in objects if o["kind"] == "SriovNetworkNodePolicy"]
    assert [
        (p["metadata"]["name"], p["spec"]["nicSelector"]["pfNames"], p["spec"]["linkType"])
        for p in policies
    ] == [
        ("sriov-legacy-policy-rail0", ["ibs1f0#0-7"], "ib"),
        ("sriov-legacy-policy-rail1", ["ibs2f0#0-7"], "ib"),
    ]
    networks = [o for o in objects if o["kind"] == "SriovIBNetwork"]
    assert [n["spec"]["resourceName"] for n in networks] == [
        "sriovlegacy_rail0",
        "sriovlegacy_rail1",
    ]
    assert all("vlan" not in n["spec"] and n["spec"]["linkState"] == "enable" for n in networks)


def test_nv_ipam_gives_an_ip_pool_and_the_nv_ipam_component():
    objects = objects_of("host-device-infiniband")
    pool = find(objects, "IPPool", "hostdev-net")
    assert pool["apiVersion"] == "nv-ipam.nvidia.com/v1alpha1"
    assert pool["metadata"]["namespace"] == "nvidia-network-operator"
    assert pool["spec"] == {
        "subnet": "192.168.7.0/24",
        "perNodeBlockSize": 16,
        "gateway": "192.168.7.1",
    }
    assert ipam(find(objects, "HostDeviceNetwork")) == {
        "type": "nv-ipam",
        "poolName": "hostdev-net",
    }
    assert find(objects, "NicClusterPolicy")["spec"]["nvIpam"]["enableWebhook"] is False


def test_nv_ipam_excludes_become_address_ranges():
    # A /28 has 14 host addresses: nv-ipam's per-node block must be smaller.
    plan = build_plan(
        {**inputs("host-device-roce"), "ipam_type": "nv-ipam", "ipam_per_node_block_size": 4}
    )
    pool = find(build_objects(plan), "IPPool")
    assert pool["spec"]["subnet"] == "192.168.3.224/28"
    assert pool["spec"]["exclusions"] == [
        {"startIP": "192.168.3.228", "endIP": "192.168.3.231"},
        {"startIP": "192.168.3.236", "endIP": "192.168.3.236"},
    ]


def test_cluster_policy_dmabuf_and_peermem():
    dmabuf = find(objects_of("shared-device-roce"), "ClusterPolicy", "gpu-cluster-policy")["spec"]
    assert dmabuf["driver"]["rdma"] == {"enabled": False}
    assert dmabuf["driver"]["kernelModuleType"] == "open"
    assert dmabuf["driver"]["useOpenKernelModules"] is True
    assert (dmabuf["gds"]["enabled"], dmabuf["gdrcopy"]["enabled"]) == (True, True)
    assert dmabuf["operator"]["use_ocp_driver_toolkit"] is True
    assert dmabuf["operator"]["defaultRuntime"] == "crio"
    # The rest is the CSV default ClusterPolicy, untouched.
    assert dmabuf["dcgmExporter"] == {
        "enabled": True,
        "config": {"name": ""},
        "serviceMonitor": {"enabled": True},
    }
    peermem = find(objects_of("shared-device-roce", gpu_memory="peermem"), "ClusterPolicy")["spec"]
    assert peermem["driver"]["rdma"] == {"enabled": True, "useHostMofed": False}
    assert peermem["driver"]["kernelModuleType"] == "auto"


def test_cluster_policy_is_built_on_the_installed_csvs_default():
    csv = {
        "metadata": {
            "annotations": {
                "alm-examples": json.dumps(
                    [
                        {
                            "kind": "ClusterPolicy",
                            "spec": {"driver": {"enabled": True}, "custom": {"x": 1}},
                        },
                    ]
                )
            }
        }
    }
    plan = build_plan(inputs("shared-device-roce"))
    before = copy.deepcopy(csv)
    policy = gpu.cluster_policy(plan, csv)
    assert policy["spec"]["custom"] == {"x": 1}
    assert policy["spec"]["driver"]["rdma"] == {"enabled": False}
    assert csv == before, "the CSV passed in is not changed"


def test_nfd_pins_an_operand_image_only_where_the_inventory_sets_one():
    """Unset, the operator runs its own image (its CSV's) and moves it on upgrades; render.yml,
    which reads no CSV, then writes what site.yml applies."""
    plan = build_plan(inputs("shared-device-roce"))
    assert nfd.node_feature_discovery(plan)["spec"]["operand"] == {"servicePort": 12000}
    assert not step("nfd").needs_csv
    explicit = build_plan({**inputs("shared-device-roce"), "nfd_operand_image": "mirror/nfd:1"})
    assert nfd.node_feature_discovery(explicit)["spec"]["operand"] == {
        "image": "mirror/nfd:1",
        "servicePort": 12000,
    }


def test_disconnected_registry_and_pull_secrets_reach_every_component():
    plan = build_plan(
        {
            **inputs("shared-device-infiniband"),
            "image_registry": "mirror.local:5000",
            "image_pull_secrets": ["mirror-pull"],
        }
    )
    spec = find(build_objects(plan), "NicClusterPolicy")["spec"]
    for component in (
        spec["ofedDriver"],
        spec["rdmaSharedDevicePlugin"],
        spec["secondaryNetwork"]["ipoib"],
    ):
        assert component["repository"] == "mirror.local:5000/nvidia/mellanox"
        assert component["imagePullSecrets"] == ["mirror-pull"]


def test_manual_approval_subscription_carries_starting_csv():
    plan = build_plan(
        {**inputs("shared-device-roce"), "operators": {"gpu_operator": {"approval": "Manual"}}}
    )
    subscription = find(build_objects(plan), "Subscription", "gpu-operator-certified")
    assert subscription["spec"] == {
        "channel": "v26.7",
        "installPlanApproval": "Manual",
        "name": "gpu-operator-certified",
        "source": "certified-operators",
        "sourceNamespace": "openshift-marketplace",
        "startingCSV": f"gpu-operator-certified.v{LATEST_GPU_OPERATOR}",
    }


def test_component_objects_of_another_method_are_empty_and_unknown_fails():
    plan = build_plan(inputs("shared-device-roce"))
    assert component_objects(plan, "sriov-legacy") == []
    with pytest.raises(ValueError, match="component: got 'gpu'"):
        component_objects(plan, "gpu")


def test_builders_do_not_change_the_plan():
    plan = build_plan(inputs("multi-rail-hgx"))
    snapshot = copy.deepcopy(plan)
    build_objects(plan)
    assert plan == snapshot


def test_the_driver_upgrade_budgets_reach_both_drivers_upgrade_policies():
    """The defaults are the CSV's own (1 node, 25%, 300 s); the inventory's values replace them,
    the rest of the ClusterPolicy's upgradePolicy stays as the CSV gives it."""
    default = find(objects_of("node-groups"), "ClusterPolicy")["spec"]["driver"]["upgradePolicy"]
    assert default["maxParallelUpgrades"] == 1 and default["maxUnavailable"] == "25%"
    objects = objects_of(
        "node-groups",
        driver_upgrade_max_parallel=0,
        driver_upgrade_max_unavailable="2",
        driver_upgrade_drain_timeout_seconds=900,
    )
    policy = find(objects, "ClusterPolicy")["spec"]["driver"]["upgradePolicy"]
    assert policy == {
        **default,
        "autoUpgrade": True,
        "maxParallelUpgrades": 0,
        "maxUnavailable": 2,
        "podDeletion": {**default["podDeletion"], "timeoutSeconds": 900},
        "drain": {**default["drain"], "timeoutSeconds": 900},
    }
    nic_policies = [o for o in objects if o["kind"] == "NicNodePolicy"]
    assert len(nic_policies) == 2
    for nic_policy in nic_policies:
        doca = nic_policy["spec"]["ofedDriver"]["upgradePolicy"]
        assert doca["maxParallelUpgrades"] == 0 and doca["drain"]["timeoutSeconds"] == 900
