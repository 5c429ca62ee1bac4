#!/usr/bin/env bash
# test_coordinator.sh: RESP protocol behaviour of simhash-coordinator backed by real
# simhash-shard workers and redis-server: PING/AUTH/COMMAND/unknown/bad arguments,
# pipelined mixed commands answered in order, a request split into single-byte writes,
# an oversized argument refused, --check-config, and a client that pipelines without
# reading its replies does not grow the coordinator's memory past its limits.
set -u
. "$(dirname "$0")/lib.sh"
th_init coordinator
th_need_bins simhash-shard simhash-coordinator
B=6 K=3

# --check-config: first bad line with file:line, exit 2
printf 'worker 127.0.0.1:1\n# comment\nport 99999\n' >"$TH_DIR/bad.conf"
out=$(timeout 10 "$TH_BIN/simhash-coordinator" --config "$TH_DIR/bad.conf" --check-config 2>&1)
rc=$?
[ $rc -eq 2 ] || th_fail "--check-config of a bad file: exit $rc, want 2"
case "$out" in *bad.conf:3:*port*) ;; *) th_fail "--check-config message: '$out'";; esac
printf 'worker 127.0.0.1:1\nblocks 6\ndistance 3\n' >"$TH_DIR/good.conf"
timeout 10 "$TH_BIN/simhash-coordinator" --config "$TH_DIR/good.conf" --check-config >/dev/null 2>&1 \
    || th_fail "--check-config of a good file failed"
out=$(timeout 10 "$TH_BIN/simhash-coordinator" --worker 127.0.0.1:1 --password x 2>&1)
[ $? -eq 2 ] || th_fail "--password on the command line accepted"
case "$out" in *password-file*) ;; *) th_fail "--password message: '$out'";; esac
timeout 10 "$TH_BIN/simhash-coordinator" --blocks 6 --distance 3 >/dev/null 2>&1
[ $? -eq 2 ] || th_fail "no --worker accepted"

th_start_redis redis
rport=$TH_REDIS_PORT
th_start_shard shard-a "$rport" 0-99 $B $K
a=$TH_SHARD_PORT
th_start_shard shard-b "$rport" 100-255 $B $K
b=$TH_SHARD_PORT
echo "s3cret" >"$TH_DIR/pw"
# under AddressSanitizer freed memory sits in a quarantine and counts in RSS; keep it
# small so the RSS bound below measures what the coordinator holds
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"
th_start_coord coord $B $K 2000 "127.0.0.1:$a 127.0.0.1:$b" "" --password-file "$TH_DIR/pw" \
    --max-pending 16 --out-high-watermark 64k --max-arg-bytes 4096
cport=$TH_COORD_PORT
cpid=$(th_child_pid "$TH_COORD_PID")

cli() { timeout 10 redis-cli -h 127.0.0.1 -p "$cport" "$@" 2>&1; }
acli() { timeout 10 redis-cli -h 127.0.0.1 -p "$cport" --no-auth-warning -a s3cret "$@" 2>&1; }
expect() { [ "$2" = "$3" ] || th_fail "$1: got '$2', want '$3'"; }

expect "PING without AUTH (allowed, like AUTH and QUIT)" "$(cli PING)" PONG
case "$(cli AUTH wrong)" in WRONGPASS*) ;; *) th_fail "AUTH wrong";; esac
expect "AUTH + PING" "$(acli PING)" PONG
expect "COMMAND COUNT = COMMAND LIST" "$(acli COMMAND COUNT)" "$(acli COMMAND LIST | wc -l)"
expect "COMMAND LIST: the 9 SIMHASH.* commands" "$(acli COMMAND LIST | grep -c '^simhash\.')" 9
case "$(acli NOSUCH a b)" in "ERR unknown command 'NOSUCH'"*) ;; *) th_fail "unknown: '$(acli NOSUCH a b)'";; esac
case "$(acli SIMHASH.QUERY 12x)" in *"invalid fingerprint '12x' (argument 1)"*) ;; *) th_fail "bad fp: '$(acli SIMHASH.QUERY 12x)'";; esac
case "$(acli SIMHASH.QUERY 1 DISTANCE 9)" in *DISTANCE*) ;; *) th_fail "bad distance";; esac
case "$(acli SIMHASH.ADD 1)" in *"wrong number of arguments"*) ;; *) th_fail "ADD arity";; esac
case "$(acli SIMHASH.FINGERPRINT)" in *"wrong number of arguments"*) ;; *) th_fail "FINGERPRINT arity";; esac
info=$(acli SIMHASH.INFO)
for want in "blocks:$B" "distance:$K" "tables:20" "routing:ok" "worker0:addr=127.0.0.1:$a,health=up" \
            "worker1:addr=127.0.0.1:$b,health=up,shards=100-255"; do
    echo "$info" | grep -q "$want" || th_fail "SIMHASH.INFO lacks '$want': $info"
done

# Redis memory: both workers share one Redis, so the total counts it once and matches
# that Redis's own used_memory (within 10%); each worker line names it
mem=""
for _ in $(seq 1 50); do
    info=$(acli SIMHASH.INFO | tr -d '\r')
    mem=$(echo "$info" | sed -n 's/^redis_used_memory:\([0-9][0-9]*\)$/\1/p')
    w1=$(echo "$info" | grep -c "^worker[01]:.*,redis_addr=127.0.0.1:$rport,redis_used_memory=[0-9]")
    [ -n "$mem" ] && [ "$w1" = 2 ] && break
    sleep 0.1
