#!/usr/bin/env bash
# test_reconnect.sh: a worker whose Redis was down for several seconds serves again
# soon after Redis is back: its reconnect backoff is capped at 1 s (it was 5 s, so a
# restart after a long outage stayed unserved for up to 5 s more). Four outages of
# 6 s each; after each, the time from Redis answering PONG to the first SIMHASH.ADD
# the coordinator acknowledges must stay under 2 s (twice the cap: generous for a
# busy machine). With the old backoff the next attempt after such an outage comes
# anywhere within 5 s, so four rounds under 2 s happen about once in 40 runs.
# Real redis-server, simhash-shard, simhash-coordinator on loopback.
set -u
. "$(dirname "$0")/lib.sh"
th_init reconnect
th_need_bins simhash-shard simhash-coordinator
B=6 K=3
rport=$(th_free_port)

# start_redis: redis-server on $rport (no persistence), until a literal PONG
start_redis() {
    th_start_redis_on redis "$rport"
    RPID=$TH_REDIS_PID
}

start_redis
th_start_shard shard "$rport" 0-255 $B $K
th_start_coord coord $B $K 2000 "127.0.0.1:$TH_SHARD_PORT"
cport=$TH_COORD_PORT
cli() { timeout 10 redis-cli -p "$cport" "$@" 2>&1; }
[ "$(cli SIMHASH.ADD 4242 doc-0)" = 1 ] || th_fail "first ADD"

for round in 1 2 3 4; do
    th_stop "$RPID"
    out=$(cli SIMHASH.ADD 4243 "doc-down-$round")
    case "$out" in REDIS*|SHARDDOWN*) ;; *) th_fail "ADD with Redis down answered: $out";; esac
    sleep 6
    start_redis
    t0=$(date +%s%N)
    ok=0
    for _ in $(seq 1 400); do
        out=$(cli SIMHASH.ADD 4244 "doc-up-$round")
        case "$out" in 0|1) ok=1; break;; esac
        sleep 0.05
    done
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    [ $ok = 1 ] || th_fail "round $round: no ADD acknowledged within 20 s of Redis answering PONG (last: $out)"
    th_log "round $round: served again $ms ms after Redis answered PONG"
    [ "$ms" -lt 2000 ] || th_fail "round $round: $ms ms to serve again (want < 2000 ms)"
done
th_log PASS
