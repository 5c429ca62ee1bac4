#!/usr/bin/env bash
# test_load_resume.sh: `simhash load --state FILE` resumes a load SIGKILLed half-way:
# the second run sends only what the state file does not cover, the entries counted
# come to the input's size exactly, and the deployment then holds exactly the input's
# pairs (simhash export against the input). A finished load run again sends nothing;
# a state file of another input, or one that is not a state file, is refused.
# A load during which Redis stops answering for 3 s (SIGSTOP: the worker's requests
# fail with REDIS errors past its 1,000 ms deadline) sends the refused pairs again and
# still exits 0 with every pair stored.
set -o pipefail
. "$(dirname "$0")/lib.sh"
th_init load_resume
th_need_bins simhash simhash-shard simhash-coordinator
SH="$TH_BIN/simhash"
N=60000

th_start_redis redis
th_start_shard shard "$TH_REDIS_PORT" 0-255 6 3
th_start_coord coord 6 3 10000 "127.0.0.1:$TH_SHARD_PORT"
cport=$TH_COORD_PORT

python3 -c "
import random
r = random.Random(24)
seen = set()
while len(seen) < $N:
    seen.add(r.getrandbits(64))
for i, fp in enumerate(sorted(seen, key=lambda v: r.random())):
    print(fp, 'doc-%d' % i)
" >"$TH_DIR/in.txt" || th_fail "cannot write the input"
state="$TH_DIR/load.state"

# 1. a load killed after its first checkpoint (started without `timeout`, so that the
# SIGKILL reaches the load itself; the wait below bounds it)
"$SH" load --port "$cport" --timeout-ms 60000 --state "$state" "$TH_DIR/in.txt" \
    >"$TH_DIR/load1.out" 2>"$TH_DIR/load1.err" &
lpid=$!
i=0
until grep -q '^done [1-9]' "$state" 2>/dev/null; do
    kill -0 "$lpid" 2>/dev/null || th_fail "the first load ended before its first checkpoint: $(cat "$TH_DIR/load1.err")"
    [ $i -lt 6000 ] || { kill -KILL "$lpid"; th_fail "no checkpoint in the state file after 300 s"; }
    sleep 0.05
    i=$((i + 1))
done
kill -KILL "$lpid" 2>/dev/null
wait "$lpid" 2>/dev/null
done1=$(sed -n 's/^done //p' "$state")
th_log "first load killed with $done1 of $N pairs in its state file"
[ "$done1" -lt "$N" ] || th_fail "the first load finished before it was killed"
[ $((done1 % 10000)) -eq 0 ] || th_fail "state file says done $done1: not a whole number of chunks"
head -n 1 "$state" | grep -qx 'simhash-load-state 1' || th_fail "state file header: $(head -n 1 "$state")"

# 2. the same command again resumes and ends with the input's totals
timeout 600 "$SH" load --port "$cport" --timeout-ms 60000 --state "$state" "$TH_DIR/in.txt" \
    >"$TH_DIR/load2.out" 2>"$TH_DIR/load2.err" || th_fail "resumed load failed: $(cat "$TH_DIR/load2.err")"
grep -q "resuming after $done1 pairs" "$TH_DIR/load2.err" || th_fail "no resume message: $(cat "$TH_DIR/load2.err")"
out=$(cat "$TH_DIR/load2.out")
case "$out" in "loaded $N entries ("*" new) in "*" s") ;; *) th_fail "resumed load said: $out" ;; esac
new=$(echo "$out" | sed -n 's/^loaded [0-9]* entries (\([0-9]*\) new).*/\1/p')
# pairs of the chunk in flight at the kill were written before it: re-sent, they are
# not new any more, so the count of new ones may fall short by at most one chunk
[ "$new" -le "$N" ] && [ "$new" -ge $((N - 10000)) ] || th_fail "resumed load counted $new new of $N"
grep -qx "done $N" "$state" || th_fail "state file after the resumed load: $(cat "$state")"

# 3. the deployment holds exactly the input's pairs
timeout 300 "$SH" export --port "$cport" -o "$TH_DIR/export.txt" 2>"$TH_DIR/export.err" ||
    th_fail "export failed: $(cat "$TH_DIR/export.err")"
