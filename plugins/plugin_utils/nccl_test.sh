#!/usr/bin/env bash
# The multi-node NCCL test, run in each of its pods: one worker pod per node (every GPU the node
# gives it, every rail's RDMA resource and network) runs an SSH server; the launcher pod waits
# until it can log in to every worker, then starts all_reduce_perf with mpirun, one process per
# GPU (-g 1), over the workers' SSH. NCCL takes its settings from the launcher's environment (the
# published NCCL ConfigMap, envFrom), passed on to every rank with -x.
#
# Environment: ROLE (worker|launcher), SSH_PORT, KEYS (folder of the mounted Secret:
# ssh-privatekey, ssh-publickey), SSHD (the image's sshd). Launcher only: WORKERS (host:slots,
# comma-separated, in rank order), NCCL_TEST (the all_reduce_perf binary), MIN_BYTES, MAX_BYTES,
# ITERS, WAIT_SECONDS (how long to wait for the workers' SSH servers), MPIRUN.
set -euo pipefail
say() { echo "gpudirect-rdma-verify: nccl $*"; }
home="${HOME:-/root}"
mkdir -p "${home}/.ssh"
chmod 700 "${home}/.ssh"

if [ "${ROLE}" = worker ]; then
  if ! command -v "${SSHD}" >/dev/null 2>&1; then
    say "worker: no SSH server at ${SSHD} in the image; the NCCL test's image (verify_nccl_image) needs" \
      "openssh-server, MPI and nccl-tests built with MPI=1" >&2
    exit 3
  fi
  install -m 600 "${KEYS}/ssh-publickey" "${home}/.ssh/authorized_keys"
  host_keys="$(mktemp -d)"
  ssh-keygen -q -t ed25519 -N "" -f "${host_keys}/ssh_host_ed25519_key"
  # sshd refuses to start without its privilege separation folder.
  [ -d /run/sshd ] || mkdir -p /run/sshd
  say "worker: SSH server on port ${SSH_PORT}"
  exec "${SSHD}" -D -e -p "${SSH_PORT}" -h "${host_keys}/ssh_host_ed25519_key" \
    -o PasswordAuthentication=no -o PermitRootLogin=prohibit-password \
    -o AuthorizedKeysFile="${home}/.ssh/authorized_keys" -o StrictModes=no \
    -o PidFile="${host_keys}/sshd.pid"
fi

install -m 600 "${KEYS}/ssh-privatekey" "${home}/.ssh/id_ed25519"
cat >"${home}/.ssh/config" <<EOF
Host *
  Port ${SSH_PORT}
  IdentityFile ${home}/.ssh/id_ed25519
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
  ConnectTimeout 5
EOF
chmod 600 "${home}/.ssh/config"

hostfile="$(mktemp)"
ranks=0
IFS=, read -r -a workers <<<"${WORKERS:?the launcher needs WORKERS (host:slots,...)}"
for worker in "${workers[@]}"; do
  host="${worker%%:*}"
  slots="${worker##*:}"
  echo "${host} slots=${slots}" >>"${hostfile}"
  ranks=$((ranks + slots))
done

# The workers' SSH servers start with their pods; wait until each accepts the key.
deadline=$((SECONDS + ${WAIT_SECONDS:-300}))
for worker in "${workers[@]}"; do
  host="${worker%%:*}"
  until ssh -F "${home}/.ssh/config" "${host}" true 2>"${hostfile}.err"; do
    if [ "${SECONDS}" -ge "${deadline}" ]; then
      say "launcher: cannot log in to ${host} on port ${SSH_PORT} after ${WAIT_SECONDS:-300} s:" \
        "$(tr '\n' ' ' <"${hostfile}.err")(is its worker pod running, and its image's SSH server up?)"
      exit 4
    fi
    sleep 2
  done
  say "launcher: ${host} accepts the key"
done

# Every NCCL_* setting of the launcher's environment (the ConfigMap's, NCCL_DEBUG) goes to every
# rank, with the image's PATH and LD_LIBRARY_PATH that an SSH session does not have.
exports=(-x PATH -x LD_LIBRARY_PATH)
while IFS='=' read -r name _; do
  case "${name}" in NCCL_*) exports+=(-x "${name}") ;; esac
done < <(env)

# Open MPI starts its daemon on each worker over SSH, whose session has no PATH to it: --prefix
# is where this mpirun is installed, the same in every pod of the image.
mpi_prefix="$(dirname "$(dirname "$(command -v "${MPIRUN}")")")"

say "launcher: ${ranks} ranks on ${#workers[@]} nodes (${WORKERS})"
say "output begin"
set +e
"${MPIRUN}" --allow-run-as-root --prefix "${mpi_prefix}" --hostfile "${hostfile}" -np "${ranks}" \
  --bind-to none \
  --mca plm_rsh_agent ssh --mca plm_rsh_args "-F ${home}/.ssh/config" \
  --mca oob_tcp_if_include eth0 --mca btl_tcp_if_include eth0 --mca coll ^hcoll \
  "${exports[@]}" \
  "${NCCL_TEST}" -b "${MIN_BYTES}" -e "${MAX_BYTES}" -f 2 -g 1 -c 1 -n "${ITERS}" 2>&1
code=$?
set -e
say "output end (exit ${code})"
exit "${code}"
