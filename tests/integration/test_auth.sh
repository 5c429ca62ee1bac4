#!/usr/bin/env bash
# test_auth.sh: access control of the daemons. redis-server with an ACL user and the
# default user disabled; simhash-shard workers log in with redis-user +
# redis-password-file; simhash-coordinator requires a password (password-file).
# Checks: without AUTH every SIMHASH.* command (and COMMAND) is
# refused with -NOAUTH and changes nothing (unknown commands get an error), PING and
# QUIT are allowed; workers require their own password (password-file), which the
# coordinator sends from worker-password-file; a wrong AUTH leaves the
# client unauthenticated; `AUTH default <pw>` and `AUTH <pw>` work; secrets are never
# accepted on the command line and never appear in a process's arguments or logs; a
# worker with a wrong Redis password or user exits 1, redis-user without a password
# file is refused at start; both daemons listen on 127.0.0.1 only when no bind is given.
set -u
. "$(dirname "$0")/lib.sh"
th_init auth
th_need_bins simhash-shard simhash-coordinator
B=6 K=3
RPW="r3dis-Secret-77"
CPW="co0rd-Secret-42"

# ---- redis with an ACL user only
rport=$(th_free_port)
mkdir -p "$TH_DIR/redis"
th_start redis 600 redis-server --bind 127.0.0.1 --port "$rport" --dir "$TH_DIR/redis" \
    --save '' --appendonly no --daemonize no \
    --user default off --user simhash on ">$RPW" '~*' '&*' '+@all' '-@dangerous' '+info' \
    '+config|get' '+cluster|nodes'
i=0
while [ "$(timeout 2 redis-cli -h 127.0.0.1 -p "$rport" --user simhash --pass "$RPW" \
            --no-auth-warning ping 2>/dev/null)" != PONG ]; do
    i=$((i + 1))
    [ $i -lt 200 ] || th_fail "redis-server with ACL did not answer PONG"
    sleep 0.05
done
case "$(timeout 2 redis-cli -h 127.0.0.1 -p "$rport" ping 2>&1)" in
    *NOAUTH*|*WRONGPASS*|*"no password"*|*"not authenticated"*|*disabled*) ;;
    *) th_fail "redis default user is not disabled: $(timeout 2 redis-cli -h 127.0.0.1 -p "$rport" ping 2>&1)";;
esac

