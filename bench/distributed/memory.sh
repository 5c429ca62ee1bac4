#!/usr/bin/env bash
# bench/distributed/memory.sh: Redis memory per fingerprint, everything counted, of a
# default deploy/simhash-local deployment (one Redis with AOF, two workers, blocks 6
# distance 3) loaded with `simhash load`: BENCH_N random fingerprints (default
# 1000000) with one 30-byte document id each, in data layout 4 (the one format).
# Prints
#   bench=memory layout=L metric=used_memory|bytes_per_fingerprint|load_per_sec value=...
# bytes_per_fingerprint = Redis used_memory / N (the empty Redis, the counters, the
# lock hashes, allocator rounding: everything), and SIMHASH.INFO's own figure.
# BENCH_LISTPACK=E sets the Redis node's zset- and hash-max-listpack-entries to E right
# after `up` (CONFIG SET) and drops the workers' Redis connections (CLIENT KILL), so
# that they read the node's limits again (buckets split below them); then also
# printed: the keys per OBJECT ENCODING after the load
# (metric=keys_<encoding>), where a skiplist or hashtable key costs several times a
# listpack's memory. Unset: the deployment's limits (2048).
# BENCH_SETTLE=S: after the load, wait (at most S seconds, polling every 30 s) until
# the node holds no key with an expiry (the tombstones of split buckets, which expire
# after the corpus's tombstone lifetime; nothing else of a corpus expires), then
# print the memory again (metric=used_memory_settled, bytes_per_fingerprint_settled,
# settle_seconds, expiring_left): the memory of a corpus that has stopped growing.
# Everything runs on 127.0.0.1 in a mktemp -d directory; simhash-local stops its
# processes by PID (down) at exit.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=${SIMHASH_BIN:-$SRC/build/bin}
N=${BENCH_N:-1000000}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/simhash-bench-memory.XXXXXX") || exit 1
DIRS=()
cleanup() {
    local d
    for d in "${DIRS[@]}"; do
        SIMHASH_BIN=$BIN timeout 60 "$SRC/deploy/simhash-local" down --dir "$d" >/dev/null 2>&1
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

python3 - "$N" >"$WORK/load.txt" <<'PY'
import random, sys
r = random.Random(42)
for i in range(int(sys.argv[1])):
    print(r.getrandbits(64), "https://example.org/d/%08d" % i)   # 30-byte ids
PY
for L in 4; do
    d="$WORK/l$L"
    DIRS+=("$d")
    port=$(free_port)
    # the default deployment but for ports and the layout
    args=(--dir "$d" --port "$port" --redis-port "$(free_port)" --shard-port "$(free_port)"
          --metrics-offset 0 --fresh --lifetime 7200)
    args+=(--layout "$L")
    SIMHASH_BIN=$BIN timeout 120 "$SRC/deploy/simhash-local" up "${args[@]}" >"$WORK/up-$L.out" 2>&1 ||
        { cat "$WORK/up-$L.out"; echo "simhash-local up failed" >&2; exit 1; }
    rport=$(sed -n 's/^port //p' "$d/redis.conf")
    if [ -n "${BENCH_LISTPACK:-}" ]; then
        for k in zset-max-listpack-entries hash-max-listpack-entries; do
            timeout 10 redis-cli -p "$rport" config set "$k" "$BENCH_LISTPACK" >/dev/null || exit 1
        done
        timeout 10 redis-cli -p "$rport" client kill type normal >/dev/null || exit 1
        for _ in $(seq 100); do     # every worker has connected again (a query reaches all)
            timeout 5 redis-cli -p "$port" simhash.query 0 2>&1 | grep -q ERR || break
            sleep 0.2
        done
        if [ "$L" = 3 ]; then   # every worker follows the node's limit before the load
            for sp in $(sed -n "s/^port //p" "$d"/shard-*.conf); do
                for _ in $(seq 100); do
                    lim=$(timeout 5 redis-cli -p "$sp" shard.info 2>/dev/null | tr -d '\r' | sed -n 's/^split_limit://p')
                    [ "$lim" = "$BENCH_LISTPACK" ] && break
                    sleep 0.2
                done
                [ "$lim" = "$BENCH_LISTPACK" ] || { echo "worker on $sp: split_limit '$lim'" >&2; exit 1; }
            done
        fi
    fi
    t0=$(date +%s.%N)
    timeout 3600 "$BIN/simhash" load --port "$port" "$WORK/load.txt" >&2 || exit 1
    t1=$(date +%s.%N)
    used=$(timeout 10 redis-cli -p "$rport" info memory | tr -d '\r' | sed -n 's/^used_memory://p')
    info=$(timeout 10 redis-cli -p "$port" simhash.info | tr -d '\r')
    layout=$(echo "$info" | sed -n 's/^layout://p')
    [ "$layout" = "$L" ] || { echo "deployment has layout '$layout', want $L" >&2; exit 1; }
    echo "bench=memory layout=$L metric=used_memory value=$used"
    echo "bench=memory layout=$L metric=bytes_per_fingerprint value=$(python3 -c "print(round($used / $N, 1))")"
    echo "bench=memory layout=$L metric=info_bytes_per_fingerprint value=$(echo "$info" | sed -n 's/^bytes_per_fingerprint://p')"
    if [ -n "${BENCH_LISTPACK:-}" ]; then
        timeout 600 redis-cli -p "$rport" --scan | sed 's/^/OBJECT ENCODING /' |
            timeout 600 redis-cli -p "$rport" | sort | uniq -c |
            while read -r n enc; do echo "bench=memory layout=$L metric=keys_$enc value=$n"; done
    fi
    if [ -n "${BENCH_SETTLE:-}" ]; then
        s0=$(date +%s)
        while :; do
            left=$(timeout 10 redis-cli -p "$rport" info keyspace | tr -d '\r' |
                sed -n 's/^db0:.*expires=\([0-9]*\).*/\1/p')
            left=${left:-0}
            [ "$left" = 0 ] || [ $(($(date +%s) - s0)) -ge "$BENCH_SETTLE" ] && break
            sleep 30
        done
        used=$(timeout 10 redis-cli -p "$rport" info memory | tr -d '\r' | sed -n 's/^used_memory://p')
        echo "bench=memory layout=$L metric=settle_seconds value=$(($(date +%s) - s0))"
        echo "bench=memory layout=$L metric=expiring_left value=$left"
        echo "bench=memory layout=$L metric=used_memory_settled value=$used"
        echo "bench=memory layout=$L metric=bytes_per_fingerprint_settled value=$(python3 -c "print(round($used / $N, 1))")"
    fi
    echo "bench=memory layout=$L metric=load_per_sec value=$(python3 -c "print(round($N / ($t1 - $t0)))")"
    SIMHASH_BIN=$BIN timeout 60 "$SRC/deploy/simhash-local" down --dir "$d" >/dev/null 2>&1
done
