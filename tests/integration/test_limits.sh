#!/usr/bin/env bash
# test_limits.sh: limits and backpressure of simhash-coordinator with real simhash-shard
# workers and redis-server: every configured limit shown in SIMHASH.INFO # Limits;
# max-clients refusal; a request over max-request-bytes, one over max-args and an
# inline line over 64 KiB refused with an error (the server lives on); past
# max-inflight-worker requests fail fast with -BUSY; a client that pipelines without
# reading makes the coordinator pause reading it (client_read_pauses); a client that
# disconnects while its requests wait on a stopped worker; the coordinator's
# descriptor count stays the same after its workers are killed and restarted 10 times.
# (test_coordinator.sh covers one oversized argument and the RSS of a never-reading
# client.)
set -u
. "$(dirname "$0")/lib.sh"
th_init limits
th_need_bins simhash-shard simhash-coordinator
B=6 K=3

th_start_redis redis
rport=$TH_REDIS_PORT
th_start_shard shard-a "$rport" 0-99 $B $K
a=$TH_SHARD_PORT
a_pid=$TH_SHARD_PID
th_start_shard shard-b "$rport" 100-255 $B $K
b=$TH_SHARD_PORT
b_pid=$TH_SHARD_PID
th_start_coord coord $B $K 1500 "127.0.0.1:$a 127.0.0.1:$b" "" \
    --max-clients 4 --max-pending 8 --max-args 64 --max-arg-bytes 1k \
    --max-request-bytes 4k --out-high-watermark 16k --max-inflight-worker 1 \
    --reconnect-max-ms 200 --health-interval-ms 100
cport=$TH_COORD_PORT
cpid=$(th_child_pid "$TH_COORD_PID")
[ -n "$cpid" ] || th_fail "no coordinator pid"

cli() { timeout 10 redis-cli -h 127.0.0.1 -p "$cport" "$@" 2>&1; }
info_field() { cli SIMHASH.INFO | tr -d '\r' | sed -n "s/^$1://p"; }

# wait until routing is complete (both workers answered SHARD.HELLO)
wait_routing() {
    local i=0
    while [ $i -lt 200 ]; do
        [ "$(info_field routing)" = ok ] && return 0
        sleep 0.05
        i=$((i + 1))
    done
    th_fail "routing not ok after 10 s: $(cli SIMHASH.INFO | tr -d '\r' | grep -E '^worker|^routing')"
}
wait_routing

# ---- every configured limit is visible
info=$(cli SIMHASH.INFO | tr -d '\r')
for want in "# Limits" timeout_ms:1500 max_clients:4 max_pending:8 max_args:64 max_arg_bytes:1024 \
            max_request_bytes:4096 out_high_watermark:16384 max_inflight_worker:1 \
            max_reply_bytes:67108864 max_per_event:32 max_inline_bytes:65536 \
            reconnect_max_ms:200 health_interval_ms:100 auth_required:no \
            worker0_inflight_max:1 worker1_inflight_max:1; do
    echo "$info" | grep -qx -- "$want" || th_fail "SIMHASH.INFO lacks '$want'"
done
echo "$info" | grep -qE '^worker0_inflight:[0-9]+$' || th_fail "no worker0_inflight line"

cat >"$TH_DIR/limits.py" <<'PY'
import os, socket, sys, time
port, pid, what = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

from resp_client import C, enc

def fail(m):
    print("FAIL", m); sys.exit(1)

def is_err(r, text):
    return isinstance(r, tuple) and text in r[1]

def nfds():
    return len(os.listdir("/proc/%d/fd" % pid))

if what == "clients":
    # 4 allowed; the 5th is told why and closed; a slot frees when one leaves
    cs = [C(port) for _ in range(4)]
    for c in cs:
        c.s.sendall(enc("PING"))
        if c.reply() != "PONG": fail("client within max-clients")
    x = C(port)
    r = x.reply()
    if not is_err(r, "max number of clients reached"): fail("5th client: %r" % (r,))
    if not x.closed(): fail("5th client not closed")
    cs.pop().s.close()
    time.sleep(0.3)
    y = C(port); y.s.sendall(enc("PING"))
    if y.reply() != "PONG": fail("slot not freed after a client left")
    print("max-clients: 5th refused, slot reused")

elif what == "sizes":
    # a request over max-request-bytes (4096) made of arguments under max-arg-bytes
    c = C(port)
    c.s.sendall(enc("SIMHASH.ADD", *([b"1", b"d" * 1000] * 5)))
    r = c.reply()
    if not is_err(r, "max-request-bytes"): fail("big request: %r" % (r,))
    if not c.closed(): fail("connection kept after max-request-bytes")
    # more arguments than max-args (64): refused as soon as *<n> arrives
    c = C(port)
    c.s.sendall(b"*65\r\n")
    r = c.reply()
    if not is_err(r, "max-args"): fail("too many args: %r" % (r,))
    if not c.closed(): fail("connection kept after max-args")
    # an inline command line over 64 KiB
    c = C(port)
    try:
        c.s.sendall(b"PING " + b"x" * (70 << 10))
    except OSError:
        pass
    r = c.reply()
    if not is_err(r, "max-inline-bytes"): fail("long inline: %r" % (r,))
    # a huge announced bulk length: refused before anything is allocated
    c = C(port)
    c.s.sendall(b"*2\r\n$4\r\nPING\r\n$999999999999\r\n")
    r = c.reply()
    if not is_err(r, "max-arg-bytes"): fail("huge bulk length: %r" % (r,))
    c = C(port); c.s.sendall(enc("PING"))
    if c.reply() != "PONG": fail("server not answering after the refusals")
    print("sizes: request, args, inline, bulk length refused")

