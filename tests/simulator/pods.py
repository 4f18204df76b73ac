"""Pods on the fake nodes: Multus, the kubelet, and the bandwidth test they would run.

- Multus: a pod asking for networks (k8s.v1.cni.cncf.io/networks) gets the
  k8s.v1.cni.cncf.io/network-status annotation, with a net1, net2, ... address from each
  network's NetworkAttachmentDefinition range. (Multus writes this annotation on real clusters
  too; it is the one change the simulator makes to an object somebody else created.)
- kubelet: the pod turns Running; a bandwidth test client (env ROLE=client) finishes after the
  delay, its server once the client has. Finishing runs the pod's own script (its container
  command, unchanged) on a made-up node (testbed.py: sysfs with an RDMA device and GID table
  per attached network, `ip`, `nvidia-smi topo -m` from the node's hardware, an ib_write_bw
  stand-in); the pod ends Succeeded or Failed with the script's exit code. Logs are served to
  the API server from a kubelet endpoint on 127.0.0.1 (each fake node's status points at it),
  so `kubectl logs` and kubernetes.core.k8s_log work.
- The stand-in's output (perftest_standin.py) is shaped like real ib_write_bw runs
  (tests/unit/fixtures/perftest holds captured shapes): CUDA lines with DMA-BUF or peermem
  registration, the test header, the result row. Knobs: perftest.bw_gbps, perftest.gpu_memory
  (as_requested | none), perftest.failure ("" | connection_refused | wrong_gid), perftest.slow
  ({node, device, factor}: one rail of one node slower).
- The NCCL test: a pod with a Secret volume whose Secret is missing stays Pending (FailedMount).
  Its workers (label gpudirect.rdma/verify-role=nccl-worker) run until deleted (their SSH
  servers are not run); its launcher finishes after the delay once its workers run, by running
  its own script with ssh and mpirun stand-ins (nccl_standin.py) that know which workers the
  cluster's DNS would resolve (a headless Service of the subdomain's name selecting the pod),
  the key they accept, and what NCCL would find in each (RDMA devices, IPC_LOCK, GPUDirect).
  Knobs: nccl.transport, nccl.gpudirect, nccl.rail_gbytes, nccl.busbw_gbytes, nccl.wrong.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import ssl
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes.client.rest import ApiException

from tests.simulator.core import DelayGate, World, list_cluster, now
from tests.simulator.operators import fake_nodes, hardware_of
from tests.simulator.testbed import run_pod_script

NETWORKS = "k8s.v1.cni.cncf.io/networks"
NETWORK_STATUS = "k8s.v1.cni.cncf.io/network-status"


class LogServer:
    """The kubelet's /containerLogs endpoint for every fake node, over TLS on loopback."""

    def __init__(self) -> None:
        self.logs: dict[tuple[str, str, str], str] = {}
        logs = self.logs

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                parts = self.path.split("?", 1)[0].strip("/").split("/")
                text = logs.get(tuple(parts[1:4])) if parts[:1] == ["containerLogs"] else None
                body = (text if text is not None else "not found").encode()
                self.send_response(200 if text is not None else 404)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as directory:
            cert, key = _self_signed(Path(directory))
            context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True, name="kubelet-logs").start()


