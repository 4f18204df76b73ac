"""The simulator's loop wakes when a step its gate held back falls due, not only on writes."""

import time

from tests.simulator.core import DelayGate, Simulator


def test_a_held_step_is_remembered_until_it_is_due():
    gate = DelayGate()
    before = time.monotonic()
    assert gate.due("uid-1", "run", 30) is False
    assert before + 30 <= gate.next_due() <= time.monotonic() + 30
    assert gate.due("uid-2", "run", 0) is True
    assert gate.next_due() >= before + 30, "a step due at once is never held"


def test_a_step_that_falls_due_is_no_longer_held():
    gate = DelayGate()
    assert gate.due("uid-1", "run", 0.05) is False
    time.sleep(0.06)
    assert gate.due("uid-1", "run", 0.05) is True
    assert gate.next_due() is None


def test_steps_due_before_a_tick_that_did_not_ask_for_them_are_forgotten():
    gate = DelayGate()
    gate.due("gone", "run", 0.01)
    gate.due("later", "run", 60)
    time.sleep(0.02)
    gate.forget_due_before(time.monotonic())
    assert gate.next_due() > time.monotonic() + 50, "only the later step still wakes the loop"


def test_the_loop_ticks_when_a_held_step_falls_due_though_nothing_was_written():
    gate = DelayGate()
    simulator = Simulator(None, [], gate, idle=600, quiet=600)
    simulator.clock_bound = False
    last_tick = time.monotonic()
    assert simulator._due("rev-1", "rev-1", last_tick) is False
    gate.due("pod", "run", 0.05)
    assert simulator._due("rev-1", "rev-1", last_tick) is False
    time.sleep(0.06)
    assert simulator._due("rev-1", "rev-1", last_tick) is True
    assert simulator._due("rev-1", "rev-2", time.monotonic()) is True, "a write still wakes it"


def test_ready_is_said_once_after_the_first_tick_no_controller_was_refused_in(monkeypatch):
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    from tests.simulator import core

    monkeypatch.setattr(core, "read_knobs", lambda _api: core.merge(core.DEFAULT_KNOBS, {}))

    class RefusedOnce:
        name = "refused-once"
        refusals = 1

        def reconcile(self, world) -> None:
            if self.refusals:
                self.refusals -= 1
                raise ApiException(status=409, reason="Conflict")

    said = []
    simulator = Simulator(client.ApiClient(), [RefusedOnce()], ready=lambda: said.append("ready"))
    simulator.tick()
    assert said == [], "a controller was refused: its work is not done"
    simulator.tick()
    simulator.tick()
    assert said == ["ready"]
