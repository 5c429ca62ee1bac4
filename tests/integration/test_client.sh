#!/usr/bin/env bash
# tests/integration/test_client.sh: the client side end to end against a real local
# deployment (deploy/simhash-local up on free loopback ports in a mktemp -d dir):
# the example program, and `simhash add/query/check/del/load` with their exact
# output, exit codes and error messages.
set -euo pipefail

SRC=${SIMHASH_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${SIMHASH_BIN:-$SRC/build/bin}
SH="$BIN/simhash"
T=test_client
WORK=$(mktemp -d "${TMPDIR:-/tmp}/simhash-$T.XXXXXX")
RUN="$WORK/run"
UP=0

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ $UP -eq 1 ]; then
        SIMHASH_BIN=$BIN timeout 60 bash "$SRC/deploy/simhash-local" down --dir "$RUN" >/dev/null 2>&1 || true
    fi
    if [ $rc -ne 0 ] && [ -d "$RUN" ]; then
        for f in "$RUN"/*.log; do
            [ -f "$f" ] && { echo "---- $(basename "$f")" >&2; tail -n 20 "$f" >&2; }
        done
    fi
    rm -rf "$WORK"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "[$T] FAIL: $*" >&2; exit 1; }
log() { echo "[$T] $*" >&2; }

for p in simhash client_example simhash-shard simhash-coordinator; do
    [ -x "$BIN/$p" ] || fail "$BIN/$p not built"
done

# The shared library exports exactly the functions its public header declares.
so="$BIN/../lib/libsimhashclient.so"
if [ -f "$so" ]; then
    exported=$(nm -D --defined-only "$so" | awk '$2 == "T" {sub(/@.*/, "", $3); print $3}' | sort)
    declared=$(grep -oE '\bshc_[a-z_]+\(' "$SRC/client/include/simhash/client.h" | tr -d '(' | sort -u)
    [ "$exported" = "$declared" ] ||
        fail "libsimhashclient.so exports [$(echo $exported)], the header declares [$(echo $declared)]"
    log "libsimhashclient.so exports the $(echo "$declared" | wc -l) functions of client.h, nothing else"
fi

# A port p such that p .. p+COUNT-1 are all free on 127.0.0.1 right now.
free_ports() {
    python3 - "$1" <<'EOF'
import socket, sys, random
count = int(sys.argv[1])
for _ in range(200):
    base = random.randint(20000, 22700 - count)    # deployments' range (lib.sh, th_free_port)
    socks = []
    try:
        for p in range(base, base + count):
            s = socket.socket()
            s.bind(("127.0.0.1", p))
            socks.append(s)
        print(base)
        break
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()
else:
    sys.exit("no free ports")
EOF
}

# run EXPECTED_RC CMD...: run CMD under timeout; stdout to $WORK/out, stderr to
# $WORK/err; fail unless it exits with EXPECTED_RC.
run() {
    local want=$1 rc=0
    shift
    timeout 120 "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
    if [ "$rc" -ne "$want" ]; then
        echo "stdout:" >&2; head -c 2000 "$WORK/out" >&2
        echo "stderr:" >&2; head -c 2000 "$WORK/err" >&2
        fail "exit $rc (want $want): $*"
    fi
}
# expect_out TEXT: stdout of the last run is exactly TEXT (printf %b of it).
expect_out() {
    printf '%b' "$1" >"$WORK/want"
    cmp -s "$WORK/want" "$WORK/out" || { diff "$WORK/want" "$WORK/out" >&2 || true; fail "unexpected output"; }
}
expect_err() {
    grep -q -- "$1" "$WORK/err" || { cat "$WORK/err" >&2; fail "stderr lacks '$1'"; }
}

# ---- Before any server: refused connections ----
CLOSED=$(free_ports 1)
run 1 "$SH" query 1 --port "$CLOSED"
expect_err "cannot connect to 127.0.0.1:$CLOSED"
expect_err "refused"
run 1 "$SH" add 1 doc --port "$CLOSED"
expect_err "refused"
run 1 "$BIN/client_example" 127.0.0.1 "$CLOSED"
# usage errors: exit 2, nothing contacted
run 2 "$SH" add 1
run 2 "$SH" query abc
expect_err "not a decimal number"
run 2 "$SH" query 1 -d 99
run 2 "$SH" query 1 --bogus
run 2 "$SH" del
run 2 "$SH" check 1
run 0 "$SH" load --help
grep -q "loaded N entries" "$WORK/out" || fail "load --help"

