"""python -m tests.simulator: run the simulator, register fake nodes, or set knobs."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path

import urllib3
import yaml
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException
from kubernetes.config import ConfigException

from tests.harness.controlplane import DEFAULT_STATE_DIR, api_client
from tests.simulator import build_simulator
from tests.simulator.admission import WebhookServer
from tests.simulator.core import write_knobs
from tests.simulator.informer import WatchingApiClient
from tests.simulator.nodes import DEFAULT_NIC_TYPE, Hardware, Nic, register_nodes, remove_nodes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.simulator", description=__doc__)
    parser.add_argument(
        "--kubeconfig",
        default=str(DEFAULT_STATE_DIR / "simulator.kubeconfig"),
        help="default: the simulator identity of the local control plane",
    )
    parser.add_argument(
        "--ready-file",
        type=Path,
        help="write this file once the first tick has done every controller's work (the "
        "cluster's CatalogSources, MachineConfigPools and ClusterVersion exist)",
    )
    parser.add_argument(
        "--exporters-port",
        type=int,
        help="serve the exporters' series (node-exporter, DCGM, kube-state-metrics) of the fake "
        "nodes on 127.0.0.1:PORT (exporters.py)",
    )
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("run", help="play OLM and the operators until stopped (the default)")
    webhook = parser.add_argument_group("the Network Operator's policy webhooks (all four or none)")
    webhook.add_argument("--webhook-port", type=int, help="serve them on 127.0.0.1:PORT")
    webhook.add_argument("--webhook-cert", help="serving certificate (PEM, SAN 127.0.0.1)")
    webhook.add_argument("--webhook-key", help="its private key (PEM)")
    webhook.add_argument("--webhook-ca", help="the CA that signed it (the caBundle)")
    nodes = commands.add_parser("nodes", help="register fake GPU + NIC worker nodes")
    nodes.add_argument("--count", type=int, default=2)
    nodes.add_argument("--prefix", default="worker")
    nodes.add_argument("--gpus", type=int, default=8)
    nodes.add_argument("--fabric", choices=["roce", "infiniband"], default="roce")
    nodes.add_argument("--nic", action="append", help="NIC name (repeat for more rails)")
    nodes.add_argument(
        "--nic-type",
        default=DEFAULT_NIC_TYPE,
        help="the NICs' PCI device ID (default %(default)s, ConnectX-7; 101d ConnectX-6 Dx, "
        "1023 ConnectX-8, a2dc BlueField-3, ...)",
    )
    nodes.add_argument(
        "--no-nfd-labels", action="store_true", help="leave the NFD labels off (as before NFD runs)"
    )
    nodes.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a label beside the usual ones (repeat for more), e.g. a node group's selector",
    )
    nodes.add_argument(
        "--replace", action="store_true", help="remove the fake nodes registered before"
    )
    knobs = commands.add_parser("knobs", help="set the knobs (YAML or JSON mapping)")
    knobs.add_argument("mapping")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


class UserError(Exception):
    """Something on the user's side stops the simulator: said in one line, no traceback."""


def connect(kubeconfig: str) -> k8s.ApiClient:
    """An API client for kubeconfig once the server behind it has answered; UserError when the
    file is missing or empty or the server does not answer."""
    path = Path(kubeconfig)
    if not path.is_file() or not path.read_text().strip():
        raise UserError(
            f"no kubeconfig at {path} (missing or empty): start the local control plane first "
            "(make cluster-up), or pass --kubeconfig"
        )
    try:
        api = api_client(path)
    except ConfigException as error:
        raise UserError(f"{path} is not a usable kubeconfig: {error}") from error
    try:
        k8s.VersionApi(api).get_code(_request_timeout=5)
    except urllib3.exceptions.HTTPError as error:
        raise UserError(unreachable(api, error)) from error
    return api


def unreachable(api: k8s.ApiClient, error: Exception) -> str:
    reason = getattr(error, "reason", None) or error
    text = str(reason).strip().splitlines()[0] if str(reason).strip() else type(reason).__name__
    return (
        f"the API server at {api.configuration.host} does not answer ({text}): is the local "
        "control plane running? (make cluster-status; make cluster-up starts it)"
    )


def _run(args) -> int:
    client = connect(args.kubeconfig)
    try:
        return _command(args, client)
    except urllib3.exceptions.HTTPError as error:
        raise UserError(unreachable(client, error)) from error
    except ApiException as error:
        raise UserError(
            f"the API server refused a request: {error.status} {error.reason}"
        ) from error


def _command(args, client: k8s.ApiClient) -> int:
    if args.command == "nodes":
        link_type = "ib" if args.fabric == "infiniband" else "eth"
        default_nic = "ibs2f0" if args.fabric == "infiniband" else "ens8f0np0"
        hardware = Hardware(
            gpus=args.gpus,
            nics=tuple(
                Nic(name, link_type, nic_type=args.nic_type.lower())
                for name in (args.nic or [default_nic])
            ),
        )
        if args.replace:
            remove_nodes(client)
        labels = {}
        for given in args.label:
            key, equals, value = given.partition("=")
            if not key or not equals:
                raise UserError(f"--label {given!r}: expected KEY=VALUE")
            labels[key] = value
        names = register_nodes(
            client,
            args.count,
            prefix=args.prefix,
            hardware=hardware,
            nfd_labels=not args.no_nfd_labels,
            labels=labels or None,
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
    webhooks = _webhooks(args, client)
    watching = WatchingApiClient(client.configuration)
    try:
        ready = args.ready_file.touch if args.ready_file else None
        build_simulator(
            watching, webhooks=webhooks, ready=ready, exporters_port=args.exporters_port
        ).run(stop)
    finally:
        watching.close()
    return 0


def _webhooks(args, client: k8s.ApiClient) -> WebhookServer | None:
    given = [args.webhook_port, args.webhook_cert, args.webhook_key, args.webhook_ca]
    if not any(given):
        return None
    if not all(given):
        raise UserError(
            "--webhook-port, --webhook-cert, --webhook-key and --webhook-ca go together"
        )
    server = WebhookServer(
        client, args.webhook_port, args.webhook_cert, args.webhook_key, args.webhook_ca
    )
    server.start()
    logging.getLogger("simulator").info("policy webhooks served on %s", server.url(""))
    return server


if __name__ == "__main__":
    sys.exit(main())
