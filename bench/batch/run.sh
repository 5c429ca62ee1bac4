#!/usr/bin/env bash
# bench/batch/run.sh [BUILD_DIR]: the batch tools at scale. Random fingerprints with a
# planted near-duplicate every 10th (bench-gen), blocks 6 distance 3:
#   (1) 1M and 20M, text: the in-memory path against the spilling path forced by a
#       small --memory, same run (ratio), the same pairs;
#   (2) BENCH_BIG (default 100M) binary with --memory BENCH_MEMORY (1g): time and peak
#       RSS of find-all and of find-clusters, and the pairs and clusters of the
#       in-memory path on the first 20M cross-checked (clusters built on disk).
# Medians of BENCH_ROUNDS (3) for the small sizes, one run for the big one. Prints
# `bench=batch ...` lines. Temporary data in a mktemp -d folder under BENCH_TMPDIR
# (default /tmp; needs about 3x the big input), removed at exit.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
B="$BUILD/bin"
BIG=${BENCH_BIG:-100000000}
MEM=${BENCH_MEMORY:-1g}
ROUNDS=${BENCH_ROUNDS:-3}
for p in bench-gen simhash-find-all simhash-find-clusters; do
    [ -x "$B/$p" ] || { echo "run.sh: $B/$p not built" >&2; exit 1; }
done
W=$(mktemp -d "${BENCH_TMPDIR:-/tmp}/simhash-batchbench.XXXXXX")
trap 'rm -rf "$W"' EXIT
mkdir "$W/tmp"
echo "bench=batch machine cpus=$(nproc) load=\"$(cut -d' ' -f1-3 /proc/loadavg)\""

# run NAME ARGS..: seconds and peak RSS (KiB) of one run
run() {
    local name=$1
    shift
    /usr/bin/time -f "%e %M" -o "$W/time" "$@" 2>"$W/err" >/dev/null || { cat "$W/err" >&2; exit 1; }
    read -r secs kb <"$W/time"
    echo "$secs $kb"
}
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

for n in 1000000 20000000; do
    "$B/bench-gen" -n "$n" --text -o "$W/in.txt"
    for mode in memory spill; do
        extra=()
        [ "$mode" = spill ] && extra=(--memory $((n / 1000000 * 4 + 4))m)
        : >"$W/secs"
        for r in $(seq 1 "$ROUNDS"); do
            set -- $(run "$mode" "$B/simhash-find-all" -i "$W/in.txt" -o "$W/$mode.pairs" --tmpdir "$W/tmp" "${extra[@]}")
            echo "$1" >>"$W/secs"
            kb=$2
        done
        s=$(median <"$W/secs")
        eval "secs_$mode=$s"
        echo "bench=batch n=$n format=text path=$mode median_s=$s peak_rss_kb=$kb ${extra[*]}"
    done
    cmp -s "$W/memory.pairs" "$W/spill.pairs" || { echo "run.sh: the paths disagree at n=$n" >&2; exit 1; }
    awk -v a="$secs_spill" -v b="$secs_memory" -v n="$n" \
        'BEGIN { printf "bench=batch n=%d spill_over_memory=%.2f pairs_same=yes\n", n, a / b }'
done

"$B/bench-gen" -n "$BIG" -o "$W/big.bin"
set -- $(run big "$B/simhash-find-all" --format binary -i "$W/big.bin" -o "$W/big.pairs" --memory "$MEM" \
              --tmpdir "$W/tmp" -v)
summary=$(grep 'values,' "$W/err" | tr -d '\n')
phases=$(grep 'splitting' "$W/err" | tr -d '\n' || true)
echo "bench=batch n=$BIG format=binary memory=$MEM seconds=$1 peak_rss_kb=$2"
echo "bench=batch summary=\"$summary\" phases=\"$phases\""
# find-clusters on the same input and budget (clusters built on disk when their pairs
# exceed it)
set -- $(run bigc "$B/simhash-find-clusters" --format binary -i "$W/big.bin" -o "$W/big.clusters" \
              --memory "$MEM" --tmpdir "$W/tmp" -v)
summary=$(grep 'values,' "$W/err" | tr -d '\n')
phases=$(grep -E 'splitting|building clusters' "$W/err" | tr '\n' ' ' || true)
echo "bench=batch n=$BIG format=binary memory=$MEM command=find-clusters seconds=$1 peak_rss_kb=$2"
echo "bench=batch command=find-clusters summary=\"$summary\" phases=\"$phases\""
rm -f "$W/big.clusters"
# the first 20M of the big input: the in-memory path agrees with the spilling path
head -c 160000000 "$W/big.bin" >"$W/head.bin"
"$B/simhash-find-all" --format binary -i "$W/head.bin" -o "$W/head.mem" --tmpdir "$W/tmp"
"$B/simhash-find-all" --format binary -i "$W/head.bin" -o "$W/head.spill" --memory 200m --tmpdir "$W/tmp"
cmp -s "$W/head.mem" "$W/head.spill" && echo "bench=batch check=first_20m pairs_same=yes" ||
    { echo "run.sh: the paths disagree on the first 20M" >&2; exit 1; }
"$B/simhash-find-clusters" --format binary -i "$W/head.bin" -o "$W/head.mem" --tmpdir "$W/tmp"
"$B/simhash-find-clusters" --format binary -i "$W/head.bin" -o "$W/head.spill" --memory 200m \
    --tmpdir "$W/tmp" -v 2>"$W/err"
grep -q 'building clusters on disk' "$W/err" || { echo "run.sh: clusters were not built on disk" >&2; exit 1; }
cmp -s "$W/head.mem" "$W/head.spill" && echo "bench=batch check=first_20m clusters_same=yes" ||
    { echo "run.sh: the clusters of the paths disagree on the first 20M" >&2; exit 1; }
