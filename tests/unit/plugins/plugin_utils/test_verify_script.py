"""The bandwidth test script that runs in the verification pods, run here against a fake sysfs
tree and stand-ins for ip, nvidia-smi and ib_write_bw: for each rail (net1, net2, ...) it must
find the RDMA device behind the interface, the RoCE v2 GID index of its address (never assume
3), the GPU closest to that device in `nvidia-smi topo -m` (each rail its own when several are as
close; the NIC's NUMA node without a matrix), and build one ib_write_bw command line per rail."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from ansible_collections.gpudirect.rdma.plugins.filter.verify_report import verify_report
from ansible_collections.gpudirect.rdma.plugins.plugin_utils import topology
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.harness.controlplane import shared_dir
from tests.unit.inventories import inputs

SCRIPT = Path(__file__).resolve().parents[4] / "plugins" / "plugin_utils" / "verify_test.sh"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def executable(path: Path, text: str) -> None:
    write(path, "#!/bin/bash\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def roce_device(sysfs: Path, name: str, numa: int, gids: dict[int, tuple[str, str]]) -> None:
    port = sysfs / "class" / "infiniband" / name / "ports" / "1"
    write(port / "link_layer", "Ethernet\n")
    write(port / "state", "4: ACTIVE\n")
    write(sysfs / "class" / "infiniband" / name / "device" / "numa_node", f"{numa}\n")
    for index, (gid_type, gid) in gids.items():
        write(port / "gid_attrs" / "types" / str(index), gid_type + "\n")
        write(port / "gids" / str(index), gid + "\n")


@pytest.fixture
def pod(tmp_path):
    sysfs = tmp_path / "sys"
    stubs = tmp_path / "bin"
    calls = tmp_path / "calls"
    executable(stubs / "ib_write_bw", f'echo "$@" >> {calls}\necho "ran with $*"\n')
    # As in an unprivileged pod: the kernel's ring buffer is not readable (and this machine's
    # own boot log stays out of the test).
    executable(stubs / "dmesg", "echo 'dmesg: read kernel buffer failed' >&2\nexit 1\n")
    return sysfs, stubs, calls


def run(pod, address: str | list[str], env: dict, with_nvidia_smi: str | None = None, topo=None):
    """The script with `ip` giving net<N> the Nth address; nvidia-smi answering the GPU query
    with with_nvidia_smi and `topo -m` with topo. Returns the result and each ib_write_bw
    command line, by rail."""
    sysfs, stubs, calls = pod
    addresses = [address] if isinstance(address, str) else address
    cases = "".join(
        f'  net{n}) echo "3: net{n}    inet {a}/24 brd 192.168.4.255 scope global net{n}";;\n'
        for n, a in enumerate(addresses, start=1)
    )
    executable(stubs / "ip", f'case "$6" in\n{cases}esac\n')
    if with_nvidia_smi or topo:
        topo_file, query_file = stubs.parent / "topo.txt", stubs.parent / "query.txt"
        topo_file.write_text(topo or "")
        query_file.write_text((with_nvidia_smi or "") + "\n")
        executable(
            stubs / "nvidia-smi",
            f'if [ "$1" = topo ]; then cat {topo_file}; else cat {query_file}; fi\n',
        )
    result = subprocess.run(
        ["bash", str(SCRIPT)],
        capture_output=True,
        text=True,
        check=False,
        env={
            "PATH": f"{stubs}:/usr/bin:/bin",
            "SYSFS": str(sysfs),
            "PERFTEST": str(stubs / "ib_write_bw"),
            "RAILS": str(len(addresses)),
            **env,
        },
    )
    lines = calls.read_text().splitlines() if calls.exists() else []
    by_device = {line.split()[line.split().index("-d") + 1]: line.split() for line in lines}
    return result, by_device


MAPPED_226 = "0000:0000:0000:0000:0000:ffff:c0a8:04e2"


def test_roce_client_finds_its_device_and_the_roce_v2_gid_of_its_address(pod):
    sysfs = pod[0]
    roce_device(
        sysfs,
        "mlx5_0",
        0,
        {
            0: ("IB/RoCE v1", "fe80:0000:0000:0000:ba3f:d2ff:fe3b:5128"),
            3: ("RoCE v2", "0000:0000:0000:0000:0000:ffff:c0a8:0305"),
        },
    )
    roce_device(
        sysfs,
        "mlx5_2",
        1,
        {
            0: ("IB/RoCE v1", "fe80:0000:0000:0000:ba3f:d2ff:fe3b:5129"),
            1: ("RoCE v2", "fe80:0000:0000:0000:ba3f:d2ff:fe3b:5129"),
            4: ("IB/RoCE v1", MAPPED_226),
            5: ("RoCE v2", MAPPED_226),
        },
    )
    result, by_device = run(
        pod,
        "192.168.4.226",
        {"ROLE": "client", "SERVER_IPS": "192.168.4.225", "GPU_MEMORY": "dmabuf", "DURATION": "60"},
    )
    assert result.returncode == 0, result.stderr
    assert by_device["mlx5_2"] == [
        "-F",
        "--report_gbits",
        "-s",
        "65536",
        "-q",
        "16",
        "-D",
        "60",
        "-m",
        "4096",
        "-d",
        "mlx5_2",
        "-p",
        "10000",
        "--source_ip",
        "192.168.4.226",
        "-x",
        "5",
        "--use_cuda=0",
        "--use_cuda_dmabuf",
        "192.168.4.225",
    ]
    assert "rail 0 client on mlx5_2 (Ethernet) 192.168.4.226 GPU 0 ? unknown:" in result.stdout
    assert "rail 0 output begin\nran with -F" in result.stdout
    assert result.stdout.rstrip().endswith("rail 0 output end (exit 0)")


def test_without_a_topology_matrix_the_gpu_on_the_nics_numa_node_and_peermem_server(pod):
    sysfs = pod[0]
    roce_device(sysfs, "mlx5_2", 1, {3: ("RoCE v2", MAPPED_226)})
    write(sysfs / "bus" / "pci" / "devices" / "0000:17:00.0" / "numa_node", "0\n")
    write(sysfs / "bus" / "pci" / "devices" / "0000:b1:00.0" / "numa_node", "1\n")
    result, by_device = run(
        pod,
        "192.168.4.226",
        {"ROLE": "server", "GPU_MEMORY": "peermem"},
        with_nvidia_smi="0, 00000000:17:00.0\n1, 00000000:B1:00.0",
    )
    assert result.returncode == 0, result.stderr
    args = by_device["mlx5_2"]
    assert "--use_cuda=1" in args
    assert "--use_cuda_dmabuf" not in args
    assert args[-1] == "--use_cuda=1", "a server has no peer address"


def test_infiniband_device_from_the_ipoib_hardware_address_and_no_gid_index(pod):
    sysfs = pod[0]
    port = sysfs / "class" / "infiniband" / "mlx5_4" / "ports" / "1"
    write(port / "link_layer", "InfiniBand\n")
    write(port / "gids" / "0", "fe80:0000:0000:0000:b83f:d203:003b:5129\n")
    other = sysfs / "class" / "infiniband" / "mlx5_5" / "ports" / "1"
    write(other / "link_layer", "InfiniBand\n")
    write(other / "gids" / "0", "fe80:0000:0000:0000:b83f:d203:003b:5130\n")
    write(
        sysfs / "class" / "net" / "net1" / "address",
        "00:00:10:49:fe:80:00:00:00:00:00:00:b8:3f:d2:03:00:3b:51:29\n",
    )
    result, by_device = run(pod, "192.168.6.226", {"ROLE": "client", "SERVER_IPS": "192.168.6.225"})
    assert result.returncode == 0, result.stderr
    assert list(by_device) == ["mlx5_4"]
    assert "-x" not in by_device["mlx5_4"]


def test_no_device_for_net1_fails_clearly(pod):
    sysfs = pod[0]
    roce_device(sysfs, "mlx5_0", 0, {3: ("RoCE v2", "0000:0000:0000:0000:0000:ffff:0a00:0001")})
    result, by_device = run(pod, "192.168.4.226", {"ROLE": "server"})
    assert result.returncode == 3
    assert "no RDMA device carries net1 (192.168.4.226); devices: mlx5_0" in result.stderr
    assert by_device == {}, "ib_write_bw did not run"


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "topology"


def mapped(address: str) -> str:
    a, b, c, d = (int(x) for x in address.split("."))
    return f"0000:0000:0000:0000:0000:ffff:{a:02x}{b:02x}:{c:02x}{d:02x}"


def hgx_rails(sysfs: Path, count: int = 8) -> list[str]:
    """Eight RoCE rails on the HGX fixture's compute NICs, whose closest GPUs are in
    HGX_CLOSEST; rail N's net<N+1> is 10.100.N.10."""
    addresses = []
    for rail, device in enumerate(HGX_NICS[:count]):
        address = f"10.100.{rail}.10"
        roce_device(sysfs, device, 0 if rail < 4 else 1, {3: ("RoCE v2", mapped(address))})
        addresses.append(address)
    return addresses


