#!/usr/bin/env bash
# test_coordinators.sh: several coordinators of one corpus and clients that fail over.
# simhash-local up --coordinators 3 (single Redis); `status` lists them and `down`
# stops them all. A `simhash load --host A,B,C` of 60,000 pairs keeps going while the
# coordinator it uses is killed (exit 0, every pair stored: one document set per
# fingerprint in Redis); 150 `simhash check --host` calls, one process each, while
# another coordinator is killed: none fails. A coordinator restarted by `repair`-less
# `up` is not needed: the clients keep using the survivors. (The Python client's
# failover on one connection is in tests/python/test_simhash.py, test_zz_failover.)
set -u
. "$(dirname "$0")/lib.sh"
th_init coordinators
. "$(dirname "$0")/deploy_lib.sh"
th_need_bins simhash simhash-shard simhash-coordinator
S="$TH_BIN/simhash"
down() { [ -f "$TH_DIR/redis.pid" ] && timeout 120 bash "$DL_LOCAL" down --dir "$TH_DIR" >/dev/null 2>&1; return 0; }
trap 'rc=$?; down; (exit $rc); th_cleanup' EXIT

base=
for try in 1 2 3; do
    base=$(dl_free_base 1 2)
    [ -n "$base" ] || th_fail "no free port range"
    if dl_sl up --port "$((base + 200))" --redis-port "$base" --shard-port "$((base + 100))" \
            --shards 2 --no-aof --lifetime 600 --coordinators 3 >"$TH_DIR/up.out" 2>&1; then
        break
    fi
    th_log "up failed (try $try): $(tail -n 3 "$TH_DIR/up.out")"
    down
    base=
done
[ -n "$base" ] || { cat "$TH_DIR/up.out" >&2; th_fail "simhash-local up --coordinators 3"; }
c0=$((base + 200)) c1=$((base + 201)) c2=$((base + 202))
grep -q "coordinators: 127.0.0.1:$c0,127.0.0.1:$c1,127.0.0.1:$c2" "$TH_DIR/up.out" ||
    th_fail "up does not list the coordinators: $(cat "$TH_DIR/up.out")"
st=$(dl_sl status)
for n in coordinator coordinator-1 coordinator-2; do
    echo "$st" | grep -qE "^$n +pid [0-9]+ .*ok \(PONG\)" || th_fail "status: $n not ok: $st"
done
th_log "3 coordinators up on $c0-$c2"

# kill_coord NAME: SIGKILL the coordinator NAME (the child of its `timeout` wrapper,
# whose PID the pidfile holds) and wait until its port is closed
kill_coord() {
    local p c port i=0
    p=$(cat "$TH_DIR/$1.pid")
    c=$(th_child_pid "$p")
    port=$(cat "$TH_DIR/$1.port")
    kill -KILL "${c:-$p}"
    while timeout 1 redis-cli -p "$port" ping >/dev/null 2>&1 && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    timeout 1 redis-cli -p "$port" ping >/dev/null 2>&1 && th_fail "$1 still answers after SIGKILL"
    KILLED=${c:-$p}
}

# ---- load while its coordinator dies ----
python3 -c 'import random
r = random.Random(7)
for i in range(60000):
    print(r.getrandbits(64), "doc-%d" % i)' >"$TH_DIR/pairs"
hosts="127.0.0.1:$c0,127.0.0.1:$c1,127.0.0.1:$c2"
timeout 300 "$S" load --host "$hosts" --timeout-ms 5000 "$TH_DIR/pairs" >"$TH_DIR/load.out" 2>&1 &
lpid=$!
# kill the first coordinator once the load is under way (the first worker, shards
# 0-127, counts about half of the fingerprints stored)
n=0
for _ in $(seq 1 600); do
    n=$(timeout 5 redis-cli -p "$((base + 100))" shard.info 2>/dev/null | tr -d '\r' |
        sed -n 's/^fingerprints://p')
    [[ $n =~ ^[0-9]+$ ]] || n=0
    [ "$n" -gt 200 ] && break
    sleep 0.02
