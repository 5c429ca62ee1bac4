# tests/integration/lib.sh: shared helpers for the integration tests (source it).
#
#   th_init NAME             make a mktemp -d work dir ($TH_DIR), install the cleanup trap
#   th_free_port             print a free TCP port on 127.0.0.1
#   th_start NAME SECS CMD.. start CMD under `timeout SECS` in the background, log to
#                            $TH_DIR/NAME.log; sets TH_PID (the `timeout` process) and
#                            records it for cleanup
#   th_child_pid PID         print the PID of the program that `timeout` PID runs
#   th_stop PID              SIGTERM a process started by th_start, wait for it (SIGKILL
#                            after 5 s)
#   th_wait_port PORT [SECS] wait until something accepts connections on 127.0.0.1:PORT
#   th_start_redis_on NAME PORT [opts..]  the same on PORT (a restart: same NAME, same
#                            data), with extra redis-server options
#   th_start_redis NAME      start redis-server on a free port in $TH_DIR/NAME (no
#                            persistence), bounded by TH_DAEMON_SECS (600) as the daemons
#                            are, and wait for a literal PONG; sets TH_REDIS_PORT
#                            and TH_REDIS_PID
#   th_fail MSG / th_log MSG print and (fail) exit 1 after showing the logs
#   th_start_shard, th_start_coord, th_deploy (a Redis, its workers and a coordinator),
#   th_load_copy_corpus and more: described where they are defined, below
#
# At exit, a sanitizer report (ASan/LSan/UBSan) in any log of $TH_DIR fails the test.
# Environment: SIMHASH_BIN (programs, default build/bin), SIMHASH_SRC (repo root),
# TH_KEEP=1 keeps the work directory. Every process is bounded by `timeout` and ended
# by PID in the trap; nothing is killed by name.

