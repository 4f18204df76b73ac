"""Malformed inventories, one table for the unit test (tests/unit/test_bad_inputs.py: the
validation raises) and the integration test (tests/integration/test_bad_inputs.py: the playbooks
fail before any write to the cluster).

Each case starts from an example inventory in inventories/ and breaks one thing: it sets or
removes inventory variables (`set`, `unset`), or passes extra variables the way an Ansible
Automation Platform survey does (`extra`: strings, winning over the inventory). Their names are
the plan's inputs without the gpudirect_rdma_ prefix, or whole names: a role's settings
(verify_min_gbps), old or misspelt names. The message must name the variable, show the bad value
(as Python's repr writes it; None where the message has no value, a misspelt name) and say what is
allowed (`allowed`, a fragment). `playbooks` says which playbooks read the variable and so must
fail on it: site.yml always plans first; verify.yml plans too; uninstall.yml checks only the
settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.inputs import DEFAULTS

REPO_ROOT = Path(__file__).resolve().parents[1]
INVENTORIES = REPO_ROOT / "inventories"
PREFIX = "gpudirect_rdma_"
# The roles whose settings carry their own prefix instead.
ROLE_PREFIXES = ("verify_", "uninstall_", "diagnostics_")


def variable(name: str) -> str:
    """The variable a case's name stands for."""
    return name if name.startswith((PREFIX, *ROLE_PREFIXES)) else PREFIX + name


@dataclass(frozen=True)
class BadInput:
    id: str
    inventory: str
    variable: str
    value: str | None
    allowed: str
    set: dict[str, Any] = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    extra: dict[str, str] = field(default_factory=dict)
    playbooks: tuple[str, ...] = ("site",)

    def inventory_variables(self) -> dict[str, Any]:
        """The group_vars/all.yml of the broken inventory (prefixed names)."""
        path = INVENTORIES / self.inventory / "group_vars" / "all.yml"
        variables = yaml.safe_load(path.read_text())
        for name in self.unset:
            del variables[PREFIX + name]
        variables.update({variable(name): value for name, value in self.set.items()})
        return variables

    def extra_variables(self) -> dict[str, str]:
        return {variable(name): value for name, value in self.extra.items()}

    def variables(self) -> dict[str, Any]:
        """What a playbook sees: the inventory, extra variables winning."""
        return {**self.inventory_variables(), **self.extra_variables()}

    def fragments(self) -> list[str]:
        """What the message must contain."""
        return [self.variable, self.allowed] + ([self.value] if self.value is not None else [])


SDR = "shared-device-roce"
SDI = "shared-device-infiniband"
HDR = "host-device-roce"
HDI = "host-device-infiniband"
SLR = "sriov-legacy-roce"
SLI = "sriov-legacy-infiniband"
HGX = "multi-rail-hgx"
NG = "node-groups"
MM = "mixed-methods"
NCR = "nic-configuration-roce"
VFS = "a whole number from 1 to 127"
IFNAME = "a Linux interface name: 1 to 15 characters"
V = PREFIX  # shorter rows below


def _groups(inventory: str = NG, index: int = 0, **changes) -> list[dict]:
    """An example's node groups (node-groups unless named), one of them (the first) changed."""
    found = yaml.safe_load((INVENTORIES / inventory / "group_vars" / "all.yml").read_text())[
        PREFIX + "node_groups"
    ]
    return [{**group, **changes} if i == index else group for i, group in enumerate(found)]


