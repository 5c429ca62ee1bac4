#!/usr/bin/env bash
# bench/cluster/run.sh: scaling benchmark of distributed mode over Redis Cluster on this
# machine. For M = 1, 2, 3 masters (no replicas), each with its simhash-shard worker,
# one simhash-coordinator (deploy/simhash-local up --cluster):
#   (1) ingest: SIMHASH.ADD of N new fingerprints through the coordinator (the load)
#   (2) memory: used_memory summed over the masters, per fingerprint and per
#       (fingerprint, table) entry
#   (3) query rate: SIMHASH.QUERY of random corpus fingerprints, pipelined
#   (4) ingest rate into the loaded corpus: SIMHASH.ADD of fresh fingerprints
# Rates are medians of BENCH_ROUNDS rounds; each is also given as the ratio to M = 1.
# Then (5), the per-node model used by docs/capacity.md: one plain redis-server with
# zset-max-listpack-entries BENCH_LP_MAX, bucket keys populated as at web-crawl scale
# (256 x BENCH_PER_KEY fingerprints written below the first split: every (table, shard)
# one bucket of BENCH_PER_KEY entries, below the split limit of 256 as the buckets of
# a corpus of any size are): bytes per entry and the raw Redis query rate (one
# ZRANGEBYLEX per table, pipelined) on such keys.
# Prints `bench=... metric=... value=...` lines on stdout (progress on stderr).
# Environment: SIMHASH_BIN (default build/bin), BENCH_N (corpus, default 100000),
# BENCH_SECONDS (per rate, 8), BENCH_ROUNDS (3), BENCH_DEPTH (64), BENCH_MASTERS
# ("1 2 3"), BENCH_PER_KEY (180; a shard of the random corpus must stay below 256), BENCH_LP_MAX (1024), BENCH_NODE_MODEL (1; 0 skips it).
# Everything runs on 127.0.0.1 in a mktemp -d directory and is stopped by PID at exit.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export SIMHASH_SRC=${SIMHASH_SRC:-$(cd "$HERE/../.." && pwd)}
. "$SIMHASH_SRC/tests/integration/lib.sh"
. "$SIMHASH_SRC/tests/integration/deploy_lib.sh"
th_init bench-cluster
th_need_bins simhash-shard simhash-coordinator bench-dist_load
export SIMHASH_BIN=$TH_BIN
LOAD="$TH_BIN/bench-dist_load"
LOCAL="$SIMHASH_SRC/deploy/simhash-local"
N=${BENCH_N:-100000}
SECS=${BENCH_SECONDS:-8}
ROUNDS=${BENCH_ROUNDS:-3}
DEPTH=${BENCH_DEPTH:-64}
MASTERS_LIST=${BENCH_MASTERS:-1 2 3}
PER_KEY=${BENCH_PER_KEY:-180}
LP_MAX=${BENCH_LP_MAX:-1024}
M_BLOCKS=6 K=3
export TH_DAEMON_SECS=3600
RUN=

