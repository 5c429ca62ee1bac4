#!/usr/bin/env bash
# test_delay_proxy.sh: the delaying TCP proxy of the multi-host tests
# (tests/tools/delay_proxy.c) on loopback. Through a proxy with 300 us + 0..1000 us of
# jitter each way in front of an echo server: 20 connections at once each send 3 MB
# in random-sized pieces, and every byte comes back in order (jitter must not reorder,
# buffers are bounded so flow control holds back the sender); a request/reply round
# trip takes at least twice the fixed delay; a half-close reaches the server and its
# reply still comes back; a refused target closes the client's connection; SIGTERM
# ends the proxy with exit 0; --help and bad arguments.
set -u
. "$(dirname "$0")/lib.sh"
th_init delay-proxy
th_need_bins delay-proxy
P="$TH_BIN/delay-proxy"
"$P" --help | grep -q 'LISTEN_HOST:PORT=TARGET_HOST:PORT' || th_fail "--help"
"$P" --delay-us x 127.0.0.1:1=127.0.0.1:2 >/dev/null 2>&1; [ $? = 2 ] || th_fail "bad --delay-us accepted"
"$P" 127.0.0.1:1 >/dev/null 2>&1; [ $? = 2 ] || th_fail "a mapping without = accepted"

echo_port=$(th_free_port)
th_start echo 120 /usr/bin/python3 -c 'import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64)
def serve(c):
    while True:
        d = c.recv(65536)
        if not d:
            c.sendall(b"BYE"); c.close(); return
        c.sendall(d)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()' "$echo_port"
th_wait_port "$echo_port" 10 || th_fail "echo server"
pport=$(th_free_port)
dead=$(th_free_port)
dport=$(th_free_port)
th_start proxy 120 "$P" --delay-us 300 --jitter-us 1000 --buffer-bytes 65536 \
    "127.0.0.1:$pport=127.0.0.1:$echo_port" "127.0.0.1:$dport=127.0.0.1:$dead"
proxy=$TH_PID
th_wait_port "$pport" 10 || th_fail "proxy does not listen"
timeout 120 /usr/bin/python3 - "$pport" "$dport" <<'PY' || th_fail "transfers through the proxy"
import random, socket, sys, threading, time
port, dport = int(sys.argv[1]), int(sys.argv[2])
N = 3 * 1024 * 1024
bad = []
def one(seed):
    r = random.Random(seed)
    data = r.randbytes(N)
    c = socket.create_connection(("127.0.0.1", port), timeout=60)
    got = bytearray()
    def reader():
        while len(got) < N:
            d = c.recv(65536)
            if not d:
                break
            got.extend(d)
    t = threading.Thread(target=reader); t.start()
    i = 0
    while i < N:
        n = r.randint(1, 40000)
        c.sendall(data[i:i + n]); i += n
    t.join(90)
    if bytes(got[:N]) != data:
        bad.append("connection %d: %d bytes back, first difference at %s" % (seed, len(got),
                   next((j for j in range(min(len(got), N)) if got[j] != data[j]), len(got))))
    c.shutdown(socket.SHUT_WR)            # half-close: the server answers BYE and closes
    rest = b""
    while True:
        d = c.recv(100)
        if not d:
            break
        rest += d
    if bytes(got[N:]) + rest != b"BYE":
        bad.append("connection %d: after the half-close %r, want BYE" % (seed, bytes(got[N:]) + rest))
    c.close()
ts = [threading.Thread(target=one, args=(s,)) for s in range(20)]
t0 = time.monotonic()
for t in ts: t.start()
for t in ts: t.join(100)
el = time.monotonic() - t0
# round trips: at least 2 x 300 us, order kept
c = socket.create_connection(("127.0.0.1", port), timeout=10)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
rtts = []
for i in range(200):
    m = b"%06d" % i
    t = time.perf_counter(); c.sendall(m)
    b = b""
    while len(b) < 6:
        b += c.recv(6 - len(b))
    rtts.append(time.perf_counter() - t)
    if b != m:
        bad.append("echo %r for %r" % (b, m))
rtts.sort()
if rtts[0] < 0.0006:
    bad.append("round trip %.3f ms, below 2 x 0.3 ms" % (rtts[0] * 1e3))
# a target that refuses: the client's connection is closed
d = socket.create_connection(("127.0.0.1", dport), timeout=10)
try:
    closed = d.recv(10) == b""
except ConnectionResetError:
    closed = True
if not closed:
    bad.append("connection to a refused target stays open")
print("20 x %d bytes echoed in %.1f s; round trip min %.2f p50 %.2f max %.2f ms; %d problems"
      % (N, el, rtts[0] * 1e3, rtts[100] * 1e3, rtts[-1] * 1e3, len(bad)))
for b in bad[:10]:
    print("FAIL", b)
sys.exit(1 if bad else 0)
PY
c=$(th_child_pid "$proxy")
kill -TERM "$c"
for _ in $(seq 1 50); do kill -0 "$c" 2>/dev/null || break; sleep 0.1; done
kill -0 "$c" 2>/dev/null && th_fail "proxy still running 5 s after SIGTERM"
wait "$proxy"
rc=$?
[ $rc = 0 ] || th_fail "proxy exit $rc after SIGTERM"
grep -q "delay-proxy: stopped" "$TH_DIR/proxy.log" || th_fail "no clean stop in the log"
th_log "PASS"
