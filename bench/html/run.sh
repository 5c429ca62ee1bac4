#!/usr/bin/env bash
# bench/html/run.sh [BUILD_DIR]: throughput of HTML fingerprints against the text path
# in the same process (bench-html), on real pages of this Debian machine:
#   python-docs  the Python 3.11 documentation (package python3-doc, Sphinx pages:
#                dense markup; installed first when running as root and missing)
#   templates    the licenses of /usr/share/common-licenses written as pages of two
#                templates (tests/tools/html_templates.py: heads, scripts, styles,
#                wrappers, inline tags)
# then bench-fingerprint's text path (v1 and v5) on generated English text. Every
# line it prints is machine-readable (key=value); medians of 5 runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
bin=$build/bin
[ -x "$bin/bench-html" ] || { echo "run.sh: build first ($bin/bench-html missing)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/simhash-bench-html.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

py=/usr/share/doc/python3.11/html
if [ ! -d "$py" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "run.sh: installing python3-doc" >&2
    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y python3-doc; } >&2 ||
        echo "run.sh: python3-doc could not be installed" >&2
fi
if [ -d "$py" ]; then
    find -L "$py" -name '*.html' -type f | sort > "$tmp/python-docs.list"
    echo "# set=python-docs pages=$(wc -l < "$tmp/python-docs.list")"
    "$bin/bench-html" --runs 5 "$tmp/python-docs.list" | sed 's/^bench=html /bench=html set=python-docs /'
fi
mkdir -p "$tmp/pages"
docs=()
for f in /usr/share/common-licenses/*; do
    r=$(readlink -f "$f"); [ -f "$r" ] && docs+=("$r")
done
python3 "$root/tests/tools/html_templates.py" "$tmp/pages" $(printf '%s\n' "${docs[@]}" | sort -u)
ls "$tmp"/pages/*.html > "$tmp/templates.list"
echo "# set=templates pages=$(wc -l < "$tmp/templates.list")"
"$bin/bench-html" --runs 5 "$tmp/templates.list" | sed 's/^bench=html /bench=html set=templates /'
"$bin/bench-fingerprint" --text english --mib 64 --runs 5 --window 3 | grep -v '^#'
