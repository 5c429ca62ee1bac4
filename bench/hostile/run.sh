#!/usr/bin/env bash
# bench/hostile/run.sh [BUILD_DIR]: hostile clients on loopback against one deployment
# (redis-server, a worker, a coordinator started here by PID, the integration tests'
# lib.sh): does one client's work or connections hurt the others? Each measurement
# prints key=value lines; a baseline is measured in the same run.
#   html_stall   a third client's QUERY p50/p99 quiet and while 2 clients loop on a 1 MB
#                HTML FINGERPRINT: with fingerprint-threads 0 (on the event loop, the
#                baseline) and with the default pool (html_stall.py)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export SIMHASH_BIN=${1:-$(cd "$here/../.." && pwd)/build}/bin
. "$here/../../tests/integration/lib.sh"
th_init bench-hostile
th_need_bins simhash-shard simhash-coordinator
th_start_redis r
th_start_shard w "$TH_REDIS_PORT" 0-255 6 3
shard=127.0.0.1:$TH_SHARD_PORT
for threads in 0 2; do
    th_start_coord "c$threads" 6 3 5000 "$shard" "" --fingerprint-threads "$threads"
    timeout 600 python3 "$here/html_stall.py" --port "$TH_COORD_PORT" --label "fingerprint-threads=$threads" ||
        th_fail "html_stall with fingerprint-threads $threads"
    th_stop "$TH_COORD_PID"
done
