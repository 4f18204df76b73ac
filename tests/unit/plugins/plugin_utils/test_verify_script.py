"""The bandwidth test script that runs in the verification pods, run here against a fake sysfs
tree and stand-ins for ip, nvidia-smi and ib_write_bw: it must find the RDMA device behind net1,
the RoCE v2 GID index of net1's address (never assume 3), the GPU on the NIC's NUMA node, and
build the ib_write_bw command line."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

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
    write(sysfs / "class" / "infiniband" / name / "device" / "numa_node", f"{numa}\n")
    for index, (gid_type, gid) in gids.items():
        write(port / "gid_attrs" / "types" / str(index), gid_type + "\n")
        write(port / "gids" / str(index), gid + "\n")


@pytest.fixture
def pod(tmp_path):
    sysfs = tmp_path / "sys"
    stubs = tmp_path / "bin"
    calls = tmp_path / "calls"
    executable(stubs / "ib_write_bw", f'echo "$@" > {calls}\n')
    return sysfs, stubs, calls


def run(pod, address: str, env: dict, with_nvidia_smi: str | None = None):
    sysfs, stubs, calls = pod
    executable(
        stubs / "ip", f'echo "3: net1    inet {address}/24 brd 192.168.4.255 scope global net1"\n'
    )
    if with_nvidia_smi:
        executable(stubs / "nvidia-smi", f"cat <<'OUT'\n{with_nvidia_smi}\nOUT\n")
    result = subprocess.run(
        ["bash", str(SCRIPT)],
        capture_output=True,
        text=True,
        check=False,
        env={
            "PATH": f"{stubs}:/usr/bin:/bin",
            "SYSFS": str(sysfs),
            "PERFTEST": str(stubs / "ib_write_bw"),
            **env,
        },
    )
    return result, calls.read_text().split() if calls.exists() else None


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
    result, args = run(
        pod,
        "192.168.4.226",
        {"ROLE": "client", "SERVER_IP": "192.168.4.225", "GPU_MEMORY": "dmabuf", "DURATION": "60"},
    )
    assert result.returncode == 0, result.stderr
    assert args == [
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
    assert "client on mlx5_2 (Ethernet) 192.168.4.226 GPU 0" in result.stdout


def test_gpu_on_the_nics_numa_node_and_peermem_server(pod):
    sysfs = pod[0]
    roce_device(sysfs, "mlx5_2", 1, {3: ("RoCE v2", MAPPED_226)})
    write(sysfs / "bus" / "pci" / "devices" / "0000:17:00.0" / "numa_node", "0\n")
    write(sysfs / "bus" / "pci" / "devices" / "0000:b1:00.0" / "numa_node", "1\n")
    result, args = run(
        pod,
        "192.168.4.226",
        {"ROLE": "server", "GPU_MEMORY": "peermem"},
        with_nvidia_smi="0, 00000000:17:00.0\n1, 00000000:B1:00.0",
    )
    assert result.returncode == 0, result.stderr
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
    result, args = run(pod, "192.168.6.226", {"ROLE": "client", "SERVER_IP": "192.168.6.225"})
    assert result.returncode == 0, result.stderr
    assert args[args.index("-d") + 1] == "mlx5_4"
    assert "-x" not in args


def test_no_device_for_net1_fails_clearly(pod):
    sysfs = pod[0]
    roce_device(sysfs, "mlx5_0", 0, {3: ("RoCE v2", "0000:0000:0000:0000:0000:ffff:0a00:0001")})
    result, args = run(pod, "192.168.4.226", {"ROLE": "server"})
    assert result.returncode == 3
    assert "no RDMA device carries net1 (192.168.4.226); devices: mlx5_0" in result.stderr
    assert args is None, "ib_write_bw did not run"


def test_the_script_is_valid_bash():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], check=False).returncode == 0
    assert os.access(SCRIPT, os.R_OK)