# The HGX fixture: the compute NICs (the NIC Legend's), and the GPU on each one's PCIe switch.
HGX_NICS = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
HGX_CLOSEST = [0, 1, 2, 3, 4, 5, 6, 7]
HGX_BUSES = "\n".join(
    f"{i}, 00000000:{bus}:00.0"
    for i, bus in enumerate(["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"])
)


@pytest.mark.parametrize(
    "shape", ["hgx_h100_8gpu_12nic_tabs.txt", "hgx_h100_8gpu_12nic_pasted.txt"]
)
def test_each_rail_of_an_hgx_node_gets_the_gpu_on_its_nics_pcie_switch(pod, shape):
    addresses = hgx_rails(pod[0])
    result, by_device = run(
        pod,
        addresses,
        {"ROLE": "server", "PORT": "18515"},
        with_nvidia_smi=HGX_BUSES,
        topo=(FIXTURES / shape).read_text(),
    )
    assert result.returncode == 0, result.stderr
    assert sorted(by_device) == sorted(HGX_NICS)
    for rail, (device, gpu) in enumerate(zip(HGX_NICS, HGX_CLOSEST, strict=True)):
        args = by_device[device]
        assert f"--use_cuda={gpu}" in args, (device, args)
        assert args[args.index("-p") + 1] == str(18515 + rail)
        assert f"rail {rail} server on {device} (Ethernet) {addresses[rail]} GPU {gpu} " in (
            result.stdout
        )
    assert " PIX: " in result.stdout and "NODE:" not in result.stdout
    # The matrix is in the log, for the report to name each pair's relation.
    matrix = (FIXTURES / shape).read_text().rstrip("\n")
    assert (
        f"topology (nvidia-smi topo -m) begin\n{matrix}\ngpudirect-rdma-verify: topology end"
        in (result.stdout)
    )
    for rail in range(8):
        assert f"rail {rail} output begin" in result.stdout


