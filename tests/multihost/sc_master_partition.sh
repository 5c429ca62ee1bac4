#!/usr/bin/env bash
# sc_master_partition.sh: a Redis master cut off from the cluster majority during
# durable ingest. Six Redis Cluster nodes, each with its worker in its own host (r1-r3
# masters, r4-r6 their replicas, cluster-node-timeout 2000 ms), workers with
# `wait-replicas 1` and a coordinator with `durable yes` (docs/durability.md) in host
# c1, a client in cl; latency between hosts. While the client keeps adding and
# querying (tests/tools/simhash_live.py: every answer checked, every ADD recorded as
# acknowledged or not), every packet between r1 and the other Redis hosts is dropped
# (r1 still reaches and is reached by c1 and cl). r1 keeps taking writes until it
# notices it is in the minority; none of them can be acknowledged (WAIT finds no
# replica). The majority promotes r1's replica; the coordinator routes there and
# queries are answered right again (durable adds wait for a replica). Healed,
# r1 rejoins as a replica of the new master and drops what it took alone. Expected:
# 0 wrong answers, 0 acknowledged writes lost (an acknowledged write that lived only
# on the old master would be missing now), the planted corpus exact.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../integration/lib.sh"
th_init mh-master-partition
. "$HERE/mh_lib.sh"
trap 'rc=$?; mh_cleanup; (exit $rc); th_cleanup' EXIT
th_need_bins simhash-shard simhash-coordinator delay-proxy
E2E="$TH_SRC/tests/tools/simhash_e2e.py"
LIVE="$TH_SRC/tests/tools/simhash_live.py"
B=6 K=3
R=(r1 r2 r3 r4 r5 r6)

