#!/usr/bin/env bash
# test_e2e_faults.sh: distributed mode end to end, failing shard workers. A worker
# stopped with SIGSTOP: queries answer an error reply (-TIMEOUT/-SHARDDOWN) within
# about twice the deadline and never a smaller answer; after SIGCONT answers are right
# again. A worker killed (SIGKILL) and started again: errors meanwhile, then right
# answers again without touching the coordinator. The deadline is short (300 ms) on
# purpose; in the checks of right answers a query answered -TIMEOUT (a busy machine)
# is asked again, up to 5 times, and every answer it gets is still checked.
set -u
. "$(dirname "$0")/lib.sh"
th_init e2e-faults
th_need_bins simhash-shard simhash-coordinator
DRIVER="$TH_SRC/tests/tools/simhash_e2e.py"
B=6 K=3 TMO=300

th_start_redis redis
rport=$TH_REDIS_PORT
aport=$(th_free_port) bport=$(th_free_port)
th_start_shard shard-a "$rport" 0-127 $B $K "$aport"
apid=$TH_SHARD_PID
th_start_shard shard-b "$rport" 128-255 $B $K "$bport"
bpid=$TH_SHARD_PID
th_start_coord coord $B $K $TMO "127.0.0.1:$aport 127.0.0.1:$bport"
cport=$TH_COORD_PORT
st="$TH_DIR/state.json"

timeout 120 python3 "$DRIVER" load --port "$cport" --blocks $B --distance $K --bases 100 \
    --seed 21 --state-out "$st" || th_fail "load"
timeout 120 python3 "$DRIVER" verify --port "$cport" --state "$st" --seed 22 --quick --timeout-retries 5 \
    || th_fail "verify before faults"

th_log "SIGSTOP worker b"
bchild=$(th_child_pid "$bpid")
[ -n "$bchild" ] || th_fail "no simhash-shard process under timeout $bpid"
kill -STOP "$bchild"
timeout 60 python3 "$DRIVER" expect-down --port "$cport" --state "$st" --timeout-ms $TMO \
    --count 10 --seed 23
rc=$?
kill -CONT "$bchild"
[ $rc -eq 0 ] || th_fail "queries while worker b is stopped"
th_log "SIGCONT worker b"
timeout 60 python3 "$DRIVER" wait-ok --port "$cport" --state "$st" --within 10 --seed 24 \
    || th_fail "not correct again after SIGCONT"
timeout 120 python3 "$DRIVER" verify --port "$cport" --state "$st" --seed 25 --timeout-retries 5 \
    || th_fail "verify after SIGCONT"

th_log "SIGKILL worker a"
achild=$(th_child_pid "$apid")
[ -n "$achild" ] || th_fail "no simhash-shard process under timeout $apid"
kill -KILL "$achild"
wait "$apid" 2>/dev/null
timeout 60 python3 "$DRIVER" expect-down --port "$cport" --state "$st" --timeout-ms $TMO \
    --count 10 --seed 26 || th_fail "queries while worker a is dead"
th_log "restart worker a"
th_start_shard shard-a2 "$rport" 0-127 $B $K "$aport"
timeout 60 python3 "$DRIVER" wait-ok --port "$cport" --state "$st" --within 15 --seed 27 \
    || th_fail "coordinator did not recover after worker a came back"
timeout 120 python3 "$DRIVER" verify --port "$cport" --state "$st" --seed 28 --timeout-retries 5 \
    || th_fail "verify after worker restart"

th_log "kill Redis under the workers"
th_stop "$TH_REDIS_PID"
timeout 60 python3 "$DRIVER" expect-down --port "$cport" --state "$st" --timeout-ms $TMO \
    --count 5 --seed 29 --accept "*" || th_fail "queries while Redis is down"
th_log "PASS"
