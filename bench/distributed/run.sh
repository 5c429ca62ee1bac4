#!/usr/bin/env bash
# bench/distributed/run.sh: benchmark of distributed mode on one Redis and this machine.
#   (1) query rate: the Redis commands one query needs (one ZRANGEBYLEX per table, 20
#       for blocks 6 distance 3), pipelined straight to Redis, against SIMHASH.QUERY
#       through simhash-coordinator and simhash-shard (BENCH_WORKERS: 1 or 2 workers)
#   (2) ingest rate: one ZADD per table + the table-0 member with its id (the unlocked
#       work), and the Redis commands the system sends (lock script with the id, one
#       ZADD per table, unlock script), against SIMHASH.ADD
#   (3) query latency p50/p99 at half of the measured system query rate (open loop),
#       against the same schedule of raw Redis work (paced-raw) in alternating rounds
#   (4) Redis used_memory per fingerprint per table at N fingerprints (documents,
#       one 30-byte id each, loaded afterwards and counted separately), and
#       everything counted: used_memory / N
# All of it in data layout 4 (the one format), on a fresh Redis with the listpack
# limits of deploy/simhash-local. The raw corpus is written below its first split
# (bench-dist_load preload: every (table, shard) one bucket, refused from
# LAYOUT_SPLIT_LIMIT_MAX = 256 entries), so BENCH_N stays well below 256 x 256: at the
# default 40000 the fullest of a table's 256 buckets holds about 205.
# Prints `bench=... layout=L metric=... value=...` lines on stdout (progress on stderr).
# Environment: SIMHASH_BIN (default build/bin), BENCH_N (corpus, default 40000),
# BENCH_SECONDS (per rate measurement, default 10), BENCH_ROUNDS (3; medians are
# reported), BENCH_RAW_DEPTH / BENCH_SYS_DEPTH (operations in flight, 32 / 64),
# BENCH_BLOCKS/BENCH_DISTANCE (6/3), BENCH_LAT_RATES (extra fixed latency rates, "1000 3000").
# Everything runs on 127.0.0.1 in a mktemp -d directory and is stopped by PID at exit.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export SIMHASH_SRC=${SIMHASH_SRC:-$(cd "$HERE/../.." && pwd)}
. "$SIMHASH_SRC/tests/integration/lib.sh"
th_init bench-dist
th_need_bins simhash-shard simhash-coordinator bench-dist_load
LOAD="$TH_BIN/bench-dist_load"
N=${BENCH_N:-40000}
SECS=${BENCH_SECONDS:-10}
M=${BENCH_BLOCKS:-6}
K=${BENCH_DISTANCE:-3}
ROUNDS=${BENCH_ROUNDS:-3}
RAW_DEPTH=${BENCH_RAW_DEPTH:-32}     # operations in flight (a raw query is 20 commands)
SYS_DEPTH=${BENCH_SYS_DEPTH:-64}
export TH_DAEMON_SECS=3600

# mem: used_memory of the Redis under test
mem() { timeout 10 redis-cli -p "$rport" info memory | tr -d '\r' | sed -n 's/^used_memory://p'; }
# val FILE METRIC: the value of METRIC in a dist_load output file
val() { sed -n "s/.* metric=$2 value=//p" "$1" | head -n 1; }
# emit NAME METRIC VALUE (of the layout under test, L)
emit() { echo "bench=$1 layout=$L metric=$2 value=$3"; }
run() { # run NAME MODE ARGS..: one dist_load run, output kept in $TH_DIR/NAME.out
    local name=$1-l$L
    shift
    timeout $((SECS * 3 + 600)) "$LOAD" "$@" --name "$name" --blocks "$M" --distance "$K" \
        --layout "$L" >"$TH_DIR/$name.out" || { cat "$TH_DIR/$name.out"; th_fail "bench-dist_load $name"; }
    cat "$TH_DIR/$name.out"
}
# out NAME: the output file of run NAME
out() { echo "$TH_DIR/$1-l$L.out"; }

for L in 4; do
th_log "layout $L"
th_start_redis "redis-l$L"
rport=$TH_REDIS_PORT
for s in zset-max-listpack-entries hash-max-listpack-entries; do   # as simhash-local
    timeout 10 redis-cli -p "$rport" config set "$s" 2048 >/dev/null
