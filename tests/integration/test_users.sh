#!/usr/bin/env bash
# test_users.sh: users and roles of the daemons (aclfile, docs/security.md#users-and-roles).
# A Redis, a worker whose users file gives the coordinator's user (worker-user) the role
# @shard and a monitoring user @read, and a coordinator with a reader, a writer with
# two passwords and an admin with a SHA-256 digest. Checks, with redis-cli and redis-py:
# the reader QUERYs and gets -NOPERM (Redis's wording) on ADD and DEL; the writer ADDs
# but cannot DEL; the admin does everything; both passwords of the writer work; wrong
# passwords get -WRONGPASS; HELLO 3 AUTH user pass; the NOPERM counter in INFO and
# /metrics grows; SIGHUP with a password removed refuses the old one and takes the new
# one, closes the open connection of a removed user and applies changed rules to open
# connections; a broken file on SIGHUP keeps the users and INFO says why; a broken file
# at start exits 2 naming the line; the example files in deploy/ load.
set -u
. "$(dirname "$0")/lib.sh"
th_init users
th_need_bins simhash-shard simhash-coordinator
B=6 K=3
PY=/usr/bin/python3

WPW="w0rker-Secret-13"
printf '%s\n' "$WPW" >"$TH_DIR/worker.pw"
chmod 600 "$TH_DIR/worker.pw"
cat >"$TH_DIR/worker.acl" <<ACL
# the coordinator logs in as its own user (worker-user), role @shard
user coordinator on >$WPW +@shard
user mon on >m0n-pw +@read
ACL
ADMIN_HASH=$(printf '%s' 'adm1n-pw' | sha256sum | cut -d' ' -f1)
write_coord_acl() {      # $1: the writer's passwords, $2: the reader's rules
    cat >"$TH_DIR/coord.acl" <<ACL
user reader on >r3ad-pw $2
user writer on $1 +@write
user admin on #$ADMIN_HASH ~* &* +@all
user temp on >t3mp-pw +@read
user sleeper off >sl33p-pw +@all
ACL
}
write_coord_acl '>wr1te-old >wr1te-new' '+@read'

# ---- a broken file at start: exit 2, the line named
printf 'user ok on >x +@read\nuser bad on >y +@bogus\n' >"$TH_DIR/bad.acl"
out=$(timeout 10 "$TH_BIN/simhash-coordinator" --worker 127.0.0.1:1 --port "$(th_free_port)" \
        --aclfile "$TH_DIR/bad.acl" 2>&1)
rc=$?
[ $rc -eq 2 ] || th_fail "broken aclfile at start: exit $rc, want 2 ($out)"
case "$out" in *"line 2"*bogus*) ;; *) th_fail "broken aclfile message: '$out'";; esac
printf 'user w on >x +shard.nosuch\n' >"$TH_DIR/bad2.acl"
out=$(timeout 10 "$TH_BIN/simhash-shard" --port "$(th_free_port)" --redis-port 1 --aclfile "$TH_DIR/bad2.acl" 2>&1)
rc=$?
[ $rc -eq 2 ] || th_fail "worker, unknown command in aclfile: exit $rc, want 2 ($out)"
case "$out" in *"line 1"*"unknown command"*) ;; *) th_fail "worker aclfile message: '$out'";; esac
out=$(timeout 10 "$TH_BIN/simhash-coordinator" --worker 127.0.0.1:1 --worker-user coordinator 2>&1)
[ $? -eq 2 ] || th_fail "worker-user without worker-password-file accepted"
case "$out" in *worker-user*worker-password-file*) ;; *) th_fail "worker-user message: '$out'";; esac

# ---- the deployment
th_start_redis r
th_start_shard w "$TH_REDIS_PORT" 0-255 $B $K "" --aclfile "$TH_DIR/worker.acl"
wport=$TH_SHARD_PORT
mport=$(th_free_port)
th_start_coord c $B $K 2000 "127.0.0.1:$wport" "" --aclfile "$TH_DIR/coord.acl" \
    --worker-password-file "$TH_DIR/worker.pw" --worker-user coordinator --metrics-port "$mport"
port=$TH_COORD_PORT cpid=$(th_child_pid "$TH_COORD_PID")

