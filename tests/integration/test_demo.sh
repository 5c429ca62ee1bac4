#!/usr/bin/env bash
# test_demo.sh: deploy/demo.sh runs on other ports beside another deployment. A local
# deployment is brought up at base port B (coordinator B, workers B+100 and B+101, redis
# B+379, metrics at +M); then the demo is started from the same base (SIMHASH_DEMO_PORT)
# with --metrics-offset M and --keep: it must step past the busy ports, find planted
# near-duplicates, and leave its own coordinator and metrics endpoint serving at the
# ports it reports, while the first deployment still answers on its own.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
th_init demo
. "$HERE/deploy_lib.sh"
ok() { th_log "ok: $*"; }
DEMO_RUN=
trap 'rc=$?; [ -n "$DEMO_RUN" ] && timeout 120 bash "$DL_LOCAL" down --dir "$DEMO_RUN" >/dev/null 2>&1
      DL_DIR=$TH_DIR/first dl_down; (exit $rc); th_cleanup' EXIT

# a base B and metrics offset M with every port either deployment may take free
read -r B M < <(python3 -c 'import random, socket
for _ in range(500):
    # the range of deployments (lib.sh, th_free_port): bases below 22000, metrics 10000 up
    b, m = random.randint(20000, 22000), random.randint(10000, 10300)
    ports = [b + i for i in range(4)] + [b + 100 + i for i in range(4)] + [b + 379 + i for i in range(4)]
    ports += [p + m for p in ports]
    free = True
    for q in ports:
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", q))
        except OSError:
            free = False
        s.close()
    if free:
        print(b, m)
        break')
[ -n "${B:-}" ] || th_fail "no free port range"

mkdir -p "$TH_DIR/first"
DL_DIR=$TH_DIR/first dl_sl up --port "$B" --shards 2 --metrics-offset "$M" >"$TH_DIR/first.log" 2>&1 ||
    th_fail "first deployment: $(tail -5 "$TH_DIR/first.log")"
[ "$(redis-cli -p "$B" PING)" = PONG ] || th_fail "first deployment does not answer on $B"
ok "a deployment on $B (metrics +$M)"

# the defaults are unchanged (7000, +2000) and bad values are refused before anything runs
grep -q '^BASE=${SIMHASH_DEMO_PORT:-7000}$' "$TH_SRC/deploy/demo.sh" || th_fail "demo.sh default base port changed"
grep -q '^METRICS_OFFSET=${SIMHASH_DEMO_METRICS_OFFSET:-2000}$' "$TH_SRC/deploy/demo.sh" ||
    th_fail "demo.sh default metrics offset changed"
for bad in "--port 80" "--port 7x" "--metrics-offset 99999"; do
    timeout 30 bash "$TH_SRC/deploy/demo.sh" $bad >"$TH_DIR/bad.out" 2>&1
    rc=$?
    [ $rc -eq 2 ] || th_fail "demo.sh $bad: exit $rc, wanted 2: $(tail -3 "$TH_DIR/bad.out")"
done
ok "demo.sh refuses a bad --port or --metrics-offset with exit 2"

# (its work directory inside ours, so the cleanup removes what --keep leaves)
TMPDIR=$TH_DIR SIMHASH_DEMO_PORT=$B timeout 300 bash "$TH_SRC/deploy/demo.sh" --docs 40 --metrics-offset "$M" --keep \
    >"$TH_DIR/demo.log" 2>&1 || th_fail "demo.sh beside the first deployment: $(tail -20 "$TH_DIR/demo.log")"
DEMO_RUN=$(sed -n 's/^Stop it with: bash .* down --dir //p' "$TH_DIR/demo.log")
P=$(sed -n 's/^Deployment kept running in .* (coordinator 127\.0\.0\.1:\([0-9]*\))\.$/\1/p' "$TH_DIR/demo.log")
[ -n "$DEMO_RUN" ] && [ -n "$P" ] || th_fail "demo.sh did not report its deployment: $(tail -5 "$TH_DIR/demo.log")"
[ "$P" -gt "$B" ] && [ "$P" -lt $((B + 100)) ] || th_fail "demo coordinator on $P, outside $((B + 1))..$((B + 99))"
line=$(grep '^found the source document of ' "$TH_DIR/demo.log")
[[ $line =~ of\ ([0-9]+)\ of\ ([0-9]+)\ planted ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] ||
    th_fail "demo found nothing: $line"
ok "demo.sh ran beside it with coordinator $P: $line"

[ "$(redis-cli -p "$P" PING)" = PONG ] || th_fail "demo coordinator does not answer on $P"
[ "$(redis-cli -p "$B" PING)" = PONG ] || th_fail "first deployment stopped answering on $B"
n1=$(redis-cli -p "$B" SIMHASH.INFO | tr -d '\r' | sed -n 's/^fingerprints:\([0-9]*\)$/\1/p')
metrics=$(python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read().decode())' \
    $((P + M))) || th_fail "no metrics endpoint at $((P + M))"
printf '%s\n' "$metrics" | grep -q '^simhash_' || th_fail "metrics at $((P + M)) hold no simhash_ series"
ok "demo metrics at $((P + M)); the first deployment still serves on $B (fingerprints: ${n1:-?})"
timeout 120 bash "$DL_LOCAL" down --dir "$DEMO_RUN" >/dev/null 2>&1 || th_fail "demo deployment down"
DEMO_RUN=
th_log "demo.sh runs on other ports beside another deployment"
