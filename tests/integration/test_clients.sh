#!/usr/bin/env bash
# test_clients.sh: the Redis ecosystem's own clients and tools, at their default
# options, against simhash-coordinator (and INFO against simhash-shard): redis-py
# (Debian's python3-redis under /usr/bin/python3), ioredis and node-redis (npm,
# tests/clients), redis-cli (HELLO, INFO, COMMAND DOCS, CLIENT, MULTI, interactive
# HELP through a pseudo-terminal, --stat), redis-benchmark against SIMHASH.QUERY.
# Real redis-server and workers on loopback, stopped by PID.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
th_init clients
th_need_bins simhash-shard simhash-coordinator
CLIENTS="$SIMHASH_SRC/tests/clients"
PY=/usr/bin/python3
[ -x "$PY" ] || th_fail "$PY (Debian's python3) not found"
"$PY" -c 'import redis' 2>/dev/null || th_fail "python3-redis missing (scripts/install-deps.sh installs it)"
command -v node >/dev/null || th_fail "node not found (scripts/install-deps.sh installs it)"
[ -d "$CLIENTS/node_modules/ioredis" ] && [ -d "$CLIENTS/node_modules/redis" ] ||
    th_fail "ioredis / redis (node-redis) missing in tests/clients/node_modules (scripts/install-deps.sh runs npm ci there)"

th_start_redis redis
RPORT=$TH_REDIS_PORT
th_start_shard w0 "$RPORT" 0-127 6 3
W0=$TH_SHARD_PORT
th_start_shard w1 "$RPORT" 128-255 6 3
W1=$TH_SHARD_PORT
th_start_coord coord 6 3 2000 "127.0.0.1:$W0 127.0.0.1:$W1"
P=$TH_COORD_PORT
cli() { timeout 30 redis-cli -h 127.0.0.1 -p "$P" "$@"; }
want() {  # want NAME EXPECTED ACTUAL
    [ "$2" = "$3" ] || th_fail "$1: expected [$2], got [$3]"
    th_log "ok: $1"
}
want_grep() {  # want_grep NAME PATTERN TEXT
    printf '%s\n' "$3" | grep -Eq -- "$2" || th_fail "$1: no match for /$2/ in: $(printf '%s' "$3" | head -c 2000)"
    th_log "ok: $1"
}
# wait until the coordinator has routing (SIMHASH.QUERY answers an array)
i=0
until [ "$(cli SIMHASH.QUERY 1 2>&1)" = "" ]; do
    i=$((i + 1)); [ $i -lt 200 ] || th_fail "coordinator never answered SIMHASH.QUERY"; sleep 0.05
done

# ---- handshake and connection commands (redis-cli) ----
want "HELLO 2 proto" 2 "$(cli HELLO 2 | sed -n '/^proto$/{n;p}')"
want "HELLO 3 proto" 3 "$(timeout 30 redis-cli -3 -p "$P" HELLO 3 | awk '$1=="proto"{print $2}')"
want "HELLO 4" "NOPROTO unsupported protocol version" "$(cli HELLO 4)"
want "HELLO x" "ERR Protocol version is not an integer or out of range" "$(cli HELLO x)"
want "HELLO 2 SETNAME + CLIENT GETNAME on one connection" "n1" \
    "$(printf 'HELLO 2 SETNAME n1\nCLIENT GETNAME\n' | cli | tail -n 1)"
want "CLIENT SETNAME with a space" \
    "ERR Client names cannot contain spaces, newlines or special characters." \
    "$(cli CLIENT SETNAME 'a b')"
want "SELECT 0" OK "$(cli SELECT 0)"
want_grep "SELECT 1 refused" '^ERR DB index is out of range' "$(cli SELECT 1)"
want "ECHO" "hi there" "$(cli ECHO 'hi there')"
want_grep "CLIENT LIST" '^id=[0-9]+ addr=127\.0\.0\.1:[0-9]+ laddr=127\.0\.0\.1:'"$P"' .*cmd=client' "$(cli CLIENT LIST)"
want "CLIENT NO-EVICT on" OK "$(cli CLIENT NO-EVICT on)"
want "CLIENT SETINFO LIB-NAME" OK "$(cli CLIENT SETINFO LIB-NAME mylib)"
want_grep "CLIENT bogus" "^ERR unknown subcommand" "$(cli CLIENT bogus)"
want "CONFIG GET appendonly" "$(printf 'appendonly\nno')" "$(cli CONFIG GET appendonly)"
want_grep "CONFIG SET refused" "^ERR CONFIG: only CONFIG GET" "$(cli CONFIG SET x y)"