# ---- Bring up a deployment ----
PORT=$(free_ports 1)
RPORT=$(free_ports 1)
SPORT=$(free_ports 2)
log "deployment: coordinator $PORT, redis $RPORT, workers $SPORT-$((SPORT + 1))"
UP=1
SIMHASH_BIN=$BIN timeout 120 bash "$SRC/deploy/simhash-local" up --dir "$RUN" --port "$PORT" \
    --redis-port "$RPORT" --shard-port "$SPORT" --shards 2 --blocks 6 --distance 3 \
    --lifetime 600 >"$WORK/up.out" 2>&1 || { cat "$WORK/up.out" >&2; fail "simhash-local up"; }
grep -q "coordinator: 127.0.0.1:$PORT" "$WORK/up.out" || fail "up did not print the coordinator address"
SIMHASH_BIN=$BIN timeout 30 bash "$SRC/deploy/simhash-local" status --dir "$RUN" >"$WORK/status" ||
    { cat "$WORK/status" >&2; fail "status after up"; }
[ "$(grep -c 'ok (PONG)' "$WORK/status")" -eq 4 ] || { cat "$WORK/status" >&2; fail "status shows 4 healthy processes"; }
NET=(--port "$PORT")

# ---- The example program ----
run 0 "$BIN/client_example" 127.0.0.1 "$PORT"
grep -q "^example OK$" "$WORK/out" || fail "client_example did not finish"
grep -q "(same)" "$WORK/out" || fail "client_example: local and server fingerprints differ"

# ---- add / query / check / del ----
B=8345678901234567890               # below 2^63: bash arithmetic is signed 64-bit
B1=$((B ^ 1)); B2=$((B ^ 2)); B3=$((B ^ (7 << 20))); B4=$((B ^ 15))
run 0 "$SH" add "${NET[@]}" "$B" doc-a "$B1" doc-b
expect_out "added 2 entries (2 new)\n"
run 0 "$SH" add "${NET[@]}" "$B3" doc-c "$B4" doc-far "$B" doc-a
expect_out "added 3 entries (2 new)\n"
run 0 "$SH" add "${NET[@]}" "$B" doc-a2
expect_out "added 1 entries (1 new)\n"

run 0 "$SH" query "${NET[@]}" "$B"
expect_out "$B\t0\tdoc-a,doc-a2\n$B1\t1\tdoc-b\n$B3\t3\tdoc-c\n"
run 0 "$SH" query "${NET[@]}" "$B" -d 1
expect_out "$B\t0\tdoc-a,doc-a2\n$B1\t1\tdoc-b\n"
run 0 "$SH" query "${NET[@]}" "$B" --limit 1
expect_out "$B\t0\tdoc-a,doc-a2\n"
run 0 "$SH" query "${NET[@]}" "$B" -d 1 --json
# fingerprints are JSON strings (beyond 2^53 a JSON number loses bits in jq / JavaScript)
expect_out "[{\"fp\":\"$B\",\"distance\":0,\"docids\":[\"doc-a\",\"doc-a2\"]},{\"fp\":\"$B1\",\"distance\":1,\"docids\":[\"doc-b\"]}]\n"
run 0 "$SH" query "${NET[@]}" 1 --json
expect_out "[]\n"
# more than the corpus distance: the server's error, exit 1
run 1 "$SH" query "${NET[@]}" "$B" -d 10
[ -s "$WORK/err" ] || fail "no message for a too large distance"

# check: the matches stored before, then the entry is added
run 0 "$SH" check "${NET[@]}" "$B2" doc-new
expect_out "$B\t1\tdoc-a,doc-a2\n$B1\t2\tdoc-b\n$B4\t3\tdoc-far\n"
run 0 "$SH" query "${NET[@]}" "$B2" -d 0
expect_out "$B2\t0\tdoc-new\n"

