#!/usr/bin/env bash
# make demo: the local control plane with the simulator, two fake GPU + NIC nodes, then the main
# job, playbooks/site.yml, on an inventory (INVENTORY=inventories/<name>, or any inventory path:
# a copy elsewhere, node groups too).
set -euo pipefail
cd "$(dirname "$0")/.."

INVENTORY="${INVENTORY:-inventories/shared-device-roce}"
STATE_DIR="${STATE_DIR:-.envtest}"
case "${STATE_DIR}" in /*) ;; *) STATE_DIR="${PWD}/${STATE_DIR}" ;; esac
BIN=.venv/bin
export ANSIBLE_CONFIG="$PWD/ansible.cfg" ANSIBLE_COLLECTIONS_PATH="$PWD/.collections"

# Two nodes per node group with the group's labels and NICs, without NFD labels (the simulated NFD
# adds them), read from the inventory as Ansible reads it, wherever it is; a wrong inventory stops
# here, before a control plane starts.
groups=$("${BIN}/python" hack/demo_nodes.py "${INVENTORY}" "${BIN}/ansible-inventory")

if ! "${BIN}/python" -m tests.harness status --state-dir "${STATE_DIR}" >/dev/null 2>&1; then
  "${BIN}/python" -m tests.harness up --state-dir "${STATE_DIR}"
fi
export K8S_AUTH_KUBECONFIG="${STATE_DIR}/kubeconfig" KUBECONFIG="${STATE_DIR}/kubeconfig"
kubectl="$(sed -n 's/.*"binaries": "\(.*\)".*/\1/p' "${STATE_DIR}/state.json")/kubectl"

replace=(--replace)
while IFS=$'\t' read -r prefix fabric nic_type labels interfaces; do
  args=(--prefix "${prefix}" --fabric "${fabric}")
  [[ "${nic_type}" != "-" ]] && args+=(--nic-type "${nic_type}")
  if [[ "${labels}" != "-" ]]; then
    IFS=',' read -r -a pairs <<< "${labels}"
    for pair in "${pairs[@]}"; do args+=(--label "${pair}"); done
  fi
  for nic in ${interfaces}; do args+=(--nic "${nic}"); done
  "${BIN}/python" -m tests.simulator --kubeconfig "${STATE_DIR}/simulator.kubeconfig" \
    nodes "${replace[@]}" --no-nfd-labels --count 2 "${args[@]}"
  replace=()
done <<< "${groups}"

# The demo's nodes are fake and run nothing: it agrees to every disruption, so that one
# control plane can take one example after another. On a real cluster, see docs/disruption.md.
echo "make demo: gpudirect_rdma_allow_disruption=all (fake nodes; see docs/disruption.md)"
"${BIN}/ansible-playbook" -i "${INVENTORY}" playbooks/site.yml -e gpudirect_rdma_allow_disruption=all

"${kubectl}" get csv -A
"${kubectl}" get nicclusterpolicy,clusterpolicy
"${kubectl}" get nodes -o custom-columns='NAME:.metadata.name,ALLOCATABLE:.status.allocatable'
echo
echo "KUBECONFIG=${KUBECONFIG}; run it again (nothing changes), or another INVENTORY; stop with: STATE_DIR=${STATE_DIR} make cluster-down"