# ---- MULTI: refused, and nothing queued after it runs ----
out=$(printf 'MULTI\nSIMHASH.ADD 77 tx-doc\nEXEC\nSIMHASH.QUERY 77 DISTANCE 0\n' | cli)
want_grep "MULTI refused with the alternative" 'pipeline\(transaction=False\)' "$out"
want_grep "command after MULTI not run" '^ERR command not run: it follows a MULTI' "$out"
want_grep "EXEC aborts" '^EXECABORT Transaction discarded' "$out"
want "the ADD inside MULTI did not happen" "" "$(cli SIMHASH.QUERY 77 DISTANCE 0)"
want "DISCARD after MULTI" OK "$(printf 'MULTI\nDISCARD\n' | cli | tail -n 1)"

# ---- COMMAND ----
n=$(cli COMMAND COUNT)
want "COMMAND LIST length = COMMAND COUNT" "$n" "$(cli COMMAND LIST | wc -l)"
want_grep "COMMAND LIST has simhash.query" '^simhash\.query$' "$(cli COMMAND LIST)"
docs=$(cli COMMAND DOCS SIMHASH.QUERY)
want_grep "COMMAND DOCS summary" '^Stored fingerprints within DISTANCE bits' "$docs"
want_grep "COMMAND DOCS LIMIT token" '^LIMIT$' "$docs"
want_grep "COMMAND INFO arity" '^-2$' "$(cli COMMAND INFO SIMHASH.QUERY)"
want "COMMAND INFO of an unknown command" "" "$(cli COMMAND INFO NOPE)"
# interactive HELP reads COMMAND DOCS: run redis-cli on a pseudo-terminal
helpout=$(timeout 60 "$PY" - "$P" <<'PYEOF'
import os, pty, re, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execvp("redis-cli", ["redis-cli", "-p", sys.argv[1]])
out = b""
def pump(t):
    global out
    end = time.time() + t
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                d = os.read(fd, 65536)
            except OSError:
                return
            out += d
            if b"\x1b[6n" in d:          # linenoise asks for the cursor position
                os.write(fd, b"\x1b[1;1R")
pump(1.5)
os.write(fd, b"HELP SIMHASH.QUERY\r")
pump(2.0)
os.write(fd, b"quit\r")
pump(0.5)
os.kill(pid, 9)
os.waitpid(pid, 0)
text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", out.decode("utf-8", "replace"))
sys.stdout.write(text.replace("\r", ""))
PYEOF
)
want_grep "redis-cli HELP SIMHASH.QUERY" 'SIMHASH\.QUERY fingerprint \[DISTANCE d\] \[LIMIT n\]' "$helpout"
want_grep "redis-cli HELP group" 'group: simhash' "$helpout"

# ---- INFO ----
info=$(cli INFO)
for f in '^redis_version:' '^loading:0' '^connected_clients:[0-9]+' '^total_commands_processed:[0-9]+' \
         '^used_memory:[0-9]+' '^# Corpus' '^blocks:6' '^# Workers' '^# Coordinator'; do
    want_grep "INFO has $f" "$f" "$info"
done
want_grep "INFO server only" '^# Server' "$(cli INFO server)"
[ -z "$(cli INFO server | grep '^# Corpus')" ] || th_fail "INFO server listed other sections"
qcalls() { cli INFO commandstats | sed -n 's/^cmdstat_simhash\.query:calls=\([0-9]*\),.*/\1/p'; }
cli SIMHASH.ADD 4242 info-doc >/dev/null
q0=$(qcalls)
for i in 1 2 3 4 5; do cli SIMHASH.QUERY 4242 >/dev/null; done
# the keyspace line follows the workers' counts (health checks, once a second)
i=0
until cli INFO keyspace | grep -q '^db0:keys=1,'; do
    i=$((i + 1)); [ $i -lt 200 ] || th_fail "INFO keyspace never showed db0:keys=1: $(cli INFO keyspace)"; sleep 0.1
