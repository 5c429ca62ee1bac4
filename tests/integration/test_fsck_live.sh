#!/usr/bin/env bash
# test_fsck_live.sh: `simhash fsck` on a live corpus. A deployment (redis-server, two
# workers, a coordinator) takes `simhash load`s of FSCK_LIVE_PAIRS pairs each (default
# 20,000: fingerprints with one id, some with several, a few with ids enough for an
# overflow set; new pairs each time), one after another (FSCK_LIVE_LOADS, default 5,
# more only while fewer than two fsck runs have ended), while `simhash fsck` runs again and
# again, one run after the other (at most FSCK_LIVE_RUNS, default 5; at least 2 must
# start while a load runs): every run exits 0 with status:clean (a counter, entry or
# id that differs because a writer was active is read again before it is reported;
# the report's rechecked / in_flight lines say how many were, and how many were
# writes in flight), and the second run, with --repair, repairs nothing and writes no
# counter (the loads overtook its count, they did not make it wrong). Every run ends:
# its walk of table 0 is bounded by the directories it holds when it reaches each
# shard. After the loads, fsck is clean with the exact counts. Then a second load runs
# while a table entry of a fingerprint of the first loads is deleted by hand (ZREM):
# fsck during the load still finds it (exit 1, one fingerprint missing one entry), and
# --repair after it puts it back: clean, and the fingerprint found again.
set -u
. "$(dirname "$0")/lib.sh"
th_init fsck_live
th_need_bins simhash simhash-shard simhash-coordinator
SH="$TH_BIN/simhash"
N=${FSCK_LIVE_PAIRS:-20000}
RUNS=${FSCK_LIVE_RUNS:-5}
LOADS=${FSCK_LIVE_LOADS:-5}
export PYTHONPATH="$TH_SRC/tests/tools"
field() { printf '%s\n' "$2" | sed -n "s/^$1://p"; }

th_deploy live 2 6 3 5000
rport=$TH_DEPLOY_RPORT cport=$TH_DEPLOY_PORT

# pairs SEED COUNT FILE: COUNT pairs, fingerprints from SEED; prints the fingerprints
pairs() {
    /usr/bin/python3 - "$@" <<'PY'
import random, sys
rng, n, out = random.Random(int(sys.argv[1])), int(sys.argv[2]), open(sys.argv[3], "w")
i = 0
fps = set()
while i < n:
    fp = rng.getrandbits(64)
    if fp in fps:
        continue
    fps.add(fp)
    k = 1 if rng.random() < 0.9 else rng.choice([2, 3, 4]) if rng.random() < 0.95 else 12
    for j in range(min(k, n - i)):
        out.write("%d doc-%d-%d-%s\n" % (fp, fp % 1000, j, "x" * (20 if k == 12 else 0)))
        i += 1
print(len(fps))
PY
}

# ---- 1. fsck while loads run: clean every time
# the loads, one after another: LOADS of them, more (at most 3 * LOADS) only while fewer
# than two fsck runs have ended (on a slow machine, or under the sanitizers), and none
# once $TH_DIR/stop appears. Loads past that would only grow the corpus every later
# fsck walks. Load i of pairs-i.txt, its fingerprints counted in nfp-i once it finished
(
    for i in $(seq 1 $((3 * LOADS))); do
        [ -e "$TH_DIR/stop" ] && exit 0
        [ "$i" -gt "$LOADS" ] && [ -e "$TH_DIR/fsck-2.rc" ] && exit 0
        pairs "$((100 + i))" "$N" "$TH_DIR/pairs-$i.txt" >"$TH_DIR/nfp-$i.tmp"
        timeout 600 "$SH" load --port "$cport" "$TH_DIR/pairs-$i.txt" >"$TH_DIR/load-$i.out" 2>&1 ||
            exit 1
        mv "$TH_DIR/nfp-$i.tmp" "$TH_DIR/nfp-$i"
    done
) &
lpid=$!
while [ ! -e "$TH_DIR/nfp-1" ] && kill -0 $lpid 2>/dev/null; do sleep 0.2; done
# runs one after another while the loads run; the second with --repair
runs=0
while [ $runs -lt "$RUNS" ] && kill -0 $lpid 2>/dev/null; do
    [ $runs -ge 2 ] && [ -e "$TH_DIR/nfp-$LOADS" ] && break
    runs=$((runs + 1))
    opt=()
    [ $runs = 2 ] && opt=(--repair)
    timeout 600 "$SH" fsck -q "${opt[@]}" --redis "127.0.0.1:$rport" >"$TH_DIR/fsck-$runs.out" 2>&1
    echo $? >"$TH_DIR/fsck-$runs.rc"
