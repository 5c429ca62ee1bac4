#!/usr/bin/env bash
# bench/distributed/walk.sh: what a walk of the corpus costs (SIMHASH.SCAN through
# `simhash export`) when the corpus is small and the key space large: for each bucket
# bits of BENCH_WALK_BITS (default "12 24") and each data layout of BENCH_LAYOUTS
# (default "1 2"), a fresh Redis, worker and coordinator, then the wall time of
# `simhash export` of corpora of BENCH_WALK_SIZES fingerprints (default "0 1 1000":
# empty, one, a thousand random ones; each export checked line by line against what
# was loaded). Prints `bench=walk layout=L bits=B fps=N seconds=S` lines
# on stdout. Everything runs on 127.0.0.1 in a mktemp -d directory, stopped by PID.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export SIMHASH_SRC=${SIMHASH_SRC:-$(cd "$HERE/../.." && pwd)}
. "$SIMHASH_SRC/tests/integration/lib.sh"
th_init bench-walk
th_need_bins simhash-shard simhash-coordinator simhash
SH="$TH_BIN/simhash"
BITS=${BENCH_WALK_BITS:-12 24}
SIZES=${BENCH_WALK_SIZES:-0 1 1000}
export TH_DAEMON_SECS=3600

# walk LAYOUT BITS FPS: one deployment, FPS fingerprints loaded, export timed
walk() {
    local lay=$1 bb=$2 n=$3
    TH_LAYOUT=$lay th_start_redis "r-$lay-$bb-$n"
    TH_LAYOUT=$lay th_start_shard "w-$lay-$bb-$n" "$TH_REDIS_PORT" 0-255 6 3 "" --bucket-bits "$bb"
    th_start_coord "c-$lay-$bb-$n" 6 3 30000 "127.0.0.1:$TH_SHARD_PORT"
    python3 - "$n" "$TH_DIR/in-$lay-$bb-$n.txt" <<'PY'
import random, sys
r = random.Random(7)
with open(sys.argv[2], "w") as f:
    for i in range(int(sys.argv[1])):
        f.write("%d doc-%d\n" % (r.getrandbits(64), i))
PY
    local in="$TH_DIR/in-$lay-$bb-$n.txt" out="$TH_DIR/out-$lay-$bb-$n.txt"
    [ "$n" -eq 0 ] || timeout 600 "$SH" load --port "$TH_COORD_PORT" "$in" >/dev/null ||
        th_fail "load of $n fingerprints (layout $lay, bits $bb)"
    local t0 t1
    t0=$(date +%s.%N)
    timeout 3600 "$SH" export --port "$TH_COORD_PORT" >"$out" ||
        th_fail "export (layout $lay, bits $bb, $n fingerprints)"
    t1=$(date +%s.%N)
    cmp -s <(sort "$in") <(sort "$out") || th_fail "export differs from what was loaded (layout $lay, bits $bb, $n)"
    echo "bench=walk layout=$lay bits=$bb fps=$n seconds=$(echo "$t1 - $t0" | bc)"
}

for lay in ${BENCH_LAYOUTS:-1 2}; do
    for bb in $BITS; do
        for n in $SIZES; do
            walk "$lay" "$bb" "$n"
        done
    done
done
th_log "done"
