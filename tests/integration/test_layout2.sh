#!/usr/bin/env bash
# test_layout2.sh: document ids in both data layouts and corpus names.
#   1. layouts 1 and 2, one Redis, two workers and a coordinator each: 600 ids on one
#      fingerprint, long ids (65..20000 bytes), ids with NUL / newline / CR / 0xff
#      bytes, a fingerprint moving from the bucket hash to its overflow set and back
#      to nothing, DEL with and without an id, exact counters (tests/tools/layout2_ids.py)
#   2. two corpora ("a" in layout 2, "b" in layout 1) in one Redis: the same
#      fingerprints with other ids, each coordinator sees only its corpus; every key
#      carries its corpus's prefix; the same two corpora again under their own names
#      with the unnamed corpus beside them
#   3. refusals: a coordinator of corpus a given a worker of corpus b exits 2 naming
#      it; one whose workers serve corpora of two layouts refuses the later one with
#      "layouts differ"; a coordinator with layout 2 given a layout-1 worker exits 2; a worker
#      configured with layout 2 refuses a layout-1 corpus; a worker without layout or
#      bucket-bits follows the corpus (layout 1, bucket bits 16) and a new corpus
#      gets layout 2 with bucket bits 12
#   4. a malformed id value in a bucket hash: an ADD of that fingerprint is refused
#      with nothing written (no lock left behind), its DEL removes it
set -u
. "$(dirname "$0")/lib.sh"
th_init layout2
th_need_bins simhash-shard simhash-coordinator
IDS="$TH_SRC/tests/tools/layout2_ids.py"
export PYTHONPATH="$TH_SRC/tests/tools"
rcli() { timeout 10 redis-cli -p "$@"; }

# ---- 1. ids in both layouts
for layout in 1 2; do
    th_log "layout $layout: many, long and binary ids"
    th_start_redis "redis-ids-$layout"
    r=$TH_REDIS_PORT rpid=$TH_REDIS_PID
    th_start_shard "ids-a-$layout" "$r" 0-127 6 3 "" --layout "$layout"
    a=$TH_SHARD_PORT apid=$TH_SHARD_PID
    th_start_shard "ids-b-$layout" "$r" 128-255 6 3 "" --layout "$layout"
    b=$TH_SHARD_PORT bpid=$TH_SHARD_PID
    th_start_coord "ids-coord-$layout" 6 3 5000 "127.0.0.1:$a 127.0.0.1:$b"
    c=$TH_COORD_PORT cpid=$TH_COORD_PID
    timeout 300 python3 "$IDS" ids "$c" "$r" --layout "$layout" || th_fail "ids, layout $layout"
    [ "$(rcli "$r" hget simhash:meta layout)" = "$layout" ] || th_fail "meta layout is not $layout"
    want_bb=$([ "$layout" = 1 ] && echo 16 || echo 12)
    [ "$(rcli "$r" hget simhash:meta bucket_bits)" = "$want_bb" ] ||
        th_fail "meta bucket_bits of a new layout-$layout corpus is not $want_bb"
    if [ "$layout" = 2 ]; then
        [ -n "$(rcli "$r" --scan --pattern 'h:{0:*' | head -n 1)" ] || th_fail "no bucket hash"
        # this Redis has the default listpack limits: the workers said so at start
        grep -q "zset-max-listpack-entries is 128; layout 2 needs at least 1024" \
            "$TH_DIR/ids-a-$layout.log" || th_fail "no warning about zset-max-listpack-entries"
        grep -q "hash-max-listpack-entries is 512; layout 2 needs at least 1024" \
            "$TH_DIR/ids-a-$layout.log" || th_fail "no warning about hash-max-listpack-entries"
    else
        grep -q "listpack" "$TH_DIR/ids-a-$layout.log" &&
            th_fail "a layout-1 worker warned about listpack limits that suit layout 1"
    fi
    for p in $cpid $apid $bpid $rpid; do th_stop "$p"; done
done