TH_SRC=${SIMHASH_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
TH_BIN=${SIMHASH_BIN:-$TH_SRC/build/bin}
TH_PIDS=()
TH_DIR=
TH_NAME=test

th_log() { echo "[$TH_NAME] $*" >&2; }

# Print the tail of every log in the work directory (called on failure).
th_show_logs() {
    local f
    [ -n "$TH_DIR" ] && [ -d "$TH_DIR" ] || return 0
    for f in "$TH_DIR"/*.log; do
        [ -f "$f" ] || continue
        echo "---- $(basename "$f") (last 30 lines)" >&2
        tail -n 30 "$f" >&2
    done
}

th_fail() {
    echo "[$TH_NAME] FAIL: $*" >&2
    th_show_logs
    exit 1
}

th_cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    for pid in "${TH_PIDS[@]}"; do
        # a stopped child cannot act on SIGTERM; continue it first
        local c
        c=$(th_child_pid "$pid")
        [ -n "$c" ] && kill -CONT "$c" 2>/dev/null
        kill -TERM "$pid" 2>/dev/null
    done
    for pid in "${TH_PIDS[@]}"; do
        th_reap "$pid"
    done
    # sanitizer reports (ASan/UBSan builds) in any log fail the test, even at exit
    if [ -n "$TH_DIR" ] && [ -d "$TH_DIR" ] &&
        grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$TH_DIR"/*.log >/dev/null 2>&1; then
        echo "[$TH_NAME] FAIL: sanitizer report in $(grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$TH_DIR"/*.log | xargs -n1 basename | tr '\n' ' ')" >&2
        grep -hE -A12 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$TH_DIR"/*.log | head -n 40 >&2
        rc=1
    fi
    if [ -n "$TH_DIR" ] && [ -d "$TH_DIR" ]; then
        if [ "${TH_KEEP:-0}" = 1 ]; then
            echo "[$TH_NAME] work directory kept: $TH_DIR" >&2
        else
            rm -rf "$TH_DIR"
        fi
    fi
    exit "$rc"
}

th_init() {
    TH_NAME=$1
    TH_DIR=$(mktemp -d "${TMPDIR:-/tmp}/simhash-$TH_NAME.XXXXXX") || exit 1
    trap th_cleanup EXIT
    trap 'exit 130' INT TERM
    command -v redis-server >/dev/null || th_fail "redis-server not found"
    command -v python3 >/dev/null || th_fail "python3 not found"
}

# A port the kernel hands out as free right now (the socket is closed again, so
# another process could take it before we bind; tests retry nothing on that).
# A port free on 127.0.0.1 right now, below the kernel's ephemeral range (32768 on):
# a port the kernel handed out (bind to 0) is in that range, and once closed any
# outgoing connection of a busy machine may take it as its source port before the
# daemon binds it ("Address already in use"); ports below it are never taken so.
# 23000-29999 only: the deployments of simhash-local (deploy_lib.sh) and the clusters
# of cluster_lib.sh take bases in 20000-22767 and ports 10000 above them, and ctest
# runs two tests at once: a port this picks can then never be one a deployment of
# the other test checked free and is about to start a daemon on.
th_free_port() {
    python3 -c 'import random, socket
for _ in range(500):
    p = random.randint(23000, 29999)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
else:
    raise SystemExit("no free port")'
}

th_start() {
    local name=$1 secs=$2
    shift 2
    timeout --signal=TERM --kill-after=5 "$secs" "$@" >>"$TH_DIR/$name.log" 2>&1 &
    TH_PID=$!
    TH_PIDS+=("$TH_PID")
}

th_child_pid() {
    ps -o pid= --ppid "$1" 2>/dev/null | head -n 1 | tr -d ' '
}

# th_reap PID: up to 5 s for PID (a `timeout` wrapper of th_start) to end, then SIGKILL
# its child and it: killing the wrapper alone would leave the program running. The
# child's PID is still its own while the wrapper lives (a zombie is not reaped yet).
th_reap() {
    local pid=$1 i=0 c
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    if kill -0 "$pid" 2>/dev/null; then
        c=$(th_child_pid "$pid")
        [ -n "$c" ] && kill -KILL "$c" 2>/dev/null
        kill -KILL "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
    return 0
}

th_stop() {
    local pid=$1 c
    c=$(th_child_pid "$pid")
    [ -n "$c" ] && kill -CONT "$c" 2>/dev/null
    kill -TERM "$pid" 2>/dev/null
    th_reap "$pid"
}

# The keys of the corpus on the Redis at 127.0.0.1:PORT, those matching PATTERN
# (default its buckets and tombstones): tests/tools/bucket_keys.py's name=value lines.
th_bucket_keys() {
    PYTHONPATH="$TH_SRC/tests/tools" timeout 120 python3 "$TH_SRC/tests/tools/bucket_keys.py" "$@"
}

# The value of NAME in the name=value lines TEXT.
th_kv() { printf '%s\n' "$2" | sed -n "s/^$1=//p"; }

# 0 once 127.0.0.1:PORT accepts a connection, 1 after SECS (default 10) seconds.
th_wait_port() {
    local port=$1 secs=${2:-10} i=0
    while [ $i -lt $((secs * 20)) ]; do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return 0
        fi
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}

th_start_redis() {
    th_start_redis_on "${1:-redis}" "$(th_free_port)"
}

#   th_start_redis_on NAME PORT [redis-server options..]
#       the same on a given port (again after a restart: same NAME, same data dir
#       $TH_DIR/NAME); options after PORT are added (e.g. --appendonly yes)
th_start_redis_on() {
    local name=$1 port=$2 dir i=0 reply
    shift 2
    dir="$TH_DIR/$name"
    mkdir -p "$dir"
    th_start "$name" "${TH_DAEMON_SECS:-600}" redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" \
        --save '' --appendonly no --daemonize no --protected-mode yes "$@"
    TH_REDIS_PID=$TH_PID
    TH_REDIS_PORT=$port
    while [ $i -lt 200 ]; do
        reply=$(timeout 2 redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)
        [ "$reply" = PONG ] && return 0
        kill -0 "$TH_REDIS_PID" 2>/dev/null || th_fail "redis-server exited at start"
        sleep 0.05
        i=$((i + 1))
    done
    th_fail "redis-server on port $port did not answer PONG"
}

#   th_start_shard NAME REDIS_PORT LO-HI BLOCKS DISTANCE [PORT] [extra args..]
#       start simhash-shard for first-byte shards LO-HI; waits for its port; sets
#       TH_SHARD_PORT and TH_SHARD_PID (PORT default: a free one). With TH_SPLIT_LIMIT
#       set the worker gets --split-limit, with TH_TOMBSTONE_S --tombstone-seconds:
#       tests registered again with them (tests/CMakeLists.txt) run the same checks
#       while buckets split
th_start_shard() {
    local name=$1 rport=$2 range=$3 blocks=$4 dist=$5 port=${6:-}
    shift 5
    [ $# -gt 0 ] && shift
    [ -n "$port" ] || port=$(th_free_port)
    th_start "$name" "${TH_DAEMON_SECS:-600}" "$TH_BIN/simhash-shard" --bind 127.0.0.1 --port "$port" \
        --redis-host 127.0.0.1 --redis-port "$rport" --shards "$range" \
        --blocks "$blocks" --distance "$dist" \
        ${TH_SPLIT_LIMIT:+--split-limit "$TH_SPLIT_LIMIT"} \
        ${TH_TOMBSTONE_S:+--tombstone-seconds "$TH_TOMBSTONE_S"} "$@"
    TH_SHARD_PID=$TH_PID
    TH_SHARD_PORT=$port
    th_wait_port "$port" 20 || th_fail "simhash-shard $name did not listen on port $port"
}

#   th_start_coord NAME BLOCKS DISTANCE TIMEOUT_MS "WORKER [WORKER..]" [PORT] [extra args..]
#       start simhash-coordinator; waits for its port; sets TH_COORD_PORT, TH_COORD_PID
th_start_coord() {
    local name=$1 blocks=$2 dist=$3 tmo=$4 workers=$5 port=${6:-} w args=()
    shift 5
    [ $# -gt 0 ] && shift
    [ -n "$port" ] || port=$(th_free_port)
    for w in $workers; do args+=(--worker "$w"); done
    th_start "$name" "${TH_DAEMON_SECS:-600}" "$TH_BIN/simhash-coordinator" --bind 127.0.0.1 \
        --port "$port" --blocks "$blocks" --distance "$dist" --timeout-ms "$tmo" "${args[@]}" "$@"
    TH_COORD_PID=$TH_PID
    TH_COORD_PORT=$port
    th_wait_port "$port" 20 || th_fail "simhash-coordinator $name did not listen on port $port"
}

#   th_deploy NAME NWORKERS BLOCKS DISTANCE TIMEOUT_MS [worker args..]
#       a deployment: one Redis (r-NAME), NWORKERS workers (1: w-NAME serving shards
#       0-255; 2: wa-NAME 0-127 and wb-NAME 128-255) started with the worker args
#       (--split-limit N, ...) and
#       a coordinator over them (c-NAME, timeout TIMEOUT_MS). Sets TH_DEPLOY_PORT (the
#       coordinator's port), TH_DEPLOY_WPORTS (the workers'), TH_DEPLOY_RPORT (Redis's)
#       and TH_DEPLOY_PIDS (coordinator, workers, Redis: the order to stop them in); when
#       NAME is a shell name, also port_NAME, wport_NAME (the first worker) and redis_NAME
th_deploy() {
    local name=$1 nw=$2 blocks=$3 dist=$4 tmo=$5 ranges w workers= pids=
    shift 5
    case $nw in
        1) ranges="w:0-255" ;;
        2) ranges="wa:0-127 wb:128-255" ;;
        *) th_fail "th_deploy: $nw workers (1 or 2)" ;;
    esac
    th_start_redis "r-$name"
    TH_DEPLOY_RPORT=$TH_REDIS_PORT TH_DEPLOY_WPORTS=
    for w in $ranges; do
        th_start_shard "${w%%:*}-$name" "$TH_DEPLOY_RPORT" "${w#*:}" "$blocks" "$dist" "" "$@"
        TH_DEPLOY_WPORTS="$TH_DEPLOY_WPORTS${TH_DEPLOY_WPORTS:+ }$TH_SHARD_PORT"
        workers="$workers${workers:+ }127.0.0.1:$TH_SHARD_PORT"
        pids="$pids $TH_SHARD_PID"
    done
    th_start_coord "c-$name" "$blocks" "$dist" "$tmo" "$workers"
    TH_DEPLOY_PORT=$TH_COORD_PORT
    TH_DEPLOY_PIDS="$TH_COORD_PID$pids $TH_REDIS_PID"
    if [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
        printf -v "port_$name" '%s' "$TH_DEPLOY_PORT"
        printf -v "wport_$name" '%s' "${TH_DEPLOY_WPORTS%% *}"
        printf -v "redis_$name" '%s' "$TH_DEPLOY_RPORT"
    fi
}

#   th_load_copy_corpus PORT STATE
#       the corpus the migrate tests copy, loaded through the coordinator at PORT
#       (blocks 6, distance 3): the planted corpus of tests/tools/simhash_e2e.py (80
#       bases, seed 91; its state written to STATE), 500 ids on one fingerprint and 50
#       ids of 120+ bytes (those pairs also in $TH_DIR/extra.txt)
th_load_copy_corpus() {
    local port=$1 st=$2
    timeout 120 python3 "$TH_SRC/tests/tools/simhash_e2e.py" load --port "$port" --blocks 6 \
        --distance 3 --bases 80 --seed 91 --state-out "$st" >"$TH_DIR/load.out" 2>&1 ||
        { cat "$TH_DIR/load.out" >&2; th_fail "planted load"; }
    python3 - "$TH_DIR/extra.txt" <<'PY'
import random, sys
r = random.Random(92)
with open(sys.argv[1], "w") as f:
    for i in range(500):                       # many ids on one fingerprint
        f.write("4242424242 many-%d\n" % i)
    for i in range(50):                        # long ids
        f.write("%d %s\n" % (r.getrandbits(64), ("long-%d-" % i) + "x" * 120))
PY
    timeout 60 "$TH_BIN/simhash" load --port "$port" "$TH_DIR/extra.txt" >/dev/null ||
        th_fail "loading the extra pairs"
}

#   th_ossl ARGS..           openssl ARGS, its output in $TH_DIR/openssl.log; fails the test
#   th_tls_ca DIR NAME       a throwaway CA: DIR/NAME.crt and DIR/NAME.key (EC P-256, 2 days)
#   th_tls_cert DIR NAME CN SERIAL
#       a certificate DIR/NAME.crt (key DIR/NAME.key) for IP 127.0.0.1 and DNS localhost,
#       signed by the CA DIR/ca.crt
#   th_coord_refused WHAT PATTERN WORKER ARGS..
#       simhash-coordinator (blocks $B, distance $K, --worker WORKER, ARGS) must exit 2
#       with a message containing PATTERN
th_coord_refused() {
    local what=$1 pat=$2 worker=$3 out rc
    shift 3
    out=$(timeout 20 "$TH_BIN/simhash-coordinator" --bind 127.0.0.1 --port "$(th_free_port)" \
            --blocks "$B" --distance "$K" --worker "$worker" "$@" 2>&1)
    rc=$?
    [ $rc -eq 2 ] || th_fail "$what: exit $rc, want 2 ($out)"
    case "$out" in *$pat*) ;; *) th_fail "$what: message '$out' lacks '$pat'";; esac
}
th_ossl() { openssl "$@" >>"$TH_DIR/openssl.log" 2>&1 || th_fail "openssl $1 failed (openssl.log)"; }
th_tls_ca() {
    th_ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj "/CN=simhash test $2" -keyout "$1/$2.key" -out "$1/$2.crt"
}
th_tls_cert() {
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$1/san.ext"
    th_ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$3" \
        -keyout "$1/$2.key" -out "$1/$2.csr"
    th_ossl x509 -req -in "$1/$2.csr" -CA "$1/ca.crt" -CAkey "$1/ca.key" -set_serial "$4" \
        -days 2 -extfile "$1/san.ext" -out "$1/$2.crt"
}

# Fail unless the named programs exist in $TH_BIN.
th_need_bins() {
    local b
    for b in "$@"; do
        [ -x "$TH_BIN/$b" ] || th_fail "$TH_BIN/$b not built"
    done
}
