#!/usr/bin/env bash
# test_membership.sh: live worker membership (docs/operations.md, "Adding and removing
# workers"). Single Redis, processes started here: a coordinator configured with one
# worker finds the second in the worker registry; while a client keeps adding and
# querying (tests/tools/simhash_live.py, every answer checked), a standby worker for
# every shard joins, a worker leaves on SIGTERM (it drains), another joins, the
# standby leaves: the coordinator (same PID) never fails a request, and drops the
# workers that left. Corpus counts stay exact with workers serving the same shards; a
# killed worker's shards go to the standby at once and its entry expires; a worker
# stopped without a drain still leaves the registry; a registered address whose
# connection never completes is dropped cleanly; an IPv6 worker is found (when the
# machine has ::1). deploy/simhash-local in single-Redis mode adds and removes workers
# (refusing to leave shards without one). Then a Redis Cluster deployment
# (simhash-local, two coordinators) gets two add-nodes (the second beside a node
# added before) and a remove-node (of a node that add-node made) under the same live
# client: coordinators untouched, no failed request, everything acknowledged found,
# the planted corpus exact. (Each cycle moves a quarter to a third of the 16384
# slots, some 25 s: a third add-node and a second remove-node would check the same
# again.)
set -u
. "$(dirname "$0")/lib.sh"
th_init membership
# live_clean SUMMARY: the live client's run line shows no failed request but for
# deadlines that passed (a machine short of CPU: the coordinator's -TIMEOUT or a
# worker's "timeout: redis did not answer"), and no ADD left uncertain but by those; the
# check that follows still finds every acknowledged pair and asks the uncertain again
live_clean() {
    local errs dl unc
    dl=$(sed -n 's/.*; \([0-9]*\) of [0-9]* errors past a deadline$/\1/p' <<<"$1")
    errs=$(sed -n 's/.*; [0-9]* of \([0-9]*\) errors past a deadline$/\1/p' <<<"$1")
    unc=$(sed -n 's/.*), \([0-9]*\) uncertain;.*/\1/p' <<<"$1")
    [ -n "$errs" ] && [ -n "$dl" ] && [ -n "$unc" ] || return 1
    [ "$dl" -gt 0 ] && th_log "$dl requests past their deadline (a busy machine)"
    [ "$errs" -eq "$dl" ] && [ "$unc" -le "$dl" ]
}
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

# counts with workers serving the same shards: as Redis's own counter hashes say,
# read just before and just after SIMHASH.INFO (the live client keeps adding)
redis_fps() {
    for x in $(seq 0 255); do printf 'HGET c:{0:%02x} fingerprints\n' "$x"; done |
        timeout 10 redis-cli -p "$rport" | awk '{ s += $1 } END { print s + 0 }'
}
t1=$(redis_fps)
got=$(info | sed -n 's/^fingerprints://p')
truth=$(redis_fps)
[ -n "$got" ] && [ "$got" != unknown ] && [ "$t1" -le "$got" ] && [ "$got" -le "$truth" ] ||
    th_fail "SIMHASH.INFO fingerprints:$got with overlapping workers, Redis counts $t1 before and $truth after"
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
summary=$(grep '^run: ' "$TH_DIR/live1.log" | tail -n 1)
live_clean "$summary" || th_fail "requests failed while workers joined and left: $summary"
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

# stopped without a drain (shutdown-drain-ms 0): its entry is gone when it has exited
th_start_shard wF "$rport" 0-255 $B $K ""
pF=$TH_SHARD_PORT pidF=$TH_SHARD_PID
wait_info "addr=127.0.0.1:$pF,health=up" 20 || th_fail "F not taken"
th_stop "$pidF"
left=$(timeout 5 redis-cli -p "$rport" zscore simhash:workers "127.0.0.1:$pF")
[ -z "$left" ] || th_fail "a worker stopped without a drain is still in the registry (score $left)"
grep -q 'left the worker registry' "$TH_DIR/wF.log" || th_fail "worker F did not say it left the registry"