def test_two_rails_as_close_to_two_gpus_take_one_each_and_a_far_nic_says_so(pod):
    """The DGX A100 fixture: GPU0 and GPU1 are both PXB to mlx5_0; mlx5_1 is PXB to GPU2 only.
    Two rails on mlx5_0's port pair would share GPU0 without the tie rule."""
    sysfs = pod[0]
    roce_device(sysfs, "mlx5_0", 0, {3: ("RoCE v2", mapped("10.1.0.10"))})
    roce_device(sysfs, "mlx5_1", 1, {3: ("RoCE v2", mapped("10.1.1.10"))})
    topo = (FIXTURES / "dgx_a100_4gpu_mlx5_columns.txt").read_text()
    result, by_device = run(
        pod,
        ["10.1.0.10", "10.1.1.10"],
        {"ROLE": "client", "SERVER_IPS": "10.1.0.20,10.1.1.20"},
        with_nvidia_smi="0, 00000000:07:00.0\n1, 00000000:0F:00.0\n2, 00000000:47:00.0\n"
        "3, 00000000:4E:00.0",
        topo=topo,
    )
    assert result.returncode == 0, result.stderr
    assert "--use_cuda=0" in by_device["mlx5_0"]
    assert "--use_cuda=2" in by_device["mlx5_1"]
    assert by_device["mlx5_1"][-1] == "10.1.1.20"
    assert "GPU 2 00000000:47:00.0 PXB:" in result.stdout


def test_gpus_as_close_are_shared_out_between_rails_in_order(pod):
    sysfs = pod[0]
    # mlx5_1's column made a copy of mlx5_0's: GPU0 and GPU1 are PXB to both NICs.
    rows = []
    for line in (FIXTURES / "dgx_a100_4gpu_mlx5_columns.txt").read_text().splitlines():
        cells = line.split("\t")
        if cells[0].startswith("GPU"):
            cells[6] = cells[5]
        rows.append("\t".join(cells))
    roce_device(sysfs, "mlx5_0", 0, {3: ("RoCE v2", mapped("10.1.0.10"))})
    roce_device(sysfs, "mlx5_1", 0, {3: ("RoCE v2", mapped("10.1.1.10"))})
    result, by_device = run(
        pod,
        ["10.1.0.10", "10.1.1.10"],
        {"ROLE": "server"},
        with_nvidia_smi="0, 00000000:07:00.0\n1, 00000000:0F:00.0",
        topo="\n".join(rows),
    )
    assert result.returncode == 0, result.stderr
    assert "--use_cuda=0" in by_device["mlx5_0"]
    assert "--use_cuda=1" in by_device["mlx5_1"]


