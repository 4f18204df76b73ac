"""What a verification pod's script finds on a fake node: the simulator runs the pod's own
script (the command of its container, unchanged) in a scratch folder that stands in for the
node and the pod. Only what the script reads of the machine is made up:

- a sysfs tree (SYSFS): per attached network netN an RDMA device mlx5_<N-1> of the node's
  N-th NIC, its port's link layer, state (ACTIVE unless the NIC's linkState says otherwise) and
  rate (the NIC's rateGbps, `200 Gb/sec (4X HDR)` by default), its GID table (on Ethernet the
  interface's address as a RoCE v2 GID at index 3, as on RHCOS with one address; on InfiniBand
  port GID 0 taken from the interface's IPoIB hardware address), the interface's MTU (its
  NetworkAttachmentDefinition's), and a PCI tree: each GPU below a PCIe switch of its own, a
  NIC whose gpuPath is PIX on another downstream port of its nearest GPU's switch, any other
  NIC on a root port of its own, each device in an IOMMU group of its own whose domain type is
  the hardware's iommuDomain (identity, passthrough, by default); nvidia_peermem loaded when
  the ClusterPolicy enables driver.rdma;
- a /proc (PROC) with the kernel command line (the hardware's cmdline, else intel_iommu=on
  iommu=pt) and the GPU driver's version line (open kernel modules unless gpuModule says
  proprietary);
- `lspci`, answering for any bridge with an ACS capability whose control redirects requests
  when the hardware's acs is true;
- `ip`, answering for netN with the address Multus gave (the pod's network-status);
- `dmesg`, refusing as it does in an unprivileged pod (the boot log is not readable there);
- `nvidia-smi`, answering `topo -m` with a matrix made from the node's hardware as the real tool
  writes it (see topology_matrix) for the GPUs the pod was given, and the GPU query with their
  bus ids;
- `ib_write_bw`, printing output shaped like the captured runs (perftest_standin.py) for the
  device, GID index and GPU memory mode the script passed, with the perftest knobs;
- `ssh` and `mpirun` for the NCCL test's launcher (nccl_standin.py), and the mounted Secret's
  files (its SSH key);
- per container a /dev (DEV) whose infiniband folder holds a uverbs device per rail and rdma_cm
  when the container asked for an RDMA resource (what the device plugins give), and in every
  container with a GPU when the gpu_operator knob ibverbs_in_gpu_pods plays GPU Operator 26.3.0
  to 26.3.2 (MOFED_ENABLED on by default, gpu-operator #2525); the pod's init containers run
  first, sharing the emptyDir the test pods use (their ISOLATION_FILE).

So the integration tests run the script the collection ships, its device, GID and GPU choice
included; what they cannot run is the RDMA traffic itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.simulator.nodes import DEFAULT_RATE_GBPS

REPO_ROOT = Path(__file__).resolve().parents[2]


def _bus_of_gpu(index: int) -> int:
    """The PCI bus number of GPU index (each GPU below a PCIe switch of its own)."""
    return 0x18 + 0x10 * index


def gpu_bus(index: int) -> str:
    return f"00000000:{_bus_of_gpu(index):02X}:00.0"


def nearest_gpu(nic: int, nics: int, gpus: int) -> int:
    """The GPU on NIC's PCIe switch: the NICs spread over the GPUs in order (8 on 8: NIC N next
    to GPU N; 4 on 8: next to GPU 0, 2, 4, 6)."""
    return min(nic * gpus // max(nics, 1), gpus - 1)


def numa_of_gpu(index: int, gpus: int) -> int:
    return 0 if index < max(gpus // 2, 1) else 1


def topology_matrix(hardware: dict, visible_gpus: int) -> str:
    """`nvidia-smi topo -m` of a node whose first visible_gpus GPUs the pod holds, as nvidia-smi
    writes it (tabs, the header in ANSI underline, an empty cell before the GPU NUMA ID): GPUs
    in two NUMA nodes joined by NVLink; each NIC next to its nearest GPU (PIX unless the NIC's
    gpuPath says otherwise), NODE to the other GPUs of its NUMA node, SYS across; the NIC
    Legend."""
    gpus = int(hardware.get("gpus", 8))
    nics = hardware.get("nics") or []
    shown = range(min(visible_gpus, gpus))

    def gpu_nic(gpu: int, nic: int) -> str:
        near = nearest_gpu(nic, len(nics), gpus)
        if gpu == near:
            return nics[nic].get("gpuPath") or "PIX"
        same = numa_of_gpu(gpu, gpus) == numa_of_gpu(near, gpus)
        return "NODE" if same else "SYS"

    def nic_nic(a: int, b: int) -> str:
        if a == b:
            return " X "
        numa_a = numa_of_gpu(nearest_gpu(a, len(nics), gpus), gpus)
        numa_b = numa_of_gpu(nearest_gpu(b, len(nics), gpus), gpus)
        return "NODE" if numa_a == numa_b else "SYS"

    columns = [f"GPU{g}" for g in shown] + [f"NIC{n}" for n in range(len(nics))]
    # nvidia-smi underlines the header with ANSI codes, also into a file or a pipe.
    header = "\t".join([*columns, "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])
    lines = [f"\t\x1b[4m{header}\x1b[0m"]
    for g in shown:
        cells = [" X " if g == other else "NV18" for other in shown]
        cells += [gpu_nic(g, n) for n in range(len(nics))]
        numa = numa_of_gpu(g, gpus)
        # The GPU NUMA ID comes after an empty cell, as nvidia-smi prints it.
        cells += ["0-55,112-167" if numa == 0 else "56-111,168-223", str(numa), "", "N/A"]
        lines.append("\t".join([f"GPU{g}", *cells]))
    for n in range(len(nics)):
        cells = [gpu_nic(g, n) for g in shown] + [nic_nic(n, m) for m in range(len(nics))]
        lines.append("\t".join([f"NIC{n}", *cells, "", "", ""]))
    lines += ["", "Legend:", "", "  X    = Self"]
    lines += ["  PIX  = Connection traversing at most a single PCIe bridge"]
    lines += ["", "NIC Legend:", ""] + [f"  NIC{n}: mlx5_{n}" for n in range(len(nics))]
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _executable(path: Path, text: str) -> None:
    _write(path, "#!/bin/bash\n" + text)
    path.chmod(0o755)


def _mapped(address: str) -> str:
    a, b, c, d = (int(x) for x in address.split("."))
    return f"0000:0000:0000:0000:0000:ffff:{a:02x}{b:02x}:{c:02x}{d:02x}"


def _guid(node_index: int, nic: int) -> list[str]:
    return ["b8", "3f", "d2", "03", "00", f"{node_index & 0xFF:02x}", "51", f"{nic:02x}"]


def _hex(value: int) -> str:
    return f"{value:02x}"


def _gpu_chain(gpu: int) -> list[str]:
    """The PCI path of GPU gpu: its root port, a PCIe switch (upstream, downstream), the GPU."""
    bus = _bus_of_gpu(gpu)
    root = _hex(bus - 3)
    return [f"pci0000:{root}", f"0000:{root}:01.0", f"0000:{_hex(bus - 2)}:00.0"] + [
        f"0000:{_hex(bus - 1)}:00.0",
        f"0000:{_hex(bus)}:00.0",
    ]


def _nic_chain(nic: int, nics: list[dict], gpus: int) -> list[str]:
    """A NIC whose path to its nearest GPU is PIX sits on another downstream port of that GPU's
    switch; any other NIC on a root port of its own."""
    near = nearest_gpu(nic, len(nics), gpus)
    bus = _bus_of_gpu(near)
    function = sum(1 for n in range(nic) if nearest_gpu(n, len(nics), gpus) == near)
    if (nics[nic].get("gpuPath") or "PIX") == "PIX":
        return _gpu_chain(near)[:3] + [
            f"0000:{_hex(bus - 1)}:04.0",
            f"0000:{_hex(bus + 1)}:00.{function}",
        ]
    root = _hex(bus + 4 + function)
    return [f"pci0000:{root}", f"0000:{root}:01.0", f"0000:{_hex(bus + 5 + function)}:00.0"]


def _pci_device(sysfs: Path, chain: list[str], numa: int, iommu: str = "identity") -> Path:
    """The device's folder under sysfs/devices along its chain, with its numa_node and its IOMMU
    group (a group of its own, of domain type iommu), and its link in bus/pci/devices."""
    folder = sysfs / "devices" / Path(*chain)
    _write(folder / "numa_node", f"{numa}\n")
    groups = sysfs / "kernel" / "iommu_groups"
    group = groups / str(len(list(groups.iterdir())) if groups.exists() else 0)
    _write(group / "type", f"{iommu}\n")
    if not (folder / "iommu_group").exists():
        (folder / "iommu_group").symlink_to(group)
    link = sysfs / "bus" / "pci" / "devices" / chain[-1]
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(folder)
    return folder


def _fake_node(root: Path, hardware: dict, rails: list[dict], node_index: int) -> None:
    """The sysfs tree of the pod's rails (netN -> mlx5_<N-1>, with its port state, GID table and
    interface MTU) and of the GPUs' and NICs' PCI devices; /proc's command line and GPU driver
    version."""
    sysfs = root / "sys"
    nics = hardware.get("nics") or [{"linkType": "eth"}]
    gpus = int(hardware.get("gpus", 8))
    iommu = hardware.get("iommuDomain") or "identity"
    for g in range(gpus):
        _pci_device(sysfs, _gpu_chain(g), numa_of_gpu(g, gpus), iommu)
    for n, rail in enumerate(rails):
        address = rail["address"]
        nic = nics[min(n, len(nics) - 1)]
        device = sysfs / "class" / "infiniband" / f"mlx5_{n}"
        port = device / "ports" / "1"
        numa = numa_of_gpu(nearest_gpu(n, len(nics), gpus), gpus)
        pci = _pci_device(sysfs, _nic_chain(min(n, len(nics) - 1), nics, gpus), numa, iommu)
        device.mkdir(parents=True, exist_ok=True)
        (device / "device").symlink_to(pci)
        state = nic.get("linkState") or "ACTIVE"
        _write(port / "state", f"{4 if state == 'ACTIVE' else 1}: {state}\n")
        rate = int(nic.get("rateGbps") or DEFAULT_RATE_GBPS)
        _write(port / "rate", f"{rate} Gb/sec ({RATE_NAMES.get(rate, '4X')})\n")
        _write(sysfs / "class" / "net" / f"net{n + 1}" / "mtu", f"{rail['mtu']}\n")
        if nic["linkType"] == "ib":
            guid = _guid(node_index, n)
            _write(port / "link_layer", "InfiniBand\n")
            _write(
                port / "gids" / "0",
                "fe80:0000:0000:0000:"
                + ":".join(a + b for a, b in zip(guid[::2], guid[1::2], strict=True)),
            )
            hardware_address = ["00", "00", "10", "49", "fe", "80"] + ["00"] * 6 + guid
            _write(sysfs / "class" / "net" / f"net{n + 1}" / "address", ":".join(hardware_address))
        else:
            _write(port / "link_layer", "Ethernet\n")
            link_local = f"fe80:0000:0000:0000:ba3f:d2ff:fe{node_index & 0xFF:02x}:51{n:02x}"
            for index, (kind, gid) in enumerate(
                [
                    ("IB/RoCE v1", link_local),
                    ("RoCE v2", link_local),
                    ("IB/RoCE v1", _mapped(address)),
                    ("RoCE v2", _mapped(address)),
                ]
            ):
                _write(port / "gid_attrs" / "types" / str(index), kind + "\n")
                _write(port / "gids" / str(index), gid + "\n")
    proc = root / "proc"
    _write(proc / "cmdline", hardware.get("cmdline") or DEFAULT_CMDLINE)
    flavour = hardware.get("gpuModule") or "open"
    _write(proc / "driver" / "nvidia" / "version", DRIVER_VERSIONS[flavour])


# What the rate file names after the rate (4X: four lanes), by rate.
RATE_NAMES = {100: "4X EDR", 200: "4X HDR", 400: "4X NDR", 800: "4X XDR"}
DEFAULT_CMDLINE = (
    "BOOT_IMAGE=(hd0,gpt3)/boot/ostree/rhcos/vmlinuz-5.14.0-570.el9.x86_64 rw "
    "intel_iommu=on iommu=pt\n"
)
DRIVER_VERSIONS = {
    "open": "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build  "
    "(dvs-builder@U16-I3-B03-4-3)  Tue Feb 25 04:03:26 UTC 2025\n",
    "proprietary": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  Tue Feb 25 "
    "03:39:15 UTC 2025\n",
}


def _lspci(acs: bool) -> str:
    """lspci -vvv -s <bridge> of a switch or root port with the ACS capability; its control
    redirects requests when acs."""
    sign = "+" if acs else "-"
    return (
        'echo "${3#0000:} PCI bridge: PLX Technology, Inc. PEX 89104 PCIe Gen5 Switch (rev b0)"\n'
        'echo "\tCapabilities: [220 v1] Access Control Services"\n'
        'echo "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ '
        'EgressCtrl+ DirectTrans+"\n'
        f'echo "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir{sign} CmpltRedir{sign} '
        f'UpstreamFwd{sign} EgressCtrl- DirectTrans-"\n'
    )


def run_pod_script(
    pod: dict,
    hardware: dict,
    rails: list[dict],
    knobs: dict,
    node_index: int = 0,
    peermem: bool = False,
    keys: dict[str, str] | None = None,
    nccl: dict | None = None,
    ibverbs_in_gpu_pods: bool = False,
) -> dict[str, tuple[str, int]]:
    """Run the pod's init containers, then its container command, on the fake node, as the
    kubelet does (a failing init container ends the pod); each container that ran, in order,
    by name: its output (stdout and stderr, as the kubelet keeps them) and exit code.

    rails: per attached network its address and MTU; peermem: nvidia_peermem is loaded (the
    ClusterPolicy's driver.rdma.enabled); keys: the mounted Secret's files (the NCCL test's SSH
    key), at the pod's KEYS; nccl: what the ssh and mpirun stand-ins know of the cluster
    (nccl_standin.py); ibverbs_in_gpu_pods: every container with a GPU gets every rail's
    /dev/infiniband device, as GPU Operator 26.3.0 to 26.3.2 did."""
    # The perftest stand-in slows a rail of one node (knob perftest.slow) by the node it runs on.
    knobs = {**knobs, "node": pod["spec"].get("nodeName")}
    with tempfile.TemporaryDirectory(prefix="gpudirect-rdma-pod-") as folder:
        root = Path(folder)
        _fake_node(root, hardware, rails, node_index)
        if peermem:
            (root / "sys" / "module" / "nvidia_peermem").mkdir(parents=True)
        mounted = root / "keys"
        for name, text in (keys or {}).items():
            _write(mounted / name, text)
        (root / "isolation").mkdir()
        ran = {}
        for container in [*(pod["spec"].get("initContainers") or []), pod["spec"]["containers"][0]]:
            ran[container["name"]] = _run_container(
                container, root, hardware, rails, knobs, nccl, ibverbs_in_gpu_pods
            )
            if ran[container["name"]][1] != 0:
                break
        return ran


def _run_container(
    container: dict,
    root: Path,
    hardware: dict,
    rails: list[dict],
    knobs: dict,
    nccl: dict | None,
    ibverbs_in_gpu_pods: bool,
) -> tuple[str, int]:
    """One container of the pod on the fake node under root: its own stubs (nvidia-smi answers
    for the GPUs it asked for) and /dev (DEV: /dev/infiniband holds a uverbs device per rail
    when it asked for an RDMA resource, or a GPU while ibverbs_in_gpu_pods)."""
    name = container["name"]
    env = {e["name"]: e.get("value", "") for e in container.get("env") or []}
    limits = (container.get("resources") or {}).get("limits") or {}
    visible = int(limits.get("nvidia.com/gpu", "0") or 0)
    rdma = any(key != "nvidia.com/gpu" and "/" in key for key in limits)
    dev = root / "dev" / name
    dev.mkdir(parents=True)
    if rdma or (visible and ibverbs_in_gpu_pods):
        for n in range(len(rails)):
            _write(dev / "infiniband" / f"uverbs{n}", "")
        _write(dev / "infiniband" / "rdma_cm", "")
    stubs = root / "bin" / name
    cases = "".join(
        f'  net{n}) echo "{n + 2}: net{n}    inet {r["address"]}/24 scope global net{n}";;\n'
        for n, r in enumerate(rails, start=1)
    )
    _executable(stubs / "ip", f'case "$6" in\n{cases}esac\n')
    _executable(stubs / "lspci", _lspci(bool(hardware.get("acs"))))
    # An unprivileged pod may not read the kernel's ring buffer.
    _executable(
        stubs / "dmesg",
        'echo "dmesg: read kernel buffer failed: Operation not permitted" >&2\nexit 1\n',
    )
    if visible:
        gpus = min(visible, int(hardware.get("gpus", 8)))
        _write(stubs / "topo.txt", topology_matrix(hardware, visible))
        _write(stubs / "query.txt", "".join(f"{g}, {gpu_bus(g)}\n" for g in range(gpus)))
        _executable(
            stubs / "nvidia-smi",
            f'if [ "$1" = topo ]; then cat {stubs}/topo.txt; else cat {stubs}/query.txt; fi\n',
        )
    _executable(
        stubs / "ib_write_bw",
        f'exec {sys.executable} -m tests.simulator.perftest_standin "$@"\n',
    )
    for command in ("ssh", "mpirun"):
        _executable(
            stubs / command,
            f'exec {sys.executable} -m tests.simulator.nccl_standin {command} "$@"\n',
        )
    result = subprocess.run(
        list(container["command"]),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={
            **env,
            "PATH": f"{stubs}:/usr/bin:/bin",
            "SYSFS": str(root / "sys"),
            "PROC": str(root / "proc"),
            "DEV": str(dev),
            # The image's ib_write_bw path, here the stand-in.
            "PERFTEST": str(stubs / "ib_write_bw"),
            "TMPDIR": str(root),
            "PYTHONPATH": str(REPO_ROOT),
            "SIMULATED_PERFTEST": json.dumps(knobs),
            "SIMULATED_NCCL": json.dumps(nccl or {}),
            # The Secret's mount (the pod's KEYS), here a folder of the fake node.
            **({"KEYS": str(root / "keys")} if "KEYS" in env else {}),
            # The emptyDir the init container and the test container share.
            **(
                {"ISOLATION_FILE": str(root / "isolation" / "seen")}
                if "ISOLATION_FILE" in env
                else {}
            ),
            "HOME": str(root),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
        },
    )
    return result.stdout + result.stderr, result.returncode
