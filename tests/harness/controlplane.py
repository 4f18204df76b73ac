"""A real local control plane: etcd, kube-apiserver and kube-controller-manager on loopback,
upstream CRDs loaded.

etcd and kube-apiserver are started the way controller-runtime's envtest starts them (RBAC on,
client-certificate admin in system:masters, service-account key pair, the ServiceAccount
admission plugin off), plus an audit log so tests can count the write requests of a run.
kube-controller-manager runs only the namespace and garbage-collector controllers, so deleting a
Namespace completes and ownerReferences are garbage-collected as on a real cluster; every other
controller a test needs is played by the simulator (tests/simulator).

The CRDs are the upstream files in ../shared/crds (the Network Operator's of one release line:
NETWORK_OPERATOR_CRDS), plus three written here, in tests/harness/crds/: OpenShift's
ClusterVersion and Infrastructure (config.openshift.io/v1), which a real OpenShift cluster serves
from its own API and the collection's preflight reads, and the GPU Operator 26.7's GPUCluster,
whose CRD file ../shared lacks. These are minimal CRDs of our own, not upstream copies. And the
real prometheus-operator CRDs of the monitoring kinds the collection writes (MONITORING_CRDS:
PrometheusRule, ServiceMonitor), which OpenShift serves: fetched from the Go module proxy into
the cache (hack/build-monitoring-tools.sh crds).

Everything lives in one state directory (default: .envtest/ at the repository root):
kubeconfig (the admin a user or playbook would use), harness.kubeconfig (test set-up),
simulator.kubeconfig, controller-manager.kubeconfig, audit.log, the logs of each process, pki/,
etcd/ and state.json, which records the processes started so that stop() ends exactly those.

The CRDs reach a plane once per cache: the first start creates them, then stops kube-apiserver
and etcd, keeps a copy of etcd's data in the cache (etcd_templates_dir(), one per set of
binaries and CRD files) and starts both again; every later start copies that data into its state
directory before etcd starts, so the API server reads the CRDs as stored instead of taking in 45
creates (about 2.5 s of its CPU a start fewer, and no CRD sent by the harness).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.harness import yaml_files
from tests.harness.certs import CertificateAuthority, KeyPair, write_service_account_keys

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_STATE_DIR = REPO_ROOT / ".envtest"
BUILD_SCRIPT = REPO_ROOT / "hack" / "build-control-plane.sh"
HARNESS_CRDS = Path(__file__).resolve().parent / "crds"

ADMIN_USER = "gpudirect-rdma-admin"
HARNESS_USER = "gpudirect-rdma-harness"
SIMULATOR_USER = "gpudirect-rdma-simulator"
CONTROLLER_MANAGER_USER = "gpudirect-rdma-controller-manager"
MASTERS = "system:masters"

_AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        # The server's own loopback traffic and health probes say nothing about a run.
        {"level": "None", "users": ["system:apiserver"]},
        {"level": "None", "nonResourceURLs": ["/healthz*", "/readyz*", "/livez*"]},
        # The reads of the controller manager, the simulator (its watches' lists) and
        # the tests' own set-up; their writes are kept. Without this the log grows by about
        # 10 MB a minute.
        {
            "level": "None",
            "users": [CONTROLLER_MANAGER_USER, SIMULATOR_USER, HARNESS_USER],
            "verbs": ["get", "list", "watch"],
        },
        {"level": "Metadata"},
    ],
}


class ControlPlaneError(RuntimeError):
    """The control plane could not be built, started, or stopped as asked."""


class PortTaken(ControlPlaneError):
    """A port chosen free was taken before the process bound it; everything was stopped."""

    def __init__(self, process: str, message: str):
        super().__init__(message)
        self.process = process


def shared_dir() -> Path:
    """The upstream reference files: $GPUDIRECT_RDMA_SHARED, else ../shared beside the repo."""
    configured = os.environ.get("GPUDIRECT_RDMA_SHARED")
    path = Path(configured) if configured else REPO_ROOT.parent / "shared"
    if not (path / "crds").is_dir():
        raise ControlPlaneError(
            f"expected the upstream CRDs in {path / 'crds'} (set GPUDIRECT_RDMA_SHARED to the "
            "folder that holds crds/ and reference/); found no such folder"
        )
    return path.resolve()


# The Network Operator's CRDs by release line: crds/network-operator holds 26.4's (v26.4.1, which
# the releases before it also take: their fields are a subset), crds/alternatives/ the newer ones.
# A release line's files replace the same-named files of every other source (the 26.7 set carries
# the NIC Configuration Operator's CRDs too).
NETWORK_OPERATOR_CRDS = {"26.4": None, "26.7": "alternatives/network-operator-v26.7"}
LATEST_NETWORK_OPERATOR_CRDS = "26.7"


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split("-")[0].split(".")[:2]
    return int(major), int(minor)


def network_operator_crd_line(release: str) -> str:
    """The release line of NETWORK_OPERATOR_CRDS whose CRDs a Network Operator release has."""
    newest_first = sorted(NETWORK_OPERATOR_CRDS, key=_minor, reverse=True)
    return next(
        (line for line in newest_first if _minor(line) <= _minor(release)), newest_first[-1]
    )


def crd_files(shared: Path | None = None, network_operator: str = LATEST_NETWORK_OPERATOR_CRDS):
    """Every CRD file in crds/<source>/, leaving out crds/alternatives/, with the Network
    Operator's of release line network_operator (NETWORK_OPERATOR_CRDS) in place of 26.4's."""
    root = (shared or shared_dir()) / "crds"
    files = {p.name: p for p in root.glob("*/*.yaml") if p.parent.name != "alternatives"}
    replacement = NETWORK_OPERATOR_CRDS[network_operator]
    if replacement:
        files.update({p.name: p for p in (root / replacement).glob("*.yaml")})
    return sorted(files.values())


def harness_crd_files() -> list[Path]:
    """The CRDs written here (tests/harness/crds/): kinds OpenShift serves that ../shared lacks."""
    return sorted(HARNESS_CRDS.glob("*.yaml"))


# The prometheus-operator kinds of OpenShift monitoring that the collection's monitoring writes
# (the others are large, and each CRD served costs the API server at every start).
MONITORING_CRDS = ("prometheusrules", "servicemonitors")


def monitoring_crd_files() -> list[Path]:
    """The real prometheus-operator CRDs of MONITORING_CRDS, which OpenShift serves and
    ../shared lacks: from the Go module proxy (hack/build-monitoring-tools.sh crds, a download
    kept in the cache)."""
    fetched = subprocess.run(
        ["bash", str(REPO_ROOT / "hack" / "build-monitoring-tools.sh"), "crds"],
        capture_output=True,
        text=True,
        check=False,
    )
    if fetched.returncode != 0 or not fetched.stdout.split():
        raise ControlPlaneError(
            "hack/build-monitoring-tools.sh crds could not fetch the prometheus-operator CRDs: "
            + (fetched.stderr.strip()[-2000:] or f"exit {fetched.returncode}")
        )
    folder = Path(fetched.stdout.split()[-1])
    return [folder / f"monitoring.coreos.com_{plural}.yaml" for plural in MONITORING_CRDS]


# Raised when what a template holds changes other than through the binaries or the CRD files.
ETCD_TEMPLATE_FORMAT = "1"
# The templates of other binaries or CRD sets kept beside the newest (other clones, branches).
ETCD_TEMPLATES_KEPT = 4


def etcd_templates_dir() -> Path:
    """Where the etcd data of planes with their CRDs taken in are kept (as the build script's
    cache: GPUDIRECT_RDMA_CACHE, else XDG_CACHE_HOME or ~/.cache, then gpudirect-rdma)."""
    root = os.environ.get("GPUDIRECT_RDMA_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpudirect-rdma"
    )
    return Path(root) / "control-plane" / "etcd-templates"


def etcd_template_key(binaries: Binaries, crds: list[Path]) -> str:
    """The template's name: the binaries (where, how big, when written) and every CRD file."""
    digest = hashlib.sha256(ETCD_TEMPLATE_FORMAT.encode() + b"\0")
    for binary in (binaries.directory / "etcd", binaries.directory / "kube-apiserver"):
        found = binary.stat()
        digest.update(f"{binary}:{found.st_size}:{found.st_mtime_ns}\0".encode())
    for path in crds:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def _prune_etcd_templates(folder: Path, keep: Path) -> None:
    """Leave keep and the ETCD_TEMPLATES_KEPT newest others; a copy left half-made by a start
    that was killed (a dot name) goes once it is an hour old."""
    templates = sorted(
        (p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".") and p != keep),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    stale = [
        p
        for p in folder.iterdir()
        if p.is_dir() and p.name.startswith(".") and time.time() - p.stat().st_mtime > 3600
    ]
    for old in [*templates[ETCD_TEMPLATES_KEPT:], *stale]:
        shutil.rmtree(old, ignore_errors=True)