done
rechecked=0 inflight=0
for k in $(seq 1 $runs); do
    out=$(cat "$TH_DIR/fsck-$k.out") rc=$(cat "$TH_DIR/fsck-$k.rc")
    [ "$rc" = 0 ] && [ "$(field status "$out")" = clean ] ||
        th_fail "fsck run $k during the loads: exit $rc: $(echo "$out" | tr '\n' ' ')"
    rc1=$(field rechecked "$out") if1=$(field in_flight "$out")
    [ -n "$rc1" ] && [ -n "$if1" ] && [ "$if1" -le "$rc1" ] ||
        th_fail "fsck run $k: rechecked '$rc1', in_flight '$if1': $(echo "$out" | tr '\n' ' ')"
    if [ $k = 2 ]; then
        [ "$(field counters_rewritten "$out")" = 0 ] && [ "$(field repaired_fingerprints "$out")" = 0 ] ||
            th_fail "fsck --repair during the loads wrote: $(echo "$out" | tr '\n' ' ')"
    fi
    rechecked=$((rechecked + rc1))
    inflight=$((inflight + if1))
    th_log "fsck run $k$([ $k = 2 ] && echo " (--repair)"): clean, $(field fingerprints "$out") fingerprints; re-checked" \
        "$rc1 (in flight $if1): counters $(field counters_rechecked "$out")" \
        "($(field counters_writes_in_flight "$out")), fingerprints $(field findings_rechecked "$out")" \
        "($(field findings_writes_in_flight "$out")), buckets $(field split_rechecked "$out")" \
        "($(field split_writes_in_flight "$out")); reads rerouted $(field reads_rerouted "$out")"
done
touch "$TH_DIR/stop"
wait $lpid || th_fail "a load failed: $(cat "$TH_DIR"/load-*.out | tail -5)"
[ $runs -ge 2 ] || th_fail "only $runs fsck runs started during the loads"
[ $rechecked -gt 0 ] || th_fail "nothing differed during the loads: the live case was not exercised"
loads=0 nfp=0
for f in "$TH_DIR"/nfp-*; do
    case $f in *.tmp) continue ;; esac
    loads=$((loads + 1))
    nfp=$((nfp + $(cat "$f")))
done
th_log "$runs fsck runs one after another during $loads loads: all clean;" \
    "$rechecked findings re-checked, $inflight were writes in flight"
out=$(timeout 300 "$SH" fsck -q --redis "127.0.0.1:$rport" 2>&1) || th_fail "fsck after the loads: $out"
[ "$(field status "$out")" = clean ] && [ "$(field fingerprints "$out")" = "$nfp" ] &&
    [ "$(field documents "$out")" = "$((loads * N))" ] ||
    th_fail "fsck after the loads: want clean, $nfp fingerprints, $((loads * N)) documents: $(echo "$out" | tr '\n' ' ')"

# ---- 2. a fault planted during a second load is still found
nfp2=$(pairs 99 $((N * 2)) "$TH_DIR/pairs2.txt")
timeout 600 "$SH" load --port "$cport" "$TH_DIR/pairs2.txt" >"$TH_DIR/load2.out" 2>&1 &
lpid=$!
sleep 1
# a fingerprint of the first load loses its entry in table 3 (a live bucket's member)
victim=$(/usr/bin/python3 - "$rport" <<'PY'
import sys
from resp_client import C
r = C(int(sys.argv[1]))
cur = b"0"
while True:
    cur, keys = r.call("SCAN", cur, "MATCH", b"s:{3:*", "COUNT", 1000)
    for k in keys:
        if r.call("TYPE", k) != "zset":
            continue
        ms = r.call("ZRANGE", k, 0, 0)
        if ms and r.call("ZREM", k, ms[0]) == 1:
            print(k.decode(), ms[0].hex())
            sys.exit(0)
    if cur == b"0":
        sys.exit(1)
PY
) || th_fail "no table-3 entry to delete"
th_log "deleted the table-3 entry $victim during load 2"
kill -0 $lpid 2>/dev/null || th_fail "load 2 ended before fsck could run during it"
out=$(timeout 300 "$SH" fsck -q --redis "127.0.0.1:$rport" 2>&1); rc=$?
still=no
kill -0 $lpid 2>/dev/null && still=yes
[ $rc -eq 1 ] && [ "$(field fingerprints_missing_entries "$out")" = 1 ] &&
    [ "$(field missing_entries "$out")" = 1 ] && [ "$(field status "$out")" = inconsistent ] ||
    th_fail "fsck during load 2 with a deleted entry: exit $rc: $(echo "$out" | tr '\n' ' ')"
th_log "fsck during load 2 (still loading at its end: $still) found the deleted entry"
wait $lpid || th_fail "load 2: $(cat "$TH_DIR/load2.out")"
out=$(timeout 300 "$SH" fsck -q --repair --redis "127.0.0.1:$rport" 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$(field status "$out")" = repaired ] && [ "$(field repaired_fingerprints "$out")" = 1 ] ||
    th_fail "fsck --repair: exit $rc: $(echo "$out" | tr '\n' ' ')"
out=$(timeout 300 "$SH" fsck -q --redis "127.0.0.1:$rport" 2>&1) || th_fail "fsck after the repair: $out"
total=$((nfp + nfp2))
[ "$(field status "$out")" = clean ] && [ "$(field fingerprints "$out")" = "$total" ] ||
    th_fail "fsck after the repair: want clean with $total fingerprints: $(echo "$out" | tr '\n' ' ')"
th_log "PASS"