def _self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "simulated-kubelet")])
    stamp = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(stamp - datetime.timedelta(minutes=5))
        .not_valid_after(stamp + datetime.timedelta(days=7))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    (directory / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return directory / "cert.pem", directory / "key.pem"


def _env(pod: dict) -> dict:
    containers = pod["spec"].get("containers") or [{}]
    return {e["name"]: e.get("value", "") for e in containers[0].get("env") or []}


def _container_status(container: dict, state: dict, ready: bool = False) -> dict:
    return {
        "name": container["name"],
        "ready": ready,
        "restartCount": 0,
        "image": container["image"],
        "imageID": "",
        "state": state,
    }


def _terminated(code: int, stamp: str) -> dict:
    return {
        "terminated": {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": stamp,
            "finishedAt": stamp,
        }
    }


def _pod_status(
    pod: dict, phase: str, state: dict, stamp: str, init_codes: dict | None = None, **extra
) -> dict:
    """The status patch of a pod with one container in state (running, terminated, or waiting
    when an init container failed); its init containers completed, or ended with init_codes'
    exit codes, by name."""
    running = phase == "Running"
    container = pod["spec"]["containers"][0]
    inits = pod["spec"].get("initContainers") or []
    codes = {init["name"]: 0 for init in inits} if init_codes is None else init_codes
    return {
        "status": {
            "phase": phase,
            **extra,
            "conditions": [{"type": "Ready", "status": str(running), "lastTransitionTime": stamp}],
            **(
                {
                    "initContainerStatuses": [
                        _container_status(
                            init,
                            _terminated(codes[init["name"]], stamp)
                            if init["name"] in codes
                            else {"waiting": {"reason": "PodInitializing"}},
                        )
                        for init in inits
                    ]
                }
                if inits
                else {}
            ),
            "containerStatuses": [_container_status(container, state, running)],
        }
    }


def _pairing(pod: dict) -> tuple:
    """What pairs a server with its client (each holds every rail): the namespace and the node
    group."""
    labels = pod["metadata"].get("labels") or {}
    return (pod["metadata"]["namespace"], labels.get("gpudirect.rdma/node-group"))


def _role(pod: dict) -> str | None:
    return (pod["metadata"].get("labels") or {}).get("gpudirect.rdma/verify-role")


def _secrets(world: World, pod: dict) -> dict[str, str] | None:
    """The files of the pod's Secret volumes (decoded), or None when one of the Secrets is not
    there (a real kubelet then reports FailedMount and keeps the pod waiting)."""
    files = {}
    for volume in pod["spec"].get("volumes") or []:
        name = (volume.get("secret") or {}).get("secretName")
        if not name:
            continue
        try:
            secret = world.core.read_namespaced_secret(name, pod["metadata"]["namespace"])
        except ApiException:
            return None
        files.update({k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()})
    return files


def _networks(pod: dict) -> list[str]:
    """The networks the pod asks Multus for (k8s.v1.cni.cncf.io/networks), in order."""
    requested = (pod["metadata"].get("annotations") or {}).get(NETWORKS, "")
    return [n.strip() for n in requested.split(",") if n.strip()]


def _selects(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


class Pods:
    name = "pods"

    def __init__(self, gate: DelayGate):
        self.gate = gate
        self.logs = LogServer()
        self._addresses: dict[str, int] = {}

    def reconcile(self, world: World) -> None:
        nodes = {n["metadata"]["name"]: n for n in fake_nodes(world)}
        for node in nodes.values():
            self._point_at_log_server(world, node)
        pods = world.api_client.sanitize_for_serialization(
            world.core.list_pod_for_all_namespaces()
        )["items"]
        finished_clients = {
            _pairing(p)
            for p in pods
            if _env(p).get("ROLE") == "client"
            and (p.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        }
        running_workers = {}
        for p in pods:
            if _role(p) == "nccl-worker" and (p.get("status") or {}).get("phase") == "Running":
                running_workers.setdefault(_pairing(p), []).append(p)
        for pod in pods:
            if pod["spec"].get("nodeName") not in nodes:
                continue
            if pod["metadata"].get("deletionTimestamp"):
                # The kubelet stops the containers and removes the pod from the API server.
                world.core.delete_namespaced_pod(
                    pod["metadata"]["name"], pod["metadata"]["namespace"], grace_period_seconds=0
                )
                continue
            phase = (pod.get("status") or {}).get("phase")
            if phase in (None, "Pending"):
                self._start(world, pod, nodes[pod["spec"]["nodeName"]])
            elif phase == "Running":
                env = _env(pod)
                if _role(pod) == "nccl-launcher":
                    workers = running_workers.get(_pairing(pod), [])
                    if workers and self.gate.due(
                        pod["metadata"]["uid"], "run", world.knobs["delay_seconds"] + 1
                    ):
                        self._finish_launcher(world, pod, nodes, workers)
                    continue
                done = (
                    self.gate.due(pod["metadata"]["uid"], "run", world.knobs["delay_seconds"] + 1)
                    if env.get("ROLE") == "client"
                    else _pairing(pod) in finished_clients
                )
                if done and env.get("ROLE") in ("client", "server"):
                    self._finish(world, pod, nodes[pod["spec"]["nodeName"]], env)

    def _point_at_log_server(self, world: World, node: dict) -> None:
        status = node.get("status") or {}
        port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
        if port == self.logs.port:
            return
        world.core.patch_node_status(
            node["metadata"]["name"],
            {
                "status": {
                    # Only an IP: the API server would resolve a Hostname address through DNS.
                    "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                    "daemonEndpoints": {"kubeletEndpoint": {"Port": self.logs.port}},
                }
            },
        )

    def _address(self, world: World, namespace: str, network: str) -> tuple[str, dict]:
        nad = world.custom.get_namespaced_custom_object(
            "k8s.cni.cncf.io", "v1", namespace, "network-attachment-definitions", network
        )
        ipam = json.loads(nad["spec"]["config"]).get("ipam") or {}
        subnet = ipaddress.ip_interface(ipam.get("range") or "192.168.250.0/24").network
        key = f"{namespace}/{network}"
        self._addresses[key] = self._addresses.get(key, 9) + 1
        return str(
            list(subnet.hosts())[self._addresses[key] % max(subnet.num_addresses - 2, 1)]
        ), ipam

    def _start(self, world: World, pod: dict, node: dict) -> None:
        metadata = pod["metadata"]
        if _secrets(world, pod) is None:
            return  # FailedMount: the kubelet waits for the Secret
        requested = _networks(pod)
        if requested and NETWORK_STATUS not in (metadata.get("annotations") or {}):
            status = [
                {
                    "name": "ovn-kubernetes",
                    "interface": "eth0",
                    "ips": ["10.128.2.15"],
                    "default": True,
                    "dns": {},
                }
            ]
            for index, network in enumerate(requested, start=1):
                address, _nad = self._address(world, metadata["namespace"], network)
                status.append(
                    {
                        "name": f"{metadata['namespace']}/{network}",
                        "interface": f"net{index}",
                        "ips": [address],
                        "mac": "0a:58:c0:a8:02:0b",
                        "dns": {},
                    }
                )
            world.core.patch_namespaced_pod(
                metadata["name"],
                metadata["namespace"],
                {"metadata": {"annotations": {NETWORK_STATUS: json.dumps(status)}}},
            )
        stamp = now()
        world.core.patch_namespaced_pod_status(
            metadata["name"],
            metadata["namespace"],
            _pod_status(
                pod,
                "Running",
                {"running": {"startedAt": stamp}},
                stamp,
                podIP="10.128.2.15",
                hostIP="127.0.0.1",
                startTime=stamp,
            ),
        )

    @staticmethod
    def _mtu(world: World, namespace: str, network: str) -> int:
        """The MTU of the pod's interface on a network: its NetworkAttachmentDefinition's (a
        macvlan's), else the SR-IOV node policy's of its resource (the VFs'), else 1500."""
        try:
            nad = world.custom.get_namespaced_custom_object(
                "k8s.cni.cncf.io", "v1", namespace, "network-attachment-definitions", network
            )
        except ApiException:
            return 1500
        config = json.loads(nad["spec"]["config"])
        if config.get("mtu"):
            return int(config["mtu"])
        resource = (nad["metadata"].get("annotations") or {}).get(
            "k8s.v1.cni.cncf.io/resourceName", ""
        )
        if resource.startswith("openshift.io/"):
            policies = list_cluster(
                world, "sriovnetwork.openshift.io", "v1", "sriovnetworknodepolicies", reuse=True
            )
            for policy in policies:
                spec = policy.get("spec") or {}
                if spec.get("resourceName") == resource.split("/", 1)[1] and spec.get("mtu"):
                    return int(spec["mtu"])
        return 1500

    @staticmethod
    def _peermem(world: World) -> bool:
        """The GPU Operator loads nvidia_peermem when the ClusterPolicy enables driver.rdma."""
        return any(
            ((p.get("spec") or {}).get("driver") or {}).get("rdma", {}).get("enabled")
            for p in list_cluster(world, "nvidia.com", "v1", "clusterpolicies", reuse=True)
        )

    def _dns_names(self, world: World, namespace: str, workers: list[dict]) -> dict[str, dict]:
        """Each worker by the name cluster DNS gives it: <hostname>.<subdomain>, when a headless
        Service of the subdomain's name selects the pod."""
        services = {s.metadata.name: s for s in world.core.list_namespaced_service(namespace).items}
        named = {}
        for pod in workers:
            spec = pod["spec"]
            service = services.get(spec.get("subdomain") or "")
            if (
                service is not None
                and service.spec.cluster_ip == "None"
                and spec.get("hostname")
                and _selects(service.spec.selector or {}, pod["metadata"].get("labels") or {})
            ):
                named[f"{spec['hostname']}.{spec['subdomain']}"] = pod
        return named

    @staticmethod
    def _worker_facts(pod: dict, hardware: dict, peermem: bool) -> dict:
        """What NCCL would find in a worker pod on a node with hardware: its GPUs, its rails'
        RDMA devices (one per RDMA resource it asked for, when it is attached to as many
        networks), IPC_LOCK, GPUDirect."""
        container = pod["spec"]["containers"][0]
        limits = (container.get("resources") or {}).get("limits") or {}
        rdma = [r for r in limits if r != "nvidia.com/gpu"]
        networks = _networks(pod)
        capabilities = ((container.get("securityContext") or {}).get("capabilities") or {}).get(
            "add"
        ) or []
        nics = hardware.get("nics") or []
        dmabuf = (hardware.get("gpuModule") or "open") == "open"
        return {
            "node": pod["spec"]["nodeName"],
            "gpus": int(limits.get("nvidia.com/gpu", "0")),
            "rails": [f"mlx5_{i}" for i in range(min(len(rdma), len(networks)))],
            "ipc_lock": "IPC_LOCK" in capabilities,
            "gpudirect": (dmabuf or peermem)
            and all((n.get("gpuPath") or "PIX") in ("PIX", "PXB") for n in nics),
            "link_layer": "InfiniBand" if nics and nics[0]["linkType"] == "ib" else "Ethernet",
        }

    def _finish_launcher(
        self, world: World, pod: dict, nodes: dict[str, dict], workers: list[dict]
    ) -> None:
        """Run the NCCL launcher's script with the ssh and mpirun stand-ins (nccl_standin.py),
        which know the workers the cluster's DNS would resolve and what NCCL would find there."""
        keys = _secrets(world, pod) or {}
        peermem = self._peermem(world)
        named = self._dns_names(world, pod["metadata"]["namespace"], workers)
        facts = {
            name: self._worker_facts(p, hardware_of(nodes[p["spec"]["nodeName"]]), peermem)
            for name, p in named.items()
        }
        # The workers mount one Secret: the first one's says which key they all accept.
        accepted = (_secrets(world, next(iter(named.values()))) or {}) if named else {}
        layers = {f["link_layer"] for f in facts.values()}
        nccl = {
            "workers": facts,
            "authorized_key": accepted.get("ssh-publickey", ""),
            "link_layer": layers.pop() if len(layers) == 1 else "Ethernet",
            "gid_index": 3,
            "knobs": world.knobs.get("nccl", {}),
        }
        ran = run_pod_script(
            pod,
            hardware_of(nodes[pod["spec"]["nodeName"]]),
            [],
            {},
            keys=keys,
            nccl=nccl,
            peermem=peermem,
        )
        self._end(world, pod, ran)

    def _end(self, world: World, pod: dict, ran: dict[str, tuple[str, int]]) -> None:
        """End the pod with its containers' exit codes (testbed.run_pod_script); the kubelet's
        log endpoint serves what each printed."""
        metadata = pod["metadata"]
        for name, (output, _code) in ran.items():
            self.logs.logs[(metadata["namespace"], metadata["name"], name)] = output
        main = pod["spec"]["containers"][0]["name"]
        failed = any(code != 0 for _output, code in ran.values())
        stamp = now()
        world.core.patch_namespaced_pod_status(
            metadata["name"],
            metadata["namespace"],
            _pod_status(
                pod,
                "Failed" if failed else "Succeeded",
                _terminated(ran[main][1], stamp)
                if main in ran
                else {"waiting": {"reason": "PodInitializing"}},
                stamp,
                init_codes={name: code for name, (_output, code) in ran.items() if name != main},
            ),
        )

    def _finish(self, world: World, pod: dict, node: dict, env: dict) -> None:
        """Run the pod's script on the fake node (testbed.run_pod_script) and end the pod with
        its exit code; the kubelet's log endpoint serves what it printed."""
        metadata = pod["metadata"]
        statuses = {
            s.get("interface"): s
            for s in json.loads((metadata.get("annotations") or {}).get(NETWORK_STATUS, "[]"))
        }
        networks = _networks(pod)
        rails = [
            {
                "address": ((statuses.get(f"net{n}") or {}).get("ips") or ["(no address)"])[0],
                "mtu": self._mtu(world, metadata["namespace"], networks[n - 1])
                if n <= len(networks)
                else 1500,
            }
            for n in range(1, int(env.get("RAILS", "1")) + 1)
        ]
        node_index = sum(node["metadata"]["name"].encode()) % 256
        ran = run_pod_script(
            pod,
            hardware_of(node),
            rails,
            world.knobs.get("perftest", {}),
            node_index,
            peermem=self._peermem(world),
            ibverbs_in_gpu_pods=bool(world.knobs["gpu_operator"].get("ibverbs_in_gpu_pods")),
        )
        self._end(world, pod, ran)
