"""python -m tests.simulator: run the simulator, register fake nodes, or set knobs."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

import yaml

from tests.harness.controlplane import DEFAULT_STATE_DIR, api_client
from tests.simulator import build_simulator
from tests.simulator.core import write_knobs
from tests.simulator.nodes import Hardware, Nic, register_nodes, remove_nodes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.simulator", description=__doc__)
    parser.add_argument(
        "--kubeconfig",
        default=str(DEFAULT_STATE_DIR / "simulator.kubeconfig"),
        help="default: the simulator identity of the local control plane",
    )
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("run", help="play OLM and the operators until stopped (the default)")
    nodes = commands.add_parser("nodes", help="register fake GPU + NIC worker nodes")
    nodes.add_argument("--count", type=int, default=2)
    nodes.add_argument("--prefix", default="worker")
    nodes.add_argument("--gpus", type=int, default=8)
    nodes.add_argument("--fabric", choices=["roce", "infiniband"], default="roce")
    nodes.add_argument("--nic", action="append", help="NIC name (repeat for more rails)")
    nodes.add_argument(
        "--no-nfd-labels", action="store_true", help="leave the NFD labels off (as before NFD runs)"
    )
    nodes.add_argument(
        "--replace", action="store_true", help="remove the fake nodes registered before"
    )
    knobs = commands.add_parser("knobs", help="set the knobs (YAML or JSON mapping)")
    knobs.add_argument("mapping")
    args = parser.parse_args(argv)

    client = api_client(args.kubeconfig)
    if args.command == "nodes":
        link_type = "ib" if args.fabric == "infiniband" else "eth"
        default_nic = "ibs2f0" if args.fabric == "infiniband" else "ens8f0np0"
        hardware = Hardware(
            gpus=args.gpus,
            nics=tuple(Nic(name, link_type) for name in (args.nic or [default_nic])),
        )
        if args.replace:
            remove_nodes(client)
        names = register_nodes(
            client,
            args.count,
            prefix=args.prefix,
            hardware=hardware,
            nfd_labels=not args.no_nfd_labels,
        )
        print("nodes: " + ", ".join(names))
        return 0
    if args.command == "knobs":
        write_knobs(client, yaml.safe_load(args.mapping) or {})
        return 0

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    logging.getLogger("simulator").info("simulator running against %s", args.kubeconfig)
    build_simulator(client).run(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
