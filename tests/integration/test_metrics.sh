#!/usr/bin/env bash
# test_metrics.sh: the Prometheus endpoint (metrics-port) of simhash-coordinator and
# simhash-shard, checked with promtool (Debian's prometheus package), its figures
# against the requests sent, and SLOWLOG GET/LEN/RESET with slowlog-log-slower-than /
# slowlog-max-len. Real redis-server and workers on loopback, stopped by PID.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
th_init metrics
th_need_bins simhash-shard simhash-coordinator
command -v promtool >/dev/null || th_fail "promtool missing (scripts/install-deps.sh installs prometheus)"

th_start_redis redis
RPORT=$TH_REDIS_PORT
M0=$(th_free_port)
th_start_shard w0 "$RPORT" 0-127 6 3 "" --metrics-port "$M0"
W0=$TH_SHARD_PORT
th_start_shard w1 "$RPORT" 128-255 6 3
W1=$TH_SHARD_PORT
MC=$(th_free_port)
th_start_coord coord 6 3 2000 "127.0.0.1:$W0 127.0.0.1:$W1" "" --metrics-port "$MC" \
    --slowlog-log-slower-than 0 --slowlog-max-len 3
P=$TH_COORD_PORT
cli() { timeout 30 redis-cli -h 127.0.0.1 -p "$P" "$@"; }
fetch() {  # fetch URL: body on stdout; exit status 1 unless HTTP 200
    timeout 20 python3 -c 'import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=10)
except urllib.error.HTTPError as e:
    print("HTTP", e.code); sys.exit(1)
print(r.headers.get("Content-Type"), file=sys.stderr)
sys.stdout.write(r.read().decode())' "$1"
}
want_grep() {  # want_grep NAME PATTERN TEXT
    printf '%s\n' "$3" | grep -Eq -- "$2" || th_fail "$1: no match for /$2/ in: $(printf '%s' "$3" | head -c 1500)"
    th_log "ok: $1"
}
i=0
until [ "$(cli SIMHASH.ADD 99 ready 2>&1)" = 1 ]; do
    i=$((i + 1)); [ $i -lt 200 ] || th_fail "coordinator never took an ADD"; sleep 0.05
done
for i in 1 2 3 4 5 6 7; do cli SIMHASH.QUERY 99 >/dev/null; done
cli SIMHASH.QUERY 99 DISTANCE 9 >/dev/null       # failed: distance above the corpus's
cli SIMHASH.QUERY >/dev/null                     # rejected: arity

m=$(fetch "http://127.0.0.1:$MC/metrics") || th_fail "coordinator /metrics: $m"
printf '%s\n' "$m" >"$TH_DIR/coord.metrics"
promtool check metrics <"$TH_DIR/coord.metrics" >"$TH_DIR/promtool.out" 2>&1 ||
    th_fail "promtool check metrics (coordinator): $(cat "$TH_DIR/promtool.out")"
th_log "ok: promtool accepts the coordinator's metrics"
want_grep "queries counted" '^simhash_commands_total\{command="simhash\.query"\} 8$' "$m"
want_grep "failed query counted" '^simhash_command_errors_total\{command="simhash\.query",class="failed"\} 1$' "$m"
want_grep "rejected query counted" '^simhash_command_errors_total\{command="simhash\.query",class="rejected"\} 1$' "$m"
want_grep "latency histogram count" '^simhash_command_duration_seconds_count\{command="simhash\.query"\} 8$' "$m"
want_grep "latency histogram +Inf" '^simhash_command_duration_seconds_bucket\{command="simhash\.query",le="\+Inf"\} 8$' "$m"
want_grep "worker health" "^simhash_worker_up\\{worker=\"127\\.0\\.0\\.1:$W0\"\\} 1$" "$m"
q=$(cli SIMHASH.INFO | tr -d '\r' | sed -n 's/^queries://p')
[ -n "$q" ] || th_fail "SIMHASH.INFO has no queries counter"
want_grep "worker connects" "^simhash_worker_connects_total\\{worker=\"127\\.0\\.0\\.1:$W0\"\\} [1-9]" "$m"
want_grep "coordinator counters = SIMHASH.INFO's" "^simhash_coordinator_queries_total $q\$" "$m"
want_grep "build info" '^simhash_build_info\{version="[^"]+",program="simhash-coordinator"\} 1$' "$m"
w=$(fetch "http://127.0.0.1:$M0/metrics") || th_fail "worker /metrics: $w"
printf '%s\n' "$w" | promtool check metrics >"$TH_DIR/promtool.out" 2>&1 ||
    th_fail "promtool check metrics (worker): $(cat "$TH_DIR/promtool.out")"
