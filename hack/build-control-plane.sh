#!/usr/bin/env bash
# Build kube-apiserver, etcd and kubectl from the Go module proxy, the way envtest would ship
# them, plus kube-controller-manager (envtest ships none), and cache them outside the repository.
#
# Prints two lines last on stdout: the path of kube-controller-manager, then the directory that
# holds kube-apiserver, etcd and kubectl.
#
#   KUBEBUILDER_ASSETS   a directory that already has kube-apiserver and etcd: used as is, no build.
#                        If it has no kube-controller-manager, that one alone is built into the
#                        cache, at the version of its kube-apiserver (a controller manager must not
#                        be newer than its API server), and its path is printed as above.
#   GPUDIRECT_RDMA_CACHE cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/gpudirect-rdma)
#   KUBE_VERSION         k8s.io/kubernetes tag to build (default v1.35.4; v1.34.4 is the fallback)
set -euo pipefail

log() { printf '[build-control-plane] %s\n' "$*" >&2; }

ASSETS="${KUBEBUILDER_ASSETS:-}"
if [[ -n "${ASSETS}" ]]; then
  for binary in kube-apiserver etcd; do
    if [[ ! -x "${ASSETS}/${binary}" ]]; then
      log "KUBEBUILDER_ASSETS=${ASSETS} has no executable ${binary}"
      exit 1
    fi
  done
  log "using KUBEBUILDER_ASSETS=${ASSETS}"
  if [[ -x "${ASSETS}/kube-controller-manager" ]]; then
    echo "${ASSETS}/kube-controller-manager"
    echo "${ASSETS}"
    exit 0
  fi
  if [[ -z "${KUBE_VERSION:-}" ]]; then
    KUBE_VERSION="$("${ASSETS}/kube-apiserver" --version | sed -n 's/^Kubernetes \(v1\.[0-9]*\.[0-9]*\)$/\1/p')"
    if [[ -z "${KUBE_VERSION}" ]]; then
      log "could not read a release version from ${ASSETS}/kube-apiserver --version; set KUBE_VERSION"
      exit 1
    fi
  fi
  log "KUBEBUILDER_ASSETS has no kube-controller-manager: the cache has (or gets) one at ${KUBE_VERSION}"
fi

KUBE_VERSION="${KUBE_VERSION:-v1.35.4}"
# k8s.io/kubernetes vX.Y.Z publishes its staging modules as v0.Y.Z.
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"
CACHE_ROOT="${GPUDIRECT_RDMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpudirect-rdma}"
BIN_DIR="${CACHE_ROOT}/control-plane/${KUBE_VERSION}"

# What to build: all four binaries, or only the controller manager beside KUBEBUILDER_ASSETS.
if [[ -n "${ASSETS}" ]]; then
  binaries=(kube-controller-manager)
else
  binaries=(kube-apiserver kubectl kube-controller-manager etcd)
fi
complete() {
  local binary
  for binary in "${binaries[@]}"; do
    [[ -x "$1/${binary}" ]] || return 1
  done
}
print_paths() {
  echo "${BIN_DIR}/kube-controller-manager"
  echo "${ASSETS:-${BIN_DIR}}"
}
if complete "${BIN_DIR}"; then
  log "cached: ${BIN_DIR}"
  print_paths
  exit 0
fi

# One build per version at a time: a second run (another clone, CI beside a developer) waits for
# the first and then finds its binaries. Each run still builds into a directory of its own and
# moves it into place in one rename, so even without flock no run removes another's work.
mkdir -p "${CACHE_ROOT}/control-plane"
if command -v flock >/dev/null 2>&1; then
  lock="${BIN_DIR}.lock"
  exec 9>"${lock}"
  if ! flock --nonblock 9; then
    log "another build of ${KUBE_VERSION} runs (lock ${lock}); waiting for it"
    waited=$(date +%s)
    flock 9
    log "the other build ended after $(( $(date +%s) - waited ))s of waiting"
  fi
  if complete "${BIN_DIR}"; then
    log "cached (built by the other run): ${BIN_DIR}"
    print_paths
    exit 0
  fi
else
  log "no flock on this machine: building without waiting for other runs"
fi

if ! command -v go >/dev/null 2>&1; then
  log "the go command is needed to build ${binaries[*]} (Go 1.24+), or set KUBEBUILDER_ASSETS" \
    "to a directory that has them"
  exit 1
fi

export CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN=local GOFLAGS=-mod=mod
started=$(date +%s)
workdir="$(mktemp -d)"
# This run's own output directory, beside the cache entry so the final move is one rename.
build_dir="$(mktemp -d "${BIN_DIR}.partial.XXXXXX")"
trap 'rm -rf "${workdir}" "${build_dir}"' EXIT
cd "${workdir}"

log "reading the go.mod of k8s.io/kubernetes@${KUBE_VERSION} from the module proxy"
kube_gomod="$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
if [[ -z "${kube_gomod}" || ! -f "${kube_gomod}" ]]; then
  log "could not download k8s.io/kubernetes@${KUBE_VERSION} (try KUBE_VERSION=v1.34.4)"
  exit 1
fi

# k8s.io/kubernetes points its staging modules at ./staging; a module that depends on it must
# pin each of them to the published version instead. The list changes between releases, so it
# is read from the go.mod that the proxy serves.
mapfile -t staging_modules < <(sed -n 's/^[[:space:]]*\(k8s\.io\/[a-z0-9-]*\) => \.\/staging\/.*/\1/p' "${kube_gomod}")
if [[ "${#staging_modules[@]}" -eq 0 ]]; then
  log "found no staging replace directives in ${kube_gomod}"
  exit 1
fi
log "${#staging_modules[@]} staging modules pinned to ${STAGING_VERSION}"

go_directive="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "${kube_gomod}")"
{
  echo "module gpudirect-rdma/control-plane-build"
  echo
  echo "go ${go_directive}"
  echo
  echo "require k8s.io/kubernetes ${KUBE_VERSION}"
  echo
  echo "replace ("
  for module in "${staging_modules[@]}"; do
    echo "	${module} => ${module} ${STAGING_VERSION}"
  done
  echo ")"
} > go.mod

# The Go package of each binary; etcd's version is filled in below.
declare -A packages=(
  [kube-apiserver]="k8s.io/kubernetes/cmd/kube-apiserver"
  [kubectl]="k8s.io/kubernetes/cmd/kubectl"
  [kube-controller-manager]="k8s.io/kubernetes/cmd/kube-controller-manager"
  [etcd]="go.etcd.io/etcd/server/v3"
)
log "resolving modules"
kube_commands=()
for binary in "${binaries[@]}"; do
  if [[ "${binary}" != etcd ]]; then
    kube_commands+=("${packages[${binary}]}@${KUBE_VERSION}")
  fi
done
go get "${kube_commands[@]}"
if [[ -z "${ASSETS}" ]]; then
  # etcd at the version k8s.io/kubernetes itself requires, so no dependency of kube-apiserver moves.
  etcd_version="$(sed -n 's/^[[:space:]]*go\.etcd\.io\/etcd\/server\/v3 \(v[0-9.]*\).*/\1/p' "${kube_gomod}")"
  if [[ -z "${etcd_version}" ]]; then
    log "found no go.etcd.io/etcd/server/v3 requirement in ${kube_gomod}"
    exit 1
  fi
  go get "go.etcd.io/etcd/server/v3@${etcd_version}"
fi

minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
done
log "building ${binaries[*]} (several minutes on a cold cache)"
for binary in "${binaries[@]}"; do
  binary_started=$(date +%s)
  go build -trimpath -ldflags "${ldflags}" -o "${build_dir}/${binary}" "${packages[${binary}]}"
  log "  ${binary}: $(( $(date +%s) - binary_started ))s"
done
if [[ -n "${ASSETS}" ]]; then
  # Beside whatever the cache already holds for this version; a full build replaces it later.
  mkdir -p "${BIN_DIR}"
  mv -f "${build_dir}/kube-controller-manager" "${BIN_DIR}/kube-controller-manager"
else
  cp go.mod go.sum "${build_dir}/"
  chmod 755 "${build_dir}"
  # rename(2) onto a missing or empty directory: the cache entry appears whole or not at all.
  if ! mv -T "${build_dir}" "${BIN_DIR}" 2>/dev/null; then
    if complete "${BIN_DIR}"; then
      log "another run put its binaries in ${BIN_DIR} first; keeping those"
    else
      # An incomplete entry (a controller manager built beside KUBEBUILDER_ASSETS): set it
      # aside, move this build in, then remove the old one.
      aside="$(mktemp -d "${BIN_DIR}.old.XXXXXX")"
      mv -T "${BIN_DIR}" "${aside}"
      mv -T "${build_dir}" "${BIN_DIR}"
      rm -rf "${aside}"
    fi
  fi
fi
log "built in $(( $(date +%s) - started ))s: ${BIN_DIR}"
print_paths