# an address whose TCP connection never completes (a listener with a full backlog
# that never accepts): joined, then dropped when its entry expires, and the
# coordinator still stops cleanly (the connection being made is freed once)
python3 - "$TH_DIR/hole.port" <<'PY' &
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(0)
port = s.getsockname()[1]
held = []
for _ in range(8):                      # fill the accept queue
    c = socket.socket()
    c.setblocking(False)
    try:
        c.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    held.append(c)
open(sys.argv[1], "w").write(str(port))
time.sleep(60)
PY
hole_pid=$!
TH_PIDS+=("$hole_pid")
for _ in $(seq 1 50); do [ -s "$TH_DIR/hole.port" ] && break; sleep 0.1; done
hole=$(cat "$TH_DIR/hole.port")
now=$(timeout 5 redis-cli -p "$rport" time | head -n 1)
timeout 5 redis-cli -p "$rport" zadd simhash:workers $(( (now + 3) * 1000 )) "127.0.0.1:$hole" >/dev/null
for _ in $(seq 1 100); do grep -q "127.0.0.1:$hole joined" "$TH_DIR/coord.log" && break; sleep 0.1; done
grep -q "127.0.0.1:$hole joined" "$TH_DIR/coord.log" || th_fail "the coordinator did not take the registered address"
for _ in $(seq 1 200); do grep -q "127.0.0.1:$hole gone" "$TH_DIR/coord.log" && break; sleep 0.1; done
grep -q "127.0.0.1:$hole gone" "$TH_DIR/coord.log" || th_fail "an expired entry whose connection never completed was not dropped"
kill "$hole_pid" 2>/dev/null
th_log "a connection that never completes: $(grep -o "shard worker 127.0.0.1:$hole gone.*" "$TH_DIR/coord.log" | head -n 1)"

# IPv6: a worker on [::1] registers as [::1]:PORT and is found
if python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null; then
    p6=$(python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0)); print(s.getsockname()[1])')
    th_start w6 600 "$TH_BIN/simhash-shard" --bind ::1 --port "$p6" --redis-host 127.0.0.1 \
        --redis-port "$rport" --shards 0-255 --blocks $B --distance $K
    wait_info "addr=\[::1\]:$p6,health=up" 20 || th_fail "the IPv6 worker [::1]:$p6 was not found: $(info | grep -E '^worker')"
    th_log "IPv6: worker [::1]:$p6 found through the registry"
else
    th_log "IPv6: this machine has no ::1; the IPv6 worker check did not run"
fi
kill -0 "$cpid" 2>/dev/null || th_fail "the coordinator died"
th_stop "$TH_COORD_PID"
grep -q 'simhash-coordinator stopped' "$TH_DIR/coord.log" || th_fail "the coordinator did not stop cleanly"

# ---- simhash-local, one Redis: add-node and remove-node ----
. "$(dirname "$0")/deploy_lib.sh"
DL_DIR="$TH_DIR/sl"
mkdir -p "$DL_DIR"
trap 'rc=$?; dl_down; (exit $rc); th_cleanup' EXIT
base=$(dl_free_base 1 4)
[ -n "$base" ] || th_fail "no free port range"
scport=$((base + 200))
dl_sl up --shards 2 --port "$scport" --redis-port "$base" --shard-port $((base + 100)) --no-aof \
    --lifetime 600 >"$TH_DIR/sl-up.out" 2>&1 || th_fail "simhash-local up: $(cat "$TH_DIR/sl-up.out")"