emit() { echo "bench=$1 metric=$2 value=$3"; }
val() { sed -n "s/.* metric=$2 value=//p" "$1" | head -n 1; }
median() { python3 -c "import statistics, sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
calc() { python3 -c "print($1)"; }
run() { # run NAME MODE ARGS..: one bench-dist_load run, output in $TH_DIR/NAME.out
    local name=$1
    shift
    timeout $((SECS * 3 + 900)) "$LOAD" "$@" --name "$name" --blocks "$M_BLOCKS" --distance "$K" \
        >"$TH_DIR/$name.out" || { cat "$TH_DIR/$name.out"; th_fail "bench-dist_load $name"; }
    cat "$TH_DIR/$name.out"
}
sl_down() { [ -n "$RUN" ] && [ -f "$RUN/procs" ] && timeout 120 bash "$LOCAL" down --dir "$RUN" >/dev/null 2>&1; return 0; }
trap 'rc=$?; sl_down; (exit $rc); th_cleanup' EXIT

# used_memory summed over the masters of the deployment in $RUN
mem_masters() {
    local p total=0 m
    for p in $(cat "$RUN"/redis-*.port); do
        [ "$(timeout 5 redis-cli -p "$p" role | head -n 1)" = master ] || continue
        m=$(timeout 5 redis-cli -p "$p" info memory | tr -d '\r' | sed -n 's/^used_memory://p')
        total=$((total + m))
    done
    echo "$total"
}


ntables=$(python3 -c "import math; print(math.comb($M_BLOCKS, $M_BLOCKS - $K))")
emit machine cores "$(nproc)"
emit machine loadavg_1m_start "$(cut -d' ' -f1 /proc/loadavg)"
th_log "blocks $M_BLOCKS distance $K ($ntables tables), corpus $N, $SECS s per rate, $ROUNDS rounds, masters: $MASTERS_LIST"

declare -A QPS IPS LOADR
for M in $MASTERS_LIST; do
    RUN="$TH_DIR/m$M"
    base=$(dl_free_base 4 6)
    [ -n "$base" ] || th_fail "no free port range"
    cport=$((base + 200))
    th_log "M=$M: simhash-local up --cluster --masters $M (redis from $base)"
    timeout 300 bash "$LOCAL" up --cluster --masters "$M" --replicas 0 --no-aof --fresh --dir "$RUN" \
        --port "$cport" --redis-port "$base" --shard-port $((base + 100)) --blocks $M_BLOCKS \
        --distance $K --timeout-ms 5000 --lifetime 3600 >&2 || th_fail "up --cluster --masters $M"
    # wait for complete routing: an ADD touches every table
    dl_wait_routing "$cport" || th_fail "M=$M: the coordinator does not take writes ($DL_REPLY)"
    timeout 5 redis-cli -p "$cport" simhash.del 1 >/dev/null
    m0=$(mem_masters)
    th_log "M=$M: loading $N fingerprints through the coordinator"
    run "m$M-load" sys-ingest --port "$cport" --offset 0 --count "$N" --seconds 3600 --depth "$DEPTH" >/dev/null
    m1=$(mem_masters)
    LOADR[$M]=$(val "$TH_DIR/m$M-load.out" ingests_per_sec)
    emit "m$M" load_ingests_per_sec "${LOADR[$M]}"
    emit "m$M" used_memory_delta "$((m1 - m0))"
    emit "m$M" bytes_per_fp "$(calc "round(($m1 - $m0) / $N, 1)")"
    emit "m$M" bytes_per_entry_incl_docs "$(calc "round(($m1 - $m0) / ($N * $ntables), 2)")"
    run "m$M-check" check --port "$cport" --corpus "$N" --count 200 >/dev/null
    q=() g=()
    for r in $(seq 1 "$ROUNDS"); do
        run "m$M-query-$r" sys-query --port "$cport" --corpus "$N" --count 100000000 --seconds "$SECS" --depth "$DEPTH" >/dev/null
        run "m$M-ingest-$r" sys-ingest --port "$cport" --offset $((50000000 * r)) --count 100000000 --seconds "$SECS" --depth "$DEPTH" >/dev/null
        q+=("$(val "$TH_DIR/m$M-query-$r.out" queries_per_sec)")
        g+=("$(val "$TH_DIR/m$M-ingest-$r.out" ingests_per_sec)")
    done
    th_log "M=$M: query rates ${q[*]}; ingest rates ${g[*]}"
    QPS[$M]=$(median "${q[@]}")
    IPS[$M]=$(median "${g[@]}")
    emit "m$M" queries_per_sec "${QPS[$M]}"
    emit "m$M" ingests_per_sec "${IPS[$M]}"
    timeout 120 bash "$LOCAL" down --dir "$RUN" >/dev/null 2>&1
    RUN=
done
first=${MASTERS_LIST%% *}
for M in $MASTERS_LIST; do
    emit "m$M" queries_ratio_to_m$first "$(calc "round(${QPS[$M]} / ${QPS[$first]}, 3)")"
    emit "m$M" ingests_ratio_to_m$first "$(calc "round(${IPS[$M]} / ${IPS[$first]}, 3)")"
done

# ---- (5) the per-node model: bucket keys as full as at web-crawl scale ----
if [ "${BENCH_NODE_MODEL:-1}" = 1 ]; then
    NM=$((256 * PER_KEY))
    th_log "node model: one redis-server, zset-max-listpack-entries $LP_MAX, $NM fingerprints ($PER_KEY per key)"
    port=$(th_free_port)
    mkdir -p "$TH_DIR/node"
    th_start node 3600 redis-server --bind 127.0.0.1 --port "$port" --dir "$TH_DIR/node" --save '' \
        --appendonly no --zset-max-listpack-entries "$LP_MAX"
    for i in $(seq 1 100); do [ "$(timeout 2 redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done
    n0=$(timeout 5 redis-cli -p "$port" info memory | tr -d '\r' | sed -n 's/^used_memory://p')
    run node-preload preload --port "$port" --count "$NM" >/dev/null
    n1=$(timeout 5 redis-cli -p "$port" info memory | tr -d '\r' | sed -n 's/^used_memory://p')
    enc=$(timeout 5 redis-cli -p "$port" object encoding "s:{1:00}:-" | tr -d '\r')
    emit node encoding "$enc"
    emit node entries_per_key "$(calc "round($NM / 256)")"
    emit node bytes_per_entry "$(calc "round(($n1 - $n0) / ($NM * $ntables), 2)")"
    nq=()
    for r in $(seq 1 "$ROUNDS"); do
        run "node-query-$r" raw-query --port "$port" --corpus "$NM" --count 100000000 \
            --seconds "$SECS" --depth 32 >/dev/null
        nq+=("$(val "$TH_DIR/node-query-$r.out" queries_per_sec)")
    done
    emit node raw_queries_per_sec "$(median "${nq[@]}")"
    emit node raw_zrangebylex_per_sec "$(calc "round($(median "${nq[@]}") * $ntables)")"
fi
emit machine loadavg_1m_end "$(cut -d' ' -f1 /proc/loadavg)"
th_log "done"
