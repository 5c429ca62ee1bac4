#!/usr/bin/env bash
# sc_exact.sh: exactness across hosts with latency. Three Redis Cluster masters, each
# with its worker in its own host (r1-r3), the coordinator in host c1 and the client in
# host cl; every connection between hosts crosses a delay-proxy (0.5-1.5 ms each way).
# For (blocks, distance) (6,3) and (8,2): a planted corpus (bases, copies with 1..k+2
# flipped bits, shared fingerprints) loaded through the coordinator and every stored
# fingerprint, near misses, DISTANCE d < k and LIMIT queried against brute force
# (tests/tools/simhash_e2e.py): copies within k bits must be found, k+1 must not.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../integration/lib.sh"
th_init mh-exact
. "$HERE/mh_lib.sh"
trap 'rc=$?; mh_cleanup; (exit $rc); th_cleanup' EXIT
th_need_bins simhash-shard simhash-coordinator delay-proxy
E2E="$TH_SRC/tests/tools/simhash_e2e.py"
BASES=${MH_BASES:-200}

mh_setup
for i in 1 2 3; do mh_host "r$i" $((10 + i)); done
mh_host c1 21
mh_host cl 31
mh_cluster_up 0 r1 r2 r3
mh_proxy c1 7000
th_log "cluster r1-r3 up, delay ${MH_DELAY_US}+0..${MH_JITTER_US} us each way between hosts"
for setting in "6 3" "8 2"; do
    set -- $setting
    b=$1 k=$2
    wp=()
    for h in r1 r2 r3; do
        mh_worker "$h" "$b" "$k" --cluster yes --redis-announce "${MH_IP[$h]}:6379"
        wp+=("$MH_WORKER_PID")
    done
    mh_coord c1 "$b" "$k" 3000 "${MH_IP[r1]}:7100 ${MH_IP[r2]}:7100 ${MH_IP[r3]}:7100" \
        --cluster-node "${MH_IP[r1]}:6379" --cluster-node "${MH_IP[r2]}:6379"
    cp=$MH_COORD_PID
    mh_wait_routing cl "${MH_IP[c1]}" 30 || th_fail "routing not complete: $MH_REPLY"
    st="$TH_DIR/state-$b-$k.json"
    mh_exec cl timeout 300 /usr/bin/python3 "$E2E" load --host "${MH_IP[c1]}" --port 7000 \
        --blocks "$b" --distance "$k" --bases "$BASES" --seed "$b$k" --state-out "$st" \
        >"$TH_DIR/load-$b-$k.out" 2>&1 || { cat "$TH_DIR/load-$b-$k.out"; th_fail "load ($b,$k)"; }
    mh_exec cl timeout 300 /usr/bin/python3 "$E2E" verify --host "${MH_IP[c1]}" --port 7000 \
        --state "$st" --seed 7 --batch 50 >"$TH_DIR/verify-$b-$k.out" 2>&1 ||
        { cat "$TH_DIR/verify-$b-$k.out"; th_fail "verify ($b,$k)"; }
    keys=""
    for h in r1 r2 r3; do
        n=$(mh_exec "$h" timeout 5 redis-cli -p 6379 dbsize)
        [ "${n:-0}" -gt 50 ] || th_fail "only ${n:-0} keys on $h"
        keys="$keys $h:$n"
    done
    echo "exact ($b,$k): $(grep -h '^loaded' "$TH_DIR/load-$b-$k.out"); $(grep -h 'queries at distance' "$TH_DIR/verify-$b-$k.out" | head -n 1); $(tail -n 1 "$TH_DIR/verify-$b-$k.out"); keys$keys"
    th_stop "$cp"
    for p in "${wp[@]}"; do th_stop "$p"; done
    for h in r1 r2 r3; do mh_exec "$h" timeout 10 redis-cli -p 6379 flushall >/dev/null; done
done
th_log "PASS"