def test_a_failed_rail_fails_the_pod_after_every_rail_printed_its_output(pod):
    sysfs, stubs, _calls = pod
    addresses = hgx_rails(sysfs, 2)
    executable(
        stubs / "ib_write_bw",
        'case "$*" in *mlx5_3*) echo " Failed to modify QP 294 to RTR"; exit 1;; esac\n'
        'echo "ran with $*"\n',
    )
    result, _by_device = run(pod, addresses, {"ROLE": "server"})
    assert result.returncode == 1
    assert "rail 0 output end (exit 0)" in result.stdout
    assert "Failed to modify QP 294 to RTR\ngpudirect-rdma-verify: rail 1 output end (exit 1)" in (
        result.stdout
    )


def test_the_script_is_valid_bash():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], check=False).returncode == 0
    assert os.access(SCRIPT, os.R_OK)


def test_what_the_script_prints_is_what_the_report_reads(pod):
    """The script's log of an HGX server and client (ib_write_bw standing in with captured
    output) judged by verify_report: eight pairs, each on the GPU of its NIC's switch."""
    sysfs, stubs, _calls = pod
    perftest = Path(__file__).resolve().parents[2] / "fixtures" / "perftest"
    logs = {}
    for role in ("server", "client"):
        executable(stubs / "ib_write_bw", f"cat {perftest / f'roce_dmabuf_{role}.txt'}\n")
        env = {"ROLE": role, "SERVER_IPS": ",".join(f"10.100.{r}.20" for r in range(8))}
        result, _by_device = run(
            pod,
            hgx_rails(sysfs),
            env,
            with_nvidia_smi=HGX_BUSES,
            topo=(FIXTURES / "hgx_h100_8gpu_12nic_tabs.txt").read_text(),
        )
        assert result.returncode == 0, result.stderr
        logs[f"gpudirect-rdma-verify-{role}"] = result.stdout
    plan = build_plan(inputs("multi-rail-hgx"))
    report = verify_report(logs, plan=plan, pairs=[["a", "b"]], min_gbps=100)
    assert report["passed"] is True, [p["problems"] for p in report["pairs"]]
    assert [(p["server_gpu"]["gpu"], p["server_gpu"]["nic"]) for p in report["pairs"]] == list(
        zip(HGX_CLOSEST, HGX_NICS, strict=True)
    )
    assert {p["client_gpu"]["relation"] for p in report["pairs"]} == {"PIX"}
    assert report["pairs"][5]["server_gpu"]["bus_id"] == "00000000:AB:00.0"


REAL_VM = shared_dir() / "real-outputs" / "h200-vm-driver580"


def as_printed(matrix: str) -> str:
    """The matrix as nvidia-smi writes it into a file or a pipe: the header in ANSI underline."""
    header, rest = matrix.split("\n", 1)
    return f"\t\x1b[4m{header.lstrip(chr(9))}\x1b[0m\n{rest}"


def test_the_matrix_as_nvidia_smi_really_writes_it_pairs_every_rail(pod):
    """The header wrapped in ANSI codes (the real tool's, also into a pipe): before, no GPU was
    found for any NIC and every rail fell back to GPU 0."""
    addresses = hgx_rails(pod[0])
    topo = as_printed((FIXTURES / "hgx_h100_8gpu_12nic_tabs.txt").read_text())
    result, by_device = run(
        pod, addresses, {"ROLE": "server"}, with_nvidia_smi=HGX_BUSES, topo=topo
    )
    assert result.returncode == 0, result.stderr
    for rail, (device, gpu) in enumerate(zip(HGX_NICS, HGX_CLOSEST, strict=True)):
        assert f"--use_cuda={gpu}" in by_device[device]
        assert (
            f"pairing rail {rail} nic {device} pf - found-as {device} gpu {gpu} relation PIX "
            "shared - source matrix"
        ) in result.stdout
    assert "topology unreadable" not in result.stdout


