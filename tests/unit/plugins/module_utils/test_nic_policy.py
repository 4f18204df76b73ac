"""The NIC policy check (k8s/nic_policy.py) on statuses shaped as the Network Operator writes
them: 26.7's conditions (controllers/conditions.go) and the older state and appliedStates."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils import gates
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import (
    GateFailed,
    GateTimeout,
    to_gate,
    wait_for,
)

from .test_k8s import FakeClock, FakeCluster


def condition(kind, status, reason, message=""):
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": 2,
        "lastTransitionTime": "2026-12-04T00:00:00Z",
    }


def policy(state, conditions=None, kind="NicClusterPolicy", **status):
    found = {"state": state, **status}
    if conditions is not None:
        found["conditions"] = conditions
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": kind,
        "metadata": {"name": "nic-cluster-policy", "generation": 2},
        "status": found,
    }


def ncp_gate(**extra):
    return to_gate(
        {**gates.nic_policy_ready("NicClusterPolicy ready", policy(None), "oc get ncp"), **extra}
    )


def last_seen(states, **extra):
    clock = FakeClock()
    with pytest.raises(GateTimeout) as raised:
        wait_for(
            FakeCluster(states), [ncp_gate(**extra)], timeout=5, clock=clock, sleep=clock.sleep
        )
    return str(raised.value)


OFED_ERROR = condition(
    "OFEDDriverReady",
    "False",
    "ComponentError",
    "failed to create k8s objects from manifest: image doca-driver not found",
)


def test_a_component_in_error_is_named_with_its_reason_and_message():
    text = last_seen(
        [
            policy(
                "notReady",
                [
                    condition("RDMASharedDevicePluginReady", "False", "ComponentNotReady"),
                    OFED_ERROR,
                    condition("NVIPAMReady", "True", "ComponentReady"),
                    condition(
                        "Ready",
                        "False",
                        "ComponentError",
                        "One or more components are in error state",
                    ),
                ],
            )
        ]
    )
    assert (
        "last seen: NicClusterPolicy nic-cluster-policy status.state is 'notReady', condition "
        "Ready False ComponentError; not ready: OFEDDriverReady False ComponentError: failed to "
        "create k8s objects from manifest: image doca-driver not found; "
        "RDMASharedDevicePluginReady False ComponentNotReady." in text
    ), text
    assert "NVIPAMReady" not in text


def test_ready_needs_the_ready_condition_and_the_state():
    clock = FakeClock()
    ready = [condition("OFEDDriverReady", "True", "ComponentReady")]
    states = [
        policy("notReady", [*ready, condition("Ready", "False", "ComponentsNotReady")]),
        # The condition first, the state a read later: not met until both say so.
        policy("notReady", [*ready, condition("Ready", "True", "AllComponentsReady")]),
        policy("ready", [*ready, condition("Ready", "True", "AllComponentsReady")]),
    ]
    cluster = FakeCluster(states)
    took = wait_for(cluster, [ncp_gate()], timeout=30, clock=clock, sleep=clock.sleep)
    assert cluster.reads == 3
    assert took == {"NicClusterPolicy ready": 0.6}


def test_an_overlap_error_with_ready_true_fails_at_once():
    # The NicNodePolicy controller's overlap path: state error, its reason, every component
    # condition dropped, so Ready is True.
    overlap = policy(
        "error",
        [condition("Ready", "True", "AllComponentsReady")],
        kind="NicNodePolicy",
        reason="node worker-0 is selected by NicNodePolicies a and b",
    )
    clock = FakeClock()
    with pytest.raises(GateFailed) as raised:
        wait_for(
            FakeCluster([overlap]),
            [ncp_gate(fail_on=["error"])],
            timeout=30,
            clock=clock,
            sleep=clock.sleep,
        )
    assert clock.now == 0
    assert "status.state is 'error', condition Ready True AllComponentsReady (reason 'node" in (
        str(raised.value)
    )


def test_before_26_7_the_state_and_the_first_applied_state_not_ready_are_shown():
    text = last_seen(
        [
            policy(
                "notReady",
                appliedStates=[
                    {"name": "state-multus-cni", "state": "ignore"},
                    {"name": "state-OFED", "state": "notReady", "message": "pods not ready"},
                    {"name": "state-RDMA-device-plugin", "state": "notReady"},
                ],
            )
        ]
    )
    assert (
        "last seen: NicClusterPolicy nic-cluster-policy status.state is 'notReady' "
        "(state-OFED notReady: pods not ready)." in text
    ), text


def test_before_26_7_ready_is_the_state_alone():
    clock = FakeClock()
    took = wait_for(
        FakeCluster([policy("ready", appliedStates=[])]),
        [ncp_gate()],
        timeout=30,
        clock=clock,
        sleep=clock.sleep,
    )
    assert took == {"NicClusterPolicy ready": 0}


def test_a_missing_policy_is_waited_for():
    assert "last seen: NicClusterPolicy nic-cluster-policy does not exist" in last_seen([None])


def test_conditions_of_an_older_generation_are_not_the_changed_policy_s():
    # The spec changed (generation 3) and the operator has not reconciled it: its status,
    # ready for generation 2, says nothing of the change.
    stale = policy("ready", [condition("Ready", "True", "AllComponentsReady")])
    stale["metadata"]["generation"] = 3
    fresh = policy("ready", [{**condition("Ready", "True", "AllComponentsReady")}])
    fresh["metadata"]["generation"] = 3
    fresh["status"]["conditions"][0]["observedGeneration"] = 3
    clock = FakeClock()
    cluster = FakeCluster([stale, fresh])
    took = wait_for(cluster, [ncp_gate()], timeout=30, clock=clock, sleep=clock.sleep)
    assert (cluster.reads, took) == (2, {"NicClusterPolicy ready": 0.2})
    assert (
        "is at generation 3; its conditions are of generation 2 (the operator has not "
        "reconciled the change yet)" in last_seen([stale])
    )