mh_setup
for i in 1 2 3 4 5 6; do mh_host "r$i" $((10 + i)); done
mh_host c1 21
mh_host cl 31
mh_cluster_up 1 "${R[@]}"
for h in "${R[@]}"; do
    [ "$(mh_exec "$h" timeout 5 redis-cli -p 6379 role | head -n 1)" = "$( [ "${h#r}" -le 3 ] && echo master || echo slave)" ] ||
        th_fail "$h has an unexpected role"
    mh_worker "$h" $B $K --cluster yes --redis-announce "${MH_IP[$h]}:6379" --wait-replicas 1 \
        --wait-timeout-ms 300
done
workers=""
for h in "${R[@]}"; do workers="$workers ${MH_IP[$h]}:7100"; done
mh_coord c1 $B $K 3000 "$workers" --durable yes --health-interval-ms 500 \
    --cluster-node "${MH_IP[r2]}:6379" --cluster-node "${MH_IP[r3]}:6379" --cluster-node "${MH_IP[r5]}:6379"
mh_proxy c1 7000
mh_wait_routing cl "${MH_IP[c1]}" 30 || th_fail "routing: $MH_REPLY"
r1id=$(mh_exec r1 timeout 5 redis-cli -p 6379 cluster myid | tr -d '\r')
rep=
for h in r4 r5 r6; do
    mh_exec "$h" timeout 5 redis-cli -p 6379 cluster nodes | grep -q "myself,slave $r1id" && rep=$h
done
[ -n "$rep" ] || th_fail "no replica of r1"
th_log "r1 (${MH_IP[r1]}) is a master, its replica is $rep (${MH_IP[$rep]})"

st="$TH_DIR/planted.json"
mh_exec cl timeout 300 /usr/bin/python3 "$E2E" load --host "${MH_IP[c1]}" --port 7000 --blocks $B \
    --distance $K --bases 80 --seed 31 --state-out "$st" >"$TH_DIR/load.out" 2>&1 ||
    { cat "$TH_DIR/load.out"; th_fail "durable load of the planted corpus"; }

mh_run cl 300 live-run /usr/bin/python3 "$LIVE" run --host "${MH_IP[c1]}" --port 7000 --distance $K \
    --seed 33 --seconds 240 --stop-file "$TH_DIR/stop" --progress "$TH_DIR/progress.json" \
    --state-out "$TH_DIR/live.json" --max-adds 6000 --add-rate 150 --pause-ms 1 --reply-timeout 10
live=$TH_PID
prog() { /usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["counts"].get(sys.argv[2], d.get(sys.argv[2], 0)))' "$TH_DIR/progress.json" "$1"; }
for _ in $(seq 1 100); do [ -f "$TH_DIR/progress.json" ] && break; sleep 0.1; done
sleep 3
[ "$(prog adds_acked)" -gt 0 ] || th_fail "no durable add acknowledged before the partition"
others=()
for h in r2 r3 r4 r5 r6; do others+=("${MH_IP[$h]}"); done
mh_partition r1 "${others[@]}"
t0=$(date +%s.%N)
# adds in flight at the cut finish within a second (and the progress file is rewritten
# every 0.5 s): count from then on
sleep 1.5
a0=$(prog adds_acked) e0=$(prog adds_error)
th_log "r1 partitioned from r2-r6 ($a0 adds acknowledged 1.5 s later)"

# the majority promotes r1's replica
promoted=0
for _ in $(seq 1 150); do
    if [ "$(mh_exec "$rep" timeout 2 redis-cli -p 6379 role | head -n 1)" = master ]; then promoted=1; break; fi
    sleep 0.2
done
[ $promoted = 1 ] || th_fail "$rep was not promoted within 30 s"
tp=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
# queries answer right again without errors (a 2 s window within 30 s of the
# promotion). Durable adds keep failing until the heal: every ADD writes into the
# promoted node's slots, and it has no replica left to acknowledge them.
ok=0
for _ in $(seq 1 15); do
    x1=$(prog queries_error) q1=$(prog queries_ok); sleep 2; x2=$(prog queries_error) q2=$(prog queries_ok)
    [ "$x2" -eq "$x1" ] && [ "$q2" -gt "$q1" ] && { ok=1; break; }
done
[ $ok = 1 ] || th_fail "queries not answered right without errors within 30 s of the promotion"
off1=$(mh_exec r1 timeout 5 redis-cli -p 6379 info replication | tr -d '\r' | sed -n 's/^master_repl_offset://p')
# what the promoted replica had of r1's stream when it took over (PSYNC2 keeps it)
took=$(mh_exec "$rep" timeout 5 redis-cli -p 6379 info replication | tr -d '\r' | sed -n 's/^second_repl_offset://p')
lone=$((off1 - took + 1))
r1state=$(mh_exec r1 timeout 5 redis-cli -p 6379 cluster info | tr -d '\r' | sed -n 's/^cluster_state://p')
a1=$(prog adds_acked) e1=$(prog adds_error)
echo "master-partition: $rep promoted ${tp} s after the cut; old master r1 says cluster_state:$r1state," \
    "took $lone bytes of writes (replication stream) that $rep never got; adds from 1.5 s after the cut until the heal: $((a1 - a0)) acknowledged, $((e1 - e0)) refused"
[ "$lone" -gt 0 ] || th_log "note: r1 took no write alone this time"

mh_heal r1
th_log "healed"
rejoined=0
for _ in $(seq 1 150); do
    [ "$(mh_exec r1 timeout 2 redis-cli -p 6379 role | head -n 1)" = slave ] && { rejoined=1; break; }
    sleep 0.2
done
[ $rejoined = 1 ] || th_fail "r1 did not rejoin as a replica within 30 s"
mh_cluster_wait_ok 60 "${R[@]}" || th_fail "cluster not ok after the heal"
# a 2 s window with adds acknowledged, right answers and no error (within 40 s)
ok=0
for _ in $(seq 1 20); do
    x1=$(( $(prog adds_error) + $(prog queries_error) )) c1=$(prog adds_acked)
    sleep 2
    x2=$(( $(prog adds_error) + $(prog queries_error) )) c2=$(prog adds_acked)
    [ "$x2" -eq "$x1" ] && [ "$c2" -gt "$c1" ] && { ok=1; break; }
done
[ $ok = 1 ] || th_fail "no clean 2 s window within 40 s of the heal"
touch "$TH_DIR/stop"
wait "$live"
lrc=$?
echo "master-partition live: $(tail -n 1 "$TH_DIR/live-run.log")"
[ $lrc = 0 ] || { cat "$TH_DIR/live-run.log"; th_fail "wrong answers during the partition (exit $lrc)"; }
mh_exec cl timeout 200 /usr/bin/python3 "$LIVE" check --host "${MH_IP[c1]}" --port 7000 --distance $K \
    --seed 34 --state "$TH_DIR/live.json" --seconds 30 >"$TH_DIR/live-check.out" 2>&1
crc=$?
echo "master-partition $(tail -n 1 "$TH_DIR/live-check.out")"
[ $crc = 0 ] || { cat "$TH_DIR/live-check.out"; th_fail "check after the heal"; }
grep -q ', 0 acknowledged missing' "$TH_DIR/live-check.out" || th_fail "acknowledged writes lost"
mh_exec cl timeout 300 /usr/bin/python3 "$E2E" verify --host "${MH_IP[c1]}" --port 7000 --state "$st" \
    --seed 35 --batch 50 >"$TH_DIR/verify.out" 2>&1 || { cat "$TH_DIR/verify.out"; th_fail "planted corpus"; }
echo "master-partition planted corpus: $(tail -n 1 "$TH_DIR/verify.out")"
th_log "PASS"
