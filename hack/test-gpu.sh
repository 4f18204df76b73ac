#!/usr/bin/env bash
# make test-gpu: what the verification pods run, run for real on a machine with an NVIDIA GPU
# (not part of make test: CI has no GPU). In order:
#   1. a GPU, or stop at once saying why;
#   2. the bandwidth test pod's script (verify_test.sh) as ROLE=facts on this machine's real
#      nvidia-smi, sysfs and /proc: its facts, its matrix and its pairing of every RDMA device;
#   3. nccl-tests built from the shared source tarball with MPI against this machine's NCCL;
#   4. the NCCL test's launcher script (nccl_test.sh) with the real mpirun, one rank per GPU on
#      this host (WORKERS=localhost:<GPUs>), NCCL_DEBUG=INFO, as the launcher pod runs it; with
#      several GPUs also a run restricted to sockets (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1); and
#      all_reduce_perf's JSON output (-J);
#   5. the collection's parsers and judges on all of it (python -m tests.gpu.judge), which fail
#      the target where the collection cannot read what the real tools printed.
# Outputs go to TEST_GPU_OUT (default build/test-gpu), byte for byte, for fixtures.
# Needs: nvidia-smi, nvcc (CUDA), NCCL (headers and library: NCCL_HOME, else the nvidia-nccl
# Python wheel's, else the system's), MPI (mpirun, mpi.h: MPI_HOME, else found), make, and a
# Python that imports ansible-core and kubernetes.core (.venv's, else PYTHON, else python3).
# Not exercised here, and said so at the end: RDMA traffic (ib_write_bw), GPU-NIC pairing on a
# real NIC, sshd (the launcher's ssh is a stand-in: with one host mpirun starts no daemon over
# SSH), anything across nodes.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
out="$(mkdir -p "${TEST_GPU_OUT:-build/test-gpu}" && cd "${TEST_GPU_OUT:-build/test-gpu}" && pwd)"
shared="${GPUDIRECT_RDMA_SHARED:-${repo}/../shared}"
tarball="${shared}/src/nccl-tests-2.19.6.tar.gz"
started=$SECONDS
say() { printf '[test-gpu %4ss] %s\n' "$((SECONDS - started))" "$*"; }
# NVLink multicast stays off: a program that uses it can take a shared host's GPUs down.
export NCCL_NVLS_ENABLE=0

if ! command -v nvidia-smi >/dev/null 2>&1; then
  say "stopped: no NVIDIA GPU here (nvidia-smi is not on the PATH). make test-gpu runs on a" \
    "machine with an NVIDIA GPU; make test runs everything else"
  exit 2
fi
if ! gpus="$(nvidia-smi --query-gpu=index,pci.bus_id,name,driver_version --format=csv,noheader 2>&1)" ||
  [ -z "${gpus}" ]; then
  say "stopped: no NVIDIA GPU here: nvidia-smi says: ${gpus:-nothing}"
  exit 2
fi
count="$(grep -c . <<<"${gpus}")"
say "${count} GPU(s):"
printf '    %s\n' "${gpus//$'\n'/$'\n'    }"
python="${PYTHON:-}"
if [ -z "${python}" ]; then
  if [ -x .venv/bin/python ]; then python=.venv/bin/python; else python=python3; fi
fi
if ! "${python}" -c 'import ansible, ansible_collections.kubernetes.core' 2>/dev/null; then
  say "stopped: ${python} does not import ansible-core and kubernetes.core (make venv, or PYTHON=" \
    "a Python that has them, or PYTHONPATH to a folder that holds them)"
  exit 2
fi
if [ ! -e .collections/ansible_collections/gpudirect/rdma ]; then
  say "stopped: no .collections/ansible_collections/gpudirect/rdma (make test-gpu links it)"
  exit 2
fi
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

say "the bandwidth test pod's script, ROLE=facts, on this machine's nvidia-smi, sysfs and /proc"
ROLE=facts bash plugins/plugin_utils/verify_test.sh >"${out}/verify_test-facts.txt" 2>&1
nvidia-smi topo -m >"${out}/nvidia-smi-topo-m.txt" 2>&1
sed 's/^/    /' "${out}/verify_test-facts.txt"

say "nccl-tests from ${tarball}, with MPI"
if [ ! -f "${tarball}" ]; then
  say "stopped: no ${tarball} (GPUDIRECT_RDMA_SHARED names the shared folder)"
  exit 2
fi
tar -xzf "${tarball}" -C "${work}"
source_dir="$(echo "${work}"/nccl-tests-*)"
cuda_home="${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")}"
# The nvidia-nccl wheel's folder (a namespace package: its __path__, not its __file__).
wheel_nccl='import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])'
nccl_home="${NCCL_HOME:-$("${python}" -c "${wheel_nccl}" 2>/dev/null || python3 -c "${wheel_nccl}" 2>/dev/null ||
  echo /usr)}"
if [ ! -e "${nccl_home}/lib/libnccl.so" ] && [ -e "${nccl_home}/lib/libnccl.so.2" ]; then
  # The wheel ships libnccl.so.2 alone; the link step asks for libnccl.so.
  mkdir -p "${work}/nccl/lib"
  ln -s "${nccl_home}/lib/libnccl.so.2" "${work}/nccl/lib/libnccl.so"
  ln -s "${nccl_home}/include" "${work}/nccl/include"
  nccl_lib="${nccl_home}/lib"
  nccl_home="${work}/nccl"
