#!/usr/bin/env bash
# test_guard.sh: a peer at a shard worker's address that sends a reply nobody asked
# for must not bring the coordinator down (hiredis 0.14 would abort on it): the
# coordinator drops that connection, keeps serving, and reconnects. Then a worker of an
# older release (a SHARD.HELLO of 10 elements, no worker protocol): the coordinator
# refuses it with exit 2 and says to run workers and coordinators of one release. Then
# a worker that reports a corpus of a removed fingerprint algorithm (v3): refused with
# exit 2, the algorithm and the way to rebuild named.
set -u
source "$(dirname "$0")/lib.sh"
th_init guard
th_need_bins simhash-coordinator

FAKE_PORT=$(th_free_port)
# A fake worker: answers SHARD.HELLO like a real one (blocks 6, distance 3, layout 4,
# shard bits 8, shards 0-255, not a cluster, fingerprint algorithm v5, no corpus name,
# worker protocol 2), then sends an unsolicited status reply. It serves every reconnect
# the same way and counts connections in $TH_DIR/fake.count. With a third argument
# "old" it answers as a worker of an older release (10 elements) and sends nothing more;
# with "removed", as a worker whose corpus records algorithm v3, nothing more.
cat > "$TH_DIR/fake.py" <<'PY'
import os, socket, sys, threading, time
port, countfile = int(sys.argv[1]), sys.argv[2]
mode = sys.argv[3] if len(sys.argv) > 3 else ""
old, quiet = mode == "old", mode in ("old", "removed")
alg = b"v3" if mode == "removed" else b"v5"
hello = b"*%d\r\n:6\r\n:3\r\n:4\r\n:8\r\n:0\r\n:255\r\n:0\r\n$0\r\n\r\n$2\r\n%s\r\n$0\r\n\r\n" % (10 if old else 11, alg)
if not old:
    hello += b":2\r\n"
n = 0
lock = threading.Lock()
def serve(c):
    c.settimeout(30)
    buf = b""
    try:
        while b"SHARD.HELLO" not in buf:
            d = c.recv(4096)
            if not d:
                return
            buf += d
        c.sendall(hello)
        time.sleep(0.3)
        if not quiet:
            c.sendall(b"+SURPRISE\r\n")
        while c.recv(4096):
            pass
    except OSError:
        pass
    finally:
        c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(16)
s.settimeout(1)
deadline = time.time() + 60
while time.time() < deadline:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    with lock:
        n += 1
        # replaced whole, never seen empty or half-written by the test polling it
        with open(countfile + ".tmp", "w") as f:
            f.write(str(n))
        os.replace(countfile + ".tmp", countfile)
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
th_start fake 70 python3 "$TH_DIR/fake.py" "$FAKE_PORT" "$TH_DIR/fake.count"
th_wait_port "$FAKE_PORT" 10 || th_fail "fake worker did not listen"

# (no registry reads: the unsolicited reply must be the only thing the fake sends)
th_start_coord coord 6 3 5000 "127.0.0.1:$FAKE_PORT" "" --health-interval-ms 600000 \
    --discover-interval-ms 0
COORD_CHILD=$(th_child_pid "$TH_COORD_PID")

# Wait (generously: a busy machine) until the coordinator has logged the unsolicited
# reply, then until it has connected again after dropping that connection (every
# connection the fake serves sends one, so the count keeps growing while it reconnects).
guard_wait_log() {
    local i
    for i in $(seq 1 300); do
        grep -q "sent a reply nobody asked for" "$TH_DIR/coord.log" && return 0
        sleep 0.1
    done
    return 1
}
guard_wait_log || th_fail "coordinator log does not name the unsolicited reply"
n1=$(cat "$TH_DIR/fake.count" 2>/dev/null || echo 0)
for _ in $(seq 1 300); do
    [ "$(cat "$TH_DIR/fake.count" 2>/dev/null || echo 0)" -gt "$n1" ] && break
    sleep 0.1
done
conns=$(cat "$TH_DIR/fake.count" 2>/dev/null || echo 0)
[ "$conns" -gt "$n1" ] || th_fail "coordinator did not reconnect after the unsolicited reply ($conns connections)"
kill -0 "$COORD_CHILD" 2>/dev/null || th_fail "coordinator died"
pong=$(timeout 5 redis-cli -p "$TH_COORD_PORT" PING)
[ "$pong" = "PONG" ] || th_fail "coordinator does not answer PING after the unsolicited reply: '$pong'"
echo "test_guard: coordinator survived $conns unsolicited replies and kept serving"

# ---- a worker of the older protocol: refused before the coordinator is ready
OLD_PORT=$(th_free_port)
th_start fakeold 70 python3 "$TH_DIR/fake.py" "$OLD_PORT" "$TH_DIR/fakeold.count" old
th_wait_port "$OLD_PORT" 10 || th_fail "old fake worker did not listen"
timeout 60 "$TH_BIN/simhash-coordinator" --bind 127.0.0.1 --port "$(th_free_port)" --blocks 6 \
    --distance 3 --timeout-ms 5000 --worker "127.0.0.1:$OLD_PORT" \
    --discover-interval-ms 0 >"$TH_DIR/coordold.log" 2>&1
rc=$?
[ "$rc" = 2 ] || th_fail "coordinator over an older release's worker exited $rc, not 2"
grep -q "names no worker protocol in SHARD.HELLO (an older release's).*run workers and coordinators of one release" \
    "$TH_DIR/coordold.log" ||
    th_fail "coordinator log does not say why: $(tail -n 3 "$TH_DIR/coordold.log")"
echo "test_guard: an older release's worker refused (exit 2, reason named)"

# ---- a worker whose corpus records a removed algorithm: refused, with or without an
# algorithm configured on the coordinator
RM_PORT=$(th_free_port)
th_start fakerm 70 python3 "$TH_DIR/fake.py" "$RM_PORT" "$TH_DIR/fakerm.count" removed
th_wait_port "$RM_PORT" 10 || th_fail "removed-algorithm fake worker did not listen"
for conf in "" "--fingerprint-algorithm v5"; do
    # shellcheck disable=SC2086
    timeout 60 "$TH_BIN/simhash-coordinator" --bind 127.0.0.1 --port "$(th_free_port)" --blocks 6 \
        --distance 3 --timeout-ms 5000 --worker "127.0.0.1:$RM_PORT" \
        --discover-interval-ms 0 $conf >"$TH_DIR/coordrm.log" 2>&1
    rc=$?
    [ "$rc" = 2 ] || th_fail "coordinator ($conf) over a v3 worker exited $rc, not 2"
    grep -q "corpus of fingerprint algorithm v3, which was removed (v5 is its successor)" \
        "$TH_DIR/coordrm.log" || th_fail "coordinator ($conf) log: $(tail -n 3 "$TH_DIR/coordrm.log")"
    grep -q "simhash export.*simhash load" "$TH_DIR/coordrm.log" ||
        th_fail "coordinator ($conf) log does not name the rebuild: $(tail -n 3 "$TH_DIR/coordrm.log")"
done
echo "test_guard: a worker of a removed algorithm refused (exit 2, rebuild named)"