printf '%s\n' "$RPW" >"$TH_DIR/redis.pw"
printf 'wrong-password\n' >"$TH_DIR/redis-wrong.pw"
printf '%s\n' "$CPW" >"$TH_DIR/coord.pw"
WPW="w0rker-Secret-13"
printf '%s\n' "$WPW" >"$TH_DIR/worker.pw"
chmod 600 "$TH_DIR"/*.pw

# ---- start-up refusals of simhash-shard
sbin="$TH_BIN/simhash-shard"
out=$(timeout 10 "$sbin" --redis-port "$rport" --redis-password "$RPW" --port 0 2>&1)
[ $? -eq 2 ] || th_fail "--redis-password on the command line accepted"
case "$out" in *redis-password-file*) ;; *) th_fail "--redis-password message: '$out'";; esac
out=$(timeout 10 "$sbin" --redis-port "$rport" --redis-user simhash --port 0 2>&1)
[ $? -eq 2 ] || th_fail "redis-user without a password file accepted"
case "$out" in *redis-user*redis-password-file*) ;; *) th_fail "redis-user message: '$out'";; esac
out=$(timeout 20 "$sbin" --redis-port "$rport" --redis-user simhash \
        --redis-password-file "$TH_DIR/redis-wrong.pw" --port 0 2>&1)
rc=$?
[ $rc -eq 1 ] || th_fail "wrong Redis password: exit $rc, want 1 ($out)"
case "$out" in *AUTH*|*WRONGPASS*) ;; *) th_fail "wrong Redis password message: '$out'";; esac
case "$out" in *wrong-password*) th_fail "the password appears in the message: '$out'";; esac
out=$(timeout 20 "$sbin" --redis-port "$rport" --redis-password-file "$TH_DIR/redis.pw" \
        --port 0 2>&1)
rc=$?
[ $rc -eq 1 ] || th_fail "password without the ACL user (default user disabled): exit $rc, want 1"
out=$(timeout 10 "$TH_BIN/simhash-coordinator" --worker 127.0.0.1:1 --password "$CPW" 2>&1)
[ $? -eq 2 ] || th_fail "coordinator --password accepted"
case "$out" in *"$CPW"*) th_fail "the coordinator echoes the password: '$out'";; esac

# ---- workers and coordinator, bind not given: 127.0.0.1 only
listen_addrs() { ss -Hltn "sport = :$1" | awk '{print $4}' | sort -u | tr '\n' ' '; }
start_shard_nobind() {
    local name=$1 range=$2 port
    port=$(th_free_port)
    th_start "$name" 600 "$sbin" --port "$port" --redis-host 127.0.0.1 --redis-port "$rport" \
        --redis-user simhash --redis-password-file "$TH_DIR/redis.pw" --shards "$range" \
        --blocks $B --distance $K --password-file "$TH_DIR/worker.pw"
    th_wait_port "$port" 20 || th_fail "simhash-shard $name did not listen on port $port"
    TH_SHARD_PORT=$port
    TH_SHARD_PID=$TH_PID
}
start_shard_nobind shard-a 0-127
a=$TH_SHARD_PORT
a_pid=$TH_SHARD_PID
start_shard_nobind shard-b 128-255
b=$TH_SHARD_PORT
cport=$(th_free_port)
th_start coord 600 "$TH_BIN/simhash-coordinator" --port "$cport" --blocks $B --distance $K \
    --worker "127.0.0.1:$a" --worker "127.0.0.1:$b" --password-file "$TH_DIR/coord.pw" \
    --worker-password-file "$TH_DIR/worker.pw"
cpid_t=$TH_PID
th_wait_port "$cport" 20 || th_fail "coordinator did not listen"
cpid=$(th_child_pid "$cpid_t")
apid=$(th_child_pid "$a_pid")
for p in "$cport" "$a"; do
    addrs=$(listen_addrs "$p")
    [ "$addrs" = "127.0.0.1:$p " ] || th_fail "port $p listens on '$addrs', want 127.0.0.1 only"
done

# secrets are in no process's arguments
for p in "$cpid" "$apid"; do
    args=$(tr '\0' ' ' <"/proc/$p/cmdline")
    case "$args" in *"$RPW"*|*"$CPW"*|*"$WPW"*) th_fail "a secret in the arguments of $p: $args";; esac
done

cli() { timeout 10 redis-cli -h 127.0.0.1 -p "$cport" "$@" 2>&1; }
acli() { timeout 10 redis-cli -h 127.0.0.1 -p "$cport" --no-auth-warning -a "$CPW" "$@" 2>&1; }
i=0
until acli SIMHASH.INFO | tr -d '\r' | grep -qx routing:ok; do
    i=$((i + 1))
    [ $i -lt 200 ] || th_fail "workers not up through the ACL user: $(acli SIMHASH.INFO | grep worker)"
    sleep 0.05
done
acli SIMHASH.INFO | tr -d '\r' | grep -qx auth_required:yes || th_fail "INFO: auth_required:yes missing"
# the workers require their own password: the coordinator logs in with
# worker-password-file (routing:ok above); anyone else gets -NOAUTH
case "$(timeout 5 redis-cli -h 127.0.0.1 -p "$a" SHARD.HELLO 2>&1)" in
    NOAUTH*) ;; *) th_fail "worker without AUTH: $(timeout 5 redis-cli -h 127.0.0.1 -p "$a" SHARD.HELLO 2>&1)";;
esac
[ "$(timeout 5 redis-cli -h 127.0.0.1 -p "$a" PING 2>&1)" = PONG ] || th_fail "worker PING before AUTH"
[ "$(timeout 5 redis-cli -h 127.0.0.1 -p "$a" --no-auth-warning -a "$WPW" SHARD.HELLO | head -1)" = 6 ] ||
    th_fail "worker SHARD.HELLO after AUTH"

cat >"$TH_DIR/auth.py" <<'PY'
import socket, sys
port, pw = int(sys.argv[1]), sys.argv[2].encode()

from resp_client import C, enc

def fail(m):
    print("FAIL", m); sys.exit(1)

fp = 0x0F0F0F0F12345678
refused = [("SIMHASH.ADD", fp, "doc1"), ("SIMHASH.DEL", fp), ("SIMHASH.QUERY", fp),
           ("SIMHASH.CHECK", fp, "doc2"), ("SIMHASH.CHECKTEXT", "doc3", "some text"),
           ("SIMHASH.FINGERPRINT", "text"), ("SIMHASH.EXTRACT", "text"), ("SIMHASH.INFO",), ("COMMAND",),
           ("COMMAND", "COUNT"), ("simhash.add", fp, "doc4")]
c = C(port)
for cmd in refused:
    r = c.call(*cmd)
    if not (isinstance(r, tuple) and r[1].startswith("NOAUTH")): fail("%r before AUTH: %r" % (cmd, r))
# unknown commands are errors too (as in Redis, "unknown command" before NOAUTH)
r = c.call("NOSUCHCMD", "x")
if not (isinstance(r, tuple) and ("NOAUTH" in r[1] or "unknown command" in r[1])): fail("unknown: %r" % (r,))
# pipelined: all refused, in order, connection kept
c.s.sendall(b"".join(enc(*cmd) for cmd in refused))
for cmd in refused:
    r = c.reply()
    if not (isinstance(r, tuple) and r[1].startswith("NOAUTH")): fail("pipelined %r: %r" % (cmd, r))
# wrong passwords and users
for i, args in enumerate([("AUTH", "nope"), ("AUTH", pw + b"x"), ("AUTH", pw[:-1]), ("AUTH", b""),
             ("AUTH", "someone", pw), ("AUTH", "default", "nope")]):
    if i % 2 == 0:
        c = C(port)     # a connection is closed at its third failed AUTH (test_hardening)
    r = c.call(*args)
    if not (isinstance(r, tuple) and r[1].startswith("WRONGPASS")): fail("%r: %r" % (args, r))
    r = c.call("SIMHASH.QUERY", fp)
    if not (isinstance(r, tuple) and r[1].startswith("NOAUTH")): fail("after %r: %r" % (args, r))
r = c.call("AUTH")
if not (isinstance(r, tuple) and "wrong number of arguments" in r[1]): fail("AUTH alone: %r" % (r,))
if c.call("AUTH", "default", pw) != "OK": fail("AUTH default pw")
if c.call("SIMHASH.QUERY", fp) != []: fail("the ADD before AUTH changed the corpus")
# a later wrong AUTH logs the client out again
r = c.call("AUTH", "nope")
if not (isinstance(r, tuple) and r[1].startswith("WRONGPASS")): fail("wrong AUTH after login")
r = c.call("SIMHASH.INFO")
if not (isinstance(r, tuple) and r[1].startswith("NOAUTH")): fail("still logged in after a wrong AUTH")
if c.call("AUTH", pw) != "OK": fail("AUTH pw")
if c.call("SIMHASH.ADD", fp, "doc1") != 1: fail("ADD after AUTH")
r = c.call("SIMHASH.QUERY", fp)
if not (isinstance(r, list) and len(r) == 1 and r[0][2] == [b"doc1"]): fail("QUERY after AUTH: %r" % (r,))
if c.call("SIMHASH.DEL", fp) != 1: fail("DEL after AUTH")
# PING is allowed before AUTH (a health check needs no secret) and does not log in
p = C(port)
if p.call("PING") != "PONG": fail("PING before AUTH")
r = p.call("SIMHASH.QUERY", fp)
if not (isinstance(r, tuple) and r[1].startswith("NOAUTH")): fail("after PING: %r" % (r,))
# QUIT is allowed before AUTH and closes
d = C(port)
if d.call("QUIT") != "OK": fail("QUIT before AUTH")
try:
    x = d.s.recv(10)
    if x: fail("data after QUIT: %r" % x)
except OSError:
    pass
# AUTH in the same write as the commands after it
e = C(port)
e.s.sendall(enc("AUTH", pw) + enc("SIMHASH.QUERY", fp) + enc("QUIT"))
if e.reply() != "OK" or e.reply() != [] or e.reply() != "OK": fail("AUTH pipelined with commands")
print("PASS")
PY
PYTHONPATH="$TH_SRC/tests/tools" timeout 60 python3 "$TH_DIR/auth.py" "$cport" "$CPW" || th_fail "auth script"

# the logs hold neither secret
if grep -l -e "$RPW" -e "$CPW" "$TH_DIR"/*.log >/dev/null 2>&1; then
    th_fail "a secret in the logs: $(grep -l -e "$RPW" -e "$CPW" "$TH_DIR"/*.log)"
fi
grep -q "wrong password" "$TH_DIR/coord.log" || th_fail "wrong passwords not logged"
th_log "PASS"
