#!/usr/bin/env bash
# tests/integration/test_durability.sh: the durable-acknowledgement mode
# (coordinator `durable yes`, worker SHARD.WAIT; docs/durability.md).
#   1. Redis without AOF: durable writes are refused with a clear -REDIS error; table
#      entries without a document (half an ADD) are never returned by QUERY or CHECK.
#   2. wait-replicas 1 without a replica: -REDIS not replicated ...; with a replica
#      attached the same ADD is acknowledged.
#   3. Redis with appendonly yes + appendfsync always: a driver ingests through the
#      coordinator and records every acknowledged fingerprint; Redis is killed with
#      SIGKILL mid-ingest and restarted on the same directory; every acknowledged
#      fingerprint must then be found with its document id (0 missing).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
th_init durability
th_need_bins simhash-shard simhash-coordinator
export TH_DAEMON_SECS=300

# start_redis_at NAME PORT DIR [args..]: redis-server on PORT with --dir DIR; waits for
# a literal PONG (not LOADING); sets RPID (the `timeout` process).
start_redis_at() {
    local name=$1 port=$2 dir=$3 i=0 reply
    shift 3
    mkdir -p "$dir"
    th_start "$name" "$TH_DAEMON_SECS" redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" \
        --save '' --daemonize no --protected-mode yes "$@"
    RPID=$TH_PID
    while [ $i -lt 400 ]; do
        reply=$(timeout 2 redis-cli -p "$port" ping 2>/dev/null)
        [ "$reply" = PONG ] && return 0
        kill -0 "$RPID" 2>/dev/null || th_fail "redis-server $name exited at start"
        sleep 0.05
        i=$((i + 1))
    done
    th_fail "redis-server $name did not answer PONG"
}

# cli PORT ARGS..: one command through redis-cli (bounded)
cli() {
    local port=$1
    shift
    timeout 10 redis-cli -p "$port" "$@" 2>&1
}

# ---- 1. durable refused without AOF ----
th_start_redis plain
th_start_shard s-plain "$TH_REDIS_PORT" 0-255 6 3
th_start_coord c-plain 6 3 2000 "127.0.0.1:$TH_SHARD_PORT" "" --durable yes
out=$(cli "$TH_COORD_PORT" SIMHASH.ADD 12345 doc-a)
echo "$out" | grep -q "appendonly yes and appendfsync always" ||
    th_fail "durable ADD on a Redis without AOF: expected a refusal, got: $out"
th_log "no AOF: refused ($out)"
# without durable the same deployment acknowledges (a refused durable write may still
# have been applied: it was not acknowledged, so use a new fingerprint)
th_start_coord c-plain-nd 6 3 2000 "127.0.0.1:$TH_SHARD_PORT"
out=$(cli "$TH_COORD_PORT" SIMHASH.ADD 12346 doc-b)
[ "$out" = 1 ] || th_fail "non-durable ADD: expected 1, got: $out"
# readers never see half an ADD: table entries without a document are not a match
plain_worker=$TH_SHARD_PORT
out=$(cli "$plain_worker" SHARD.ADD 999999 $(seq 0 19))
# table 0's entry is the ids, not SHARD.ADD's: 19 of the 20 tables
[ "$out" = 19 ] || th_fail "SHARD.ADD of 20 tables: expected 19, got: $out"
out=$(cli "$TH_COORD_PORT" SIMHASH.QUERY 999999 DISTANCE 0)
[ -z "$out" ] || th_fail "a fingerprint without documents was returned: $out"
out=$(cli "$TH_COORD_PORT" SIMHASH.CHECK 999998 doc-c DISTANCE 1)
[ -z "$out" ] || th_fail "CHECK returned a fingerprint without documents: $out"
[ "$(cli "$plain_worker" SHARD.LOCK 999999 t1 5000 A doc-x | head -1)" = 1 ] || th_fail "SHARD.LOCK"
[ "$(cli "$plain_worker" SHARD.UNLOCK 999999 t1)" = 1 ] || th_fail "SHARD.UNLOCK"
out=$(cli "$TH_COORD_PORT" SIMHASH.QUERY 999999 DISTANCE 0 | tr '\n' ' ')
[ "$out" = "999999 0 doc-x " ] || th_fail "after its document was added: expected '999999 0 doc-x', got: $out"
th_log "table entries without a document stay invisible until the document exists"

