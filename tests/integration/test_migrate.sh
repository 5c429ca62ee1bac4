#!/usr/bin/env bash
# test_migrate.sh: moving a corpus (docs/operations.md, "Moving a corpus"). A source
# deployment (blocks 6, distance 3) holds a planted corpus, a fingerprint with 500
# document ids, ids of 100+ bytes and ids with spaces and line ends. `simhash export`
# prints exactly what was loaded (checked line by line) and refuses an id that a line
# cannot carry; SIMHASH.SCAN rejects bad arguments, and its walk gives the same set
# with one fingerprint per step (continuing inside buckets) as with the defaults.
# `simhash migrate` copies the corpus into deployments with other settings
# (a split limit of 4, so the copy splits hundreds of buckets; blocks 8 distance 2),
# verified by a digest of every
# pair on both sides, by export -> migrate -> export giving the same set, and by the
# planted corpus answering exactly against brute force in the copy; a migrate killed
# with SIGKILL resumes from its --state file (which refuses another source/target);
# a migrate while a client keeps writing to the source reports the difference, and a
# second run closes it; a pair deleted from the source makes the check fail. The
# split copy is walked (SIMHASH.SCAN) in small steps through its many buckets; an
# empty and a one-fingerprint corpus export exactly, well inside a 60 s hang bound.
set -u
. "$(dirname "$0")/lib.sh"
th_init migrate
th_need_bins simhash-shard simhash-coordinator simhash
command -v redis-cli >/dev/null || th_fail "redis-cli not found"
E2E="$TH_SRC/tests/tools/simhash_e2e.py"
LIVE="$TH_SRC/tests/tools/simhash_live.py"
SH="$TH_BIN/simhash"

# deployments NAME: one worker each, blocks distance [split limit]
th_deploy src 1 6 3 3000
th_deploy tsplit 1 6 3 3000 --split-limit 4
th_deploy t8 1 8 2 3000
th_deploy tres 1 6 3 3000
th_deploy tlive 1 6 3 3000
th_deploy tone 1 6 3 3000

# export_sorted PORT FILE: the corpus at PORT exported, sorted, into FILE; fails (with the
# export's messages) when the export did not finish, so a cut export is never compared
export_sorted() {
    timeout 300 "$SH" export --port "$1" -o "$2.raw" 2>"$2.err" || { cat "$2.err" >&2; return 1; }
    sort "$2.raw" >"$2"
}

# ---- the source corpus ----
st="$TH_DIR/planted.json"
th_load_copy_corpus "$port_src" "$st"
# the expected export: every pair loaded so far, as lines
python3 - "$st" "$TH_DIR/extra.txt" >"$TH_DIR/want.txt" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
docs = s["docs"] if "docs" in s else s["model"]["docs"]
for fp, ids in docs.items():
    for d in ids:
        print(fp, d)
for line in open(sys.argv[2]):
    print(line.rstrip("\n"))
EOF
sort -u "$TH_DIR/want.txt" -o "$TH_DIR/want.txt"
timeout 120 "$SH" export --port "$port_src" -o "$TH_DIR/export1.txt" 2>"$TH_DIR/export1.err" ||
    { cat "$TH_DIR/export1.err" >&2; th_fail "simhash export"; }
sort "$TH_DIR/export1.txt" >"$TH_DIR/export1.sorted"
cmp -s "$TH_DIR/export1.sorted" "$TH_DIR/want.txt" ||
    th_fail "export differs from what was loaded: $(diff "$TH_DIR/export1.sorted" "$TH_DIR/want.txt" | head -5)"
[ "$(sort "$TH_DIR/export1.txt" | uniq -d | wc -l)" -eq 0 ] || th_fail "export printed a pair twice"
th_log "export: $(wc -l <"$TH_DIR/export1.txt") pairs, exactly the loaded ones; $(cat "$TH_DIR/export1.err")"

# bad requests: a clear error
out=$(timeout 5 redis-cli -p "$port_src" simhash.scan 18446744073709551616 2>&1)
[[ $out == *"invalid cursor"* ]] || th_fail "SIMHASH.SCAN bad cursor: $out"
out=$(timeout 5 redis-cli -p "$port_src" simhash.scan 0 COUNT 5000 2>&1)
[[ $out == *"COUNT"* ]] || th_fail "SIMHASH.SCAN COUNT 5000: $out"
out=$(timeout 5 redis-cli -p "$port_src" simhash.scan 0 LIMIT 0 2>&1)
[[ $out == *"LIMIT"* ]] || th_fail "SIMHASH.SCAN LIMIT 0: $out"
out=$(timeout 5 redis-cli -p "$port_src" simhash.scan 0 COUNT 2>&1)
[[ $out == *"syntax error"* ]] || th_fail "SIMHASH.SCAN COUNT without n: $out"
# walk PORT ARGS...: SIMHASH.SCAN from 0 to the end with ARGS gives exactly want.txt
walk() {
    local port=$1
    shift
    PYTHONPATH="$TH_SRC/tests/tools" timeout 300 python3 "$TH_SRC/tests/tools/scan_walk.py" \
        "$port" "$TH_DIR/want.txt" "$@"
}
# the walk one fingerprint at a time (a continuation inside every bucket) and with
# wide steps: the same pairs, none twice
for args in "COUNT 1 LIMIT 1" "COUNT 3 LIMIT 2" "COUNT 1024 LIMIT 65536"; do
    walk "$port_src" $args || th_fail "SIMHASH.SCAN walk with $args"
