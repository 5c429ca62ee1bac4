#!/usr/bin/env bash
# test_tryagain.sh: a write while its slot is migrating. In a Redis Cluster (3 masters,
# a worker beside each), a fingerprint is stored; its table-0 slot is then marked
# MIGRATING / IMPORTING. The lock script's keys are now split between "here" and
# "absent" (its overflow set and directory do not exist), so Redis answers -TRYAGAIN;
# the worker sends the command again (10 ms doubling) instead of failing the write.
# While an ADD of that fingerprint waits, the slot's keys are moved and the slot given
# to the other node: the ADD is acknowledged, the worker counted its retries, and the
# fingerprint answers with both ids from its new node.
set -u
. "$(dirname "$0")/lib.sh"
th_init tryagain
th_need_bins simhash-shard simhash-coordinator
. "$(dirname "$0")/cluster_lib.sh"
rcli() { timeout 10 redis-cli -p "$@"; }

cl_start_cluster tc 3 0
workers=()
for i in 0 1 2; do
    th_start_shard "w$i" "${CL_PORTS[$i]}" 0-255 6 3 "" --cluster yes
    workers+=("127.0.0.1:$TH_SHARD_PORT")
    wport[$i]=$TH_SHARD_PORT
done
th_start_coord coord 6 3 5000 "${workers[*]}" "" --cluster-node "127.0.0.1:${CL_PORTS[0]}"
c=$TH_COORD_PORT
F=1234567890123
for _ in $(seq 1 100); do
    r=$(rcli "$c" simhash.add "$F" doc-1 2>&1)
    [ "$r" = 1 ] && break
    sleep 0.2
done
[ "$r" = 1 ] || th_fail "first add: $r"

# the slot of F's table-0 keys (its table-0 bucket is the only s:{0: key), its owner,
# another master
hkey=
for p in "${CL_PORTS[@]}"; do
    k=$(rcli "$p" --scan --pattern 's:{0:*' | head -n 1)
    [ -n "$k" ] && { hkey=$k; break; }
done
[ -n "$hkey" ] || th_fail "no table-0 bucket found"
slot=$(rcli "${CL_PORTS[0]}" cluster keyslot "$hkey")
src=$(cl_slot_owner "$slot")
dst=
for p in $(cl_master_ports); do [ "$p" != "$src" ] && { dst=$p; break; }; done
src_id=$(rcli "$src" cluster myid) dst_id=$(rcli "$dst" cluster myid)
src_w=
for i in 0 1 2; do [ "${CL_PORTS[$i]}" = "$src" ] && src_w=${wport[$i]}; done
th_log "F's keys in slot $slot on 127.0.0.1:$src; moving them to 127.0.0.1:$dst"
before=$(rcli "$src_w" shard.info | tr -d '\r' | sed -n 's/^cluster_tryagain://p')

[ "$(rcli "$dst" cluster setslot "$slot" importing "$src_id")" = OK ] || th_fail "IMPORTING"
[ "$(rcli "$src" cluster setslot "$slot" migrating "$dst_id")" = OK ] || th_fail "MIGRATING"
# an ADD of F now meets -TRYAGAIN; it waits while the keys move
rcli "$c" simhash.add "$F" doc-2 >"$TH_DIR/add.out" 2>&1 &
apid=$!
sleep 0.3
for k in $(rcli "$src" cluster getkeysinslot "$slot" 1000); do
    rcli "$src" migrate 127.0.0.1 "$dst" "$k" 0 5000 >/dev/null || th_fail "MIGRATE $k"
done
for p in $(cl_master_ports); do rcli "$p" cluster setslot "$slot" node "$dst_id" >/dev/null; done
wait "$apid"
out=$(cat "$TH_DIR/add.out")
[ "$out" = 1 ] || th_fail "ADD during the slot's migration answered '$out' (want 1)"
after=$(rcli "$src_w" shard.info | tr -d '\r' | sed -n 's/^cluster_tryagain://p')
[ "${after:-0}" -gt "${before:-0}" ] || th_fail "the worker did not retry after -TRYAGAIN ($before -> $after)"
got=$(rcli "$c" simhash.query "$F" DISTANCE 0 | tr '\n' ' ')
[ "$got" = "$F 0 doc-1 doc-2 " ] || th_fail "query after the move: '$got'"
th_log "ADD while slot $slot migrated: acknowledged after $((after - before)) -TRYAGAIN retries; both ids found on the new node"
th_log "PASS"
