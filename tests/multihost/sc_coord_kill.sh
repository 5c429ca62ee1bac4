#!/usr/bin/env bash
# sc_coord_kill.sh: a coordinator host dies under client load. Three Redis Cluster
# masters with their workers (r1-r3), three coordinators on their own hosts (c1-c3),
# a client host (cl); latency between hosts. The client runs `simhash load --host
# c1,c2,c3` (30,000 new pairs) and, at the same time, one-shot `simhash check --host`
# calls (address lists beginning at c1, c2, c3 in turn) on 2,000 pairs loaded before. Mid-load host c1 dies: its link goes
# down first (no FIN or RST reaches anyone: the clients see silence, as when a machine
# loses power), then its processes are killed. Expected: load exit 0, 0 failed check
# calls, every check answered with the pair stored before, and afterwards SIMHASH.INFO
# on c2 counts every fingerprint and document exactly.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../integration/lib.sh"
th_init mh-coord-kill
. "$HERE/mh_lib.sh"
trap 'rc=$?; mh_cleanup; (exit $rc); th_cleanup' EXIT
th_need_bins simhash simhash-shard simhash-coordinator delay-proxy
S="$TH_BIN/simhash"
B=6 K=3 PRE=2000 N=30000 CHECKS=${MH_CHECKS:-90}

mh_setup
for i in 1 2 3; do mh_host "r$i" $((10 + i)); done
for i in 1 2 3; do mh_host "c$i" $((20 + i)); done
mh_host cl 31
mh_cluster_up 0 r1 r2 r3
for h in r1 r2 r3; do mh_worker "$h" $B $K --cluster yes --redis-announce "${MH_IP[$h]}:6379"; done
for c in c1 c2 c3; do
    mh_coord "$c" $B $K 3000 "${MH_IP[r1]}:7100 ${MH_IP[r2]}:7100 ${MH_IP[r3]}:7100" \
        --cluster-node "${MH_IP[r1]}:6379" --cluster-node "${MH_IP[r2]}:6379"
    mh_proxy "$c" 7000
done
for c in c1 c2 c3; do mh_wait_routing cl "${MH_IP[$c]}" 30 || th_fail "routing of $c: $MH_REPLY"; done
hosts="${MH_IP[c1]}:7000,${MH_IP[c2]}:7000,${MH_IP[c3]}:7000"
# the check calls start at c1, c2, c3 in turn (a third of them tries dead c1 first)
orders=("$hosts" "${MH_IP[c2]}:7000,${MH_IP[c3]}:7000,${MH_IP[c1]}:7000"
        "${MH_IP[c3]}:7000,${MH_IP[c1]}:7000,${MH_IP[c2]}:7000")

/usr/bin/python3 -c 'import random, sys
r = random.Random(91)
pre, n = int(sys.argv[1]), int(sys.argv[2])
with open(sys.argv[3], "w") as a, open(sys.argv[4], "w") as b:
    for i in range(pre):
        print(r.getrandbits(64), "pre-%d" % i, file=a)
    for i in range(n):
        print(r.getrandbits(64), "doc-%d" % i, file=b)' $PRE $N "$TH_DIR/pre" "$TH_DIR/pairs"
mh_exec cl timeout 120 "$S" load --host "$hosts" --timeout-ms 2000 "$TH_DIR/pre" >"$TH_DIR/pre.out" 2>&1 ||
    th_fail "load of the first $PRE pairs: $(cat "$TH_DIR/pre.out")"

# the load and the one-shot checks, both through the three addresses, c1 first
mh_exec cl timeout 300 "$S" load --host "$hosts" --timeout-ms 2000 "$TH_DIR/pairs" >"$TH_DIR/load.out" 2>&1 &
lpid=$!
TH_PIDS+=("$lpid")
checks() {
    local i fp out fails=0
    for i in $(seq 0 $((CHECKS - 1))); do
        fp=$(sed -n "$((i + 1))p" "$TH_DIR/pre" | cut -d' ' -f1)
        # the handle's timeout covers a write lock the dead coordinator held: a check
        # in flight on c1 when it died is repeated on c2, which waits out that lock's
        # lease (2 s, then the repair pass) before it answers
        if ! out=$(mh_exec cl timeout 60 "$S" check --host "${orders[$((i % 3))]}" --timeout-ms 4000 "$fp" "again-$i" 2>&1); then
            fails=$((fails + 1)); echo "check $i failed: $out"
        elif ! printf '%s\n' "$out" | awk -F'\t' -v d="pre-$i" '{ n = split($3, a, ","); for (j = 1; j <= n; j++) if (a[j] == d) f = 1 } END { exit !f }'; then
            fails=$((fails + 1)); echo "check $i: pre-$i not found in '$out'"
        fi
        echo "done $i"
    done
    echo "checks $CHECKS failed $fails"
}
checks >"$TH_DIR/checks.out" 2>&1 &
cpid=$!
TH_PIDS+=("$cpid")
# c1 dies once the load is under way and a few checks are done (its calls begin at c1)
for _ in $(seq 1 600); do
    n=$(mh_info cl "${MH_IP[c2]}" fingerprints)
    d=$(grep -c '^done' "$TH_DIR/checks.out")
    [ "${n:-0}" -gt $((PRE + 3000)) ] && [ "$d" -ge 10 ] && break
    sleep 0.1
done
kill -0 "$lpid" 2>/dev/null || th_fail "the load ended before c1 died (make it longer)"
mh_kill_host c1
th_log "host c1 killed (link down, then its processes) with ${n:-0} fingerprints stored and $d checks done"
wait "$lpid"
lrc=$?
wait "$cpid"
echo "coord-kill load: exit $lrc, $(tail -n 1 "$TH_DIR/load.out")"
echo "coord-kill $(tail -n 1 "$TH_DIR/checks.out") (one process each, c1 killed after $d)"
[ $lrc = 0 ] || th_fail "load exit $lrc after its coordinator's host died: $(cat "$TH_DIR/load.out")"
grep -q "^checks $CHECKS failed 0$" "$TH_DIR/checks.out" || { grep -v '^done' "$TH_DIR/checks.out"; th_fail "failed checks"; }
fps=$(mh_info cl "${MH_IP[c2]}" fingerprints)
docs=$(mh_info cl "${MH_IP[c3]}" documents)
echo "coord-kill stored: fingerprints $fps (want $((PRE + N))) documents $docs (want $((PRE + N + CHECKS)))"
[ "$fps" = $((PRE + N)) ] || th_fail "fingerprints $fps, want $((PRE + N))"
[ "$docs" = $((PRE + N + CHECKS)) ] || th_fail "documents $docs, want $((PRE + N + CHECKS))"
th_log "PASS"
