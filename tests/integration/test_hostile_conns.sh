#!/usr/bin/env bash
# test_hostile_conns.sh: connections that misbehave cannot take a daemon's service
# away from others (docs/security.md, "Budgets"); hostile sockets come from 127.0.0.2,
# well-behaved clients from 127.0.0.1, all on loopback (bench/hostile/conns.py).
#   - 1,100 slow senders (one byte a second of an unfinished request) against a
#     coordinator without a password: at least 9 of 10 new clients are served
#     (max-clients-per-addr, request-timeout);
#   - 1,200 slow metrics connections against a coordinator with a password and a
#     descriptor limit of 1,100: every authenticated client is served, and the log
#     grows by less than 1 MB (accept() failures pause the listener and log once);
#   - a scrape without the password is refused (401), with it served (Bearer and
#     Basic); without a password a non-loopback metrics-bind is refused at start;
#   - wrong passwords from one address over 100 connections: under 100 a second.
# Counts are checked, never timings.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
th_init hostile_conns
th_need_bins simhash-shard simhash-coordinator
command -v redis-cli >/dev/null || th_fail "redis-cli not found"
CONNS="$TH_SRC/bench/hostile/conns.py"
info() { timeout 10 redis-cli -p "$1" ${3:+-a "$3" --no-auth-warning} info | tr -d '\r' | sed -n "s/^$2://p"; }
ulimit -n 8192 2>/dev/null || th_log "ulimit -n 8192 refused (hard limit $(ulimit -Hn))"

th_start_redis r
th_start_shard w "$TH_REDIS_PORT" 0-255 6 3

# ---- slow senders, no password ----
th_start_coord open 6 3 5000 "127.0.0.1:$TH_SHARD_PORT"
out=$(timeout 300 python3 "$CONNS" slow --port "$TH_COORD_PORT" --conns 1100 --clients 10 \
      --seconds 20 --check) || th_fail "slow senders: $out"
th_log "slow senders: $out; closed_request_timeout $(info "$TH_COORD_PORT" closed_request_timeout), refused per address $(info "$TH_COORD_PORT" rejected_connections_per_addr)"
[ "$(info "$TH_COORD_PORT" rejected_connections_per_addr)" -ge 1 ] ||
    th_fail "no connection refused by max-clients-per-addr"
# no password: the metrics port refuses a non-loopback address
mp=$(th_free_port)
out=$(timeout 20 "$TH_BIN/simhash-coordinator" --port "$(th_free_port)" --worker "127.0.0.1:$TH_SHARD_PORT" \
      --metrics-port "$mp" --metrics-bind 0.0.0.0 2>&1); rc=$?
[ $rc -ne 0 ] && [[ $out == *"refusing to listen on 0.0.0.0 without a password"* ]] ||
    th_fail "metrics on 0.0.0.0 without a password: exit $rc, $out"

# ---- the metrics port with a password, at a descriptor limit of 1,100 ----
PW=hostile-secret-$RANDOM
printf '%s\n' "$PW" >"$TH_DIR/pw"
chmod 600 "$TH_DIR/pw"
mp=$(th_free_port)
ulimit -Sn 1100
th_start_coord pw 6 3 5000 "127.0.0.1:$TH_SHARD_PORT" "" --password-file "$TH_DIR/pw" \
    --metrics-port "$mp"
ulimit -Sn 8192 2>/dev/null
cp=$TH_COORD_PORT
log0=$(stat -c %s "$TH_DIR/pw.log")
out=$(timeout 300 python3 "$CONNS" metrics --port "$cp" --metrics-port "$mp" --conns 1200 \
      --clients 20 --seconds 20 --password "$PW" --check) || th_fail "slow metrics connections: $out"
grow=$(( $(stat -c %s "$TH_DIR/pw.log") - log0 ))
th_log "slow metrics connections: $out; log grew $grow bytes"
[ "$grow" -lt 1000000 ] || th_fail "the log grew $grow bytes"
code() { timeout 20 python3 -c 'import sys, urllib.request, urllib.error
h = {"Authorization": sys.argv[2]} if sys.argv[2] else {}
try:
    r = urllib.request.urlopen(urllib.request.Request(sys.argv[1], headers=h), timeout=10)
    print(r.status, "simhash_build_info{" in r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code)' "http://127.0.0.1:$mp/metrics" "$1"; }
[ "$(code "")" = 401 ] || th_fail "a scrape without the password: $(code "")"
[ "$(code "Bearer wrong")" = 401 ] || th_fail "a scrape with a wrong password: $(code "Bearer wrong")"
[ "$(code "Bearer $PW")" = "200 True" ] || th_fail "a scrape with Bearer: $(code "Bearer $PW")"
b64=$(printf 'prometheus:%s' "$PW" | base64 -w0)
[ "$(code "Basic $b64")" = "200 True" ] || th_fail "a scrape with Basic: $(code "Basic $b64")"

# ---- wrong passwords from one address ----
out=$(timeout 300 python3 "$CONNS" auth --port "$cp" --conns 100 --seconds 10 --check) ||
    th_fail "wrong passwords: $out"
th_log "wrong passwords: $out; auth_waits $(info "$cp" auth_waits "$PW")"
client=$(timeout 10 redis-cli -p "$cp" -a "$PW" --no-auth-warning ping)
[ "$client" = PONG ] || th_fail "a client with the password after the guessing: '$client'"
th_log "PASS"
