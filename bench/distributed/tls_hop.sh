#!/usr/bin/env bash
# bench/distributed/tls_hop.sh: SIMHASH.QUERY rate through a coordinator whose hop to
# the worker is plain, and through one whose hop is TLS (worker-tls, with a client
# certificate the worker requires: tls-auth-clients yes), in the same run: one Redis,
# one worker with a plain port and a TLS port, two coordinators (plain, TLS) over it,
# clients in plain text to both. Rounds alternate plain and TLS (closed loop,
# pipelined sys-query of bench-dist_load); prints each run with the CPU time the
# coordinator and the worker spent per query (what TLS costs, and less disturbed than
# the rate by other load on the machine), then the medians, the ratio of the median
# rates tls/plain (the target: at least 0.8), the median of the per-round ratios and
# the ratios of CPU per query. Connections persist: the handshakes happen at the
# start, not per request.
# Environment: SIMHASH_BIN, BENCH_N (corpus, default 50000: below the first split),
# BENCH_SECONDS (per run, default 5), BENCH_ROUNDS (default 5), BENCH_DEPTH (pipeline
# depth, default 32).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export SIMHASH_SRC=${SIMHASH_SRC:-$(cd "$HERE/../.." && pwd)}
. "$SIMHASH_SRC/tests/integration/lib.sh"
th_init bench-tls-hop
th_need_bins simhash-shard simhash-coordinator bench-dist_load
command -v openssl >/dev/null || th_fail "openssl not found"
LOAD="$TH_BIN/bench-dist_load"
N=${BENCH_N:-50000}
SECS=${BENCH_SECONDS:-5}
ROUNDS=${BENCH_ROUNDS:-5}
DEPTH=${BENCH_DEPTH:-32}
B=6 K=3
export TH_DAEMON_SECS=3600
P="$TH_DIR/pki"
mkdir -p "$P"
th_tls_ca "$P" ca
th_tls_cert "$P" worker "simhash worker" 1001
th_tls_cert "$P" coord "simhash coordinator" 2001

th_start_redis redis
rport=$TH_REDIS_PORT
wtls=$(th_free_port)
th_start_shard w "$rport" 0-255 "$B" "$K" "" --tls-port "$wtls" \
    --tls-cert-file "$P/worker.crt" --tls-key-file "$P/worker.key" \
    --tls-ca-cert-file "$P/ca.crt" --tls-auth-clients yes --announce-interval-ms 0
wplain=$TH_SHARD_PORT
wpid=$(th_child_pid "$TH_SHARD_PID")
th_wait_port "$wtls" 20 || th_fail "worker TLS port $wtls not listening"
th_start_coord plain "$B" "$K" 2000 "127.0.0.1:$wplain" "" --discover-interval-ms 0
cplain=$TH_COORD_PORT
cpid_plain=$(th_child_pid "$TH_COORD_PID")
th_start_coord tls "$B" "$K" 2000 "127.0.0.1:$wtls" "" --discover-interval-ms 0 \
    --worker-tls yes --worker-tls-ca-cert-file "$P/ca.crt" \
    --worker-tls-cert-file "$P/coord.crt" --worker-tls-key-file "$P/coord.key"
ctls=$TH_COORD_PORT
cpid_tls=$(th_child_pid "$TH_COORD_PID")
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }    # user + system, 1/CLK_TCK s
hz=$(getconf CLK_TCK)
for p in "$cplain" "$ctls"; do
    i=0
    until timeout 5 redis-cli -h 127.0.0.1 -p "$p" SIMHASH.INFO | tr -d '\r' | grep -q '^routing:ok'; do
        i=$((i + 1)); [ $i -lt 200 ] || th_fail "coordinator on $p: routing never complete"
        sleep 0.05
    done
done
timeout 600 "$LOAD" preload --port "$rport" --count "$N" >/dev/null || th_fail preload
timeout 600 "$LOAD" predocs --port "$rport" --count "$N" >/dev/null || th_fail predocs

echo "bench=tls_hop metric=loadavg_1m_start value=$(cut -d' ' -f1 /proc/loadavg)"
: >"$TH_DIR/rates"
for r in $(seq 1 "$ROUNDS"); do
    for hop in plain tls; do
        port=$cplain cpid=$cpid_plain
        [ $hop = tls ] && port=$ctls cpid=$cpid_tls
        c0=$(ticks "$cpid") w0=$(ticks "$wpid")
        out=$(timeout $((SECS * 3 + 120)) "$LOAD" sys-query --port "$port" --corpus "$N" \
                --count 100000000 --seconds "$SECS" --depth "$DEPTH" --name "$hop-$r") ||
            th_fail "sys-query $hop round $r: $out"
        c1=$(ticks "$cpid") w1=$(ticks "$wpid")
        q=$(echo "$out" | sed -n 's/.* metric=queries_per_sec value=//p' | head -n 1)
        ops=$(echo "$out" | sed -n 's/.* metric=ops value=//p' | head -n 1)
        [ -n "$q" ] && [ -n "$ops" ] || th_fail "sys-query $hop round $r: no rate: $out"
        ccpu=$(awk -v t=$((c1 - c0)) -v o="$ops" -v hz="$hz" 'BEGIN{printf "%.2f", t * 1e6 / hz / o}')
        wcpu=$(awk -v t=$((w1 - w0)) -v o="$ops" -v hz="$hz" 'BEGIN{printf "%.2f", t * 1e6 / hz / o}')
        echo "bench=tls_hop hop=$hop round=$r metric=queries_per_sec value=$q"
        echo "bench=tls_hop hop=$hop round=$r metric=coordinator_cpu_us_per_query value=$ccpu"
        echo "bench=tls_hop hop=$hop round=$r metric=worker_cpu_us_per_query value=$wcpu"
        echo "$hop $r $q $ccpu $wcpu" >>"$TH_DIR/rates"
    done
done
/usr/bin/python3 - "$TH_DIR/rates" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    hop, r, q, c, w = line.split()
    runs.setdefault(hop, {})[r] = (float(q), float(c), float(w))
names = ("queries_per_sec", "coordinator_cpu_us_per_query", "worker_cpu_us_per_query")
med = {h: [statistics.median(v[i] for v in runs[h].values()) for i in range(3)] for h in runs}
for h in ("plain", "tls"):
    for i, n in enumerate(names):
        print("bench=tls_hop hop=%s metric=%s_median value=%.2f" % (h, n, med[h][i]))
print("bench=tls_hop metric=ratio_tls_to_plain value=%.3f" % (med["tls"][0] / med["plain"][0]))
per = [runs["tls"][r][0] / runs["plain"][r][0] for r in runs["tls"] if r in runs["plain"]]
print("bench=tls_hop metric=ratio_tls_to_plain_median_of_rounds value=%.3f" % statistics.median(per))
for i, n in ((1, "coordinator"), (2, "worker")):
    if med["plain"][i] > 0:
        print("bench=tls_hop metric=%s_cpu_ratio_tls_to_plain value=%.3f"
              % (n, med["tls"][i] / med["plain"][i]))
EOF
echo "bench=tls_hop metric=loadavg_1m_end value=$(cut -d' ' -f1 /proc/loadavg)"
# both coordinators still saw the worker up through their one connection each
for p in "$cplain" "$ctls"; do
    timeout 5 redis-cli -h 127.0.0.1 -p "$p" SIMHASH.INFO | tr -d '\r' | grep '^worker0:' |
        sed 's/^/# /'
done