th_log "ok: promtool accepts the worker's metrics"
want_grep "worker: Redis round trips" '^simhash_redis_round_trip_seconds_count [1-9][0-9]*$' "$w"
want_grep "worker: SHARD.QUERY latency" '^simhash_command_duration_seconds_count\{command="shard\.query"\} [1-9]' "$w"
want_grep "worker: redis up" '^simhash_redis_up 1$' "$w"
nf=$(fetch "http://127.0.0.1:$MC/nothing")
want_grep "other paths: 404" '^HTTP 404' "$nf"

# ---- SLOWLOG (slower-than 0: every request; max-len 3) ----
want_grep "SLOWLOG LEN bounded by slowlog-max-len" '^3$' "$(cli SLOWLOG LEN)"
big=$(head -c 300 /dev/zero | tr '\0' x)
cli SIMHASH.ADD 12345 "$big" >/dev/null
sl=$(cli SLOWLOG GET 1)
want_grep "SLOWLOG GET: the newest request" '^SIMHASH\.ADD$' "$sl"
want_grep "SLOWLOG GET: long argument cut as Redis cuts it" "^x{128}\\.\\.\\. \\(172 more bytes\\)$" "$sl"
want_grep "SLOWLOG GET: client address" '^127\.0\.0\.1:[0-9]+$' "$sl"
# a request of 40 arguments: 31 shown, then how many more; the entries reuse their
# buffers as the ring goes round, so the older entry's arguments must not change
cli PING $(seq 1 39) >/dev/null
sl=$(cli SLOWLOG GET 3)
want_grep "SLOWLOG GET: arguments past 31 counted" '^\.\.\. \(9 more arguments\)$' "$sl"
want_grep "SLOWLOG GET: the 31st argument kept" '^30$' "$sl"
want_grep "SLOWLOG GET: the entry before, intact" "^x{128}\\.\\.\\. \\(172 more bytes\\)$" "$sl"
for i in 1 2 3 4; do cli SIMHASH.ADD 12345 "$big" >/dev/null; done
want_grep "SLOWLOG GET: an entry reused for a long argument" "^x{128}\\.\\.\\. \\(172 more bytes\\)$" "$(cli SLOWLOG GET 1)"
[ "$(cli SLOWLOG GET | grep -c '^SIMHASH\.\|^SLOWLOG$')" -eq 3 ] || th_fail "SLOWLOG GET lists $(cli SLOWLOG GET) (want 3 entries)"
want_grep "SLOWLOG RESET" '^OK$' "$(cli SLOWLOG RESET)"
want_grep "SLOWLOG LEN after RESET (the RESET itself is logged after it ran)" '^[01]$' "$(cli SLOWLOG LEN)"
want_grep "SLOWLOG GET -2 refused" 'count should be greater than or equal to -1' "$(cli SLOWLOG GET -2)"
# the worker has the default threshold (10 ms): whatever it logged took at least that
# long (on a busy machine a registry read may; fast requests are not logged)
under=$(timeout 30 python3 -c 'import sys; sys.path.insert(0, sys.argv[1])
from resp_client import C
print(sum(1 for e in C(int(sys.argv[2])).call("SLOWLOG", "GET", "-1") if e[2] < 10000))' \
    "$TH_SRC/tests/tools" "$W1")
want_grep "worker SLOWLOG: nothing under 10 ms" '^0$' "$under"
# the scrape configuration in docs/operations.md is valid (the rules of deploy/prometheus:
# test_prometheus_rules.sh)
python3 - "$TH_SRC/docs/operations.md" "$TH_DIR" <<'PYEOF'
import re, sys
s = open(sys.argv[1]).read()
for name, head in (("prom.yml", "A scrape configuration"),):
    m = re.search(re.escape(head) + r".*?```yaml\n(.*?)```", s, re.S)
    if not m:
        sys.exit("docs/operations.md: no %s block" % head)
    # the secret file the scrape config names must exist for promtool: one of ours
    text = m.group(1).replace("/etc/prometheus/simhash.secret", sys.argv[2] + "/simhash.secret")
    open(sys.argv[2] + "/" + name, "w").write(text)
open(sys.argv[2] + "/simhash.secret", "w").write("secret\n")
PYEOF
promtool check config "$TH_DIR/prom.yml" >"$TH_DIR/promtool.out" 2>&1 || th_fail "scrape config: $(cat "$TH_DIR/promtool.out")"
th_log "ok: docs/operations.md's scrape config passes promtool (the rules: test_prometheus_rules.sh)"
th_log "all metrics and slowlog checks passed"
