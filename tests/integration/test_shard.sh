#!/usr/bin/env bash
# test_shard.sh: simhash-shard against a real redis-server on free loopback ports:
# planted near-duplicates found within d and not at d+1, deletes, document sets,
# wrong shard, bad arguments, meta mismatch refusal, Redis killed / stalled /
# restarted (errors within the deadline, reconnection by itself).
set -euo pipefail

BIN=${SIMHASH_BIN:-$(dirname "$0")/../../build/bin}
SHARD=$BIN/simhash-shard
[ -x "$SHARD" ] || { echo "missing $SHARD"; exit 1; }
command -v redis-server >/dev/null || { echo "redis-server not installed"; exit 1; }

DIR=$(mktemp -d)
PIDS=()
# Every process this test started ends: TERM to each (a `timeout` wrapper passes it
# on), up to 5 s each to exit, then SIGKILL to a wrapper's child and the wrapper
# (killing the wrapper alone would leave its program running: a worker slow to exit
# on a loaded machine, an ASan build's exit report).
cleanup() {
    local p c i
    for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do
        i=0
        while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        kill -0 "$p" 2>/dev/null || continue
        c=$(ps -o pid= --ppid "$p" 2>/dev/null | head -n 1 | tr -d ' ' || true)
        [ -z "$c" ] || kill -9 "$c" 2>/dev/null || true
        kill -9 "$p" 2>/dev/null || true
    done
    rm -rf "$DIR"
}
trap cleanup EXIT
[ -n "${KEEP_LOGS:-}" ] && trap 'cp "$DIR"/*.log "$KEEP_LOGS"/ 2>/dev/null; cleanup' EXIT

FAILS=0
CHECKS=0
ok()   { CHECKS=$((CHECKS + 1)); }
fail() { CHECKS=$((CHECKS + 1)); FAILS=$((FAILS + 1)); echo "FAIL: $*"; }
expect_eq() { # name got want
    if [ "$2" == "$3" ]; then ok; else fail "$1: got [$2] want [$3]"; fi
}
expect_match() { # name got regex
    if [[ "$2" =~ $3 ]]; then ok; else fail "$1: got [$2], no match for /$3/"; fi
}

# A loopback port nobody listens on, below the ephemeral range (32768-60999) so
# that outgoing connections of other programs do not take it before we bind it.
free_port() {
    local p
    for _ in $(seq 1 200); do
        p=$((23000 + RANDOM % 7000))     # th_free_port's range (lib.sh)
        if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then echo "$p"; return 0; fi
    done
    return 1
}

RPORT=$(free_port)
SPORT=$(free_port)
SPORT2=$(free_port)
REDIS_PID=

# Starts redis-server under timeout; REDIS_PID is the server itself (from INFO), so
# that STOP/CONT/KILL reach it rather than the timeout wrapper.
start_redis() {
    timeout 300 redis-server --port "$RPORT" --bind 127.0.0.1 --dir "$DIR" --save '' \
        --appendonly no >>"$DIR/redis.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 100); do
        if [ "$(redis-cli -p "$RPORT" ping 2>/dev/null)" == "PONG" ]; then
            REDIS_PID=$(redis-cli -p "$RPORT" INFO server | tr -d '\r' | sed -n 's/^process_id://p')
            PIDS+=("$REDIS_PID")
            return 0
        fi
        sleep 0.05
    done
    return 1
}

# wait_pong PORT: until the worker answers PING.
wait_pong() {
    for _ in $(seq 1 100); do
        [ "$(redis-cli -p "$1" ping 2>/dev/null)" == "PONG" ] && return 0
        sleep 0.05
    done
    echo "worker on $1 did not start"; cat "$DIR"/shard*.log; exit 1
}

# wait_redis_up PORT: until the worker reports its Redis connection up (bounded).
wait_redis_up() {
    for _ in $(seq 1 200); do
        if timeout 5 redis-cli -p "$1" SHARD.INFO 2>/dev/null | grep -q '^redis:up'; then return 0; fi
        sleep 0.05
    done
    return 1
}

sc() { timeout 10 redis-cli -p "$SPORT" "$@" 2>&1; }