# ---- 2. two corpora in one Redis
th_log "two corpora in one Redis"
th_start_redis redis-two
r=$TH_REDIS_PORT
th_start_shard wa "$r" 0-255 6 3 "" --corpus a --layout 2
wa=$TH_SHARD_PORT
th_start_shard wb "$r" 0-255 6 3 "" --corpus b --layout 1
wb=$TH_SHARD_PORT
th_start_coord ca 6 3 5000 "127.0.0.1:$wa" "" --corpus a
ca=$TH_COORD_PORT
th_start_coord cb 6 3 5000 "127.0.0.1:$wb" "" --corpus b
cb=$TH_COORD_PORT
timeout 300 python3 "$IDS" isolate "$ca" "$cb" || th_fail "two corpora in one Redis"
[ "$(rcli "$r" hget a:simhash:meta layout)" = 2 ] || th_fail "a:simhash:meta layout is not 2"
[ "$(rcli "$r" hget b:simhash:meta layout)" = 1 ] || th_fail "b:simhash:meta layout is not 1"
[ "$(rcli "$r" exists simhash:meta)" = 0 ] || th_fail "an unnamed meta hash was written"
bad=$(rcli "$r" --scan | grep -vE '^(a|b):' | head -n 3)
[ -z "$bad" ] || th_fail "keys without a corpus prefix: $bad"
[ -n "$(rcli "$r" --scan --pattern 'a:h:{0:*' | head -n 1)" ] || th_fail "corpus a has no bucket hash"
[ -n "$(rcli "$r" --scan --pattern 'b:d:{0:*' | head -n 1)" ] || th_fail "corpus b has no document set"
# the unnamed corpus beside them (the keys of corpora made before names), in the
# layout a new corpus gets (4)
th_start_shard wu "$r" 0-255 6 3 ""
wu=$TH_SHARD_PORT
th_start_coord cu 6 3 5000 "127.0.0.1:$wu"
cu=$TH_COORD_PORT
timeout 300 python3 "$IDS" ids "$cu" "$r" --layout 4 || th_fail "the unnamed corpus beside two named ones"
[ "$(rcli "$r" hget simhash:meta layout)" = 4 ] || th_fail "unnamed corpus: layout is not 4"
[ -z "$(rcli "$r" --scan --pattern 'h:*' | head -n 1)" ] || th_fail "a layout-4 corpus has id hashes"
# and a corpus of layout 3 (ids in id hashes beside table 0's buckets)
th_start_shard w3 "$r" 0-255 6 3 "" --corpus three --layout 3
w3=$TH_SHARD_PORT
th_start_coord c3 6 3 5000 "127.0.0.1:$w3" "" --corpus three
timeout 300 python3 "$IDS" ids "$TH_COORD_PORT" "$r" --corpus three --layout 3 ||
    th_fail "ids, layout 3"
[ "$(rcli "$r" hget three:simhash:meta layout)" = 3 ] || th_fail "three:simhash:meta layout is not 3"
[ -n "$(rcli "$r" --scan --pattern 'three:h:*' | head -n 1)" ] || th_fail "a layout-3 corpus has no id hash"

# ---- 3. refusals and adoption
th_log "refusals"
out=$(timeout 20 "$TH_BIN/simhash-coordinator" --bind 127.0.0.1 --port "$(th_free_port)" \
    --blocks 6 --distance 3 --worker "127.0.0.1:$wb" --corpus a 2>&1)
rc=$?
[ $rc = 2 ] || th_fail "coordinator of corpus a with a worker of corpus b: exit $rc, want 2"
echo "$out" | grep -q "corpora differ: shard worker serves corpus 'b'" ||
    th_fail "no clear message for another corpus: $out"