CASES: list[BadInput] = [
    # -- wrong types ---------------------------------------------------------------------------
    BadInput(
        "mtu-string",
        SDR,
        V + "mtu",
        "'jumbo'",
        "a whole number from 576 to 9216",
        set={"mtu": "jumbo"},
    ),
    BadInput("num-vfs-float", SLR, V + "sriov_num_vfs", "8.5", VFS, set={"sriov_num_vfs": 8.5}),
    BadInput(
        "method-bool",
        SDR,
        V + "method",
        "True",
        "one of shared_device, host_device, sriov_legacy",
        set={"method": True},
        playbooks=("site", "verify"),
    ),
    BadInput(
        "fabric-unknown",
        SDR,
        V + "fabric",
        "'ethernet'",
        "one of roce, infiniband",
        set={"fabric": "ethernet"},
    ),
    BadInput(
        "interfaces-number",
        SDR,
        V + "interfaces",
        "8",
        "a non-empty list of PF interface",
        set={"interfaces": 8},
    ),
    BadInput(
        "interfaces-entry-list",
        SDR,
        V + "interfaces[0]",
        "['ens8f0np0']",
        "an interface name or a mapping",
        set={"interfaces": [["ens8f0np0"]]},
    ),
    BadInput(
        "node-selector-list",
        SLR,
        V + "node_selector",
        "['feature.node.kubernetes.io/pci-15b3.present=true']",
        "a mapping",
        set={"node_selector": ["feature.node.kubernetes.io/pci-15b3.present=true"]},
    ),
    BadInput(
        "node-selector-bool-value",
        SLR,
        V + "node_selector[nvidia.com/gpu.present]",
        "True",
        "a label value string (quote 'true')",
        set={"node_selector": {"nvidia.com/gpu.present": True}},
    ),
    BadInput(
        "operators-list", SDR, V + "operators", "['nfd']", "a mapping", set={"operators": ["nfd"]}
    ),
    BadInput(
        "namespace-bool",
        SDR,
        V + "network_namespace",
        "True",
        "a DNS-1123 label",
        set={"network_namespace": True},
    ),
    BadInput(
        "irdma-sometimes",
        SDR,
        V + "blacklist_irdma",
        "'sometimes'",
        "true or false",
        set={"blacklist_irdma": "sometimes"},
    ),
    BadInput(
        "exclude-mapping",
        HDR,
        V + "ipam_exclude",
        "{'from': '192.168.3.229'}",
        "a list",
        set={"ipam_exclude": {"from": "192.168.3.229"}},
    ),
    BadInput(
        "openshift-version-float",
        SDR,
        V + "openshift_version",
        "4.2",
        "a quoted string such as '4.20'",
        set={"openshift_version": 4.2},
    ),
    BadInput(
        "openshift-target-version-5",
        SDR,
        V + "openshift_target_version",
        "'5.1'",
        "an OpenShift minor version such as 4.20",
        set={"openshift_target_version": "5.1"},
    ),
    BadInput(
        "take-over-maybe",
        SDR,
        V + "take_over",
        "'maybe'",
        "true or false",
        set={"take_over": "maybe"},
    ),
    # -- ranges --------------------------------------------------------------------------------
    BadInput("num-vfs-0", SLR, V + "sriov_num_vfs", "0", VFS, set={"sriov_num_vfs": 0}),
    BadInput("num-vfs-129", SLR, V + "sriov_num_vfs", "129", VFS, set={"sriov_num_vfs": 129}),
    BadInput(
        "num-vfs-32-infiniband",
        SLI,
        V + "sriov_num_vfs",
        "32",
        "at most 16 VFs per PF on InfiniBand",
        set={"sriov_num_vfs": 32},
        playbooks=("site", "verify"),
    ),
    BadInput(
        "mtu-9500-roce",
        HGX,
        V + "mtu",
        "9500",
        "a whole number from 576 to 9216 on roce",
        set={"mtu": 9500},
    ),
    BadInput(
        "mtu-500-infiniband",
        SDI,
        V + "mtu",
        "500",
        "a whole number from 576 to 65520 on infiniband",
        set={"mtu": 500},
    ),
    BadInput(
        "vlan-4095", SLR, V + "vlan", "4095", "a whole number from 0 to 4094", set={"vlan": 4095}
    ),
    BadInput(
        "priority-100",
        SLR,
        V + "sriov_priority",
        "100",
        "a whole number from 0 to 99",
        set={"sriov_priority": 100},
    ),
    BadInput(
        "hca-max-0",
        SDR,
        V + "rdma_hca_max",
        "0",
        "a whole number from 1 to 1000",
        set={"rdma_hca_max": 0},
    ),
    BadInput(
        "block-size-0",
        HDI,
        V + "ipam_per_node_block_size",
        "0",
        "a whole number from 1 to 65536",
        set={"ipam_per_node_block_size": 0},
    ),
    BadInput(
        "verify-threshold-negative",
        SDR,
        "verify_min_gbps",
        "-10",
        "a number of Gb/s from 0 to 3200",
        set={"verify_min_gbps": -10},
        playbooks=("site", "verify"),
    ),
    BadInput(
        "verify-nccl-sizes-reversed",
        SDR,
        "verify_nccl_min_bytes",
        "'16G'",
        "a size at most verify_nccl_max_bytes (8G)",
        set={"verify_nccl_min_bytes": "16G", "verify_nccl_max_bytes": "8G"},
        playbooks=("site", "verify"),
    ),
    BadInput(
        "uninstall-timeout-0",
        SDR,
        "uninstall_timeout",
        "0",
        "a whole number from 1 to 86400",
        set={"uninstall_timeout": 0},
        playbooks=("site", "uninstall"),
    ),
    BadInput(
        "log-lines-negative",
        SDR,
        "diagnostics_log_lines",
        "-1",
        "a whole number from 0 to 100000",
        set={"diagnostics_log_lines": -1},
    ),
    # -- names ---------------------------------------------------------------------------------
    BadInput(
        "interface-too-long",
        SDR,
        V + "interfaces[0].name",
        "'ens8f0np0-rail0x'",
        IFNAME,
        set={"interfaces": ["ens8f0np0-rail0x"]},
        playbooks=("site", "verify"),
    ),
    BadInput(
        "interface-slash",
        SDR,
        V + "interfaces[0].name",
        "'ens8f0np0/1'",
        "no '/'",
        set={"interfaces": ["ens8f0np0/1"]},
    ),
    BadInput(
        "interface-vf-range",
        SLR,
        V + "interfaces[0].name",
        "'ens8f0np0#0-3'",
        "'#'",
        set={"interfaces": ["ens8f0np0#0-3"]},
    ),
    BadInput(
        "interface-space",
        HDR,
        V + "interfaces[0].name",
        "'ens8f0 np0'",
        "white space",
        set={"interfaces": ["ens8f0 np0"]},
    ),
    BadInput(
        "interface-key-misspelt",
        HGX,
        V + "interfaces[0].nmae",
        "'ens1f0np0'",
        "no such key; allowed: name",
        set={"interfaces": [{"nmae": "ens1f0np0"}]},
    ),
    BadInput(
        "network-name-upper-case",
        SDR,
        V + "network_name",
        "'RDMA_Net'",
        "a DNS-1123 name",
        set={"network_name": "RDMA_Net"},
    ),
    BadInput(
        "namespace-too-long",
        HDR,
        V + "network_namespace",
        "'" + "n" * 64 + "'",
        "at most 63 characters",
        set={"network_namespace": "n" * 64},
    ),
    BadInput(
        "policy-name-upper-case",
        SLR,
        V + "sriov_policy_name",
        "'Policy_1'",
        "a DNS-1123 name",
        set={"sriov_policy_name": "Policy_1"},
    ),
    BadInput(
        "resource-name-slash",
        SDR,
        V + "shared_device_resource_name",
        "'rdma/shared'",
        "a resource name",
        set={"shared_device_resource_name": "rdma/shared"},
    ),
    BadInput(
        "pull-secret-name",
        SDR,
        V + "image_pull_secrets[0]",
        "'My_Secret'",
        "a DNS-1123 name",
        set={"image_pull_secrets": ["My_Secret"]},
    ),
    BadInput(
        "machine-config-role-upper-case",
        SDR,
        V + "machine_config_role",
        "'Worker'",
        "a DNS-1123 label",
        set={"machine_config_role": "Worker"},
    ),
    BadInput(
        "machine-config-role-two",
        SDR,
        V + "machine_config_role",
        "'worker,master'",
        "a DNS-1123 label",
        set={"machine_config_role": "worker,master"},
    ),
    BadInput(
        "misspelt-ipam-range",
        SDR,
        V + "ipam_rnage",
        None,
        "did you mean gpudirect_rdma_ipam_range?",
        set={"ipam_rnage": "192.168.2.0/24"},
        unset=("ipam_range",),
    ),
    BadInput(
        "misspelt-num-vfs",
        SLR,
        V + "sriov_num_vf",
        None,
        "did you mean gpudirect_rdma_sriov_num_vfs?",
        set={"sriov_num_vf": 8},
    ),
    BadInput(
        "misspelt-uninstall-timeout",
        SDR,
        "uninstall_timout",
        None,
        "did you mean uninstall_timeout?",
        set={"uninstall_timout": 600},
        playbooks=("site", "uninstall"),
    ),
    BadInput(
        "misspelt-old-uninstall-timeout",
        SDR,
        V + "uninstall_timout",
        None,
        "did you mean uninstall_timeout?",
        set={V + "uninstall_timout": 600},
        playbooks=("site", "uninstall"),
    ),
    # -- old names of the roles' settings --------------------------------------------------------
    BadInput(
        "old-name-verify-min-gbps",
        SLI,
        V + "verify_min_gbps",
        None,
        "renamed; set verify_min_gbps",
        set={V + "verify_min_gbps": 150},
        playbooks=("site", "verify"),
    ),
    BadInput(
        "old-name-uninstall-namespaces",
        HDI,
        V + "uninstall_namespaces",
        None,
        "renamed; set uninstall_namespaces",
        extra={V + "uninstall_namespaces": "true"},
        playbooks=("site", "uninstall"),
    ),
    BadInput(
        "old-name-diagnostics-dir",
        HGX,
        V + "diagnostics_dir",
        None,
        "renamed; set diagnostics_dir",
        set={V + "diagnostics_dir": "/tmp/diagnostics"},
        playbooks=("site", "verify", "uninstall"),
    ),
    # -- IPAM ----------------------------------------------------------------------------------
    BadInput(
        "range-without-prefix",
        SDR,
        V + "ipam_range",
        "'192.168.2.0'",
        "CIDR notation",
        set={"ipam_range": "192.168.2.0"},
    ),
    BadInput(
        "range-bad-octet",
        SDR,
        V + "ipam_range",
        "'192.168.256.0/24'",
        "CIDR notation",
        set={"ipam_range": "192.168.256.0/24"},
    ),
    BadInput(
        "range-missing",
        SDR,
        V + "ipam_range",
        None,
        "the IP range pods get addresses from",
        unset=("ipam_range", "ipam_gateway"),
    ),
    BadInput(
        "gateway-outside",
        SDR,
        V + "ipam_gateway",
        "'192.168.3.1'",
        "an address inside 192.168.2.0/24",
        set={"ipam_gateway": "192.168.3.1"},
    ),
    BadInput(
        "gateway-network-address",
        SDR,
        V + "ipam_gateway",
        "'192.168.2.0'",
        "not its network or broadcast address",
        set={"ipam_gateway": "192.168.2.0"},
    ),
    BadInput(
        "gateway-broadcast-address",
        HDI,
        V + "ipam_gateway",
        "'192.168.7.255'",
        "not its network or broadcast address",
        set={"ipam_gateway": "192.168.7.255"},
    ),
    BadInput(
        "gateway-not-an-address",
        SDR,
        V + "ipam_gateway",
        "'router'",
        "an IP address",
        set={"ipam_gateway": "router"},
    ),
    BadInput(
        "exclude-outside",
        HDR,
        V + "ipam_exclude[1]",
        "'192.168.4.236/32'",
        "a CIDR inside 192.168.3.224/28",
        set={"ipam_exclude": ["192.168.3.229/30", "192.168.4.236/32"]},
    ),
    BadInput(
        "exclude-not-cidr",
        SLI,
        V + "ipam_exclude[0]",
        "'192.168.6.229'",
        "CIDR notation",
        set={"ipam_exclude": ["192.168.6.229"]},
    ),
    BadInput(
        "rails-overlap",
        HGX,
        V + "interfaces[1].ipam_range",
        "'10.100.0.128/25'",
        "each rail needs a subnet of its own",
        unset=("ipam_range",),
        set={
            "interfaces": [
                {"name": "ens1f0np0", "ipam_range": "10.100.0.0/24"},
                {"name": "ens2f0np0", "ipam_range": "10.100.0.128/25"},
            ]
        },
    ),
    BadInput(
        "rails-share-gateway",
        HGX,
        V + "ipam_gateway",
        "'10.100.0.1'",
        "give each entry of gpudirect_rdma_interfaces its own ipam_range",
        set={"ipam_gateway": "10.100.0.1"},
    ),
    BadInput(
        "range-too-small-for-rails",
        HGX,
        V + "ipam_range",
        "'10.100.0.0/28'",
        "large enough to split into 8 subnets",
        set={"ipam_range": "10.100.0.0/28"},
    ),
    BadInput(
        "rail-gateway-without-range",
        HGX,
        V + "interfaces[0].ipam_gateway",
        "'10.100.0.1'",
        "an ipam_range on gpudirect_rdma_interfaces[0] as well",
        set={"interfaces": [{"name": "ens1f0np0", "ipam_gateway": "10.100.0.1"}]},
    ),
    BadInput(
        "ipam-type-dhcp",
        SDR,
        V + "ipam_type",
        "'dhcp'",
        "one of whereabouts, nv-ipam",
        set={"ipam_type": "dhcp"},
    ),
    # -- combinations --------------------------------------------------------------------------
    BadInput(
        "vlan-on-infiniband",
        SLI,
        V + "vlan",
        "100",
        "no value: only a node group with method sriov_legacy over roce (SriovNetwork.vlan",
        set={"vlan": 100},
    ),
    BadInput(
        "vlan-with-shared-device",
        SDR,
        V + "vlan",
        "10",
        "only a node group with method sriov_legacy over roce",
        set={"vlan": 10},
    ),
    BadInput(
        "ib-link-state-on-roce",
        SLR,
        V + "ib_link_state",
        "'enable'",
        "no value: only a node group with method sriov_legacy over infiniband",
        set={"ib_link_state": "enable"},
    ),
    BadInput(
        "ib-link-state-up",
        SLI,
        V + "ib_link_state",
        "'up'",
        "one of enable, disable, auto",
        set={"ib_link_state": "up"},
    ),
    BadInput(
        "nv-ipam-block-larger-than-range",
        HDI,
        V + "ipam_per_node_block_size",
        "16",
        "fewer addresses than the 14 for hosts",
        set={"ipam_range": "192.168.7.0/28"},
        unset=("ipam_gateway",),
    ),
    BadInput(
        "duplicate-interfaces",
        HGX,
        V + "interfaces[2].name",
        "'ens1f0np0'",
        "a name not already used by gpudirect_rdma_interfaces[0]",
        set={"interfaces": ["ens1f0np0", "ens2f0np0", "ens1f0np0"]},
    ),
    BadInput(
        "duplicate-rail-networks",
        HGX,
        V + "interfaces[0].network_name",
        "'rail'",
        "a network name used by one rail only",
        set={
            "interfaces": [
                {"name": "ens1f0np0", "network_name": "rail"},
                {"name": "ens2f0np0", "network_name": "rail"},
            ]
        },
    ),
    BadInput(
        "gpu-memory-nvidia-peermem",
        SDR,
        V + "gpu_memory",
        "'nvidia-peermem'",
        "one of dmabuf, peermem",
        set={"gpu_memory": "nvidia-peermem"},
    ),
    BadInput(
        "gpu-memory-bool",
        HDR,
        V + "gpu_memory",
        "True",
        "one of dmabuf, peermem",
        set={"gpu_memory": True},
    ),
    BadInput(
        "unknown-operator",
        SDR,
        V + "operators.gpu",
        "{'channel': 'v26.7'}",
        "no such operator; allowed: nfd, sriov_network_operator",
        set={"operators": {"gpu": {"channel": "v26.7"}}},
    ),
    BadInput(
        "unknown-operator-key",
        SDR,
        V + "operators.nfd.chanel",
        "'stable'",
        "no such key; allowed: namespace, channel",
        set={"operators": {"nfd": {"chanel": "stable"}}},
    ),
    BadInput(
        "approval-lower-case",
        SDR,
        V + "operators.network_operator.approval",
        "'manual'",
        "one of Automatic, Manual",
        set={"operators": {"network_operator": {"approval": "manual"}}},
    ),
    BadInput(
        "manual-without-csv",
        SDR,
        V + "operators.nfd.starting_csv",
        "None",
        "when approval is Manual",
        set={"operators": {"nfd": {"approval": "Manual"}}},
    ),
    BadInput(
        "network-operator-release",
        SDR,
        V + "network_operator_release",
        "'24.10.0'",
        "one of 26.7.1, 26.7.0, 26.4.1",
        set={"network_operator_release": "24.10.0"},
    ),
    BadInput(
        # Known, but never published in a certified catalog: OLM could not install it.
        "network-operator-release-unpublished",
        SDR,
        V + "network_operator_release",
        "'26.1.2'",
        "a release a certified catalog carries (26.7.1, 26.7.0, 26.4.1, 26.4.0, 26.1.0, 25.10.0)",
        set={"network_operator_release": "26.1.2"},
    ),
    BadInput(
        "gpu-operator-release-float",
        SDR,
        V + "gpu_operator_release",
        "'26.7'",
        "one of 26.7.2, 26.7.1, 26.7.0",
        set={"gpu_operator_release": 26.7},
    ),
    BadInput(
        "catalog-source",
        SDR,
        V + "catalog_source",
        "'My Mirror'",
        "a DNS-1123 name",
        set={"catalog_source": "My Mirror"},
    ),
    BadInput(
        "catalog-source-namespace",
        SDR,
        V + "catalog_source_namespace",
        "'Openshift_Marketplace'",
        "a DNS-1123 label",
        set={"catalog_source_namespace": "Openshift_Marketplace"},
    ),
    BadInput(
        "image-registry-url",
        SDR,
        V + "image_registry",
        "'https://mirror.example.com'",
        "a registry host",
        set={"image_registry": "https://mirror.example.com"},
    ),
    BadInput(
        "persistent-name-short-mac",
        SDR,
        V + "persistent_nic_names[0].mac",
        "'b8:3f:d2:3b:51'",
        "a MAC address",
        set={"persistent_nic_names": [{"mac": "b8:3f:d2:3b:51", "name": "ens8f0np0"}]},
    ),
    BadInput(
        "persistent-name-duplicate-mac",
        SDR,
        V + "persistent_nic_names[1].mac",
        "'B8:3F:D2:3B:51:29'",
        "an address not already in",
        set={
            "persistent_nic_names": [
                {"mac": "b8:3f:d2:3b:51:29", "name": "ens8f0np0"},
                {"mac": "B8:3F:D2:3B:51:29", "name": "ens8f1np1"},
            ]
        },
    ),
    BadInput(
        "persistent-name-without-mac",
        SDR,
        V + "persistent_nic_names[0]",
        "{'name': 'ens8f0np0'}",
        "a mapping with exactly 'mac' and 'name'",
        set={"persistent_nic_names": [{"name": "ens8f0np0"}]},
    ),
    # -- survey answers (extra variables, strings) ---------------------------------------------
    BadInput(
        "survey-interfaces-yaml-list",
        SDR,
        V + "interfaces[0].name",
        "'[ens8f0np0'",
        "brackets",
        extra={"interfaces": "[ens8f0np0, ens8f1np0]"},
        unset=("ipam_gateway",),
    ),
    BadInput(
        "survey-interfaces-semicolon",
        SDR,
        V + "interfaces[0].name",
        "'ens8f0np0;ens8f1np0'",
        IFNAME,
        extra={"interfaces": "ens8f0np0;ens8f1np0"},
    ),
    BadInput(
        "survey-interfaces-blank",
        SDR,
        V + "interfaces",
        "' , '",
        "a non-empty list of PF interface names",
        extra={"interfaces": " , "},
    ),
    BadInput(
        "survey-mtu-with-unit",
        HGX,
        V + "mtu",
        "'9000 bytes'",
        "a whole number",
        extra={"mtu": "9000 bytes"},
    ),
    BadInput(
        "survey-exclude-address-range",
        HDR,
        V + "ipam_exclude[0]",
        "'192.168.3.229-192.168.3.231'",
        "CIDR notation",
        extra={"ipam_exclude": "192.168.3.229-192.168.3.231"},
    ),
    BadInput(
        "survey-method-label",
        SDR,
        V + "method",
        "'Shared device'",
        "one of shared_device, host_device, sriov_legacy",
        extra={"method": "Shared device"},
        playbooks=("site", "verify"),
    ),
    BadInput(
        "survey-threshold-text",
        SDR,
        "verify_min_gbps",
        "'fast'",
        "a number of Gb/s from 0 to 3200",
        extra={"verify_min_gbps": "fast"},
        playbooks=("site", "verify"),
    ),
    BadInput(
        "survey-verify-nodes",
        SDR,
        "verify_nodes[0]",
        "'worker_0'",
        "a DNS-1123 name",
        extra={"verify_nodes": "worker_0,worker_1"},
        playbooks=("site", "verify"),
    ),
    BadInput(
        "survey-uninstall-namespaces",
        SDR,
        "uninstall_namespaces",
        "'ja'",
        "true or false",
        extra={"uninstall_namespaces": "ja"},
        playbooks=("site", "uninstall"),
    ),
    BadInput(
        "survey-uninstall-timeout-unit",
        SDR,
        "uninstall_timeout",
        "'30m'",
        "a whole number from 1 to 86400",
        extra={"uninstall_timeout": "30m"},
        playbooks=("site", "uninstall"),
    ),
    BadInput(
        "interfaces-beside-groups-that-name-theirs",
        NG,
        f"{V}interfaces",
        "['ens8f0np0']",
        "no value: every group of gpudirect_rdma_node_groups names its own interfaces",
        set={"interfaces": ["ens8f0np0"]},
    ),
    BadInput(
        "group-name-too-long",
        NG,
        f"{V}node_groups[0].name",
        "'a100-connectx6-dx-roce-four-rails'",
        "at most 30 characters",
        set={"node_groups": _groups(name="a100-connectx6-dx-roce-four-rails")},
    ),
    BadInput(
        "group-name-not-a-dns-label",
        NG,
        f"{V}node_groups[0].name",
        "'A100_RoCE'",
        "a DNS-1123 label",
        set={"node_groups": _groups(name="A100_RoCE")},
    ),
    BadInput(
        "group-name-twice",
        NG,
        f"{V}node_groups[1].name",
        "'a100'",
        "a name not already used by gpudirect_rdma_node_groups[0]",
        set={"node_groups": [_groups()[0], {**_groups()[1], "name": "a100"}]},
    ),
    BadInput(
        "group-without-node-selector",
        NG,
        f"{V}node_groups[0].node_selector",
        None,
        "with several groups, each needs its own",
        set={
            "node_groups": [
                {k: v for k, v in _groups()[0].items() if k != "node_selector"},
                _groups()[1],
            ]
        },
    ),
    BadInput(
        "groups-with-the-same-selector",
        NG,
        f"{V}node_groups[1].node_selector",
        "{'gpudirect.example.com/pool': 'a100'}",
        "labels apart from gpudirect_rdma_node_groups[0]'s",
        set={
            "node_groups": [
                _groups()[0],
                {**_groups()[1], "node_selector": {"gpudirect.example.com/pool": "a100"}},
            ]
        },
    ),
    BadInput(
        "group-unknown-key",
        NG,
        f"{V}node_groups[0].rails",
        "4",
        "no such key; allowed: name, node_selector, interfaces",
        set={"node_groups": _groups(rails=4)},
    ),
    BadInput(
        "group-bad-fabric",
        NG,
        f"{V}node_groups[0].fabric",
        "'ethernet'",
        "one of roce, infiniband",
        set={"node_groups": _groups(fabric="ethernet")},
    ),
    BadInput(
        "group-ranges-overlap",
        NG,
        f"{V}node_groups[1].ipam_range",
        "'10.110.0.0/20'",
        "a range whose part for group h100's rail 0 (10.110.0.0/23, its part of "
        f"{V}node_groups[1].ipam_range 10.110.0.0/20) is the same as, or apart from, group "
        f"a100's rail 0 (10.110.0.0/24, its part of {V}node_groups[0].ipam_range 10.110.0.0/22)",
        set={"node_groups": [_groups()[0], {**_groups()[1], "ipam_range": "10.110.0.0/20"}]},
    ),
    BadInput(
        "groups-global-range-too-small",
        NG,
        f"{V}ipam_range",
        "'10.200.0.0/27'",
        "a range large enough to split into 12 subnets of at least 4 addresses (one per rail "
        "that takes it: a100 4 rail(s), h100 8 rail(s))",
        set={
            "ipam_range": "10.200.0.0/27",
            "node_groups": [{k: v for k, v in g.items() if k != "ipam_range"} for g in _groups()],
        },
    ),
    BadInput(
        "groups-global-range-with-gateway",
        NG,
        f"{V}ipam_gateway",
        "'10.200.0.1'",
        "none with several rails sharing one ipam_range (a100 4 rail(s), h100 8 rail(s);",
        set={
            "ipam_range": "10.200.0.0/16",
            "ipam_gateway": "10.200.0.1",
            "node_groups": [{k: v for k, v in g.items() if k != "ipam_range"} for g in _groups()],
        },
    ),
    BadInput(
        "group-doca-driver-version",
        NG,
        f"{V}node_groups[0].doca_driver_version",
        "'latest'",
        "a DOCA driver version as the Network Operator's webhook takes it",
        set={"node_groups": _groups(doca_driver_version="latest")},
    ),
    BadInput(
        "doca-driver-version",
        SDR,
        f"{V}doca_driver_version",
        "'24.10'",
        "a DOCA driver version as the Network Operator's webhook takes it",
        set={"doca_driver_version": "24.10"},
    ),
    BadInput(
        # Five numbers after the DOCA prefix's date: the 26.7 webhook refuses it
        # (network-operator #3068's review), so the plan does, naming the form.
        "doca-driver-version-five-numbers",
        SDR,
        f"{V}doca_driver_version",
        "'doca3.3.1-26.01-1.0.0.0.305-0'",
        "docaX.Y[.Z]-YY.MM-a.b.c.d-N with exactly four numbers a.b.c.d",
        set={"doca_driver_version": "doca3.3.1-26.01-1.0.0.0.305-0"},
    ),
    BadInput(
        "cluster-model-with-two-groups",
        NG,
        f"{V}nic_policy_model",
        "'cluster'",
        "node with 2 node groups",
        set={"nic_policy_model": "cluster"},
    ),
    BadInput(
        "nic-policy-model-unknown",
        SDR,
        f"{V}nic_policy_model",
        "'per-node'",
        "one of cluster, node",
        set={"nic_policy_model": "per-node"},
    ),
    BadInput(
        "node-groups-not-a-list",
        SDR,
        f"{V}node_groups",
        "'a100'",
        "a list of node groups",
        set={"node_groups": "a100"},
    ),
    # -- NIC firmware settings (gpudirect_rdma_nic_configuration) ---------------------------------
    BadInput(
        "nic-type-unknown",
        NCR,
        f"{V}nic_type[0]",
        "'ConnectX-5'",
        "a NIC type: one of ConnectX-6 Dx, ConnectX-6 Lx, ConnectX-7",
        set={"nic_type": ["ConnectX-5"]},
    ),
    BadInput(
        "nic-type-unquoted-number",
        NCR,
        f"{V}nic_type[0]",
        "1021",
        "the PCI device ID as a quoted string",
        set={"nic_type": [1021]},
    ),
    BadInput(
        "nic-type-twice",
        NCR,
        f"{V}nic_type[1]",
        "'1021'",
        "a NIC type not already in",
        set={"nic_type": ["ConnectX-7", "1021"]},
    ),
    BadInput(
        "nic-type-survey-unknown",
        NCR,
        f"{V}nic_type[1]",
        "'CX7'",
        "or a PCI device ID of four hex digits",
        extra={"nic_type": "ConnectX-6 Dx, CX7"},
    ),
    BadInput(
        "nic-type-of-a-group",
        NG,
        f"{V}node_groups[0].nic_type[0]",
        "'a100-nic'",
        "a NIC type: one of",
        set={"node_groups": _groups(nic_type=["a100-nic"])},
    ),
    BadInput(
        "nic-configuration-not-a-boolean",
        NCR,
        f"{V}nic_configuration",
        "'maybe'",
        "true or false",
        extra={"nic_configuration": "maybe"},
    ),
    BadInput(
        "roce-pfc-priority-8",
        NCR,
        f"{V}roce_pfc_priority",
        "8",
        "a whole number from 0 to 7 (an IEEE 802.1p priority)",
        set={"roce_pfc_priority": 8},
    ),
    BadInput(
        # ECN, pause frames and the cable length are 26.7's template fields: the 26.4 schema
        # would refuse them (tests/integration/test_releases.py).
        "roce-ecn-before-26-7",
        NCR,
        f"{V}roce_ecn",
        "True",
        "it unset with gpudirect_rdma_network_operator_release 26.4.1: the NIC Configuration "
        "Operator takes it from Network Operator 26.7 on",
        set={"roce_ecn": True, "network_operator_release": "26.4.1"},
    ),
    BadInput(
        "roce-cable-length-0",
        NCR,
        f"{V}roce_cable_length",
        "0",
        "a whole number from 1 to 10000 meters",
        set={"roce_cable_length": 0},
    ),
    BadInput(
        "roce-qos-trust-crd-wording",
        NCR,
        f"{V}roce_qos_trust",
        "'trust-dscp'",
        "one of dscp, pfc",
        set={"roce_qos_trust": "trust-dscp"},
    ),
    BadInput(
        "maintenance-max-parallel-0",
        NCR,
        f"{V}maintenance_max_parallel",
        "'0'",
        "a whole number of nodes (at least 1) or a percentage of nodes such as '25%'",
        extra={"maintenance_max_parallel": "0"},
    ),
    BadInput(
        "maintenance-max-unavailable-150-percent",
        NCR,
        f"{V}maintenance_max_unavailable",
        "'150%'",
        "a percentage from 0% to 100%",
        set={"maintenance_max_unavailable": "150%"},
    ),
    BadInput(
        "maintenance-max-unavailable-negative",
        NCR,
        f"{V}maintenance_max_unavailable",
        "-1",
        "a whole number of nodes (at least 0)",
        set={"maintenance_max_unavailable": -1},
    ),
    BadInput(
        "driver-upgrade-max-parallel-negative",
        SDR,
        f"{V}driver_upgrade_max_parallel",
        "-1",
        "a whole number from 0 to 1000",
        set={"driver_upgrade_max_parallel": -1},
    ),
    BadInput(
        "driver-upgrade-max-unavailable-zero",
        SDR,
        f"{V}driver_upgrade_max_unavailable",
        "'0'",
        "a whole number of nodes (at least 1) or a percentage of nodes such as '25%'",
        set={"driver_upgrade_max_unavailable": "0"},
    ),
    BadInput(
        "driver-upgrade-drain-timeout-0",
        SDR,
        f"{V}driver_upgrade_drain_timeout_seconds",
        "0",
        "a whole number from 1 to 86400",
        set={"driver_upgrade_drain_timeout_seconds": 0},
    ),
    BadInput(
        "maintenance-timeout-10s",
        NCR,
        f"{V}maintenance_timeout_seconds",
        "10",
        "a whole number from 60 to 604800",
        set={"maintenance_timeout_seconds": 10},
    ),
    BadInput(
        "uninstall-nic-configuration-revert",
        NCR,
        "uninstall_nic_configuration",
        "'revert'",
        "one of keep, reset",
        set={"uninstall_nic_configuration": "revert"},
        playbooks=("site", "uninstall"),
    ),
    BadInput(
        "old-name-uninstall-nic-configuration",
        NCR,
        V + "uninstall_nic_configuration",
        None,
        "uninstall_nic_configuration",
        set={V + "uninstall_nic_configuration": "reset"},
        playbooks=("site", "uninstall"),
    ),
    BadInput(
        "roce-pfc-priority-on-infiniband",
        SLI,
        f"{V}roce_pfc_priority",
        "4",
        "on a RoCE node group, or gpudirect_rdma_monitoring: true on one (its PFC pause alert)",
        set={"nic_configuration": True, "nic_type": ["ConnectX-7"], "roce_pfc_priority": 4},
    ),
    BadInput(
        "monitoring-for-minutes-zero",
        SDR,
        f"{V}monitoring_for_minutes",
        "0",
        "a whole number from 1 to 1440",
        set={"monitoring": True, "monitoring_for_minutes": 0},
    ),
    BadInput(
        "monitoring-not-a-boolean",
        SDR,
        f"{V}monitoring",
        "sometimes",
        "true or false",
        set={"monitoring": "sometimes"},
    ),
    BadInput(
        "monitoring-port-rate-too-high",
        SDR,
        f"{V}monitoring_port_rate_gbps_below",
        "5000",
        "a whole number from 0 to 3200 Gb/s (0: no such alert)",
        set={"monitoring": True, "monitoring_port_rate_gbps_below": 5000},
    ),
    # -- settings that nothing in the plan would use (plan/unused.py) ---------------------------
    BadInput(
        "num-vfs-with-shared-device",
        SDR,
        f"{V}sriov_num_vfs",
        "4",
        "no value or its default 8: only a node group with method sriov_legacy uses it",
        set={"sriov_num_vfs": 4},
    ),
    BadInput(
        "rdma-hca-max-with-sriov-legacy",
        SLR,
        f"{V}rdma_hca_max",
        "10",
        "only a node group with method shared_device uses it",
        set={"rdma_hca_max": 10},
    ),
    BadInput(
        "block-size-with-whereabouts",
        SDR,
        f"{V}ipam_per_node_block_size",
        "32",
        "only gpudirect_rdma_ipam_type: nv-ipam (IPPool perNodeBlockSize) uses it",
        set={"ipam_per_node_block_size": 32},
    ),
    BadInput(
        "unknown-name-with-the-prefix",
        SDR,
        V + "telemetry",
        None,
        "not a variable of gpudirect.rdma (its inputs: ansible-doc gpudirect.rdma.plan",
        set={"telemetry": True},
    ),
    BadInput(
        "mixed-num-vfs-of-the-shared-device-group",
        MM,
        f"{V}node_groups[0].sriov_num_vfs",
        "4",
        "only a node group with method sriov_legacy uses it, and group a100 is not one",
        set={"node_groups": _groups(MM, 0, sriov_num_vfs=4)},
    ),
    BadInput(
        "mixed-infiniband-vfs-of-the-sriov-group",
        MM,
        f"{V}node_groups[1].sriov_num_vfs",
        "17",
        "at most 16 VFs per PF on InfiniBand",
        set={"node_groups": _groups(MM, 1, sriov_num_vfs=17)},
    ),
    BadInput(
        "mixed-ib-link-state-in-the-survey-is-taken-by-the-sriov-group",
        MM,
        f"{V}ib_link_state",
        "'up'",
        "one of enable, disable, auto",
        extra={"ib_link_state": "up"},
    ),
    BadInput(
        "num-vfs-of-a-shared-device-group",
        NG,
        f"{V}node_groups[0].sriov_num_vfs",
        "4",
        "no value: only a node group with method sriov_legacy uses it, and group",
        set={"node_groups": _groups(sriov_num_vfs=4)},
    ),
]

