#!/usr/bin/env bash
# bench/multihost/run.sh: throughput and latency through the whole system across hosts
# (client -> coordinator -> workers -> Redis Cluster), with 1 ms of added round trip
# between hosts against the same topology without added delay, in one run.
#
# Two identical topologies are built side by side from network namespaces
# (tests/multihost/mh_lib.sh): three Redis Cluster masters, each with its worker in its
# own host, a coordinator host and a client host; every connection between hosts
# crosses a delay-proxy (tests/tools/delay_proxy.c) in front of the service. In
# topology "nodelay" the proxies add nothing; in "rtt1ms" they hold every chunk
# BENCH_DELAY_US (500) microseconds each way, no jitter: 1 ms more per round trip on
# every hop (client-coordinator, coordinator-worker, worker-other Redis nodes, cluster
# bus). A worker reaches its own Redis inside its host, undelayed.
#
# Both get the same corpus (BENCH_N fingerprints through SIMHASH.ADD), then
# BENCH_ROUNDS rounds alternate the two topologies so that load from other programs
# hits both alike; each round measures with bench-dist_load from the client host:
#   query rate   SIMHASH.QUERY pipelined, BENCH_DEPTH in flight, BENCH_SECONDS
#   ingest rate  SIMHASH.ADD of new fingerprints, pipelined the same way
#   query p50/p99, ingest p50/p99  open loop at BENCH_RATE per second (latency from
#                the scheduled send time)
# Prints `bench=multihost_<topology> metric=<name> value=<median>` lines (rates,
# latencies, and the machine's CPU microseconds per operation: busy ticks of
# /proc/stat over the measurement, every host sharing this machine), and
# `bench=multihost metric=<rate>_ratio value=<rtt1ms / nodelay>`; progress on stderr.
# Needs root (namespaces). Environment: SIMHASH_BIN (build/bin), BENCH_N (50000),
# BENCH_SECONDS (5), BENCH_ROUNDS (3), BENCH_DEPTH (64), BENCH_RATE (500),
# BENCH_DELAY_US (500), BENCH_BLOCKS/BENCH_DISTANCE (6/3), BENCH_INFLIGHT (the
# coordinator's max-inflight-client, its default 32 when empty: requests of one client
# connection it runs at once, which caps what a deeper pipeline can hide).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export SIMHASH_SRC=${SIMHASH_SRC:-$(cd "$HERE/../.." && pwd)}
. "$SIMHASH_SRC/tests/integration/lib.sh"
th_init bench-multihost
. "$SIMHASH_SRC/tests/multihost/mh_lib.sh"
trap 'rc=$?; mh_cleanup; (exit $rc); th_cleanup' EXIT
th_need_bins simhash-shard simhash-coordinator delay-proxy bench-dist_load
LOAD="$TH_BIN/bench-dist_load"
N=${BENCH_N:-50000}
SECS=${BENCH_SECONDS:-5}
ROUNDS=${BENCH_ROUNDS:-3}
DEPTH=${BENCH_DEPTH:-64}
RATE=${BENCH_RATE:-500}
DELAY=${BENCH_DELAY_US:-500}
INFLIGHT=${BENCH_INFLIGHT:-}
M=${BENCH_BLOCKS:-6}
K=${BENCH_DISTANCE:-3}
export TH_DAEMON_SECS=3600
BASE=$MH_PREFIX
TOPOS=(nodelay rtt1ms)

emit() { echo "bench=$1 metric=$2 value=$3"; }
val() { sed -n "s/.* metric=$2 value=//p" "$1" | head -n 1; }
median() { /usr/bin/python3 -c "import statistics, sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
use() { # use TOPOLOGY: the mh_lib globals point at that topology
    MH_PREFIX="$BASE$1-" MH_SW="${BASE}$1-sw" MH_TAG="$1-"
    case $1 in nodelay) MH_DELAY_US=0 ;; *) MH_DELAY_US=$DELAY ;; esac
    MH_JITTER_US=0
}
# CPU time the whole machine spent (user + nice + system + irq + softirq, in clock
# ticks): every host of both topologies runs on it, so the busy ticks of a
# measurement divided by its operations are the CPU cost of one operation, proxies
# and all
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
run() { # run TOPOLOGY NAME MODE ARGS..: bench-dist_load in the client host
    local t=$1 name=$2 b0 b1
    shift 2
    use "$t"
    b0=$(busy_ticks)
    mh_exec cl timeout $((SECS * 3 + 600)) "$LOAD" "$@" --host "${MH_IP[c1]}" --port 7000 \
        --name "$name" --blocks "$M" --distance "$K" >"$TH_DIR/$t-$name.out" 2>&1 ||
        { cat "$TH_DIR/$t-$name.out" >&2; th_fail "bench-dist_load $t $name"; }
    b1=$(busy_ticks)
    echo "bench=$name metric=busy_ticks value=$((b1 - b0))" >>"$TH_DIR/$t-$name.out"
}
# CPU microseconds per operation of a measurement's output file
cpu_us_per_op() {
    /usr/bin/python3 -c "import sys; t, ops, hz = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]); print(round(t * 1e6 / hz / ops, 1) if ops else 0)" \
        "$(val "$1" busy_ticks)" "$(val "$1" ops)" "$(getconf CLK_TCK)"
}

