#!/usr/bin/env bash
# bench/python/run.sh [BUILD_DIR]: benchmark of the Python package (client/python).
# Installs it with Debian's pip into a temporary directory, runs bench.py (1M random
# hashes, Corpus(5, 3) bulk steps and find_all; medians of 3), then the same
# find_all in C in the same run (BUILD_DIR/bin/bench-find_all: match_find_all on 1M
# uniformly random hashes, blocks 5, distance 3, median of 3) and prints the ratio
# Python / C. Build first: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
PY=${SIMHASH_PYTHON:-/usr/bin/python3}
REPEATS=${REPEATS:-3}
[ -x "$BUILD/bin/bench-find_all" ] || { echo "run.sh: $BUILD/bin/bench-find_all not built" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/simhash-pybench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
timeout 600 "$PY" -m pip install --no-build-isolation --no-index --disable-pip-version-check \
    --no-cache-dir --target "$WORK/site" "$ROOT/client/python" >"$WORK/pip.log" 2>&1 ||
    { tail -n 30 "$WORK/pip.log" >&2; exit 1; }
echo "bench=python machine cpus=$(nproc) load=\"$(cut -d' ' -f1-3 /proc/loadavg)\""
PYTHONPATH="$WORK/site" timeout 1800 "$PY" "$ROOT/bench/python/bench.py" --repeats "$REPEATS" | tee "$WORK/py.out"
timeout 600 "$BUILD/bin/bench-find_all" -n 1000000 -b 5 -d 3 -r "$REPEATS" -x 1 | tee "$WORK/c.out"
c=$(sed -n 's/.* median_s=\([0-9.]*\).*/\1/p' "$WORK/c.out" | head -n 1)
for step in find_all find_all_array; do
    p=$(sed -n "s/.*step=$step .*median_s=\([0-9.]*\).*/\1/p" "$WORK/py.out")
    awk -v p="$p" -v c="$c" -v s="$step" 'BEGIN { printf "bench=python_vs_c step=%s python_s=%.4f c_s=%.4f ratio=%.2f\n", s, p, c, p / c }'
done
