#!/usr/bin/env bash
# bench/hostile/run.sh [BUILD_DIR]: hostile clients on loopback against one deployment
# (redis-server, a worker, a coordinator started here by PID, the integration tests'
# lib.sh): does one client's work or connections hurt the others? Each measurement
# prints key=value lines; a baseline is measured in the same run.
#   html_stall   a third client's QUERY p50/p99 quiet and while 2 clients loop on a 1 MB
#                HTML FINGERPRINT: with fingerprint-threads 0 (on the event loop, the
#                baseline) and with the default pool (html_stall.py), 3 runs each
#   conns        1,100 slow senders (no password), 1,200 slow metrics connections at a
#                descriptor limit of 1,100 (password), wrong passwords over 100
#                connections (conns.py)
#   memory       1,000 unauthenticated 160 KiB requests; 40 clients not reading 1 MiB
#                replies at max-output-total 64m (memory.py)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export SIMHASH_BIN=${1:-$(cd "$here/../.." && pwd)/build}/bin
. "$here/../../tests/integration/lib.sh"
th_init bench-hostile
th_need_bins simhash-shard simhash-coordinator
th_start_redis r
th_start_shard w "$TH_REDIS_PORT" 0-255 6 3
shard=127.0.0.1:$TH_SHARD_PORT
for run in 1 2 3; do
    for threads in 0 2; do
        th_start_coord "c$threads-$run" 6 3 5000 "$shard" "" --fingerprint-threads "$threads"
        timeout 600 python3 "$here/html_stall.py" --port "$TH_COORD_PORT" --queries 1000 \
            --label "fingerprint-threads=$threads" || th_fail "html_stall with fingerprint-threads $threads"
        th_stop "$TH_COORD_PID"
    done
done
ulimit -n 8192 2>/dev/null || true
th_start_coord open 6 3 5000 "$shard"
timeout 300 python3 "$here/conns.py" slow --port "$TH_COORD_PORT" --conns 1100 --seconds 20 || th_fail "conns slow"
th_stop "$TH_COORD_PID"
printf 'bench-secret\n' >"$TH_DIR/pw"
mp=$(th_free_port)
ulimit -Sn 1100
th_start_coord pw 6 3 5000 "$shard" "" --password-file "$TH_DIR/pw" --metrics-port "$mp"
ulimit -Sn 8192 2>/dev/null || true
log0=$(stat -c %s "$TH_DIR/pw.log")
timeout 300 python3 "$here/conns.py" metrics --port "$TH_COORD_PORT" --metrics-port "$mp" --conns 1200 \
    --clients 20 --seconds 20 --password bench-secret || th_fail "conns metrics"
echo "log_growth_bytes=$(( $(stat -c %s "$TH_DIR/pw.log") - log0 ))"
timeout 300 python3 "$here/conns.py" auth --port "$TH_COORD_PORT" --conns 100 --seconds 10 || th_fail "conns auth"
timeout 300 python3 "$here/memory.py" unauth --port "$TH_COORD_PORT" --pid "$(th_child_pid "$TH_COORD_PID")" \
    --conns 1000 --password bench-secret || th_fail "memory unauth"
th_start_coord out 6 3 5000 "$shard" "" --max-output-total 64m
timeout 300 python3 "$here/memory.py" output --port "$TH_COORD_PORT" --pid "$(th_child_pid "$TH_COORD_PID")" \
    --conns 40 --requests 16 --seconds 10 || th_fail "memory output"