done
out=$("$SH" migrate --port "$port_src" 2>&1); rc=$?
[ $rc -eq 2 ] && [[ $out == *"--to is required"* ]] || th_fail "migrate without --to: exit $rc, $out"

# ids that a line cannot carry: export refuses them, migrate copies them
timeout 5 redis-cli -p "$port_src" simhash.add 77 "id with space" 77 "$(printf 'line\nend')" >/dev/null
out=$(timeout 60 "$SH" export --port "$port_src" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] && [[ $out == *"fingerprint 77 has a document id with white space"* ]] ||
    th_fail "export of an id with a space: exit $rc, $out"

# ---- migrate into other settings ----
for t in tsplit t8; do
    tp=port_$t
    timeout 300 "$SH" migrate --port "$port_src" --to "127.0.0.1:${!tp}" >"$TH_DIR/mig-$t.out" 2>&1 ||
        { cat "$TH_DIR/mig-$t.out" >&2; th_fail "migrate to $t"; }
    grep -q '^verified: ' "$TH_DIR/mig-$t.out" || th_fail "migrate to $t: no verified count"
    th_log "migrate to $t: $(tail -n 1 "$TH_DIR/mig-$t.out")"
    r=$(timeout 5 redis-cli -p "${!tp}" simhash.query 77 DISTANCE 0 | tr '\n' '|')
    [ "$r" = "77|0|id with space|line|end|" ] || th_fail "ids with a space and a line end in $t: '$r'"
    timeout 5 redis-cli -p "${!tp}" simhash.del 77 >/dev/null
done
timeout 5 redis-cli -p "$port_src" simhash.del 77 >/dev/null
for t in tsplit t8; do
    tp=port_$t
    export_sorted "${!tp}" "$TH_DIR/export-$t.sorted" || th_fail "simhash export of $t"
    cmp -s "$TH_DIR/export-$t.sorted" "$TH_DIR/want.txt" ||
        th_fail "export of $t differs from the source's: $(diff "$TH_DIR/export-$t.sorted" "$TH_DIR/want.txt" | head -5)"
done
# exactness against brute force in the split copy (same distance)
timeout 120 python3 "$E2E" verify --port "$port_tsplit" --state "$st" --seed 93 >"$TH_DIR/verify.out" 2>&1 ||
    { cat "$TH_DIR/verify.out" >&2; th_fail "planted corpus in the split copy"; }
th_log "copies: export -> migrate -> export the same set in tsplit and t8; tsplit $(tail -n 1 "$TH_DIR/verify.out")"
splits=$(timeout 5 redis-cli -p "$wport_tsplit" shard.info | tr -d '\r' | sed -n 's/^bucket_splits://p')
[ "${splits:-0}" -ge 100 ] || th_fail "the copy at split limit 4 split only ${splits:-0} buckets"
# the same pairs in steps that continue inside buckets and across them
for args in "COUNT 1 LIMIT 1" "COUNT 3 LIMIT 2" "COUNT 64 LIMIT 4096"; do
    walk "$port_tsplit" $args || th_fail "SIMHASH.SCAN walk of tsplit with $args"
done
# an empty and a one-fingerprint corpus: the walk follows the data (the bound is only
# against a hang: timings are in bench/distributed/walk.sh)
out=$(timeout 60 "$SH" export --port "$port_tone" 2>/dev/null); rc=$?
[ $rc -eq 0 ] && [ -z "$out" ] || th_fail "export of the empty corpus: exit $rc, '$out'"
timeout 5 redis-cli -p "$port_tone" simhash.add 12345678901234567 only-one >/dev/null
out=$(timeout 60 "$SH" export --port "$port_tone" 2>/dev/null); rc=$?
[ $rc -eq 0 ] && [ "$out" = "12345678901234567 only-one" ] ||
    th_fail "export of the one-fingerprint corpus: exit $rc, '$out'"
th_log "walks of tsplit ($splits splits), of an empty and a one-fingerprint corpus"

# ---- interrupted and resumed ----
"$SH" migrate --port "$port_src" --to "127.0.0.1:$port_tres" --state "$TH_DIR/state" --count 1 \
    >"$TH_DIR/mig-kill.out" 2>&1 &
