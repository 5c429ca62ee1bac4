#!/usr/bin/env bash
# sc_add_host.sh: a host added live. Three Redis Cluster masters with their workers
# (r1-r3), a coordinator (c1) configured with the worker of r1 only (it finds the
# others, and later r4's, in the worker registry), a client (cl);
# latency between hosts. While the client keeps adding and querying
# (tests/tools/simhash_live.py, every answer checked), host r4 is made (namespace,
# veth on the bridge), its Redis node joins the cluster (redis-cli --cluster
# add-node), its worker starts, and 1024 slots are moved onto it from all masters
# (redis-cli --cluster reshard --cluster-from all). Expected: r4 serves slots and keys, the
# coordinator uses its worker (same coordinator process), 0 wrong answers, 0
# acknowledged writes lost, the planted corpus exact.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../integration/lib.sh"
th_init mh-add-host
. "$HERE/mh_lib.sh"
trap 'rc=$?; mh_cleanup; (exit $rc); th_cleanup' EXIT
th_need_bins simhash-shard simhash-coordinator delay-proxy
E2E="$TH_SRC/tests/tools/simhash_e2e.py"
LIVE="$TH_SRC/tests/tools/simhash_live.py"
B=6 K=3
# slots moved onto the new host: each costs about ten round trips between hosts
# (SETSLOT on both sides, GETKEYSINSLOT, MIGRATE, SETSLOT NODE on every master), so
# a full rebalance (4096) takes over a minute at these latencies
SLOTS=${MH_SLOTS:-1024}

mh_setup
for i in 1 2 3; do mh_host "r$i" $((10 + i)); done
mh_host c1 21
mh_host cl 31
mh_cluster_up 0 r1 r2 r3
for h in r1 r2 r3; do mh_worker "$h" $B $K --cluster yes --redis-announce "${MH_IP[$h]}:6379"; done
R4=10.77.0.14
mh_coord c1 $B $K 3000 "${MH_IP[r1]}:7100" \
    --cluster-node "${MH_IP[r1]}:6379" --cluster-node "${MH_IP[r2]}:6379" --health-interval-ms 500
cpid=$(th_child_pid "$MH_COORD_PID")
mh_proxy c1 7000
mh_wait_routing cl "${MH_IP[c1]}" 30 || th_fail "routing: $MH_REPLY"
st="$TH_DIR/planted.json"
mh_exec cl timeout 300 /usr/bin/python3 "$E2E" load --host "${MH_IP[c1]}" --port 7000 --blocks $B \
    --distance $K --bases 80 --seed 51 --state-out "$st" >"$TH_DIR/load.out" 2>&1 ||
    { cat "$TH_DIR/load.out"; th_fail "load of the planted corpus"; }

mh_run cl 300 live-run /usr/bin/python3 "$LIVE" run --host "${MH_IP[c1]}" --port 7000 --distance $K \
    --seed 53 --seconds 240 --stop-file "$TH_DIR/stop" --progress "$TH_DIR/progress.json" \
    --state-out "$TH_DIR/live.json" --max-adds 8000 --add-rate 100 --pause-ms 1 --reply-timeout 10
live=$TH_PID
prog() { /usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["counts"].get(sys.argv[2], d.get(sys.argv[2], 0)))' "$TH_DIR/progress.json" "$1"; }
for _ in $(seq 1 100); do [ -f "$TH_DIR/progress.json" ] && break; sleep 0.1; done
sleep 2
q0=$(prog queries_ok) a0=$(prog adds_acked)

# the new host: namespace, link, Redis node, proxy, join, worker
t0=$(date +%s.%N)
mh_host r4 14
mh_redis r4 --cluster
mh_proxy r4 6379 16379 7100
mh_exec r4 timeout 120 redis-cli --cluster add-node "$R4:6379" "${MH_IP[r1]}:6379" \
    >"$TH_DIR/add-node.log" 2>&1 || { cat "$TH_DIR/add-node.log"; th_fail "redis-cli --cluster add-node"; }
