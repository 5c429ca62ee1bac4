#!/usr/bin/env bash
# test_prometheus_rules.sh: deploy/prometheus's rules: `promtool check rules` accepts
# them; `promtool test rules` passes tests/prometheus/simhash-rules.test.yml, which holds
# a firing case for every alert (checked here by name); a rule file with one alert's
# `for:` removed fails those tests (they can fail); and every simhash_* series the rules
# read is served by a real coordinator or worker (a deployment on loopback).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
th_init prometheus_rules
th_need_bins simhash-shard simhash-coordinator
command -v promtool >/dev/null || th_fail "promtool missing (scripts/install-deps.sh installs prometheus)"
ok() { th_log "ok: $*"; }
RULES=$TH_SRC/deploy/prometheus
TESTS=$TH_SRC/tests/prometheus/simhash-rules.test.yml

out=$(timeout 60 promtool check rules "$RULES/simhash-recording.yml" "$RULES/simhash-alerts.yml" 2>&1) ||
    th_fail "promtool check rules: $out"
ok "promtool check rules: $(printf '%s\n' "$out" | grep -c SUCCESS) files, $(printf '%s' "$out" | grep -o '[0-9]* rules' | tr '\n' ' ')"

out=$(timeout 300 promtool test rules "$TESTS" 2>&1) || th_fail "promtool test rules: $out"
ok "promtool test rules: $(printf '%s\n' "$out" | grep -E 'SUCCESS|FAILED' | tr -d ' ')"

# every alert has a test in which it fires
missing=$(python3 - "$RULES/simhash-alerts.yml" "$TESTS" <<'EOF'
import sys, yaml
alerts = [r["alert"] for g in yaml.safe_load(open(sys.argv[1]))["groups"] for r in g["rules"] if "alert" in r]
fired = {t["alertname"] for c in yaml.safe_load(open(sys.argv[2]))["tests"]
         for t in c.get("alert_rule_test", []) if t.get("exp_alerts")}
silent = {t["alertname"] for c in yaml.safe_load(open(sys.argv[2]))["tests"]
          for t in c.get("alert_rule_test", []) if not t.get("exp_alerts")}
print(len(alerts), " ".join(a for a in alerts if a not in fired or a not in silent))
EOF
) || th_fail "reading the rules: $missing"
read -r nalerts gaps <<<"$missing"
[ "$nalerts" -ge 11 ] && [ -z "$gaps" ] || th_fail "alerts without a firing and a silent test: ${gaps:-?} ($nalerts alerts)"
ok "each of the $nalerts alerts has a test where it fires and one where it stays silent"

# the tests can fail: SimhashWorkerDown without its `for: 1m` fires too early
mkdir -p "$TH_DIR/mut/deploy/prometheus" "$TH_DIR/mut/tests/prometheus"
cp "$RULES/simhash-recording.yml" "$TH_DIR/mut/deploy/prometheus/"
python3 - "$RULES/simhash-alerts.yml" "$TH_DIR/mut/deploy/prometheus/simhash-alerts.yml" <<'EOF'
import sys
s = open(sys.argv[1]).read()
old = "expr: simhash_worker_up == 0\n        for: 1m\n"
assert old in s
open(sys.argv[2], "w").write(s.replace(old, "expr: simhash_worker_up == 0\n"))
EOF
cp "$TESTS" "$TH_DIR/mut/tests/prometheus/"
if out=$(timeout 300 promtool test rules "$TH_DIR/mut/tests/prometheus/simhash-rules.test.yml" 2>&1); then
    th_fail "the tests pass with SimhashWorkerDown's for: removed"
fi
printf '%s\n' "$out" | grep -q 'alertname: SimhashWorkerDown, time: 2m' ||
    th_fail "the mutated rules failed otherwise: $(printf '%s' "$out" | head -20)"
ok "with SimhashWorkerDown's for: removed the tests fail at 2m, as they must"

# the series the rules read exist: a coordinator and a worker's /metrics
th_start_redis redis
MW=$(th_free_port)
th_start_shard w0 "$TH_REDIS_PORT" 0-255 6 3 "" --metrics-port "$MW"
MC=$(th_free_port)
th_start_coord coord 6 3 2000 "127.0.0.1:$TH_SHARD_PORT" "" --metrics-port "$MC"
i=0
until [ "$(timeout 10 redis-cli -p "$TH_COORD_PORT" SIMHASH.ADD 7 a 2>&1)" = 1 ]; do
    i=$((i + 1)); [ $i -lt 200 ] || th_fail "coordinator never took an ADD"; sleep 0.05
done
timeout 10 redis-cli -p "$TH_COORD_PORT" SIMHASH.QUERY 7 >/dev/null
sleep 1.2      # the coordinator reads the workers' counts once a second
served=$(for m in "$MC" "$MW"; do
    timeout 20 python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read().decode())' "$m" ||
        echo "FETCH-FAILED $m"
done | grep -v '^#' | sed -E 's/[{ ].*//' | sort -u)
printf '%s\n' "$served" | grep -q FETCH-FAILED && th_fail "metrics fetch: $served"
read_by_rules=$(cat "$RULES"/*.yml | grep -v '^ *#' | grep -oE '\bsimhash_[a-z_]+' | sort -u)
for s in $read_by_rules; do
    printf '%s\n' "$served" | grep -qx -- "$s" || th_fail "the rules read $s, which no coordinator or worker serves"
done
ok "the $(echo "$read_by_rules" | wc -l) simhash_* series the rules read are all served"
th_log "Prometheus rules checked, tested, and read real series"
