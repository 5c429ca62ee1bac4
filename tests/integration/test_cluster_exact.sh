#!/usr/bin/env bash
# test_cluster_exact.sh: distributed mode on a Redis Cluster, exactness. A 3-master
# cluster (no replicas), one shard worker (cluster yes) beside each master and a
# coordinator with cluster-node. For (blocks, distance) = (6,3) and (8,2): a planted
# corpus loaded through the coordinator and every stored fingerprint and near misses
# queried against brute force (nothing missed or extra); the keys really spread over
# all three masters; then slots moved by hand (redis-cli --cluster reshard) and
# everything verified again: the workers follow -MOVED (counted in SIMHASH.INFO
# cluster_moved), the coordinator refreshes its map (map_changes), and afterwards
# requests go straight to the new owner (no new redirections). Last, one slot is
# migrated by hand in two halves: reads in between get -ASK, followed with ASKING.
# `simhash export` (the SIMHASH.SCAN walk) prints exactly the planted pairs after the
# load, after the reshard and with the slot half migrated, and `simhash fsck --cluster`
# finds the data clean. Registered a second time with a split limit of 4
# (tests/CMakeLists.txt): buckets split while the corpus loads, then move with their
# slots.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
th_init cluster-exact
th_need_bins simhash-shard simhash-coordinator
command -v redis-cli >/dev/null || th_fail "redis-cli not found"
DRIVER="$TH_SRC/tests/tools/simhash_e2e.py"
BASES=${E2E_BASES:-200}

cl_start_cluster cl 3 0
th_log "cluster up: ${CL_PORTS[*]}"

# Field NAME of SIMHASH.INFO of the coordinator on port $1.
info_field() {
    timeout 5 redis-cli -p "$1" SIMHASH.INFO | tr -d '\r' | sed -n "s/^$2://p"
}

# export_check COORD_PORT STATE WHAT: `simhash export` prints exactly the pairs of the
# planted state, none twice; `simhash fsck --cluster` through a master finds it clean.
export_check() {
    local cport=$1 state=$2 what=$3
    python3 - "$state" >"$TH_DIR/want.txt" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
docs = s["docs"] if "docs" in s else s["model"]["docs"]
for fp, ids in docs.items():
    for d in ids:
        print(fp, d)
PY
    sort "$TH_DIR/want.txt" -o "$TH_DIR/want.txt"
    timeout 300 "$TH_BIN/simhash" export --port "$cport" -o "$TH_DIR/export.txt" 2>"$TH_DIR/export.err" ||
        { cat "$TH_DIR/export.err" >&2; th_fail "export $what"; }
    sort "$TH_DIR/export.txt" | cmp -s - "$TH_DIR/want.txt" ||
        th_fail "export $what differs from the planted pairs: $(sort "$TH_DIR/export.txt" | diff - "$TH_DIR/want.txt" | head -5)"
    timeout 300 "$TH_BIN/simhash" fsck --cluster --redis "127.0.0.1:${CL_PORTS[0]}" -q \
        >"$TH_DIR/fsck.out" 2>&1 || { cat "$TH_DIR/fsck.out" >&2; th_fail "fsck $what"; }
    grep -q '^status:clean$' "$TH_DIR/fsck.out" || th_fail "fsck $what: $(cat "$TH_DIR/fsck.out")"
    th_log "export and fsck $what: $(wc -l <"$TH_DIR/export.txt") pairs, $(sed -n 's/^fingerprints://p' "$TH_DIR/fsck.out") fingerprints, clean"
}

# walk_small COORD_PORT: SIMHASH.SCAN one bucket and one value a step (an empty
# window makes the worker list the buckets that exist) gives exactly want.txt
walk_small() {
    PYTHONPATH="$TH_SRC/tests/tools" timeout 300 python3 "$TH_SRC/tests/tools/scan_walk.py" \
        "$1" "$TH_DIR/want.txt" COUNT 1 LIMIT 1 >/dev/null
}

# worker_sum FIELD SHARD_PORTS...: a SHARD.INFO counter summed over those workers
worker_sum() {
    local f=$1 n=0 p v
    shift
    for p in "$@"; do
        v=$(timeout 5 redis-cli -p "$p" shard.info | tr -d '\r' | sed -n "s/^$f://p")
        n=$((n + ${v:-0}))
    done
    echo "$n"
}

# Wait until the coordinator on port $1 reports routing ok (all routes up).
wait_routing() {
    local i=0
    while [ $i -lt 200 ]; do
        [ "$(info_field "$1" cluster_state)" = ok ] && return 0
        sleep 0.1
        i=$((i + 1))
    done
    th_fail "coordinator routing not complete: $(info_field "$1" map_last_error)"
}

