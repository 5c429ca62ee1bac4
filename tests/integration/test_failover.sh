#!/usr/bin/env bash
# test_failover.sh: a master killed during ingest, in durable mode. deploy/simhash-local
# brings up 3 masters with 1 replica each (cluster-node-timeout 2000 ms), a worker
# beside every node and a coordinator with `durable yes` (workers `wait-replicas 1`:
# an ADD is acknowledged once a replica has it). While a client keeps adding and
# querying (tests/tools/simhash_live.py, every answer checked), one master is killed
# with SIGKILL. Afterwards: its replica was promoted and queries answered right again
# without operator action; `simhash-local repair` restarts the killed node, which
# rejoins as a replica, and durable adds are acknowledged again; no query answered
# wrongly (error replies while the slots had no master, and durable adds refused while
# the promoted node had no replica, are allowed and counted), 0 acknowledged
# fingerprints are missing, and the planted corpus answers exactly.
set -u
. "$(dirname "$0")/lib.sh"
th_init failover
th_need_bins simhash-shard simhash-coordinator
command -v redis-cli >/dev/null || th_fail "redis-cli not found"
LOCAL="$TH_SRC/deploy/simhash-local"
E2E="$TH_SRC/tests/tools/simhash_e2e.py"
LIVE="$TH_SRC/tests/tools/simhash_live.py"
B=6 K=3
LIFE=600
export SIMHASH_BIN=$TH_BIN
. "$(dirname "$0")/deploy_lib.sh"
trap 'rc=$?; dl_down; (exit $rc); th_cleanup' EXIT
rcli() { local p=$1; shift; timeout 5 redis-cli -p "$p" "$@" 2>/dev/null | tr -d '\r'; }

# ---- bring up 3 masters + 3 replicas, durable ----
dl_up_cluster "simhash-local up --cluster --replicas 1 --durable" --masters 3 --replicas 1 \
    --node-timeout 2000 --durable --no-aof --fresh --blocks $B --distance $K \
    --timeout-ms 3000 --lifetime $LIFE
grep -q '^durable yes' "$TH_DIR/coordinator.conf" || th_fail "coordinator.conf lacks durable yes"
grep -q '^wait-replicas 1' "$TH_DIR/shard-0.conf" || th_fail "shard-0.conf lacks wait-replicas 1"
timeout 30 bash "$LOCAL" status --dir "$TH_DIR" >"$TH_DIR/status.out" ||
    { cat "$TH_DIR/status.out" >&2; th_fail "status after up"; }
[ "$(grep -c 'master [0-9]* slots' "$TH_DIR/status.out")" -eq 3 ] &&
    [ "$(grep -c 'slave 0 slots' "$TH_DIR/status.out")" -eq 3 ] ||
    { cat "$TH_DIR/status.out" >&2; th_fail "status does not show 3 masters and 3 replicas"; }

dl_wait_routing "$cport" || th_fail "the coordinator did not take an ADD within 30 s (last reply: $DL_REPLY)"
[ "$(rcli "$cport" simhash.del 1)" = 1 ] || th_fail "DEL of the probe"

# ---- planted corpus ----
st="$TH_DIR/planted.json"
timeout 120 python3 "$E2E" load --port "$cport" --blocks $B --distance $K --bases 60 --seed 61 \
    --state-out "$st" || th_fail "load of the planted corpus"
timeout 120 python3 "$E2E" verify --port "$cport" --state "$st" --seed 62 --quick ||
    th_fail "verify before the failover"

# ---- the victim: the master serving the slot of {0:00} ----
slot=$(rcli "$rport" cluster keyslot '{0:00}')
victim=
for i in 0 1 2 3 4 5; do
    p=$((rport + i))
    [ "$(rcli "$p" role | head -n 1)" = master ] || continue
    rcli "$p" cluster nodes | awk -v s="$slot" '$3 ~ /myself/ { for (i = 9; i <= NF; i++) {
        split($i, r, "-"); if (r[2] == "") r[2] = r[1]; if (s >= r[1] && s <= r[2]) found = 1 } }
        END { exit !found }' && { victim=$p; break; }
done
[ -n "$victim" ] || th_fail "no master serves slot $slot"
vid=$(rcli "$victim" cluster myid)
vpid=$(rcli "$victim" info server | sed -n 's/^process_id://p')
[ -n "$vpid" ] && [ -n "$vid" ] || th_fail "no pid/id of the master on $victim"
replica=
for i in 0 1 2 3 4 5; do
    p=$((rport + i))
    rcli "$p" cluster nodes | grep -q "myself,slave $vid" && replica=$p
done
[ -n "$replica" ] || th_fail "the master on $victim has no replica"
th_log "victim: master 127.0.0.1:$victim (pid $vpid, slot $slot), its replica 127.0.0.1:$replica"