@dataclass(frozen=True)
class Binaries:
    directory: Path  # kube-apiserver, etcd and kubectl
    controller_manager: Path  # beside them, or in the cache when KUBEBUILDER_ASSETS has none


def find_binaries() -> Binaries:
    """The binaries from KUBEBUILDER_ASSETS, the cache, or a build: the build script prints the
    path of kube-controller-manager, then the directory of the others, as its last two lines."""
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True, check=False
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or len(lines) < 2:
        raise ControlPlaneError(
            f"{BUILD_SCRIPT} exited {result.returncode}; see its messages above"
        )
    return Binaries(directory=Path(lines[-1]), controller_manager=Path(lines[-2]))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_time(pid: int) -> str | None:
    """The kernel's start time of pid (field 22 of /proc/<pid>/stat), None when it is gone: a
    pid with the same number but another start time is another process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


@dataclass(frozen=True)
class Health:
    """What a state directory holds: `absent` (nothing recorded), `starting` (a live process is
    starting it now), `running` (started to the end, every process alive) or `partial` (a start
    that did not finish, or a process that has gone); detail says which."""

    state: str
    detail: str


@dataclass(frozen=True)
class Process:
    name: str
    pid: int
    executable: str

    def alive(self) -> bool:
        """True while this pid still runs the executable it was started with."""
        try:
            cmdline = Path(f"/proc/{self.pid}/cmdline").read_bytes()
        except OSError:
            return False
        return cmdline.split(b"\0", 1)[0].decode(errors="replace") == self.executable


class ControlPlane:
    def __init__(self, state_dir: Path = DEFAULT_STATE_DIR):
        self.state_dir = Path(state_dir).resolve()
        self.pki = self.state_dir / "pki"
        self.kubeconfig = self.state_dir / "kubeconfig"
        self.harness_kubeconfig = self.state_dir / "harness.kubeconfig"
        self.simulator_kubeconfig = self.state_dir / "simulator.kubeconfig"
        self.controller_manager_kubeconfig = self.state_dir / "controller-manager.kubeconfig"
        self.audit_log = self.state_dir / "audit.log"
        self.state_file = self.state_dir / "state.json"
        # Held while this start makes the etcd template of its binaries and CRDs (_etcd_data).
        self._template_lock = None

    # -- state -----------------------------------------------------------------------------
    def _read_state(self) -> dict:
        if not self.state_file.exists():
            return {"processes": []}
        try:
            return json.loads(self.state_file.read_text())
        except ValueError as error:
            raise ControlPlaneError(
                f"{self.state_file} is not readable JSON ({error}); remove it after stopping "
                "what still runs from this directory"
            ) from error

    def _write_state(self, state: dict) -> None:
        # A new file renamed into place: a reader never sees half of it.
        partial = self.state_file.with_suffix(".json.partial")
        partial.write_text(json.dumps(state, indent=2) + "\n")
        partial.replace(self.state_file)

    def processes(self) -> list[Process]:
        return [Process(**entry) for entry in self._read_state()["processes"]]

    def _record(self, process: Process, **extra) -> None:
        state = self._read_state()
        state["processes"].append(process.__dict__)
        state.update(extra)
        self._write_state(state)

    @property
    def server(self) -> str:
        return self._read_state()["server"]

    @property
    def exporters(self) -> str | None:
        """Where the simulator serves the exporters' series (tests/simulator/exporters.py)."""
        return self._read_state().get("exporters")

    def health(self) -> Health:
        state = self._read_state()
        processes = [Process(**entry) for entry in state["processes"]]
        gone = [p for p in processes if not p.alive()]
        if not state.get("ready"):
            starter = state.get("starter") or {}
            if starter and _start_time(starter["pid"]) == starter["start_time"]:
                return Health("starting", f"process {starter['pid']} is starting it")
            if not processes:
                return Health("absent", f"no control plane recorded in {self.state_dir}")
            alive = [p.name for p in processes if p not in gone]
            return Health(
                "partial",
                "a start that did not finish left "
                + (", ".join(alive) + " running" if alive else "its record behind"),
            )
        if gone:
            return Health("partial", ", ".join(f"{p.name} (pid {p.pid})" for p in gone) + " gone")
        return Health("running", f"running at {state['server']}")

    def running(self) -> bool:
        return self.health().state == "running"

    # -- start -----------------------------------------------------------------------------
    def _spawn(self, name: str, argv: list[str], env: dict | None = None) -> Process:
        log = open(self.state_dir / f"{name}.log", "wb")  # noqa: SIM115 - handed to the child
        child = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
            cwd=REPO_ROOT,
        )
        log.close()
        process = Process(name=name, pid=child.pid, executable=argv[0])
        # Recorded at once, so a start that fails from here on stops it too.
        self._record(process, commands={**self._read_state().get("commands", {}), name: argv})
        # Until the child has exec'd, /proc/<pid>/cmdline still shows this Python process.
        deadline = time.monotonic() + 10
        while not process.alive() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        return process

    def start(
        self,
        timeout: float = 180.0,
        attempts: int = 3,
        simulator: bool = False,
        simulator_args: list[str] | None = None,
    ) -> ControlPlane:
        """Start etcd, kube-apiserver and kube-controller-manager on free ports, then the
        simulator when asked. The binaries are found (or built) first; timeout counts from
        then. A start that fails stops everything it started and leaves no record behind. A
        partial control plane found in the state directory (a start that was killed, a process
        that died) is stopped first. A port is free when chosen but may be taken before the
        process binds it (another run on the same machine): then it starts again on new ports."""
        for attempt in range(1, attempts + 1):
            try:
                return self._start_once(timeout, simulator, simulator_args or [])
            except PortTaken as error:
                if attempt == attempts:
                    raise
                print(
                    f"control plane: {error.process} found its port taken; "
                    "starting again on new ports"
                )
        raise AssertionError("unreachable")

    def _port_taken_by(self) -> str | None:
        for process in self.processes():
            log = self.state_dir / f"{process.name}.log"
            if log.exists() and b"address already in use" in log.read_bytes():
                return process.name
        return None

    def _start_once(
        self, timeout: float, simulator: bool, simulator_args: list[str]
    ) -> ControlPlane:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        health = self.health()
        if health.state == "running":
            raise ControlPlaneError(
                f"a control plane already runs from {self.state_dir} (pids "
                f"{[p.pid for p in self.processes()]}); stop it first (make cluster-down)"
            )
        if health.state == "starting":
            raise ControlPlaneError(
                f"{health.detail} from {self.state_dir}; wait for it or stop it (make cluster-down)"
            )
        if health.state == "partial":
            print(f"control plane: {health.detail}; stopping that and starting again")
        self.stop()
        shared = shared_dir()
        binaries = find_binaries()
        # The readiness clock starts now: a build on a cold cache can take longer than timeout.
        started = time.monotonic()
        me = {"pid": os.getpid(), "start_time": _start_time(os.getpid())}
        self._write_state({"processes": [], "starter": me, "ready": False})
        try:
            self._start_processes(binaries, shared, started + timeout)
            if simulator:
                self._start_simulator(simulator_args)
        except BaseException as error:
            self._release_template_lock()
            taken = self._port_taken_by() if isinstance(error, ControlPlaneError) else None
            self.stop()
            if taken is not None:
                raise PortTaken(taken, str(error)) from error
            if isinstance(error, Exception) and not isinstance(error, ControlPlaneError):
                raise ControlPlaneError(
                    f"the start failed ({type(error).__name__}: {_first_line(error)}) and was "
                    f"undone; the processes' logs are in {self.state_dir}"
                ) from error
            raise
        self._update_state(ready=True, ready_seconds=round(time.monotonic() - started, 2))
        return self

    def _start_processes(self, binaries: Binaries, shared: Path, deadline: float) -> None:
        (self.state_dir / ".gitignore").write_text("*\n")
        for leftover in ("etcd", "audit.log"):
            path = self.state_dir / leftover
            if path.is_dir():
                subprocess.run(["rm", "-rf", str(path)], check=True)
            elif path.exists():
                path.unlink()

        ca = CertificateAuthority.create(self.pki)
        serving = ca.issue("apiserver", "kube-apiserver", server=True)
        sa_keys = write_service_account_keys(self.pki)
        policy = self.state_dir / "audit-policy.yaml"
        policy.write_text(yaml.safe_dump(_AUDIT_POLICY, sort_keys=False))

        crds = crd_files(shared) + harness_crd_files() + monitoring_crd_files()
        template = self._etcd_data(crds, binaries, deadline)
        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        peer_url = f"http://127.0.0.1:{peer_port}"
        self._update_state(
            server=f"https://127.0.0.1:{api_port}",
            binaries=str(binaries.directory),
            controller_manager=str(binaries.controller_manager),
        )
        self._spawn(
            "etcd",
            [
                str(binaries.directory / "etcd"),
                f"--data-dir={self.state_dir / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=default={peer_url}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )
        self._wait_http(f"{etcd_url}/health", None, deadline, "etcd")

        self._spawn(
            "kube-apiserver",
            [
                str(binaries.directory / "kube-apiserver"),
                f"--etcd-servers={etcd_url}",
                "--advertise-address=127.0.0.1",
                "--bind-address=127.0.0.1",
                f"--secure-port={api_port}",
                f"--cert-dir={self.pki}",
                f"--tls-cert-file={serving.cert}",
                f"--tls-private-key-file={serving.key}",
                f"--client-ca-file={ca.cert_path}",
                "--authorization-mode=RBAC",
                "--allow-privileged=true",
                "--service-cluster-ip-range=10.0.0.0/24",
                f"--service-account-key-file={sa_keys.cert}",
                f"--service-account-signing-key-file={sa_keys.key}",
                f"--service-account-issuer=https://127.0.0.1:{api_port}",
                "--disable-admission-plugins=ServiceAccount",
                f"--audit-policy-file={policy}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-mode=blocking",
                # Never rotate (0 would mean the default, 100 MB): AuditLog reads one file.
                "--audit-log-maxsize=1000000",
                "--v=0",
            ],
        )
        self.write_kubeconfig(self.kubeconfig, ADMIN_USER, [MASTERS])
        harness_cert = self.write_kubeconfig(self.harness_kubeconfig, HARNESS_USER, [MASTERS])
        self.write_kubeconfig(self.simulator_kubeconfig, SIMULATOR_USER, [MASTERS])
        self.write_kubeconfig(
            self.controller_manager_kubeconfig, CONTROLLER_MANAGER_USER, [MASTERS]
        )
        self._wait_http(f"{self.server}/readyz", harness_cert, deadline, "kube-apiserver")
        if template is None:
            wait_for_crds(self.harness_kubeconfig, crd_names(crds), deadline)
        else:
            load_crds(self.harness_kubeconfig, crds, deadline=deadline)
            self._keep_etcd_template(template, deadline)
        # After the CRDs, so the garbage collector's first discovery already sees their kinds.
        self._start_controller_manager(binaries.controller_manager, deadline=deadline)

    def _etcd_data(self, crds: list[Path], binaries: Binaries, deadline: float):
        """Copy the template of these binaries and CRDs into etcd/ and return None; or, when there
        is none yet, return the path this start keeps one at, holding the template's lock (the
        starts beside it wait for it instead of each making one)."""
        templates = etcd_templates_dir()
        templates.mkdir(parents=True, exist_ok=True)
        template = templates / etcd_template_key(binaries, crds)
        lock = open(templates / f"{template.name}.lock", "w")  # noqa: SIM115 - held past return
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    lock.close()
                    raise ControlPlaneError(
                        f"another start still makes the etcd template {template}"
                    ) from None
                time.sleep(0.2)
        if template.is_dir():
            lock.close()
            shutil.copytree(template, self.state_dir / "etcd")
            os.utime(template)  # the newest used: pruned last
            return None
        self._template_lock = lock
        return template

    def _release_template_lock(self) -> None:
        if self._template_lock is not None:
            self._template_lock.close()
            self._template_lock = None

    def _keep_etcd_template(self, template: Path, deadline: float) -> None:
        """Stop kube-apiserver and then etcd (its data whole on disk), keep a copy of that data
        as the template, and start both again on it."""
        try:
            self.kill("kube-apiserver")
            self._terminate("etcd")
            partial = template.with_name(f".{template.name}.{os.getpid()}")
            shutil.copytree(self.state_dir / "etcd", partial)
            try:
                partial.rename(template)
            except OSError:
                if not template.is_dir():
                    raise
                # Kept first by a start on another machine that shares this cache.
                shutil.rmtree(partial)
            _prune_etcd_templates(template.parent, template)
        finally:
            self._release_template_lock()
        # Both before any wait: a wait fails when a recorded process is dead. The API server
        # waits for etcd by itself.
        self.restart("etcd")
        self.restart("kube-apiserver", timeout=max(deadline - time.monotonic(), 1))
        wait_for_crds(self.harness_kubeconfig, [], deadline)

    def _start_controller_manager(self, executable: Path, deadline: float) -> None:
        """Start kube-controller-manager with the namespace and garbage-collector controllers and
        return once both have done their work once."""
        ca = CertificateAuthority.load(self.pki)
        serving = ca.issue("controller-manager", "kube-controller-manager", server=True)
        port = free_port()
        kubeconfig = self.controller_manager_kubeconfig
        self._spawn(
            "kube-controller-manager",
            [
                str(executable),
                f"--kubeconfig={kubeconfig}",
                # Its HTTPS endpoint authenticates client certificates of this CA and asks the
                # API server about tokens and permissions. No lookup of the front-proxy CA: the
                # API server has none, and the controller manager would keep reporting it.
                f"--authentication-kubeconfig={kubeconfig}",
                "--authentication-skip-lookup",
                f"--client-ca-file={ca.cert_path}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--controllers=namespace,garbagecollector",
                "--leader-elect=false",
                "--use-service-account-credentials=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--tls-cert-file={serving.cert}",
                f"--tls-private-key-file={serving.key}",
                "--v=0",
            ],
        )
        self._wait_http(
            f"https://127.0.0.1:{port}/healthz", None, deadline, "kube-controller-manager"
        )
        self._probe_controllers(deadline)

    def _probe_controllers(self, deadline: float) -> None:
        """Both controllers wait for their informers before they act; until they do, tests would
        wait on them instead. So: a ConfigMap owned by another must be collected once its owner
        is deleted (garbage collector), then their Namespace must go (namespace controller)."""
        from kubernetes import client
        from kubernetes.client.rest import ApiException

        core = client.CoreV1Api(api_client(self.harness_kubeconfig))

        def gone(read, *args) -> bool:
            try:
                read(*args)
            except ApiException as error:
                if error.status == 404:
                    return True
                raise
            return False

        namespace = f"gpudirect-rdma-probe-{uuid.uuid4().hex[:8]}"
        core.create_namespace({"metadata": {"name": namespace}})
        owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
        reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner"}
        reference["uid"] = owner.metadata.uid
        dependent = {"metadata": {"name": "dependent", "ownerReferences": [reference]}}
        core.create_namespaced_config_map(namespace, dependent)
        core.delete_namespaced_config_map("owner", namespace)
        self._wait_until(
            lambda: gone(core.read_namespaced_config_map, "dependent", namespace),
            f"the garbage collector to delete configmap {namespace}/dependent",
            deadline,
        )
        core.delete_namespace(namespace)
        self._wait_until(
            lambda: gone(core.read_namespace, namespace),
            f"the namespace controller to finish deleting namespace {namespace}",
            deadline,
        )

    def _wait_until(self, done, what: str, deadline: float) -> None:
        while not done():
            self._check_alive(what)
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"timed out waiting for {what}")
            time.sleep(0.1)

    def _check_alive(self, what: str) -> None:
        for process in self.processes():
            if not process.alive():
                raise ControlPlaneError(
                    f"{process.name} (pid {process.pid}) exited while waiting for {what}; "
                    f"see {self.state_dir / (process.name + '.log')}"
                )

    def _update_state(self, **values) -> None:
        state = self._read_state()
        state.update(values)
        self._write_state(state)

    def _wait_http(self, url: str, client_cert: KeyPair | None, deadline: float, what: str) -> None:
        context = None
        if url.startswith("https:"):
            context = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
            if client_cert is not None:
                context.load_cert_chain(client_cert.cert, client_cert.key)
        last_error = "no answer yet"
        while True:
            self._check_alive(what)
            try:
                with urllib.request.urlopen(url, context=context, timeout=2) as answer:  # noqa: S310
                    if answer.status == 200:
                        return
                    last_error = f"HTTP {answer.status}"
            except (urllib.error.URLError, OSError) as error:
                last_error = str(error)
            # Asked at least once, however late the deadline came.
            if time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        raise ControlPlaneError(
            f"{what} not ready at {url}: {last_error}; see {self.state_dir / (what + '.log')}"
        )

    def write_kubeconfig(self, path: Path, user: str, groups: list[str]) -> KeyPair:
        """Issue a client certificate for user in groups, write a kubeconfig that uses it at
        path, and return the certificate's key pair."""
        ca = CertificateAuthority.load(self.pki)
        pair = ca.issue(f"client-{user}", user, organizations=tuple(groups))
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "gpudirect-rdma-local",
                    "cluster": {"server": self.server, "certificate-authority": str(ca.cert_path)},
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {"client-certificate": str(pair.cert), "client-key": str(pair.key)},
                }
            ],
            "contexts": [
                {
                    "name": "gpudirect-rdma-local",
                    "context": {"cluster": "gpudirect-rdma-local", "user": user},
                }
            ],
            "current-context": "gpudirect-rdma-local",
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        path.chmod(0o600)
        return pair

    # -- extra processes (the simulator) ---------------------------------------------------
    def _start_simulator(self, extra_args: list[str], timeout: float = 30.0) -> Process:
        """Start python -m tests.simulator and wait for its first whole tick (it writes
        simulator.ready then): a test's first playbook finds the CatalogSources READY, the
        MachineConfigPools and the ClusterVersion."""
        # The Network Operator's policy webhooks are served by the simulator: the API server
        # calls them once the simulated OLM has registered them for the installed CSV.
        webhook = CertificateAuthority.load(self.pki).issue("webhook", "simulator", server=True)
        ready = self.state_dir / "simulator.ready"
        ready.unlink(missing_ok=True)
        exporters = free_port()
        self._update_state(exporters=f"http://127.0.0.1:{exporters}")
        process = self._spawn(
            "simulator",
            [
                sys.executable,
                "-m",
                "tests.simulator",
                "--kubeconfig",
                str(self.simulator_kubeconfig),
                f"--webhook-port={free_port()}",
                f"--webhook-cert={webhook.cert}",
                f"--webhook-key={webhook.key}",
                f"--webhook-ca={self.pki / 'ca.crt'}",
                f"--ready-file={ready}",
                f"--exporters-port={exporters}",
                *extra_args,
            ],
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not process.alive():
                log = self.state_dir / "simulator.log"
                raise ControlPlaneError(f"the simulator (pid {process.pid}) exited; see {log}")
            if ready.exists():
                return process
            time.sleep(0.05)
        raise ControlPlaneError(
            f"the simulator did not finish its first tick within {timeout}s; see "
            f"{self.state_dir / 'simulator.log'}"
        )

    # -- faults ----------------------------------------------------------------------------
    def kill(self, name: str) -> Process:
        """SIGKILL the one recorded process called name (no clean shutdown: a crash) and wait
        until it is gone; it stays in the state, dead, until restart(name)."""
        process = self._process(name)
        if process.alive():
            os.kill(process.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while process.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        if process.alive():
            raise ControlPlaneError(f"{name} (pid {process.pid}) still runs after SIGKILL")
        return process

    @contextlib.contextmanager
    def frozen(self, name: str):
        """The recorded process called name stopped (SIGSTOP: alive, its sockets open, answering
        nothing, as a hung API server) for the block, and continued (SIGCONT) after it."""
        process = self._process(name)
        os.kill(process.pid, signal.SIGSTOP)
        try:
            yield process
        finally:
            os.kill(process.pid, signal.SIGCONT)

    def restart(self, name: str, timeout: float = 60.0) -> Process:
        """Start the process called name again with the argv it was started with (same ports,
        same etcd data, same certificates) after killing it if it still runs; for
        kube-apiserver, return once it answers /readyz."""
        self.kill(name)
        state = self._read_state()
        argv = state.get("commands", {}).get(name)
        if argv is None:
            raise ControlPlaneError(f"no command recorded for {name} in {self.state_file}")
        state["processes"] = [p for p in state["processes"] if p["name"] != name]
        self._write_state(state)
        log = self.state_dir / f"{name}.log"
        if log.exists():  # keep what the killed process wrote: _spawn starts a new log
            log.rename(log.with_name(f"{name}.log.{time.strftime('%H%M%S')}"))
        process = self._spawn(name, argv)
        if name == "kube-apiserver":
            ca = CertificateAuthority.load(self.pki)
            pair = ca.issue("client-restart-probe", HARNESS_USER, organizations=(MASTERS,))
            self._wait_http(
                f"{self.server}/readyz", pair, time.monotonic() + timeout, "kube-apiserver"
            )
        return process

    def _terminate(self, name: str, timeout: float = 20.0) -> None:
        """SIGTERM the recorded process called name and wait until it is gone (SIGKILL after
        timeout); it stays in the state, dead, until restart(name)."""
        _end(self._process(name), timeout)

    def _process(self, name: str) -> Process:
        found = [p for p in self.processes() if p.name == name]
        if not found:
            raise ControlPlaneError(
                f"no process called {name} recorded in {self.state_file}; recorded: "
                + ", ".join(p.name for p in self.processes())
            )
        return found[-1]

    # -- stop ------------------------------------------------------------------------------
    def stop(self, timeout: float = 20.0) -> list[Process]:
        """Stop the processes this state directory recorded, newest first; return them."""
        stopped = []
        try:
            recorded = self.processes()
        except ControlPlaneError as error:
            print(f"control plane: {error}; nothing recorded can be stopped", file=sys.stderr)
            recorded = []
        for process in reversed(recorded):
            if process.alive():
                _end(process, timeout)
                stopped.append(process)
        if self.state_file.exists():
            self.state_file.unlink()
        return stopped


def _end(process: Process, timeout: float) -> None:
    """SIGTERM process and wait until it is gone; SIGKILL after timeout, and wait again."""
    for sent, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        if not process.alive():
            return
        os.kill(process.pid, sent)
        deadline = time.monotonic() + wait
        while process.alive() and time.monotonic() < deadline:
            time.sleep(0.05)


@contextlib.contextmanager
def started(state_dir: Path, simulator: bool = True):
    """A control plane (with the simulator unless told not) for the length of a with-block."""
    plane = ControlPlane(state_dir)
    plane.start(simulator=simulator)
    try:
        yield plane
    finally:
        plane.stop()


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else "no message"


def api_client(kubeconfig: Path):
    """A kubernetes.client.ApiClient for one kubeconfig (no global configuration touched)."""
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    return client.ApiClient(configuration)


def _crd_documents(files: list[Path]):
    """(path, CRD) for every CRD in files."""
    for path in files:
        for document in yaml_files.load_all(path.read_text()):
            if document:
                yield path, document


def crd_names(files: list[Path]) -> list[str]:
    """The name of every CRD in files."""
    return [document["metadata"]["name"] for _path, document in _crd_documents(files)]


def load_crds(kubeconfig: Path, files: list[Path], deadline: float) -> None:
    """Create every CRD in files and wait until each is Established and its kind listable."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    api = client.ApiextensionsV1Api(api_client(kubeconfig))
    names = []
    for path, document in _crd_documents(files):
        names.append(document["metadata"]["name"])
        try:
            api.create_custom_resource_definition(document, _preload_content=False)
        except ApiException as error:
            if error.status != 409:
                raise ControlPlaneError(
                    f"the server refused the CRD in {path}: {error.body}"
                ) from error
    wait_for_crds(kubeconfig, names, deadline)


def wait_for_crds(kubeconfig: Path, names: list[str], deadline: float) -> None:
    """Wait until every CRD of names is Established and every CRD's kind answers a list."""
    from kubernetes import client

    api = client.ApiextensionsV1Api(api_client(kubeconfig))
    pending = set(names)
    while pending and time.monotonic() < deadline:
        for crd in api.list_custom_resource_definition().items:
            conditions = {c.type: c.status for c in (crd.status.conditions or [])}
            if conditions.get("Established") == "True":
                pending.discard(crd.metadata.name)
        if pending:
            time.sleep(0.2)
    if pending:
        raise ControlPlaneError(f"CRDs not Established in time: {sorted(pending)}")
    _wait_for_watch_caches(kubeconfig, api, deadline)


def use_network_operator_crds(kubeconfig: Path, line: str, shared: Path | None = None) -> list:
    """Replace, on a running control plane, the Network Operator's CRDs with those of release
    line `line` (NETWORK_OPERATOR_CRDS), as an operator upgrade or downgrade replaces its CRDs;
    return the names of the CRDs replaced. Objects stay; the server judges every later write,
    and prunes what it reads, by the new schemas."""
    from kubernetes import client

    root = (shared or shared_dir()) / "crds"
    folders = ["network-operator", *filter(None, NETWORK_OPERATOR_CRDS.values())]
    differing = {path.name for folder in folders for path in (root / folder).glob("*.yaml")}
    api = client.ApiextensionsV1Api(api_client(kubeconfig))
    names = []
    for path in crd_files(shared, line):
        if path.name not in differing:
            continue
        document = yaml_files.load(path.read_text())
        name = document["metadata"]["name"]
        document["metadata"]["resourceVersion"] = api.read_custom_resource_definition(
            name
        ).metadata.resource_version
        api.replace_custom_resource_definition(name, document)
        names.append(name)
    time.sleep(1.0)  # the server serves a changed schema shortly after the update, not at once
    return names


def _wait_for_watch_caches(kubeconfig: Path, api, deadline: float) -> None:
    """List every custom resource once. Until a new CRD's watch cache is initialised the server
    answers lists with 429 "storage is (re)initializing" (the client then sleeps a second per
    request); a control plane that does that is not ready for tests yet."""
    from concurrent.futures import ThreadPoolExecutor

    from kubernetes import client

    custom = client.CustomObjectsApi(api_client(kubeconfig))
    kinds = []
    for crd in api.list_custom_resource_definition().items:
        version = next(v.name for v in crd.spec.versions if v.storage)
        kinds.append((crd.spec.group, version, crd.spec.names.plural))

    def list_once(kind):
        while time.monotonic() < deadline:
            try:
                custom.list_cluster_custom_object(*kind, limit=1)
                return
            except client.rest.ApiException as error:
                if error.status != 429:
                    raise
                time.sleep(0.1)
        raise ControlPlaneError(f"{kind} still not listable (429) when the deadline passed")

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(list_once, kinds))
