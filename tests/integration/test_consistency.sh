#!/usr/bin/env bash
# test_consistency.sh: concurrent writes of the same fingerprints, checked against
# the history (tests/tools/simhash_jepsen.py: many clients, random ADD / DEL / CHECK /
# QUERY over a few colliding fingerprints and documents; every read and the final
# state must be one some serial order of the acknowledged operations allows; every
# fingerprint with documents is found by every query within distance k; Redis holds
# exactly 20 table entries per fingerprint with documents, no write lock, and exact
# counters). Three deployments, real redis-server on loopback:
#   single   one Redis, two workers, two coordinators (clients spread over both)
#   cluster  a 3-master Redis Cluster, a worker beside each master, one coordinator
#   faults   one Redis (appendfsync always), two workers, two coordinators, while
#            workers, coordinators and Redis are killed with SIGKILL and restarted at
#            random; then the checks after the repair pass had its time
# JEPSEN_SECONDS (default 15) sets the length of the fault run. JEPSEN_FILLER=N adds N
# filler fingerprints near the checked ones during every run (simhash_jepsen.py
# --filler): registered with data layout 3 and a split limit of 4 (tests/CMakeLists.txt),
# buckets then split under the concurrent writes, reads and kills, and the single run
# checks that the workers split at least 100.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
th_init consistency
th_need_bins simhash-shard simhash-coordinator
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
J="$TH_SRC/tests/tools/simhash_jepsen.py"
B=6 K=3 T=20
SECS=${JEPSEN_SECONDS:-15}

jepsen() { # jepsen LABEL PORTS REDIS [args..]
    local label=$1 ports=$2 redis=$3
    shift 3
    timeout 600 "$PY" "$J" --label "$label" --ports "$ports" --redis "$redis" \
        --distance $K --tables $T ${JEPSEN_FILLER:+--filler "$JEPSEN_FILLER"} "$@" 2>&1 |
        tee "$TH_DIR/$label.out"
    return "${PIPESTATUS[0]}"
}

# ---- single: one Redis, two workers, two coordinators ----
th_start_redis redis
rport=$TH_REDIS_PORT
th_start_shard shard-a "$rport" 0-127 $B $K
wa=$TH_SHARD_PORT
th_start_shard shard-b "$rport" 128-255 $B $K
wb=$TH_SHARD_PORT
th_start_coord coord-1 $B $K 2000 "127.0.0.1:$wa 127.0.0.1:$wb" "" --health-interval-ms 200
c1=$TH_COORD_PORT
th_start_coord coord-2 $B $K 2000 "127.0.0.1:$wa 127.0.0.1:$wb" "" --health-interval-ms 200
c2=$TH_COORD_PORT
jepsen single "$c1,$c2" "127.0.0.1:$rport" --clients 12 --ops 8000 --docs 2 --seconds 60 \
    --seed 11 || th_fail "single Redis: violations (above)"
if [ -n "${TH_SPLIT_LIMIT:-}" ]; then
    splits=0
    for w in $wa $wb; do
        n=$(timeout 10 redis-cli -p "$w" shard.info | tr -d '\r' | sed -n 's/^bucket_splits://p')
        splits=$((splits + ${n:-0}))
    done
    th_log "single: $splits buckets split during the run"
    [ "$splits" -ge 100 ] || th_fail "single: only $splits buckets split"
fi

# ---- cluster: three masters ----
cl_start_cluster cl 3 0
workers=""
for i in 0 1 2; do
    th_start_shard "cshard-$i" "${CL_PORTS[$i]}" 0-255 $B $K "" --cluster yes
    workers="$workers 127.0.0.1:$TH_SHARD_PORT"
done
th_start_coord ccoord $B $K 3000 "$workers" "" --cluster-node "127.0.0.1:${CL_PORTS[0]}" \
    --health-interval-ms 200
cc=$TH_COORD_PORT
for _ in $(seq 1 200); do
    timeout 5 redis-cli -p "$cc" SIMHASH.INFO 2>/dev/null | tr -d '\r' | grep -q '^routing:ok' && break
    sleep 0.1
done
masters=$(printf '127.0.0.1:%s,' "${CL_PORTS[@]}")
jepsen cluster "$cc" "${masters%,}" --clients 12 --ops 6000 --docs 2 --seconds 60 --seed 12 ||
    th_fail "Redis Cluster: violations (above)"

# ---- faults: processes killed and restarted during the run ----
fport=$(th_free_port)
start_fredis() {   # the same data directory every time: the AOF keeps what was acknowledged
    th_start_redis_on fredis "$fport" --appendonly yes --appendfsync always
    FRPID=$TH_REDIS_PID
}
start_fredis
fa=$(th_free_port) fb=$(th_free_port) fc1=$(th_free_port) fc2=$(th_free_port)
start_fshard() { # NAME RANGE PORT
    th_start_shard "$1" "$fport" "$2" $B $K "$3" --timeout-ms 1000
}
start_fcoord() { # NAME PORT
    th_start_coord "$1" $B $K 1000 "127.0.0.1:$fa 127.0.0.1:$fb" "$2" --health-interval-ms 200
}
start_fshard fshard-a 0-127 "$fa"; FA=$TH_SHARD_PID
start_fshard fshard-b 128-255 "$fb"; FB=$TH_SHARD_PID
start_fcoord fcoord-1 "$fc1"; FC1=$TH_COORD_PID
start_fcoord fcoord-2 "$fc2"; FC2=$TH_COORD_PID
jepsen faults "$fc1,$fc2" "127.0.0.1:$fport" --clients 12 --ops 1000000 --docs 2 \
    --seconds "$SECS" --seed 13 --settle 30 &
JPID=$!
kills=0
end=$((SECONDS + SECS - 2))
while [ $SECONDS -lt $end ]; do
    sleep "0.$((RANDOM % 9 + 1))"
    victim=$((RANDOM % 5))
    case $victim in
    0) p=$(th_child_pid "$FA"); [ -n "$p" ] && kill -9 "$p"; wait "$FA" 2>/dev/null
       start_fshard fshard-a 0-127 "$fa"; FA=$TH_SHARD_PID; what="worker a" ;;
    1) p=$(th_child_pid "$FB"); [ -n "$p" ] && kill -9 "$p"; wait "$FB" 2>/dev/null
       start_fshard fshard-b 128-255 "$fb"; FB=$TH_SHARD_PID; what="worker b" ;;
    2) p=$(th_child_pid "$FC1"); [ -n "$p" ] && kill -9 "$p"; wait "$FC1" 2>/dev/null
       start_fcoord fcoord-1 "$fc1"; FC1=$TH_COORD_PID; what="coordinator 1" ;;
    3) p=$(th_child_pid "$FC2"); [ -n "$p" ] && kill -9 "$p"; wait "$FC2" 2>/dev/null
       start_fcoord fcoord-2 "$fc2"; FC2=$TH_COORD_PID; what="coordinator 2" ;;
    4) p=$(th_child_pid "$FRPID"); [ -n "$p" ] && kill -9 "$p"; wait "$FRPID" 2>/dev/null
       start_fredis; what="redis" ;;
    esac
    kills=$((kills + 1))
    th_log "fault $kills: killed and restarted $what"
done
wait "$JPID" || th_fail "with faults ($kills processes killed): violations (above)"
th_log "faults: $kills processes killed with SIGKILL and restarted during the run"
th_log PASS
