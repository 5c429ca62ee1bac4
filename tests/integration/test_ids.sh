#!/usr/bin/env bash
# test_ids.sh: document ids and corpus names.
#   1. one Redis, two workers and a coordinator: 600 ids on one fingerprint, long ids
#      (65..20000 bytes), ids with NUL / newline / CR / 0xff bytes, a fingerprint
#      moving from its table-0 member to its overflow set and back to nothing, DEL
#      with and without an id, exact counters (tests/tools/ids_check.py); the Redis
#      defaults suit the layout (no listpack warning)
#   2. two corpora ("a" and "b") in one Redis: the same fingerprints with other ids,
#      each coordinator sees only its corpus; every key carries its corpus's prefix;
#      the unnamed corpus beside them
#   3. refusals: a coordinator of corpus a given a worker of corpus b exits 2 naming
#      it; a worker without options follows the corpus (SHARD.HELLO)
#   4. malformed ids in a table-0 member: an ADD of that fingerprint is refused with
#      nothing written (no lock left behind), its DEL removes it
set -u
. "$(dirname "$0")/lib.sh"
th_init ids
th_need_bins simhash-shard simhash-coordinator
IDS="$TH_SRC/tests/tools/ids_check.py"
export PYTHONPATH="$TH_SRC/tests/tools"
rcli() { timeout 10 redis-cli -p "$@"; }

# ---- 1. many, long and binary ids
th_start_redis redis-ids
r=$TH_REDIS_PORT rpid=$TH_REDIS_PID
th_start_shard ids-a "$r" 0-127 6 3 ""
a=$TH_SHARD_PORT apid=$TH_SHARD_PID
th_start_shard ids-b "$r" 128-255 6 3 ""
b=$TH_SHARD_PORT bpid=$TH_SHARD_PID
th_start_coord ids-coord 6 3 5000 "127.0.0.1:$a 127.0.0.1:$b"
c=$TH_COORD_PORT cpid=$TH_COORD_PID
timeout 300 python3 "$IDS" ids "$c" "$r" || th_fail "ids"
[ "$(rcli "$r" hget simhash:meta layout)" = 4 ] || th_fail "meta layout is not 4"
[ -z "$(rcli "$r" --scan --pattern 'h:*' | head -n 1)" ] || th_fail "the corpus has id hashes"
grep -q "listpack" "$TH_DIR/ids-a.log" &&
    th_fail "a worker warned about listpack limits that are Redis's defaults"
for p in $cpid $apid $bpid $rpid; do th_stop "$p"; done

# ---- 2. two corpora in one Redis
th_log "two corpora in one Redis"
th_start_redis redis-two
r=$TH_REDIS_PORT
th_start_shard wa "$r" 0-255 6 3 "" --corpus a
wa=$TH_SHARD_PORT
th_start_shard wb "$r" 0-255 6 3 "" --corpus b
wb=$TH_SHARD_PORT
th_start_coord ca 6 3 5000 "127.0.0.1:$wa" "" --corpus a
ca=$TH_COORD_PORT
th_start_coord cb 6 3 5000 "127.0.0.1:$wb" "" --corpus b
cb=$TH_COORD_PORT
timeout 300 python3 "$IDS" isolate "$ca" "$cb" || th_fail "two corpora in one Redis"
[ "$(rcli "$r" hget a:simhash:meta layout)" = 4 ] || th_fail "a:simhash:meta layout is not 4"
[ "$(rcli "$r" hget b:simhash:meta layout)" = 4 ] || th_fail "b:simhash:meta layout is not 4"
[ "$(rcli "$r" exists simhash:meta)" = 0 ] || th_fail "an unnamed meta hash was written"
bad=$(rcli "$r" --scan | grep -vE '^(a|b):' | head -n 3)
[ -z "$bad" ] || th_fail "keys without a corpus prefix: $bad"
[ -n "$(rcli "$r" --scan --pattern 'a:s:{0:*' | head -n 1)" ] || th_fail "corpus a has no table-0 bucket"
[ -n "$(rcli "$r" --scan --pattern 'b:s:{0:*' | head -n 1)" ] || th_fail "corpus b has no table-0 bucket"
# the unnamed corpus beside them (the keys of corpora made before names)
th_start_shard wu "$r" 0-255 6 3 ""
wu=$TH_SHARD_PORT
th_start_coord cu 6 3 5000 "127.0.0.1:$wu"
cu=$TH_COORD_PORT
timeout 300 python3 "$IDS" ids "$cu" "$r" || th_fail "the unnamed corpus beside two named ones"
[ "$(rcli "$r" hget simhash:meta layout)" = 4 ] || th_fail "unnamed corpus: layout is not 4"

