#!/usr/bin/env bash
# test_bucket_scripts.sh: the Redis side of elastic buckets (the zset script of
# common/store/lua/layout4_*.lua, docs/elastic-buckets.md) against a real redis-server,
# checked by brute force (tests/tools/bucket_check.py):
#   1. 4 writers and 2 readers, each with its own directory cache, a split limit of 6:
#      thousands of splits while every query answer is checked (nothing acknowledged
#      missing, nothing removed or outside the range answered, no repeat); then the
#      layout (live buckets = runs of the directory, members within bounds, below the
#      limit, listpacks; every other key a tombstone) and the members, exactly those acknowledged
#   2. tombstones living 1 s: writers whose caches name expired buckets are told to
#      read the directory again (nothing written into a dead bucket)
#   3. redis-server SIGKILLed mid-run with appendfsync always, restarted from its AOF:
#      no half-done split (the same layout checks) and every acknowledged write kept
#      (the writes in flight at the kill, one per writer at most, may go either way)
set -u
. "$(dirname "$0")/lib.sh"
th_init bucket_scripts
CHECK="$TH_SRC/tests/tools/bucket_check.py"
export PYTHONPATH="$TH_SRC/tests/tools"

# ---- 1. splits under concurrent writers and readers
th_start_redis r1
timeout 300 python3 "$CHECK" run "$TH_REDIS_PORT" --seconds 8 --limit 6 --log "$TH_DIR/acks1" \
    || th_fail "concurrent splits (section 1)"
timeout 120 python3 "$CHECK" verify "$TH_REDIS_PORT" --limit 6 --log "$TH_DIR/acks1" \
    || th_fail "layout after section 1"
th_stop "$TH_REDIS_PID"

# ---- 2. expired tombstones
th_start_redis r2
timeout 300 python3 "$CHECK" run "$TH_REDIS_PORT" --seconds 8 --limit 5 --ttl 1 \
    --log "$TH_DIR/acks2" || th_fail "splits with tombstones of 1 s (section 2)"
timeout 120 python3 "$CHECK" verify "$TH_REDIS_PORT" --limit 5 --log "$TH_DIR/acks2" \
    || th_fail "layout after section 2"
th_stop "$TH_REDIS_PID"

# ---- 3. SIGKILL of Redis mid-split, restart from the AOF
port=$(th_free_port)
th_start_redis_on r3 "$port" --appendonly yes --appendfsync always
rpid=$TH_REDIS_PID
timeout 300 python3 "$CHECK" run "$port" --seconds 60 --limit 6 --log "$TH_DIR/acks3" \
    >"$TH_DIR/run3.out" 2>&1 &
drv=$!
i=0
while [ "$( (cat "$TH_DIR/acks3" 2>/dev/null || true) | wc -l)" -lt 3000 ]; do
    i=$((i + 1))
    [ $i -lt 1200 ] || th_fail "fewer than 3000 acknowledged writes in 60 s: $(cat "$TH_DIR/run3.out")"
    kill -0 $drv 2>/dev/null || th_fail "the run ended early: $(cat "$TH_DIR/run3.out")"
    sleep 0.05
done
victim=$(th_child_pid "$rpid")
[ -n "$victim" ] || th_fail "no redis-server process under $rpid"
kill -KILL "$victim"
th_log "killed redis-server $victim after $(wc -l <"$TH_DIR/acks3") acknowledged writes"
if wait $drv; then th_fail "the run did not notice Redis going away"; fi
{ wait "$rpid"; } 2>/dev/null
th_start_redis_on r3 "$port" --appendonly yes --appendfsync always
timeout 120 python3 "$CHECK" verify "$port" --limit 6 --log "$TH_DIR/acks3" --inflight 4 \
    || th_fail "layout after the kill and restart"
th_log "ok"
