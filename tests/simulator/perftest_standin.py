"""ib_write_bw as the simulator's fake node runs it (testbed.py): reads the command line the
verification script built and prints output shaped like a captured run (pods.perftest_output),
for that device, GID index, GPU and GPU memory mode. The perftest knobs come in
SIMULATED_PERFTEST (JSON): bw_gbps, gpu_memory (as_requested | none), failure
("" | connection_refused | wrong_gid)."""

from __future__ import annotations

import json
import os
import sys

from tests.simulator.pods import perftest_output


def main(argv: list[str]) -> int:
    knobs = json.loads(os.environ.get("SIMULATED_PERFTEST") or "{}")

    def value(flag: str) -> str | None:
        return argv[argv.index(flag) + 1] if flag in argv else None

    cuda = next((a.split("=", 1)[1] for a in argv if a.startswith("--use_cuda=")), None)
    client = not argv[-1].startswith("-")  # a client's last argument is its server's address
    role = "client" if client else "server"
    if knobs.get("gpu_memory", "as_requested") != "as_requested" or cuda is None:
        gpu_memory = "none"
    else:
        gpu_memory = "dmabuf" if "--use_cuda_dmabuf" in argv else "peermem"
    gid = value("-x")
    output = perftest_output(
        role,
        "eth" if gid is not None else "ib",
        gpu_memory,
        float(knobs.get("bw_gbps", 180.47)),
        device=value("-d") or "?",
        address=argv[-1] if client else (value("--source_ip") or "?"),
        gid_index=int(gid) if gid is not None else None,
        failure=knobs.get("failure", ""),
        cuda_device=int(cuda) if cuda is not None else 0,
    )
    sys.stdout.write(output)
    return 0 if "#bytes" in output else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