# the first start may pick another port if this one was taken meanwhile
for _ in 1 2 3; do start_redis && break; RPORT=$(free_port); done
[ -n "$REDIS_PID" ] || { echo "redis-server did not start"; cat "$DIR/redis.log"; exit 1; }
# no repair pass here (the lock checks below take stale locks over themselves); the
# second worker below runs one. No registry entry either: its renewal (one Redis
# command a second) would land now and then inside the command counts checked below.
# SHARD.ADD of every table writes 19 entries: table 0's entry is a fingerprint's ids,
# which only the lock writes
timeout 300 "$SHARD" --port "$SPORT" --redis-port "$RPORT" --timeout-ms 3000 \
    --repair-interval-ms 0 --announce-interval-ms 0 --pidfile "$DIR/shard.pid" >"$DIR/shard.log" 2>&1 &
WORKER_WRAP=$!
PIDS+=($!)
wait_pong "$SPORT"

# ---- HELLO, meta ----
# a new corpus (layout 4, one key a shard until it splits); no corpus name (the last,
# empty element)
L=4
BB=8
expect_eq "hello" "$(sc SHARD.HELLO | tr '\n' ' ')" "6 3 $L $BB 0 255 0  v5  2 "
expect_eq "meta" "$(redis-cli -p "$RPORT" HGET simhash:meta blocks) $(redis-cli -p "$RPORT" HGET simhash:meta layout)" "6 $L"
SHARD_PID=$(cat "$DIR/shard.pid")
expect_eq "pidfile" "$(ps -o comm= -p "$SHARD_PID")" "simhash-shard"
ALL=$(seq -s ' ' 0 19)

# ---- planted near-duplicates ----
rand64() { printf '%u' $(( (RANDOM << 49) ^ (RANDOM << 34) ^ (RANDOM << 19) ^ (RANDOM << 4) ^ RANDOM )); }
# flip N distinct random bits of $1
flip() {
    local v=$1 n=$2 used=" " b
    while [ "$n" -gt 0 ]; do
        b=$((RANDOM % 64))
        case "$used" in *" $b "*) continue;; esac
        used="$used$b "
        v=$(( v ^ (1 << b) ))
        n=$((n - 1))
    done
    printf '%u' "$v"
}

# each base written as the coordinator writes it, its id under its lock (table 0's
# entry): a fingerprint 3 bits away shares one table only, which may be table 0
for i in $(seq 1 12); do
    base=$(rand64)
    expect_eq "lock $i" "$(sc SHARD.LOCK "$base" tb 5000 A "doc-$i" | head -1)" "1"
    expect_eq "add $i" "$(sc SHARD.ADD "$base" $ALL)" "19"
    expect_eq "re-add $i" "$(sc SHARD.ADD "$base" $ALL)" "0"
    expect_eq "unlock $i" "$(sc SHARD.UNLOCK "$base" tb)" "1"
    BASES="${BASES:-} $base"
    for d in 0 1 2 3; do
        q=$(flip "$base" "$d")
        expect_eq "query d=$d #$i" "$(sc SHARD.QUERY "$q" 3 $ALL | tr '\n' ' ')" "$base $d "
    done
    q=$(flip "$base" 4)
    expect_eq "query d=4 #$i" "$(sc SHARD.QUERY "$q" 3 $ALL)" ""
    q=$(flip "$base" 3)
    expect_eq "query d=3 with limit 2 #$i" "$(sc SHARD.QUERY "$q" 2 $ALL)" ""
    LAST_BASE=$base
done
# their ids removed again (their table entries stay): the counters below count only
# the fingerprints written after this
for base in $BASES; do
    expect_eq "lock X $base" "$(sc SHARD.LOCK "$base" tx 5000 X | head -1)" "1"
    expect_eq "unlock X $base" "$(sc SHARD.UNLOCK "$base" tx)" "1"
done

