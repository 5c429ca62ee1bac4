#!/usr/bin/env bash
# test_e2e_exact.sh: distributed mode end to end, exactness. For several (blocks,
# distance, bucket bits) settings, in the data layout a new corpus gets (2; with
# TH_LAYOUT=1 layout 1, tests/CMakeLists.txt): redis-server + 2 shard workers
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

# blocks distance bucket_bits bases batch: bucket_bits 8 and 24 exercise the other key
# layouts; at 24 with 16-bit table prefixes a query reads 256 bucket keys per table
# (1024 ZRANGEBYLEX), so fewer queries go in one pipelined write to stay under the
# workers' bound on Redis commands in flight (past it they answer -BUSY)
# 12 and 20 bits: members of 7 and 6 bytes whose top 4 bits repeat the bucket's
for setting in "6 3 16 $BASES 200" "5 3 16 $BASES 200" "4 3 16 $BASES 200" "8 2 16 $BASES 200" \
        "6 3 8 100 200" "4 3 24 60 4" "6 3 12 100 200" "5 3 20 60 20"; do
    set -- $setting
    blocks=$1 dist=$2 bbits=$3 nbases=$4 batch=$5
    th_log "blocks $blocks distance $dist bucket_bits $bbits"
    th_deploy "$blocks-$dist-$bbits" 2 "$blocks" "$dist" 2000 --bucket-bits "$bbits"
    rport=$TH_DEPLOY_RPORT cport=$TH_DEPLOY_PORT
    state="$TH_DIR/state-$blocks-$dist-$bbits.json"

    timeout 240 python3 "$DRIVER" load --port "$cport" --blocks "$blocks" --distance "$dist" \
        --bases "$nbases" --seed "$blocks$dist$bbits" --state-out "$state" \
        || th_fail "load (blocks $blocks distance $dist bucket_bits $bbits)"
    timeout 240 python3 "$DRIVER" verify --port "$cport" --state "$state" --seed 7 --batch "$batch" \
        || th_fail "verify (blocks $blocks distance $dist bucket_bits $bbits)"

    # the data really went to both workers' shards, in the layout of bucket_bits
    keys=$(timeout 10 redis-cli -p "$rport" dbsize)
    [ "${keys:-0}" -gt 500 ] || th_fail "only ${keys:-0} keys in Redis"
    meta=$(timeout 10 redis-cli -p "$rport" hget simhash:meta bucket_bits)
    [ "$meta" = "$bbits" ] || th_fail "simhash:meta bucket_bits '$meta', want $bbits"
    low=$(timeout 10 redis-cli -p "$rport" --scan --pattern 's:{0:0*' | head -n 1)
    high=$(timeout 10 redis-cli -p "$rport" --scan --pattern 's:{0:f*' | head -n 1)
    [ -n "$low" ] && [ -n "$high" ] || th_fail "table 0 keys missing in low or high shards"

    for p in $TH_DEPLOY_PIDS; do th_stop "$p"; done
done
th_log "PASS"
