#!/usr/bin/env bash
# test_scaleout.sh: live scale-out of a Redis Cluster deployment. deploy/simhash-local
# brings up 3 masters (a worker beside each) and a coordinator; a planted corpus is
# loaded; then, while a client keeps adding and querying (tests/tools/simhash_live.py,
# every answer checked), `simhash-local add-node` starts a fourth master and its
# worker, joins it and rebalances slots onto it. Afterwards: the new master serves
# slots, the client made progress during the move, no query answered wrongly (error
# replies during the move are allowed and counted), every acknowledged fingerprint is
# found, and the planted corpus still answers exactly.
set -u
. "$(dirname "$0")/lib.sh"
th_init scaleout
th_need_bins simhash-shard simhash-coordinator
command -v redis-cli >/dev/null || th_fail "redis-cli not found"
LOCAL="$TH_SRC/deploy/simhash-local"
E2E="$TH_SRC/tests/tools/simhash_e2e.py"
LIVE="$TH_SRC/tests/tools/simhash_live.py"
B=6 K=3
LIFE=600                    # bound of every daemon's life (timeout)
export SIMHASH_BIN=$TH_BIN
# the deployment lives in TH_DIR itself, so lib.sh's log and sanitizer checks see it
. "$(dirname "$0")/deploy_lib.sh"
trap 'rc=$?; dl_down; (exit $rc); th_cleanup' EXIT

# ---- bad invocations: a clear message and a non-zero exit, nothing started ----
bad() { # bad "EXPECTED TEXT" ARGS..: simhash-local ARGS must fail and say EXPECTED TEXT
    local want=$1 out rc
    shift
    out=$(timeout 30 bash "$LOCAL" "$@" 2>&1)
    rc=$?
    [ $rc -ne 0 ] || th_fail "simhash-local $* succeeded"
    [[ $out == *"$want"* ]] || th_fail "simhash-local $*: '$out' does not say '$want'"
}
bad "needs 'up --cluster'" up --masters 3 --dir "$TH_DIR/bad"
bad "is for single-Redis mode" up --cluster --shards 2 --dir "$TH_DIR/bad"
bad "must be a number in 1..64" up --cluster --masters 0 --dir "$TH_DIR/bad"
bad "must be a number in 0..4" up --cluster --replicas x --dir "$TH_DIR/bad"
bad "without replicas relies on appendfsync always" up --cluster --durable --no-aof --dir "$TH_DIR/bad"
bad "no deployment in" add-node --dir "$TH_DIR/bad"
bad "no deployment in" remove-node --dir "$TH_DIR/bad"
bad "--range must be LO-HI" add-node --range 5-300 --dir "$TH_DIR/bad"
bad "--node belongs to 'remove-node'" add-node --node 3 --dir "$TH_DIR/bad"
bad "no cluster deployment" repair --dir "$TH_DIR/bad"
bad "belongs to 'add-node'" up --cluster --no-rebalance --dir "$TH_DIR/bad"
bad "unknown command" grow --dir "$TH_DIR/bad"
[ -z "$(ls "$TH_DIR/bad" 2>/dev/null)" ] || th_fail "a refused command left files in $TH_DIR/bad"
rm -rf "$TH_DIR/bad"

# ---- bring up 3 masters ----
dl_up_cluster "simhash-local up --cluster" --masters 3 --replicas 0 --node-timeout 2000 --no-aof \
    --fresh --blocks $B --distance $K --timeout-ms 3000 --lifetime $LIFE
grep -q "coordinator: 127.0.0.1:$cport" "$TH_DIR/up.out" || th_fail "up did not name the coordinator"
timeout 30 bash "$LOCAL" status --dir "$TH_DIR" >"$TH_DIR/status.out" ||
    { cat "$TH_DIR/status.out" >&2; th_fail "status after up"; }
[ "$(grep -c 'master [0-9]* slots' "$TH_DIR/status.out")" -eq 3 ] ||
    { cat "$TH_DIR/status.out" >&2; th_fail "status does not show 3 masters"; }
th_log "3 masters on $rport-$((rport + 2)), workers from $sport, coordinator $cport"

# the coordinator routes once it has the map and every worker
# (an ADD touches every table: it succeeds only when every route works)
dl_wait_routing "$cport" || th_fail "the coordinator did not take an ADD within 30 s (last reply: $DL_REPLY)"
[ "$(timeout 5 redis-cli -p "$cport" simhash.del 1 | tr -d '\r')" = 1 ] || th_fail "DEL of the probe"

