#!/usr/bin/env bash
# test_membership.sh: live worker membership (docs/operations.md, "Adding and removing
# workers"). Single Redis, processes started here: a coordinator configured with one
# worker finds the second in the worker registry; while a client keeps adding and
# querying (tests/tools/simhash_live.py, every answer checked), a standby worker for
# every shard joins, a worker leaves on SIGTERM (it drains), another joins, the
# standby leaves: the coordinator (same PID) never fails a request, and drops the
# workers that left. Corpus counts stay exact with workers serving the same shards; a
# killed worker's shards go to the standby at once and its entry expires. Then a
# Redis Cluster deployment (deploy/simhash-local, two coordinators) gets three
# add-nodes and two remove-nodes under the same live client: coordinators untouched,
# no failed request, everything acknowledged found, the planted corpus exact.
set -u
. "$(dirname "$0")/lib.sh"
th_init membership
th_need_bins simhash-shard simhash-coordinator
command -v redis-cli >/dev/null || th_fail "redis-cli not found"
E2E="$TH_SRC/tests/tools/simhash_e2e.py"
LIVE="$TH_SRC/tests/tools/simhash_live.py"
B=6 K=3
export SIMHASH_BIN=$TH_BIN

info() { timeout 5 redis-cli -p "$cport" simhash.info 2>/dev/null | tr -d '\r'; }
# wait_info PATTERN [SECS]: until SIMHASH.INFO has a line matching PATTERN (grep -E)
wait_info() {
    local i
    for ((i = 0; i < ${2:-20} * 10; i++)); do
        info | grep -qE "$1" && return 0
        sleep 0.1
    done
    return 1
}
# wait_no_info PATTERN [SECS]: until no line of SIMHASH.INFO matches PATTERN
wait_no_info() {
    local i
    for ((i = 0; i < ${2:-20} * 10; i++)); do
        info | grep -qE "$1" || return 0
        sleep 0.1
    done
    return 1
}

# ---- bad registry options: a clear message, exit 2 ----
out=$("$TH_BIN/simhash-shard" --announce-addr nonsense --check-config 2>&1); rc=$?
[ $rc -eq 2 ] && [[ $out == *"announce-addr 'nonsense': expected HOST:PORT"* ]] ||
    th_fail "bad announce-addr: exit $rc, '$out'"
out=$("$TH_BIN/simhash-shard" --announce-interval-ms 1000 --announce-ttl-ms 1000 --check-config 2>&1); rc=$?
[ $rc -eq 2 ] && [[ $out == *"must be above announce-interval-ms"* ]] ||
    th_fail "announce-ttl-ms <= interval: exit $rc, '$out'"

# ---- single Redis: the coordinator knows one worker, finds the other ----
th_start_redis redis
rport=$TH_REDIS_PORT
th_start_shard wA "$rport" 0-127 $B $K
pA=$TH_SHARD_PORT
th_start_shard wB "$rport" 128-255 $B $K "" --shutdown-drain-ms 3000
pB=$TH_SHARD_PORT pidB=$TH_SHARD_PID
th_start_coord coord $B $K 2000 "127.0.0.1:$pA"
cport=$TH_COORD_PORT
cpid=$(th_child_pid "$TH_COORD_PID")
wait_info "addr=127.0.0.1:$pB,health=up,shards=128-255" 20 ||
    th_fail "the coordinator did not find worker B in the registry: $(info | grep -E '^worker|registry')"
wait_info '^routing:ok' 20 || th_fail "routing not complete"
reg=$(timeout 5 redis-cli -p "$pA" shard.workers | tr -d '\r' | sort | tr '\n' ' ')
[ "$reg" = "$(printf '127.0.0.1:%s\n' "$pA" "$pB" | sort | tr '\n' ' ')" ] ||
    th_fail "SHARD.WORKERS lists '$reg'"
th_log "discovered: $(info | grep -E '^worker[0-9]+:' | sed 's/,latency.*source=/ source=/;s/,redis_addr.*//' | tr '\n' ' ')"

st="$TH_DIR/planted.json"
timeout 120 python3 "$E2E" load --port "$cport" --blocks $B --distance $K --bases 60 --seed 71 \
    --state-out "$st" >"$TH_DIR/load.out" 2>&1 || { cat "$TH_DIR/load.out" >&2; th_fail "planted load"; }
timeout 120 python3 "$E2E" verify --port "$cport" --state "$st" --seed 72 >"$TH_DIR/verify1.out" 2>&1 ||
    { cat "$TH_DIR/verify1.out" >&2; th_fail "planted corpus through a discovered worker"; }
th_log "$(tail -n 1 "$TH_DIR/verify1.out")"

