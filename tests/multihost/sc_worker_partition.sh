#!/usr/bin/env bash
# sc_worker_partition.sh: a worker host cut off from the coordinators (cluster mode).
# Three Redis Cluster masters with their workers (hosts r1-r3), two coordinators (c1,
# c2), a client (cl); latency between hosts (delay-proxy). A planted corpus is loaded,
# then every packet between r1 and both coordinator hosts is dropped (nftables in r1;
# r1 stays in the cluster: the other workers still reach its Redis). While cut off and
# after, a client queries one request at a time: every answer must be the complete
# right one or an error reply within 2x the deadline, never a hang; once the
# coordinators route r1's shards to the other workers (worker_failover_routes > 0),
# answers must be complete. Healed: r1's worker takes its routes back and answers are
# complete again, with no process restarted (same PIDs).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../integration/lib.sh"
th_init mh-worker-partition
. "$HERE/mh_lib.sh"
trap 'rc=$?; mh_cleanup; (exit $rc); th_cleanup' EXIT
th_need_bins simhash-shard simhash-coordinator delay-proxy
E2E="$TH_SRC/tests/tools/simhash_e2e.py"
B=6 K=3 TMO=1000

mh_setup
for i in 1 2 3; do mh_host "r$i" $((10 + i)); done
mh_host c1 21
mh_host c2 22
mh_host cl 31
mh_cluster_up 0 r1 r2 r3
pids=()
for h in r1 r2 r3; do
    mh_worker "$h" $B $K --cluster yes --redis-announce "${MH_IP[$h]}:6379"
    pids+=("$(th_child_pid "$MH_WORKER_PID")")
done
for c in c1 c2; do
    mh_coord "$c" $B $K $TMO "${MH_IP[r1]}:7100 ${MH_IP[r2]}:7100 ${MH_IP[r3]}:7100" \
        --cluster-node "${MH_IP[r2]}:6379" --cluster-node "${MH_IP[r3]}:6379" --health-interval-ms 500
    pids+=("$(th_child_pid "$MH_COORD_PID")")
    mh_proxy "$c" 7000
done
for c in c1 c2; do
    mh_wait_routing cl "${MH_IP[$c]}" 30 || th_fail "routing of $c not complete: $MH_REPLY"
done
st="$TH_DIR/state.json"
mh_exec cl timeout 300 /usr/bin/python3 "$E2E" load --host "${MH_IP[c1]}" --port 7000 --blocks $B \
    --distance $K --bases 150 --seed 21 --state-out "$st" >"$TH_DIR/load.out" 2>&1 ||
    { cat "$TH_DIR/load.out"; th_fail "load"; }
probe() { # probe NAME COORD SECONDS [--want-complete]: prints the probe line
    local name=$1 c=$2 secs=$3
    shift 3
    mh_exec cl timeout $((secs + 120)) /usr/bin/python3 "$E2E" probe --host "${MH_IP[$c]}" --port 7000 \
        --state "$st" --seconds "$secs" --count 100000 --timeout-ms $TMO --seed "$RANDOM" "$@" \
        >"$TH_DIR/probe-$name.out" 2>&1
    local rc=$?
    echo "worker-partition $name via $c: $(grep -h '^probe:' "$TH_DIR/probe-$name.out")"
    [ $rc = 0 ] || { cat "$TH_DIR/probe-$name.out"; th_fail "probe $name via $c"; }
}
probe before c1 3 --want-complete

# cut r1 off from both coordinator hosts, with probes running on both
mh_partition r1 "${MH_IP[c1]}" "${MH_IP[c2]}"
t0=$(date +%s.%N)
th_log "r1 (${MH_IP[r1]}) partitioned from c1 and c2"
probe during-c1 c1 12 &
p1=$!
probe during-c2 c2 12
wait $p1 || th_fail "probe during the partition via c1"
for c in c1 c2; do
    n=$(mh_info cl "${MH_IP[$c]}" worker_failover_routes)
    [ -n "$n" ] && [ "$n" -gt 0 ] || th_fail "$c: no failover routes after 12 s (worker_failover_routes '$n')"
    echo "worker-partition $c: worker_failover_routes $n cluster_state $(mh_info cl "${MH_IP[$c]}" cluster_state)"
done
probe failed-over c1 4 --want-complete
mh_exec cl timeout 300 /usr/bin/python3 "$E2E" verify --host "${MH_IP[c2]}" --port 7000 --state "$st" \
    --seed 5 --batch 50 >"$TH_DIR/verify-partitioned.out" 2>&1 ||
    { cat "$TH_DIR/verify-partitioned.out"; th_fail "verify while r1 is cut off"; }
echo "worker-partition verify via c2 while cut off: $(tail -n 1 "$TH_DIR/verify-partitioned.out")"

# heal: the routes come back to r1's worker, nothing restarted
mh_heal r1
th_log "healed after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
for c in c1 c2; do
    n=x
    for _ in $(seq 1 150); do
        n=$(mh_info cl "${MH_IP[$c]}" worker_failover_routes)
        [ "$n" = 0 ] && break
        sleep 0.2
    done
    [ "$n" = 0 ] || th_fail "$c: worker_failover_routes $n 30 s after the heal"
done
probe healed c2 4 --want-complete
mh_exec cl timeout 300 /usr/bin/python3 "$E2E" verify --host "${MH_IP[c1]}" --port 7000 --state "$st" \
    --seed 6 --batch 50 >"$TH_DIR/verify-healed.out" 2>&1 ||
    { cat "$TH_DIR/verify-healed.out"; th_fail "verify after the heal"; }
echo "worker-partition verify via c1 after the heal: $(tail -n 1 "$TH_DIR/verify-healed.out")"
for p in "${pids[@]}"; do
    kill -0 "$p" 2>/dev/null || th_fail "process $p (a worker or coordinator) is gone: restarted?"
done
echo "worker-partition: ${#pids[@]} workers and coordinators still the same processes (${pids[*]})"
th_log "PASS"