# ---- planted corpus, checked exactly ----
st="$TH_DIR/planted.json"
timeout 120 python3 "$E2E" load --port "$cport" --blocks $B --distance $K --bases 100 --seed 51 \
    --state-out "$st" || th_fail "load of the planted corpus"
timeout 120 python3 "$E2E" verify --port "$cport" --state "$st" --seed 52 --quick ||
    th_fail "verify before the scale-out"

# ---- the live client ----
timeout 400 python3 "$LIVE" run --port "$cport" --distance $K --seed 53 --seconds 380 \
    --stop-file "$TH_DIR/stop" --progress "$TH_DIR/progress.json" --state-out "$TH_DIR/live.json" \
    --max-adds 3000 --add-rate 100 --pause-ms 1 >"$TH_DIR/live-run.log" 2>&1 &
live_pid=$!
TH_PIDS+=("$live_pid")
for i in $(seq 1 100); do [ -f "$TH_DIR/progress.json" ] && break; sleep 0.1; done
# let it store some data first, so that slots with keys move (at most 60 s)
for i in $(seq 1 600); do [ "$(dl_progress adds_acked)" -ge 600 ] && break; sleep 0.1; done
a_adds=$(dl_progress adds_acked) a_q=$(dl_progress queries_ok)
[ "$a_q" -gt 0 ] && [ "$a_adds" -gt 0 ] || th_fail "the live client made no progress before the move"

# ---- add a fourth master and rebalance while the client runs ----
t0=$(date +%s)
dl_sl add-node --rebalance-timeout 240 --lifetime $LIFE >"$TH_DIR/add-node.out" 2>&1 ||
    { cat "$TH_DIR/add-node.out" >&2; th_fail "simhash-local add-node"; }
t1=$(date +%s)
cat "$TH_DIR/add-node.out" >&2
b_adds=$(dl_progress adds_acked) b_q=$(dl_progress queries_ok)
th_log "during the move ($((t1 - t0)) s): $((b_adds - a_adds)) adds acknowledged, $((b_q - a_q)) right answers"
[ "$b_q" -gt "$a_q" ] || th_fail "no query answered right while slots moved"
[ "$b_adds" -gt "$a_adds" ] || th_fail "no add acknowledged while slots moved"

new=$((rport + 3))
slots=$(timeout 5 redis-cli -p "$new" cluster nodes | tr -d '\r' | awk '$3 ~ /myself/ {
    n = 0; for (i = 9; i <= NF; i++) { if ($i ~ /^\[/) continue; split($i, r, "-"); n += (r[2] == "" ? 1 : r[2] - r[1] + 1) } print n }')
th_log "the new master 127.0.0.1:$new serves ${slots:-0} slots"
[ "${slots:-0}" -ge 3000 ] || th_fail "the new master serves ${slots:-0} slots after the rebalance (want about 4096)"
timeout 30 redis-cli --cluster check "127.0.0.1:$rport" >"$TH_DIR/check.out" 2>&1 ||
    { cat "$TH_DIR/check.out" >&2; th_fail "redis-cli --cluster check after the move"; }
keys=$(timeout 5 redis-cli -p "$new" dbsize | tr -d '\r')
[ "${keys:-0}" -gt 0 ] || th_fail "no keys moved to the new master"
th_log "the new master holds $keys keys"

# keep going a little after the move, then stop the client
sleep 3
touch "$TH_DIR/stop"
wait "$live_pid"
live_rc=$?
cat "$TH_DIR/live-run.log" >&2
[ $live_rc -eq 0 ] || th_fail "the live client saw wrong answers (exit $live_rc)"
grep -q ' 0 wrong answers' "$TH_DIR/live-run.log" || th_fail "live client summary missing"

# ---- afterwards: everything acknowledged is there, the planted corpus is exact ----
timeout 200 python3 "$LIVE" check --port "$cport" --distance $K --seed 54 --state "$TH_DIR/live.json" \
    --seconds 30 || th_fail "acknowledged fingerprints after the move"
timeout 200 python3 "$E2E" verify --port "$cport" --state "$st" --seed 55 ||
    th_fail "planted corpus after the move"
info=$(timeout 5 redis-cli -p "$cport" simhash.info | tr -d '\r')
th_log "coordinator: $(echo "$info" | grep -E '^(cluster_state|cluster_masters|map_changes|cluster_moved|cluster_ask):' | tr '\n' ' ')"
echo "$info" | grep -q '^cluster_masters:4$' || th_fail "SIMHASH.INFO does not show 4 masters"
th_log "PASS"
