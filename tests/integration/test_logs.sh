#!/usr/bin/env bash
# test_logs.sh: the log formats and SIGHUP. A log file gets ISO 8601 times with the UTC
# offset; stderr that is journald's stream (JOURNAL_STREAM names its device:inode)
# gets "<priority>" prefixes and no time; `syslog yes` sends every message to
# /dev/log (checked in a private mount namespace whose /dev/log is a socket this test
# reads); SIGHUP reopens a log file logrotate moved away and reloads loglevel and the
# slow log settings from the config file; sd_notify tells a NOTIFY_SOCKET (as systemd
# gives Type=notify units) READY, RELOADING and STOPPING; a storm of TERMs, from the
# moment a daemon's port takes a connection, neither finds it without its signal
# handlers nor cuts its teardown short. Real processes, stopped by PID.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
th_init logs
th_need_bins simhash-shard simhash-coordinator

th_start_redis redis
RPORT=$TH_REDIS_PORT
th_start_shard w0 "$RPORT" 0-255 6 3
W0=$TH_SHARD_PORT
CPORT=$(th_free_port)
CONF="$TH_DIR/coord.conf"
LOG="$TH_DIR/coord-file.log"
cat >"$CONF" <<EOF
bind 127.0.0.1
port $CPORT
worker 127.0.0.1:$W0
logfile $LOG
loglevel info
slowlog-log-slower-than 10000
slowlog-max-len 128
EOF
th_start coordconf 600 "$TH_BIN/simhash-coordinator" --config "$CONF"
CPID=$TH_PID
th_wait_port "$CPORT" 20 || th_fail "coordinator did not listen"
cli() { timeout 30 redis-cli -h 127.0.0.1 -p "$CPORT" "$@"; }
wait_log() {  # wait_log FILE PATTERN: up to 10 s for a line matching PATTERN
    local i=0
    until grep -Eq -- "$2" "$1" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 200 ] || th_fail "no /$2/ in $1: $(tail -5 "$1" 2>/dev/null)"; sleep 0.05
    done
}

# ---- ISO 8601 with the UTC offset ----
wait_log "$LOG" 'listening on'
head -n 1 "$LOG" | grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{2}:[0-9]{2} \[[0-9]+\] I ' ||
    th_fail "log line not ISO 8601 with offset: $(head -n 1 "$LOG")"
th_log "ok: ISO 8601 times with the UTC offset"

# ---- SIGHUP: logrotate, then reload ----
cpid=$(th_child_pid "$CPID")
[ -n "$cpid" ] || th_fail "no coordinator pid"
mv "$LOG" "$LOG.1"
kill -HUP "$cpid"
wait_log "$LOG" 'SIGHUP: log file reopened'
th_log "ok: SIGHUP reopens the moved log file"
sed -i 's/^loglevel info/loglevel debug/; s/^slowlog-log-slower-than 10000/slowlog-log-slower-than 0/; s/^slowlog-max-len 128/slowlog-max-len 2/' "$CONF"
kill -HUP "$cpid"
wait_log "$LOG" 'configuration reloaded: loglevel debug, syslog no, slowlog-log-slower-than 0, slowlog-max-len 2'
for i in 1 2 3 4; do cli PING >/dev/null; done
[ "$(cli SLOWLOG LEN)" = 2 ] || th_fail "after SIGHUP the slow log should keep 2 entries: $(cli SLOWLOG LEN)"
th_log "ok: SIGHUP reloads loglevel and the slow log settings"
echo 'loglevel nonsense' >>"$CONF"
kill -HUP "$cpid"
wait_log "$LOG" 'SIGHUP: the configuration does not load'
kill -0 "$cpid" 2>/dev/null || th_fail "a bad config at SIGHUP stopped the coordinator"
[ "$(cli PING)" = PONG ] || th_fail "coordinator stopped answering after a bad reload"
th_log "ok: a config that does not load at SIGHUP changes nothing"
th_stop "$CPID"

# ---- journald's stream: <priority> prefixes ----
JLOG="$TH_DIR/journal.log"
: >"$JLOG"
JPORT=$(th_free_port)
(
    exec 2>>"$JLOG"
    JOURNAL_STREAM="$(stat -c '%d:%i' "$JLOG")" exec timeout 600 "$TH_BIN/simhash-coordinator" \
        --bind 127.0.0.1 --port "$JPORT" --worker "127.0.0.1:$W0"
) &
JPID=$!
TH_PIDS+=("$JPID")
wait_log "$JLOG" 'listening on'
grep -q '^<6>I main\.c:[0-9]* simhash-coordinator .* listening on' "$JLOG" ||
    th_fail "journald lines lack the <6> prefix: $(head -3 "$JLOG")"
grep -Eq '^[0-9]{4}-' "$JLOG" && th_fail "journald lines carry a time stamp: $(head -3 "$JLOG")"
th_stop "$JPID"
th_log "ok: <priority> prefixes for journald"

# ---- syslog yes: messages reach /dev/log ----
if ! command -v unshare >/dev/null || ! unshare -m --propagation private true 2>/dev/null; then
    th_fail "unshare -m is needed for the syslog check (run as root)"
fi
SPORT=$(th_free_port)
cat >"$TH_DIR/syslog-ns.sh" <<EOF
set -eu
D="$TH_DIR/dev"
mkdir -p "\$D"
for f in null zero urandom random; do touch "\$D/\$f"; mount --bind "/dev/\$f" "\$D/\$f"; done
python3 - "\$D/log" "$TH_DIR/syslog.out" <<'PYEOF' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(1.0)
out = open(sys.argv[2], "a")
end = time.time() + 30
while time.time() < end:
    try:
        out.write(s.recv(65536).decode("utf-8", "replace") + "\n"); out.flush()
    except socket.timeout:
        pass
