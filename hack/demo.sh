#!/usr/bin/env bash
# make demo: the local control plane with the simulator, two fake GPU + NIC nodes, then the main
# job, playbooks/site.yml, on an example inventory (INVENTORY=inventories/<name>).
set -euo pipefail
cd "$(dirname "$0")/.."

INVENTORY="${INVENTORY:-inventories/shared-device-roce}"
STATE_DIR="${STATE_DIR:-.envtest}"
BIN=.venv/bin
export ANSIBLE_CONFIG="$PWD/ansible.cfg" ANSIBLE_COLLECTIONS_PATH="$PWD/.collections"

if ! "${BIN}/python" -m tests.harness status --state-dir "${STATE_DIR}" >/dev/null 2>&1; then
  "${BIN}/python" -m tests.harness up --state-dir "${STATE_DIR}"
fi
export K8S_AUTH_KUBECONFIG="$PWD/${STATE_DIR}/kubeconfig" KUBECONFIG="$PWD/${STATE_DIR}/kubeconfig"
kubectl="$(sed -n 's/.*"binaries": "\(.*\)".*/\1/p' "${STATE_DIR}/state.json")/kubectl"

# Two nodes with the inventory's NICs, without NFD labels: the simulated NFD adds them.
nics=$("${BIN}/python" - "${INVENTORY}" <<'PY'
import sys
sys.path.insert(0, ".collections")
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.unit.inventories import inputs
from pathlib import Path
plan = build_plan(inputs(Path(sys.argv[1]).name))
group = plan["groups"][0]
print(group["fabric"], *[rail["interface"] for rail in group["rails"]])
PY
)
read -r fabric interfaces <<< "${nics}"
nic_args=()
for nic in ${interfaces}; do nic_args+=(--nic "${nic}"); done
"${BIN}/python" -m tests.simulator --kubeconfig "${STATE_DIR}/simulator.kubeconfig" \
  nodes --replace --no-nfd-labels --count 2 --fabric "${fabric}" "${nic_args[@]}"

"${BIN}/ansible-playbook" -i "${INVENTORY}" playbooks/site.yml

"${kubectl}" get csv -A
"${kubectl}" get nicclusterpolicy,clusterpolicy
"${kubectl}" get nodes -o custom-columns='NAME:.metadata.name,ALLOCATABLE:.status.allocatable'
echo
echo "KUBECONFIG=${KUBECONFIG}; run it again (nothing changes), or another INVENTORY; stop with: make cluster-down"