cli() { local u=$1 p=$2; shift 2; timeout 10 redis-cli -h 127.0.0.1 -p "$port" --user "$u" --pass "$p" --no-auth-warning "$@" 2>&1; }
expect() {   # expect WHAT PATTERN OUTPUT
    case "$3" in $2) ;; *) th_fail "$1: got '$3'";; esac
}

expect "no AUTH" '*NOAUTH*' "$(timeout 10 redis-cli -h 127.0.0.1 -p "$port" SIMHASH.QUERY 1 2>&1)"
expect "reader QUERY" '' "$(cli reader r3ad-pw SIMHASH.QUERY 12345)"
expect "reader INFO" '*acl_users:5*' "$(cli reader r3ad-pw INFO stats)"
expect "reader CLIENT INFO" '* user=reader *' "$(cli reader r3ad-pw CLIENT INFO)"
expect "SIMHASH.INFO auth_required" '*auth_required:yes*' "$(cli reader r3ad-pw SIMHASH.INFO)"
expect "reader ADD" "NOPERM User reader has no permissions to run the 'simhash.add' command" \
    "$(cli reader r3ad-pw SIMHASH.ADD 12345 doc-r)"
expect "reader DEL" "NOPERM User reader has no permissions to run the 'simhash.del' command" \
    "$(cli reader r3ad-pw SIMHASH.DEL 12345)"
expect "writer ADD (old password)" '[01]' "$(cli writer wr1te-old SIMHASH.ADD 12345 doc-a)"
expect "writer ADD (new password)" '[01]' "$(cli writer wr1te-new SIMHASH.ADD 12345 doc-b)"
expect "writer DEL" '*NOPERM*simhash.del*' "$(cli writer wr1te-new SIMHASH.DEL 12345 doc-a)"
expect "reader sees the writes" '*doc-a*' "$(cli reader r3ad-pw SIMHASH.QUERY 12345)"
expect "admin DEL" '1' "$(cli admin adm1n-pw SIMHASH.DEL 12345 doc-a)"
expect "admin CONFIG" '*maxclients*' "$(cli admin adm1n-pw CONFIG GET maxclients)"
expect "reader CONFIG" '*NOPERM*config*' "$(cli reader r3ad-pw CONFIG GET maxclients)"
expect "wrong password" '*WRONGPASS invalid username-password pair or user is disabled.*' \
    "$(cli reader wrong SIMHASH.QUERY 1)"
expect "disabled user" '*WRONGPASS*' "$(cli sleeper sl33p-pw SIMHASH.QUERY 1)"
expect "unknown user" '*WRONGPASS*' "$(cli nobody r3ad-pw SIMHASH.QUERY 1)"
expect "AUTH password, no default user" '*WRONGPASS*' \
    "$(timeout 10 redis-cli -h 127.0.0.1 -p "$port" --pass r3ad-pw --no-auth-warning PING 2>&1)"
expect "HELLO 3 AUTH" '*proto*3*' \
    "$(printf 'HELLO 3 AUTH reader r3ad-pw\nSIMHASH.QUERY 12345\n' | timeout 10 redis-cli -h 127.0.0.1 -p "$port" 2>&1)"

# the worker: the coordinator's user has @shard (the ADDs above went through it); the
# monitoring user reads INFO but may not send SHARD.ADD
wcli() { timeout 10 redis-cli -h 127.0.0.1 -p "$wport" --user mon --pass m0n-pw --no-auth-warning "$@" 2>&1; }
expect "worker mon SHARD.INFO" '*' "$(wcli SHARD.INFO)"
expect "worker mon SHARD.ADD" "NOPERM User mon has no permissions to run the 'shard.add' command" \
    "$(wcli SHARD.ADD 1 0)"

info_field() { cli admin adm1n-pw INFO stats | tr -d '\r' | sed -n "s/^$1://p"; }
denied=$(info_field acl_denied)
[ "$denied" -eq 4 ] || th_fail "acl_denied is $denied after 4 refusals"
cli reader r3ad-pw SIMHASH.DEL 1 >/dev/null
[ "$(info_field acl_denied)" -eq $((denied + 1)) ] || th_fail "acl_denied did not grow"
metrics=$($PY -c 'import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read().decode())' "$mport") ||
    th_fail "metrics not served"
case "$metrics" in *"simhash_acl_denied_total $((denied + 1))"*) ;;
    *) th_fail "metrics: simhash_acl_denied_total: $(printf '%s\n' "$metrics" | grep acl)";; esac

