#!/usr/bin/env bash
# bench/run-find-all.sh: benchmark of exact batch matching on 1,000,000 random hashes.
# 1. bench-find_all: match_find_all / match_find_clusters in-process against the qsort
#    reference (median of 3, same pairs checked).
# 2. The whole simhash-find-all program on a generated input file, timed with
#    /usr/bin/time -v (wall time and peak RSS, median of 3), next to the reference time.
# usage: bench/run-find-all.sh [BUILD_DIR]   (default: build; env N, BLOCKS, DISTANCE, REPEATS)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$ROOT/build}}
BIN=$BUILD/bin
N=${N:-1000000}
BLOCKS=${BLOCKS:-"4 5 6"}
DISTANCE=${DISTANCE:-3}
REPEATS=${REPEATS:-3}
for prog in bench-find_all simhash-find-all; do
    [ -x "$BIN/$prog" ] || { echo "run-find-all: $BIN/$prog not built" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "run-find-all: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "# machine: $(nproc) cpus, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# in-process (bench-find_all, median of $REPEATS)"
bargs=()
for b in $BLOCKS; do bargs+=(-b "$b"); done
timeout 1800 "$BIN/bench-find_all" -n "$N" -d "$DISTANCE" -r "$REPEATS" "${bargs[@]}" | tee "$TMP/inproc.txt"

# Input file: N uniformly random unsigned 64-bit decimals (splitmix64, fixed seed).
python3 - "$N" >"$TMP/hashes.txt" <<'EOF'
import sys
n = int(sys.argv[1]); s = 0x5eed5eed5eed5eed; M = (1 << 64) - 1
out = []
for _ in range(n):
    s = (s + 0x9e3779b97f4a7c15) & M
    z = s
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    out.append(str(z ^ (z >> 31)))
sys.stdout.write("\n".join(out) + "\n")
EOF

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "# whole program (simhash-find-all -i FILE -o /dev/null, /usr/bin/time -v, median of $REPEATS)"
for b in $BLOCKS; do
    : >"$TMP/wall" ; : >"$TMP/rss"
    for _ in $(seq "$REPEATS"); do
        timeout 600 /usr/bin/time -v "$BIN/simhash-find-all" -b "$b" -d "$DISTANCE" \
            -i "$TMP/hashes.txt" -o /dev/null 2>"$TMP/time.txt" >/dev/null
        # "Elapsed (wall clock) time (h:mm:ss or m:ss): 0:00.21"
        awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,p,":"); s=0; for(i=1;i<=n;i++) s=s*60+p[i]; print s}' \
            "$TMP/time.txt" >>"$TMP/wall"
        awk -F': ' '/Maximum resident set size/ {print $2}' "$TMP/time.txt" >>"$TMP/rss"
    done
    wall=$(median <"$TMP/wall")
    rss=$(median <"$TMP/rss")
    ref=$(grep -o "blocks=$b .*ref_median_s=[0-9.]*" "$TMP/inproc.txt" | grep -o "ref_median_s=[0-9.]*" | cut -d= -f2)
    ratio=$(awk -v r="$ref" -v w="$wall" 'BEGIN { if (w > 0) printf "%.1f", r / w; else print "inf" }')
    echo "bench=find_all_cli n=$N distance=$DISTANCE blocks=$b wall_median_s=$wall peak_rss_kb=$rss ref_median_s=$ref ratio=$ratio"
done
