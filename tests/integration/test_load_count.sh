#!/usr/bin/env bash
# test_load_count.sh: `simhash load` into a live corpus counts its new pairs exactly
# when calls are refused half-way and sent again. Two loads write different ids under
# the same 6,000 new fingerprints at once (busy locks), buckets split every few writes
# (split limit 4), and the coordinator's deadline is short (250 ms), so SIMHASH.ADD
# calls fail after storing part of their window; the load sends them again pair by
# pair, and a pair the failed call stored answers 0 then. The two loads' "M new" must
# add up to SIMHASH.INFO's growth of `documents` (every pair of both inputs is a new
# id), less at most the pairs each load names as of unknown outcome.
set -o pipefail
. "$(dirname "$0")/lib.sh"
th_init load_count
th_need_bins simhash simhash-shard simhash-coordinator
SH="$TH_BIN/simhash"
N=6000

TH_SPLIT_LIMIT=4
th_start_redis redis
th_start_shard shard "$TH_REDIS_PORT" 0-255 6 3
th_start_coord coord 6 3 250 "127.0.0.1:$TH_SHARD_PORT"
cport=$TH_COORD_PORT

/usr/bin/python3 - "$TH_DIR" "$N" <<'PY' || th_fail "cannot write the inputs"
import random, sys
d, n = sys.argv[1], int(sys.argv[2])
r = random.Random(40)
fps = set()
while len(fps) < 2 * n:
    fps.add(r.getrandbits(64))
fps = list(fps)
for name, part, tag in (('base', fps[:n], 'b'), ('new', fps[n:], 'n'), ('other', fps[n:], 'o')):
    with open('%s/%s.txt' % (d, name), 'w') as f:
        f.writelines('%d %s-%d\n' % (fp, tag, i) for i, fp in enumerate(part))
PY

info() { redis-cli -p "$cport" SIMHASH.INFO | tr -d '\r' | sed -n "s/^$1://p"; }
stat() { redis-cli -p "$cport" INFO coordinator | tr -d '\r' | sed -n "s/^$1://p"; }

# the live corpus (a long deadline here: this part only fills it)
timeout 300 "$SH" load --port "$cport" --timeout-ms 60000 "$TH_DIR/base.txt" >/dev/null \
    2>"$TH_DIR/base.err" || th_fail "base load failed: $(cat "$TH_DIR/base.err")"
d0=$(info documents)
[ "$d0" = "$N" ] || th_fail "documents after the base load: $d0, expected $N"
f0=$(stat errors_timeout)

timeout 600 "$SH" load --port "$cport" "$TH_DIR/other.txt" >"$TH_DIR/o.out" 2>"$TH_DIR/o.err" &
opid=$!
timeout 600 "$SH" load --port "$cport" "$TH_DIR/new.txt" >"$TH_DIR/n.out" 2>"$TH_DIR/n.err" ||
    th_fail "load failed: $(cat "$TH_DIR/n.err")"
wait "$opid" || th_fail "concurrent load failed: $(cat "$TH_DIR/o.err")"
d1=$(info documents)
f1=$(stat errors_timeout)
th_log "new: $(cat "$TH_DIR/n.out"); other: $(cat "$TH_DIR/o.out"); documents $d0 -> $d1;" \
    "coordinator timeouts $f0 -> $f1"
[ "$d1" -eq $((d0 + 2 * N)) ] || th_fail "documents grew by $((d1 - d0)), expected $((2 * N))"
# the conditions this test is about: calls refused half-way (else it proves nothing)
[ "$f1" -gt "$f0" ] || th_fail "no SIMHASH.ADD call timed out: the loads were never sent again"

new() { sed -n 's/^loaded [0-9]* entries (\([0-9]*\) new).*/\1/p' "$1"; }
unknown() { sed -n 's/.*: \([0-9]*\) pairs were sent again after a refused call left their outcome unknown.*/\1/p' "$1"; }
n1=$(new "$TH_DIR/n.out") n2=$(new "$TH_DIR/o.out")
u1=$(unknown "$TH_DIR/n.err") u2=$(unknown "$TH_DIR/o.err")
[ -n "$n1" ] && [ -n "$n2" ] || th_fail "no summary line: $(cat "$TH_DIR/n.out" "$TH_DIR/o.out")"
grep -q "^loaded $N entries " "$TH_DIR/n.out" && grep -q "^loaded $N entries " "$TH_DIR/o.out" ||
    th_fail "not every pair loaded: $(cat "$TH_DIR/n.out" "$TH_DIR/o.out")"
got=$((n1 + n2)) unk=$((${u1:-0} + ${u2:-0})) grew=$((d1 - d0))
th_log "printed new $n1 + $n2 = $got, unknown $unk, growth $grew"
[ "$got" -le "$grew" ] || th_fail "the loads counted $got new ids, the corpus grew by $grew"
[ $((got + unk)) -ge "$grew" ] ||
    th_fail "the loads counted $got new ids ($unk of unknown outcome), the corpus grew by $grew"
th_log "ok"
