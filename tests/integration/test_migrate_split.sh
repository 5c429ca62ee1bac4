#!/usr/bin/env bash
# test_migrate_split.sh: `simhash migrate` into and out of corpora whose buckets split
# (docs/elastic-buckets.md), verified by digest. A corpus (the planted corpus of
# simhash_e2e.py, 500 ids on one fingerprint so its ids outgrow the table-0 member and
# live in an overflow set, long ids) is copied into a deployment whose worker splits
# buckets at 4 entries (so the copy splits hundreds of buckets), and from there into
# another one: every migrate verifies the digest of both sides ("verified:"), each
# export equals what was loaded, the split copy answers the planted queries exactly
# against brute force, and SIMHASH.SCAN walks it pair by pair (steps that continue
# inside buckets and across them) and in wide steps, each pair once. simhash fsck
# finds it clean, finds a member moved out of its bucket, a table-0 member (ids
# inside) moved out of its bucket and a bucket outside its directory, and with
# --repair moves them back (then removes the table members as orphans).
set -u
. "$(dirname "$0")/lib.sh"
th_init migrate-split
th_need_bins simhash-shard simhash-coordinator simhash
E2E="$TH_SRC/tests/tools/simhash_e2e.py"
SH="$TH_BIN/simhash"

th_deploy src 1 6 3 5000
th_deploy s4 1 6 3 5000 --split-limit 4
th_deploy s4b 1 6 3 5000 --split-limit 4

st="$TH_DIR/planted.json"
th_load_copy_corpus "$port_src" "$st"
timeout 120 "$SH" export --port "$port_src" 2>/dev/null | sort >"$TH_DIR/want.txt"
n=$(wc -l <"$TH_DIR/want.txt")
[ "$n" -gt 1000 ] || th_fail "only $n pairs exported from the source"

for pair in "src s4" "s4 s4b"; do
    set -- $pair
    from=port_$1 to=port_$2
    timeout 300 "$SH" migrate --port "${!from}" --to "127.0.0.1:${!to}" >"$TH_DIR/mig-$2.out" 2>&1 ||
        { cat "$TH_DIR/mig-$2.out" >&2; th_fail "migrate $1 -> $2"; }
    grep -q '^verified: ' "$TH_DIR/mig-$2.out" || th_fail "migrate $1 -> $2: no verified count"
    th_log "migrate $1 -> $2: $(tail -n 1 "$TH_DIR/mig-$2.out")"
    timeout 120 "$SH" export --port "${!to}" 2>/dev/null | sort >"$TH_DIR/export-$2.sorted"
    cmp -s "$TH_DIR/export-$2.sorted" "$TH_DIR/want.txt" ||
        th_fail "export of $2 differs from the source's: $(diff "$TH_DIR/export-$2.sorted" "$TH_DIR/want.txt" | head -5)"
done
# the checks of copy $1 (split limit 4)
check_copy() {
    local r w p moved
    r=redis_$1 w=wport_$1 p=port_$1
    r=${!r} w=${!w} p=${!p}
    [ "$(timeout 5 redis-cli -p "$r" hget simhash:meta layout)" = 4 ] || th_fail "the copy is not layout 4"
    splits=$(timeout 10 redis-cli -p "$w" shard.info | tr -d '\r' | sed -n 's/^bucket_splits://p')
    [ "${splits:-0}" -ge 300 ] || th_fail "the split copy split only ${splits:-0} buckets"
    th_log "split copy: $splits buckets split"

    timeout 120 python3 "$E2E" verify --port "$p" --state "$st" --seed 93 >"$TH_DIR/verify.out" 2>&1 ||
        { cat "$TH_DIR/verify.out" >&2; th_fail "planted corpus in the split copy"; }
    th_log "split copy: $(tail -n 1 "$TH_DIR/verify.out")"

    for args in "COUNT 1 LIMIT 1" "COUNT 3 LIMIT 2" "COUNT 1024 LIMIT 65536"; do
        PYTHONPATH="$TH_SRC/tests/tools" timeout 300 python3 "$TH_SRC/tests/tools/scan_walk.py" \
            "$p" "$TH_DIR/want.txt" $args >&2 ||
            th_fail "SIMHASH.SCAN walk of the split copy with $args"
    done
    # fsck: the split copy is clean, with its own invariants checked; then a member
    # moved into the wrong bucket and a bucket that is no run of its directory are found
    out=$(timeout 120 "$SH" fsck --redis "127.0.0.1:$r" -q 2>&1) || th_fail "fsck of the split copy: $out"
    [[ $out == *"status:clean"* ]] || th_fail "fsck of the split copy: $out"
    nb=$(sed -n 's/^split_buckets://p' <<<"$out")
    [ "${nb:-0}" -gt 300 ] || th_fail "fsck saw only ${nb:-0} split buckets: $out"
    th_log "fsck of the split copy: clean, $nb buckets, $(sed -n 's/^split_tombstones://p' <<<"$out") tombstones"
    victim=$(timeout 10 redis-cli -p "$r" --scan --pattern 's:{3:*' | while read -r k; do
        [[ $k =~ :(0[2-9a-f]|[1-9a-f][0-9a-f])[0-9a-f]*- ]] &&
            [ "$(timeout 5 redis-cli -p "$r" type "$k")" = zset ] && { echo "$k"; break; }
    done)
    [ -n "$victim" ] || th_fail "no bounded live bucket of table 3 found"
    one=$(printf '\x01\x01\x01\x01\x01\x01\x01')     # a member below every bound from 02 on
    timeout 5 redis-cli -p "$r" zadd "$victim" 0 "$one" >/dev/null
    timeout 5 redis-cli -p "$r" zadd 's:{3:00}:01-02' 0 "$one" >/dev/null
    # a table-0 member, its ids inside, into another live bucket
    PYTHONPATH="$TH_SRC/tests/tools" timeout 60 python3 \
        "$TH_SRC/tests/tools/layout4_stray.py" "$r" || th_fail "table-0 damage"
    moved=3
    out=$(timeout 120 "$SH" fsck --redis "127.0.0.1:$r" -q 2>&1); rc=$?
    [ $rc -eq 1 ] || th_fail "fsck of a damaged split copy: exit $rc: $out"
    grep -q '^split_members_out_of_bounds:[1-9]' <<<"$out" || th_fail "fsck missed a member out of its bucket: $out"
    grep -q '^split_buckets_not_in_directory:[1-9]' <<<"$out" || th_fail "fsck missed a bucket outside the directory: $out"
    # --repair moves both members into their live buckets, where the tables phase finds
    # them orphans (no documents) and removes them; a second fsck is clean and the export
    # is what was loaded
    out=$(timeout 120 "$SH" fsck --redis "127.0.0.1:$r" -q --repair 2>&1) ||
        th_fail "fsck --repair of the damaged split copy: $out"
    [[ $out == *"status:repaired"* ]] && grep -q "^split_members_moved:$moved\$" <<<"$out" ||
        th_fail "fsck --repair of the damaged split copy: $out"
    out=$(timeout 120 "$SH" fsck --redis "127.0.0.1:$r" -q 2>&1) || th_fail "fsck after the repair: $out"
    [[ $out == *"status:clean"* ]] || th_fail "fsck after the repair: $out"
    timeout 120 "$SH" export --port "$p" 2>/dev/null | sort | cmp -s - "$TH_DIR/want.txt" ||
        th_fail "export of the split copy after the repair differs"
    th_log "fsck --repair of the split copy moved the $moved stray members; clean after"
}
check_copy s4
th_log PASS
