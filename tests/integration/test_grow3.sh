#!/usr/bin/env bash
# test_grow3.sh: the corpus `bench-dist_load grow3` writes straight to Redis (the one
# docs/capacity.md measures at 10M and 30M: buckets split by a simulation of the split
# script, every key written whole) is a corpus the system reads, checks and writes as
# its own, in layout 4: a deployment (redis-server, 2 workers with a
# split limit of 4 so that grow3 splits thousands of buckets, coordinator); grow3 of
# fingerprints [0, 1500), then [1500, 3000) on top (the bench's checkpoints, with
# tombstones of the buckets that split in between); `simhash fsck` clean with exact
# counts (every bucket a run of its directory, members within bounds, every entry
# present, counters exact); `simhash export` holds exactly the 3000 (fingerprint, id)
# pairs grow3 meant (fingerprint i = splitmix64(seed * 2^32 + i), its id dl_doc(i));
# stored fingerprints found at distance 0 through the coordinator; then the planted
# corpus of simhash_e2e.py loaded on top through the system (buckets grow3 wrote split
# further) and verified against brute force (0..k bits found, k+1 not); fsck clean again.
set -u
. "$(dirname "$0")/lib.sh"
th_init grow3
th_need_bins simhash simhash-shard simhash-coordinator bench-dist_load
SH="$TH_BIN/simhash"
DL="$TH_BIN/bench-dist_load"
DRIVER="$TH_SRC/tests/tools/simhash_e2e.py"
LIMIT=4 SEED=7 N1=1500 N=3000

metric() { sed -n "s/^bench=.* metric=$1 value=//p"; }
field() { printf '%s\n' "$2" | sed -n "s/^$1://p"; }
fsck_clean() { # fsck_clean LABEL REDIS_PORT FINGERPRINTS
    local out rc
    out=$(timeout 300 "$SH" fsck -q --redis "127.0.0.1:$2"); rc=$?
    [ $rc = 0 ] && [ "$(field status "$out")" = clean ] && [ "$(field fingerprints "$out")" = "$3" ] ||
        th_fail "$1: fsck exit $rc, want clean with $3 fingerprints: $(echo "$out" | tr '\n' ' ')"
}

for L in 4; do
    th_log "layout $L: grow3 of [0, $N1) and [$N1, $N), split limit $LIMIT"
    th_deploy "l$L" 2 6 3 5000 --layout "$L" --split-limit "$LIMIT"
    rport=$TH_DEPLOY_RPORT cport=$TH_DEPLOY_PORT
    limit=$(timeout 10 redis-cli -p "${TH_DEPLOY_WPORTS%% *}" shard.info | tr -d '\r' | sed -n 's/^split_limit://p')
    [ "$limit" = "$LIMIT" ] || th_fail "SHARD.INFO split_limit '$limit', want $LIMIT"
    for part in "0 $N1" "$N1 $((N - N1))"; do
        set -- $part
        out=$(timeout 300 "$DL" grow3 --port "$rport" --layout "$L" --seed "$SEED" --offset "$1" \
            --count "$2" --split-limit "$LIMIT" --name grow3 2>&1) || th_fail "grow3 $part: $out"
        [ "$(echo "$out" | metric errors)" = 0 ] || th_fail "grow3 $part: commands failed: $out"
        th_log "  grow3 [$1, $(($1 + $2))): $(echo "$out" | metric grow3_splits) splits," \
            "$(echo "$out" | metric grow3_buckets) buckets, $(echo "$out" | metric grow3_tombstones) tombstones"
    done
    [ "$(echo "$out" | metric grow3_tombstones)" -gt 0 ] ||
        th_fail "the second grow3 wrote no tombstone: the checkpoint case was not exercised"
    [ "$(echo "$out" | metric grow3_splits)" -ge 300 ] || th_fail "too few splits: $out"
    [ "$(timeout 5 redis-cli -p "$rport" hget simhash:meta layout)" = "$L" ] || th_fail "meta layout"
    if [ "$L" = 4 ]; then
        [ -z "$(timeout 10 redis-cli -p "$rport" --scan --pattern 'h:*' | head -1)" ] ||
            th_fail "layout 4: grow3 wrote an id hash"
    fi
    fsck_clean "layout $L after grow3" "$rport" "$N"

    timeout 300 "$SH" export --port "$cport" >"$TH_DIR/export-$L.txt" ||
        th_fail "layout $L: simhash export"
    /usr/bin/python3 - "$TH_DIR/export-$L.txt" "$SEED" "$N" <<'PY' || th_fail "layout $L: the export is not grow3's corpus"
import sys
M = (1 << 64) - 1
def splitmix(x):
    x = (x + 0x9E3779B97F4A7C15) & M
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M
    return x ^ (x >> 31)
path, seed, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
want = {(splitmix((seed << 32) + i), "https://ex.org/doc/%011d" % i) for i in range(n)}
got = []
for line in open(path):
    fp, doc = line.split()
    got.append((int(fp), doc))
if len(got) != len(set(got)) or set(got) != want:
    missing, extra = want - set(got), set(got) - want
    print("export: %d lines, %d missing, %d extra, e.g. %s %s" % (len(got), len(missing), len(extra),
          sorted(missing)[:2], sorted(extra)[:2]), file=sys.stderr)
    sys.exit(1)
PY
    out=$(timeout 300 "$DL" check --port "$cport" --seed "$SEED" --corpus "$N" --count 500 2>&1)
    [ "$(echo "$out" | metric check_missing)" = 0 ] || th_fail "layout $L: stored fingerprints not found: $out"
    th_log "  fsck clean, the export is the $N pairs meant, 500 found at distance 0"

    state="$TH_DIR/state-$L.json"
    timeout 300 python3 "$DRIVER" load --port "$cport" --blocks 6 --distance 3 --bases 60 \
        --seed "5$L" --state-out "$state" >"$TH_DIR/e2e-$L.out" 2>&1 ||
        { cat "$TH_DIR/e2e-$L.out" >&2; th_fail "layout $L: planted load on top of grow3's corpus"; }
    timeout 300 python3 "$DRIVER" verify --port "$cport" --state "$state" --seed 9 --batch 100 \
        >>"$TH_DIR/e2e-$L.out" 2>&1 ||
        { cat "$TH_DIR/e2e-$L.out" >&2; th_fail "layout $L: planted queries on top of grow3's corpus"; }
    planted=$(/usr/bin/python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["docs"]))' "$state") ||
        th_fail "layout $L: cannot read $state"
    fsck_clean "layout $L after the planted load" "$rport" $((N + planted))
    th_log "  planted queries exact on top of it; fsck clean again"
    for p in $TH_DEPLOY_PIDS; do th_stop "$p"; done
done
th_log PASS