sort "$TH_DIR/in.txt" >"$TH_DIR/in.sorted"
sort "$TH_DIR/export.txt" >"$TH_DIR/export.sorted"
cmp -s "$TH_DIR/in.sorted" "$TH_DIR/export.sorted" ||
    th_fail "export differs from the input: $(diff "$TH_DIR/in.sorted" "$TH_DIR/export.sorted" | head -n 5)"

# 4. a finished load sends nothing and says the same totals
out=$(timeout 60 "$SH" load --port "$cport" --state "$state" "$TH_DIR/in.txt" 2>"$TH_DIR/load3.err") ||
    th_fail "finished load run again failed: $(cat "$TH_DIR/load3.err")"
case "$out" in "loaded $N entries ($new new) in "*) ;; *) th_fail "finished load run again said: $out" ;; esac

# 5. refusals: another input, a file that is not a state file
head -n 100 "$TH_DIR/in.txt" >"$TH_DIR/other.txt"
if timeout 60 "$SH" load --port "$cport" --state "$state" "$TH_DIR/other.txt" >/dev/null 2>"$TH_DIR/load4.err"; then
    th_fail "a state file of another input was accepted"
fi
grep -q "belongs to another input" "$TH_DIR/load4.err" || th_fail "another input: $(cat "$TH_DIR/load4.err")"
for bad in 'garbage' "$(sed 's/^done .*/done -1/' "$state")" "$(cat "$state")extra"; do
    printf '%s\n' "$bad" >"$TH_DIR/bad.state"
    if timeout 60 "$SH" load --port "$cport" --state "$TH_DIR/bad.state" "$TH_DIR/in.txt" >/dev/null 2>"$TH_DIR/load5.err"; then
        th_fail "a malformed state file was accepted: $bad"
    fi
    grep -q "not a state file" "$TH_DIR/load5.err" || th_fail "malformed state file: $(cat "$TH_DIR/load5.err")"
done
# 6. Redis stopped for 3 s in the middle of a load: the pairs refused meanwhile are sent
# again, the load exits 0, and the deployment holds both inputs exactly
python3 -c "
import random
r = random.Random(25)
for i in range(100000):
    print(r.getrandbits(64), 'stop-%d' % i)
" >"$TH_DIR/in2.txt" || th_fail "cannot write the second input"
rpid=$(th_child_pid "$TH_REDIS_PID")
[ -n "$rpid" ] || th_fail "no redis-server process under $TH_REDIS_PID"
timeout 600 "$SH" load --port "$cport" --timeout-ms 60000 --state "$TH_DIR/load6.state" \
    "$TH_DIR/in2.txt" >"$TH_DIR/load6.out" 2>"$TH_DIR/load6.err" &
lpid=$!
i=0
until grep -q '^done [1-9]' "$TH_DIR/load6.state" 2>/dev/null; do
    kill -0 "$lpid" 2>/dev/null || break
    [ $i -lt 6000 ] || th_fail "no checkpoint of the second load after 300 s"
    sleep 0.05
    i=$((i + 1))
done
kill -0 "$lpid" 2>/dev/null || th_log "the second load ended before Redis was stopped (a fast machine): only its result is checked"
kill -STOP "$rpid"
sleep 3
kill -CONT "$rpid"
wait "$lpid" || th_fail "the load across a stopped Redis failed: $(tail -n 5 "$TH_DIR/load6.err")"
case "$(cat "$TH_DIR/load6.out")" in "loaded 100000 entries ("*) ;;
    *) th_fail "the load across a stopped Redis said: $(cat "$TH_DIR/load6.out")" ;; esac
timeout 300 "$SH" export --port "$cport" -o "$TH_DIR/export2.txt" 2>"$TH_DIR/export2.err" ||
    th_fail "export after the second load failed: $(cat "$TH_DIR/export2.err")"
sort "$TH_DIR/in.txt" "$TH_DIR/in2.txt" >"$TH_DIR/in2.sorted"
sort "$TH_DIR/export2.txt" >"$TH_DIR/export2.sorted"
cmp -s "$TH_DIR/in2.sorted" "$TH_DIR/export2.sorted" ||
    th_fail "export after the stopped-Redis load differs from the inputs: $(diff "$TH_DIR/in2.sorted" "$TH_DIR/export2.sorted" | head -n 5)"
th_log "ok"
