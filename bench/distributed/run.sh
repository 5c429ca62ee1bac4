#!/usr/bin/env bash
# bench/distributed/run.sh: benchmark of distributed mode on one Redis and this machine.
#   (1) query rate: the Redis commands one query needs (one ZRANGEBYLEX per table, 20
#       for blocks 6 distance 3), pipelined straight to Redis, against SIMHASH.QUERY
#       through simhash-coordinator and two simhash-shard workers
#   (2) ingest rate: one ZADD per table + one SADD per fingerprint, against SIMHASH.ADD
#   (3) query latency p50/p99 at half of the measured system query rate (open loop)
#   (4) Redis used_memory per fingerprint per table at N fingerprints (documents
#       loaded afterwards and counted separately)
# Prints `bench=... metric=... value=...` lines on stdout (progress on stderr).
# Environment: SIMHASH_BIN (default build/bin), BENCH_N (corpus, default 1000000),
# BENCH_SECONDS (per rate measurement, default 10), BENCH_BLOCKS/BENCH_DISTANCE (6/3).
# Everything runs on 127.0.0.1 in a mktemp -d directory and is stopped by PID at exit.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export SIMHASH_SRC=${SIMHASH_SRC:-$(cd "$HERE/../.." && pwd)}
. "$SIMHASH_SRC/tests/integration/lib.sh"
th_init bench-dist
th_need_bins simhash-shard simhash-coordinator bench-dist_load
LOAD="$TH_BIN/bench-dist_load"
N=${BENCH_N:-1000000}
SECS=${BENCH_SECONDS:-10}
M=${BENCH_BLOCKS:-6}
K=${BENCH_DISTANCE:-3}
export TH_DAEMON_SECS=3600

# mem: used_memory of the Redis under test
mem() { timeout 10 redis-cli -p "$rport" info memory | tr -d '\r' | sed -n 's/^used_memory://p'; }
# val FILE METRIC: the value of METRIC in a dist_load output file
val() { sed -n "s/.* metric=$2 value=//p" "$1" | head -n 1; }
# emit NAME METRIC VALUE
emit() { echo "bench=$1 metric=$2 value=$3"; }
run() { # run NAME MODE ARGS..: one dist_load run, output kept in $TH_DIR/NAME.out
    local name=$1
    shift
    timeout $((SECS * 3 + 600)) "$LOAD" "$@" --name "$name" --blocks "$M" --distance "$K" \
        >"$TH_DIR/$name.out" || { cat "$TH_DIR/$name.out"; th_fail "bench-dist_load $name"; }
    cat "$TH_DIR/$name.out"
}

th_start_redis redis
rport=$TH_REDIS_PORT
th_start_shard shard-a "$rport" 0-127 "$M" "$K"
a=$TH_SHARD_PORT
th_start_shard shard-b "$rport" 128-255 "$M" "$K"
b=$TH_SHARD_PORT
th_start_coord coord "$M" "$K" 2000 "127.0.0.1:$a 127.0.0.1:$b"
cport=$TH_COORD_PORT
ntables=$(python3 -c "import math; print(math.comb($M, $M - $K))")
th_log "blocks $M distance $K ($ntables tables), corpus $N, $SECS s per rate"

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
enc=$(timeout 10 redis-cli -p "$rport" object encoding "s:{0:00}:00")
th_log "table bucket encoding: $enc"

# the workers read what preload wrote
run check check --port "$cport" --corpus "$N" --count 200

# (1) queries
th_log "query rate: raw Redis"
run raw-query raw-query --port "$rport" --corpus "$N" --count 100000000 --seconds "$SECS" --depth 32
th_log "query rate: through the coordinator"
run sys-query sys-query --port "$cport" --corpus "$N" --count 100000000 --seconds "$SECS" --depth 64
rq=$(val "$TH_DIR/raw-query.out" queries_per_sec)
sq=$(val "$TH_DIR/sys-query.out" queries_per_sec)
emit query raw_queries_per_sec "$rq"
emit query system_queries_per_sec "$sq"
emit query system_over_raw "$(python3 -c "print(round($sq / $rq, 3))")"

# (2) ingest of new fingerprints (offsets far beyond the corpus)
th_log "ingest rate: raw Redis"
run raw-ingest raw-ingest --port "$rport" --offset 100000000 --count 100000000 --seconds "$SECS" --depth 32
th_log "ingest rate: through the coordinator"
run sys-ingest sys-ingest --port "$cport" --offset 200000000 --count 100000000 --seconds "$SECS" --depth 64
ri=$(val "$TH_DIR/raw-ingest.out" ingests_per_sec)
si=$(val "$TH_DIR/sys-ingest.out" ingests_per_sec)
emit ingest raw_ingests_per_sec "$ri"
emit ingest system_ingests_per_sec "$si"
emit ingest system_over_raw "$(python3 -c "print(round($si / $ri, 3))")"

# (3) latency at half the saturation rate
half=$(python3 -c "print(max(1, int($sq / 2)))")
th_log "latency at $half queries/s (open loop)"
run paced paced --port "$cport" --corpus "$N" --rate "$half" --seconds "$SECS" --count 100000000
emit latency rate "$half"
emit latency p50_ms "$(val "$TH_DIR/paced.out" p50_ms)"
emit latency p99_ms "$(val "$TH_DIR/paced.out" p99_ms)"
th_log "done"
