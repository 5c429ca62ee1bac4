#!/usr/bin/env bash
# test_split_limit.sh: a worker's split limit follows the listpack settings of
# the Redis node it is connected to, read again at every connection (a failover to a
# node with another redis.conf, a restart): a node at 256 entries gives 256; the same
# node set to 128 and the worker's connections dropped (CLIENT KILL) gives 128, said
# in the log; the option split-limit stays a cap (100 under 256 and 128, the node's 64
# under it); writes go on through the change.
set -u
. "$(dirname "$0")/lib.sh"
th_init split_limit
th_need_bins simhash-shard simhash-coordinator
th_start_redis_on r "$(th_free_port)" --zset-max-listpack-entries 256 --hash-max-listpack-entries 256
rport=$TH_REDIS_PORT
th_start_shard a "$rport" 0-255 6 3
a=$TH_SHARD_PORT
TH_SPLIT_LIMIT=100 th_start_shard b "$rport" 0-255 6 3
b=$TH_SHARD_PORT
th_start_coord c 6 3 5000 "127.0.0.1:$a"
c=$TH_COORD_PORT

limit() { timeout 10 redis-cli -p "$1" shard.info | tr -d '\r' | sed -n 's/^split_limit://p'; }
wait_limit() {  # wait_limit PORT WANT: up to 20 s
    local i=0
    while [ "$(limit "$1")" != "$2" ]; do
        i=$((i + 1))
        [ $i -lt 200 ] || th_fail "worker $1: split_limit $(limit "$1"), want $2"
        sleep 0.1
    done
}
# node_limits N: the node's zset/hash-max-listpack-entries set to N, every worker
# connection dropped: each worker reconnects and reads them
node_limits() {
    timeout 10 redis-cli -p "$rport" config set zset-max-listpack-entries "$1" >/dev/null &&
        timeout 10 redis-cli -p "$rport" config set hash-max-listpack-entries "$1" >/dev/null ||
        th_fail "CONFIG SET $1"
    timeout 10 redis-cli -p "$rport" client kill type normal >/dev/null || th_fail "CLIENT KILL"
}
add() {   # add FP: one SIMHASH.ADD through the coordinator, retried while workers reconnect
    local i=0 out
    while :; do
        out=$(timeout 10 redis-cli -p "$c" simhash.add "$1" "doc-$1" 2>&1)
        [ "$out" = 1 ] && return 0
        i=$((i + 1))
        [ $i -lt 100 ] || th_fail "SIMHASH.ADD $1: $out"
        sleep 0.2
    done
}

wait_limit "$a" 256
wait_limit "$b" 100
add 1001
node_limits 128
wait_limit "$a" 128
wait_limit "$b" 100
grep -q 'buckets split at 128 entries from now on (were 256)' "$TH_DIR/a.log" ||
    th_fail "worker a did not log the change: $(grep -i split "$TH_DIR/a.log" | tail -n 3)"
add 1002
node_limits 64
wait_limit "$a" 64
wait_limit "$b" 64
add 1003
out=$(timeout 10 redis-cli -p "$c" simhash.query 1002 distance 0 | tr -d '\r')
case "$out" in *doc-1002*) ;; *) th_fail "fingerprint 1002 not found: $out" ;; esac
th_log "split limit 256 -> 128 -> 64 with the node (cap 100: 100 -> 100 -> 64); PASS"
