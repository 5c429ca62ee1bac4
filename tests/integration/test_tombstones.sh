#!/usr/bin/env bash
# test_tombstones.sh: the tombstone lifetime of a corpus is the corpus's,
# recorded in simhash:meta (docs/elastic-buckets.md):
#   1. a new corpus records tombstone_seconds 120 and its worker reports it; a worker
#      configured with another lifetime, one whose timeout-ms is above a third of it,
#      and tombstone-seconds 2 are refused with a message naming the setting
#   2. a meta without the field (none of this format lacks it) is refused, naming
#      the fields it must have, and the worker writes no field into it
#   3. a new corpus made with tombstone-seconds 9 and a split limit of 4 (workers'
#      timeout-ms 3000, the most a third of 9 s allows): a second worker with the
#      option unset adopts 9; the splits' tombstones carry a TTL of at most 9 s and are
#      gone 10 s later; every fingerprint added is still found
#   4. simhash fsck on that corpus while it grows: stopped (SIGSTOP) once it is in
#      its documents phase (past reading the directories), while 4,000 more fingerprints split buckets it routes
#      by and their tombstones expire, then continued: it reports no missing entry and
#      no orphan (it asks again through a fresh directory before it counts one)
set -u
. "$(dirname "$0")/lib.sh"
th_init tombstones
th_need_bins simhash-shard simhash-coordinator

info() { timeout 10 redis-cli -p "$1" shard.info | tr -d '\r' | sed -n "s/^$2://p"; }
refused() {   # refused LABEL WANT args..: the worker must exit non-zero saying WANT
    local label=$1 want=$2 out rc
    shift 2
    out=$(timeout 20 "$TH_BIN/simhash-shard" --port 0 --blocks 6 --distance 3 "$@" 2>&1); rc=$?
    [ $rc -ne 0 ] && [[ $out == *"$want"* ]] || th_fail "$label: exit $rc, $out"
}

# ---- 1. a new corpus
th_start_redis r1
r1=$TH_REDIS_PORT
th_start_shard w1 "$r1" 0-255 6 3
w1=$TH_SHARD_PORT
[ "$(timeout 10 redis-cli -p "$r1" hget simhash:meta tombstone_seconds)" = 120 ] ||
    th_fail "new corpus: tombstone_seconds '$(redis-cli -p "$r1" hget simhash:meta tombstone_seconds)'"
[ "$(info "$w1" tombstone_seconds)" = 120 ] || th_fail "worker reports $(info "$w1" tombstone_seconds)"
refused "another lifetime" "keeps a split bucket's tombstone 120 s; this worker is configured with tombstone-seconds 30" \
    --redis-port "$r1" --tombstone-seconds 30
refused "timeout-ms above a third" "timeout-ms 40001 is above a third of the corpus's tombstone lifetime (120 s)" \
    --redis-port "$r1" --timeout-ms 40001
refused "tombstone-seconds 2" "tombstone-seconds 2: at least 3" --redis-port "$r1" --tombstone-seconds 2
th_stop "$TH_SHARD_PID"

# ---- 2. a meta without the field
th_start_redis r2
r2=$TH_REDIS_PORT
timeout 10 redis-cli -p "$r2" hset simhash:meta blocks 6 distance 3 layout 4 bucket_bits 8 \
    fingerprint v5 >/dev/null || th_fail "HSET meta"
refused "meta without tombstone_seconds" "simhash:meta lacks a field or holds a non-number" \
    --redis-port "$r2"
[ "$(timeout 10 redis-cli -p "$r2" hexists simhash:meta tombstone_seconds)" = 0 ] ||
    th_fail "the worker wrote tombstone_seconds into an existing corpus's meta"

# ---- 3. a short lifetime: tombstones expire, nothing is lost
# add PAIRS..: one SIMHASH.ADD through the coordinator, sent again while it answers an
# error (a worker's Redis slow on a loaded machine; the ADD is idempotent), up to 30
# times; the queries below check what was stored
add() {
    local out i=0
    while :; do
        out=$(timeout 60 redis-cli -p "$c" simhash.add "$@" 2>&1)
        [[ $out =~ ^[0-9]+$ ]] && return 0
        i=$((i + 1))
        [ $i -lt 30 ] || th_fail "SIMHASH.ADD: ${out:0:300}"
        sleep 0.5
    done
}
th_start_redis r3
r3=$TH_REDIS_PORT
TH_SPLIT_LIMIT=4 th_start_shard a "$r3" 0-127 6 3 "" --tombstone-seconds 9 \
    --timeout-ms 3000