th_start_redis redis-l1
r1=$TH_REDIS_PORT
th_start_shard wl1 "$r1" 0-255 6 3 "" --corpus a --layout 1
wl1=$TH_SHARD_PORT
# two workers of corpus a, each serving 0-255, one beside a layout-1 Redis: whichever
# answers first is served, the other refused with the message (and no traffic)
th_start coord-mixed 60 "$TH_BIN/simhash-coordinator" --bind 127.0.0.1 --port "$(th_free_port)" \
    --blocks 6 --distance 3 --worker "127.0.0.1:$wa" --worker "127.0.0.1:$wl1" --corpus a
mixed=$TH_PID
i=0
until grep -q "layouts differ: shard worker serves a layout-[12] corpus, this coordinator a layout-[12] one (its other workers); a coordinator never mixes layouts" \
        "$TH_DIR/coord-mixed.log"; do
    i=$((i + 1))
    [ $i -lt 100 ] || th_fail "no clear message for mixed layouts: $(cat "$TH_DIR/coord-mixed.log")"
    sleep 0.1
done
th_stop "$mixed"
out=$(timeout 20 "$TH_BIN/simhash-coordinator" --bind 127.0.0.1 --port "$(th_free_port)" \
    --blocks 6 --distance 3 --worker "127.0.0.1:$wl1" --corpus a --layout 2 2>&1)
rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "layout-1 corpus, this coordinator a layout-2" ||
    th_fail "coordinator with layout 2 given a layout-1 worker: exit $rc: $out"
out=$(timeout 20 "$TH_BIN/simhash-shard" --bind 127.0.0.1 --port "$(th_free_port)" \
    --redis-port "$r1" --corpus a --layout 2 2>&1)
rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "uses data layout 1; this worker is configured with layout 2" ||
    th_fail "worker with layout 2 on a layout-1 corpus: exit $rc: $out"
# no layout, no bucket-bits: the corpus's (HELLO elements 3 and 4), and the meta unchanged
th_start_shard wfollow "$r1" 0-255 6 3 "" --corpus a
hello=$(rcli "$TH_SHARD_PORT" shard.hello | tr '\n' ' ')
case "$hello" in
    "6 3 1 16 "*) ;;
    *) th_fail "a worker without layout on a layout-1 corpus says: $hello" ;;
esac
case "$hello" in
    *" a 2 ") ;;
    *) th_fail "SHARD.HELLO does not end with the corpus name and the worker protocol: $hello" ;;
esac
# ---- 4. a malformed value: refused before the lock is written; DEL clears it
th_start_redis "redis-bad"
rb=$TH_REDIS_PORT
th_start_shard wbad "$rb" 0-255 6 3 "" --layout 2
th_start_coord cbad 6 3 1000 "127.0.0.1:$TH_SHARD_PORT"
cb=$TH_COORD_PORT
[ "$(rcli "$cb" simhash.add 777 doc-a)" = 1 ] || th_fail "add before the corruption"
hkey=$(rcli "$rb" --scan --pattern 'h:*' | head -n 1)
[ -n "$hkey" ] || th_fail "no bucket hash after an add in layout 2"
field=$(rcli "$rb" --no-raw hkeys "$hkey" | head -n 1 | sed 's/^1) //')
printf 'HSET %s %s "\\x09docA"\n' "$hkey" "$field" | rcli "$rb" >/dev/null
out=$(rcli "$cb" simhash.add 777 doc-b 2>&1)
[[ $out == *"malformed document ids"* ]] || th_fail "ADD onto a malformed value: $out"
locks=$(rcli "$rb" --scan --pattern 'w:*' | while read -r k; do rcli "$rb" hlen "$k"; done | awk '{ s += $1 } END { print s + 0 }')
[ "$locks" = 0 ] || th_fail "a refused write left $locks lock(s)"
[ "$(rcli "$cb" simhash.del 777)" != "" ] || th_fail "DEL of the malformed fingerprint"
[ "$(rcli "$rb" hlen "$hkey")" = 0 ] || th_fail "DEL left the malformed value"
[ "$(rcli "$cb" simhash.add 777 doc-c)" = 1 ] || th_fail "add after the DEL"
th_log "a malformed id value: ADD refused without a lock left behind, DEL removes it"
th_log "PASS"
