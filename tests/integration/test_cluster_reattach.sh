#!/usr/bin/env bash
# test_cluster_reattach.sh: failover on a Redis Cluster with replicas. 3 masters with
# one replica each, a shard worker beside each master only, a coordinator. A planted
# corpus is loaded and verified; then one master is stopped. Its replica takes over,
# the worker of the dead master reattaches to it (cluster_reattaches, a new node in
# SIMHASH.INFO) and the coordinator routes to it again: answers are exact again
# without any operator action, and the corpus is complete.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
th_init cluster-reattach
th_need_bins simhash-shard simhash-coordinator
DRIVER="$TH_SRC/tests/tools/simhash_e2e.py"

CL_NODE_TIMEOUT_MS=1000 cl_start_cluster cl 3 1
masters=($(cl_master_ports))
[ "${#masters[@]}" = 3 ] || th_fail "expected 3 masters, have: ${masters[*]}"
th_log "masters ${masters[*]} of nodes ${CL_PORTS[*]}"

info_field() {
    timeout 5 redis-cli -p "$1" SIMHASH.INFO | tr -d '\r' | sed -n "s/^$2://p"
}

workers="" wpids=()
for i in 0 1 2; do
    th_start_shard "shard-$i" "${masters[$i]}" 0-255 6 3 "" --cluster yes --timeout-ms 500
    workers="$workers 127.0.0.1:$TH_SHARD_PORT"
    wpids+=("$TH_SHARD_PID")
done
th_start_coord coord 6 3 1000 "$workers" "" --cluster-node "127.0.0.1:${masters[1]}" \
    --cluster-node "127.0.0.1:${masters[2]}" --health-interval-ms 200 --cluster-refresh-ms 1000
cport=$TH_COORD_PORT
i=0
until [ "$(info_field "$cport" cluster_state)" = ok ]; do
    i=$((i + 1))
    [ $i -lt 200 ] || th_fail "routing not complete at start"
    sleep 0.1
done

state="$TH_DIR/state.json"
timeout 120 python3 "$DRIVER" load --port "$cport" --bases 100 --seed 5 --state-out "$state" \
    || th_fail "load"
timeout 120 python3 "$DRIVER" verify --port "$cport" --state "$state" --seed 6 || th_fail "verify"
# replicas have the data before the master goes away
for p in "${masters[@]}"; do
    timeout 10 redis-cli -p "$p" wait 1 2000 >/dev/null
done

# stop the master under worker 0
victim=${masters[0]}
for idx in "${!CL_PORTS[@]}"; do
    [ "${CL_PORTS[$idx]}" = "$victim" ] && cl_stop_node "$idx"
done
th_log "stopped master $victim"
before=$(info_field "$cport" worker0_node)
[ "$before" = "127.0.0.1:$victim" ] || th_fail "worker0_node '$before' before the failover"

timeout 60 python3 "$DRIVER" wait-ok --port "$cport" --state "$state" --seed 7 --within 40 \
    || th_fail "service did not resume after the failover"
timeout 120 python3 "$DRIVER" verify --port "$cport" --state "$state" --seed 8 \
    || th_fail "verify after the failover"
after=$(info_field "$cport" worker0_node)
[ -n "$after" ] && [ "$after" != "$before" ] || th_fail "worker 0 still on '$after'"
re=$(info_field "$cport" cluster_reattaches)
[ "${re:-0}" -ge 1 ] || th_fail "cluster_reattaches ${re:-}"
th_log "worker 0 moved from $before to $after; cluster_reattaches $re"
th_log "PASS"