# two stored fingerprints near one query: both, nearest first
a=$(rand64); b=$(flip "$a" 1); c=$(flip "$b" 2)
sc SHARD.ADD "$a" $ALL >/dev/null; sc SHARD.ADD "$c" $ALL >/dev/null
expect_eq "two matches" "$(sc SHARD.QUERY "$b" 3 $ALL | tr '\n' ' ')" "$a 1 $c 2 "
expect_eq "del" "$(sc SHARD.DEL "$a" $ALL)" "19"
expect_eq "del again" "$(sc SHARD.DEL "$a" $ALL)" "0"
expect_eq "after del" "$(sc SHARD.QUERY "$b" 3 $ALL | tr '\n' ' ')" "$c 2 "
# edge values
expect_eq "add 0" "$(sc SHARD.ADD 0 $ALL)" "19"
expect_eq "add max" "$(sc SHARD.ADD 18446744073709551615 $ALL)" "19"
expect_eq "query near 0" "$(sc SHARD.QUERY 7 3 $ALL | tr '\n' ' ')" "0 3 "
expect_eq "query near max" "$(sc SHARD.QUERY 18446744073709551614 3 $ALL | tr '\n' ' ')" "18446744073709551615 1 "

# ---- document sets and write locks ----
# SHARD.LOCK fp token lease op [ids]: [1, before, after, stale, changed] or [0, ms left]
lk() { sc SHARD.LOCK "$@" | tr '\n' ' '; }
expect_eq "lock add" "$(lk "$c" t1 5000 A doc-b doc-a)" "1 0 2 0 2 "
expect_eq "lock busy" "$(lk "$c" t2 5000 A doc-c | cut -d' ' -f1)" "0"
expect_eq "busy changed nothing" "$(sc SHARD.DOCS "$c" | tr '\n' ' ')" "doc-a doc-b "
expect_eq "unlock with another token" "$(sc SHARD.UNLOCK "$c" t2)" "0"
expect_eq "unlock" "$(sc SHARD.UNLOCK "$c" t1)" "1"
expect_eq "lock add dup" "$(lk "$c" t3 5000 A doc-a doc-c)" "1 2 3 0 1 "
expect_eq "unlock 3" "$(sc SHARD.UNLOCK "$c" t3)" "1"
expect_eq "docs" "$(sc SHARD.DOCS "$c" | tr '\n' ' ')" "doc-a doc-b doc-c "
expect_eq "docs two" "$(sc SHARD.DOCS "$a" "$c" | tr '\n' ' ')" " doc-a doc-b doc-c "
# SHARD.QUERY ... DOCS: [fp, dist, [docid ...]] per match; e has table entries but
# no document, so it is dropped ($a was deleted; the plain form still lists e)
e=$a
while [ "$e" = "$a" ]; do e=$(flip "$b" 1); done
expect_eq "add e" "$(sc SHARD.ADD "$e" $ALL)" "19"
expect_eq "query without docs" "$(sc SHARD.QUERY "$b" 3 $ALL | tr '\n' ' ')" "$e 1 $c 2 "
expect_eq "query docs" "$(sc SHARD.QUERY "$b" 3 $ALL DOCS | tr '\n' ' ')" "$c 2 doc-a doc-b doc-c "
expect_eq "query docs lower case" "$(sc SHARD.QUERY "$b" 3 $ALL docs | tr '\n' ' ')" "$c 2 doc-a doc-b doc-c "
expect_eq "query docs none near" "$(sc SHARD.QUERY "$b" 0 $ALL DOCS)" ""
expect_match "query docs no table" "$(sc SHARD.QUERY "$b" 3 DOCS)" "^ERR"
# q itself stored: its ids are read in the scan pipeline (20 ZRANGEBYLEX + 1 of its
# table-0 member: one round); every other match costs one more round of reads (c, and
# e, which has no ids): two commands each, the ZRANGEBYLEX of its table-0 member and
# SMEMBERS of its overflow set
# "commands reconnects" of the worker's Redis connection, from one SHARD.INFO
cmds() { sc SHARD.INFO | tr -d '\r' |
    awk -F: '/^redis_commands:/ {c = $2} /^redis_reconnects:/ {r = $2} END {print c, r}'; }
