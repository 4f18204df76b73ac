#!/usr/bin/env bash
# Chromium for the test that opens the verify report's HTML page in a real headless browser:
# Debian's package, installed when missing (as root, or through sudo). Prints the binary's path.
set -euo pipefail
for candidate in "${CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
  if [ -n "${candidate}" ] && [ -x "${candidate}" ]; then
    echo "[install-browser] ${candidate}: $("${candidate}" --version 2>/dev/null || echo '?')"
    exit 0
  fi
done
if ! command -v apt-get >/dev/null 2>&1; then
  echo "[install-browser] no chromium and no apt-get: install Chromium and set CHROMIUM to its path" >&2
  exit 1
fi
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "[install-browser] no chromium; installing Debian's package needs root or sudo" >&2
    exit 1
  fi
  as_root=(sudo)
fi
echo "[install-browser] installing Debian's chromium (about a minute)"
"${as_root[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends \
  chromium fonts-dejavu-core >/dev/null
echo "[install-browser] /usr/bin/chromium: $(/usr/bin/chromium --version)"
