#!/usr/bin/env bash
# bench/distributed/durability.sh: ingest throughput of distributed mode under each
# persistence setting of Redis and with the coordinator's durable mode on and off
# (docs/durability.md), in one run on one Redis:
#   appendonly no | appendfsync everysec | appendfsync always   x   durable no
#   appendfsync always + durable yes (SHARD.WAIT checks the AOF setting)
#   appendonly no + one replica + durable yes (workers with wait-replicas 1: Redis WAIT)
# Each setting: raw ingest (20 ZADD + 1 SADD per fingerprint, pipelined to Redis) and
# SIMHASH.ADD through the coordinator and two workers. The Redis data directory is a
# mktemp -d directory (so fsync hits whatever disk holds $TMPDIR).
# Prints `bench=durability metric=<setting>_<raw|system>_per_sec value=N` lines.
# Environment: SIMHASH_BIN (default build/bin), BENCH_SECONDS (per run, default 5),
# BENCH_SYS_DEPTH / BENCH_RAW_DEPTH (64 / 32).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export SIMHASH_SRC=${SIMHASH_SRC:-$(cd "$HERE/../.." && pwd)}
. "$SIMHASH_SRC/tests/integration/lib.sh"
th_init bench-durability
th_need_bins simhash-shard simhash-coordinator bench-dist_load
LOAD="$TH_BIN/bench-dist_load"
SECS=${BENCH_SECONDS:-5}
SYS_DEPTH=${BENCH_SYS_DEPTH:-64}
RAW_DEPTH=${BENCH_RAW_DEPTH:-32}
export TH_DAEMON_SECS=3600

emit() { echo "bench=durability metric=$1 value=$2"; }
val() { sed -n "s/.* metric=$2 value=//p" "$1" | head -n 1; }
cli() { timeout 30 redis-cli -p "$rport" "$@"; }

th_start_redis redis
rport=$TH_REDIS_PORT
th_start_shard shard-a "$rport" 0-127 6 3
a=$TH_SHARD_PORT
th_start_shard shard-b "$rport" 128-255 6 3
b=$TH_SHARD_PORT
th_start_shard shard-ra "$rport" 0-127 6 3 "" --wait-replicas 1 --wait-timeout-ms 1000
ra=$TH_SHARD_PORT
th_start_shard shard-rb "$rport" 128-255 6 3 "" --wait-replicas 1 --wait-timeout-ms 1000
rb=$TH_SHARD_PORT
th_start_coord coord 6 3 5000 "127.0.0.1:$a 127.0.0.1:$b"
c_plain=$TH_COORD_PORT
th_start_coord coord-durable 6 3 5000 "127.0.0.1:$a 127.0.0.1:$b" "" --durable yes
c_durable=$TH_COORD_PORT
th_start_coord coord-replica 6 3 5000 "127.0.0.1:$ra 127.0.0.1:$rb" "" --durable yes
c_replica=$TH_COORD_PORT

emit loadavg_1m_start "$(cut -d' ' -f1 /proc/loadavg)"
off=0
# measure NAME COORD_PORT: raw then system ingest of new fingerprints
measure() {
    local name=$1 cport=$2
    off=$((off + 100000000))
    timeout $((SECS + 120)) "$LOAD" raw-ingest --port "$rport" --offset "$off" --count 100000000 \
        --seconds "$SECS" --depth "$RAW_DEPTH" --name raw >"$TH_DIR/$name-raw.out" ||
        th_fail "raw ingest $name"
    off=$((off + 100000000))
    timeout $((SECS + 120)) "$LOAD" sys-ingest --port "$cport" --offset "$off" --count 100000000 \
        --seconds "$SECS" --depth "$SYS_DEPTH" --name sys >"$TH_DIR/$name-sys.out" ||
        th_fail "system ingest $name"
    local e
    e=$(val "$TH_DIR/$name-sys.out" errors)
    [ "${e:-1}" = 0 ] || th_fail "$name: $e errors in the system ingest"
    emit "${name}_raw_per_sec" "$(val "$TH_DIR/$name-raw.out" ingests_per_sec)"
    emit "${name}_system_per_sec" "$(val "$TH_DIR/$name-sys.out" ingests_per_sec)"
}
# aof MODE: switch Redis persistence (no | everysec | always), wait for the rewrite
aof() {
    if [ "$1" = no ]; then
        cli config set appendonly no >/dev/null
    else
        cli config set appendfsync "$1" >/dev/null
        cli config set appendonly yes >/dev/null
    fi
    local i=0
    while cli info persistence | tr -d '\r' | grep -q '^aof_rewrite_in_progress:1'; do
        i=$((i + 1))
        [ $i -lt 600 ] || th_fail "AOF rewrite did not finish"
        sleep 0.1
    done
    th_log "appendonly $(cli config get appendonly | tail -n 1), appendfsync $(cli config get appendfsync | tail -n 1)"
}

aof no
measure aof_no "$c_plain"
aof everysec
measure everysec "$c_plain"
aof always
measure always "$c_plain"
measure always_durable "$c_durable"
aof no
rep=$(th_free_port)
mkdir -p "$TH_DIR/replica"
th_start replica 3600 redis-server --bind 127.0.0.1 --port "$rep" --dir "$TH_DIR/replica" \
    --save '' --appendonly no --daemonize no --replicaof 127.0.0.1 "$rport"
i=0
# WAIT counts the replica once the master streams to it (after its first ACK)
until [ "$(printf 'SET wait-probe 1\nWAIT 1 200\n' | timeout 5 redis-cli -p "$rport" 2>/dev/null |
    tail -n 1)" = 1 ]; do
    i=$((i + 1))
    [ $i -lt 1200 ] || th_fail "replica did not sync"
    sleep 0.1
done
measure replica_wait1_durable "$c_replica"
emit loadavg_1m_end "$(cut -d' ' -f1 /proc/loadavg)"
