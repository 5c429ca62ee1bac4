#!/usr/bin/env bash
# test_repair_noscript.sh: the worker's repair pass completes a stale write lock when
# Redis has lost the scripts it sends by name (SCRIPT FLUSH, as after a restart): the
# worker's Redis connection sends a call answered NOSCRIPT again at once with the
# script's text (shard/redis.c), the repair's lock takeover and table writes as any
# other. The worker sends scripts by name. The lock script is cached again by an
# ordinary write first, so only the table-write script the repair uses is missing
# when the stale lock is found; without the re-send the lock would stay for good.
set -u
. "$(dirname "$0")/lib.sh"
th_init repair_noscript
th_need_bins simhash simhash-shard simhash-coordinator
command -v redis-cli >/dev/null || th_fail "redis-cli not found"
B=6 K=3

th_start_redis redis
rport=$TH_REDIS_PORT
th_start_shard shard "$rport" 0-255 $B $K
wport=$TH_SHARD_PORT
th_start_coord coord $B $K 5000 "127.0.0.1:$wport"
cport=$TH_COORD_PORT
r() { timeout 10 redis-cli -p "$rport" "$@" 2>&1; }
w() { timeout 10 redis-cli -p "$wport" "$@" 2>&1; }

/usr/bin/python3 -c 'import random
r = random.Random(31)
for i in range(200):
    print(r.getrandbits(64), "doc-%d" % i)' >"$TH_DIR/load.txt"
timeout 120 "$TH_BIN/simhash" load --port "$cport" "$TH_DIR/load.txt" >/dev/null || th_fail "simhash load"

[ "$(r SCRIPT FLUSH)" = OK ] || th_fail "SCRIPT FLUSH"
# an ordinary write caches the lock script (and the write's own) again
[ "$(timeout 10 redis-cli -p "$cport" SIMHASH.ADD 12345678901234567 after-flush)" = 1 ] ||
    th_fail "SIMHASH.ADD after SCRIPT FLUSH"
# a writer that took C's lock (lease 1 ms), stored its document and died
C=9876543210987654321
[ "$(w SHARD.LOCK "$C" dead 1 A doc-c | head -1)" = 1 ] || th_fail "SHARD.LOCK of C"

locks() { local k n=0; for k in $(r --scan --pattern 'w:*'); do n=$((n + $(r HLEN "$k"))); done; echo $n; }
i=0
until [ "$(locks)" = 0 ]; do
    [ $i -lt 120 ] || th_fail "the stale lock is still held after 60 s: $(grep -c NOSCRIPT "$TH_DIR/shard.log") NOSCRIPT lines in the worker's log"
    sleep 0.5
    i=$((i + 1))
done
out=$(timeout 10 redis-cli -p "$cport" SIMHASH.QUERY "$C" DISTANCE 0 | tr '\n' ' ')
[[ $out == *doc-c* ]] || th_fail "C not found with its document after the repair: $out"
out=$(timeout 120 "$TH_BIN/simhash" fsck -q --redis "127.0.0.1:$rport") ||
    th_fail "fsck after the repair: $out"
ns=$(w SHARD.INFO | tr -d '\r' | sed -n 's/^scripts_not_cached://p')
[ "${ns:-0}" -gt 0 ] || th_fail "SHARD.INFO scripts_not_cached is '${ns}' after SCRIPT FLUSH"
th_log "stale lock repaired after SCRIPT FLUSH in $((i / 2)) s; fsck clean; $ns calls sent again whole"