done
# BENCH_WORKERS=1 (default): one worker beside the Redis serving every shard (one
# worker per Redis node, as in cluster mode); 2: two workers splitting the first-byte shards
# 0-127 / 128-255 on the same Redis (fan-out to two workers on one machine).
pids=$TH_REDIS_PID
if [ "${BENCH_WORKERS:-1}" = 1 ]; then
    th_start_shard "shard-a-l$L" "$rport" 0-255 "$M" "$K" "" --layout "$L"
    workers="127.0.0.1:$TH_SHARD_PORT"
else
    th_start_shard "shard-a-l$L" "$rport" 0-127 "$M" "$K" "" --layout "$L"
    a=$TH_SHARD_PORT
    pids="$pids $TH_SHARD_PID"
    th_start_shard "shard-b-l$L" "$rport" 128-255 "$M" "$K" "" --layout "$L"
    workers="127.0.0.1:$a 127.0.0.1:$TH_SHARD_PORT"
fi
pids="$pids $TH_SHARD_PID"
emit machine shard_workers "${BENCH_WORKERS:-1}"
th_start_coord "coord-l$L" "$M" "$K" 2000 "$workers"
cport=$TH_COORD_PORT
pids="$pids $TH_COORD_PID"
ntables=$(python3 -c "import math; print(math.comb($M, $M - $K))")
th_log "blocks $M distance $K ($ntables tables), corpus $N, $SECS s per rate"

emit machine loadavg_1m_start "$(cut -d' ' -f1 /proc/loadavg)"
emit machine cores "$(nproc)"

# (4) memory: tables first, then documents
m0=$(mem)
th_log "preloading $N fingerprints into the tables"
run preload preload --port "$rport" --count "$N"
m1=$(mem)
run predocs predocs --port "$rport" --count "$N"
m2=$(mem)
emit memory used_memory_empty "$m0"
emit memory used_memory_tables "$m1"
emit memory used_memory_tables_docs "$m2"
emit memory bytes_per_fp_per_table "$(python3 -c "print(round(($m1 - $m0) / ($N * $ntables), 2))")"
emit memory bytes_per_fp_docs "$(python3 -c "print(round(($m2 - $m1) / $N, 2))")"
emit memory bytes_per_fp_total "$(python3 -c "print(round(($m2 - $m0) / $N, 2))")"
emit memory bytes_per_fp_everything "$(python3 -c "print(round($m2 / $N, 2))")"
key=$(timeout 10 redis-cli -p "$rport" --scan --pattern 's:{0:00}:*' | head -n 1)
enc=$(timeout 10 redis-cli -p "$rport" object encoding "$key")
th_log "table bucket encoding: $enc"
[ "$enc" = listpack ] || th_log "WARNING: bucket $key is a $enc"

# the workers read what preload wrote
run check check --port "$cport" --corpus "$N" --count 200

