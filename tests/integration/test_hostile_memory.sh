#!/usr/bin/env bash
# test_hostile_memory.sh: memory budgets across clients (docs/security.md, "Budgets";
# bench/hostile/memory.py). 1,000 unauthenticated connections each holding a legal
# unfinished 160 KiB request make the coordinator's RSS grow by less than 64 MB
# (max-unauth-bytes, 32 MiB by default); 1,000 holding 1 KiB each take no more than
# max-clients minus reserved-auth-clients slots (the oldest make room); 40 clients that pipeline ECHOs of 1 MiB and
# never read keep the sum of unsent replies within max-output-total (16 MiB here, plus
# one pass of the event loop), the largest disconnected first; a client that reads is
# served throughout.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
th_init hostile_memory
th_need_bins simhash-shard simhash-coordinator
command -v redis-cli >/dev/null || th_fail "redis-cli not found"
MEM="$TH_SRC/bench/hostile/memory.py"
ulimit -n 8192 2>/dev/null || th_log "ulimit -n 8192 refused (hard limit $(ulimit -Hn))"

th_start_redis r
th_start_shard w "$TH_REDIS_PORT" 0-255 6 3
PW=memory-secret-$RANDOM
printf '%s\n' "$PW" >"$TH_DIR/pw"
# auth-timeout and request-timeout off here: on a busy machine opening 1,000 connections
# can outlast them, and their closes would hide the budget and the eviction checked below
th_start_coord pw 6 3 5000 "127.0.0.1:$TH_SHARD_PORT" "" --password-file "$TH_DIR/pw" \
    --auth-timeout 0 --request-timeout 0
# 1,000 unauthenticated connections, each holding 1 KiB of an unfinished request (far
# within max-unauth-bytes, so that only the slot cap closes any), pass max-clients 1024
# minus the 32 reserved slots: the oldest make room for the newest, and a client with the
# password still gets in
out=$(timeout 300 python3 "$MEM" unauth --port "$TH_COORD_PORT" --pid "$(th_child_pid "$TH_COORD_PID")" \
      --conns 1000 --request-kib 1 --password "$PW" --max-growth-mib 100000 --check) ||
    th_fail "unauthenticated connections past the slot cap: $out"
th_log "$out"
ev=$(printf '%s\n' "$out" | sed -n 's/.*evicted_unauthenticated=\([0-9]*\).*/\1/p')
[ "${ev:-0}" -ge 1 ] || th_fail "reserved-auth-clients: evicted_unauthenticated ${ev:-missing}"
[ "$(timeout 10 redis-cli -p "$TH_COORD_PORT" -a "$PW" --no-auth-warning ping)" = PONG ] ||
    th_fail "a client with the password after the connections past the slot cap"
# a sanitizer build's allocator keeps freed memory (quarantine): its RSS says nothing
# about the budget, whose own counter is still checked
grow=64
grep -aq AddressSanitizer "$TH_BIN/simhash-coordinator" && { grow=100000; th_log "ASan build: RSS not checked"; }
out=$(timeout 300 python3 "$MEM" unauth --port "$TH_COORD_PORT" --pid "$(th_child_pid "$TH_COORD_PID")" \
      --conns 1000 --password "$PW" --max-growth-mib "$grow" --check) || th_fail "unauthenticated requests: $out"
th_log "$out"
[ "$(timeout 10 redis-cli -p "$TH_COORD_PORT" -a "$PW" --no-auth-warning ping)" = PONG ] ||
    th_fail "a client with the password after the unauthenticated load"

th_start_coord out 6 3 5000 "127.0.0.1:$TH_SHARD_PORT" "" --max-output-total 16m
out=$(timeout 300 python3 "$MEM" output --port "$TH_COORD_PORT" --pid "$(th_child_pid "$TH_COORD_PID")" \
      --conns 40 --requests 16 --seconds 10 --check) || th_fail "clients that do not read: $out"
th_log "$out"
[ "$(timeout 10 redis-cli -p "$TH_COORD_PORT" ping)" = PONG ] || th_fail "a reading client after the load"
th_log "PASS"