PYEOF
LISTENER=\$!
while [ ! -S "\$D/log" ]; do sleep 0.05; done
mount --bind "\$D" /dev
timeout 20 "$TH_BIN/simhash-coordinator" --bind 127.0.0.1 --port $SPORT --worker 127.0.0.1:$W0 --syslog yes 2>/dev/null &
C=\$!
for i in \$(seq 1 100); do grep -q 'listening on' "$TH_DIR/syslog.out" 2>/dev/null && break; sleep 0.1; done
kill -TERM \$C 2>/dev/null; wait \$C 2>/dev/null || true
kill \$LISTENER 2>/dev/null; wait \$LISTENER 2>/dev/null || true
EOF
: >"$TH_DIR/syslog.out"
timeout 60 unshare -m --propagation private bash "$TH_DIR/syslog-ns.sh" >"$TH_DIR/syslog-ns.log" 2>&1 ||
    th_fail "syslog namespace run failed: $(tail -5 "$TH_DIR/syslog-ns.log")"
grep -Eq '^<30>.*simhash-coordinator\[[0-9]+\]: I main\.c:[0-9]+ .*listening on' "$TH_DIR/syslog.out" ||
    th_fail "syslog did not get the startup line (facility daemon, info = <30>): $(head -3 "$TH_DIR/syslog.out")"
th_log "ok: syslog yes sends to /dev/log (daemon.info)"

# ---- sd_notify (Type=notify units): READY, RELOADING on SIGHUP, STOPPING ----
NS="$TH_DIR/notify.sock"
timeout 60 python3 - "$NS" "$TH_DIR/notify.out" <<'PYEOF' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(0.5)
out = open(sys.argv[2], "a")
end = time.time() + 50
while time.time() < end:
    try:
        out.write(s.recv(4096).decode() + "\n"); out.flush()
    except socket.timeout:
        pass
PYEOF
NPID=$!
TH_PIDS+=("$NPID")
i=0; until [ -S "$NS" ]; do i=$((i + 1)); [ $i -lt 200 ] || th_fail "notify socket not created"; sleep 0.05; done
NPORT=$(th_free_port)
NOTIFY_SOCKET="$NS" th_start notified 600 "$TH_BIN/simhash-coordinator" --bind 127.0.0.1 --port "$NPORT" \
    --worker "127.0.0.1:$W0"
NCPID=$TH_PID
wait_log "$TH_DIR/notify.out" '^READY=1'
kill -HUP "$(th_child_pid "$NCPID")"
wait_log "$TH_DIR/notify.out" '^RELOADING=1'
[ "$(grep -c '^READY=1' "$TH_DIR/notify.out")" -ge 1 ] || th_fail "no READY=1"
i=0; until [ "$(grep -c '^READY=1' "$TH_DIR/notify.out")" -ge 2 ]; do
    i=$((i + 1)); [ $i -lt 200 ] || th_fail "no READY=1 after the reload: $(cat "$TH_DIR/notify.out")"; sleep 0.05
done
th_stop "$NCPID"
wait_log "$TH_DIR/notify.out" '^STOPPING=1'
kill "$NPID" 2>/dev/null
th_log "ok: sd_notify READY=1, RELOADING=1 then READY=1 on SIGHUP, STOPPING=1"
# ---- signals while stopping: `timeout` sends TERM to a daemon and then to its process
# group, an operator presses Ctrl-C twice; the teardown must run to its end (exit 0,
# the last log line) however many come. A Python parent sends TERM every 0.1 ms from
# the first until the process has exited, 10 times per daemon.
storm() {   # storm NAME LINE CMD..: CMD (given --port P) under a TERM storm
    local name=$1 line=$2
    shift 2
    timeout 120 python3 - "$line" "$@" >"$TH_DIR/storm-$name.out" 2>&1 <<'PYEOF' ||
import os, signal, socket, subprocess, sys, time
line, cmd = sys.argv[1], sys.argv[2:]
for trial in range(10):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    p = subprocess.Popen(cmd + ["--port", str(port)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    end = time.time() + 20
    while time.time() < end and p.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            break
        except OSError:
            time.sleep(0.005)   # the storm begins as soon as the port takes a connection
    sent = 0
    while p.poll() is None and sent < 200000:
        os.kill(p.pid, signal.SIGTERM)
        sent += 1
        time.sleep(0.0001)
    p.wait(30)
    log = p.stderr.read().decode("utf-8", "replace")
    if p.returncode != 0 or line not in log:
        sys.exit("trial %d: exit %s after %d TERMs, %r %s; the log ends: %s" %
                 (trial, p.returncode, sent, line, "logged" if line in log else "not logged",
                  log[-300:]))
print("10 trials: exit 0 and %r logged" % line)
PYEOF
        th_fail "$name under a TERM storm: $(head -n 3 "$TH_DIR/storm-$name.out")"
    th_log "ok: $name: $(tail -n 1 "$TH_DIR/storm-$name.out")"
}
storm coordinator "simhash-coordinator stopped" "$TH_BIN/simhash-coordinator" --worker "127.0.0.1:$W0"
th_start_redis redis-storm       # its own: the storm's workers join no one's registry
storm shard "simhash-shard stopped" "$TH_BIN/simhash-shard" --redis-port "$TH_REDIS_PORT" --shards 0-255 \
    --blocks 6 --distance 3
th_log "all log checks passed"
