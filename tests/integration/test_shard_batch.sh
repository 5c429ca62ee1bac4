#!/usr/bin/env bash
# test_shard_batch.sh: the batched write commands of simhash-shard (SHARD.MLOCK,
# MUNLOCK, MADD, MDEL; docs/protocol.md, "Batched writes") against two real workers
# on one redis-server with a split limit of 4 (tests/tools/shard_batch_check.py):
# malformed and oversized batches answered with errors and nothing written; a lock held
# by another writer in the middle of a batch; buckets split in the middle of batches;
# one zsets call whose entries share a bucket it splits; one whose keys are those of
# buckets that split before it (followed, the points reported).
set -u
. "$(dirname "$0")/lib.sh"
th_init shard_batch
export PYTHONPATH="$TH_SRC/tests/tools"
CHECK="$TH_SRC/tests/tools/shard_batch_check.py"
th_start_redis r
rport=$TH_REDIS_PORT
TH_SPLIT_LIMIT=4 th_start_shard a "$rport" 0-255 6 3
a=$TH_SHARD_PORT
TH_SPLIT_LIMIT=4 th_start_shard b "$rport" 0-255 6 3
b=$TH_SHARD_PORT
th_start_coord c 6 3 10000 "127.0.0.1:$a"
c=$TH_COORD_PORT
for mode in bad follow stale busy split; do
    timeout 300 python3 "$CHECK" "$mode" "$rport" "$a" "$b" "$c" 4 || th_fail "$mode"
done
splits=$(timeout 10 redis-cli -p "$b" shard.info | tr -d '\r' | sed -n 's/^bucket_splits://p')
[ "${splits:-0}" -ge 50 ] || th_fail "only ${splits:-0} splits by worker b: splitting not exercised"
th_log "worker b split $splits buckets; PASS"