# expect_cmds NAME BEFORE AFTER WANT: AFTER - BEFORE - inf Redis commands, exactly WANT when
# Redis did not reconnect in between; a dropped connection (the stall check on a busy
# machine) re-sends commands, then at least WANT
expect_cmds() {
    local b=($2) a=($3)
    local got=$((a[0] - b[0] - inf))
    if [ "${a[1]}" = "${b[1]}" ]; then expect_eq "$1" "$got" "$4"
    else expect_eq "$1 (at least: Redis reconnected)" "$((got >= $4 ? $4 : got))" "$4"; fi
}
expect_eq "lock b" "$(lk "$b" t4 5000 A doc-q)" "1 0 1 0 1 "
expect_eq "add b" "$(sc SHARD.ADD "$b" $ALL)" "19"
expect_eq "unlock b" "$(sc SHARD.UNLOCK "$b" t4)" "1"
n=$(cmds)
n0=$(cmds)
inf=$((${n0% *} - ${n% *}))     # SHARD.INFO's own reads of the counters
expect_eq "query docs of q" "$(sc SHARD.QUERY "$b" 0 $ALL DOCS | tr '\n' ' ')" "$b 0 doc-q "
n1=$(cmds)
expect_cmds "query docs of q: redis commands" "$n0" "$n1" 21
expect_eq "query docs of q and c" "$(sc SHARD.QUERY "$b" 3 $ALL DOCS | tr '\n' ' ')" \
    "$b 0 doc-q $c 2 doc-a doc-b doc-c "
n2=$(cmds)
expect_cmds "query docs of q, c and e: redis commands" "$n1" "$n2" 25
expect_eq "query docs of c only" "$(sc SHARD.QUERY "$c" 0 $ALL DOCS | tr '\n' ' ')" "$c 0 doc-a doc-b doc-c "
# q stored without a document (table entries only): dropped, as any such match
expect_eq "lock b: delete all" "$(lk "$b" t5 5000 X)" "1 1 0 0 1 "
expect_eq "query docs of q without docs" "$(sc SHARD.QUERY "$b" 3 $ALL DOCS | tr '\n' ' ')" \
    "$c 2 doc-a doc-b doc-c "
expect_eq "del b" "$(sc SHARD.DEL "$b" $ALL)" "19"
expect_eq "unlock b again" "$(sc SHARD.UNLOCK "$b" t5)" "1"
expect_eq "del e" "$(sc SHARD.DEL "$e" $ALL)" "19"
expect_eq "lock c: count" "$(lk "$c" t6 5000 F)" "1 3 3 0 0 "
expect_eq "unlock c" "$(sc SHARD.UNLOCK "$c" t6)" "1"
# the counters count non-empty document sets (c) and document ids, kept by the script
info=$(sc SHARD.INFO | tr -d '\r')
expect_match "info fingerprints" "$info" $'\nfingerprints:1\n'
expect_match "info documents" "$info" $'\ndocuments:3\n'
expect_eq "lock remove one" "$(lk "$c" t7 5000 R doc-b nope)" "1 3 2 0 1 "
expect_eq "unlock 7" "$(sc SHARD.UNLOCK "$c" t7)" "1"
expect_eq "lock remove all" "$(lk "$c" t8 5000 X)" "1 2 0 0 2 "
expect_eq "unlock 8" "$(sc SHARD.UNLOCK "$c" t8)" "1"
info=$(sc SHARD.INFO | tr -d '\r')
expect_match "info documents after" "$info" $'\ndocuments:0\n'
expect_match "info fingerprints after" "$info" $'\nfingerprints:0\n'
# a stale lock is taken over (stale = 1); S takes only a stale lock
expect_eq "lock short lease" "$(lk "$c" t9 1 A doc-z)" "1 0 1 0 1 "
sleep 0.05
expect_eq "lock takeover" "$(lk "$c" t10 5000 F)" "1 1 1 1 0 "
expect_eq "S on a live lock" "$(lk "$c" t11 5000 S | cut -d' ' -f1)" "0"
expect_eq "unlock 10" "$(sc SHARD.UNLOCK "$c" t10)" "1"
expect_eq "S without a lock" "$(lk "$c" t12 5000 S)" "0 0 "
expect_match "lock bad op" "$(sc SHARD.LOCK "$c" t 5000 Q x)" "^ERR lock operation"
expect_match "lock add without ids" "$(sc SHARD.LOCK "$c" t 5000 A)" "^ERR operation A needs"
expect_match "lock X with ids" "$(sc SHARD.LOCK "$c" t 5000 X x)" "^ERR operation X takes no"
expect_match "lock bad lease" "$(sc SHARD.LOCK "$c" t 0 F)" "^ERR lease"
expect_match "lock token with colon" "$(sc SHARD.LOCK "$c" a:b 5000 F)" "^ERR lock token"
expect_match "lock empty id" "$(sc SHARD.LOCK "$c" t 5000 A '')" "^ERR empty document id"
# ---- bad arguments ----
expect_match "bad fp" "$(sc SHARD.QUERY abc 3 0)" "^ERR fingerprint 'abc': not a decimal number"
expect_match "fp overflow" "$(sc SHARD.ADD 18446744073709551616 0)" "^ERR fingerprint .*out of range"
expect_match "negative fp" "$(sc SHARD.ADD -1 0)" "^ERR fingerprint"
expect_match "distance too big" "$(sc SHARD.QUERY 1 4 0)" "^ERR distance '4': out of range"
expect_match "table too big" "$(sc SHARD.QUERY 1 3 20)" "^ERR table '20': out of range"
expect_match "table not a number" "$(sc SHARD.ADD 1 x)" "^ERR table 'x'"
expect_match "arity" "$(sc SHARD.QUERY 1 3)" "^ERR"
expect_match "arity docs" "$(sc SHARD.DOCS)" "^ERR"
expect_match "empty docid" "$(sc SHARD.LOCK 1 t 5000 A '')" "^ERR empty document id"
expect_match "unknown" "$(sc SHARD.NOPE)" "^ERR"
expect_eq "ping" "$(sc PING)" "PONG"