timeout 300 python3 "$LIVE" run --port "$cport" --distance $K --seed 73 --seconds 240 \
    --stop-file "$TH_DIR/stop1" --progress "$TH_DIR/progress1.json" --state-out "$TH_DIR/live1.json" \
    --max-adds 4000 --add-rate 80 --pause-ms 2 >"$TH_DIR/live1.log" 2>&1 &
live_pid=$!
TH_PIDS+=("$live_pid")
sleep 2

# a standby for every shard joins; B leaves (drains); D joins for B's shards; the
# standby leaves
th_start_shard wC "$rport" 0-255 $B $K "" --shutdown-drain-ms 3000
pC=$TH_SHARD_PORT pidC=$TH_SHARD_PID
wait_info "addr=127.0.0.1:$pC,health=up" 20 || th_fail "standby C not taken"
sleep 1
th_stop "$pidB"
wait_no_info "addr=127.0.0.1:$pB," 20 || th_fail "B still listed after it stopped: $(info | grep "$pB")"
th_log "B left: $(grep -E 'left the worker registry|gone' "$TH_DIR/coord.log" | tail -n 2 | sed 's/.*workers.c:[0-9]* //' | tr '\n' ' ')"
th_start_shard wD "$rport" 128-255 $B $K "" --shutdown-drain-ms 3000
pD=$TH_SHARD_PORT pidD=$TH_SHARD_PID
wait_info "addr=127.0.0.1:$pD,health=up" 20 || th_fail "D not taken"

# counts with workers serving the same shards: as Redis's own counter hashes say
truth=$(for x in $(seq 0 255); do printf 'HGET c:{0:%02x} fingerprints\n' "$x"; done |
        timeout 10 redis-cli -p "$rport" | awk '{ s += $1 } END { print s + 0 }')
got=$(info | sed -n 's/^fingerprints://p')
[ "$got" = "$truth" ] || {
    sleep 1
    truth=$(for x in $(seq 0 255); do printf 'HGET c:{0:%02x} fingerprints\n' "$x"; done |
            timeout 10 redis-cli -p "$rport" | awk '{ s += $1 } END { print s + 0 }')
    got=$(info | sed -n 's/^fingerprints://p')
}
# the live client keeps adding, so allow its few adds between the two reads
[ -n "$got" ] && [ "$got" != unknown ] && [ $((got - truth)) -le 5 ] && [ $((truth - got)) -le 5 ] ||
    th_fail "SIMHASH.INFO fingerprints:$got with overlapping workers, Redis counts $truth"
th_log "counts with workers A 0-127, C 0-255, D 128-255: fingerprints $got (Redis: $truth)"

sleep 1
th_stop "$pidC"
wait_no_info "addr=127.0.0.1:$pC," 20 || th_fail "C still listed after it stopped"
sleep 2
touch "$TH_DIR/stop1"
wait "$live_pid"
live_rc=$?
cat "$TH_DIR/live1.log" >&2
[ $live_rc -eq 0 ] || th_fail "the live client saw wrong answers (exit $live_rc)"
summary=$(tail -n 1 "$TH_DIR/live1.log")
[[ $summary == *" 0 error replies"* ]] && [[ $summary == *" 0 uncertain"* ]] ||
    th_fail "requests failed while workers joined and left: $summary"
[[ $summary == *" 0 wrong answers"* ]] || th_fail "live client summary: $summary"
kill -0 "$cpid" 2>/dev/null || th_fail "the coordinator is gone"
[ "$(th_child_pid "$TH_COORD_PID")" = "$cpid" ] || th_fail "the coordinator was restarted"
i=$(info)
echo "$i" | grep -q '^workers_joined:3$' && echo "$i" | grep -q '^workers_gone:2$' ||
    th_fail "registry counters: $(echo "$i" | grep -E '^workers_(joined|gone)')"
timeout 200 python3 "$LIVE" check --port "$cport" --distance $K --seed 74 --state "$TH_DIR/live1.json" \
    --seconds 30 >"$TH_DIR/check1.out" 2>&1 || { cat "$TH_DIR/check1.out" >&2; th_fail "acknowledged pairs after the changes"; }
timeout 120 python3 "$E2E" verify --port "$cport" --state "$st" --seed 75 >"$TH_DIR/verify2.out" 2>&1 ||
    { cat "$TH_DIR/verify2.out" >&2; th_fail "planted corpus after the changes"; }
th_log "single Redis: $(tail -n 1 "$TH_DIR/check1.out"); $(tail -n 1 "$TH_DIR/verify2.out")"

