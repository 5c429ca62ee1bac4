#!/usr/bin/env bash
# test_worker_failover.sh: in cluster mode, a dead shard worker does not make its
# node's shards unanswerable. simhash-local up --cluster (3 masters, a worker beside
# each, 2 coordinators); a planted corpus loaded (tests/tools/simhash_e2e.py) and
# verified against brute force; then the worker of one master is killed: the
# coordinators route that node's (table, shard) pairs to the other workers (which
# follow -MOVED), SIMHASH.INFO shows worker_failover_routes > 0, and the whole corpus
# is verified again through both coordinators (nothing missed or extra), deletes and
# re-inserts made meanwhile included; the worker started again takes its routes back.
set -u
. "$(dirname "$0")/lib.sh"
th_init worker-failover
. "$(dirname "$0")/deploy_lib.sh"
th_need_bins simhash simhash-shard simhash-coordinator
DRIVER="$TH_SRC/tests/tools/simhash_e2e.py"
down() { [ -f "$TH_DIR/procs" ] && dl_down; return 0; }
trap 'rc=$?; down; (exit $rc); th_cleanup' EXIT

dl_up_cluster "simhash-local up --cluster" --masters 3 --replicas 0 \
    --coordinators 2 --no-aof --lifetime 600 --timeout-ms 3000
c1=$((cport + 1))
dl_wait_routing "$cport" || th_fail "routing never complete: $DL_REPLY"
timeout 10 redis-cli -p "$cport" SIMHASH.DEL 1 >/dev/null   # dl_wait_routing's probe
info_field() { timeout 10 redis-cli -p "$1" SIMHASH.INFO | tr -d '\r' | sed -n "s/^$2://p"; }
[ "$(info_field "$cport" worker_failover_routes)" = 0 ] || th_fail "failover routes before any failure"

state="$TH_DIR/state.json"
timeout 240 python3 "$DRIVER" load --port "$cport" --blocks 6 --distance 3 --bases 150 \
    --seed 63 --state-out "$state" || th_fail "load"
timeout 240 python3 "$DRIVER" verify --port "$cport" --state "$state" --seed 1 || th_fail "verify before"

# kill the worker beside master 0: the child of its `timeout` wrapper
wp=$(cat "$TH_DIR/shard-0.pid")
wc=$(th_child_pid "$wp")
kill -KILL "${wc:-$wp}"
th_log "killed shard-0 (pid ${wc:-$wp}, port $(cat "$TH_DIR/shard-0.port"))"
for port in "$cport" "$c1"; do
    n=0
    for _ in $(seq 1 100); do
        n=$(info_field "$port" worker_failover_routes)
        [ -n "$n" ] && [ "$n" -gt 0 ] && break
        sleep 0.1
    done
    [ -n "$n" ] && [ "$n" -gt 0 ] || th_fail "coordinator $port: no failover routes"
    [ "$(info_field "$port" cluster_state)" = ok ] || th_fail "coordinator $port: routing not ok"
    th_log "coordinator $port: $n of 5120 routes on other workers"
done
for port in "$cport" "$c1"; do
    timeout 240 python3 "$DRIVER" verify --port "$port" --state "$state" --seed 2 ||
        th_fail "verify through $port with shard-0 down"
done
# writes with the worker down, then everything verified again
timeout 240 python3 "$DRIVER" lifecycle --port "$c1" --seed 64 --state "$state" \
    --state-out "$TH_DIR/state2.json" || th_fail "deletes and re-inserts with shard-0 down"
timeout 240 python3 "$DRIVER" verify --port "$cport" --state "$TH_DIR/state2.json" --seed 3 ||
    th_fail "verify of the writes made with shard-0 down"
th_log "every answer exact with shard-0 down, through both coordinators, new writes included"

# the worker comes back (simhash-local repair) and takes its routes back
dl_sl repair >"$TH_DIR/repair.out" 2>&1 || th_fail "repair: $(cat "$TH_DIR/repair.out")"
for _ in $(seq 1 100); do
    [ "$(info_field "$cport" worker_failover_routes)" = 0 ] && break
    sleep 0.1
done
[ "$(info_field "$cport" worker_failover_routes)" = 0 ] || th_fail "routes not back after repair"
timeout 240 python3 "$DRIVER" verify --port "$cport" --state "$TH_DIR/state2.json" --seed 4 --quick ||
    th_fail "verify after the worker came back"
th_log "all checks passed"