sc0=$(cat "$DL_DIR/coordinator.pid")
timeout 5 redis-cli -p "$scport" simhash.add 4242 sl-doc >/dev/null
dl_sl add-node >"$TH_DIR/sl-add.out" 2>&1 || th_fail "single add-node: $(cat "$TH_DIR/sl-add.out")"
grep -q 'for shards 0-255' "$TH_DIR/sl-add.out" || th_fail "single add-node: $(cat "$TH_DIR/sl-add.out")"
out=$(dl_sl add-node --no-rebalance 2>&1) && th_fail "add-node --no-rebalance in single mode succeeded"
[[ $out == *"for cluster deployments"* ]] || th_fail "add-node --no-rebalance: $out"
dl_sl remove-node --node 0 >"$TH_DIR/sl-rm0.out" 2>&1 || th_fail "remove-node --node 0: $(cat "$TH_DIR/sl-rm0.out")"
out=$(dl_sl remove-node 2>&1) && th_fail "removing the last worker serving shards 0-127 succeeded"
[[ $out == *"without a running worker"* ]] || th_fail "remove-node of the standby: $out"
dl_sl remove-node --node 1 >"$TH_DIR/sl-rm1.out" 2>&1 || th_fail "remove-node --node 1: $(cat "$TH_DIR/sl-rm1.out")"
i=$(timeout 5 redis-cli -p "$scport" simhash.info | tr -d '\r')
echo "$i" | grep -q '^workers:1$' && echo "$i" | grep -q '^routing:ok$' ||
    th_fail "after removing two workers: $(echo "$i" | grep -E '^(workers|routing)')"
[ "$(timeout 5 redis-cli -p "$scport" simhash.query 4242 DISTANCE 0 | tail -n 1)" = sl-doc ] ||
    th_fail "query after the changes"
[ "$(cat "$DL_DIR/coordinator.pid")" = "$sc0" ] || th_fail "simhash-local restarted the coordinator"
grep -c '^worker ' "$DL_DIR/coordinator.conf" | grep -qx 1 || th_fail "coordinator.conf worker lines: $(grep '^worker' "$DL_DIR/coordinator.conf")"
dl_down
th_log "simhash-local one Redis: add-node, remove-node x2 (one refused), coordinator untouched"

# ---- Redis Cluster: add-node x2 and remove-node under load ----
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
for k in 1 2; do
    dl_sl add-node --lifetime 900 >"$TH_DIR/add-$k.out" 2>&1 ||
        { cat "$TH_DIR/add-$k.out" >&2; th_fail "add-node $k"; }
    th_log "$(tail -n 1 "$TH_DIR/add-$k.out")"
done
dl_sl remove-node >"$TH_DIR/remove.out" 2>&1 || { cat "$TH_DIR/remove.out" >&2; th_fail "remove-node"; }
th_log "$(tail -n 1 "$TH_DIR/remove.out")"
sleep 2
touch "$TH_DIR/stop2"
wait "$live_pid"
live_rc=$?
cat "$TH_DIR/live2.log" >&2
[ $live_rc -eq 0 ] || th_fail "the live client saw wrong answers during add/remove-node (exit $live_rc)"
summary=$(grep '^run: ' "$TH_DIR/live2.log" | tail -n 1)
live_clean "$summary" || th_fail "requests failed during add-node/remove-node: $summary"
[ "$(cat "$DL_DIR/coordinator.pid")" = "$c0" ] && kill -0 "$c0" &&
    [ "$(cat "$DL_DIR/coordinator-1.pid")" = "$c1" ] && kill -0 "$c1" ||
    th_fail "a coordinator was restarted"
for p in "$cport" $((cport + 1)); do
    i=$(timeout 5 redis-cli -p "$p" simhash.info | tr -d '\r')
    echo "$i" | grep -q '^workers:4$' && echo "$i" | grep -q '^workers_up:4$' ||
        th_fail "coordinator $p after 2 add-nodes and a remove-node: $(echo "$i" | grep -E '^workers')"
done
timeout 200 python3 "$LIVE" check --port "$cport" --distance $K --seed 84 --state "$TH_DIR/live2.json" \
    --seconds 30 >"$TH_DIR/check2.out" 2>&1 || { cat "$TH_DIR/check2.out" >&2; th_fail "acknowledged pairs after add/remove-node"; }
for p in "$cport" $((cport + 1)); do
    timeout 120 python3 "$E2E" verify --port "$p" --state "$st2" --seed 85 >"$TH_DIR/verify3.out" 2>&1 ||
        { cat "$TH_DIR/verify3.out" >&2; th_fail "planted corpus through coordinator $p"; }
done
th_log "cluster: $(tail -n 1 "$TH_DIR/check2.out"); $(tail -n 1 "$TH_DIR/verify3.out")"
th_log "PASS"
