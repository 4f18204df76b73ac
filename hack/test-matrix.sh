#!/usr/bin/env bash
# make test-matrix: every ansible-core of tests/ansible-matrix.txt, each in a virtual environment of
# its own (requirements-test.txt with that ansible package): ansible-test sanity, the unit tests,
# and site.yml's converge with its 0-write re-run on the local control plane, for one single-group
# and one mixed-methods inventory. A summary table at the end; the exit status is non-zero when any
# version failed any part.
#
# Environment: MATRIX_PYTHON  the Python 3.12+ the environments are made with (default: the first of
#                             python3.12, pyenv's 3.12.*, then the same of 3.13)
#              MATRIX         ansible-core minors to run, separated by spaces (default: all)
#              GPUDIRECT_RDMA_CACHE cache root; the environments are kept in <it>/matrix
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "${root}"

# A Python that runs and is 3.12 or later (a pyenv shim on PATH may name a version it cannot run).
usable() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }
find_python() {
  if [ -n "${MATRIX_PYTHON:-}" ]; then
    usable "${MATRIX_PYTHON}" && echo "${MATRIX_PYTHON}"
    return
  fi
  local candidate
  # Either passes: the test control plane's certificates name their issuer's key, as 3.13's
  # strict verification (VERIFY_X509_STRICT) requires. The older first, as before.
  for candidate in python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12.*/bin/python \
                   python3.13 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13.*/bin/python; do
    if usable "${candidate}"; then command -v "${candidate}"; return; fi
  done
  return 1
}
if ! python="$(find_python)"; then
  echo "[test-matrix] no Python 3.12 or later found (ansible-core 2.20+ needs one): set MATRIX_PYTHON" >&2
  exit 2
fi

cache="${GPUDIRECT_RDMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpudirect-rdma}/matrix"
state="${root}/.envtest/matrix"
mkdir -p "${cache}"
wanted="${MATRIX:-}"
summary=()
failed=0

export PYTHONPATH="${root}" ANSIBLE_CONFIG="${root}/ansible.cfg"
export ANSIBLE_COLLECTIONS_PATH="${root}/.collections"
export GPUDIRECT_RDMA_SHARED="${GPUDIRECT_RDMA_SHARED:-${root}/../shared}"

# The AAP tests check the job templates against the awx.awx collection's modules, which the
# ansible package carried up to 13 and no longer does: every version's unit tests read the copy of
# make test's ansible package (.venv).
purelib="$("${root}/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
awx="${cache}/awx/ansible_collections"
mkdir -p "${awx}"
ln -sfn "${purelib}/ansible_collections/awx" "${awx}/awx"

# One control plane for every version's converge (the harness runs on make's .venv).
make --no-print-directory cluster-up STATE_DIR="${state}" >/dev/null
trap 'make --no-print-directory cluster-down STATE_DIR="${state}" >/dev/null' EXIT

while read -r minor package; do
  case "${minor}" in ''|'#'*) continue ;; esac
  if [ -n "${wanted}" ] && [[ " ${wanted} " != *" ${minor} "* ]]; then continue; fi
  venv="${cache}/ansible-${package}-py$("${python}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  echo "== [test-matrix] ansible-core ${minor} (ansible ${package}) in ${venv}"
  # The environment counts as made only when its marker holds the requirements it was made from:
  # one left half-made (a run cut off during pip install, a requirement changed since) is made anew.
  # requirements-test.txt's ansible-core pin is make test's release: the ansible package named
  # here brings its own.
  wanted_requirements="$(sed "s/^ansible==.*/ansible==${package}/" requirements-test.txt \
    | grep -v -e '^-r' -e '^ansible-core=='; cat requirements.txt)"
  if [ "$(cat "${venv}/.made-from" 2>/dev/null)" != "${wanted_requirements}" ]; then
    rm -rf "${venv}"
    "${python}" -m venv "${venv}"
    "${venv}/bin/pip" install --quiet --upgrade pip
    printf '%s\n' "${wanted_requirements}" > "${venv}/requirements.txt"
    "${venv}/bin/pip" install --quiet -r "${venv}/requirements.txt"
    printf '%s\n' "${wanted_requirements}" > "${venv}/.made-from"
  fi
  core="$("${venv}/bin/python" -c 'from ansible.release import __version__; print(__version__)')"
  if [[ "${core}" != "${minor}".* ]]; then
    echo "[test-matrix] ansible ${package} carries ansible-core ${core}, not ${minor}" >&2
    exit 2
  fi
  parts=()
  for part in sanity unit converge; do
    log="${venv}-${part}.log"
    case "${part}" in
      sanity) command=(env PYTHON="${venv}/bin/python" bash hack/ansible-test.sh) ;;
      unit) command=(env PYTHONPATH="${root}:${cache}/awx" "${venv}/bin/pytest" -q
                -n "${UNIT_WORKERS:-2}" -p no:cacheprovider tests/unit) ;;
      converge) command=(env GPUDIRECT_RDMA_STATE_DIR="${state}" K8S_AUTH_KUBECONFIG="${state}/kubeconfig"
                "${venv}/bin/pytest" -q -p no:cacheprovider tests/integration/test_site.py
                -k "test_configuration_converges_and_a_second_run_writes_nothing and (shared-device-roce or mixed-methods)") ;;
    esac
    if "${command[@]}" > "${log}" 2>&1; then result="ok"; else result="FAILED"; failed=1; fi
    counts="$(grep -Eo '[0-9]+ (passed|failed|skipped|error)[^=]*' "${log}" | tail -1 || true)"
    [ "${part}" = sanity ] && counts="$(grep -c '^Running sanity test' "${log}" || true) tests"
    echo "   ${part}: ${result} (${counts}; ${log})"
    [ "${result}" = ok ] || tail -20 "${log}"
    parts+=("${part} ${result} (${counts})")
  done
  summary+=("ansible-core ${core}: ${parts[*]}")
done < tests/ansible-matrix.txt

echo
echo "== [test-matrix] ${python} ($("${python}" --version 2>&1))"
printf '%s\n' "${summary[@]}"
exit "${failed}"
