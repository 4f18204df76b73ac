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
cached=true
for binary in "${binaries[@]}"; do
  [[ -x "${BIN_DIR}/${binary}" ]] || cached=false
done
if [[ "${cached}" == true ]]; then
  log "cached: ${BIN_DIR}"
  echo "${BIN_DIR}/kube-controller-manager"
  echo "${ASSETS:-${BIN_DIR}}"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  log "the go command is needed to build ${binaries[*]} (Go 1.24+), or set KUBEBUILDER_ASSETS" \
    "to a directory that has them"
  exit 1
fi

export CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN=local GOFLAGS=-mod=mod
started=$(date +%s)
workdir="$(mktemp -d)"
trap 'rm -rf "${workdir}"' EXIT
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

rm -rf "${BIN_DIR}.partial"
mkdir -p "${BIN_DIR}.partial"
minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
done
log "building ${binaries[*]} (several minutes on a cold cache)"
for binary in "${binaries[@]}"; do
  go build -trimpath -ldflags "${ldflags}" -o "${BIN_DIR}.partial/${binary}" "${packages[${binary}]}"
done
if [[ -n "${ASSETS}" ]]; then
  # Beside whatever the cache already holds for this version; a full build replaces it later.
  mkdir -p "${BIN_DIR}"
  mv "${BIN_DIR}.partial/kube-controller-manager" "${BIN_DIR}/kube-controller-manager"
  rm -rf "${BIN_DIR}.partial"
else
  cp go.mod go.sum "${BIN_DIR}.partial/"
  rm -rf "${BIN_DIR}"
  mv "${BIN_DIR}.partial" "${BIN_DIR}"
fi
log "built in $(( $(date +%s) - started ))s: ${BIN_DIR}"
echo "${BIN_DIR}/kube-controller-manager"
echo "${ASSETS:-${BIN_DIR}}"
