#!/usr/bin/env bash
# bench/distributed/walk.sh: what a walk of the corpus costs (SIMHASH.SCAN through
# `simhash export`) when the corpus is small: a fresh Redis, worker and coordinator
# per size, then the wall time of `simhash export` of corpora of BENCH_WALK_SIZES
# fingerprints (default "0 1 1000": empty, one, a thousand random ones; each export
# checked line by line against what was loaded). A walk reads the buckets the
# directories list, the ones that exist, so its cost follows what is stored. Prints
# `bench=walk fps=N seconds=S` lines on stdout. Everything runs on 127.0.0.1 in a
# mktemp -d directory, stopped by PID.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export SIMHASH_SRC=${SIMHASH_SRC:-$(cd "$HERE/../.." && pwd)}
. "$SIMHASH_SRC/tests/integration/lib.sh"
th_init bench-walk
th_need_bins simhash-shard simhash-coordinator simhash
SH="$TH_BIN/simhash"
SIZES=${BENCH_WALK_SIZES:-0 1 1000}
export TH_DAEMON_SECS=3600

# walk FPS: one deployment, FPS fingerprints loaded, export timed
walk() {
    local n=$1
    th_start_redis "r-$n"
    th_start_shard "w-$n" "$TH_REDIS_PORT" 0-255 6 3 ""
    th_start_coord "c-$n" 6 3 30000 "127.0.0.1:$TH_SHARD_PORT"
    python3 - "$n" "$TH_DIR/in-$n.txt" <<'PY'
import random, sys
r = random.Random(7)
with open(sys.argv[2], "w") as f:
    for i in range(int(sys.argv[1])):
        f.write("%d doc-%d\n" % (r.getrandbits(64), i))
PY
    local in="$TH_DIR/in-$n.txt" out="$TH_DIR/out-$n.txt"
    [ "$n" -eq 0 ] || timeout 600 "$SH" load --port "$TH_COORD_PORT" "$in" >/dev/null ||
        th_fail "load of $n fingerprints"
    local t0 t1
    t0=$(date +%s.%N)
    timeout 3600 "$SH" export --port "$TH_COORD_PORT" >"$out" ||
        th_fail "export ($n fingerprints)"
    t1=$(date +%s.%N)
    cmp -s <(sort "$in") <(sort "$out") || th_fail "export differs from what was loaded ($n)"
    echo "bench=walk fps=$n seconds=$(echo "$t1 - $t0" | bc)"
}

for n in $SIZES; do
    walk "$n"
done
th_log "done"
