#!/usr/bin/env bash
# test_local_password.sh: `deploy/simhash-local up --password-file F` protects every
# piece: the coordinator, the workers and Redis all answer NOAUTH without the password
# (so the coordinator's password cannot be bypassed by talking to a worker or to Redis
# directly), clients that AUTH add and query end to end, `status` sees everything up,
# no daemon carries the password in its environment, and `down` leaves no process.
# Single Redis, then a 3-master Redis Cluster with a node added (`add-node`), a
# stopped worker started again (`repair`). A refused second `up` leaves the running
# deployment's password alone, and a later `up` without --password-file (a restart of
# the same DIR) keeps every piece protected. The password has a space, quotes and a
# backslash (Redis's config files must quote it). The cluster's workers get the
# coordinator's request deadline (timeout-ms 2000, as deploy/shard-cluster.conf). Both
# deployments are made with --layout 4; the cluster's add-node, repair
# and restart read that layout back from its cluster.env.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/deploy_lib.sh"
th_init local-password
th_need_bins simhash-shard simhash-coordinator
# both deployments are brought down by PID (simhash-local down) on every exit path
trap 'rc=$?; for d in "$TH_DIR/single" "$TH_DIR/cluster"; do
          [ -d "$d" ] && timeout 120 bash "$DL_LOCAL" down --dir "$d" >/dev/null 2>&1
      done; (exit $rc); th_cleanup' EXIT
PW="pw \"q\\'-$RANDOM$RANDOM"
printf '%s\n' "$PW" >"$TH_DIR/pw"
chmod 600 "$TH_DIR/pw"

noauth() { # noauth WHAT PORT CMD..: the server on PORT answers NOAUTH without AUTH
    local what=$1 port=$2 out
    shift 2
    out=$(env -u REDISCLI_AUTH timeout 5 redis-cli -p "$port" "$@" 2>&1)
    case "$out" in NOAUTH*) ;; *) th_fail "$what without AUTH answered: $out";; esac
}
auth() { REDISCLI_AUTH=$PW timeout 10 redis-cli -p "$1" "${@:2}" 2>&1; }

