#!/usr/bin/env bash
# test_e2e_exact.sh: distributed mode end to end, exactness. For several (blocks,
# distance, split limit) settings: redis-server + 2 shard workers
# (first-byte shards 0-127 and 128-255) + coordinator; a planted corpus (random bases, copies with 1..k+2 flipped
# bits, fingerprints shared by two documents) loaded with pipelined SIMHASH.ADD;
# every stored fingerprint and near misses queried and compared with brute force:
# nothing missed or extra, distances, document ids and order right; DISTANCE d < k,
# LIMIT, and DISTANCE > k refused.
set -u
. "$(dirname "$0")/lib.sh"
th_init e2e-exact
th_need_bins simhash-shard simhash-coordinator
DRIVER="$TH_SRC/tests/tools/simhash_e2e.py"
BASES=${E2E_BASES:-300}

# blocks distance split-limit bases: the default limit (128: no split at this size)
# and smaller ones; at 8 and 4 buckets split while the corpus loads (checked) and
# queries read ranges spread over many buckets
for setting in "6 3 128 $BASES" "5 3 128 $BASES" "4 3 128 $BASES" "8 2 128 $BASES" \
        "6 3 8 100" "4 3 4 60" "6 3 32 100" "5 3 16 60"; do
    set -- $setting
    blocks=$1 dist=$2 limit=$3 nbases=$4
    th_log "blocks $blocks distance $dist split-limit $limit"
    th_deploy "$blocks-$dist-$limit" 2 "$blocks" "$dist" 2000 --split-limit "$limit"
    rport=$TH_DEPLOY_RPORT cport=$TH_DEPLOY_PORT
    state="$TH_DIR/state-$blocks-$dist-$limit.json"

    timeout 240 python3 "$DRIVER" load --port "$cport" --blocks "$blocks" --distance "$dist" \
        --bases "$nbases" --seed "$blocks$dist$limit" --state-out "$state" \
        || th_fail "load (blocks $blocks distance $dist split-limit $limit)"
    timeout 240 python3 "$DRIVER" verify --port "$cport" --state "$state" --seed 7 --batch 200 \
        || th_fail "verify (blocks $blocks distance $dist split-limit $limit)"

    # the data really went to both workers' shards
    keys=$(timeout 10 redis-cli -p "$rport" dbsize)
    [ "${keys:-0}" -gt 500 ] || th_fail "only ${keys:-0} keys in Redis"
    meta=$(timeout 10 redis-cli -p "$rport" hget simhash:meta layout)
    [ "$meta" = 4 ] || th_fail "simhash:meta layout '$meta', want 4"
    low=$(timeout 10 redis-cli -p "$rport" --scan --pattern 's:{0:0*' | head -n 1)
    high=$(timeout 10 redis-cli -p "$rport" --scan --pattern 's:{0:f*' | head -n 1)
    [ -n "$low" ] && [ -n "$high" ] || th_fail "table 0 keys missing in low or high shards"
    if [ "$limit" -le 8 ]; then     # small corpora split only at small limits
        splits=0
        for w in $TH_DEPLOY_WPORTS; do
            n=$(timeout 10 redis-cli -p "$w" shard.info | tr -d '\r' | sed -n 's/^bucket_splits://p')
            splits=$((splits + ${n:-0}))
        done
        [ "$splits" -gt 0 ] || th_fail "no bucket split at split-limit $limit"
    fi

    for p in $TH_DEPLOY_PIDS; do th_stop "$p"; done
done
th_log "PASS"
