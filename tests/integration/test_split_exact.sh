#!/usr/bin/env bash
# test_split_exact.sh: elastic buckets (docs/elastic-buckets.md) end to end,
# exactness while buckets split. For (blocks, distance) (6,3), (5,3), (4,3),
# (8,2): redis-server + 2 workers with a split limit of 4 (so thousands
# of buckets split while the corpus loads, and queries meet buckets that split under
# them) + coordinator; the planted corpus of simhash_e2e.py (random bases, copies with
# 1..k+2 flipped bits, fingerprints shared by two documents) loaded with pipelined
# SIMHASH.ADD, then every stored fingerprint and near misses queried and compared with
# brute force (0..k flipped bits found, k+1 not, distances, ids and order right). Then
# the buckets themselves: the workers report splits, the meta says layout 4, every
# live bucket of the directories holds fewer entries than the limit. First, a split
# limit of 1 is refused before anything is written.
set -u
. "$(dirname "$0")/lib.sh"
th_init split-exact
th_need_bins simhash-shard simhash-coordinator
DRIVER="$TH_SRC/tests/tools/simhash_e2e.py"
BASES=${E2E_BASES:-200}
LIMIT=4

# settings refused at start, before a new corpus's meta is written
th_start_redis redis-bad
out=$(timeout 20 "$TH_BIN/simhash-shard" --port 0 --redis-port "$TH_REDIS_PORT" \
    --split-limit 1 2>&1); rc=$?
[ $rc -ne 0 ] && [[ $out == *"split-limit 1"* ]] || th_fail "--split-limit 1: exit $rc, $out"
[ "$(timeout 5 redis-cli -p "$TH_REDIS_PORT" exists simhash:meta)" = 0 ] ||
    th_fail "a refused worker wrote simhash:meta"
th_stop "$TH_REDIS_PID"

for setting in "6 3" "5 3" "4 3" "8 2"; do
    set -- $setting
    blocks=$1 dist=$2
    th_log "blocks $blocks distance $dist, split limit $LIMIT"
    th_deploy "$blocks-$dist" 2 "$blocks" "$dist" 5000 --split-limit "$LIMIT"
    rport=$TH_DEPLOY_RPORT cport=$TH_DEPLOY_PORT
    state="$TH_DIR/state-$blocks-$dist.json"

    timeout 170 python3 "$DRIVER" load --port "$cport" --blocks "$blocks" --distance "$dist" \
        --bases "$BASES" --seed "3$blocks$dist" --state-out "$state" \
        || th_fail "load (blocks $blocks distance $dist)"
    timeout 170 python3 "$DRIVER" verify --port "$cport" --state "$state" --seed 7 --batch 100 \
        || th_fail "verify (blocks $blocks distance $dist)"

    meta=$(timeout 10 redis-cli -p "$rport" hget simhash:meta layout)
    [ "$meta" = 4 ] || th_fail "simhash:meta layout '$meta', want 4"
    splits=0
    for w in $TH_DEPLOY_WPORTS; do
        n=$(timeout 10 redis-cli -p "$w" shard.info | tr -d '\r' | sed -n 's/^bucket_splits://p')
        [ -n "$n" ] || th_fail "SHARD.INFO of worker $w has no bucket_splits"
        splits=$((splits + n))
    done
    dirs=$(timeout 30 redis-cli -p "$rport" --scan --pattern 'r:{*' | wc -l)
    th_log "  $splits buckets split by the workers; $dirs shard directories"
    [ "$splits" -ge 300 ] || th_fail "only $splits splits: the test did not exercise splitting"
    # every live bucket (a run of its directory) stays below the limit
    keys=$(th_bucket_keys "$rport") || th_fail "cannot read the keys of redis $rport"
    th_log "  live buckets: $(th_kv buckets "$keys"), largest $(th_kv largest "$keys")"
    [ "$(th_kv buckets "$keys")" -gt 0 ] && [ "$(th_kv largest "$keys")" -lt "$LIMIT" ] ||
        th_fail "buckets over the limit $LIMIT: $(echo $keys)"
    for p in $TH_DEPLOY_PIDS; do th_stop "$p"; done
done
th_log "PASS"
