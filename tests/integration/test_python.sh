#!/usr/bin/env bash
# tests/integration/test_python.sh: the Python package (client/python) end to end.
# Installs it with Debian's pip into a temporary directory (`pip install
# --no-build-isolation --target`, offline, warnings as errors), starts a local
# deployment with a password (deploy/simhash-local on free loopback ports in a
# mktemp -d dir), and runs tests/python/test_simhash.py with Debian's /usr/bin/python3
# (SIMHASH_PYTHON overrides it). The deployment is brought down by the trap, by the
# PIDs in its pidfiles.
set -euo pipefail

. "$(dirname "$0")/lib.sh"
th_init python
. "$(dirname "$0")/deploy_lib.sh"
th_need_bins simhash simhash-shard simhash-coordinator

PY=${SIMHASH_PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || th_fail "$PY not found (Debian's python3)"
"$PY" -c 'import setuptools, wheel, pip' 2>/dev/null ||
    th_fail "$PY lacks setuptools, wheel or pip (scripts/install-deps.sh installs them)"

# bring the deployment down (simhash-local stops the PIDs of its pidfiles), then
# lib.sh's cleanup with the script's exit status
py_down() {
    [ -f "$TH_DIR/coordinator.pid" ] || [ -f "$TH_DIR/redis.pid" ] || return 0
    timeout 120 bash "$DL_LOCAL" down --dir "$TH_DIR" >/dev/null 2>&1 || true
}
trap 'rc=$?; py_down; (exit $rc); th_cleanup' EXIT

# ---- Install ----
SITE="$TH_DIR/site"
th_log "pip install --no-build-isolation --target into $SITE"
if ! SIMHASH_PY_WERROR=1 timeout 600 "$PY" -m pip install --no-build-isolation --no-index \
        --disable-pip-version-check --no-cache-dir --target "$SITE" "$TH_SRC/client/python" \
        >"$TH_DIR/pip.log" 2>&1; then
    tail -n 40 "$TH_DIR/pip.log" >&2
    th_fail "pip install of client/python failed"
fi
[ -f "$SITE/simhash/__init__.pyi" ] || th_fail "the stub file was not installed"
PYTHONPATH="$SITE" "$PY" -c 'import simhash, sys; sys.exit(simhash.__file__.startswith(sys.argv[1]) is False)' "$SITE" ||
    th_fail "simhash did not import from $SITE"
PYTHONPATH="$SITE" "$PY" -c 'import simhash; help(simhash)' >"$TH_DIR/help.txt" ||
    th_fail "help(simhash) failed"
for w in Corpus Client find_all fingerprint ClientError; do
    grep -q "$w" "$TH_DIR/help.txt" || th_fail "help(simhash) does not mention $w"
done

# ---- Deployment (single Redis, 2 workers, password) ----
printf 'py-test-%s\n' "$RANDOM$RANDOM" >"$TH_DIR/password"
chmod 600 "$TH_DIR/password"
base=
for try in 1 2 3; do
    base=$(dl_free_base 1 2)
    [ -n "$base" ] || th_fail "no free port range"
    if dl_sl up --port "$((base + 200))" --redis-port "$base" --shard-port "$((base + 100))" \
            --shards 2 --blocks 6 --distance 3 --no-aof --lifetime 900 --coordinators 2 \
            --password-file "$TH_DIR/password" >"$TH_DIR/up.out" 2>&1; then
        break
    fi
    th_log "up failed (try $try): $(tail -n 3 "$TH_DIR/up.out")"
    py_down
    base=
done
[ -n "$base" ] || { cat "$TH_DIR/up.out" >&2; th_fail "simhash-local up"; }
cport=$((base + 200))
th_log "deployment up: coordinator 127.0.0.1:$cport"

# ---- Tests ----
rc=0
# the second coordinator (PORT+1): test_zz_failover kills it by this PID (the child of
# its `timeout` wrapper) and expects its client to go on through the first
cpid2=$(th_child_pid "$(cat "$TH_DIR/coordinator-1.pid")")
[ -n "$cpid2" ] || th_fail "no PID for the second coordinator"
PYTHONPATH="$SITE" SIMHASH_BIN="$TH_BIN" SIMHASH_TEST_PORT="$cport" \
    SIMHASH_TEST_PORT2="$((cport + 1))" SIMHASH_TEST_PID2="$cpid2" \
    SIMHASH_TEST_PASSWORD="$(head -n 1 "$TH_DIR/password")" \
    timeout 900 "$PY" "$TH_SRC/tests/python/test_simhash.py" >"$TH_DIR/unittest.out" 2>&1 || rc=$?
grep -E 'passed, [0-9]+ failed' "$TH_DIR/unittest.out" || true
if [ "$rc" -ne 0 ]; then
    grep -vE ' \.\.\. (ok|skipped.*)$' "$TH_DIR/unittest.out" | tail -n 80 >&2
    th_fail "Python tests failed (exit $rc)"
fi
grep -q ' 0 failed' "$TH_DIR/unittest.out" || th_fail "no summary line"
if grep -q "skipped 'no deployment" "$TH_DIR/unittest.out"; then
    th_fail "the Client tests were skipped"
fi
# the deployment goes down cleanly: none of its processes is left
py_down
for f in "$TH_DIR"/*.pid; do
    [ -f "$f" ] || continue
    pid=$(tr -dc 0-9 <"$f")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && th_fail "$(basename "$f" .pid) (pid $pid) still running after down"
done
th_log "ok"