else
  nccl_lib="${nccl_home}/lib"
fi
mpi_home="${MPI_HOME:-}"
if [ -z "${mpi_home}" ]; then
  for header in "$(dirname "$(dirname "$(command -v mpicc || echo /none/bin/mpicc)")")/include/mpi.h" \
    /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h /usr/include/openmpi/mpi.h \
    /usr/local/include/mpi.h /opt/hpcx/ompi/include/mpi.h; do
    if [ -f "${header}" ]; then
      mpi_home="$(dirname "$(dirname "${header}")")"
      break
    fi
  done
fi
if [ -z "${mpi_home}" ]; then
  say "stopped: no mpi.h found (set MPI_HOME to the MPI installation)"
  exit 2
fi
capability="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d '.')"
say "CUDA ${cuda_home}, NCCL ${nccl_home}, MPI ${mpi_home}, sm_${capability}"
build="${work}/build"
if ! make -C "${source_dir}/src" -j"$(nproc)" MPI=1 MPI_HOME="${mpi_home}" CUDA_HOME="${cuda_home}" \
  NCCL_HOME="${nccl_home}" BUILDDIR="${build}" \
  NVCC_GENCODE="-gencode=arch=compute_${capability},code=sm_${capability}" \
  "${build}/all_reduce_perf" >"${out}/nccl-tests-build.txt" 2>&1; then
  tail -n 30 "${out}/nccl-tests-build.txt"
  say "stopped: nccl-tests did not build (the whole log: ${out}/nccl-tests-build.txt)"
  exit 1
fi
export LD_LIBRARY_PATH="${nccl_lib}:${mpi_home}/lib:${LD_LIBRARY_PATH:-}"
test_binary="${build}/all_reduce_perf"
say "built ${test_binary} ($(ldd "${test_binary}" | grep -o 'libnccl[^ ]*' | head -n1) from ${nccl_lib})"

# The launcher as its pod runs it: its SSH key in KEYS and its ssh config in a HOME of its own.
# There is no SSH server here: ssh is a stand-in that accepts the login check; with one host
# mpirun starts its ranks itself and never calls it.
mkdir -p "${work}/bin" "${work}/keys" "${work}/home"
printf '#!/bin/sh\nexit 0\n' >"${work}/bin/ssh"
chmod +x "${work}/bin/ssh"
echo "not a key: ssh is a stand-in here" >"${work}/keys/ssh-privatekey"
echo "not a key" >"${work}/keys/ssh-publickey"
run_launcher() {
  local name="$1"
  shift
  say "the NCCL test's launcher script with the real mpirun, ${count} rank(s) on this host: ${name}"
  set +e
  timeout 300 env "$@" HOME="${work}/home" PATH="${work}/bin:${PATH}" ROLE=launcher SSH_PORT=2222 \
    KEYS="${work}/keys" SSHD=/usr/sbin/sshd WORKERS="localhost:${count}" \
    NCCL_TEST="${test_binary}" MIN_BYTES=1M MAX_BYTES=1G ITERS=20 WAIT_SECONDS=30 MPIRUN=mpirun \
    NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=eth0 OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 bash plugins/plugin_utils/nccl_test.sh \
    >"${out}/${name}" 2>&1
  local code=$?
  set -e
  grep -E '^gpudirect-rdma-verify|Avg bus bandwidth|Using network|via NET|nRanks' "${out}/${name}" |
    sed 's/^/    /' | head -n 12
  say "${name}: exit ${code}"
}
run_launcher nccl_test-sh-launcher.txt
if [ "${count}" -gt 1 ]; then
  run_launcher nccl_test-sh-launcher-sockets.txt NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
fi
say "all_reduce_perf's JSON output (-J), one process, ${count} GPU(s)"
# A single process, as MPI's singleton (no mpirun).
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 "${test_binary}" \
  -b 1M -e 64M -f 2 -g "${count}" -J "${out}/all_reduce_perf.json" \
  >"${out}/all_reduce_perf-json-run.txt" 2>&1 || say "all_reduce_perf -J exited $?"

{
  echo "machine: $(uname -n), kernel $(uname -r), ${count} GPU(s)"
  printf '  %s\n' "${gpus//$'\n'/$'\n'  }"
  echo "driver: $(head -n1 /proc/driver/nvidia/version 2>/dev/null || echo unknown)"
  echo "CUDA: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo unknown)"
  echo "NCCL: $(grep -m1 -o 'NCCL version [^ ]*' "${out}/nccl_test-sh-launcher.txt" || echo unknown)"
  echo "MPI: $(mpirun --version 2>/dev/null | head -n1)"
  echo "nccl-tests: $(basename "${source_dir}")"
} >"${out}/machine.txt"
say "the collection's parsers and judges on what came out"
PYTHONPATH="${repo}:${repo}/.collections${PYTHONPATH:+:${PYTHONPATH}}" "${python}" \
  -m tests.gpu.judge "${out}"
