#!/usr/bin/env bash
# test_cluster_corpora.sh: two corpora in one Redis Cluster. A 3-master cluster (no
# replicas); corpora "a" and "b" (b with a split limit of 8), each with a shard worker
# (cluster yes) beside every master and its own coordinator. Both load a planted
# corpus (other seeds) and are verified against brute force: nothing missed, nothing
# extra, so neither sees the other's fingerprints; then the same fingerprints with
# other ids in each (tests/tools/ids_check.py isolate). Every key carries its
# corpus's prefix and the hash tags are intact: a key's slot is that of its {t:xx}.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
th_init cluster-corpora
th_need_bins simhash-shard simhash-coordinator
command -v redis-cli >/dev/null || th_fail "redis-cli not found"
DRIVER="$TH_SRC/tests/tools/simhash_e2e.py"
IDS="$TH_SRC/tests/tools/ids_check.py"
export PYTHONPATH="$TH_SRC/tests/tools"
BASES=${E2E_BASES:-150}

cl_start_cluster cl 3 0
for p in "${CL_PORTS[@]}"; do     # the listpack limits of deploy/redis-cluster-node.conf
    for s in zset-max-listpack-entries hash-max-listpack-entries; do
        timeout 5 redis-cli -p "$p" config set "$s" 2048 >/dev/null
    done
done
th_log "cluster up: ${CL_PORTS[*]}"
info_field() { timeout 5 redis-cli -p "$1" SIMHASH.INFO | tr -d '\r' | sed -n "s/^$2://p"; }
wait_routing() {
    local i=0
    while [ $i -lt 200 ]; do
        [ "$(info_field "$1" cluster_state)" = ok ] && return 0
        sleep 0.1
        i=$((i + 1))
    done
    th_fail "coordinator routing not complete: $(info_field "$1" map_last_error)"
}

declare -A CPORT
for spec in "a 128" "b 8"; do
    set -- $spec
    name=$1 limit=$2 workers=""
    for i in 0 1 2; do
        th_start_shard "shard-$name-$i" "${CL_PORTS[$i]}" 0-255 6 3 "" --cluster yes \
            --corpus "$name" --split-limit "$limit"
        workers="$workers 127.0.0.1:$TH_SHARD_PORT"
    done
    th_start_coord "coord-$name" 6 3 3000 "$workers" "" --cluster-node "127.0.0.1:${CL_PORTS[0]}" \
        --health-interval-ms 200 --corpus "$name"
    CPORT[$name]=$TH_COORD_PORT
    wait_routing "$TH_COORD_PORT"
    [ "$(info_field "$TH_COORD_PORT" layout)" = 4 ] || th_fail "corpus $name: layout is not 4"
done

for name in a b; do
    state="$TH_DIR/state-$name.json"
    seed=$([ "$name" = a ] && echo 63 || echo 64)
    timeout 240 python3 "$DRIVER" load --port "${CPORT[$name]}" --blocks 6 --distance 3 \
        --bases "$BASES" --seed "$seed" --state-out "$state" || th_fail "load of corpus $name"
done
for name in a b; do
    timeout 240 python3 "$DRIVER" verify --port "${CPORT[$name]}" --state "$TH_DIR/state-$name.json" \
        --seed 7 || th_fail "verify of corpus $name beside the other"
done
timeout 240 python3 "$IDS" isolate "${CPORT[a]}" "${CPORT[b]}" || th_fail "isolate in a cluster"

# prefixes and hash tags: every key starts with a: or b:, and sits in the slot of its tag
n=0
for p in "${CL_PORTS[@]}"; do
    bad=$(timeout 10 redis-cli -p "$p" --scan | grep -vE '^(a|b):' | head -n 3)
    [ -z "$bad" ] || th_fail "keys without a corpus prefix on $p: $bad"
    for k in $(timeout 10 redis-cli -p "$p" --scan | head -n 20); do
        tag=${k#*\{}
        tag=${tag%%\}*}
        [ "$(timeout 5 redis-cli -p "$p" cluster keyslot "$k")" = \
          "$(timeout 5 redis-cli -p "$p" cluster keyslot "{$tag}")" ] || th_fail "key $k is not in its tag's slot"
        n=$((n + 1))
    done
done
[ "$n" -gt 30 ] || th_fail "only $n keys looked at"
[ -n "$(timeout 10 redis-cli -c -p "${CL_PORTS[0]}" hget a:simhash:meta layout)" ] || th_fail "no a:simhash:meta"
# the nodes have the limits the layout needs: no worker warned
grep -l "listpack" "$TH_DIR"/shard-*.log && th_fail "a worker warned about listpack limits that were set"
th_log "PASS"