elif what == "busy":
    # max-inflight-worker 1: pipelined queries find the workers busy and fail fast
    c = C(port)
    n = 40
    c.s.sendall(b"".join(enc("SIMHASH.QUERY", 12345 + i) for i in range(n)))
    ok = busy = 0
    for i in range(n):
        r = c.reply()
        if isinstance(r, list): ok += 1
        elif is_err(r, "max-inflight-worker") and r[1].startswith("BUSY"): busy += 1
        else: fail("query %d: %r" % (i, r))
    if ok < 1 or busy < 1: fail("ok %d busy %d: want both" % (ok, busy))
    print("busy: %d answered, %d refused with -BUSY" % (ok, busy))

elif what == "pause":
    # pipelines without reading: the coordinator stops reading it (client_read_pauses)
    e = C(port)
    e.s.setblocking(False)
    one = enc("PING", b"p" * 900) * 32
    sent, t0 = 0, time.time()
    while time.time() - t0 < 5 and sent < (16 << 20):
        try:
            sent += e.s.send(one)
        except BlockingIOError:
            time.sleep(0.05)
            if time.time() - t0 > 2: break
    if sent >= (16 << 20): fail("the coordinator kept reading: %d bytes" % sent)
    c = C(port); c.s.sendall(enc("PING"))
    if c.reply() != "PONG": fail("other client starved")
    e.s.close()
    print("pause: sender blocked after %d KiB" % (sent >> 10))

elif what == "gone":
    # clients that leave while their requests wait on a stopped worker
    for k in range(5):
        c = C(port)
        c.s.sendall(enc("SIMHASH.QUERY", 777 + k) + enc("SIMHASH.ADD", 999 + k, "doc%d" % k) +
                    enc("PING"))
        time.sleep(0.05)
        c.s.close()
    print("gone: 5 clients left mid fan-out")

elif what == "fds":
    print(nfds())
PY
py() { PYTHONPATH="$TH_SRC/tests/tools" timeout 60 python3 "$TH_DIR/limits.py" "$cport" "$cpid" "$@" || th_fail "limits.py $*"; }

py clients
[ "$(info_field rejected_connections)" -ge 1 ] || th_fail "rejected_connections not counted"
py sizes
[ "$(info_field protocol_errors)" -ge 4 ] || th_fail "protocol_errors: $(info_field protocol_errors)"
py busy
[ "$(info_field errors_busy)" -ge 1 ] || th_fail "errors_busy not counted"
p0=$(info_field client_read_pauses)
py pause
[ "$(info_field client_read_pauses)" -gt "$p0" ] || th_fail "client_read_pauses did not grow"

# ---- clients that disconnect mid fan-out: worker a stopped, clients leave, worker resumes
a_child=$(th_child_pid "$a_pid")
kill -STOP "$a_child"
py gone
sleep 0.3
kill -CONT "$a_child"
sleep 2         # past the 1500 ms deadline: every op has ended
[ "$(cli PING)" = PONG ] || th_fail "coordinator not answering after clients left mid fan-out"
[ "$(info_field inflight_requests)" = 1 ] || th_fail "inflight_requests $(info_field inflight_requests) (want 1: the INFO itself)"
[ "$(info_field connected_clients)" = 1 ] || th_fail "connected_clients $(info_field connected_clients)"
wait_routing

# ---- descriptors: workers killed and restarted 10 times
fd0=$(py fds)
for i in $(seq 1 10); do
    if [ $((i % 2)) = 1 ]; then
        th_stop "$a_pid"
        th_start_shard "shard-a$i" "$rport" 0-99 $B $K "$a"
        a_pid=$TH_SHARD_PID
    else
        kill -KILL "$(th_child_pid "$b_pid")" 2>/dev/null
        wait "$b_pid" 2>/dev/null
        th_start_shard "shard-b$i" "$rport" 100-255 $B $K "$b"
        b_pid=$TH_SHARD_PID
    fi
    wait_routing
done
fd1=$(py fds)
th_log "coordinator descriptors: $fd0 before, $fd1 after 10 worker restarts"
[ "$fd1" -le "$fd0" ] || th_fail "descriptors grew from $fd0 to $fd1"
connects=$(cli SIMHASH.INFO | tr -d '\r' | grep -o 'connects=[0-9]*' | cut -d= -f2 | awk '{s+=$1} END {print s+0}')
[ "$connects" -ge 12 ] || th_fail "worker connects $connects, want >= 12"
[ "$(cli SIMHASH.QUERY 12345)" = "" ] || th_fail "query after restarts: $(cli SIMHASH.QUERY 12345)"
th_log "PASS"
