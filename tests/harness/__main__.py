"""make cluster-up / cluster-down / cluster-status: python -m tests.harness up|down|status."""

from __future__ import annotations

import argparse
import sys
import time

from tests.harness.controlplane import DEFAULT_STATE_DIR, ControlPlane, ControlPlaneError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.harness", description=__doc__)
    parser.add_argument("action", choices=["up", "down", "status"])
    parser.add_argument("--state-dir", default=str(DEFAULT_STATE_DIR))
    parser.add_argument(
        "--no-simulator", action="store_true", help="start the API server without the simulator"
    )
    args = parser.parse_args(argv)
    plane = ControlPlane(args.state_dir)
    try:
        if args.action == "up":
            began = time.monotonic()
            plane.start()
            if not args.no_simulator:
                plane.start_simulator()
            print(
                f"control plane ready in {time.monotonic() - began:.1f}s at {plane.server}\n"
                f"  export KUBECONFIG={plane.kubeconfig}\n"
                f"  audit log: {plane.audit_log}"
            )
        elif args.action == "down":
            stopped = plane.stop()
            print("stopped: " + (", ".join(f"{p.name} ({p.pid})" for p in stopped) or "nothing"))
        else:
            processes = plane.processes()
            for process in processes:
                state = "running" if process.alive() else "gone"
                print(f"{process.name:24} pid {process.pid:<8} {state}")
            if not processes:
                print(f"no control plane recorded in {plane.state_dir}")
            return 0 if plane.running() else 1
    except ControlPlaneError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
