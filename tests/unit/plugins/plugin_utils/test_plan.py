"""The plan: defaults, normalisation, multi-rail, and every validation error, each naming the
variable, the value and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpudirect.rdma.plugins.modules import plan as plan_doc
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import (
    PlanError,
    build_plan,
    check_inventory,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.inputs import DEFAULTS
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.settings import (
    check_settings,
    unknown_variables,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.releases import (
    GPU_OPERATOR_RELEASES,
    LATEST_GPU_OPERATOR,
    LATEST_NETWORK_OPERATOR,
    NETWORK_OPERATOR_RELEASES,
)
from tests.unit.inventories import mixed_groups

VERIFY_DEFAULTS = yaml.safe_load(
    (Path(__file__).resolve().parents[4] / "roles" / "verify" / "defaults" / "main.yml").read_text()
)

BASE = {
    "method": "shared_device",
    "fabric": "roce",
    "interfaces": ["ens8f0np0"],
    "ipam_range": "192.168.2.0/24",
    "ipam_gateway": "192.168.2.1",
}


def plan(**overrides):
    return build_plan({**BASE, **overrides})


def test_defaults_follow_red_hat():
    result = plan()
    (rail,) = result["groups"][0]["rails"]
    assert rail == {
        "index": 0,
        "interface": "ens8f0np0",
        "network_name": "rdmashared-net",
        "resource_name": "rdma_shared_device_eth",
        "node_resource": "rdma/rdma_shared_device_eth",
        "ipam": {
            "range": "192.168.2.0/24",
            "network": "192.168.2.0/24",
            "gateway": "192.168.2.1",
            "exclude": [],
        },
    }
    assert result["groups"][0]["link_type"] == "eth"
    assert result["groups"][0]["mtu"] == 1500
    assert result["network_namespace"] == "default"
    assert result["gpu"]["memory"] == "dmabuf"
    assert result["operators"]["nfd"] == {
        "namespace": "openshift-nfd",
        "package": "nfd",
        "operator_group": "openshift-nfd",
        "subscription": "nfd",
        "channel": "stable",
        "source": "redhat-operators",
        "source_namespace": "openshift-marketplace",
        "approval": "Automatic",
        "starting_csv": None,
        "pinned_csv": None,
        "pinned_by": None,
        "catalog": None,
    }
    assert result["operators"]["gpu_operator"]["channel"] == "v26.7"
    # The NVIDIA operators' releases pin their CSVs whatever the approval.
    gpu = result["operators"]["gpu_operator"]
    assert (gpu["starting_csv"], gpu["pinned_csv"], gpu["pinned_by"]) == (
        None,
        "gpu-operator-certified.v26.7.2",
        "gpudirect_rdma_gpu_operator_release",
    )
    # What each OpenShift minor's certified catalog holds in its channel, newest first.
    assert gpu["catalog"]["4.20"][0] == "gpu-operator-certified.v26.7.2"
    assert result["operators"]["network_operator"]["catalog"]["4.22"] == [
        "nvidia-network-operator.v26.7.1",
        "nvidia-network-operator.v26.7.0-1",
        "nvidia-network-operator.v26.7.0",
    ]
    assert result["images"]["ofedDriver"]["version"] == "doca3.5.0-26.07-0.7.7.0-1"


@pytest.mark.parametrize(
    ("method", "fabric", "network", "resource"),
    [
        ("shared_device", "roce", "rdmashared-net", "rdma_shared_device_eth"),
        ("shared_device", "infiniband", "example-ipoibnetwork", "rdma_shared_device_ib"),
        ("host_device", "roce", "hostdev-net", "hostdev"),
        ("host_device", "infiniband", "hostdev-net", "hostdev"),
        ("sriov_legacy", "roce", "sriov-network", "sriovlegacy"),
        ("sriov_legacy", "infiniband", "sriov-ib-network", "sriovlegacy"),
    ],
)
def test_names_by_method_and_fabric(method, fabric, network, resource):
    (rail,) = plan(method=method, fabric=fabric)["groups"][0]["rails"]
    assert (rail["network_name"], rail["resource_name"]) == (network, resource)


def test_multi_rail_names_and_split_range():
    result = build_plan(
        {
            **BASE,
            "ipam_gateway": None,
            "interfaces": [f"ens{i}f0np0" for i in range(1, 9)],
            "ipam_range": "10.100.0.0/21",
        }
    )
    assert [r["network_name"] for r in result["groups"][0]["rails"]] == [
        f"rdmashared-net-rail{i}" for i in range(8)
    ]
    assert [r["resource_name"] for r in result["groups"][0]["rails"]] == [
        f"rdma_shared_device_eth_rail{i}" for i in range(8)
    ]
    assert [r["ipam"]["range"] for r in result["groups"][0]["rails"]] == [
        f"10.100.{i}.0/24" for i in range(8)
    ]


def test_three_rails_split_into_quarters():
    result = build_plan(
        {**BASE, "ipam_gateway": None, "interfaces": ["a", "b", "c"], "ipam_range": "10.0.0.0/24"}
    )
    assert [r["ipam"]["range"] for r in result["groups"][0]["rails"]] == [
        "10.0.0.0/26",
        "10.0.0.64/26",
        "10.0.0.128/26",
    ]


def test_per_rail_settings_win():
    result = build_plan(
        {
            **BASE,
            "ipam_range": None,
            "ipam_gateway": None,
            "interfaces": [
                {
                    "name": "ens1f0np0",
                    "ipam_range": "10.1.0.0/24",
                    "ipam_gateway": "10.1.0.1",
                    "network_name": "rail-a",
                    "resource_name": "rail_a",
                },
                {"name": "ens2f0np0", "ipam_range": "10.2.0.0/24", "ipam_exclude": ["10.2.0.0/30"]},
            ],
        }
    )
    first, second = result["groups"][0]["rails"]
    assert (first["network_name"], first["resource_name"]) == ("rail-a", "rail_a")
    assert first["ipam"]["gateway"] == "10.1.0.1"
    assert second["network_name"] == "rdmashared-net-rail1"
    assert second["ipam"]["exclude"] == ["10.2.0.0/30"]


def test_a_single_interface_string_is_one_rail():
    assert len(plan(interfaces="ens8f0np0")["groups"][0]["rails"]) == 1


def test_manual_approval_defaults_starting_csv_to_the_release():
    result = plan(operators={"gpu_operator": {"approval": "Manual"}}, gpu_operator_release="26.3.3")
    gpu = result["operators"]["gpu_operator"]
    assert (gpu["approval"], gpu["starting_csv"], gpu["channel"]) == (
        "Manual",
        "gpu-operator-certified.v26.3.3",
        "v26.3",
    )


def test_catalog_source_applies_to_all_operators():
    result = plan(catalog_source="my-mirror")
    assert {o["source"] for o in result["operators"].values()} == {"my-mirror"}


def test_image_registry_keeps_the_path():
    result = plan(image_registry="mirror.local:5000")
    assert result["images"]["ofedDriver"]["repository"] == "mirror.local:5000/nvidia/mellanox"


def test_persistent_names_know_ethernet_and_ipoib():
    ipoib = ":".join(["a0"] * 20)
    result = plan(
        persistent_nic_names=[
            {"mac": "B8:3F:D2:3B:51:29", "name": "ens8f0np0"},
            {"mac": ipoib, "name": "ibs2f0"},
        ]
    )
    assert result["machine_configs"]["persistent_nic_names"] == [
        {"mac": "b8:3f:d2:3b:51:29", "name": "ens8f0np0", "type": 1},
        {"mac": ipoib, "name": "ibs2f0", "type": 32},
    ]


def test_one_persistent_name_for_the_nics_of_many_nodes():
    """Every node's NIC of a rail gets the rail's name: one name, one MAC per node."""
    names = [{"mac": f"b8:3f:d2:3b:51:{node:02x}", "name": "ens8f0np0"} for node in range(3)]
    rules = plan(persistent_nic_names=names)["machine_configs"]["persistent_nic_names"]
    assert [rule["name"] for rule in rules] == ["ens8f0np0"] * 3
    assert len({rule["mac"] for rule in rules}) == 3


def test_strings_from_surveys_are_accepted_for_numbers_and_booleans():
    result = plan(mtu="9000", crio_memlock="true", network_operator_release=26.4 and "26.4.0")
    assert result["groups"][0]["mtu"] == 9000
    assert result["machine_configs"]["crio_memlock"] is True


@pytest.mark.parametrize(
    "answer",
    [
        "ens1f0np0,ens2f0np0",
        "ens1f0np0, ens2f0np0",
        " ens1f0np0  ens2f0np0\n",
        "ens1f0np0,,ens2f0np0,",
    ],
)
def test_interfaces_from_a_survey_string_are_split_on_commas_and_white_space(answer):
    result = plan(interfaces=answer, ipam_gateway="")
    assert [rail["interface"] for rail in result["groups"][0]["rails"]] == [
        "ens1f0np0",
        "ens2f0np0",
    ]
    assert [rail["network_name"] for rail in result["groups"][0]["rails"]] == [
        "rdmashared-net-rail0",
        "rdmashared-net-rail1",
    ]


def test_list_inputs_from_survey_strings_and_blank_answers():
    result = plan(ipam_exclude="192.168.2.0/30, 192.168.2.128/25", image_pull_secrets="a b")
    assert result["groups"][0]["rails"][0]["ipam"]["exclude"] == [
        "192.168.2.0/30",
        "192.168.2.128/25",
    ]
    assert result["image_pull_secrets"] == ["a", "b"]
    # An optional survey question left blank arrives as '' (or null, or not at all).
    blank = plan(ipam_gateway="", ipam_exclude="", image_pull_secrets="")
    assert (
        blank["groups"][0]["rails"][0]["ipam"]
        == plan(ipam_gateway=None)["groups"][0]["rails"][0]["ipam"]
    )
    assert blank["image_pull_secrets"] == []


def test_build_plan_does_not_change_its_input():
    given = {**BASE, "interfaces": ["ens8f0np0"], "operators": {"nfd": {"channel": "stable"}}}
    snapshot = repr(given)
    build_plan(given)
    assert repr(given) == snapshot


IB_SRIOV = {"method": "sriov_legacy", "fabric": "infiniband", "interfaces": ["ibs2f0"]}

# (overrides, variable named in the error, a piece of what is allowed)
BAD_INPUTS = [
    ({"method": None}, "gpudirect_rdma_method", "one of shared_device, host_device, sriov_legacy"),
    (
        {"method": "rdma"},
        "gpudirect_rdma_method",
        "one of shared_device, host_device, sriov_legacy",
    ),
    ({"fabric": "ethernet"}, "gpudirect_rdma_fabric", "one of roce, infiniband"),
    ({"fabric": ""}, "gpudirect_rdma_fabric", "one of roce, infiniband"),
    ({"interfaces": []}, "gpudirect_rdma_interfaces", "a non-empty list"),
    ({"interfaces": 5}, "gpudirect_rdma_interfaces", "a non-empty list"),
    ({"interfaces": " , "}, "gpudirect_rdma_interfaces", "or 'ens8f0np0,ens8f1np0'"),
    ({"interfaces": "ens1,ens1"}, "gpudirect_rdma_interfaces[1].name", "not already used"),
    ({"interfaces": "ens1:x"}, "gpudirect_rdma_interfaces[0].name", "no '/', ':'"),
    ({"ipam_exclude": "10.0.0.0/30"}, "gpudirect_rdma_ipam_exclude[0]", "a CIDR inside"),
    ({"interfaces": ["ens 8"]}, "gpudirect_rdma_interfaces[0].name", "a Linux interface name"),
    ({"interfaces": ["ens8f0np0/1"]}, "gpudirect_rdma_interfaces[0].name", "no '/'"),
    ({"interfaces": ["a" * 16]}, "gpudirect_rdma_interfaces[0].name", "1 to 15 characters"),
    ({"interfaces": [".."]}, "gpudirect_rdma_interfaces[0].name", "not '.' or '..'"),
    ({"interfaces": ["eth:0"]}, "gpudirect_rdma_interfaces[0].name", "no '/', ':'"),
    ({"interfaces": ["ens1", "ens1"]}, "gpudirect_rdma_interfaces[1].name", "not already used"),
    ({"interfaces": [{"nam": "ens1"}]}, "gpudirect_rdma_interfaces[0].nam", "allowed: name"),
    ({"interfaces": [["ens1"]]}, "gpudirect_rdma_interfaces[0]", "an interface name or a mapping"),
    ({"interfaces": ["e"] * 33}, "gpudirect_rdma_interfaces", "at most 32 rails"),
    ({"ipam_range": None}, "gpudirect_rdma_ipam_range", "the IP range pods get addresses from"),
    ({"ipam_range": "192.168.2.0"}, "gpudirect_rdma_ipam_range", "CIDR notation"),
    ({"ipam_range": "192.168.300.0/24"}, "gpudirect_rdma_ipam_range", "CIDR notation"),
    ({"ipam_range": "192.168.2.0/33"}, "gpudirect_rdma_ipam_range", "CIDR notation"),
    (
        {"ipam_gateway": "192.168.3.1"},
        "gpudirect_rdma_ipam_gateway",
        "an address inside 192.168.2.0/24",
    ),
    ({"ipam_gateway": "gateway"}, "gpudirect_rdma_ipam_gateway", "an IP address"),
    ({"ipam_gateway": "fd00::1"}, "gpudirect_rdma_ipam_gateway", "an address inside"),
    (
        {"ipam_exclude": ["10.0.0.0/30"]},
        "gpudirect_rdma_ipam_exclude[0]",
        "a CIDR inside 192.168.2.0/24",
    ),
    ({"ipam_exclude": ["192.168.2.5"]}, "gpudirect_rdma_ipam_exclude[0]", "CIDR notation"),
    ({"ipam_exclude": {"a": 1}}, "gpudirect_rdma_ipam_exclude", "a list"),
    ({"ipam_type": "dhcp"}, "gpudirect_rdma_ipam_type", "one of whereabouts, nv-ipam"),
    ({"ipam_per_node_block_size": 0}, "gpudirect_rdma_ipam_per_node_block_size", "from 1 to 65536"),
    ({"interfaces": ["a", "b"]}, "gpudirect_rdma_ipam_gateway", "give each entry"),
    (
        {"interfaces": ["a", "b"], "ipam_gateway": None, "ipam_range": "10.0.0.0/31"},
        "gpudirect_rdma_ipam_range",
        "large enough to split into 2",
    ),
    (
        {"interfaces": [{"name": "a", "ipam_gateway": "10.0.0.1"}]},
        "gpudirect_rdma_interfaces[0].ipam_gateway",
        "an ipam_range on",
    ),
    (
        {"interfaces": [{"name": "a", "ipam_range": "10.0.0.0/24", "ipam_gateway": "10.0.1.1"}]},
        "gpudirect_rdma_interfaces[0].ipam_gateway",
        "an address inside 10.0.0.0/24",
    ),
    (
        {
            "interfaces": [{"name": "a", "network_name": "x"}, {"name": "b", "network_name": "x"}],
            "ipam_gateway": None,
        },
        "gpudirect_rdma_interfaces[0].network_name",
        "used by one rail only",
    ),
    ({"network_name": "RDMA_net"}, "gpudirect_rdma_network_name", "a DNS-1123 name"),
    ({"network_namespace": "Default"}, "gpudirect_rdma_network_namespace", "a DNS-1123 label"),
    (
        {"shared_device_resource_name": "rdma/shared"},
        "gpudirect_rdma_shared_device_resource_name",
        "a resource name",
    ),
    ({"mtu": 100}, "gpudirect_rdma_mtu", "from 576 to 9216 on roce"),
    ({"mtu": 9500}, "gpudirect_rdma_mtu", "from 576 to 9216 on roce"),
    ({"mtu": "jumbo"}, "gpudirect_rdma_mtu", "a whole number"),
    ({"mtu": True}, "gpudirect_rdma_mtu", "a whole number"),
    ({"rdma_hca_max": 0}, "gpudirect_rdma_rdma_hca_max", "from 1 to 1000"),
    (
        {**IB_SRIOV, "sriov_num_vfs": 17},
        "gpudirect_rdma_sriov_num_vfs",
        "at most 16 VFs per PF on InfiniBand",
    ),
    ({"sriov_num_vfs": 0}, "gpudirect_rdma_sriov_num_vfs", "from 1 to 127"),
    ({"sriov_num_vfs": 128}, "gpudirect_rdma_sriov_num_vfs", "from 1 to 127"),
    ({"sriov_priority": 100}, "gpudirect_rdma_sriov_priority", "from 0 to 99"),
    ({"sriov_policy_name": "Policy"}, "gpudirect_rdma_sriov_policy_name", "a DNS-1123 name"),
    ({**IB_SRIOV, "vlan": 100}, "gpudirect_rdma_vlan", "sriov_legacy over roce (SriovNetwork"),
    ({**IB_SRIOV, "vlan": 0}, "gpudirect_rdma_vlan", "sriov_legacy over roce (SriovNetwork"),
    ({"vlan": 10}, "gpudirect_rdma_vlan", "only a node group with method sriov_legacy over roce"),
    ({"method": "sriov_legacy", "vlan": 4095}, "gpudirect_rdma_vlan", "from 0 to 4094"),
    ({"ib_link_state": "enable"}, "gpudirect_rdma_ib_link_state", "sriov_legacy over infiniband"),
    (
        {**IB_SRIOV, "ib_link_state": "up"},
        "gpudirect_rdma_ib_link_state",
        "one of enable, disable, auto",
    ),
    ({"node_selector": {}}, "gpudirect_rdma_node_selector", "at least one label"),
    ({"node_selector": {"gpu": True}}, "gpudirect_rdma_node_selector[gpu]", "a label value string"),
    ({"node_selector": ["gpu"]}, "gpudirect_rdma_node_selector", "a mapping"),
    ({"gpu_memory": "gds"}, "gpudirect_rdma_gpu_memory", "one of dmabuf, peermem"),
    ({"gpu_gds": "maybe"}, "gpudirect_rdma_gpu_gds", "true or false"),
    ({"operators": {"gpu": {}}}, "gpudirect_rdma_operators.gpu", "no such operator"),
    (
        {"operators": {"nfd": {"chanel": "stable"}}},
        "gpudirect_rdma_operators.nfd.chanel",
        "no such key",
    ),
    (
        {"operators": {"nfd": {"approval": "manual"}}},
        "gpudirect_rdma_operators.nfd.approval",
        "one of Automatic, Manual",
    ),
    (
        {"operators": {"nfd": {"approval": "Manual"}}},
        "gpudirect_rdma_operators.nfd.starting_csv",
        "when approval is Manual",
    ),
    (
        {"operators": {"nfd": {"namespace": "NFD"}}},
        "gpudirect_rdma_operators.nfd.namespace",
        "a DNS-1123 label",
    ),
    ({"operators": "nfd"}, "gpudirect_rdma_operators", "a mapping"),
    ({"catalog_source": "My Mirror"}, "gpudirect_rdma_catalog_source", "a DNS-1123 name"),
    ({"network_operator_release": "24.10"}, "gpudirect_rdma_network_operator_release", "26.4.1"),
    ({"gpu_operator_release": "24.9.2"}, "gpudirect_rdma_gpu_operator_release", "26.7.0"),
    ({"image_registry": "https://mirror"}, "gpudirect_rdma_image_registry", "a registry host"),
    (
        {"image_pull_secrets": ["My_Secret"]},
        "gpudirect_rdma_image_pull_secrets[0]",
        "a DNS-1123 name",
    ),
    ({"openshift_version": "4"}, "gpudirect_rdma_openshift_version", "such as 4.20"),
    ({"machine_config_role": "Worker"}, "gpudirect_rdma_machine_config_role", "a DNS-1123 label"),
    ({"blacklist_irdma": "sometimes"}, "gpudirect_rdma_blacklist_irdma", "true or false"),
    (
        {"persistent_nic_names": [{"mac": "b8:3f:d2:3b:51", "name": "ens8f0np0"}]},
        "gpudirect_rdma_persistent_nic_names[0].mac",
        "a MAC address",
    ),
    (
        {"persistent_nic_names": [{"mac": "b8-3f-d2-3b-51-29", "name": "ens8f0np0"}]},
        "gpudirect_rdma_persistent_nic_names[0].mac",
        "a MAC address",
    ),
    (
        {"persistent_nic_names": [{"mac": "b8:3f:d2:3b:51:29", "name": "bad name"}]},
        "gpudirect_rdma_persistent_nic_names[0].name",
        "a Linux interface name",
    ),
    (
        {"persistent_nic_names": [{"mac": "b8:3f:d2:3b:51:29"}]},
        "gpudirect_rdma_persistent_nic_names[0]",
        "exactly 'mac' and 'name'",
    ),
    (
        {
            "persistent_nic_names": [
                {"mac": "b8:3f:d2:3b:51:29", "name": "a"},
                {"mac": "B8:3F:D2:3B:51:29", "name": "b"},
            ]
        },
        "gpudirect_rdma_persistent_nic_names[1].mac",
        "not already in",
    ),
    (
        {"persistent_nic_names": [{"mac": "b8:3f:d2:3b:51:29", "name": "a"}] * 10001},
        "gpudirect_rdma_persistent_nic_names",
        "at most 10000",
    ),
    (
        {"ipam_rnage": "10.0.0.0/24"},
        "gpudirect_rdma_ipam_rnage",
        "did you mean gpudirect_rdma_ipam_range?",
    ),
]


@pytest.mark.parametrize(
    ("overrides", "variable", "allowed"),
    BAD_INPUTS,
    ids=[f"{i}-{case[1]}" for i, case in enumerate(BAD_INPUTS)],
)
def test_bad_input_names_variable_value_and_what_is_allowed(overrides, variable, allowed):
    with pytest.raises(PlanError) as raised:
        build_plan({**BASE, **overrides})
    assert raised.value.variable == variable
    assert allowed in raised.value.expected
    message = str(raised.value)
    assert message.startswith(f"{variable}: got ")
    assert "; expected " in message


def test_the_documented_options_are_the_inputs_with_their_defaults():
    """DOCUMENTATION declares them: the inputs are its options (scope is the task's own), their
    defaults are its defaults, and a release is one the release data knows, the latest its
    default."""
    options = yaml.safe_load(plan_doc.DOCUMENTATION)["options"]
    assert set(options) == {*DEFAULTS, "scope"}
    assert {name: option.get("default") for name, option in options.items()} == {
        **DEFAULTS,
        "scope": "all",
    }
    for name, releases in (
        ("network_operator_release", NETWORK_OPERATOR_RELEASES),
        ("gpu_operator_release", GPU_OPERATOR_RELEASES),
    ):
        assert options[name]["choices"] == list(releases), name
    assert DEFAULTS["network_operator_release"] == LATEST_NETWORK_OPERATOR
    assert DEFAULTS["gpu_operator_release"] == LATEST_GPU_OPERATOR
    # Every input left out of a plan gets its documented default.
    result = plan()
    assert (result["groups"][0]["mtu"], result["groups"][0]["sriov"]["num_vfs"]) == (
        options["mtu"]["default"],
        8,
    )


def test_misspelt_variables_are_found():
    assert unknown_variables(
        ["gpudirect_rdma_ipam_rnage", "gpudirect_rdma_method", "gpudirect_rdma_render_dir", "x"]
    ) == [("gpudirect_rdma_ipam_rnage", "gpudirect_rdma_ipam_range")]
    # Any other name with the collection's prefix is refused too, with no suggestion.
    assert unknown_variables(["gpudirect_rdma_telemetry", "verify_result"]) == [
        ("gpudirect_rdma_telemetry", None)
    ]
    assert unknown_variables(["gpudirect_rdma_telemetry"], scope="settings") == []


def test_old_and_misspelt_names_of_settings_name_the_setting():
    names = [
        "gpudirect_rdma_verify_min_gbps",
        "gpudirect_rdma_diagnostics_failure",
        "uninstall_timout",
        "verify_min_gbps",
        "gpudirect_rdma_take_over",
        "gpudirect_rdma_plan",
        "verify_plan",
        "diagnostics_result",
    ]
    assert unknown_variables(names) == [
        ("gpudirect_rdma_verify_min_gbps", "verify_min_gbps"),
        ("gpudirect_rdma_diagnostics_failure", "diagnostics_failure"),
        ("uninstall_timout", "uninstall_timeout"),
    ]
    # uninstall.yml, which needs no inventory, leaves a misspelt input of the plan alone.
    assert unknown_variables(["gpudirect_rdma_ipam_rnage"], scope="settings") == []
    with pytest.raises(PlanError, match="uninstall_timeout, the name the uninstall role reads"):
        check_inventory({"gpudirect_rdma_uninstall_timeout": 90}, scope="settings")


def test_settings_take_survey_strings_and_keep_their_defaults():
    settings = check_settings(
        {"verify_min_gbps": "150.5", "uninstall_namespaces": "true", "verify_nodes": "a,b"}
    )
    assert settings["verify_min_gbps"] == 150.5
    assert settings["uninstall_namespaces"] is True
    assert settings["verify_nodes"] == ["a", "b"]
    assert (settings["uninstall_timeout"], settings["gpudirect_rdma_take_over"]) == (1800, False)
    assert settings["verify_image"] == VERIFY_DEFAULTS["verify_image"]


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("verify_min_gbps", 3200.5, "a number of Gb/s from 0 to 3200"),
        ("verify_port", 70000, "a whole number from 1 to 65535"),
        ("verify_duration", "30s", "a whole number of 1 or more"),
        ("verify_keep_pods", "sometimes", "true or false"),
        ("verify_image", "quay.io/tools 1", "without white space"),
        ("verify_perftest", "", "a non-empty string"),
        ("verify_report_dir", 5, "a folder path"),
        ("diagnostics_namespaces", ["Kube_System"], "a DNS-1123 label"),
        ("diagnostics_failure", "site failed", "a mapping"),
        ("gpudirect_rdma_take_over", "maybe", "true or false"),
        ("gpudirect_rdma_render_dir", "", "a folder path"),
    ],
)
def test_every_setting_is_checked_by_its_declared_type_and_range(name, value, expected):
    with pytest.raises(PlanError) as raised:
        check_settings({name: value})
    assert raised.value.variable.partition("[")[0] == name
    assert expected in str(raised.value)


def test_check_inventory_plans_and_checks_settings_and_knows_its_scopes():
    variables = {f"gpudirect_rdma_{k}": v for k, v in BASE.items()}
    checked = check_inventory({**variables, "uninstall_timeout": "90"})
    assert checked["plan"]["groups"][0]["method"] == "shared_device"
    assert checked["settings"]["uninstall_timeout"] == 90
    # Task options win over the inventory.
    assert check_inventory(variables, overrides={"mtu": 9000})["plan"]["groups"][0]["mtu"] == 9000
    with pytest.raises(PlanError, match="scope: got 'plan'"):
        check_inventory(variables, scope="plan")


SECRET = "s3cr3t-Pa55:w0rd"  # noqa: S105 - a test value whose leaks the tests look for


def test_registry_credentials_give_a_pull_secret_and_stay_out_of_the_plan():
    result = plan(
        image_registry="mirror.local:5000/nvidia",
        image_pull_secrets=["mirror-pull"],
        image_registry_username="puller",
        image_registry_password=SECRET,
    )
    assert result["image_registry_secret"] == {
        "name": "gpudirect-rdma-image-registry",
        "namespace": "nvidia-network-operator",
        "registry": "mirror.local:5000",
    }
    assert result["image_pull_secrets"] == ["mirror-pull", "gpudirect-rdma-image-registry"]
    assert SECRET not in repr(result) and "puller" not in repr(result)
    assert plan()["image_registry_secret"] is None


@pytest.mark.parametrize(
    ("given", "variable", "expected"),
    [
        (
            {"image_registry_username": "puller"},
            "gpudirect_rdma_image_registry_password",
            "got nothing",
        ),
        ({"image_registry_password": SECRET}, "gpudirect_rdma_image_registry_username", "got None"),
        (
            {"image_registry_username": "a:b", "image_registry_password": SECRET},
            "gpudirect_rdma_image_registry_username",
            "without ':'",
        ),
        (
            {"image_registry_username": "puller", "image_registry_password": 12345},
            "gpudirect_rdma_image_registry_password",
            "got a value of type int",
        ),
        (
            {"image_registry_username": "puller", "image_registry_password": SECRET},
            "gpudirect_rdma_image_registry",
            "the mirror registry the credentials",
        ),
    ],
)
def test_bad_registry_credentials_name_the_variable_and_never_the_password(
    given, variable, expected
):
    inputs = {"image_registry": "mirror.local:5000", **given}
    if variable == "gpudirect_rdma_image_registry":
        inputs.pop("image_registry")
    with pytest.raises(PlanError) as raised:
        plan(**inputs)
    assert raised.value.variable == variable
    assert expected in str(raised.value)
    assert SECRET not in str(raised.value) and "12345" not in str(raised.value)
    assert SECRET not in repr(raised.value.value)


def _groups_on_one_range(ipam_type: str = "whereabouts", keep: tuple[str, ...] = ()) -> dict:
    """The node-groups example with its groups' own ranges left out (but those named in keep),
    and one global range, 10.200.0.0/16."""
    from tests.unit.inventories import inputs

    given = inputs("node-groups")
    given["node_groups"] = [
        g if g["name"] in keep else {k: v for k, v in g.items() if k != "ipam_range"}
        for g in given["node_groups"]
    ]
    return {**given, "ipam_range": "10.200.0.0/16", "ipam_type": ipam_type}


@pytest.mark.parametrize("ipam_type", ["whereabouts", "nv-ipam"])
def test_one_global_range_is_split_once_over_every_groups_rails(ipam_type):
    """Four a100 rails and eight h100 rails take 12 of 16 equal parts of the one range, group
    by group, rail by rail: none overlaps (with nv-ipam, where each network has a pool of its
    own, that was refused before)."""
    import ipaddress

    plan = build_plan(_groups_on_one_range(ipam_type))
    ranges = [(g["name"], r["ipam"]["range"]) for g in plan["groups"] for r in g["rails"]]
    assert ranges == [
        *[("a100", f"10.200.{16 * i}.0/20") for i in range(4)],
        *[("h100", f"10.200.{16 * i}.0/20") for i in range(4, 12)],
    ]
    networks = [ipaddress.ip_network(r) for _g, r in ranges]
    assert not any(a.overlaps(b) for i, a in enumerate(networks) for b in networks[i + 1 :])
    part = plan["groups"][1]["rails"][0]["ipam"]["part_of"]
    assert part == {"variable": "gpudirect_rdma_ipam_range", "range": "10.200.0.0/16"}
    assert build_plan(_groups_on_one_range(ipam_type)) == plan, "the split is deterministic"


def test_a_groups_own_range_wins_and_the_others_share_the_global_one():
    plan = build_plan(_groups_on_one_range(keep=("a100",)))
    a100, h100 = plan["groups"]
    assert [r["ipam"]["range"] for r in a100["rails"]] == [f"10.110.{i}.0/24" for i in range(4)], (
        "its own 10.110.0.0/22, split over its four rails as before"
    )
    assert [r["ipam"]["range"] for r in h100["rails"]] == [
        f"10.200.{32 * i}.0/19" for i in range(8)
    ], "the global range, split over the only eight rails that take it"


def test_a_global_setting_one_group_uses_is_taken_and_the_other_group_ignores_it():
    plan = build_plan({**mixed_groups(), "vlan": 10, "sriov_num_vfs": 4, "rdma_hca_max": 32})
    a100, h100 = plan["groups"]
    assert (a100["sriov"]["vlan"], a100["sriov"]["num_vfs"]) == (10, 4)
    assert (h100["method"], h100["sriov"]["vlan"], h100["shared_device"]["rdma_hca_max"]) == (
        "shared_device",
        None,
        32,
    )


@pytest.mark.parametrize(
    ("given", "variable", "expected"),
    [
        # Set in a group that does not use it: that group's key is named.
        (
            {"node_groups_1": {"sriov_num_vfs": 4}},
            "gpudirect_rdma_node_groups[1].sriov_num_vfs",
            "only a node group with method sriov_legacy uses it, and group h100 is not one",
        ),
        # Global, and every group that takes it does not use it (the sriov group has its own).
        (
            {"first": {"sriov_num_vfs": 2}, "sriov_num_vfs": 4},
            "gpudirect_rdma_sriov_num_vfs",
            "no node group that takes this variable (sets no value of its own) is one",
        ),
        # ib_link_state: the InfiniBand group is shared device, the SR-IOV group RoCE.
        (
            {"ib_link_state": "enable"},
            "gpudirect_rdma_ib_link_state",
            "only a node group with method sriov_legacy over infiniband",
        ),
        # The RoCE QoS with the NIC settings on, where no group runs RoCE.
        (
            {
                "fabric": "infiniband",
                "node_groups_1": {},
                "first": {"fabric": "infiniband", "method": "shared_device"},
                "nic_configuration": True,
                "roce_pfc_priority": 4,
            },
            "gpudirect_rdma_roce_pfc_priority",
            "on a RoCE node group, or gpudirect_rdma_monitoring: true on one (its PFC pause alert)",
        ),
    ],
)
def test_a_setting_no_group_would_use_is_refused_naming_what_would(given, variable, expected):
    given = dict(given)
    inventory = mixed_groups(**given.pop("first", {}))
    if "node_groups_1" in given:
        inventory["node_groups"][1] = {**inventory["node_groups"][1], **given.pop("node_groups_1")}
    with pytest.raises(PlanError) as raised:
        build_plan({**inventory, **given})
    assert raised.value.variable == variable
    assert expected in str(raised.value), str(raised.value)


def test_a_setting_at_its_default_is_never_refused_as_unused():
    """An AAP survey sends every answer, the defaults included, and as strings."""
    from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.unused import USES

    as_a_survey_writes = {
        key: "" if DEFAULTS[key] is None else str(DEFAULTS[key]).lower()
        for key in USES
        if not isinstance(DEFAULTS[key], list)
    }
    assert build_plan({**BASE, **as_a_survey_writes})["groups"][0]["method"] == "shared_device"


def test_every_input_the_rule_knows_is_an_input_of_the_plan():
    from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.unused import USES

    assert set(USES) <= set(DEFAULTS)


def test_settings_of_the_nic_opt_in_while_it_is_off_are_kept_with_a_warning():
    """Turning gpudirect_rdma_nic_configuration off keeps its settings for when it is on again:
    each is named in a warning, globally or in a group; none is refused."""
    inventory = mixed_groups(nic_type=["ConnectX-6 Dx"])
    plan = build_plan(
        {
            **inventory,
            "nic_type": ["ConnectX-7"],
            "roce_pfc_priority": "4",
            "nic_firmware_reset": True,
        }
    )
    assert [w.split(" is set but unused")[0] for w in plan["warnings"]] == [
        "gpudirect_rdma_node_groups[0].nic_type",
        "gpudirect_rdma_nic_type",
        "gpudirect_rdma_nic_firmware_reset",
        "gpudirect_rdma_roce_pfc_priority",
    ]
    assert build_plan(mixed_groups())["warnings"] == []


def test_a_release_no_certified_catalog_carries_is_refused():
    """Network Operator 26.1.2 was never published in a certified catalog (UPGRADES.md)."""
    with pytest.raises(PlanError) as raised:
        build_plan({**BASE, "network_operator_release": "26.1.2"})
    assert str(raised.value) == (
        "gpudirect_rdma_network_operator_release: got '26.1.2'; expected a release a certified "
        "catalog carries (26.7.1, 26.7.0, 26.4.1, 26.4.0, 26.1.0, 25.10.0): 26.1.2 was never "
        "published in the catalogs of OpenShift 4.18 to 4.22, so OLM cannot install it"
    )