a=$TH_SHARD_PORT
TH_SPLIT_LIMIT=4 th_start_shard b "$r3" 128-255 6 3 "" --timeout-ms 3000
b=$TH_SHARD_PORT
[ "$(info "$b" tombstone_seconds)" = 9 ] || th_fail "worker b did not adopt 9: $(info "$b" tombstone_seconds)"
th_start_coord c 6 3 5000 "127.0.0.1:$a 127.0.0.1:$b"
c=$TH_COORD_PORT
N=400
args=()
for i in $(seq 1 $N); do args+=("$((i * 40503 * 65537 + i))" "doc-$i"); done
add "${args[@]}"
splits=$(( $(info "$a" bucket_splits) + $(info "$b" bucket_splits) ))
[ "$splits" -ge 50 ] || th_fail "only $splits splits"
keys=$(th_bucket_keys "$r3") || th_fail "cannot read the keys of redis $r3"
th_log "after the splits: $(echo $keys)"
[ "$(th_kv tombstones "$keys")" -gt 0 ] || th_fail "no tombstones after $splits splits"
[ "$(th_kv pttl_min "$keys")" -ge 0 ] && [ "$(th_kv pttl_max "$keys")" -le 9000 ] ||
    th_fail "a tombstone's PTTL is outside 0..9000 ms: $(echo $keys)"
sleep 10
keys=$(th_bucket_keys "$r3" '*') || th_fail "cannot read the keys of redis $r3"
strings=$(th_kv tombstones "$keys")
[ "$strings" = 0 ] || th_fail "$strings tombstones left 10 s after the last split"
for i in $(seq 1 $N); do
    fp=$((i * 40503 * 65537 + i))
    for try in 1 2 3 4 5; do      # an error answer (a slow Redis) is asked again
        out=$(timeout 10 redis-cli -p "$c" simhash.query "$fp" distance 0 2>&1 | tr -d '\r')
        [[ $out == *"doc-$i"* ]] && break
        sleep 0.5
    done
    [[ $out == *"doc-$i"* ]] || th_fail "fingerprint $fp (doc-$i) not found after its tombstones expired: $out"
done

# ---- 4. fsck while the corpus grows under it
add_range() {   # add_range FIRST COUNT: fingerprints with one id each, 500 a command
    local i=$1 end=$(($1 + $2)) a
    while [ "$i" -lt "$end" ]; do
        a=()
        for k in $(seq "$i" $((i + 499))); do a+=("$(((k * 2654435761 * 40503 + k) & 0x7fffffffffffffff))" "d$k"); done
        add "${a[@]}"
        i=$((i + 500))
    done
}
add_range 100000 20000
"$TH_BIN/simhash" fsck -q --redis "127.0.0.1:$r3" >"$TH_DIR/fsck4.out" 2>&1 &
fsck=$!
i=0
# its documents phase: HGETALL of each id hash, ZSCOREs of the entries (the phases
# before it send TYPE, ZRANGE and HKEYS; the idle workers none of these)
until timeout 5 redis-cli -p "$r3" client list | grep -Eq 'cmd=(hgetall|zscore)'; do
    i=$((i + 1))
    if [ $i -ge 3000 ] || ! kill -0 "$fsck" 2>/dev/null; then
        kill -9 "$fsck" 2>/dev/null
        th_fail "fsck did not reach its documents phase (or ended first): $(cat "$TH_DIR/fsck4.out")"
    fi
    sleep 0.01
done
kill -STOP "$fsck"
before=$(( $(info "$a" bucket_splits) + $(info "$b" bucket_splits) ))
add_range 200000 4000
after=$(( $(info "$a" bucket_splits) + $(info "$b" bucket_splits) ))
sleep 10                                # their tombstones expire
kill -CONT "$fsck"
i=0
while kill -0 "$fsck" 2>/dev/null; do
    i=$((i + 1))
    [ $i -lt 1200 ] || { kill -9 "$fsck"; th_fail "fsck did not end within 120 s"; }
    sleep 0.1
done
wait "$fsck"
missing=$(sed -n 's/^fingerprints_missing_entries://p' "$TH_DIR/fsck4.out")
orphans=$(sed -n 's/^orphan_entries://p' "$TH_DIR/fsck4.out")
th_log "fsck stopped while $((after - before)) buckets split under it: missing $missing, orphans $orphans"
[ $((after - before)) -ge 100 ] || th_fail "only $((after - before)) splits while fsck was stopped"
[ "$missing" = 0 ] && [ "$orphans" = 0 ] ||
    th_fail "fsck on a growing corpus counted entries of split buckets: $(cat "$TH_DIR/fsck4.out")"
th_log "new corpus 120 s, old 3600 s, refusals; $splits splits with 9 s tombstones, none left, $N found; fsck while it grows; PASS"
