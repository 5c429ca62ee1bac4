#!/bin/bash
# bench/write_protocol/run.sh: measures write protocols side by side (README.md):
# for each run and each variant, a fresh empty redis-server on 127.0.0.1 in a temp dir
# (the deployment's listpack limits, no persistence) gets the same N fingerprints
# through wp.py, which prints fp/s, Redis CPU per fingerprint and memory per
# fingerprint; then the medians of the runs and their ratios to the raw baseline.
# Usage: bench/write_protocol/run.sh [N] [RUNS] [VARIANTS...]
#   defaults: N=200000, RUNS=3, VARIANTS="raw today lockz a1 a2 a2j"
# Environment: WP_TIMEOUT seconds per run (default 900).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
N=${1:-200000}
RUNS=${2:-3}
shift $(( $# > 2 ? 2 : $# )) || true
VARIANTS=${*:-raw today lockz a1 a2 a2j}
TIMEOUT=${WP_TIMEOUT:-900}
PY=/usr/bin/python3
[[ $N =~ ^[0-9]+$ && $RUNS =~ ^[0-9]+$ && $RUNS -ge 1 && $RUNS -le 9 ]] ||
    { echo "run.sh: N and RUNS (1-9) must be numbers" >&2; exit 2; }
command -v redis-server >/dev/null || { echo "run.sh: redis-server missing" >&2; exit 2; }
TMP=$(mktemp -d)
PID=
cleanup() {
    if [[ -n $PID ]]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
    rm -rf "$TMP"
}
trap cleanup EXIT

# a free port on 127.0.0.1
free_port() {
    $PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_redis() {
    PORT=$(free_port)
    cat >"$TMP/redis.conf" <<CONF
bind 127.0.0.1
port $PORT
dir $TMP
save ""
appendonly no
zset-max-listpack-entries 2048
hash-max-listpack-entries 2048
hash-max-listpack-value 64
CONF
    redis-server "$TMP/redis.conf" >"$TMP/redis.log" 2>&1 &
    PID=$!
    for _ in $(seq 100); do
        redis-cli -p "$PORT" ping >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "run.sh: redis-server did not answer" >&2; exit 1
}

stop_redis() {
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
}

OUT="$TMP/lines"
: >"$OUT"
for run in $(seq "$RUNS"); do
    for v in $VARIANTS; do
        start_redis
        line=$(timeout "$TIMEOUT" $PY "$HERE/wp.py" "$PORT" "$v" "$N" 1)
        stop_redis
        echo "run=$run $line" | tee -a "$OUT"
    done
done

# medians per variant, ratios to raw's medians (when raw ran), and the median of each
# run's ratio of Redis CPU to raw's in the same run (less exposed to load changing
# between runs on a shared machine)
$PY - "$OUT" <<'PYEOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    d = dict(kv.split("=", 1) for kv in line.split())
    rows.setdefault(d["variant"], {})[d["run"]] = d
keys = ("fp_per_s", "redis_cpu_us_per_fp", "bytes_per_fp")
med = {v: {k: statistics.median(float(r[k]) for r in rs.values()) for k in keys}
       for v, rs in rows.items()}
base, raw = med.get("raw"), rows.get("raw", {})
print("%-7s %8s %12s %7s %11s %12s %15s" % ("variant", "fp/s", "redis us/fp", "B/fp",
                                           "fp/s / raw", "us/fp / raw", "per-run / raw"))
for v, m in med.items():
    r1 = "%.2f" % (m["fp_per_s"] / base["fp_per_s"]) if base else "-"
    r2 = "%.2f" % (m["redis_cpu_us_per_fp"] / base["redis_cpu_us_per_fp"]) if base else "-"
    per = [float(r["redis_cpu_us_per_fp"]) / float(raw[n]["redis_cpu_us_per_fp"])
           for n, r in rows[v].items() if n in raw]
    r3 = "%.2f" % statistics.median(per) if per else "-"
    print("%-7s %8.0f %12.1f %7.1f %11s %12s %15s" % (v, m["fp_per_s"], m["redis_cpu_us_per_fp"],
                                                     m["bytes_per_fp"], r1, r2, r3))
PYEOF
