#!/usr/bin/env bash
# test_e2e_protocol.sh: the coordinator speaks RESP to ordinary clients: redis-cli
# (PING, SIMHASH.ADD/QUERY/DEL output), pipelined mixed commands answered in order,
# a request split into 1-byte writes, inline commands, bad input (non-numeric
# fingerprint, 2^64, missing arguments, unknown command, DISTANCE -1, malformed RESP)
# answered with RESP errors while the connection keeps working.
set -u
. "$(dirname "$0")/lib.sh"
th_init e2e-protocol
th_need_bins simhash-shard simhash-coordinator simhash
DRIVER="$TH_SRC/tests/tools/simhash_e2e.py"
B=6 K=3

th_start_redis redis
rport=$TH_REDIS_PORT
th_start_shard shard-a "$rport" 0-127 $B $K
a=$TH_SHARD_PORT
th_start_shard shard-b "$rport" 128-255 $B $K
b=$TH_SHARD_PORT
th_start_coord coord $B $K 2000 "127.0.0.1:$a 127.0.0.1:$b"
cport=$TH_COORD_PORT

cli() { timeout 10 redis-cli -h 127.0.0.1 -p "$cport" "$@"; }
# expect WHAT GOT WANT
expect() { [ "$2" = "$3" ] || th_fail "$1: got '$2', want '$3'"; }

expect "redis-cli PING" "$(cli PING)" PONG
expect "redis-cli PING msg" "$(cli PING hello)" hello
fp=12345678901234567890
near=$(python3 -c "print($fp ^ 0b100001)")
far=$(python3 -c "print($fp ^ 0b1111)")   # 4 bits from fp, 4 from near
expect "ADD" "$(cli SIMHASH.ADD $fp doc-a)" 1
expect "ADD two pairs" "$(cli SIMHASH.ADD $near doc-b $far doc-c)" 2
expect "ADD again" "$(cli SIMHASH.ADD $fp doc-a)" 0
# non-tty redis-cli prints one element per line: fp, distance, doc ids, in order
out=$(cli SIMHASH.QUERY $fp | tr '\n' ' ')
expect "QUERY" "$out" "$fp 0 doc-a $near 2 doc-b "
out=$(cli SIMHASH.QUERY $fp DISTANCE 1 | tr '\n' ' ')
expect "QUERY DISTANCE 1" "$out" "$fp 0 doc-a "
out=$(cli SIMHASH.QUERY $near LIMIT 1 | tr '\n' ' ')
expect "QUERY LIMIT 1" "$out" "$near 0 doc-b "
out=$(cli SIMHASH.QUERY $fp DISTANCE 4 2>&1)
case "$out" in *ERR*) ;; *) th_fail "DISTANCE 4 (corpus 3) accepted: '$out'";; esac
out=$(cli SIMHASH.QUERY abc 2>&1)
case "$out" in *ERR*) ;; *) th_fail "QUERY abc: '$out', want an ERR reply";; esac
out=$(cli SIMHASH.QUERY 18446744073709551616 2>&1)
case "$out" in *ERR*) ;; *) th_fail "QUERY 2^64: '$out', want an ERR reply";; esac
out=$(cli NOSUCHCOMMAND 2>&1)
case "$out" in *ERR*) ;; *) th_fail "unknown command: '$out', want an ERR reply";; esac
fptext=$(cli SIMHASH.FINGERPRINT "Near-duplicate detection at web scale")
case "$fptext" in ''|*[!0-9]*) th_fail "FINGERPRINT: '$fptext'";; esac
expect "FINGERPRINT is stable" "$(cli SIMHASH.FINGERPRINT "Near-duplicate detection at web scale")" "$fptext"
# the server computes the fingerprint the CLI computes offline, for any text
for text in "Near-duplicate detection at web scale" "Почти одинаковые документы, 近似重复的文档 検出" \
        "one" "" "  punctuation only: ... !!! " "Tabs	and
newlines	inside"; do
    server=$(cli SIMHASH.FINGERPRINT "$text")
    local_fp=$(printf '%s' "$text" | timeout 10 "$TH_BIN/simhash" fingerprint -) ||
        th_fail "simhash fingerprint - of '$text': exit $?"
    local_fp=${local_fp%%$'\t'*}
    expect "SIMHASH.FINGERPRINT equals 'simhash fingerprint' for '$text'" "$server" "$local_fp"
done
info=$(cli SIMHASH.INFO)
echo "$info" | grep -q ':' || th_fail "SIMHASH.INFO without name:value lines: '$info'"
# CHECK answers the matches that existed, then adds
out=$(cli SIMHASH.CHECK $far doc-d | tr '\n' ' ')
expect "CHECK" "$out" "$far 0 doc-c "
out=$(cli SIMHASH.QUERY $far DISTANCE 0 | tr '\n' ' ')
case "$out" in "$far 0 doc-"[cd]" doc-"[cd]" ") ;; *) th_fail "after CHECK: '$out'";; esac
expect "DEL doc" "$(cli SIMHASH.DEL $far doc-d)" 1
expect "DEL fp" "$(cli SIMHASH.DEL $far)" 1
expect "DEL fp again" "$(cli SIMHASH.DEL $far)" 0
expect "DEL all" "$(cli SIMHASH.DEL $fp)" 1
expect "DEL all" "$(cli SIMHASH.DEL $near)" 1
expect "empty QUERY" "$(cli SIMHASH.QUERY $fp | tr -d '\n')" ""
# redis-cli --pipe style: many commands in one stream
for i in $(seq 1 200); do printf 'SIMHASH.ADD %d pipe-%d\n' $((i * 1000003)) "$i"; done \
    | timeout 30 redis-cli -h 127.0.0.1 -p "$cport" >"$TH_DIR/pipe.out" 2>&1 \
    || th_fail "redis-cli stream of 200 ADDs"
n=$(grep -cx 1 "$TH_DIR/pipe.out")
expect "200 streamed ADDs" "$n" 200

timeout 120 python3 "$DRIVER" protocol --port "$cport" --distance $K --seed 31 \
    || th_fail "protocol checks"
expect "coordinator alive" "$(cli PING)" PONG
th_log "PASS"
