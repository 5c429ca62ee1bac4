#!/usr/bin/env bash
# test_hostile_ids.sh: one document-id rule everywhere (docs/protocol.md): the server
# refuses an id the tools cannot carry (5,000 bytes, a NUL byte) with a clear error and
# stores nothing; every id it accepts (4,096 bytes, spaces, line ends, tabs, '%')
# goes through `simhash export --escape` -> `simhash load` and `simhash migrate` into a
# second deployment unchanged, while plain export still refuses white space.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
th_init hostile_ids
th_need_bins simhash-shard simhash-coordinator simhash
command -v redis-cli >/dev/null || th_fail "redis-cli not found"
SH="$TH_BIN/simhash"
deploy() {
    th_start_redis "r-$1"
    th_start_shard "w-$1" "$TH_REDIS_PORT" 0-255 6 3
    th_start_coord "c-$1" 6 3 5000 "127.0.0.1:$TH_SHARD_PORT"
    printf -v "port_$1" '%s' "$TH_COORD_PORT"
}
deploy a
deploy b
deploy m
py() { timeout 60 python3 - "$TH_SRC/tests/tools" "$@"; }

out=$(py "$port_a" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from resp_client import C, enc
c = C(int(sys.argv[2]))
for docid in (b"x" * 5000, b"nul\0byte"):
    c.s.sendall(enc("SIMHASH.ADD", 42, docid)); print(c.reply())
ids = [b"y" * 4096, b"id with space", b"line\nend", b"tab\there", b"100%\r\n%41", b"plain"]
c.s.sendall(enc("SIMHASH.ADD", *[v for i, d in enumerate(ids) for v in (1000 + i, d)]))
print(c.reply())
c.s.sendall(enc("SIMHASH.QUERY", 42, "DISTANCE", 0)); print(c.reply())
PY
) || th_fail "the ADDs: $out"
[[ $out == *"('ERR', 'ERR document id too long (argument 2): ids are 1..4096 bytes without a NUL byte')"* ]] ||
    th_fail "a 5,000-byte id: $out"
[[ $out == *"('ERR', 'ERR document id with a NUL byte (argument 2)"* ]] || th_fail "an id with a NUL byte: $out"
[[ $out == *$'\n6\n[]' ]] || th_fail "the accepted ids or the refused ones stored: $out"

out=$(timeout 60 "$SH" export --port "$port_a" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] && [[ $out == *"export --escape carries any id"* ]] || th_fail "plain export: exit $rc, $out"
timeout 120 "$SH" export --escape --port "$port_a" -o "$TH_DIR/a.txt" 2>"$TH_DIR/a.err" ||
    th_fail "export --escape: $(cat "$TH_DIR/a.err")"
timeout 120 "$SH" load --port "$port_b" "$TH_DIR/a.txt" >"$TH_DIR/load.out" 2>&1 ||
    th_fail "load of the escaped export: $(cat "$TH_DIR/load.out")"
timeout 300 "$SH" migrate --port "$port_a" --to "127.0.0.1:$port_m" >"$TH_DIR/mig.out" 2>&1 ||
    th_fail "migrate: $(cat "$TH_DIR/mig.out")"
for t in b m; do
    tp=port_$t
    timeout 120 "$SH" export --escape --port "${!tp}" -o "$TH_DIR/$t.txt" 2>"$TH_DIR/$t.err" ||
        th_fail "export --escape of $t: $(cat "$TH_DIR/$t.err")"
    cmp -s <(sort "$TH_DIR/a.txt") <(sort "$TH_DIR/$t.txt") ||
        th_fail "the ids in $t differ: $(diff <(sort "$TH_DIR/a.txt") <(sort "$TH_DIR/$t.txt") | head -c 300)"
done
# the ids themselves, byte for byte, in the loaded copy
out=$(py "$port_b" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from resp_client import C, enc
c = C(int(sys.argv[2]))
ids = [b"y" * 4096, b"id with space", b"line\nend", b"tab\there", b"100%\r\n%41", b"plain"]
bad = []
for i, d in enumerate(ids):
    c.s.sendall(enc("SIMHASH.QUERY", 1000 + i, "DISTANCE", 0))
    r = c.reply()
    if [m for m in r if m[0] == str(1000 + i).encode()][0][2] != [d]:
        bad.append((i, r))
print("bad", bad)
sys.exit(1 if bad else 0)
PY
) || th_fail "ids changed by export -> load: $out"
th_log "5,000 bytes and NUL refused; $(grep -c . "$TH_DIR/a.txt") lines of export --escape loaded and migrated unchanged"
th_log "PASS"
