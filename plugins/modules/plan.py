"""gpudirect.rdma.plan: documentation of the plan action plugin (the code is plugins/action/plan.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: plan
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Validate the GPUDirect RDMA inventory and return the normalised plan
description:
  - The one validation step of the collection. Every option left out of the task is read from
    the inventory variable of the same name with the C(gpudirect_rdma_) prefix
    (C(method) from C(gpudirect_rdma_method), and so on); options given in the task win.
  - A bad value fails here, before anything is written to a cluster or a file, with a message
    that names the variable, the value received and what is allowed.
  - A C(gpudirect_rdma_*) variable (or C(verify_*), C(uninstall_*), C(diagnostics_*)) that is no
    option or setting but looks like one (C(gpudirect_rdma_ipam_rnage)) fails too, naming the one
    meant; so does a role's setting given with the old C(gpudirect_rdma_) prefix.
  - A list option also takes one string of items separated by commas or white space, the form
    the text answer of an Ansible Automation Platform survey has; C(ens8f0np0,ens8f1np0) is
    C([ens8f0np0, ens8f1np0]). Numbers and booleans also take their string forms (C("9000"),
    C("true")).
  - The roles' settings are checked here too, before any write - the options of the C(verify),
    C(uninstall) and C(diagnostics) roles by the type their C(meta/argument_specs.yml) declares
    (C(verify_min_gbps) 0 to 3200, C(uninstall_timeout) 1 to 86400, C(diagnostics_log_lines) 0 to
    100000, ...), C(gpudirect_rdma_take_over) and C(gpudirect_rdma_render_dir).
  - Runs on the controller; needs no cluster. Pass the returned C(plan) to
    P(gpudirect.rdma.objects#filter).
attributes:
  check_mode:
    support: full
    description: Reads and computes only.
  diff_mode:
    support: none
    description: Nothing to compare.
options:
  scope:
    description:
      - What to check. C(all) plans and checks the settings; C(settings) checks only the settings
        (listed above; no plan, so no inventory is needed), as C(playbooks/uninstall.yml) does.
      - An option of the task only; no inventory variable sets it.
    type: str
    choices: [all, settings]
    default: all
  method:
    description: RDMA method (C(gpudirect_rdma_method)).
    type: str
    choices: [shared_device, host_device, sriov_legacy]
    required: true
  fabric:
    description: Fabric the NICs run (C(gpudirect_rdma_fabric)).
    type: str
    choices: [roce, infiniband]
    required: true
  interfaces:
    description:
      - PF interface names, one per rail (C(gpudirect_rdma_interfaces)), e.g. C([ens8f0np0]).
      - A string is read as names separated by commas or white space (an AAP survey's answer),
        e.g. C(ens8f0np0,ens8f1np0) for two rails.
      - A name has 1 to 15 letters, digits, C(-), C(_) and C(.) (every naming scheme in use; the
        SR-IOV operator reads C(#) as a VF range), and appears once.
      - An entry may be a mapping with C(name) and any of C(network_name), C(resource_name),
        C(ipam_range), C(ipam_gateway), C(ipam_exclude) for that rail.
      - With one rail, objects carry Red Hat's names (C(rdmashared-net), C(rdma_shared_device_eth),
        C(hostdev), C(sriovlegacy), ...). With several, each rail gets its own resource and network,
        suffixed C(_rail<N>) and C(-rail<N>).
    type: list
    elements: raw
    required: true
  network_name:
    description: Name of the secondary network (per rail, suffixed C(-rail<N>)). Default by method and fabric, Red Hat's where Red Hat gives one.
    type: str
  network_namespace:
    description: Namespace whose pods use the network (its NetworkAttachmentDefinition lives there).
    type: str
    default: default
  ipam_type:
    description: IPAM plugin of the network.
    type: str
    choices: [whereabouts, nv-ipam]
    default: whereabouts
  ipam_range:
    description:
      - IP range (CIDR) the pods get addresses from, e.g. C(192.168.2.0/24). Required unless every
        interface entry has its own C(ipam_range).
      - With several rails and no per-rail ranges, the range is split into equal consecutive parts,
        one per rail (then no C(ipam_gateway) or C(ipam_exclude)). Per-rail ranges must not overlap.
      - With node groups, the groups that set no C(ipam_range) of their own share this one, which
        is split once over all their rails, group by group in the inventory's order, rail by
        rail, so no two rails of any groups overlap. A group's or a rail's own range always wins.
    type: str
  ipam_gateway:
    description: Gateway address, a host address inside C(ipam_range) (not its network or broadcast address).
    type: str
  ipam_exclude:
    description: CIDRs inside C(ipam_range) that are never handed out.
    type: list
    elements: str
    default: []
  ipam_per_node_block_size:
    description: Addresses nv-ipam gives each node at a time (IPPool C(perNodeBlockSize)); fewer than
      the host addresses of each rail's range.
    type: int
    default: 16
  mtu:
    description: MTU of the MacvlanNetwork and of the SR-IOV VFs; 576-9216 on RoCE, 576-65520 on InfiniBand.
    type: int
    default: 1500
  rdma_hca_max:
    description: Pods that may share one RDMA device (shared device method, C(rdmaHcaMax)).
    type: int
    default: 63
  shared_device_resource_name:
    description: Resource of the shared device plugin (node resource C(rdma/<name>)). Default
      C(rdma_shared_device_eth) on RoCE, C(rdma_shared_device_ib) on InfiniBand.
    type: str
  host_device_resource_name:
    description: Resource of the host device method (node resource C(nvidia.com/<name>)).
    type: str
    default: hostdev
  sriov_num_vfs:
    description: VFs per PF (SR-IOV legacy); at most 16 on InfiniBand.
    type: int
    default: 8
  sriov_resource_name:
    description: Resource of the SR-IOV legacy method (node resource C(openshift.io/<name>)).
    type: str
    default: sriovlegacy
  sriov_policy_name:
    description: Name of the SriovNetworkNodePolicy.
    type: str
    default: sriov-legacy-policy
  sriov_priority:
    description: Priority of the SriovNetworkNodePolicy (0 highest, 99 lowest).
    type: int
    default: 90
  vlan:
    description: VLAN of the SriovNetwork (SR-IOV legacy over RoCE only; InfiniBand has no VLAN). Unset means 0.
    type: int
  ib_link_state:
    description: C(linkState) of the SriovIBNetwork (SR-IOV legacy over InfiniBand only).
    type: str
    choices: [enable, disable, auto]
  node_selector:
    description:
      - Nodes the SR-IOV node policy, the NIC firmware templates and the NicNodePolicy configure (and the
        bandwidth test uses). With the cluster NIC policy model, a selector other than the default also becomes
        the NicClusterPolicy's C(nodeAffinity), so its DOCA driver and device plugin run on those nodes only.
        MachineConfigs go by their pool (O(machine_config_role)), the GPU Operator by the nodes NFD found a GPU
        on. See docs/disruption.md.
      - The node selector of a node group that sets none, when there is one group.
    type: dict
    default: {feature.node.kubernetes.io/pci-15b3.present: "true"}
  node_groups:
    description:
      - Sets of nodes that differ (their NICs and interface names, their fabric, their DOCA
        driver), each a mapping with C(name) (a DNS-1123 label of at most 30 characters, as it names
        the group's NicNodePolicy), C(node_selector) (its nodes' labels, required with several
        groups) and any of C(interfaces), C(method), C(fabric), C(sriov_num_vfs), C(mtu),
        C(ipam_range), C(doca_driver_version) and C(nic_type). What a group leaves out comes from the
        variable of the same name (C(gpudirect_rdma_interfaces), ...).
      - Without groups the global variables describe every node (one implicit group), and the
        objects are named as they always were.
      - With several groups each group's networks (and SR-IOV node policies) carry its name,
        C(rdmashared-net-<group>-rail0); the resources keep theirs, C(rdma/rdma_shared_device_eth_rail0),
        so a pod asking for one lands on any group that offers it.
      - Two groups may not select nodes by the same labels; their ranges are one range or apart
        (with C(nv-ipam), apart).
    type: list
    elements: dict
    default: []
  nic_policy_model:
    description:
      - Where the DOCA driver and the device plugins go. C(cluster) is the one NicClusterPolicy
        C(nic-cluster-policy). C(node) is a NicNodePolicy per node group (named after it) with
        the group's driver and device plugin, the NicClusterPolicy keeping what is cluster-wide
        (IPoIB, nv-ipam); NVIDIA recommends it for new deployments.
      - Default C(cluster) with one group, C(node) with several (C(cluster) is refused there).
    type: str
    choices: [cluster, node]
  doca_driver_version:
    description:
      - DOCA driver version of every node group that sets none; default the Network Operator
        release's (C(doca3.5.0-26.07-0.7.7.0-1) with 26.7.1).
      - The forms the Network Operator's webhook takes - C(docaX.Y[.Z]-YY.MM-a.b.c.d-N) with
        exactly four numbers C(a.b.c.d) (C(doca3.5.0-26.07-0.7.7.0-0); a fifth, as in
        C(doca3.3.1-26.01-1.0.0.0.305-0), is refused), a release without the prefix
        (C(24.10-0.7.0.0-0)), either with a precompiled image's kernel suffix, or
        C(sha256:<64 hex>). Use it to move off a driver build that fails on a kernel.
    type: str
  doca_driver_repository:
    description: Repository of the DOCA driver image; default the release's (under C(image_registry) when set).
    type: str
  nic_configuration:
    description:
      - Set the NICs' firmware for GPUDirect RDMA (opt-in) through the NVIDIA NIC Configuration
        Operator, with the NVIDIA Maintenance Operator draining and scheduling the nodes that
        reboot. Adds the Maintenance Operator (OLM), the NicClusterPolicy's
        C(nicConfigurationOperator) and one NicConfigurationTemplate per node group and NIC type.
      - Off, the six configurations are as without it.
    type: bool
    default: false
  nic_type:
    description:
      - NIC types the NicConfigurationTemplates select (with O(nic_configuration); per node group
        too), by name (C(ConnectX-6 Dx), C(ConnectX-6 Lx), C(ConnectX-7), C(ConnectX-8),
        C(ConnectX-9), C(BlueField-2), C(BlueField-3)) or PCI device ID (four hex digits, quoted,
        C("1021")). A string is read as types separated by commas.
      - Empty, C(site.yml) takes the types of the NicDevices on each group's nodes (C(render.yml),
        which reads no cluster, needs them named).
    type: list
    elements: str
    default: []
  roce_pfc_priority:
    description: Priority that PFC makes lossless on RoCE (NicConfigurationTemplate C(roceOptimized.qos.pfc));
      the switches must use the same one.
    type: int
    default: 3
  roce_qos_trust:
    description: What the NIC trusts to classify RoCE traffic (C(roceOptimized.qos.trust)).
    type: str
    choices: [dscp, pfc]
    default: dscp
  roce_ecn:
    description:
      - ECN on the PFC priority (C(roceOptimized.qos.ecn) with O(roce_pfc_priority)), which
        NVIDIA's RoCE congestion control relies on; NIC Configuration Operator 26.7 and later
        (Network Operator 26.7).
      - Unset, the template leaves it out and the NIC keeps its own setting (and the template
        stays valid for the 26.4 schema).
    type: bool
  roce_pause_frames:
    description:
      - Global pause frames (C(roceOptimized.qos.pauseFrames.enabled)); NVIDIA recommends
        C(false) where PFC makes a priority lossless. Network Operator 26.7 and later.
      - Unset, the template leaves it out and the NIC keeps its own setting.
    type: bool
  roce_cable_length:
    description:
      - Cable length in meters, from which the NIC computes its ECN buffer thresholds
        (C(roceOptimized.qos.cableLen)). Network Operator 26.7 and later.
      - Unset, the template leaves it out and the NIC keeps its own setting.
    type: int
  nic_firmware_reset:
    description:
      - Reset the NIC firmware after a configuration change (C(FW_RESET_AFTER_CONFIG_UPDATE) of the NIC
        Configuration Operator). Required on platforms with an external BMC (DGX, HGX), where a warm
        reboot does not reload the NIC firmware and the node could reboot again and again.
    type: bool
    default: false
  maintenance_max_parallel:
    description:
      - Nodes the Maintenance Operator takes into maintenance at once (C(maxParallelOperations)
        of the C(default) MaintenanceOperatorConfig), a number (C(2), or C("2")) or a percentage
        of nodes (C("25%")).
    type: str
    default: "1"
  maintenance_max_unavailable:
    description:
      - Nodes that may be unavailable at once, maintenance or not (C(maxUnavailable)), a number or a
        percentage. Unset, no limit. C(0) pauses every new maintenance.
    type: str
  maintenance_timeout_seconds:
    description: Seconds a node may stay in maintenance before the Maintenance Operator ends it
      (C(maxNodeMaintenanceTimeSeconds)).
    type: int
    default: 3600
  monitoring:
    description:
      - Watch the fabric's health on OpenShift monitoring (opt-in). Adds the DOCA Telemetry Service
        to the NicClusterPolicy with a Service and ServiceMonitor that user-workload monitoring
        scrapes, the DCGM exporter's ServiceMonitor to the ClusterPolicy, and, in the Namespace
        C(gpudirect-rdma-monitoring), a PrometheusRule (the rail map as recording rules, the
        fabric's and the GPUs' alerts) with a dashboard for the console. See docs/monitoring.md.
      - Off, the six configurations are as without it, and what the collection made for it goes.
    type: bool
    default: false
  monitoring_for_minutes:
    description: Minutes a condition must hold before its alert fires (the alerts' C(for)); the
      link-flap and XID alerts fire at once.
    type: int
    default: 5
  monitoring_link_down_per_hour:
    description: Times a port's link may go down in an hour before C(GPUDirectRDMALinkFlapping)
      fires (node_exporter's C(link_downed) counter).
    type: int
    default: 1
  monitoring_symbol_errors_per_10m:
    description: Symbol errors of a port in 10 minutes that fire C(GPUDirectRDMASymbolErrors).
    type: int
    default: 10
  monitoring_out_of_sequence_per_second:
    description: Out-of-sequence packets a second a port receives that fire
      C(GPUDirectRDMAOutOfSequence).
    type: int
    default: 100
  monitoring_cnp_per_second:
    description: Congestion notification packets a second a RoCE port sends that fire
      C(GPUDirectRDMACongestion).
    type: int
    default: 5000
  monitoring_pfc_pause_per_second:
    description: PFC pause frames a second a RoCE interface receives on O(roce_pfc_priority) that
      fire C(GPUDirectRDMAPFCPauseStorm) (node-exporter's ethtool collector must be on).
    type: int
    default: 1000
  monitoring_nvlink_errors_per_10m:
    description: NVLink CRC, replay and recovery errors of a GPU in 10 minutes that fire
      C(GPUDirectRDMANVLinkErrors).
    type: int
    default: 1
  monitoring_port_rate_gbps_below:
    description: A port rate in Gb/s below which C(GPUDirectRDMAPortRateLow) fires (a port that
      trained at a lower speed than its cable and switch should give); C(0), no such alert.
    type: int
    default: 0
  driver_upgrade_max_parallel:
    description:
      - Nodes whose GPU driver, or DOCA driver, is upgraded at once (C(maxParallelUpgrades) of the
        ClusterPolicy's C(driver.upgradePolicy) and of the NIC policies' C(ofedDriver.upgradePolicy)),
        a whole number; C(0) for no limit. A node in C(upgrade-failed) keeps its slot until it is
        retried.
      - With O(nic_configuration) the DOCA driver's nodes go through the Maintenance Operator,
        whose O(maintenance_max_parallel) and O(maintenance_max_unavailable) govern them instead.
    type: int
    default: 1
  driver_upgrade_max_unavailable:
    description:
      - GPU nodes that may be unavailable at once while the GPU driver is upgraded (C(maxUnavailable)
        of the ClusterPolicy's C(driver.upgradePolicy)), a number or a percentage of the GPU
        nodes. Every cordoned or not Ready GPU node counts, whoever cordoned it.
    type: str
    default: "25%"
  driver_upgrade_drain_timeout_seconds:
    description:
      - Seconds to wait for a node's GPU pods to be deleted, and for a node to drain, during a driver
        upgrade (C(podDeletion.timeoutSeconds) and C(drain.timeoutSeconds) of the upgrade
        policies); past them the node ends C(upgrade-failed).
    type: int
    default: 300
  gpu_memory:
    description:
      - How the NIC reaches GPU memory. C(dmabuf) (NVIDIA's recommendation; open kernel modules,
        no nvidia-peermem) or C(peermem) (the legacy nvidia-peermem module, C(driver.rdma.enabled)).
    type: str
    choices: [dmabuf, peermem]
    default: dmabuf
  gpu_gds:
    description: Enable GPUDirect Storage (nvidia-fs) in the ClusterPolicy.
    type: bool
    default: true
  gpu_gdrcopy:
    description: Enable GDRCopy in the ClusterPolicy.
    type: bool
    default: true
  operators:
    description:
      - Per-operator OLM settings over the defaults, keyed C(nfd), C(sriov_network_operator),
        C(network_operator), C(gpu_operator), C(maintenance_operator) (with O(nic_configuration));
        each may set C(namespace), C(channel), C(source), C(source_namespace), C(approval)
        (C(Automatic) or C(Manual)) and C(starting_csv).
      - With C(approval=Manual) only the InstallPlan of C(starting_csv) is approved; it defaults to
        the chosen release's CSV for the Network, GPU and Maintenance Operators and is required for
        the others.
    type: dict
    default: {}
  catalog_source:
    description: CatalogSource of all four operators (a mirror on disconnected clusters). Default
      C(redhat-operators) for NFD and SR-IOV, C(certified-operators) for the NVIDIA
      operators.
    type: str
  catalog_source_namespace:
    description: Namespace of the CatalogSources.
    type: str
    default: openshift-marketplace
  network_operator_release:
    description:
      - NVIDIA Network Operator release - its OLM version channel (v26.7) and CSV, and the
        component images and versions of its NicClusterPolicy and NicNodePolicies.
    type: str
    choices: ["26.7.1", "26.7.0", "26.4.1", "26.4.0", "26.1.2", "26.1.0", "25.10.0"]
    default: "26.7.1"
  gpu_operator_release:
    description: GPU Operator release (its OLM channel, CSV and default ClusterPolicy).
    type: str
    choices: ["26.7.2", "26.7.1", "26.7.0", "26.3.3", "25.10.1", "25.3.4"]
    default: "26.7.2"
  image_registry:
    description: Registry (host, optional port and path) that replaces the host of every NicClusterPolicy component repository, for disconnected clusters.
    type: str
  image_pull_secrets:
    description:
      - Names of existing pull secrets (in the Network Operator's namespace) of the NicClusterPolicy components.
      - With O(image_registry_username) and O(image_registry_password), C(gpudirect-rdma-image-registry) is added.
    type: list
    elements: str
    default: []
  image_registry_username:
    description:
      - User name of O(image_registry), for a registry that needs a login. With O(image_registry_password), the
        Network Operator role creates the C(kubernetes.io/dockerconfigjson) Secret C(gpudirect-rdma-image-registry) in
        the Network Operator's namespace (labelled like every object of the collection, removed by uninstall) and
        adds it to O(image_pull_secrets).
      - Without a C(:) or white space. Requires O(image_registry).
    type: str
  image_registry_password:
    description:
      - Password (or token) of O(image_registry_username). Never printed, never part of the plan (the plan only
        says where the Secret goes), never written by C(render.yml); keep it in Ansible Vault or an AAP credential.
    type: str
  openshift_version:
    description: OpenShift minor version the inventory is written for; preflight warns when the cluster runs
      another. Quote it in YAML (C("4.20")); unquoted, 4.20 is the number 4.2 and fails.
    type: str
    default: "4.20"
  openshift_target_version:
    description:
      - An OpenShift minor version the cluster is to be upgraded to next (C("4.21")), optional.
        C(playbooks/upgrade.yml) checks it against the releases it upgrades to, before any
        write, so that the operators move first when the cluster's next OpenShift needs newer
        ones. Quote it in YAML.
    type: str
  nfd_operand_image:
    description: NFD operand image, pinned in the NodeFeatureDiscovery. Unset, the instance names none and the NFD
      operator runs its own (its CSV's), which moves with every operator upgrade; a pinned image does not
      (the operator then reports C(OperandImagePinned)).
    type: str
  machine_config_role:
    description: MachineConfigPool role the MachineConfigs target.
    type: str
    default: worker
  blacklist_irdma:
    description: MachineConfig that blacklists Intel C(irdma) (it breaks DOCA driver reloads on some servers). Reboots the pool.
    type: bool
    default: false
  persistent_nic_names:
    description: MachineConfig with one udev rule per entry (C(mac), C(name)) so NICs keep their
      names. 6-byte MACs are Ethernet, 20-byte addresses IPoIB; each MAC and each name once. Reboots the pool.
    type: list
    elements: dict
    default: []
  crio_memlock:
    description: MachineConfig that gives containers unlimited memlock (CRI-O C(default_ulimits)). Reboots the pool.
    type: bool
    default: false
  allow_disruption:
    description:
      - The disruptions of nodes this run may cause where nodes already run the collection's configuration
        (preflight lists every one, with its objects and nodes, and refuses those not named here before any
        write). C(reboot) a MachineConfig created, changed or removed (its pool reboots); C(drain) an
        SR-IOV node policy changed (the SR-IOV config daemon drains the nodes); C(driver-reload) a DOCA
        driver section added, changed, moved or removed; C(device-plugin) an RDMA device plugin changed or
        removed; C(nic-firmware) a NIC firmware template added or changed; C(gpu-driver) the ClusterPolicy's
        GPU driver changed; C(all) every one of them.
      - On nodes with none of the collection's configuration yet (a first install) the same changes are listed
        as warnings, not refused. See docs/disruption.md.
    type: list
    elements: str
    choices: [all, reboot, drain, driver-reload, device-plugin, nic-firmware, gpu-driver]
    default: []
"""