IDS = [case.id for case in CASES]
assert len(set(IDS)) == len(IDS), "case ids are unique"

# The playbooks that validate, and the task of each that does (its first) with its action.
FIRST_TASK = {
    "site": (
        "Plan from the inventory, check the cluster, is anything left to do? (reads only)",
        "gpudirect.rdma.step",
    ),
    "verify": ("Plan the configuration from the inventory", "gpudirect.rdma.plan"),
    "uninstall": ("Check the settings in the inventory", "gpudirect.rdma.plan"),
}
PLAYBOOKS = {name: REPO_ROOT / "playbooks" / f"{name}.yml" for name in FIRST_TASK}
RUNS = [(case, playbook) for case in CASES for playbook in case.playbooks]


def kind(case: BadInput, playbook: str) -> tuple[str, str, str]:
    """What a run shares with others of its kind: the playbook; how the bad value arrives (set
    or unset in the inventory, or an extra variable, as a survey gives it); and what the name is
    (a plan input, a setting of the collection, a role's setting, or no variable at all)."""
    arrives = "extra" if case.extra else "unset" if case.unset and not case.set else "set"
    name = case.variable.split("[")[0].split(".")[0]
    if case.value is None:
        what = "no variable"
    elif name.startswith(ROLE_PREFIXES):
        what = "role setting"
    elif name.removeprefix(PREFIX) in DEFAULTS:
        what = "plan input"
    else:
        what = "setting"
    return playbook, arrives, what


# The first run of each kind, run by ansible-playbook against the control plane
# (tests/integration/test_bad_inputs.py); every run goes through its playbook's first task in
# one process (tests/unit/test_bad_inputs.py, tests/harness/first_task.py).
END_TO_END: list[tuple[BadInput, str]] = []
for _run in RUNS:
    if kind(*_run) not in {kind(*chosen) for chosen in END_TO_END}:
        END_TO_END.append(_run)


def write_inventory(folder: Path, case: BadInput) -> Path:
    """The broken inventory as files (hosts.yml and group_vars/all.yml), in folder."""
    (folder / "group_vars").mkdir(parents=True)
    hosts = INVENTORIES / case.inventory / "hosts.yml"
    (folder / "hosts.yml").write_text(hosts.read_text())
    (folder / "group_vars" / "all.yml").write_text(
        yaml.safe_dump(case.inventory_variables(), sort_keys=False)
    )
    return folder