# check_deployment DIR COORD_PORT WORKER_PORTS.. -- REDIS_PORTS..
check_deployment() {
    local dir=$1 cport=$2 p pid
    shift 2
    noauth coordinator "$cport" SIMHASH.QUERY 5
    while [ "$1" != -- ]; do
        noauth "worker $1" "$1" SHARD.HELLO
        noauth "worker $1" "$1" SHARD.QUERY 5 3 0
        shift
    done
    shift
    for p in "$@"; do
        noauth "redis $p" "$p" KEYS '*'
        noauth "redis $p" "$p" HGETALL simhash:meta
    done
    dl_wait_routing_auth "$cport" || th_fail "coordinator never took an authenticated ADD: $DL_REPLY"
    [ "$(auth "$cport" SIMHASH.ADD 12345 doc-p)" = 1 ] || th_fail "authenticated ADD"
    auth "$cport" SIMHASH.QUERY 12344 | grep -qx doc-p || th_fail "authenticated QUERY"
    for f in "$dir"/*.pid; do
        pid=$(cat "$f")
        for q in $pid $(pgrep -P "$pid" 2>/dev/null); do
            [ -r "/proc/$q/environ" ] || continue
            tr '\0' '\n' <"/proc/$q/environ" | grep -q "^REDISCLI_AUTH=" &&
                th_fail "$(basename "$f" .pid) has the password in its environment"
        done
    done
    [ "$(stat -c %a "$dir/secret")" = 600 ] || th_fail "secret is not mode 0600"
    timeout 60 bash "$DL_LOCAL" status --dir "$dir" >"$TH_DIR/status.out" 2>&1 ||
        th_fail "status: $(cat "$TH_DIR/status.out")"
    # status names each process's metrics endpoint (port + 2000, when that port was
    # free at up); every URL it names answers 401 without the password and the
    # Prometheus text with it (Authorization: Bearer)
    local urls
    urls=$(grep -o 'http://127\.0\.0\.1:[0-9]*/metrics' "$TH_DIR/status.out")
    [ -n "$urls" ] || th_fail "status names no metrics endpoint: $(cat "$TH_DIR/status.out")"
    for u in $urls; do
        timeout 20 python3 -c 'import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1], timeout=10)
    sys.exit("served without the password")
except urllib.error.HTTPError as e:
    if e.code != 401:
        sys.exit("without the password: HTTP %d" % e.code)
rq = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + sys.argv[2]})
t = urllib.request.urlopen(rq, timeout=10).read().decode()
sys.exit(0 if "simhash_build_info{" in t else 1)' "$u" "$PW" || th_fail "$u: metrics and the password"
    done
}
dl_wait_routing_auth() {
    local i
    for i in $(seq 1 150); do
        DL_REPLY=$(auth "$1" SIMHASH.ADD 1 ready | tr -d '\r')
        [[ $DL_REPLY =~ ^[01]$ ]] && return 0
        sleep 0.2
    done
    return 1
}
# down_and_check DIR: `simhash-local down`, then none of the processes DIR's pidfiles
# named before it (and their children) runs (`down` removes the pidfiles)
down_and_check() {
    local f pid q pids=()
    for f in "$1"/*.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        pids+=("$(basename "$f" .pid):$pid")
        for q in $(pgrep -P "$pid" 2>/dev/null); do pids+=("$(basename "$f" .pid):$q"); done
    done
    [ ${#pids[@]} -gt 0 ] || th_fail "no pidfiles in $1 before down"
    DL_DIR=$1 dl_sl down >"$TH_DIR/down.out" 2>&1 || th_fail "down: $(cat "$TH_DIR/down.out")"
    for f in "${pids[@]}"; do
        kill -0 "${f#*:}" 2>/dev/null && th_fail "${f%%:*} (pid ${f#*:}) still runs after down"
    done
    return 0
}

# ---- single Redis ----
base=$(dl_free_base 1 2)
[ -n "$base" ] || th_fail "no free port range"
S="$TH_DIR/single"
mkdir -p "$S"
DL_DIR=$S dl_sl up --port $((base + 200)) --redis-port "$base" --shard-port $((base + 100)) \
    --no-aof --fresh --lifetime 600 --password-file "$TH_DIR/pw" --layout 4 >"$TH_DIR/up.out" 2>&1 ||
    th_fail "up --password-file --layout 4: $(cat "$TH_DIR/up.out")"
check_deployment "$S" $((base + 200)) $((base + 100)) $((base + 101)) -- "$base"
auth $((base + 200)) SIMHASH.INFO | tr -d '\r' | grep -qx 'layout:4' ||
    th_fail "up --layout 4 made a corpus of another layout: $(auth $((base + 200)) SIMHASH.INFO | grep layout)"
DL_DIR=$S dl_sl up --port $((base + 200)) --redis-port "$base" --shard-port $((base + 100)) \
    --no-aof --lifetime 600 >"$TH_DIR/up2.out" 2>&1 && th_fail "a second up while running succeeded"
timeout 60 bash "$DL_LOCAL" status --dir "$S" >"$TH_DIR/status.out" 2>&1 ||
    th_fail "status after a refused second up: $(cat "$TH_DIR/status.out")"
down_and_check "$S"
th_log "single Redis: coordinator, workers and Redis refuse clients without the password"
DL_DIR=$S dl_sl up --port $((base + 200)) --redis-port "$base" --shard-port $((base + 100)) \
    --no-aof --lifetime 600 >"$TH_DIR/up.out" 2>&1 || th_fail "up again: $(cat "$TH_DIR/up.out")"
check_deployment "$S" $((base + 200)) $((base + 100)) $((base + 101)) -- "$base"
down_and_check "$S"
th_log "single Redis: up again without --password-file keeps the password"

# ---- Redis Cluster, and a node added ----
C="$TH_DIR/cluster"
mkdir -p "$C"
DL_DIR=$C dl_up_cluster "up --cluster --password-file --layout 4" --masters 3 --no-aof --fresh \
    --lifetime 600 --password-file "$TH_DIR/pw" --layout 4
check_deployment "$C" "$cport" "$sport" $((sport + 1)) $((sport + 2)) -- \
    "$rport" $((rport + 1)) $((rport + 2))
# the cluster workers' request deadline is the coordinator's default, 2000 ms
for f in "$C/coordinator.conf" "$C"/shard-*.conf; do
    [ "$(sed -n 's/^timeout-ms //p' "$f")" = 2000 ] || th_fail "$f: timeout-ms is not 2000"
done
DL_DIR=$C dl_sl add-node >"$TH_DIR/add.out" 2>&1 || th_fail "add-node: $(tail -5 "$TH_DIR/add.out")"
noauth "new redis node" $((rport + 3)) KEYS '*'
noauth "new worker" $((sport + 3)) SHARD.HELLO
auth "$cport" SIMHASH.QUERY 12344 | grep -qx doc-p || th_fail "QUERY after add-node"
# a worker stopped by its PID, then started again by repair
wpid=$(cat "$C/shard-1.pid")
kill -TERM "$wpid"
for _ in $(seq 1 100); do kill -0 "$wpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$wpid" 2>/dev/null && th_fail "worker shard-1 (pid $wpid) did not stop"
DL_DIR=$C dl_sl repair >"$TH_DIR/repair.out" 2>&1 || th_fail "repair: $(tail -5 "$TH_DIR/repair.out")"
noauth "repaired worker" $((sport + 1)) SHARD.HELLO
dl_wait_routing_auth "$cport" || th_fail "no authenticated ADD after repair: $DL_REPLY"
auth "$cport" SIMHASH.QUERY 12344 | grep -qx doc-p || th_fail "QUERY after repair"
down_and_check "$C"
th_log "cluster: the same, also for a node added with add-node and a worker started by repair"
# the recorded cluster started again from its nodes.conf, without --password-file
DL_DIR=$C dl_sl up --cluster --no-aof --lifetime 600 >"$TH_DIR/up.out" 2>&1 ||
    th_fail "up --cluster again: $(tail -5 "$TH_DIR/up.out")"
check_deployment "$C" "$cport" "$sport" $((sport + 1)) $((sport + 2)) $((sport + 3)) -- \
    "$rport" $((rport + 1)) $((rport + 2)) $((rport + 3))
auth "$cport" SIMHASH.INFO | tr -d '\r' | grep -qx 'layout:4' ||
    th_fail "the restarted cluster is not of layout 4: $(auth "$cport" SIMHASH.INFO | grep layout)"
down_and_check "$C"
th_log "cluster: up again without --password-file keeps the password"
th_log PASS
