#!/usr/bin/env bash
# make demo: the local control plane with the simulator, two fake GPU + NIC nodes, and the
# configuration of an example inventory applied to it.
#
# Until site.yml exists this applies the rendered tree with `kubectl apply --server-side -k`,
# as a GitOps controller would, and shows OLM (simulated) installing the four operators.
set -euo pipefail
cd "$(dirname "$0")/.."

INVENTORY="${INVENTORY:-inventories/shared-device-roce}"
STATE_DIR="${STATE_DIR:-.envtest}"
BIN=.venv/bin
export ANSIBLE_CONFIG="$PWD/ansible.cfg" ANSIBLE_COLLECTIONS_PATH="$PWD/.collections"

if ! "${BIN}/python" -m tests.harness status --state-dir "${STATE_DIR}" >/dev/null 2>&1; then
  "${BIN}/python" -m tests.harness up --state-dir "${STATE_DIR}"
fi
export KUBECONFIG="$PWD/${STATE_DIR}/kubeconfig"
kubectl="$(sed -n 's/.*"binaries": "\(.*\)".*/\1/p' "${STATE_DIR}/state.json")/kubectl"

"${BIN}/python" -m tests.simulator --kubeconfig "${STATE_DIR}/simulator.kubeconfig" nodes --count 2
"${BIN}/ansible-playbook" -i "${INVENTORY}" playbooks/render.yml \
  -e "gpudirect_rdma_render_dir=$PWD/${STATE_DIR}/demo-render"
"${kubectl}" apply --server-side --field-manager=gpudirect-rdma-demo -k "${STATE_DIR}/demo-render"

echo "waiting for the four ClusterServiceVersions (OLM is simulated)"
for _ in $(seq 1 100); do
  succeeded=$("${kubectl}" get csv -A -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Succeeded$' || true)
  [[ "${succeeded}" -ge 4 ]] && break
  sleep 0.3
done
"${kubectl}" get nodes
"${kubectl}" get csv -A
echo
echo "KUBECONFIG=${KUBECONFIG}; stop with: make cluster-down"