# ---- the live client, then SIGKILL the master mid-ingest ----
timeout 300 python3 "$LIVE" run --port "$cport" --distance $K --seed 63 --seconds 280 \
    --stop-file "$TH_DIR/stop" --progress "$TH_DIR/progress.json" --state-out "$TH_DIR/live.json" \
    --max-adds 4000 --add-rate 60 --pause-ms 1 --reply-timeout 10 >"$TH_DIR/live-run.log" 2>&1 &
live_pid=$!
TH_PIDS+=("$live_pid")
for i in $(seq 1 100); do [ -f "$TH_DIR/progress.json" ] && break; sleep 0.1; done
sleep 4
a_adds=$(dl_progress adds_acked)
[ "$a_adds" -gt 0 ] || th_fail "no add acknowledged before the kill"
# the redis-server was started by simhash-local under this test: kill exactly that PID
grep -q redis-server "/proc/$vpid/cmdline" 2>/dev/null || th_fail "pid $vpid is not a redis-server"
kill -KILL "$vpid"
t0=$(date +%s.%N)
th_log "killed the master on $victim after $a_adds acknowledged adds"

# the replica takes over (cluster-node-timeout 2000 ms)
promoted=0
for i in $(seq 1 300); do
    if [ "$(rcli "$replica" role | head -n 1)" = master ] &&
        [ "$(rcli "$replica" cluster info | sed -n 's/^cluster_state://p')" = ok ]; then
        promoted=1
        break
    fi
    sleep 0.1
done
[ $promoted -eq 1 ] || th_fail "the replica on $replica was not promoted within 30 s"
th_log "replica promoted after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"

# queries resume by themselves: within 30 s of the promotion a 2 s window with right
# answers and no query error. (Durable adds to the slots of the promoted replica keep
# failing meanwhile: it has no replica left to acknowledge them.)
resumed=0
for i in $(seq 1 15); do
    e1=$(dl_progress queries_error) q1=$(dl_progress queries_ok)
    sleep 2
    e2=$(dl_progress queries_error) q2=$(dl_progress queries_ok)
    if [ "$e2" -eq "$e1" ] && [ "$q2" -gt "$q1" ]; then resumed=1; break; fi
done
th_log "after the promotion: $((q2 - q1)) right answers and $((e2 - e1)) query errors in the last 2 s window"
[ $resumed -eq 1 ] || th_fail "queries did not answer right without errors within 30 s of the promotion"

# the operator restarts the killed node: it rejoins as a replica of its successor
dl_sl repair --lifetime $LIFE >"$TH_DIR/repair.out" 2>&1 || { cat "$TH_DIR/repair.out" >&2; th_fail "simhash-local repair"; }
cat "$TH_DIR/repair.out" >&2
[ "$(rcli "$victim" role | head -n 1)" = slave ] || th_fail "the restarted node on $victim is not a replica"

# now durable adds succeed again too: a 2 s window with adds acknowledged, right answers
# and no error reply (within 30 s)
resumed=0
for i in $(seq 1 15); do
    e1=$(( $(dl_progress adds_error) + $(dl_progress queries_error) ))
    c1=$(dl_progress adds_acked) q1=$(dl_progress queries_ok)
    sleep 2
    e2=$(( $(dl_progress adds_error) + $(dl_progress queries_error) ))
    c2=$(dl_progress adds_acked) q2=$(dl_progress queries_ok)
    if [ "$e2" -eq "$e1" ] && [ "$c2" -gt "$c1" ] && [ "$q2" -gt "$q1" ]; then resumed=1; break; fi
done
th_log "after the repair: $((c2 - c1)) adds acknowledged, $((q2 - q1)) right answers and" \
    "$((e2 - e1)) error replies in the last 2 s window"
[ $resumed -eq 1 ] || th_fail "service did not resume without errors within 30 s of the repair"
touch "$TH_DIR/stop"
wait "$live_pid"
live_rc=$?
cat "$TH_DIR/live-run.log" >&2
[ $live_rc -eq 0 ] || th_fail "the live client saw wrong answers (exit $live_rc)"

# ---- afterwards: 0 acknowledged fingerprints missing, planted corpus exact ----
timeout 200 python3 "$LIVE" check --port "$cport" --distance $K --seed 64 --state "$TH_DIR/live.json" \
    --seconds 30 >"$TH_DIR/live-check.log" 2>&1
check_rc=$?
cat "$TH_DIR/live-check.log" >&2
[ $check_rc -eq 0 ] || th_fail "acknowledged fingerprints after the failover"
grep -q ' 0 acknowledged missing' "$TH_DIR/live-check.log" || th_fail "acknowledged fingerprints missing"
timeout 200 python3 "$E2E" verify --port "$cport" --state "$st" --seed 65 ||
    th_fail "planted corpus after the failover"
info=$(rcli "$cport" simhash.info)
th_log "coordinator: $(echo "$info" | grep -E '^(cluster_state|cluster_masters|map_changes|cluster_reattaches):' | tr '\n' ' ')"
th_log "PASS"