def test_the_real_one_gpu_matrix_says_it_has_no_nic_and_the_rail_falls_back(pod):
    sysfs = pod[0]
    roce_device(sysfs, "mlx5_0", 0, {3: ("RoCE v2", mapped("10.1.0.10"))})
    write(sysfs / "bus" / "pci" / "devices" / "0000:00:06.0" / "numa_node", "0\n")
    result, by_device = run(
        pod,
        "10.1.0.10",
        {"ROLE": "server"},
        with_nvidia_smi="0, 00000000:00:06.0",
        topo=(REAL_VM / "nvidia-smi-topo-m.txt").read_text(),
    )
    assert result.returncode == 0, result.stderr
    assert (
        "gpudirect-rdma-verify: topology unreadable: the matrix has no NIC column: nvidia-smi "
        "sees no NIC on this node"
    ) in result.stdout
    assert (
        "pairing rail 0 nic mlx5_0 pf - found-as - gpu 0 relation unknown shared - source numa"
    ) in result.stdout
    assert "--use_cuda=0" in by_device["mlx5_0"]


def test_a_vf_the_matrix_does_not_list_is_paired_by_its_pf(pod):
    sysfs = pod[0]
    roce_device(sysfs, "mlx5_14", 0, {3: ("RoCE v2", mapped("10.1.0.10"))})
    pf = sysfs / "devices" / "pci0000:17" / "0000:1b:00.0"
    (pf / "infiniband" / "mlx5_3").mkdir(parents=True)
    (sysfs / "class" / "infiniband" / "mlx5_14" / "device" / "physfn").symlink_to(pf)
    result, by_device = run(
        pod,
        "10.1.0.10",
        {"ROLE": "server"},
        with_nvidia_smi=HGX_BUSES,
        topo=(FIXTURES / "hgx_h100_8gpu_12nic_tabs.txt").read_text(),
    )
    assert result.returncode == 0, result.stderr
    assert (
        "pairing rail 0 nic mlx5_14 pf mlx5_3 found-as mlx5_3 gpu 1 relation PIX shared - "
        "source matrix"
    ) in result.stdout
    assert "--use_cuda=1" in by_device["mlx5_14"]


def test_the_kernels_own_state_is_printed_for_the_host_checks(pod):
    """The port's rate, the IOMMU group type of the rail's NIC and of each GPU, the boot log's
    IOMMU line (not readable in an unprivileged pod: said so)."""
    sysfs = pod[0]
    roce_device(sysfs, "mlx5_0", 0, {3: ("RoCE v2", mapped("10.1.0.10"))})
    write(
        sysfs / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "rate", "400 Gb/sec (4X NDR)\n"
    )
    group = sysfs / "kernel" / "iommu_groups" / "7"
    write(group / "type", "DMA-FQ\n")
    gpu = sysfs / "devices" / "pci0000:17" / "0000:18:00.0"
    write(gpu / "numa_node", "0\n")
    (gpu / "iommu_group").symlink_to(group)
    (sysfs / "bus" / "pci" / "devices").mkdir(parents=True)
    (sysfs / "bus" / "pci" / "devices" / "0000:18:00.0").symlink_to(gpu)
    result, _by_device = run(
        pod, "10.1.0.10", {"ROLE": "server"}, with_nvidia_smi="0, 00000000:18:00.0"
    )
    assert result.returncode == 0, result.stderr
    for line in (
        "fact rail0-rate 400 Gb/sec (4X NDR)",
        "fact iommu-group gpu0 0000:18:00.0 DMA-FQ",
        "fact iommu-boot unknown (the boot log is not readable here)",
    ):
        assert f"gpudirect-rdma-verify: {line}\n" in result.stdout, line


def test_facts_mode_pairs_every_rdma_device_and_runs_no_traffic(pod):
    sysfs = pod[0]
    for device in ("mlx5_0", "mlx5_3"):
        roce_device(sysfs, device, 0, {})
    result, by_device = run(
        pod,
        [],
        {"ROLE": "facts"},
        with_nvidia_smi=HGX_BUSES,
        topo=(FIXTURES / "hgx_h100_8gpu_12nic_tabs.txt").read_text(),
    )
    assert result.returncode == 0, result.stderr
    assert by_device == {}, "no ib_write_bw in facts mode"
    assert "facts: 2 RDMA device(s) on this node: mlx5_0 mlx5_3" in result.stdout
    assert "pairing rail 0 nic mlx5_0 pf - found-as mlx5_0 gpu 0 relation PIX" in result.stdout
    assert "pairing rail 1 nic mlx5_3 pf - found-as mlx5_3 gpu 1 relation PIX" in result.stdout