# a worker that dies: its shards go to another worker serving them; its entry expires
th_start_shard wE "$rport" 0-255 $B $K ""
pE=$TH_SHARD_PORT
wait_info "addr=127.0.0.1:$pE,health=up" 20 || th_fail "E not taken"
kill -KILL "$(th_child_pid "$pidD")"
r=$(timeout 10 python3 "$E2E" verify --port "$cport" --state "$st" --seed 76 --quick 2>&1) ||
    th_fail "queries right after a worker was killed (E serves its shards): $r"
wait_no_info "addr=127.0.0.1:$pD," 20 || th_fail "the killed worker D is still listed: $(info | grep "$pD")"
th_log "killed worker: answers complete through the standby at once; dropped when its entry expired"

# ---- Redis Cluster: add-node x3 and remove-node x2 under load ----
. "$(dirname "$0")/deploy_lib.sh"
DL_DIR="$TH_DIR/cl"
mkdir -p "$DL_DIR"
trap 'rc=$?; dl_down; (exit $rc); th_cleanup' EXIT
dl_up_cluster "simhash-local up --cluster" --masters 3 --replicas 0 --coordinators 2 --no-aof \
    --lifetime 900
dl_wait_routing "$cport" || th_fail "cluster routing: $DL_REPLY"
timeout 5 redis-cli -p "$cport" simhash.del 1 ready >/dev/null    # not part of the planted corpus
c0=$(cat "$DL_DIR/coordinator.pid") c1=$(cat "$DL_DIR/coordinator-1.pid")
st2="$TH_DIR/planted2.json"
timeout 120 python3 "$E2E" load --port "$cport" --blocks $B --distance $K --bases 40 --seed 81 \
    --state-out "$st2" >"$TH_DIR/load2.out" 2>&1 || { cat "$TH_DIR/load2.out" >&2; th_fail "planted load (cluster)"; }
timeout 600 python3 "$LIVE" run --port "$cport" --distance $K --seed 83 --seconds 500 \
    --stop-file "$TH_DIR/stop2" --progress "$DL_DIR/progress.json" --state-out "$TH_DIR/live2.json" \
    --max-adds 6000 --add-rate 60 --pause-ms 2 >"$TH_DIR/live2.log" 2>&1 &
live_pid=$!
TH_PIDS+=("$live_pid")
sleep 2
for k in 1 2 3; do
    dl_sl add-node --lifetime 900 >"$TH_DIR/add-$k.out" 2>&1 ||
        { cat "$TH_DIR/add-$k.out" >&2; th_fail "add-node $k"; }
    th_log "$(tail -n 1 "$TH_DIR/add-$k.out")"
done
for k in 1 2; do
    dl_sl remove-node >"$TH_DIR/remove-$k.out" 2>&1 ||
        { cat "$TH_DIR/remove-$k.out" >&2; th_fail "remove-node $k"; }
    th_log "$(tail -n 1 "$TH_DIR/remove-$k.out")"
done
sleep 2
touch "$TH_DIR/stop2"
wait "$live_pid"
live_rc=$?
cat "$TH_DIR/live2.log" >&2
[ $live_rc -eq 0 ] || th_fail "the live client saw wrong answers during add/remove-node (exit $live_rc)"
summary=$(tail -n 1 "$TH_DIR/live2.log")
[[ $summary == *" 0 error replies"* ]] && [[ $summary == *" 0 uncertain"* ]] ||
    th_fail "requests failed during add-node/remove-node: $summary"
[ "$(cat "$DL_DIR/coordinator.pid")" = "$c0" ] && kill -0 "$c0" &&
    [ "$(cat "$DL_DIR/coordinator-1.pid")" = "$c1" ] && kill -0 "$c1" ||
    th_fail "a coordinator was restarted"
for p in "$cport" $((cport + 1)); do
    i=$(timeout 5 redis-cli -p "$p" simhash.info | tr -d '\r')
    echo "$i" | grep -q '^workers:4$' && echo "$i" | grep -q '^workers_up:4$' ||
        th_fail "coordinator $p after 3 add-nodes and 2 remove-nodes: $(echo "$i" | grep -E '^workers')"
done
timeout 200 python3 "$LIVE" check --port "$cport" --distance $K --seed 84 --state "$TH_DIR/live2.json" \
    --seconds 30 >"$TH_DIR/check2.out" 2>&1 || { cat "$TH_DIR/check2.out" >&2; th_fail "acknowledged pairs after add/remove-node"; }
for p in "$cport" $((cport + 1)); do
    timeout 120 python3 "$E2E" verify --port "$p" --state "$st2" --seed 85 >"$TH_DIR/verify3.out" 2>&1 ||
        { cat "$TH_DIR/verify3.out" >&2; th_fail "planted corpus through coordinator $p"; }
done
th_log "cluster: $(tail -n 1 "$TH_DIR/check2.out"); $(tail -n 1 "$TH_DIR/verify3.out")"
th_log "PASS"
