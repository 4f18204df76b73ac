"""make cluster-up / cluster-down / cluster-status: python -m tests.harness up|down|status.

up      start etcd, kube-apiserver, kube-controller-manager and the simulator; a partial control
        plane left in the state directory (a start that was killed, a process that died) is
        stopped first. A start that fails stops everything it started.
down    stop exactly the processes recorded in the state directory.
status  list them; exit 0 only when the control plane runs whole.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
import traceback

from tests.harness.controlplane import DEFAULT_STATE_DIR, ControlPlane, ControlPlaneError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.harness",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("action", choices=["up", "down", "status"])
    parser.add_argument("--state-dir", default=str(DEFAULT_STATE_DIR))
    parser.add_argument(
        "--no-simulator", action="store_true", help="start the API server without the simulator"
    )
    parser.add_argument(
        "--debug", action="store_true", help="print the traceback of an unexpected failure"
    )
    args = parser.parse_args(argv)
    # SIGTERM (make interrupted, a CI timeout) unwinds like Ctrl-C, so a start is undone.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    plane = ControlPlane(args.state_dir)
    try:
        if args.action == "up":
            began = time.monotonic()
            plane.start(simulator=not args.no_simulator)
            print(
                f"control plane ready in {time.monotonic() - began:.1f}s at {plane.server}\n"
                f"  export KUBECONFIG={plane.kubeconfig}\n"
                f"  audit log: {plane.audit_log}"
            )
        elif args.action == "down":
            stopped = plane.stop()
            print("stopped: " + (", ".join(f"{p.name} ({p.pid})" for p in stopped) or "nothing"))
        else:
            return _status(plane)
    except ControlPlaneError as error:
        print(f"error: {error}", file=sys.stderr)
        if args.debug:
            traceback.print_exc()
        return 1
    except KeyboardInterrupt:
        print("interrupted: what was started is stopped", file=sys.stderr)
        return 130
    return 0


def _status(plane: ControlPlane) -> int:
    health = plane.health()
    for process in plane.processes():
        state = "running" if process.alive() else "gone"
        print(f"{process.name:24} pid {process.pid:<8} {state}")
    advice = {
        "partial": "; `make cluster-up` stops what is left and starts again, "
        "`make cluster-down` only stops it",
        "absent": "; start one with `make cluster-up`",
    }
    print(f"{health.state}: {health.detail}{advice.get(health.state, '')}")
    return 0 if health.state == "running" else 1


if __name__ == "__main__":
    sys.exit(main())