for t in "${TOPOS[@]}"; do
    use "$t"
    mh_setup
    for i in 1 2 3; do mh_host "r$i" $((10 + i)); done
    mh_host c1 21
    mh_host cl 31
    mh_cluster_up 0 r1 r2 r3
    for h in r1 r2 r3; do mh_worker "$h" "$M" "$K" --cluster yes --redis-announce "${MH_IP[$h]}:6379"; done
    mh_coord c1 "$M" "$K" 5000 "${MH_IP[r1]}:7100 ${MH_IP[r2]}:7100 ${MH_IP[r3]}:7100" \
        --cluster-node "${MH_IP[r1]}:6379" --cluster-node "${MH_IP[r2]}:6379" \
        ${INFLIGHT:+--max-inflight-client "$INFLIGHT"}
    mh_proxy c1 7000
    mh_wait_routing cl "${MH_IP[c1]}" 30 || th_fail "$t: routing: $MH_REPLY"
    th_log "$t: up (one-way delay $MH_DELAY_US us between hosts); loading $N fingerprints"
    run "$t" preload sys-ingest --count "$N" --offset 0 --seconds 3600 --depth "$DEPTH"
    [ "$(val "$TH_DIR/$t-preload.out" ops)" = "$N" ] || th_fail "$t: preload stored $(val "$TH_DIR/$t-preload.out" ops) of $N"
    [ "$(val "$TH_DIR/$t-preload.out" errors)" = 0 ] || th_fail "$t: preload errors"
done
emit machine cores "$(nproc)"
emit machine loadavg_1m_start "$(cut -d' ' -f1 /proc/loadavg)"
emit machine one_way_delay_us "$DELAY"
emit machine depth "$DEPTH"
emit machine coordinator_max_inflight_client "${INFLIGHT:-32}"

declare -A res
for r in $(seq 1 "$ROUNDS"); do
    for t in "${TOPOS[@]}"; do
        th_log "round $r: $t"
        run "$t" q$r sys-query --corpus "$N" --count 100000000 --seconds "$SECS" --depth "$DEPTH"
        run "$t" i$r sys-ingest --offset $((10000000 * r)) --count 100000000 --seconds "$SECS" --depth "$DEPTH"
        run "$t" pq$r paced --corpus "$N" --rate "$RATE" --seconds "$SECS" --count 100000000
        run "$t" pi$r paced-ingest --offset $((10000000 * r + 5000000)) --rate "$RATE" --seconds "$SECS" --count 100000000
        for f in q i; do
            [ "$(val "$TH_DIR/$t-$f$r.out" errors)" = 0 ] || th_fail "$t: error replies in $f$r"
        done
        res[$t,qps]+=" $(val "$TH_DIR/$t-q$r.out" queries_per_sec)"
        res[$t,ips]+=" $(val "$TH_DIR/$t-i$r.out" ingests_per_sec)"
        res[$t,qcpu]+=" $(cpu_us_per_op "$TH_DIR/$t-q$r.out")"
        res[$t,icpu]+=" $(cpu_us_per_op "$TH_DIR/$t-i$r.out")"
        for p in p50_ms p99_ms; do
            res[$t,q_$p]+=" $(val "$TH_DIR/$t-pq$r.out" $p)"
            res[$t,i_$p]+=" $(val "$TH_DIR/$t-pi$r.out" $p)"
        done
    done
done
for t in "${TOPOS[@]}"; do
    th_log "$t: query rates${res[$t,qps]}; ingest rates${res[$t,ips]}"
    emit "multihost_$t" queries_per_sec "$(median ${res[$t,qps]})"
    emit "multihost_$t" ingests_per_sec "$(median ${res[$t,ips]})"
    emit "multihost_$t" query_cpu_us_per_op "$(median ${res[$t,qcpu]})"
    emit "multihost_$t" ingest_cpu_us_per_op "$(median ${res[$t,icpu]})"
    emit "multihost_$t" query_p50_ms "$(median ${res[$t,q_p50_ms]})"
    emit "multihost_$t" query_p99_ms "$(median ${res[$t,q_p99_ms]})"
    emit "multihost_$t" ingest_p50_ms "$(median ${res[$t,i_p50_ms]})"
    emit "multihost_$t" ingest_p99_ms "$(median ${res[$t,i_p99_ms]})"
done
ratio() { /usr/bin/python3 -c "print(round($1 / $2, 3))"; }
emit multihost query_rate_ratio "$(ratio "$(median ${res[rtt1ms,qps]})" "$(median ${res[nodelay,qps]})")"
emit multihost ingest_rate_ratio "$(ratio "$(median ${res[rtt1ms,ips]})" "$(median ${res[nodelay,ips]})")"
# above 1: an operation costs more CPU with the delay (on this one machine, where the
# hosts share two cores, that alone lowers the rate)
emit multihost query_cpu_per_op_ratio "$(ratio "$(median ${res[rtt1ms,qcpu]})" "$(median ${res[nodelay,qcpu]})")"
emit multihost ingest_cpu_per_op_ratio "$(ratio "$(median ${res[rtt1ms,icpu]})" "$(median ${res[nodelay,icpu]})")"
emit machine loadavg_1m_end "$(cut -d' ' -f1 /proc/loadavg)"