# ---- redis-py: roles, and connections held open across the reloads
$PY - "$port" "$cpid" "$TH_DIR" <<'PYEOF' || th_fail "redis-py checks"
import os, signal, sys, time
import redis
port, pid, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def conn(user, pw):
    return redis.Redis(host="127.0.0.1", port=port, username=user, password=pw,
                       single_connection_client=True, socket_timeout=10)

def wrongpass(user, pw):
    """True when AUTH user pw is refused with Redis's -WRONGPASS."""
    try:
        conn(user, pw).ping()
        return False
    except redis.exceptions.ResponseError as e:
        return str(e) == "WRONGPASS invalid username-password pair or user is disabled."

def info():
    return conn("admin", "adm1n-pw").info("stats")

def hup_and_wait(field, before):
    os.kill(pid, signal.SIGHUP)
    for _ in range(200):
        if info()[field] > before:
            return
        time.sleep(0.05)
    raise SystemExit("SIGHUP not applied (%s)" % field)

reader, writer, temp = conn("reader", "r3ad-pw"), conn("writer", "wr1te-old"), conn("temp", "t3mp-pw")
assert reader.execute_command("SIMHASH.QUERY", 777) == []
try:
    reader.execute_command("SIMHASH.ADD", 777, "py-doc")
    raise SystemExit("reader ADD accepted")
except redis.exceptions.NoPermissionError as e:
    assert "has no permissions to run the 'simhash.add' command" in str(e), e
assert writer.execute_command("SIMHASH.ADD", 777, "py-doc") in (0, 1)
temp.ping()

# rotation: writer's old password removed, reader gets @write, temp removed
base = open(d + "/coord.acl").read()
new = base.replace(">wr1te-old ", "").replace("r3ad-pw +@read", "r3ad-pw +@write")
new = "\n".join(l for l in new.splitlines() if not l.startswith("user temp ")) + "\n"
open(d + "/coord.acl", "w").write(new)
hup_and_wait("acl_reloads", info().get("acl_reloads", 0))
if not wrongpass("writer", "wr1te-old"):
    raise SystemExit("the removed password still works")
assert conn("writer", "wr1te-new").ping()
# the reader's open connection runs under the new rules at once
assert reader.execute_command("SIMHASH.ADD", 778, "py-doc2") in (0, 1)
# the removed user's connection was closed
try:
    temp.ping()
    raise SystemExit("the connection of a removed user stays open")
except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
    pass

# a broken file: the users stay, INFO says why
open(d + "/coord.acl", "w").write(new + "user broken on >x +@nosuchrole\n")
hup_and_wait("acl_reload_errors", info().get("acl_reload_errors", 0))
st = info()
last = str(st["acl_last_reload"])
assert "failed" in last and "line 5" in last and "nosuchrole" in last, last
assert conn("writer", "wr1te-new").ping()
assert conn("reader", "r3ad-pw").execute_command("SIMHASH.QUERY", 777)
if not wrongpass("writer", "wr1te-old"):
    raise SystemExit("a failed reload brought an old password back")
print("redis-py ok")
PYEOF
grep -q "aclfile.*line 5" "$TH_DIR/c.log" || th_fail "the failed reload is not in the log"

# ---- the example files in deploy/ load, and their users are off until edited
th_start_coord cx $B $K 2000 "127.0.0.1:$wport" "" --aclfile "$TH_SRC/deploy/coordinator-users.acl"
expect "deploy/coordinator-users.acl: users off" '*WRONGPASS*' \
    "$(timeout 10 redis-cli -h 127.0.0.1 -p "$TH_COORD_PORT" --user reader --pass CHANGE-ME-reader --no-auth-warning PING 2>&1)"
th_stop "$TH_COORD_PID"
th_start_shard wx "$TH_REDIS_PORT" 0-255 $B $K "" --aclfile "$TH_SRC/deploy/shard-users.acl"
expect "deploy/shard-users.acl: users off" '*WRONGPASS*' \
    "$(timeout 10 redis-cli -h 127.0.0.1 -p "$TH_SHARD_PORT" --user monitor --pass CHANGE-ME-monitor --no-auth-warning PING 2>&1)"
th_stop "$TH_SHARD_PID"
th_log "ok"
