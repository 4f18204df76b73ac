#!/usr/bin/env bash
# Build the monitoring tools the tests run for real from the Go module proxy, and keep them
# outside the repository: promtool and prometheus (github.com/prometheus/prometheus), and the
# prometheus-operator CRDs (ServiceMonitor, PrometheusRule, ...) from its module's
# example/prometheus-operator-crd/.
#
#   bash hack/build-monitoring-tools.sh        # all; prints the directory of promtool,
#                                              # prometheus and crds/
#   bash hack/build-monitoring-tools.sh crds   # the CRDs only (a module download, no build; the
#                                              # local control plane serves them); prints their
#                                              # directory
#
#   GPUDIRECT_RDMA_CACHE  cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/gpudirect-rdma)
#   PROMETHEUS_VERSION    github.com/prometheus/prometheus module version (default v0.316.0,
#                         Prometheus 3.16)
#   PROMETHEUS_OPERATOR_VERSION  github.com/prometheus-operator/prometheus-operator module
#                         version of the CRDs (default v0.85.0)
set -euo pipefail

log() { printf '[build-monitoring-tools] %s\n' "$*" >&2; }

PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
PROMETHEUS_OPERATOR_VERSION="${PROMETHEUS_OPERATOR_VERSION:-v0.85.0}"
CACHE_ROOT="${GPUDIRECT_RDMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpudirect-rdma}"
DIR="${CACHE_ROOT}/monitoring/prometheus-${PROMETHEUS_VERSION}-operator-${PROMETHEUS_OPERATOR_VERSION}"
CRDS="${CACHE_ROOT}/monitoring/prometheus-operator-${PROMETHEUS_OPERATOR_VERSION}-crds"
export GOWORK=off GOTOOLCHAIN=local GOFLAGS="-mod=mod -buildvcs=false"

# The CRDs, into ${CRDS} (one rename: a run beside this one finds them whole or not at all).
fetch_crds() {
  [[ -f "${CRDS}/monitoring.coreos.com_prometheusrules.yaml" ]] && return 0
  if ! command -v go >/dev/null 2>&1; then
    log "the go command is needed to download the prometheus-operator CRDs"
    return 1
  fi
  log "the CRDs of github.com/prometheus-operator/prometheus-operator ${PROMETHEUS_OPERATOR_VERSION}"
  mkdir -p "${CACHE_ROOT}/monitoring"
  local module_dir partial
  module_dir="$(go mod download -json \
    "github.com/prometheus-operator/prometheus-operator@${PROMETHEUS_OPERATOR_VERSION}" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  partial="$(mktemp -d "${CRDS}.XXXXXX")"
  cp "${module_dir}"/example/prometheus-operator-crd/monitoring.coreos.com_*.yaml "${partial}/"
  chmod u+w "${partial}/"*
  mv -T "${partial}" "${CRDS}" 2>/dev/null || rm -rf "${partial}"
}

if [[ "${1:-}" == "crds" ]]; then
  fetch_crds
  echo "${CRDS}"
  exit 0
fi

complete() {
  [[ -x "$1/promtool" && -x "$1/prometheus" && -f "$1/crds/monitoring.coreos.com_prometheusrules.yaml" ]]
}
if complete "${DIR}"; then
  log "cached: ${DIR}"
  echo "${DIR}"
  exit 0
fi

# One build per version at a time; each run builds into a directory of its own and moves it into
# place in one rename, so that no run removes another's work.
mkdir -p "${CACHE_ROOT}/monitoring"
if command -v flock >/dev/null 2>&1; then
  exec 9>"${DIR}.lock"
  if ! flock --nonblock 9; then
    log "another build runs (lock ${DIR}.lock); waiting for it"
    flock 9
  fi
  if complete "${DIR}"; then
    log "cached (built by the other run): ${DIR}"
    echo "${DIR}"
    exit 0
  fi
fi

if ! command -v go >/dev/null 2>&1; then
  log "the go command is needed to build promtool and prometheus (Go 1.24+)"
  exit 1
fi

started=$(date +%s)
work="$(mktemp -d "${CACHE_ROOT}/monitoring/build.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
mkdir -p "${work}/out/crds"

# As Prometheus's own build makes it (.promu.yml): the netgo tag and the version in the binary.
# Module v0.MMM.P is Prometheus MMM/100 . MMM%100 . P (v0.316.0 is 3.16.0).
module_minor="${PROMETHEUS_VERSION#v0.}"
module_patch="${module_minor#*.}"
module_minor="${module_minor%%.*}"
release="$(( module_minor / 100 )).$(( module_minor % 100 )).${module_patch}"
version_package=github.com/prometheus/common/version
log "building promtool and prometheus ${release} (github.com/prometheus/prometheus ${PROMETHEUS_VERSION})"
GOBIN="${work}/out" go install -tags netgo \
  -ldflags "-X ${version_package}.Version=${release} -X ${version_package}.Revision=${PROMETHEUS_VERSION}" \
  "github.com/prometheus/prometheus/cmd/promtool@${PROMETHEUS_VERSION}" \
  "github.com/prometheus/prometheus/cmd/prometheus@${PROMETHEUS_VERSION}"

fetch_crds
cp "${CRDS}"/*.yaml "${work}/out/crds/"

rm -rf "${DIR}"
mv "${work}/out" "${DIR}"
log "built in $(( $(date +%s) - started ))s: ${DIR}"
echo "${DIR}"