# ---- wrong shard: a worker serving 0-127 ----
timeout 300 "$SHARD" --port "$SPORT2" --redis-port "$RPORT" --shards 0-127 >"$DIR/shard2.log" 2>&1 &
PIDS+=($!)
wait_pong "$SPORT2"
expect_eq "hello 2" "$(redis-cli -p "$SPORT2" SHARD.HELLO | sed -n 5,6p | tr '\n' ' ')" "0 127 "
# every permutation of 2^64-1 starts with byte 255, of 0 with byte 0
expect_match "wrongshard query" "$(redis-cli -p "$SPORT2" SHARD.QUERY 18446744073709551615 3 5)" "^WRONGSHARD table 5 shard 255"
expect_match "wrongshard add" "$(redis-cli -p "$SPORT2" SHARD.ADD 18446744073709551615 0)" "^WRONGSHARD"
expect_match "wrongshard docs" "$(redis-cli -p "$SPORT2" SHARD.DOCS 0 18446744073709551615)" "^WRONGSHARD"
expect_eq "right shard" "$(redis-cli -p "$SPORT2" SHARD.QUERY 0 3 5 | tr '\n' ' ')" "0 0 "
expect_eq "right shard docs, no document" "$(redis-cli -p "$SPORT2" SHARD.QUERY 0 3 5 DOCS)" ""
expect_eq "lock 0" "$(sc SHARD.LOCK 0 tz 5000 A doc-z | tr '\n' ' ')" "1 0 1 0 1 "
expect_eq "unlock 0" "$(sc SHARD.UNLOCK 0 tz)" "1"
expect_eq "right shard docs" "$(redis-cli -p "$SPORT2" SHARD.QUERY 0 3 5 DOCS | tr '\n' ' ')" "0 0 doc-z "
expect_match "info wrongshard" "$(redis-cli -p "$SPORT2" SHARD.INFO | tr -d '\r')" "errors_wrongshard:3"
# the repair pass: a writer that took f's lock and died after storing the document
# (no table entries, lock never released) is completed once the lease runs out
# (on the second worker, 0-127: f is a fingerprint whose table-0 shard it serves)
for _ in $(seq 1 64); do
    f=$(rand64)
    out=$(redis-cli -p "$SPORT2" SHARD.LOCK "$f" dead 300 A doc-f | tr '\n' ' ')
    case "$out" in WRONGSHARD*) continue;; esac
    break
done
expect_eq "dead writer's lock" "$out" "1 0 1 0 1 "
# (its table-0 entry is its ids, written with the lock: found there alone)
REST=$(seq -s ' ' 1 19)
expect_eq "half-applied: not found in tables 1.." "$(sc SHARD.QUERY "$f" 0 $REST)" ""
expect_eq "half-applied: found in table 0" "$(sc SHARD.QUERY "$f" 0 0 | tr '\n' ' ')" "$f 0 "
for _ in $(seq 1 100); do
    [ "$(sc SHARD.QUERY "$f" 0 $REST | tr '\n' ' ')" = "$f 0 " ] && break
    sleep 0.1
