#!/usr/bin/env bash
# install-deps.sh: install the Debian packages simhash needs to build, test and run,
# when they are missing. Safe to run again; does nothing when all are present.
set -euo pipefail

PKGS=(build-essential cmake pkg-config libhiredis-dev libevent-dev libssl-dev openssl libxxhash-dev libutf8proc-dev libxml2-dev
      libcmocka-dev redis-server redis-tools clang libclang-rt-14-dev valgrind
      python3 python3-redis procps iproute2 nftables netcat-openbsd bsdutils
      python3-dev python3-setuptools python3-wheel python3-pip python3-venv python3-numpy
      prometheus libsystemd-dev help2man groff-base systemd dpkg-dev
      python3-scrapy lintian man-db file python3-lxml python3-readability)
# python3-*: the Python package (client/python; pip install --no-build-isolation) and its
# tests (tests/integration/test_python.sh; numpy for the buffer-protocol cases)
# libssl-dev: TLS on the daemons' ports (with libevent-dev's libevent_openssl); openssl:
# the certificates of tests/integration/test_tls.sh
# libsystemd-dev: sd_notify (Type=notify units); help2man: the man pages; groff-base,
# systemd (systemd-analyze) and dpkg-dev (cpack's dependency list): test_install.sh
# iproute2 (ip netns, veth, bridge) and nftables (partitions): tests/multihost
# prometheus: its promtool checks the /metrics text (tests/integration/test_metrics.sh)
# and the rules of deploy/prometheus (tests/integration/test_prometheus_rules.sh)
# python3-scrapy: the crawl through simhash.scrapy (tests/integration/test_scrapy.sh)
# python3-lxml, python3-readability: bench/quality/realpages (readability-lxml as the
# reference extractor, lxml for the ground truth)
# lintian, file (cpack's and the test's ELF checks): the .debs checked and installed
# into a scratch root (tests/integration/test_deb.sh); man-db: lexgrog reads the man
# pages' names (test_install.sh)
# node and npm: only for the tests that run ioredis and node-redis (tests/clients)
command -v node >/dev/null && command -v npm >/dev/null || PKGS+=(nodejs npm)

missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# tests/clients: the npm clients, at the versions package-lock.json names
install_node_clients() {
    local d
    d="$(cd "$(dirname "$0")/.." && pwd)/tests/clients"
    if [ ! -d "$d/node_modules/ioredis" ] || [ ! -d "$d/node_modules/redis" ] ||
       [ "$d/package-lock.json" -nt "$d/node_modules" ]; then
        echo "install-deps: npm ci in $d" >&2
        (cd "$d" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    fi
}
if [ ${#missing[@]} -eq 0 ]; then
    install_node_clients
    exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_node_clients