def matrices_with_nics() -> dict[str, str]:
    """Every matrix of the contract test's set (the corpus, the fixtures, as printed) that
    names NICs and reads."""
    from tests.unit.plugins.plugin_utils.test_topology_contract import MATRICES

    found = {}
    for name, text in MATRICES.items():
        try:
            topology.parse(text)
        except topology.TopologyError:
            continue
        found[name] = text
    return found


@pytest.mark.parametrize("name", sorted(matrices_with_nics()))
def test_the_report_judges_the_gpu_the_pod_used_on_every_matrix(pod, name):
    """The pod's script on a node with an RDMA device for every NIC of the matrix, then the
    report on its log: each pair names the GPU ib_write_bw was given and the relation the pod
    read, and the report's own reading of the printed matrix agrees."""
    text = matrices_with_nics()[name]
    parsed = topology.parse(text)
    nics = [nic["name"] for nic in parsed["nics"]]
    sysfs, stubs, _calls = pod
    addresses = []
    for rail, device in enumerate(nics):
        address = f"10.{100 + rail}.0.10"
        roce_device(sysfs, device, 0, {3: ("RoCE v2", mapped(address))})
        addresses.append(address)
    buses = "\n".join(
        f"{g['index']}, 00000000:{0x18 + g['index']:02X}:00.0" for g in parsed["gpus"]
    )
    result, by_device = run(pod, addresses, {"ROLE": "server"}, with_nvidia_smi=buses, topo=text)
    assert result.returncode == 0, result.stderr
    plan = build_plan(
        {
            **inputs("multi-rail-hgx"),
            "interfaces": [f"ens{i}f0np0" for i in range(len(nics))],
            "ipam_range": "10.100.0.0/16",
        }
    )
    logs = {f"gpudirect-rdma-verify-{role}": result.stdout for role in ("server", "client")}
    report = verify_report(logs, plan=plan, pairs=[["a", "b"]], min_gbps=0, allow_cross_switch=True)
    expected = topology.pair_rails(parsed, [(device, None) for device in nics])
    for pair, wanted, device in zip(report["pairs"], expected, nics, strict=True):
        used = int(next(a for a in by_device[device] if a.startswith("--use_cuda=")).split("=")[1])
        assert pair["server_gpu"]["gpu"] == used == wanted["gpu"], (name, device)
        assert pair["server_gpu"]["relation"] == wanted["relation"], (name, device)
        assert "disagreement" not in pair["server_gpu"], pair["server_gpu"]


@pytest.mark.parametrize(
    ("devices", "fact"),
    [([], "none"), (["rdma_cm", "uverbs0", "uverbs1"], "rdma_cm uverbs0 uverbs1")],
)
def test_the_init_container_leaves_what_it_sees_in_dev_infiniband_for_the_test(
    pod, tmp_path, devices, fact
):
    """ROLE=isolation writes /dev/infiniband's entries (or none, where the folder is absent) to
    ISOLATION_FILE and stops; the test container prints them as the rdma-isolation fact."""
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in devices:
        write(dev / "infiniband" / name, "")
    seen = tmp_path / "shared" / "seen"
    seen.parent.mkdir()
    looked = subprocess.run(
        ["bash", str(SCRIPT)],
        env={
            "PATH": "/usr/bin:/bin",
            "ROLE": "isolation",
            "DEV": str(dev),
            "ISOLATION_FILE": str(seen),
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert (looked.returncode, looked.stdout) == (
        0,
        "gpudirect-rdma-verify: rdma-isolation: /dev/infiniband of a container with a GPU and no "
        f"RDMA resource: {fact}\n",
    ), looked.stderr
    assert seen.read_text() == fact + "\n"
    sysfs = pod[0]
    roce_device(sysfs, "mlx5_0", 0, {3: ("RoCE v2", mapped("10.1.0.10"))})
    result, _by_device = run(pod, "10.1.0.10", {"ROLE": "server", "ISOLATION_FILE": str(seen)})
    assert result.returncode == 0, result.stderr
    assert f"gpudirect-rdma-verify: fact rdma-isolation {fact}\n" in result.stdout
    # Without the init container's file the fact says so; without ISOLATION_FILE there is none.
    seen.unlink()
    result, _by_device = run(pod, "10.1.0.10", {"ROLE": "server", "ISOLATION_FILE": str(seen)})
    assert "gpudirect-rdma-verify: fact rdma-isolation unknown\n" in result.stdout
    result, _by_device = run(pod, "10.1.0.10", {"ROLE": "server"})
    assert "fact rdma-isolation" not in result.stdout