done
expect_eq "repaired: every table" "$(sc SHARD.QUERY "$(flip "$f" 3)" 3 $ALL DOCS | tr '\n' ' ')" \
    "$f 3 doc-f "
expect_match "repairs counted" "$(redis-cli -p "$SPORT2" SHARD.INFO | tr -d '\r')" $'\nrepairs:1\n'
expect_eq "lock released" "$(timeout 10 redis-cli -p "$RPORT" --scan --pattern 'w:*')" ""


# ---- configuration and meta refusal ----
set +e
out=$(timeout 20 "$SHARD" --port "$(free_port)" --redis-port "$RPORT" --blocks 5 2>&1); rc=$?
set -e
expect_eq "mismatch exit" "$rc" "1"
expect_match "mismatch message" "$out" "corpus in redis 127.0.0.1:$RPORT was built with blocks 6 distance 3; this worker is configured with blocks 5 distance 3"
set +e
out=$(timeout 20 "$SHARD" --redis-port "$RPORT" --layout 3 --port "$(free_port)" 2>&1); rc=$?
set -e
expect_eq "layout 3 exit" "$rc" "2"
expect_match "layout 3 message" "$out" "layout 3: this build reads and writes data layout 4 only"
set +e
out=$(timeout 20 "$SHARD" --blocks 16 --distance 15 --check-config 2>&1); rc=$?
set -e
expect_eq "short prefix exit" "$rc" "2"
expect_match "short prefix message" "$out" "table 0 has a 4-bit prefix"
set +e
out=$(timeout 20 "$SHARD" --shards 9-3 --check-config 2>&1); rc=$?
set -e
expect_eq "bad shards exit" "$rc" "2"
expect_match "bad shards message" "$out" "shards '9-3'"
set +e
out=$(timeout 20 "$SHARD" --wait-replicas 1 --wait-timeout-ms 1000 --timeout-ms 1000 --check-config 2>&1); rc=$?
set -e
expect_eq "wait-timeout-ms >= timeout-ms exit" "$rc" "2"
expect_match "wait-timeout-ms >= timeout-ms message" "$out" "wait-timeout-ms 1000 must be below timeout-ms 1000"
set +e
out=$(timeout 20 "$SHARD" --wait-replicas 1 --wait-timeout-ms 2000 --timeout-ms 1000 --port "$(free_port)" 2>&1); rc=$?
set -e
expect_eq "wait-timeout-ms >= timeout-ms start-up exit" "$rc" "2"
expect_match "wait-timeout-ms >= timeout-ms start-up message" "$out" "wait-replicas is 1"
out=$(timeout 20 "$SHARD" --wait-replicas 1 --wait-timeout-ms 999 --timeout-ms 1000 --check-config 2>&1) \
    || fail "wait-timeout-ms below timeout-ms refused: $out"
out=$(timeout 20 "$SHARD" --wait-replicas 0 --wait-timeout-ms 5000 --check-config 2>&1) \
    || fail "wait-timeout-ms without wait-replicas refused: $out"
# the client limits shared with the coordinator (rs_limit_options): checked the same
# way, and the same exit statuses (2: the configuration is refused)
set +e
out=$(timeout 20 "$SHARD" --max-arg-bytes 1m --max-request-bytes 100k --check-config 2>&1); rc=$?
set -e
expect_eq "max-request-bytes < max-arg-bytes exit" "$rc" "2"
expect_match "max-request-bytes < max-arg-bytes message" "$out" "max-request-bytes \\(102400\\) is smaller than max-arg-bytes"
set +e
out=$(timeout 20 "$SHARD" --logfile "$DIR/no-such-dir/shard.log" --port "$(free_port)" 2>&1); rc=$?
set -e
expect_eq "log file that cannot be opened: exit" "$rc" "2"
# ... and enforced: a worker with max-args 4 refuses a request of 5 arguments
SPORT6=$(free_port)
timeout 300 "$SHARD" --port "$SPORT6" --redis-port "$RPORT" --max-args 4 --repair-interval-ms 0 \
    --announce-interval-ms 0 >"$DIR/shard6.log" 2>&1 &