mh_cluster_wait_ok 60 r1 r2 r3 r4 || th_fail "cluster not ok after add-node"
mh_worker r4 $B $K --cluster yes --redis-announce "$R4:6379"
up=0
for _ in $(seq 1 150); do
    mh_rcli cl "${MH_IP[c1]}" 7000 SIMHASH.INFO | grep -q "addr=$R4:7100,health=up" && { up=1; break; }
    sleep 0.2
done
[ $up = 1 ] || th_fail "the coordinator did not find the worker of r4 in the registry within 30 s"
mh_rcli cl "${MH_IP[c1]}" 7000 SIMHASH.INFO | grep -q "addr=$R4:7100,health=up,.*source=registry" ||
    th_fail "r4's worker was not found through the registry"
r4id=$(mh_exec r4 timeout 5 redis-cli -p 6379 cluster myid | tr -d '\r')
mh_exec r4 timeout 300 redis-cli --cluster reshard "${MH_IP[r1]}:6379" --cluster-from all \
    --cluster-to "$r4id" --cluster-slots "$SLOTS" --cluster-yes --cluster-pipeline 200 \
    >"$TH_DIR/reshard.log" 2>&1 || { grep -v "^Moving slot" "$TH_DIR/reshard.log" | tail -n 20; th_fail "reshard"; }
mh_cluster_wait_ok 60 r1 r2 r3 r4 || th_fail "cluster not ok after the rebalance"
tadd=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
slots=$(mh_exec r4 timeout 5 redis-cli -p 6379 cluster nodes | tr -d '\r' | awk '$3 ~ /myself/ {
    n = 0; for (i = 9; i <= NF; i++) { split($i, r, "-"); n += (r[2] == "" ? 1 : r[2] - r[1] + 1) } print n }')
keys=$(mh_exec r4 timeout 5 redis-cli -p 6379 dbsize | tr -d '\r')
[ "${slots:-0}" = "$SLOTS" ] || th_fail "r4 serves ${slots:-0} slots, want $SLOTS"
[ "${keys:-0}" -gt 0 ] || th_fail "no keys on r4"
sleep 3
q1=$(prog queries_ok) a1=$(prog adds_acked)
[ "$q1" -gt "$q0" ] && [ "$a1" -gt "$a0" ] || th_fail "the client made no progress during the move"
touch "$TH_DIR/stop"
wait "$live"
lrc=$?
echo "add-host: r4 added and slots moved in ${tadd} s: $slots slots, $keys keys;" \
    "during it $((q1 - q0)) right answers, $((a1 - a0)) adds acknowledged"
echo "add-host live: $(tail -n 1 "$TH_DIR/live-run.log")"
[ $lrc = 0 ] || { cat "$TH_DIR/live-run.log"; th_fail "wrong answers during the move (exit $lrc)"; }
mh_exec cl timeout 200 /usr/bin/python3 "$LIVE" check --host "${MH_IP[c1]}" --port 7000 --distance $K \
    --seed 54 --state "$TH_DIR/live.json" --seconds 30 >"$TH_DIR/live-check.out" 2>&1
crc=$?
echo "add-host $(tail -n 1 "$TH_DIR/live-check.out")"
[ $crc = 0 ] || { cat "$TH_DIR/live-check.out"; th_fail "check after the move"; }
grep -q ', 0 acknowledged missing' "$TH_DIR/live-check.out" || th_fail "acknowledged writes lost"
mh_exec cl timeout 300 /usr/bin/python3 "$E2E" verify --host "${MH_IP[c1]}" --port 7000 --state "$st" \
    --seed 55 --batch 50 >"$TH_DIR/verify.out" 2>&1 || { cat "$TH_DIR/verify.out"; th_fail "planted corpus"; }
echo "add-host planted corpus: $(tail -n 1 "$TH_DIR/verify.out")"
kill -0 "$cpid" 2>/dev/null || th_fail "the coordinator process $cpid is gone"
echo "add-host: coordinator pid $cpid throughout, workers: $(mh_rcli cl "${MH_IP[c1]}" 7000 SIMHASH.INFO | grep -c 'health=up') up"
th_log "PASS"
