#!/usr/bin/env bash
# bench/cluster/rebalance.sh: cost of adding a master to a loaded deployment. Brings up
# 3 masters with their workers and a coordinator (deploy/simhash-local up --cluster),
# loads N fingerprints through the coordinator, then runs `simhash-local add-node`
# (join + `redis-cli --cluster rebalance --cluster-use-empty-masters`) while an open-loop
# client sends SIMHASH.QUERY at a fixed rate in 5 s windows (bench-dist_load paced).
# Reports: rebalance time, keys and bytes moved to the new master and their rates, and
# the query latency (p50/p99/max of each window) and error replies before and during
# the move. Prints `bench=... metric=... value=...` lines on stdout.
# Environment: SIMHASH_BIN (default build/bin), BENCH_N (default 200000), BENCH_RATE
# (queries/s during the move, default 1000), BENCH_PIPELINE (keys per MIGRATE, 10).
# Everything runs on 127.0.0.1 in a mktemp -d directory and is stopped by PID at exit.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export SIMHASH_SRC=${SIMHASH_SRC:-$(cd "$HERE/../.." && pwd)}
. "$SIMHASH_SRC/tests/integration/lib.sh"
. "$SIMHASH_SRC/tests/integration/deploy_lib.sh"
th_init bench-rebalance
th_need_bins simhash-shard simhash-coordinator bench-dist_load
export SIMHASH_BIN=$TH_BIN
LOAD="$TH_BIN/bench-dist_load"
LOCAL="$SIMHASH_SRC/deploy/simhash-local"
N=${BENCH_N:-200000}
RATE=${BENCH_RATE:-1000}
PIPE=${BENCH_PIPELINE:-10}
RUN="$TH_DIR/run"
emit() { echo "bench=$1 metric=$2 value=$3"; }
val() { sed -n "s/.* metric=$2 value=//p" "$1" | head -n 1; }
calc() { python3 -c "print($1)"; }
sl_down() { [ -f "$RUN/procs" ] && timeout 120 bash "$LOCAL" down --dir "$RUN" >/dev/null 2>&1; return 0; }
trap 'rc=$?; [ -n "${loop_pid:-}" ] && kill "$loop_pid" 2>/dev/null; sl_down; (exit $rc); th_cleanup' EXIT

base=$(dl_free_base 5 5)
[ -n "$base" ] || th_fail "no free port range"
cport=$((base + 200))
emit machine loadavg_1m_start "$(cut -d' ' -f1 /proc/loadavg)"
timeout 300 bash "$LOCAL" up --cluster --masters 3 --replicas 0 --no-aof --fresh --dir "$RUN" \
    --port "$cport" --redis-port "$base" --shard-port $((base + 100)) --timeout-ms 5000 \
    --lifetime 3600 >&2 || th_fail "up"
dl_wait_routing "$cport" || th_fail "the coordinator does not take writes ($DL_REPLY)"
timeout 5 redis-cli -p "$cport" simhash.del 1 >/dev/null
th_log "loading $N fingerprints"
timeout 1800 "$LOAD" sys-ingest --port "$cport" --offset 0 --count "$N" --seconds 3600 --depth 64 \
    --name load >"$TH_DIR/load.out" || { cat "$TH_DIR/load.out"; th_fail "load"; }
keys_total=0
for p in $base $((base + 1)) $((base + 2)); do
    keys_total=$((keys_total + $(timeout 5 redis-cli -p "$p" dbsize | tr -d '\r')))
done
emit load fingerprints "$N"
emit load keys "$keys_total"

# paced query windows in the background until the stop file appears
window() { # window NAME
    timeout 60 "$LOAD" paced --port "$cport" --corpus "$N" --rate "$RATE" --seconds 5 \
        --count 100000000 --name "$1" >"$TH_DIR/$1.out" 2>&1
    return 0
}
window before
emit before p50_ms "$(val "$TH_DIR/before.out" p50_ms)"
emit before p99_ms "$(val "$TH_DIR/before.out" p99_ms)"
emit before errors "$(val "$TH_DIR/before.out" errors)"
( w=0; while [ ! -f "$TH_DIR/stop" ] && [ $w -lt 200 ]; do w=$((w + 1)); window "during-$w"; done ) &
loop_pid=$!

t0=$(date +%s.%N)
timeout 1800 bash "$LOCAL" add-node --dir "$RUN" --pipeline "$PIPE" --lifetime 3600 >"$TH_DIR/add.out" 2>&1 ||
    { cat "$TH_DIR/add.out" >&2; th_fail "add-node"; }
t1=$(date +%s.%N)
touch "$TH_DIR/stop"
wait "$loop_pid"
loop_pid=
cat "$TH_DIR/add.out" >&2
moved_s=$(sed -n 's/.*moved in \([0-9.]*\) s$/\1/p' "$TH_DIR/add.out")
nkeys=$(timeout 5 redis-cli -p $((base + 3)) dbsize | tr -d '\r')
nmem=$(timeout 5 redis-cli -p $((base + 3)) info memory | tr -d '\r' | sed -n 's/^used_memory://p')
emit move add_node_seconds "$(calc "round($t1 - $t0, 1)")"
emit move rebalance_seconds "$moved_s"
emit move keys_moved "$nkeys"
emit move bytes_on_new_master "$nmem"
emit move keys_per_sec "$(calc "round($nkeys / $moved_s)")"
emit move mb_per_sec "$(calc "round($nmem / $moved_s / 1e6, 2)")"
python3 - "$TH_DIR" <<'EOF'
import glob, re, sys
rows = []
for f in sorted(glob.glob(sys.argv[1] + "/during-*.out"), key=lambda x: int(re.findall(r"(\d+)\.out$", x)[0])):
    d = dict(re.findall(r"metric=(\S+) value=(\S+)", open(f).read()))
    rows.append(d)
if rows:
    print("bench=during metric=windows value=%d" % len(rows))
    print("bench=during metric=replies value=%d" % sum(float(r.get("replies", 0)) for r in rows))
    print("bench=during metric=errors value=%d" % sum(float(r.get("errors", 0)) for r in rows))
    print("bench=during metric=worst_p99_ms value=%.2f" % max(float(r.get("p99_ms", 0)) for r in rows))
    print("bench=during metric=worst_max_ms value=%.2f" % max(float(r.get("max_ms", 0)) for r in rows))
    print("bench=during metric=median_p50_ms value=%.2f" % sorted(float(r.get("p50_ms", 0)) for r in rows)[len(rows) // 2])
EOF
emit machine loadavg_1m_end "$(cut -d' ' -f1 /proc/loadavg)"
th_log "done"
