#!/usr/bin/env bash
# test_fsck.sh: `simhash fsck [--repair]` on a real deployment (redis-server,
# simhash-shard with its repair pass off so the planted damage stays, and
# simhash-coordinator): clean after a load; then each kind of damage planted through
# the worker's own commands: table entries removed from a fingerprint with documents,
# table entries without documents (orphans), a stale write lock over a half-done
# write, a wrong counter, and (layouts 2-4) a fingerprint whose overflow set of ids
# was deleted by hand (its hash field or table-0 member still says the ids are
# there); fsck reports each with exact counts and exits 1; --repair fixes them (the
# fingerprint without ids removed); a second fsck is clean; queries through the
# coordinator find the repaired fingerprints from 0..k bits away and not the orphan
# or the one whose ids were lost. Then the same on a 3-master Redis Cluster (--cluster).
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
th_init fsck
th_need_bins simhash simhash-shard simhash-coordinator
B=6 K=3
SH="$TH_BIN/simhash"

# field NAME TEXT: the value of "NAME:value" in TEXT
field() { printf '%s\n' "$2" | sed -n "s/^$1://p"; }
expect_field() { # expect_field LABEL TEXT NAME VALUE
    local v
    v=$(field "$3" "$2")
    [ "$v" = "$4" ] || th_fail "$1: $3 is '$v', want '$4'; fsck said: $(echo "$2" | tr '\n' ' ')"
}
flip() { /usr/bin/python3 -c "import random,sys; v=int(sys.argv[1]); r=random.Random(int(sys.argv[3]))
for b in r.sample(range(64), int(sys.argv[2])): v ^= 1 << b
print(v)" "$@"; }

th_start_redis redis
rport=$TH_REDIS_PORT
th_start_shard shard "$rport" 0-255 $B $K "" --repair-interval-ms 0
wport=$TH_SHARD_PORT
th_start_coord coord $B $K 3000 "127.0.0.1:$wport" "" --health-interval-ms 200
cport=$TH_COORD_PORT
w() { timeout 10 redis-cli -p "$wport" "$@" 2>&1; }

/usr/bin/python3 -c 'import random
r = random.Random(5)
for i in range(300):
    print(r.getrandbits(64), "doc-%d" % i)' >"$TH_DIR/load.txt"
timeout 120 "$SH" load --port "$cport" "$TH_DIR/load.txt" >/dev/null || th_fail "simhash load"

out=$(timeout 120 "$SH" fsck -q --redis "127.0.0.1:$rport"); rc=$?
[ $rc = 0 ] || th_fail "fsck of a clean corpus: exit $rc: $out"
expect_field clean "$out" fingerprints 300
expect_field clean "$out" documents 300
expect_field clean "$out" status clean
th_log "clean corpus: exit 0, 300 fingerprints"

# layout 4 keeps a fingerprint's table-0 entry in its ids: SHARD.ADD / DEL leave it
LAYOUT=$(timeout 5 redis-cli -p "$rport" hget simhash:meta layout)
T0=0; [ "$LAYOUT" = 4 ] && T0=1
NT=$((20 - T0))         # the entries SHARD.ADD of all 20 tables writes
A=$(sed -n 1p "$TH_DIR/load.txt" | cut -d' ' -f1)
Bfp=$(flip "$A" 30 1)        # new fingerprints, far from every stored one
C=$(flip "$A" 31 2)
# (a) three table entries of A removed (A keeps its document)
[ "$(w SHARD.DEL "$A" 3 7 11)" = 3 ] || th_fail "SHARD.DEL of A's entries"
# (b) orphan: Bfp's 20 entries without any document
[ "$(w SHARD.ADD "$Bfp" $(seq 0 19))" = $NT ] || th_fail "SHARD.ADD of B"
# (c) a writer that took C's lock, stored its document and died: a stale lock
[ "$(w SHARD.LOCK "$C" dead 1 A doc-c | head -1)" = 1 ] || th_fail "SHARD.LOCK of C"
sleep 0.05
# (e) layouts 2-4: D's three ids (93 bytes packed: too many to keep inline) are in its
# overflow set, the only d: key; the set deleted by hand leaves D's entries and a
# hash field or table-0 member saying the ids are in that set: the ids are lost
Dfp=$(flip "$A" 32 3)
LOST=0 dxx=none
if [ "$LAYOUT" != 1 ]; then
    LOST=1
    [ "$(timeout 10 redis-cli -p "$cport" SIMHASH.ADD "$Dfp" "$(printf 'doc-d-%024d' 1)" \
        "$Dfp" "$(printf 'doc-d-%024d' 2)" "$Dfp" "$(printf 'doc-d-%024d' 3)")" = 3 ] ||
        th_fail "SIMHASH.ADD of D's three ids"
    dkeys=$(timeout 5 redis-cli -p "$rport" --scan --pattern 'd:*')
    [ "$(echo "$dkeys" | wc -w)" = 1 ] || th_fail "want D's overflow set alone, found: $dkeys"
    dxx=${dkeys:5:2}        # d:{0:xx}:<fingerprint>: D's counters are c:{0:xx}
    [ "$(timeout 5 redis-cli -p "$rport" DEL "$dkeys")" = 1 ] || th_fail "DEL $dkeys"
fi
# (d) a counter off by 5 (not D's, whose counters the lost ids make wrong too)
ckey=$(timeout 5 redis-cli -p "$rport" --scan --pattern 'c:*' | grep -vF "c:{0:$dxx}" | head -1)
timeout 5 redis-cli -p "$rport" HINCRBY "$ckey" fingerprints 5 >/dev/null

out=$(timeout 120 "$SH" fsck -q --redis "127.0.0.1:$rport"); rc=$?
[ $rc = 1 ] || th_fail "fsck of a damaged corpus: exit $rc, want 1: $out"
expect_field damaged "$out" fingerprints 301
expect_field damaged "$out" fingerprints_missing_entries 2
expect_field damaged "$out" missing_entries $((3 + NT))
expect_field damaged "$out" orphan_entries $NT
expect_field damaged "$out" orphan_fingerprints 1
expect_field damaged "$out" stale_locks 1
expect_field damaged "$out" counter_mismatches $((1 + LOST))
expect_field damaged "$out" fingerprints_ids_lost $LOST
expect_field damaged "$out" status inconsistent
th_log "damage found: $(echo "$out" | tr '\n' ' ')"

out=$(timeout 120 "$SH" fsck -q --repair --redis "127.0.0.1:$rport"); rc=$?
[ $rc = 0 ] || th_fail "fsck --repair: exit $rc: $out"
expect_field repair "$out" repaired_fingerprints $((3 + LOST))
expect_field repair "$out" counters_rewritten $((1 + LOST))
expect_field repair "$out" status repaired
out=$(timeout 120 "$SH" fsck -q --redis "127.0.0.1:$rport"); rc=$?
[ $rc = 0 ] || th_fail "fsck after --repair: exit $rc: $out"
expect_field after "$out" status clean
expect_field after "$out" fingerprints 301
[ -z "$(timeout 5 redis-cli -p "$rport" --scan --pattern 'w:*')" ] || th_fail "a lock left"

# through the coordinator: A and C from 0..3 bits away, B nowhere
for fp in "$A" "$C"; do
    for d in 0 1 2 3; do
        q=$(flip "$fp" $d $d)
        timeout 10 redis-cli -p "$cport" SIMHASH.QUERY "$q" | grep -qx "$fp" ||
            th_fail "fingerprint $fp not found from $d bits away after the repair"
    done
done
timeout 10 redis-cli -p "$cport" SIMHASH.QUERY "$Bfp" DISTANCE 0 | grep -qx "$Bfp" &&
    th_fail "the orphan $Bfp is still found"
timeout 10 redis-cli -p "$cport" SIMHASH.QUERY "$Dfp" DISTANCE 0 | grep -qx "$Dfp" &&
    th_fail "$Dfp, whose ids were lost, is still found"
info=$(timeout 10 redis-cli -p "$cport" SIMHASH.INFO | tr -d '\r')
for _ in $(seq 1 50); do
    [ "$(field fingerprints "$info")" = 301 ] && break
    sleep 0.1
    info=$(timeout 10 redis-cli -p "$cport" SIMHASH.INFO | tr -d '\r')
done
[ "$(field fingerprints "$info")" = 301 ] || th_fail "SIMHASH.INFO fingerprints $(field fingerprints "$info"), want 301"
th_log "repaired: a second fsck is clean; A and C found from 0..3 bits, B and D gone; SIMHASH.INFO 301"

# usage errors
timeout 10 "$SH" fsck --redis nowhere >/dev/null 2>&1; [ $? = 2 ] || th_fail "bad --redis: want exit 2"
timeout 10 "$SH" fsck --redis "127.0.0.1:$(th_free_port)" >/dev/null 2>&1
[ $? = 2 ] || th_fail "no Redis there: want exit 2"

# ---- Redis Cluster ----
cl_start_cluster cl 3 0
workers=""
for i in 0 1 2; do
    th_start_shard "cshard-$i" "${CL_PORTS[$i]}" 0-255 $B $K "" --cluster yes --repair-interval-ms 0
    workers="$workers 127.0.0.1:$TH_SHARD_PORT"
    [ $i = 0 ] && cw=$TH_SHARD_PORT
done
th_start_coord ccoord $B $K 3000 "$workers" "" --cluster-node "127.0.0.1:${CL_PORTS[0]}"
cc=$TH_COORD_PORT
for _ in $(seq 1 200); do
    timeout 5 redis-cli -p "$cc" SIMHASH.INFO 2>/dev/null | tr -d '\r' | grep -q '^routing:ok' && break
    sleep 0.1
done
timeout 120 "$SH" load --port "$cc" "$TH_DIR/load.txt" >/dev/null || th_fail "simhash load (cluster)"
out=$(timeout 120 "$SH" fsck -q --cluster --redis "127.0.0.1:${CL_PORTS[1]}"); rc=$?
[ $rc = 0 ] || th_fail "cluster fsck of a clean corpus: exit $rc: $out"
expect_field cluster-clean "$out" fingerprints 300
# the worker follows -MOVED: these land on whichever master holds each key
[ "$(timeout 10 redis-cli -p "$cw" SHARD.DEL "$A" $T0 5 19)" = 3 ] || th_fail "cluster SHARD.DEL"
[ "$(timeout 10 redis-cli -p "$cw" SHARD.ADD "$Bfp" $(seq 0 19))" = $NT ] || th_fail "cluster SHARD.ADD"
out=$(timeout 120 "$SH" fsck -q --cluster --redis "127.0.0.1:${CL_PORTS[1]}"); rc=$?
[ $rc = 1 ] || th_fail "cluster fsck of a damaged corpus: exit $rc: $out"
expect_field cluster-damaged "$out" missing_entries 3
expect_field cluster-damaged "$out" orphan_entries $NT
out=$(timeout 120 "$SH" fsck -q --repair --cluster --redis "127.0.0.1:${CL_PORTS[1]}"); rc=$?
[ $rc = 0 ] || th_fail "cluster fsck --repair: exit $rc: $out"
out=$(timeout 120 "$SH" fsck -q --cluster --redis "127.0.0.1:${CL_PORTS[2]}"); rc=$?
[ $rc = 0 ] || th_fail "cluster fsck after --repair: exit $rc: $out"
expect_field cluster-after "$out" status clean
th_log "cluster: damage found, repaired, clean again"
th_log PASS