PIDS+=($!)
wait_pong "$SPORT6"
expect_match "worker max-args" "$(timeout 10 redis-cli -p "$SPORT6" SHARD.QUERY 1 3 0 1 2>&1)" "max-args"
expect_match "worker within max-args" "$(timeout 10 redis-cli -p "$SPORT6" SHARD.QUERY 1 3 0 2>&1)" "^$|^[0-9]"

# ---- started before its Redis: serves -REDIS unavailable, connects when it appears ----
RPORT2=$(free_port)
SPORT3=$(free_port)
# fingerprint algorithm and tombstone lifetime given: it starts at once (a worker
# that follows its corpus waits for Redis before it listens)
timeout 300 "$SHARD" --port "$SPORT3" --redis-port "$RPORT2" --tombstone-seconds 120 \
    --fingerprint-algorithm v1:2 >"$DIR/shard3.log" 2>&1 &
PIDS+=($!)
wait_pong "$SPORT3"
expect_match "no redis yet" "$(timeout 10 redis-cli -p "$SPORT3" SHARD.QUERY 1 3 0)" "^REDIS unavailable"
timeout 300 redis-server --port "$RPORT2" --bind 127.0.0.1 --dir "$DIR" --dbfilename r2.rdb \
    --save '' --appendonly no >>"$DIR/redis2.log" 2>&1 &
PIDS+=($!)
wait_redis_up "$SPORT3" || fail "worker did not connect to a late Redis"
REDIS2_PID=$(redis-cli -p "$RPORT2" INFO server | tr -d '\r' | sed -n 's/^process_id://p')
PIDS+=("$REDIS2_PID")
expect_eq "late redis add" "$(timeout 10 redis-cli -p "$SPORT3" SHARD.ADD 5 0 1)" "1"
expect_eq "late redis meta" "$(redis-cli -p "$RPORT2" HGET simhash:meta blocks)" "6"
# another corpus appears while a new worker waits for Redis: it exits 1
redis-cli -p "$RPORT2" HSET simhash:meta blocks 5 >/dev/null
kill -STOP "$REDIS2_PID"
timeout 60 "$SHARD" --port "$(free_port)" --redis-port "$RPORT2" --timeout-ms 300 >"$DIR/shard4.log" 2>&1 &
W4=$!
PIDS+=("$W4")
sleep 1
kill -CONT "$REDIS2_PID"
set +e
wait "$W4"; rc=$?
set -e
expect_eq "late mismatch exit" "$rc" "1"
expect_match "late mismatch message" "$(cat "$DIR/shard4.log")" "was built with blocks 5 distance 3; this worker is configured with blocks 6"
# a worker that follows its corpus (no algorithm, no tombstone lifetime) started
# while Redis does not answer: it waits, then takes the corpus's algorithm v1:2 and
# tombstone lifetime 60 (never a new corpus's defaults, which its Redis would refuse)
redis-cli -p "$RPORT2" FLUSHALL >/dev/null
redis-cli -p "$RPORT2" HSET simhash:meta blocks 6 distance 3 layout 4 bucket_bits 8 fingerprint v1:2 \
    tombstone_seconds 60 >/dev/null
kill -STOP "$REDIS2_PID"
SPORT5=$(free_port)
timeout 120 "$SHARD" --port "$SPORT5" --redis-port "$RPORT2" --timeout-ms 300 >"$DIR/shard5.log" 2>&1 &
PIDS+=($!)
sleep 1.5
kill -CONT "$REDIS2_PID"
wait_pong "$SPORT5"
expect_eq "waited for its corpus: algorithm" \
    "$(timeout 10 redis-cli -p "$SPORT5" SHARD.HELLO | sed -n '3p;4p;9p' | tr '\n' ' ')" "4 8 v1:2 "
expect_match "waited for its corpus: tombstone lifetime" \
    "$(timeout 10 redis-cli -p "$SPORT5" SHARD.INFO | tr -d '\r')" $'\ntombstone_seconds:60\n'

expect_match "waited for its corpus: said so" "$(cat "$DIR/shard5.log")" "waiting for it: this worker follows its corpus"