EXAMPLES = r"""
- name: Plan from the inventory's gpudirect_rdma_* variables
  gpudirect.rdma.plan:
  register: rdma

- name: Plan with one value overridden in the task
  gpudirect.rdma.plan:
    method: host_device
  register: rdma
"""

RETURN = r"""
settings:
  description: The settings (see the description) by variable name, checked, with their defaults.
  returned: success
  type: dict
  sample: {gpudirect_rdma_take_over: false, verify_min_gbps: 100, uninstall_timeout: 1800}
plan:
  description:
    - The normalised plan every builder reads. C(groups) is the list of node groups (one implicit
      group, named null, without C(gpudirect_rdma_node_groups)), each with its own node selector,
      method, fabric, rails, IPAM, MTU and DOCA driver; nothing outside a group names a method,
      fabric or rail. The rest (operators, images, GPU, MachineConfigs, NIC configuration) serves
      every group.
    - Its C(warnings) name the settings it keeps unused while an opt-in is off (the task shows them
      as warnings).
  returned: success with I(scope=all)
  type: dict
  sample:
    groups:
      - name: null
        node_selector: {feature.node.kubernetes.io/pci-15b3.present: "true"}
        method: shared_device
        fabric: roce
        link_type: eth
        rails:
          - index: 0
            interface: ens8f0np0
            network_name: rdmashared-net
            resource_name: rdma_shared_device_eth
            node_resource: rdma/rdma_shared_device_eth
            ipam: {range: 192.168.2.0/24, network: 192.168.2.0/24, gateway: 192.168.2.1, exclude: []}
        ipam: {type: whereabouts, per_node_block_size: 16}
        mtu: 1500
        doca_driver_version: doca3.4.1-26.04-1.1.0.0-1
    nic_policy_model: cluster
    network_namespace: default
"""
