"""The gates option, shared by the modules that wait on gates or observe them."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  gates:
    description: What must hold on the cluster; all of it in the same read.
    type: list
    elements: dict
    required: true
    suboptions:
      gate:
        description: Name of the gate, used in messages (e.g. C(NicClusterPolicy ready)).
        type: str
        required: true
      api_version:
        description: apiVersion of the objects.
        type: str
        required: true
      kind:
        description: Kind of the objects.
        type: str
        required: true
      name:
        description: One object by name. Omit to wait on every object matching
          O(gates[].label_selector).
        type: str
      namespace:
        description: Namespace of the objects.
        type: str
      label_selector:
        description: Objects to wait on when no name is given; each of them must reach the state.
        type: str
      min_count:
        description: At least this many objects must match (e.g. the number of GPU nodes).
        type: int
        default: 1
      path:
        description:
          - The field to read, as a JMESPath expression (C(status.state),
            C(status.conditions[?type=='Updated'] | [0].status),
            C(status.allocatable."rdma/rdma_shared_device_eth")), or as a list of keys
            (C([status, allocatable, rdma/rdma_shared_device_eth])).
          - Messages show the expression; a field that is absent or null is C(missing).
        type: raw
        required: true
      equals:
        description: Value the field must have.
        type: raw
      one_of:
        description: Values the field may have.
        type: list
        elements: raw
      at_least:
        description: Smallest number (or Kubernetes quantity) the field must reach.
        type: int
      includes:
        description: Values the list at the field must hold (an object in the list counts by its
          C(name)).
        type: list
        elements: raw
      excludes:
        description: Values the list at the field must not hold (an object counts by its C(name)).
        type: list
        elements: raw
      fail_on:
        description: Values that mean the gate failed for good.
        type: list
        elements: raw
        default: []
      detail:
        description:
          - A JMESPath expression over an object not ready, whose result the message shows beside
            the value at O(gates[].path) (empty results left out), e.g. the first failing
            C(status.appliedStates) entry of a NicNodePolicy.
        type: str
      check:
        description:
          - A check that reads more than the gate's object. C(nic_configuration), for a
            NicConfigurationTemplate (O(gates[].name), O(gates[].namespace)) - every NicDevice in
            its C(status.nicDevices) holds it in its spec and reports C(ConfigUpdateInProgress)
            reason C(UpdateSuccessful) at its generation; an error reason (C(IncorrectSpec),
            C(SpecValidationFailed), C(NonVolatileConfigUpdateFailed), C(RuntimeConfigUpdateFailed),
            C(FirmwareError)) fails at once with the device, node and message, and so does a device
            waiting for maintenance while the Maintenance Operator is paused (C(maxUnavailable) 0).
          - C(nic_policy), for a NicClusterPolicy or NicNodePolicy (O(gates[].name)) - met when
            C(status.state) is C(ready) and, where the policy has C(status.conditions) (Network
            Operator 26.7 and later), its C(Ready) condition is C(True); the message names each
            component condition not C(True) (C(OFEDDriverReady False ComponentError) and its
            message), or before 26.7 the first C(status.appliedStates) entry not ready; a
            C(status.state) in O(gates[].fail_on) fails at once.
          - C(driver_rollout), for a driver's DaemonSets (O(gates[].label_selector) in
            O(gates[].namespace)) and the node label O(gates[].path) names (the upgrade
            controller's state, C(metadata.labels."nvidia.com/gpu-driver-upgrade-state")) - met
            when every DaemonSet has seen its template and runs updated, ready pods on every node
            it schedules, and no node is in a state but C(upgrade-done); each read says how many
            nodes are done, which are in which state, which wait for a slot. A node in
            C(upgrade-failed) fails at once with its driver pod's last log lines, and one in a
            state for longer than O(gates[].stuck_after) seconds with what to do in that state.
          - With a check, O(gates[].path) names what the message shows and O(gates[].equals) is its
            expectation in words.
        type: str
        choices: [driver_rollout, nic_configuration, nic_policy]
      stuck_after:
        description:
          - With C(check=driver_rollout), the seconds a node may stay in one upgrade state (from
            the time the API server recorded for the write of its state label) before the gate
            fails, naming the node, the state and what to do. Unset - no limit but the timeout.
        type: int
      versions:
        description:
          - With C(check=driver_rollout), the driver version each policy asks for, by
            C(<Kind>/<name>) of the policy (C(NicClusterPolicy/nic-cluster-policy)). A DaemonSet
            such a policy owns whose template's image does not hold that version has not been
            rendered from the policy's spec yet (the operator did not reconcile the write), so
            its pods and the nodes' states still tell of the last version and the gate waits.
            Unset - the DaemonSets' status alone.
        type: dict
      hint:
        description: Where to look when the gate is not reached, appended to the message.
        type: str
        default: ""
"""