# ---- Redis stalls: -REDIS timeout, the worker drops the connection and recovers ----
# (it drops it once a PING sent at a deadline has had no answer for another
# timeout-ms either: a stopped Redis, not a slow one on a busy machine)
kill -STOP "$REDIS_PID"
expect_match "stalled" "$(sc SHARD.QUERY "$LAST_BASE" 3 $ALL)" "^REDIS timeout"
dropped=no
for _ in $(seq 1 150); do
    info=$(sc SHARD.INFO | tr -d '\r')
    if [[ $info =~ redis:(down|connecting) ]] && [[ $info == *"redis_last_error:stalled"* ]]; then
        dropped=yes
        break
    fi
    sleep 0.2
done
expect_eq "stalled redis: connection dropped" "$dropped" yes
kill -CONT "$REDIS_PID"
wait_redis_up "$SPORT" || fail "worker did not come back after a stall"
expect_eq "after stall" "$(sc SHARD.QUERY "$LAST_BASE" 3 $ALL | tr '\n' ' ')" "$LAST_BASE 0 "

# ---- Redis killed with requests in flight ----
kill -STOP "$REDIS_PID"
sc SHARD.QUERY "$LAST_BASE" 3 $ALL >"$DIR/inflight.out" &
QPID=$!
sleep 0.5
kill -9 "$REDIS_PID"
wait "$QPID" || true
expect_match "in flight" "$(cat "$DIR/inflight.out")" "^REDIS connection lost"
expect_match "while down" "$(sc SHARD.QUERY 1 3 0)" "^REDIS unavailable"
expect_match "while down add" "$(sc SHARD.ADD 1 1)" "^REDIS unavailable"
expect_eq "hello while down" "$(sc SHARD.HELLO | head -1)" "6"
info=$(sc SHARD.INFO | tr -d '\r')
expect_match "info down" "$info" "redis:(down|connecting)"
expect_match "info down counts" "$info" "fingerprints:unknown"

# ---- Redis restarted (empty, no persistence): reconnect, meta recreated ----
start_redis || { fail "redis-server did not restart on port $RPORT"; cat "$DIR/redis.log"; exit 1; }
wait_redis_up "$SPORT" || fail "worker did not reconnect"
expect_eq "meta recreated" "$(redis-cli -p "$RPORT" HGET simhash:meta distance)" "3"
expect_eq "empty after restart" "$(sc SHARD.QUERY "$LAST_BASE" 3 $ALL)" ""
expect_eq "add after restart" "$(sc SHARD.ADD "$LAST_BASE" $ALL)" "19"
q=$(flip "$LAST_BASE" 2)
expect_eq "query after restart" "$(sc SHARD.QUERY "$q" 3 $ALL | tr '\n' ' ')" "$LAST_BASE 2 "
info=$(sc SHARD.INFO | tr -d '\r')
expect_match "info reconnects" "$info" "redis_reconnects:[2-9]"
expect_match "info lost" "$info" "errors_lost:[1-9]"
expect_match "info timeout" "$info" "errors_timeout:[1-9]"

# ---- clean shutdown, with a SHARD.INFO waiting for a stopped Redis: the worker
# answers it while it shuts down (it once read its context through the request,
# which has none by then) and exits 0 ----
kill -STOP "$REDIS_PID"
timeout 10 redis-cli -p "$SPORT" SHARD.INFO >"$DIR/info-at-stop.out" 2>&1 &
INFO_CLI=$!
sleep 0.5
kill "$SHARD_PID"
for _ in $(seq 1 100); do kill -0 "$SHARD_PID" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$SHARD_PID" 2>/dev/null; then fail "worker did not stop on SIGTERM"; else ok; fi
set +e
wait "$WORKER_WRAP"
rc=$?
kill -CONT "$REDIS_PID"
wait "$INFO_CLI"
set -e
expect_eq "worker exit status with a SHARD.INFO in flight" "$rc" 0
[ -e "$DIR/shard.pid" ] && fail "pidfile left behind" || ok

# sanitizer builds report into the worker logs
if grep -E "Sanitizer|runtime error" "$DIR"/shard*.log; then fail "sanitizer report in a worker log"; else ok; fi

echo "test_shard: $CHECKS checks, $FAILS failures"
if [ "$FAILS" -ne 0 ]; then
    echo "--- worker logs"; cat "$DIR"/shard*.log
    exit 1
fi
