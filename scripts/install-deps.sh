#!/usr/bin/env bash
# install-deps.sh: install the Debian packages simhash needs to build, test and run,
# when they are missing. Safe to run again; does nothing when all are present.
set -euo pipefail

PKGS=(build-essential cmake pkg-config libhiredis-dev libevent-dev libxxhash-dev
      libcmocka-dev redis-server redis-tools clang libclang-rt-14-dev valgrind
      python3 procps iproute2 netcat-openbsd)

missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