# ---- 2. wait-replicas ----
mport=$(th_free_port)
start_redis_at master "$mport" "$TH_DIR/master" --appendonly no --repl-diskless-sync-delay 0
# a WAIT timeout generous enough for a busy machine, below the worker's deadline
th_start_shard s-rep "$mport" 0-255 6 3 "" --wait-replicas 1 --wait-timeout-ms 500 --timeout-ms 3000
rep_shard=$TH_SHARD_PORT
th_start_coord c-rep 6 3 5000 "127.0.0.1:$rep_shard" "" --durable yes
out=$(cli "$TH_COORD_PORT" SIMHASH.ADD 777 doc-r)
echo "$out" | grep -q "not replicated to 1 replicas within 500 ms" ||
    th_fail "wait-replicas 1 without a replica: expected 'not replicated', got: $out"
th_log "no replica: refused ($out)"
rport2=$(th_free_port)
start_redis_at replica "$rport2" "$TH_DIR/replica" --appendonly no --replicaof 127.0.0.1 "$mport"
i=0
# the replica counts for WAIT only once the master streams to it, which after a
# diskless sync starts with the replica's first REPLCONF ACK (up to a second after
# state=online): probe with a write and a WAIT on one connection, as the worker does
until [ "$(printf 'SET wait-probe 1\nWAIT 1 200\n' | cli "$mport" | tail -n 1)" = 1 ]; do
    i=$((i + 1))
    [ $i -lt 400 ] || th_fail "replica did not finish its sync"
    sleep 0.05
done
out=$(cli "$TH_COORD_PORT" SIMHASH.ADD 778 doc-s)
[ "$out" = 1 ] || th_fail "durable ADD with a replica attached: expected 1, got: $out"
# the id, packed after the 7 bytes of table 0's member
out=$(for k in $(cli "$rport2" --scan --pattern 's:{0:*'); do cli "$rport2" zrange "$k" 0 -1; done |
      grep -ao doc-s | head -1)
[ "$out" = doc-s ] || th_fail "replica does not hold the acknowledged document: $out"
waits=$(cli "$rep_shard" SHARD.INFO | tr -d '\r' | sed -n 's/^wait_commands://p')
[ "${waits:-0}" -ge 1 ] || th_fail "worker sent no WAIT (wait_commands=$waits)"
th_log "replica attached: acknowledged, on the replica (WAIT commands: $waits)"

# ---- 3. kill -9 mid-ingest with appendfsync always ----
aport=$(th_free_port)
adir="$TH_DIR/aof"
start_redis_at aof "$aport" "$adir" --appendonly yes --appendfsync always
# generous deadlines: with an fsync per write, a busy machine can hold one reply past
# the default second, and the driver stops at its first error (the kill must be it)
th_start_shard s-a "$aport" 0-127 6 3 "" --timeout-ms 15000
sa=$TH_SHARD_PORT
th_start_shard s-b "$aport" 128-255 6 3 "" --timeout-ms 15000
sb=$TH_SHARD_PORT
th_start_coord c-aof 6 3 20000 "127.0.0.1:$sa 127.0.0.1:$sb" "" --durable yes
cport=$TH_COORD_PORT

cat >"$TH_DIR/driver.py" <<'EOF'
import socket, sys, time

def enc(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)

class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""
    def line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("connection closed")
            self.buf += d
        l, self.buf = self.buf.split(b"\r\n", 1)
        return l
    def reply(self):
        l = self.line()
        t, rest = l[:1], l[1:]
        if t == b":":
            return int(rest)
        if t in (b"+", b"-"):
            return ("ERR", rest.decode(errors="replace")) if t == b"-" else rest.decode()
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                d = self.s.recv(65536)
                if not d:
                    raise EOFError("connection closed")
                self.buf += d
            v, self.buf = self.buf[:n], self.buf[n + 2:]
            return v
        if t == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise ValueError("bad reply %r" % l)

def fp(i):  # distinct, well spread 64-bit fingerprints
    x = (i * 0x9E3779B97F4A7C15 + 0x1234567) & (2**64 - 1)
    x ^= x >> 31
    return (x * 0xBF58476D1CE4E5B9) & (2**64 - 1)

