#!/usr/bin/env bash
# bench/quality/realpages/run.sh [evaluate.py options...]: article extraction and
# page fingerprints on real web pages with ground truth (README.md beside this file).
# Installs Debian's python3-lxml and python3-readability when they are missing (as
# root; otherwise it says what to install), then runs evaluate.py with Debian's
# /usr/bin/python3. Options: --algorithms v5,v1,all-text  --set dev|heldout|all
# --simhash PATH (default build/bin/simhash)  --pages N  --dump DIR  --json FILE
# --no-readability  --trafilatura-dir DIR (a trafilatura checkout: the snippets
# measure on all pages of its evaluation, set trafilatura-all).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
PKGS=(python3 python3-lxml python3-readability)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "run.sh: missing ${missing[*]}: apt-get install -y ${missing[*]} (as root)" >&2
        exit 2
    fi
    echo "run.sh: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
fi
exec /usr/bin/python3 "$here/evaluate.py" "$@"
