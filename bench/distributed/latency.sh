#!/usr/bin/env bash
# bench/distributed/latency.sh: SIMHASH.QUERY latency (open loop, p50/p99/p99.9) at
# fixed rates, without and with CPU pinning (taskset), on one Redis + two workers +
# one coordinator on this machine. An experiment to find where the tail comes from.
#   placements: none (the scheduler decides), redis-alone (redis-server on CPU 0,
#   everything else on CPU 1), split (redis-server + coordinator on CPU 0, workers +
#   client on CPU 1)
# Prints `bench=latency-<placement> metric=<rate>_<p50|p99|p999>_ms value=N` lines
# and the load average. Environment: SIMHASH_BIN, BENCH_N (corpus, default 300000),
# BENCH_SECONDS (per rate, default 5), BENCH_RATES (default "1000 3000 5000").
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export SIMHASH_SRC=${SIMHASH_SRC:-$(cd "$HERE/../.." && pwd)}
. "$SIMHASH_SRC/tests/integration/lib.sh"
th_init bench-latency
th_need_bins simhash-shard simhash-coordinator bench-dist_load
command -v taskset >/dev/null || th_fail "taskset not found"
[ "$(nproc)" -ge 2 ] || th_fail "needs 2 CPUs"
LOAD="$TH_BIN/bench-dist_load"
N=${BENCH_N:-300000}
SECS=${BENCH_SECONDS:-5}
RATES=${BENCH_RATES:-"1000 3000 5000"}
export TH_DAEMON_SECS=3600

th_start_redis redis
rport=$TH_REDIS_PORT
redis_pid=$(th_child_pid "$TH_REDIS_PID")
th_start_shard shard-a "$rport" 0-127 6 3
wa=$(th_child_pid "$TH_SHARD_PID")
a=$TH_SHARD_PORT
th_start_shard shard-b "$rport" 128-255 6 3
wb=$(th_child_pid "$TH_SHARD_PID")
b=$TH_SHARD_PORT
th_start_coord coord 6 3 2000 "127.0.0.1:$a 127.0.0.1:$b"
co=$(th_child_pid "$TH_COORD_PID")
cport=$TH_COORD_PORT
timeout 600 "$LOAD" preload --port "$rport" --count "$N" >/dev/null || th_fail preload
timeout 600 "$LOAD" predocs --port "$rport" --count "$N" >/dev/null || th_fail predocs

pin() { # pin CPU PID..
    local cpu=$1 p
    shift
    for p in "$@"; do taskset -a -pc "$cpu" "$p" >/dev/null || th_fail "taskset $cpu $p"; done
}
echo "bench=latency metric=loadavg_1m_start value=$(cut -d' ' -f1 /proc/loadavg)"
for placement in none redis-alone split; do
    client_cpu=
    case $placement in
    none) pin 0-1 "$redis_pid" "$wa" "$wb" "$co" ;;
    redis-alone) pin 0 "$redis_pid"; pin 1 "$wa" "$wb" "$co"; client_cpu=1 ;;
    split) pin 0 "$redis_pid" "$co"; pin 1 "$wa" "$wb"; client_cpu=1 ;;
    esac
    for rate in $RATES; do
        cmd=("$LOAD" paced --port "$cport" --corpus "$N" --rate "$rate" --seconds "$SECS"
            --count 100000000 --name x)
        [ -n "$client_cpu" ] && cmd=(taskset -c "$client_cpu" "${cmd[@]}")
        out=$(timeout $((SECS + 60)) "${cmd[@]}") || th_fail "paced $placement $rate"
        for m in p50 p99 p999; do
            echo "bench=latency-$placement metric=${rate}_${m}_ms value=$(echo "$out" |
                sed -n "s/.* metric=${m}_ms value=//p")"
        done
    done
done
echo "bench=latency metric=loadavg_1m_end value=$(cut -d' ' -f1 /proc/loadavg)"
