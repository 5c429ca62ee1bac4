#!/usr/bin/env bash
# test_merge_adds.sh: one-pair SIMHASH.ADDs of many clients written together (the
# coordinator's merge-adds, on by default; tests/tools/merge_check.py). Two workers with
# a small split limit (buckets split under the merged writes) behind a
# coordinator:
#   counts  8 clients pipeline 400 one-pair ADDs each over shared fingerprints (pairs
#           sent twice, several ids a fingerprint): each distinct pair counts 1 in exactly
#           one reply, every fingerprint holds exactly its ids, and SIMHASH.INFO shows
#           merged writes (write_merges, adds_merged > 0)
#   checks  8 clients pipeline 300 CHECKs each of planted near-duplicates (0..3 and 4
#           bits) of a base corpus, and 3 CHECKTEXTs each: every CHECK finds the base
#           fingerprints within 3 bits and nothing beyond, every pair is then stored
#           with exactly its ids, and CHECKs' adds were merged (checks_merged > 0)
#   stall   a worker stopped (SIGSTOP) for 2 s while 4 clients pipeline 3,000 ADDs and
#           CHECKs each: every request is answered (no hang), and every pair answered
#           with an integer or matches is found once the worker runs again
#   off     a coordinator with merge-adds no: the same counts check, adds_merged 0
#   stop    a coordinator stopped (SIGTERM) while 6 clients have 2,000 ADDs and CHECKs
#           each in flight: every connection gets well-formed replies or -SHARDDOWN,
#           then EOF; the coordinator exits 0 and logs that it stopped (and, in the
#           sanitizer build, leaves no leak report: lib.sh fails the test on one)
set -o pipefail
. "$(dirname "$0")/lib.sh"
th_init merge_adds
th_need_bins simhash-shard simhash-coordinator
export PYTHONPATH="$TH_SRC/tests/tools"
CHECK="$TH_SRC/tests/tools/merge_check.py"
th_start_redis r
rport=$TH_REDIS_PORT
TH_SPLIT_LIMIT=16 th_start_shard a "$rport" 0-127 6 3
a=$TH_SHARD_PORT apid=$TH_PID
TH_SPLIT_LIMIT=16 th_start_shard b "$rport" 128-255 6 3
b=$TH_SHARD_PORT
# deadlines: 10 s where every reply must be exact (a busy machine must not turn them
# into -TIMEOUT); 1 s for the stall, whose requests must fail while a worker stops
th_start_coord c 6 3 10000 "127.0.0.1:$a 127.0.0.1:$b"
c=$TH_COORD_PORT
th_start_coord cs 6 3 1000 "127.0.0.1:$a 127.0.0.1:$b"
cs=$TH_COORD_PORT

stat() { timeout 10 redis-cli -p "$1" simhash.info | tr -d '\r' | sed -n "s/^$2://p"; }

out=$(timeout 300 python3 "$CHECK" counts "$c" 8 400 1) || th_fail "counts: $out"
th_log "$out"
[ "$(stat "$c" write_merges)" -gt 0 ] && [ "$(stat "$c" adds_merged)" -gt 0 ] ||
    th_fail "no merged writes: write_merges $(stat "$c" write_merges), adds_merged $(stat "$c" adds_merged)"

out=$(timeout 300 python3 "$CHECK" checks "$c" 8 300 2) || th_fail "checks: $out"
th_log "$out"
[ "$(stat "$c" checks_merged)" -gt 0 ] || th_fail "no CHECK merged: checks_merged $(stat "$c" checks_merged)"

achild=$(th_child_pid "$apid")
[ -n "$achild" ] || th_fail "no process under worker a's timeout"
timeout 300 python3 "$CHECK" stall "$cs" 4 3000 2 >"$TH_DIR/stall.out" 2>&1 &
spid=$!
sleep 0.5
kill -STOP "$achild"
sleep 2
kill -CONT "$achild"
wait "$spid" || th_fail "stall: $(cat "$TH_DIR/stall.out")"
th_log "$(cat "$TH_DIR/stall.out")"

th_start_coord c2 6 3 10000 "127.0.0.1:$a 127.0.0.1:$b" "" --merge-adds no
c2=$TH_COORD_PORT
out=$(timeout 300 python3 "$CHECK" counts "$c2" 8 200 3) || th_fail "off: $out"
[ "$(stat "$c2" adds_merged)" = 0 ] || th_fail "merge-adds no merged $(stat "$c2" adds_merged) ADDs"
th_log "off: $out"
out=$(timeout 300 python3 "$CHECK" checks "$c2" 4 200 4) || th_fail "off, checks: $out"
[ "$(stat "$c2" checks_merged)" = 0 ] || th_fail "merge-adds no merged $(stat "$c2" checks_merged) CHECKs"
th_log "off: $out"
th_start_coord c3 6 3 10000 "127.0.0.1:$a 127.0.0.1:$b"
c3=$TH_COORD_PORT c3pid=$TH_COORD_PID
timeout 300 python3 "$CHECK" shutdown "$c3" 6 2000 5 >"$TH_DIR/shutdown.out" 2>&1 &
spid=$!
i=0
until grep -q '^sent' "$TH_DIR/shutdown.out"; do
    i=$((i + 1))
    [ $i -lt 600 ] && kill -0 "$spid" 2>/dev/null || th_fail "stop: $(cat "$TH_DIR/shutdown.out")"
    sleep 0.1
done
kill -TERM "$(th_child_pid "$c3pid")"
wait "$spid" || th_fail "stop: $(cat "$TH_DIR/shutdown.out")"
wait "$c3pid"
rc=$?
[ "$rc" = 0 ] || th_fail "the coordinator stopped with requests in flight exited $rc"
grep -q 'simhash-coordinator stopped' "$TH_DIR/c3.log" || th_fail "the coordinator did not log that it stopped"
th_log "stop: $(tail -n 1 "$TH_DIR/shutdown.out")"
th_log PASS
