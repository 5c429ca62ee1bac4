#!/usr/bin/env bash
# test_e2e_lifecycle.sh: distributed mode end to end, the life of a corpus: removal
# (DEL fp docid keeps the other documents, DEL fp removes all, removed fingerprints
# are no longer found), re-insert, fingerprints shared by documents; restarts of the
# coordinator and of the shard workers leave the answers unchanged (the data lives in
# Redis); a coordinator or worker started with other blocks/distance than the corpus
# refuses to run with a clear message.
set -u
. "$(dirname "$0")/lib.sh"
th_init e2e-lifecycle
th_need_bins simhash-shard simhash-coordinator
DRIVER="$TH_SRC/tests/tools/simhash_e2e.py"
B=6 K=3

th_start_redis redis
rport=$TH_REDIS_PORT
aport=$(th_free_port) bport=$(th_free_port)
th_start_shard shard-a "$rport" 0-127 $B $K "$aport"
apid=$TH_SHARD_PID
th_start_shard shard-b "$rport" 128-255 $B $K "$bport"
bpid=$TH_SHARD_PID
workers="127.0.0.1:$aport 127.0.0.1:$bport"
th_start_coord coord $B $K 2000 "$workers"
cpid=$TH_COORD_PID cport=$TH_COORD_PORT
s1="$TH_DIR/s1.json" s2="$TH_DIR/s2.json"

timeout 120 python3 "$DRIVER" load --port "$cport" --blocks $B --distance $K --bases 200 \
    --seed 11 --state-out "$s1" || th_fail "load"
timeout 200 python3 "$DRIVER" lifecycle --port "$cport" --state "$s1" --state-out "$s2" --seed 12 \
    || th_fail "lifecycle"

th_log "restart the coordinator"
th_stop "$cpid"
th_start_coord coord2 $B $K 2000 "$workers"
cpid=$TH_COORD_PID cport=$TH_COORD_PORT
timeout 60 python3 "$DRIVER" wait-ok --port "$cport" --state "$s2" --within 10 --seed 13 \
    || th_fail "coordinator restart: not answering correctly"
timeout 200 python3 "$DRIVER" verify --port "$cport" --state "$s2" --seed 14 \
    || th_fail "verify after coordinator restart"

th_log "restart both shard workers"
th_stop "$apid"
th_stop "$bpid"
th_start_shard shard-a2 "$rport" 0-127 $B $K "$aport"
apid=$TH_SHARD_PID
th_start_shard shard-b2 "$rport" 128-255 $B $K "$bport"
bpid=$TH_SHARD_PID
timeout 60 python3 "$DRIVER" wait-ok --port "$cport" --state "$s2" --within 15 --seed 15 \
    || th_fail "shard restart: coordinator did not recover"
timeout 200 python3 "$DRIVER" verify --port "$cport" --state "$s2" --seed 16 \
    || th_fail "verify after shard worker restart"

# Settings that disagree with the corpus: the program must exit non-zero by itself
# (within 15 s) and say why.
# expect_refusal NAME CMD..: run CMD under timeout, demand a non-zero exit that is not
# the timeout's and a message naming blocks or distance.
expect_refusal() {
    local name=$1 rc msg
    shift
    timeout 20 "$@" >"$TH_DIR/$name.log" 2>&1
    rc=$?
    [ $rc -ne 0 ] || th_fail "$name: exited 0 with settings that disagree with the corpus"
    [ $rc -ne 124 ] && [ $rc -ne 137 ] || th_fail "$name: still running after 20 s (rc $rc)"
    msg=$(cat "$TH_DIR/$name.log" "$TH_DIR/$name.file.log" 2>/dev/null \
        | grep -iE 'blocks|distance' | grep -iE 'differ|match|refus|agree|built with' | head -n 1)
    [ -n "$msg" ] || th_fail "$name: exit $rc without a message saying the blocks/distance differ: $(head -c 600 "$TH_DIR/$name.log")"
    th_log "$name refused (exit $rc): $msg"
}
th_log "mismatched settings"
expect_refusal coord-mismatch "$TH_BIN/simhash-coordinator" --bind 127.0.0.1 --port "$(th_free_port)" \
    --blocks 5 --distance 3 --timeout-ms 2000 --worker "127.0.0.1:$aport" --worker "127.0.0.1:$bport" \
    --logfile "$TH_DIR/coord-mismatch.file.log"
expect_refusal coord-mismatch-k "$TH_BIN/simhash-coordinator" --bind 127.0.0.1 --port "$(th_free_port)" \
    --blocks 6 --distance 2 --timeout-ms 2000 --worker "127.0.0.1:$aport" --worker "127.0.0.1:$bport" \
    --logfile "$TH_DIR/coord-mismatch-k.file.log"
expect_refusal shard-mismatch "$TH_BIN/simhash-shard" --bind 127.0.0.1 --port "$(th_free_port)" \
    --redis-host 127.0.0.1 --redis-port "$rport" --shards 0-255 --blocks 4 --distance 3 \
    --logfile "$TH_DIR/shard-mismatch.file.log"
meta=$(timeout 5 redis-cli -p "$rport" hget simhash:meta blocks)
[ "$meta" = $B ] || th_fail "simhash:meta blocks is '$meta' after a refused worker, want $B"

# the running deployment is untouched by the refused programs
timeout 200 python3 "$DRIVER" verify --port "$cport" --state "$s2" --seed 17 --quick \
    || th_fail "verify after refused programs"
th_log "PASS"