# Move N slots from the master of slot FROM_SLOT to the master of slot TO_SLOT.
reshard() {
    local n=$1 from to fid tid
    from=$(cl_slot_owner "$2")
    to=$(cl_slot_owner "$3")
    [ -n "$from" ] && [ -n "$to" ] && [ "$from" != "$to" ] || th_fail "reshard: owners '$from' '$to'"
    fid=$(timeout 5 redis-cli -p "$from" cluster myid)
    tid=$(timeout 5 redis-cli -p "$to" cluster myid)
    timeout 120 redis-cli --cluster reshard "127.0.0.1:$from" --cluster-from "$fid" \
        --cluster-to "$tid" --cluster-slots "$n" --cluster-yes \
        >>"$TH_DIR/reshard.log" 2>&1 || th_fail "redis-cli --cluster reshard failed"
    cl_wait_ok 30 || th_fail "cluster not ok after reshard"
    th_log "moved $n slots from $from to $to"
}

for setting in "6 3" "8 2"; do
    set -- $setting
    blocks=$1 dist=$2
    th_log "blocks $blocks distance $dist"
    wpids=() workers="" wports=()
    for i in 0 1 2; do
        th_start_shard "shard-$blocks-$dist-$i" "${CL_PORTS[$i]}" 0-255 "$blocks" "$dist" "" \
            --cluster yes
        wpids+=("$TH_SHARD_PID")
        wports+=("$TH_SHARD_PORT")
        workers="$workers 127.0.0.1:$TH_SHARD_PORT"
    done
    # the periodic refresh is off (10 min): only MOVED seen by the workers, a worker
    # lost or a new node make the coordinator read the map again
    th_start_coord "coord-$blocks-$dist" "$blocks" "$dist" 3000 "$workers" "" \
        --cluster-node "127.0.0.1:${CL_PORTS[1]}" --cluster-refresh-ms 600000 \
        --health-interval-ms 200
    cport=$TH_COORD_PORT cpid=$TH_COORD_PID
    wait_routing "$cport"
    [ "$(info_field "$cport" cluster_masters)" = 3 ] || th_fail "cluster_masters != 3"
    [ "$(info_field "$cport" cluster_slots_covered)" = 16384 ] || th_fail "slots not all covered"

    state="$TH_DIR/state-$blocks-$dist.json"
    timeout 240 python3 "$DRIVER" load --port "$cport" --blocks "$blocks" --distance "$dist" \
        --bases "$BASES" --seed "$blocks$dist" --state-out "$state" \
        || th_fail "load (blocks $blocks distance $dist)"
    timeout 240 python3 "$DRIVER" verify --port "$cport" --state "$state" --seed 7 \
        || th_fail "verify (blocks $blocks distance $dist)"
    if [ -n "${TH_SPLIT_LIMIT:-}" ]; then   # a tiny split limit
        splits=$(info_field "$cport" bucket_splits)
        th_log "${splits:-0} buckets split while the corpus loaded; requests run" \
            "again $(worker_sum requests_rerun "${wports[@]}")"
        [ "${splits:-0}" -ge 100 ] || th_fail "only ${splits:-0} buckets split"
    fi
    export_check "$cport" "$state" "after the load (blocks $blocks distance $dist)"

    # keys on every master, no data request redirected while the map was right
    for p in "${CL_PORTS[@]}"; do
        k=$(timeout 5 redis-cli -p "$p" dbsize)
        [ "${k:-0}" -gt 100 ] || th_fail "only ${k:-0} keys on master $p"
    done
    moved0=$(info_field "$cport" cluster_moved)
    [ "$moved0" = 0 ] || th_fail "cluster_moved $moved0 before any slot moved"
    changes0=$(info_field "$cport" map_changes)

    # move slots under the coordinator's feet: 400 from the master of slot 0 to the
    # master of slot 16383 (first pass), then from that one to the master of slot 8000
    if [ "$blocks" = 6 ]; then reshard 400 0 16383; else reshard 400 16383 8000; fi
    timeout 240 python3 "$DRIVER" verify --port "$cport" --state "$state" --seed 8 \
        || th_fail "verify after reshard (blocks $blocks distance $dist)"
    export_check "$cport" "$state" "after the reshard (blocks $blocks distance $dist)"
    moved1=$(info_field "$cport" cluster_moved)
    [ "${moved1:-0}" -gt 0 ] || th_fail "no MOVED followed after the reshard (cluster_moved ${moved1:-})"
    # the workers' counters reach the coordinator with the health checks: it refreshes
    i=0
    while [ "$(info_field "$cport" map_changes)" = "$changes0" ] && [ $i -lt 100 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    changes1=$(info_field "$cport" map_changes)
    [ "$changes1" -gt "$changes0" ] || th_fail "map not refreshed after MOVED (map_changes $changes1)"
    sleep 0.5
    moved2=$(info_field "$cport" cluster_moved)
    timeout 240 python3 "$DRIVER" verify --port "$cport" --state "$state" --seed 9 --quick \
        || th_fail "verify after the map refresh (blocks $blocks distance $dist)"
    sleep 0.5
    moved3=$(info_field "$cport" cluster_moved)
    [ "$moved3" = "$moved2" ] || th_fail "requests still redirected after the refresh ($moved2 -> $moved3)"
    th_log "cluster_moved $moved1, cluster_ask $(info_field "$cport" cluster_ask), map_refreshes $(info_field "$cport" map_refreshes), map_changes $changes1"

    if [ "$blocks" = 6 ]; then
        # a slot half migrated by hand (MIGRATING / IMPORTING, half its keys moved):
        # reads of moved keys get -ASK, which the workers follow with ASKING
        src=${CL_PORTS[0]}
        key=$(timeout 10 redis-cli -p "$src" --scan --pattern 's:{0:*' | head -n 1)
        [ -n "$key" ] || th_fail "no table 0 key on master $src"
        slot=$(timeout 5 redis-cli -p "$src" cluster keyslot "$key")
        src=$(cl_slot_owner "$slot")
        dst=${CL_PORTS[1]}
        [ "$dst" != "$src" ] || dst=${CL_PORTS[2]}
        sid=$(timeout 5 redis-cli -p "$src" cluster myid)
        did=$(timeout 5 redis-cli -p "$dst" cluster myid)
        keys=($(timeout 5 redis-cli -p "$src" cluster getkeysinslot "$slot" 1000))
        [ "${#keys[@]}" -ge 2 ] || th_fail "slot $slot has ${#keys[@]} keys"
        half=$(( ${#keys[@]} / 2 ))
        ask0=$(info_field "$cport" cluster_ask)
        [ "$(timeout 5 redis-cli -p "$dst" cluster setslot "$slot" importing "$sid")" = OK ] ||
            th_fail "setslot importing"
        [ "$(timeout 5 redis-cli -p "$src" cluster setslot "$slot" migrating "$did")" = OK ] ||
            th_fail "setslot migrating"
        timeout 20 redis-cli -p "$src" migrate 127.0.0.1 "$dst" "" 0 5000 keys "${keys[@]:0:$half}"             >/dev/null || th_fail "migrate"
        timeout 240 python3 "$DRIVER" verify --port "$cport" --state "$state" --seed 10 \
            || th_fail "verify during a slot migration"
        ask1=$(info_field "$cport" cluster_ask)
        [ "${ask1:-0}" -gt "${ask0:-0}" ] || th_fail "no ASK followed during the migration ($ask0 -> $ask1)"
        timeout 300 "$TH_BIN/simhash" export --port "$cport" 2>/dev/null | sort |
            cmp -s - "$TH_DIR/want.txt" || th_fail "export during a slot migration differs"
        # small steps, one of them in the migrating slot, whose keys are on two nodes
        walk_small "$cport" || th_fail "SIMHASH.SCAN in small steps during a slot migration"
        timeout 20 redis-cli -p "$src" migrate 127.0.0.1 "$dst" "" 0 5000 keys "${keys[@]:$half}" \
            >/dev/null || th_fail "migrate the rest"
        for p in $(cl_master_ports); do
            timeout 5 redis-cli -p "$p" cluster setslot "$slot" node "$did" >/dev/null
        done
        cl_wait_ok 30 || th_fail "cluster not ok after the migration"
        timeout 240 python3 "$DRIVER" verify --port "$cport" --state "$state" --seed 11 --quick \
            || th_fail "verify after the migration"
        th_log "slot $slot: ${#keys[@]} keys moved $src -> $dst in two halves; cluster_ask $ask0 -> $ask1"
    fi

    th_stop "$cpid"
    for p in "${wpids[@]}"; do th_stop "$p"; done
    for p in "${CL_PORTS[@]}"; do
        timeout 10 redis-cli -p "$p" flushall >/dev/null || th_fail "flushall on $p"
    done
done
th_log "PASS"