done
kill_coord coordinator
th_log "killed coordinator $c0 (pid $KILLED) with $n fingerprints of shards 0-127 stored"
kill -0 "$lpid" 2>/dev/null || th_fail "the load ended before its coordinator was killed (make it longer)"
wait "$lpid"
lrc=$?
[ "$lrc" = 0 ] || th_fail "load exit $lrc after its coordinator died: $(cat "$TH_DIR/load.out")"
n=$(timeout 120 "$S" export --host "127.0.0.1:$c1" 2>/dev/null | cut -d' ' -f1 | sort -u | wc -l)
[ "$n" = 60000 ] || th_fail "after the load: $n fingerprints stored (simhash export), want 60000"
th_log "load exit 0 across the failover: $(tr '\n' ' ' <"$TH_DIR/load.out"); 60000 of 60000 stored"
info_count() { timeout 10 redis-cli -p "$1" SIMHASH.INFO | tr -d '\r' | sed -n "s/^$2://p"; }
# SIMHASH.INFO asks the workers afresh: right at once after the writes
[ "$(info_count "$c1" fingerprints)" = 60000 ] || th_fail "SIMHASH.INFO fingerprints: $(info_count "$c1" fingerprints)"
[ "$(info_count "$c1" documents)" = 60000 ] || th_fail "SIMHASH.INFO documents: $(info_count "$c1" documents)"

# ---- one-shot clients while another coordinator dies ----
fails=0 calls=0
hosts2="127.0.0.1:$c1,127.0.0.1:$c2,127.0.0.1:$c0"
for i in $(seq 1 150); do
    if [ "$i" = 50 ]; then kill_coord coordinator-1; fi
    fp=$(sed -n "${i}p" "$TH_DIR/pairs" | cut -d' ' -f1)
    out=$(timeout 30 "$S" check --host "$hosts2" "$fp" "again-$i" 2>&1) || { fails=$((fails + 1)); th_log "check $i: $out"; }
    case "$out" in *"doc-$((i - 1))"*) ;; *) fails=$((fails + 1)); th_log "check $i: '$out'";; esac
    calls=$((calls + 1))
done
[ "$fails" = 0 ] || th_fail "$fails of $calls checks failed with a coordinator killed"
th_log "$calls checks, 0 failed, coordinator $c1 killed at the 50th"
# the last one serves alone; every address down is a clear error
kill_coord coordinator-2
out=$(timeout 30 "$S" query --host "$hosts" 1 2>&1)
expect_rc=$?
[ "$expect_rc" = 1 ] || th_fail "no coordinator left: exit $expect_rc"
case "$out" in *"no coordinator answered (3 addresses)"*) ;; *) th_fail "no coordinator left: '$out'";; esac
out=$(timeout 10 "$S" query --host "127.0.0.1:$c0,bad:port" 1 2>&1)
case "$out" in *"bad port"*) ;; *) th_fail "a bad address: '$out'";; esac
# a coordinator started again knows the counts as soon as its workers are connected
th_start coordinator-again 300 "$TH_BIN/simhash-coordinator" --config "$TH_DIR/coordinator.conf"
th_wait_port "$c0" 20 || th_fail "the restarted coordinator does not listen"
got=unknown
for _ in $(seq 1 100); do
    got=$(info_count "$c0" fingerprints)
    [ -n "$got" ] && [ "$got" != unknown ] && break
    sleep 0.05
done
[ "$got" = 60000 ] || th_fail "restarted coordinator: fingerprints:$got, want 60000"
docs=$(info_count "$c0" documents)
[ "$docs" = 60150 ] || th_fail "restarted coordinator: documents:$docs, want 60150 (60000 + 150 checks)"
th_log "SIMHASH.INFO counts exact right after the writes and after a restart ($got fingerprints, $docs documents)"
th_stop "$TH_PID"
dl_sl down >/dev/null
for n in coordinator coordinator-1 coordinator-2 shard-0 shard-1 redis; do
    [ ! -f "$TH_DIR/$n.pid" ] || th_fail "down left $n.pid"
done
th_log "all checks passed"