# ---- 3. refusals and adoption
th_log "refusals"
out=$(timeout 20 "$TH_BIN/simhash-coordinator" --bind 127.0.0.1 --port "$(th_free_port)" \
    --blocks 6 --distance 3 --worker "127.0.0.1:$wb" --corpus a 2>&1)
rc=$?
[ $rc = 2 ] || th_fail "coordinator of corpus a with a worker of corpus b: exit $rc, want 2"
echo "$out" | grep -q "corpora differ: shard worker serves corpus 'b'" ||
    th_fail "no clear message for another corpus: $out"
# no options but the corpus: the corpus's settings (HELLO elements 1 to 4), the meta
# unchanged
th_start_redis redis-follow
r1=$TH_REDIS_PORT
rcli "$r1" HSET a:simhash:meta blocks 5 distance 2 layout 4 bucket_bits 8 fingerprint v5 \
    tombstone_seconds 120 >/dev/null
th_start_shard wfollow "$r1" 0-255 5 2 "" --corpus a
hello=$(rcli "$TH_SHARD_PORT" shard.hello | tr '\n' ' ')
case "$hello" in
    "5 2 4 8 "*) ;;
    *) th_fail "a worker on a corpus of blocks 5 distance 2 says: $hello" ;;
esac
case "$hello" in
    *" a 2 ") ;;
    *) th_fail "SHARD.HELLO does not end with the corpus name and the worker protocol: $hello" ;;
esac
# ---- 4. malformed ids: refused before the lock is written; DEL clears it
th_start_redis "redis-bad"
rb=$TH_REDIS_PORT
th_start_shard wbad "$rb" 0-255 6 3 ""
th_start_coord cbad 6 3 1000 "127.0.0.1:$TH_SHARD_PORT"
cb=$TH_COORD_PORT
[ "$(rcli "$cb" simhash.add 777 doc-a)" = 1 ] || th_fail "add before the corruption"
bkey=$(rcli "$rb" --scan --pattern 's:{0:*' | head -n 1)
[ -n "$bkey" ] || th_fail "no table-0 bucket after an add"
# the member's 7 bytes kept, its packed ids replaced by a length past their end
python3 - "$rb" "$bkey" <<'PY' || th_fail "corrupting the table-0 member"
import sys
from resp_client import C
r = C(int(sys.argv[1]))
key = sys.argv[2].encode()
ms = r.call("ZRANGE", key, 0, -1)
assert len(ms) == 1, ms
r.call("ZREM", key, ms[0])
r.call("ZADD", key, 0, ms[0][:7] + b"\x09docA")
PY
out=$(rcli "$cb" simhash.add 777 doc-b 2>&1)
[[ $out == *"malformed document ids"* ]] || th_fail "ADD onto a malformed value: $out"
locks=$(rcli "$rb" --scan --pattern 'w:*' | while read -r k; do rcli "$rb" hlen "$k"; done | awk '{ s += $1 } END { print s + 0 }')
[ "$locks" = 0 ] || th_fail "a refused write left $locks lock(s)"
[ "$(rcli "$cb" simhash.del 777)" != "" ] || th_fail "DEL of the malformed fingerprint"
[ "$(rcli "$rb" zcard "$bkey")" = 0 ] || th_fail "DEL left the malformed member"
[ "$(rcli "$cb" simhash.add 777 doc-c)" = 1 ] || th_fail "add after the DEL"
th_log "malformed ids: ADD refused without a lock left behind, DEL removes them"
th_log "PASS"