# (1) and (2): ROUNDS rounds, raw and system alternating so that load from other
# programs on the machine hits both alike; the medians are reported. The system's
# ingest splits buckets, so every raw run first reads the directories (--dirs) and
# goes to the live buckets, not to the tombstones of split ones (WRONGTYPE).
median() { python3 -c "import statistics, sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
rq=() sq=() ri=() si=() rl=()
for r in $(seq 1 "$ROUNDS"); do
    th_log "round $r: query rate, raw Redis then through the coordinator"
    run raw-query-$r raw-query --dirs --port "$rport" --corpus "$N" --count 100000000 --seconds "$SECS" --depth "$RAW_DEPTH"
    run sys-query-$r sys-query --port "$cport" --corpus "$N" --count 100000000 --seconds "$SECS" --depth "$SYS_DEPTH"
    rq+=("$(val "$(out raw-query-$r)" queries_per_sec)")
    sq+=("$(val "$(out sys-query-$r)" queries_per_sec)")
    # ingest of new fingerprints (offsets far beyond the corpus, new ones every round)
    th_log "round $r: ingest rate, raw Redis then through the coordinator"
    run raw-ingest-$r raw-ingest --dirs --port "$rport" --offset $((100000000 * r)) --count 100000000 --seconds "$SECS" --depth "$RAW_DEPTH"
    run raw-locked-$r raw-locked --dirs --port "$rport" --offset $((100000000 * r + 25000000)) --count 100000000 --seconds "$SECS" --depth "$RAW_DEPTH"
    run sys-ingest-$r sys-ingest --port "$cport" --offset $((100000000 * r + 50000000)) --count 100000000 --seconds "$SECS" --depth "$SYS_DEPTH"
    rl+=("$(val "$(out raw-locked-$r)" ingests_per_sec)")
    ri+=("$(val "$(out raw-ingest-$r)" ingests_per_sec)")
    si+=("$(val "$(out sys-ingest-$r)" ingests_per_sec)")
done
th_log "query rates raw: ${rq[*]}; system: ${sq[*]}"
th_log "ingest rates raw: ${ri[*]}; raw with the lock scripts: ${rl[*]}; system: ${si[*]}"
rqm=$(median "${rq[@]}") sqm=$(median "${sq[@]}") rim=$(median "${ri[@]}") sim=$(median "${si[@]}")
emit query raw_queries_per_sec "$rqm"
emit query system_queries_per_sec "$sqm"
emit query system_over_raw "$(python3 -c "print(round($sqm / $rqm, 3))")"
emit ingest raw_ingests_per_sec "$rim"
emit ingest system_ingests_per_sec "$sim"
emit ingest system_over_raw "$(python3 -c "print(round($sim / $rim, 3))")"
# the same Redis work as the system's (lock script + ZADDs + unlock script)
rlm=$(median "${rl[@]}")
emit ingest raw_locked_ingests_per_sec "$rlm"
emit ingest system_over_raw_locked "$(python3 -c "print(round($sim / $rlm, 3))")"

# (3) latency at half the saturation rate, ROUNDS rounds alternating the baseline
# (paced-raw: the Redis commands a worker sends for each query, straight to Redis, on
# the same schedule) and the system; medians reported. Before them, how often this
# machine itself stalls a running program (bench-stall, every CPU busy 5 s): the floor
# under any percentile measured here.
if [ -x "$TH_BIN/bench-stall" ]; then
    "$TH_BIN/bench-stall" --seconds 5 >"$TH_DIR/stall.out" || th_fail "bench-stall"
    for m in gaps_over_1ms gaps_over_5ms max_gap_ms; do emit stall "$m" "$(val "$TH_DIR/stall.out" "$m")"; done
fi
half=$(python3 -c "print(max(1, int($sqm / 2)))")
th_log "latency at $half queries/s (open loop), raw Redis then through the coordinator"
emit latency rate "$half"
lr50=() lr99=() ls50=() ls99=() ls999=()
for r in $(seq 1 "$ROUNDS"); do
    run paced-raw-$r paced-raw --dirs --port "$rport" --corpus "$N" --rate "$half" --seconds "$SECS" --count 100000000
    run paced-$r paced --port "$cport" --corpus "$N" --rate "$half" --seconds "$SECS" --count 100000000
    lr50+=("$(val "$(out paced-raw-$r)" p50_ms)")
    lr99+=("$(val "$(out paced-raw-$r)" p99_ms)")
    ls50+=("$(val "$(out paced-$r)" p50_ms)")
    ls99+=("$(val "$(out paced-$r)" p99_ms)")
    ls999+=("$(val "$(out paced-$r)" p999_ms)")
done
th_log "half load p99 raw: ${lr99[*]}; system: ${ls99[*]}"
emit latency raw_p50_ms "$(median "${lr50[@]}")"
emit latency raw_p99_ms "$(median "${lr99[@]}")"
emit latency p50_ms "$(median "${ls50[@]}")"
emit latency p99_ms "$(median "${ls99[@]}")"
emit latency p999_ms "$(median "${ls999[@]}")"
emit latency p99_rounds "$(IFS=/; echo "${ls99[*]}")"
emit latency raw_p99_rounds "$(IFS=/; echo "${lr99[*]}")"
# the same at fixed rates well below saturation (BENCH_LAT_RATES), for comparison
for rate in ${BENCH_LAT_RATES:-1000 3000}; do
    run paced-$rate paced --port "$cport" --corpus "$N" --rate "$rate" --seconds "$SECS" --count 100000000
    emit latency "r${rate}_p50_ms" "$(val "$(out paced-$rate)" p50_ms)"
    emit latency "r${rate}_p99_ms" "$(val "$(out paced-$rate)" p99_ms)"
done
for p in $pids; do th_stop "$p"; done
done
emit machine loadavg_1m_end "$(cut -d' ' -f1 /proc/loadavg)"
th_log "done"