mpid=$!
TH_PIDS+=("$mpid")
for i in $(seq 1 300); do
    c=$(awk 'NR == 1 {print $5}' "$TH_DIR/state" 2>/dev/null || echo 0)
    [ "${c:-0}" -gt 100 ] && break
    sleep 0.05
done
kill -KILL "$mpid" 2>/dev/null
wait "$mpid" 2>/dev/null
[ -f "$TH_DIR/state" ] || th_fail "no state file after the interrupted migrate"
before=$(head -n 1 "$TH_DIR/state")
out=$("$SH" migrate --port "$port_src" --to "127.0.0.1:$port_t8" --state "$TH_DIR/state" 2>&1); rc=$?
[ $rc -eq 1 ] && [[ $out == *"belongs to the copy"* ]] || th_fail "a state file of another copy: exit $rc, $out"
timeout 300 "$SH" migrate --port "$port_src" --to "127.0.0.1:$port_tres" --state "$TH_DIR/state" \
    >"$TH_DIR/mig-resume.out" 2>&1 || { cat "$TH_DIR/mig-resume.out" >&2; th_fail "resumed migrate"; }
grep -q 'resuming at cursor' "$TH_DIR/mig-resume.out" || th_fail "the second run did not resume"
grep -q '^verified: ' "$TH_DIR/mig-resume.out" || th_fail "resumed migrate: no verified count"
[ ! -f "$TH_DIR/state" ] || th_fail "state file left after a verified copy"
export_sorted "$port_tres" "$TH_DIR/export-tres.sorted" || th_fail "simhash export of the resumed copy"
cmp -s "$TH_DIR/export-tres.sorted" "$TH_DIR/want.txt" ||
    th_fail "the resumed copy differs from the source"
th_log "killed at '$before', resumed: $(tail -n 1 "$TH_DIR/mig-resume.out")"

# ---- online: the source keeps taking writes during the copy ----
timeout 120 python3 "$LIVE" run --port "$port_src" --distance 3 --seed 94 --seconds 60 \
    --stop-file "$TH_DIR/stop" --progress "$TH_DIR/progress.json" --state-out "$TH_DIR/live.json" \
    --max-adds 3000 --add-rate 200 --pause-ms 1 >"$TH_DIR/live.log" 2>&1 &
lpid=$!
TH_PIDS+=("$lpid")
sleep 1
timeout 300 "$SH" migrate --port "$port_src" --to "127.0.0.1:$port_tlive" --count 4 \
    >"$TH_DIR/mig-live1.out" 2>&1
rc1=$?
touch "$TH_DIR/stop"
wait "$lpid" || { cat "$TH_DIR/live.log" >&2; th_fail "the source answered wrongly during the copy"; }
grep -q ' 0 error replies' "$TH_DIR/live.log" || th_fail "the source failed requests during the copy: $(tail -n 1 "$TH_DIR/live.log")"
if [ $rc1 -ne 0 ]; then
    grep -q 'the two corpora differ' "$TH_DIR/mig-live1.out" || { cat "$TH_DIR/mig-live1.out" >&2; th_fail "migrate during writes: exit $rc1"; }
fi
timeout 300 "$SH" migrate --port "$port_src" --to "127.0.0.1:$port_tlive" >"$TH_DIR/mig-live2.out" 2>&1 ||
    { cat "$TH_DIR/mig-live2.out" >&2; th_fail "second migrate after the writes"; }
timeout 200 python3 "$LIVE" check --port "$port_tlive" --distance 3 --seed 95 --state "$TH_DIR/live.json" \
    --seconds 30 >"$TH_DIR/check.out" 2>&1 || { cat "$TH_DIR/check.out" >&2; th_fail "acknowledged writes missing in the copy"; }
# a pair deleted from the source is not copied: the check says the corpora differ
fp1=$(head -n 1 "$TH_DIR/want.txt" | cut -d' ' -f1) id1=$(head -n 1 "$TH_DIR/want.txt" | cut -d' ' -f2)
[ "$(timeout 5 redis-cli -p "$port_src" simhash.del "$fp1" "$id1")" = 1 ] || th_fail "DEL on the source"
timeout 300 "$SH" migrate --port "$port_src" --to "127.0.0.1:$port_tlive" >"$TH_DIR/mig-del.out" 2>&1 &&
    th_fail "migrate after a delete on the source verified: $(cat "$TH_DIR/mig-del.out")"
grep -q 'the two corpora differ' "$TH_DIR/mig-del.out" || th_fail "migrate after a delete: $(cat "$TH_DIR/mig-del.out")"
th_log "online: first copy exit $rc1 ($(tail -n 1 "$TH_DIR/mig-live1.out")); second: $(tail -n 1 "$TH_DIR/mig-live2.out"); copy: $(tail -n 1 "$TH_DIR/check.out")"
th_log "PASS"
