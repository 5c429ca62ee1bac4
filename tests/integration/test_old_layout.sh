#!/usr/bin/env bash
# test_old_layout.sh: a Redis holding a corpus of another storage format (data layouts
# 1, 2 and 3 of earlier builds, or layout 4's marker with a bucket_bits field other than
# 8; the meta marker and a few keys written by hand with redis-cli) is refused at start, before anything is written: simhash-shard exits 1
# and simhash fsck exits 2, each naming the layout found and the way across (simhash
# export with the build that wrote it, then simhash load); the same for a named corpus.
# A worker configured with such a layout is refused as a configuration error (exit 2).
set -u
. "$(dirname "$0")/lib.sh"
th_init old_layout
th_need_bins simhash-shard simhash

rcli() { timeout 10 redis-cli -p "$@"; }
th_start_redis r
r=$TH_REDIS_PORT

# check LABEL PREFIX LAYOUT: the meta of corpus PREFIX says LAYOUT; worker and fsck refuse
check() {
    local label=$1 pre=$2 layout=$3 corpus=() out rc before
    [ -n "$pre" ] && corpus=(--corpus "${pre%:}")
    before=$(rcli "$r" dbsize)
    out=$(timeout 20 "$TH_BIN/simhash-shard" --bind 127.0.0.1 --port "$(th_free_port)" \
        --redis-port "$r" "${corpus[@]}" 2>&1); rc=$?
    [ $rc -eq 1 ] || th_fail "$label: worker exit $rc, want 1: $out"
    [[ $out == *"holds a corpus of data layout $layout (${pre}simhash:meta: layout $layout"* ]] ||
        th_fail "$label: worker message: $out"
    [[ $out == *"this build reads and writes data layout 4 only"* &&
       $out == *"simhash export with the build that wrote it, then simhash load"* ]] ||
        th_fail "$label: worker message names no way across: $out"
    [ "$(rcli "$r" dbsize)" = "$before" ] || th_fail "$label: the worker wrote keys"
    [ "$(rcli "$r" hget "${pre}simhash:meta" layout)" = "$layout" ] ||
        th_fail "$label: the meta changed"
    out=$(timeout 60 "$TH_BIN/simhash" fsck --redis "127.0.0.1:$r" "${corpus[@]}" 2>&1); rc=$?
    [ $rc -eq 2 ] || th_fail "$label: fsck exit $rc, want 2: $out"
    [[ $out == *"holds a corpus of data layout $layout"* &&
       $out == *"simhash export with the build that wrote it, then simhash load"* ]] ||
        th_fail "$label: fsck message: $out"
    [ "$(rcli "$r" dbsize)" = "$before" ] || th_fail "$label: fsck wrote keys"
    th_log "$label: refused by the worker and by fsck"
}

# layout 1: a document set per fingerprint, no tombstone or fingerprint field
rcli "$r" hset simhash:meta blocks 6 distance 3 layout 1 bucket_bits 16 >/dev/null
rcli "$r" sadd 'd:{0:a7}:0123456789abcdef' doc-1 >/dev/null
rcli "$r" zadd 's:{0:a7}:b3' 0 member >/dev/null
check "layout 1" "" 1
# layout 2: bucket hashes of packed ids
rcli "$r" flushall >/dev/null
rcli "$r" hset simhash:meta blocks 6 distance 3 layout 2 bucket_bits 12 fingerprint v3 >/dev/null
rcli "$r" hset 'h:{0:a7}:b' field value >/dev/null
check "layout 2" "" 2
# layout 3: elastic buckets with id hashes, its meta as complete as layout 4's
rcli "$r" flushall >/dev/null
rcli "$r" hset simhash:meta blocks 6 distance 3 layout 3 bucket_bits 8 fingerprint v4 \
    tombstone_seconds 120 >/dev/null
rcli "$r" hset 'h:{0:a7}:-' field value >/dev/null
check "layout 3" "" 3
# a named corpus of layout 3 beside nothing else
rcli "$r" flushall >/dev/null
rcli "$r" hset news:simhash:meta blocks 6 distance 3 layout 3 bucket_bits 8 fingerprint v4 \
    tombstone_seconds 120 >/dev/null
check "corpus news, layout 3" "news:" 3
# layout 4's marker with a bucket_bits field other than the 8 former builds wrote there
rcli "$r" flushall >/dev/null
rcli "$r" hset simhash:meta blocks 6 distance 3 layout 4 bucket_bits 12 fingerprint v5 \
    tombstone_seconds 120 >/dev/null
check "layout 4, bucket_bits 12" "" 4

# the option itself
out=$(timeout 20 "$TH_BIN/simhash-shard" --port 0 --redis-port "$r" --layout 2 2>&1); rc=$?
[ $rc -eq 2 ] && [[ $out == *"layout 2: this build reads and writes data layout 4 only"* ]] ||
    th_fail "--layout 2: exit $rc, $out"
th_log "PASS"