mode, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
c = Conn(port)
if mode == "ingest":
    limit, secs, depth = int(sys.argv[4]), float(sys.argv[5]), 16
    acked = errors = sent = 0
    out = open(path, "w", buffering=1)
    t_end = time.time() + secs
    inflight = []
    while (sent < limit and time.time() < t_end and errors == 0) or inflight:
        while sent < limit and len(inflight) < depth and errors == 0 and time.time() < t_end:
            c.s.sendall(enc("SIMHASH.ADD", fp(sent), "doc-%d" % sent))
            inflight.append(sent)
            sent += 1
        r = c.reply()
        i = inflight.pop(0)
        if isinstance(r, int):
            out.write("%d %d\n" % (i, fp(i)))
            acked += 1
        else:
            errors += 1
            if errors == 1:
                print("first error after %d acknowledged: %s" % (acked, r), file=sys.stderr)
    print("sent %d acknowledged %d errors %d" % (sent, acked, errors))
else:  # verify: every acknowledged fingerprint is found with its document
    rows = [l.split() for l in open(path)]
    missing = 0
    for k in range(0, len(rows), 200):
        chunk = rows[k:k + 200]
        c.s.sendall(b"".join(enc("SIMHASH.QUERY", f, "DISTANCE", 0) for _, f in chunk))
        for i, f in chunk:
            r = c.reply()
            ok = isinstance(r, list) and any(
                int(m[0]) == int(f) and ("doc-%s" % i).encode() in m[2] for m in r)
            if not ok:
                missing += 1
                if missing <= 5:
                    print("missing %s (doc-%s): %r" % (f, i, r), file=sys.stderr)
    print("checked %d missing %d" % (len(rows), missing))
    sys.exit(1 if missing or not rows else 0)
EOF

timeout 150 python3 "$TH_DIR/driver.py" ingest "$cport" "$TH_DIR/acked.txt" 200000 90 \
    >"$TH_DIR/ingest.out" 2>"$TH_DIR/ingest.err" &
drv=$!
i=0
acked() { if [ -f "$TH_DIR/acked.txt" ]; then wc -l <"$TH_DIR/acked.txt"; else echo 0; fi; }
while [ "$(acked)" -lt 1500 ]; do
    i=$((i + 1))
    [ $i -lt 1200 ] || th_fail "driver acknowledged fewer than 1500 ADDs in 60 s: $(cat "$TH_DIR/ingest.err")"
    kill -0 $drv 2>/dev/null || th_fail "driver ended early: $(cat "$TH_DIR/ingest.out" "$TH_DIR/ingest.err")"
    sleep 0.05
done
victim=$(th_child_pid "$RPID")
[ -n "$victim" ] || th_fail "no redis-server process under $RPID"
kill -KILL "$victim"
th_log "killed redis-server $victim with SIGKILL after $(acked) acknowledged ADDs"
wait $drv || th_fail "driver failed: $(cat "$TH_DIR/ingest.out" "$TH_DIR/ingest.err")"
cat "$TH_DIR/ingest.out" "$TH_DIR/ingest.err" >&2
grep -q "errors [1-9]" "$TH_DIR/ingest.out" || th_fail "the kill did not interrupt the ingest"
{ wait "$RPID"; } 2>/dev/null

start_redis_at aof2 "$aport" "$adir" --appendonly yes --appendfsync always
# the workers reconnect with backoff (at most 5 s); poll until a query answers
first=$(head -n 1 "$TH_DIR/acked.txt" | cut -d' ' -f2)
i=0
until [ "$(cli "$cport" SIMHASH.QUERY "$first" DISTANCE 0 | head -n 1)" = "$first" ]; do
    i=$((i + 1))
    [ $i -lt 300 ] || th_fail "queries do not work after the Redis restart: $(cli "$cport" SIMHASH.QUERY 1)"
    sleep 0.05
done
timeout 60 python3 "$TH_DIR/driver.py" verify "$cport" "$TH_DIR/acked.txt" >"$TH_DIR/verify.out" 2>&1 ||
    th_fail "acknowledged fingerprints lost: $(cat "$TH_DIR/verify.out")"
cat "$TH_DIR/verify.out" >&2
grep -q "missing 0$" "$TH_DIR/verify.out" || th_fail "verify: $(cat "$TH_DIR/verify.out")"
th_log "PASS"