# check --text: the local fingerprint equals the server's
printf 'Near-duplicate detection at web-crawl scale with simhash fingerprints.\nSecond line.\n' >"$WORK/page.txt"
run 0 "$SH" check "${NET[@]}" --text "$WORK/page.txt" page-1
expect_out ""
FP=$(sed -n 's/.*fingerprint of .*: \([0-9]*\)$/\1/p' "$WORK/err")
[ -n "$FP" ] || fail "check --text did not report the fingerprint"
SFP=$(timeout 10 redis-cli -p "$PORT" -x SIMHASH.FINGERPRINT <"$WORK/page.txt")
[ "$SFP" = "$FP" ] || fail "local fingerprint $FP differs from the server's $SFP"
run 0 "$SH" check "${NET[@]}" --text "$WORK/page.txt" page-2 -d 0
expect_out "$FP\t0\tpage-1\n"

# del: one document, then a whole fingerprint
run 0 "$SH" del "${NET[@]}" "$B" doc-a
expect_out "removed 1\n"
run 0 "$SH" del "${NET[@]}" "$B" doc-a
expect_out "removed 0\n"
run 0 "$SH" query "${NET[@]}" "$B" -d 0
expect_out "$B\t0\tdoc-a2\n"
run 0 "$SH" del "${NET[@]}" "$B"
expect_out "removed 1\n"
run 0 "$SH" query "${NET[@]}" "$B" -d 0
expect_out ""

# ---- load ----
# 3000 lines: 2800 distinct (fingerprint, docid) pairs, the last 200 repeat earlier ones
awk 'BEGIN { for (i = 0; i < 3000; i++) { j = i < 2800 ? i : i - 2800;
             printf "%.0f L%d\n", (j * 7919 + 13) * 1048583, j } }' >"$WORK/load.txt"
run 0 "$SH" load "${NET[@]}" "$WORK/load.txt"
grep -Eq "^loaded 3000 entries \(2800 new\) in [0-9]+\.[0-9]{2} s$" "$WORK/out" ||
    { cat "$WORK/out" >&2; fail "load summary"; }
run 0 "$SH" query "${NET[@]}" $(((5 * 7919 + 13) * 1048583)) -d 0
expect_out "$(((5 * 7919 + 13) * 1048583))\t0\tL5\n"
# again from stdin: nothing new
timeout 120 "$SH" load "${NET[@]}" - <"$WORK/load.txt" >"$WORK/out" 2>"$WORK/err" || fail "load from stdin"
grep -Eq "^loaded 3000 entries \(0 new\)" "$WORK/out" || fail "reload summary"

# a bad line: its number, exit 1, nothing sent
printf '111 x1\n222 x2\n333 x3\n444 x4\n555 x5\n666 x6 extra\n777 x7\n' >"$WORK/bad.txt"
run 1 "$SH" load "${NET[@]}" "$WORK/bad.txt"
expect_err "bad.txt:6: extra field"
run 0 "$SH" query "${NET[@]}" 111 -d 0
expect_out ""
printf '1 a\n0x10 b\n' >"$WORK/bad2.txt"
run 1 "$SH" load "${NET[@]}" "$WORK/bad2.txt"
expect_err "bad2.txt:2: not a decimal number"
printf '1 a\n\n' >"$WORK/bad3.txt"
run 1 "$SH" load "${NET[@]}" "$WORK/bad3.txt"
expect_err "bad3.txt:2: empty line"
printf '18446744073709551616 a\n' >"$WORK/bad4.txt"
run 1 "$SH" load "${NET[@]}" "$WORK/bad4.txt"
expect_err "bad4.txt:1: out of range"

# ---- down ----
SIMHASH_BIN=$BIN timeout 60 bash "$SRC/deploy/simhash-local" down --dir "$RUN" >"$WORK/down.out" 2>&1 ||
    { cat "$WORK/down.out" >&2; fail "down"; }
UP=0
[ "$(grep -c '^stopped ' "$WORK/down.out")" -eq 4 ] || { cat "$WORK/down.out" >&2; fail "down stopped 4 processes"; }
rc=0
SIMHASH_BIN=$BIN timeout 30 bash "$SRC/deploy/simhash-local" status --dir "$RUN" >/dev/null 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "status after down says healthy"
run 1 "$SH" query "${NET[@]}" 1
expect_err "refused"
log "ok"