done
[ -n "$mem" ] && [ "$mem" -gt 0 ] || th_fail "SIMHASH.INFO redis_used_memory: $info"
[ "$w1" = 2 ] || th_fail "SIMHASH.INFO worker lines lack redis_addr/redis_used_memory: $info"
echo "$info" | grep -q '^redis_used_memory_human:[0-9]*\.[0-9][0-9]M$' \
    || th_fail "SIMHASH.INFO redis_used_memory_human: $info"
rmem=$(timeout 10 redis-cli -p "$rport" info memory | tr -d '\r' | sed -n 's/^used_memory:\([0-9]*\)$/\1/p')
[ -n "$rmem" ] || th_fail "redis INFO memory gave no used_memory"
[ $((mem * 10)) -ge $((rmem * 9)) ] && [ $((mem * 10)) -le $((rmem * 11)) ] \
    || th_fail "SIMHASH.INFO redis_used_memory $mem is not within 10% of redis used_memory $rmem (counted twice?)"
for p in "$a" "$b"; do
    sinfo=$(timeout 10 redis-cli -p "$p" SHARD.INFO | tr -d '\r')
    echo "$sinfo" | grep -q "^redis_addr:127.0.0.1:$rport$" || th_fail "SHARD.INFO redis_addr: $sinfo"
    echo "$sinfo" | grep -q '^redis_used_memory:[1-9][0-9]*$' || th_fail "SHARD.INFO redis_used_memory: $sinfo"
    echo "$sinfo" | grep -q '^redis_role:master$' || th_fail "SHARD.INFO redis_role: $sinfo"
done

# pipelined mixed commands, one connection, replies checked in order; a byte-wise request;
# an oversized argument; a client that never reads
cat >"$TH_DIR/proto.py" <<'PY'
import os, socket, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])

from resp_client import C, enc

def fail(m):
    print("FAIL", m); sys.exit(1)

c = C(port)
c.s.sendall(enc("AUTH", "s3cret")); assert c.reply() == "OK"
base = 0x0123456789abcdef
cmds, want = [], []
for i in range(40):
    fp = base + (i << 20)
    cmds += [enc("SIMHASH.ADD", fp, "d%d" % i), enc("PING", "m%d" % i),
             enc("SIMHASH.QUERY", fp, "DISTANCE", 0), enc("NOPE")]
    want += [1, b"m%d" % i, [[str(fp).encode(), 0, [b"d%d" % i]]], "err"]
c.s.sendall(b"".join(cmds))
for i, w in enumerate(want):
    r = c.reply()
    if w == "err":
        if not (isinstance(r, tuple) and "unknown command 'NOPE'" in r[1]): fail("reply %d: %r" % (i, r))
    elif r != w:
        fail("pipelined reply %d: %r, want %r" % (i, r, w))
print("pipeline: %d replies in order" % len(want))

# one request, one byte per write
req = enc("SIMHASH.QUERY", base, "DISTANCE", 0)
for i in range(len(req)):
    c.s.sendall(req[i:i + 1]); time.sleep(0.001)
r = c.reply()
if r != [[str(base).encode(), 0, [b"d0"]]]: fail("bytewise: %r" % (r,))
print("bytewise: ok")
for i in range(40):
    c.s.sendall(enc("SIMHASH.DEL", base + (i << 20)))
    if c.reply() != 1: fail("cleanup DEL")

# oversized argument: an error, then the connection is closed; the server lives on
d = C(port)
d.s.sendall(enc("AUTH", "s3cret") + enc("SIMHASH.FINGERPRINT", b"x" * 5000))
assert d.reply() == "OK"
r = d.reply()
if not (isinstance(r, tuple) and "max-arg-bytes" in r[1]): fail("oversized: %r" % (r,))
try:
    x = d.s.recv(10)
    if x: fail("data after the protocol error: %r" % x)
except OSError:
    pass
print("oversized argument: %s" % r[1])

def rss_kb():
    with open("/proc/%d/status" % pid) as f:
        for l in f:
            if l.startswith("VmRSS:"): return int(l.split()[1])

# a client that pipelines and never reads: reading pauses, memory stays bounded
e = C(port)
e.s.sendall(enc("AUTH", "s3cret"))
e.s.setblocking(False)
rss0 = rss_kb()
text = b"w" * 3000
one = (enc("SIMHASH.FINGERPRINT", text) + enc("PING", b"p" * 3000)) * 16
sent, off, t0 = 0, 0, time.time()
while time.time() - t0 < 8 and sent < (200 << 20):
    try:
        n = e.s.send(one[off:])
        sent += n
        off = (off + n) % len(one)
    except BlockingIOError:
        time.sleep(0.05)
        if time.time() - t0 > 3: break
rss1 = rss_kb()
print("never-reading client: sent %d KiB before the socket stopped; coordinator RSS %d -> %d KiB"
      % (sent >> 10, rss0, rss1))
if rss1 - rss0 > 32 * 1024: fail("RSS grew by %d KiB" % (rss1 - rss0))
if sent > (64 << 20): fail("the coordinator kept reading: %d bytes accepted" % sent)
c2 = C(port)
c2.s.sendall(enc("AUTH", "s3cret") + enc("PING"))
if c2.reply() != "OK" or c2.reply() != "PONG": fail("other clients starved")
e.s.close()
print("PASS")
PY
PYTHONPATH="$TH_SRC/tests/tools" timeout 60 python3 "$TH_DIR/proto.py" "$cport" "$cpid" || th_fail "protocol script"

expect "alive" "$(acli PING)" PONG
th_log "PASS"