done
th_log "ok: INFO keyspace db0:keys=1"
want "INFO commandstats counts 5 more queries" $((q0 + 5)) "$(qcalls)"
want_grep "INFO commandstats" '^cmdstat_simhash\.query:calls=[0-9]+,usec=[0-9]+,usec_per_call=[0-9.]+,rejected_calls=0,failed_calls=0' "$(cli INFO commandstats)"
want_grep "INFO latencystats" '^latency_percentiles_usec_simhash\.query:p50=[0-9]+\.[0-9]{3},p99=[0-9]+\.[0-9]{3},p99\.9=[0-9]+\.[0-9]{3}' "$(cli INFO latencystats)"
cli SIMHASH.QUERY 4242 DISTANCE 99 >/dev/null
want_grep "a failed call is counted" "^cmdstat_simhash\\.query:calls=$((q0 + 6)),.*failed_calls=1" "$(cli INFO commandstats)"
winfo=$(timeout 30 redis-cli -p "$W0" INFO)
want_grep "worker INFO: its own sections" '^# Worker' "$winfo"
want_grep "worker INFO: Redis section" '^redis:up' "$winfo"
want_grep "worker INFO: server name" '^server_name:simhash-shard' "$winfo"

# ---- redis-cli --stat (on a pseudo-terminal, so its output is not buffered away) ----
stat=$(timeout 20 script -qc "timeout 3 redis-cli -p $P --stat -i 1" /dev/null </dev/null | tr -d '\r')
want_grep "redis-cli --stat header" 'keys +mem +clients +blocked +requests +connections' "$stat"
want_grep "redis-cli --stat row" '^1 +[0-9.]+[KMG] +1 +0 +[0-9]+ \(\+[0-9]+\) +[0-9]+' "$stat"

# ---- redis-benchmark against SIMHASH.QUERY ----
before=$(qcalls)
bench=$(timeout 120 redis-benchmark -h 127.0.0.1 -p "$P" -n 2000 -c 4 -q SIMHASH.QUERY 4242 2>&1)
[ $? -eq 0 ] || th_fail "redis-benchmark failed: $bench"
case "$bench" in *"Could not fetch server CONFIG"*) th_fail "redis-benchmark could not read CONFIG: $bench";; esac
want_grep "redis-benchmark ran SIMHASH.QUERY" 'SIMHASH\.QUERY 4242: [0-9.]+ requests per second' "$(printf '%s' "$bench" | tr '\r' '\n')"
after=$(qcalls)
want "redis-benchmark's 2000 queries counted" 2000 "$((after - before))"

# ---- redis-py, ioredis, node-redis at their default options ----
pyout=$(timeout 120 "$PY" "$CLIENTS/redis_py_client.py" "$P" 2>&1) || th_fail "redis-py checks failed:
$pyout"
printf '%s\n' "$pyout" | tail -n 1
nodeout=$(timeout 120 node "$CLIENTS/node_clients.js" "$P" 2>&1) || th_fail "node client checks failed:
$nodeout"
printf '%s\n' "$nodeout" | tail -n 1

# ---- with a password: HELLO AUTH, and HELLO without it ----
pwfile="$TH_DIR/pw"; echo "s3cret" >"$pwfile"
th_start_coord coordpw 6 3 2000 "127.0.0.1:$W0 127.0.0.1:$W1" "" --password-file "$pwfile"
PP=$TH_COORD_PORT
want_grep "HELLO before AUTH" '^NOAUTH HELLO must be called with the client already authenticated' \
    "$(timeout 30 redis-cli -p "$PP" HELLO 2 2>&1)"
want "HELLO 2 AUTH default s3cret" 2 "$(timeout 30 redis-cli -p "$PP" HELLO 2 AUTH default s3cret | sed -n '/^proto$/{n;p}')"
want_grep "HELLO with a wrong password" '^WRONGPASS' "$(timeout 30 redis-cli -p "$PP" HELLO 2 AUTH default nope 2>&1)"
want "INFO after AUTH" "loading:0" "$(REDISCLI_AUTH=s3cret timeout 30 redis-cli -p "$PP" INFO persistence | grep -o '^loading:0')"
th_log "all client checks passed"
