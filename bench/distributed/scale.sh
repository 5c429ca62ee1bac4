#!/usr/bin/env bash
# bench/distributed/scale.sh: one deployment grown from empty to large corpora with
# `simhash load`, measured at checkpoints. The deployment is deploy/simhash-local's
# default (one Redis with AOF everysec, two workers, one coordinator, blocks 6
# distance 3; data layout 4, table 0's ids in its members);
# with BENCH_CLUSTER=M it is `simhash-local up --cluster --masters M` instead
# (a Redis Cluster of M masters with AOF everysec, no replicas, one worker beside every
# node, one coordinator). The Redis nodes are a list (one node without BENCH_CLUSTER):
# what is measured on Redis is summed over them (memory, CPU, calls, keys), and the
# largest bucket is the largest of any node.
# For each checkpoint N of BENCH_POINTS (default "1000000 10000000 30000000") the
# fingerprints [previous N, N) are written to a file (seeded: fingerprint i is
# bench-dist_load's splitmix64(seed * 2^32 + i), id "doc-" + 26 digits = 30 bytes) and
# loaded with `simhash load`, then measured:
#   load        segment and cumulative seconds and fp/s, pairs refused, pairs not new (sent
#               again after a late answer); Redis CPU (main process), ZADD, ZCARD and
#               EVALSHA calls per fingerprint of the segment, summed over the nodes (in a
#               cluster also the largest share of that CPU one node took); the segment's
#               last BENCH_TAIL pairs (50000) are loaded on their own: their rate is the
#               ingest rate at about N (tail_load_fp_per_s), with Redis's CPU and the
#               workers' and coordinator's together per fingerprint (tail_*_cpu_us_per_fp)
#   memory      Redis used_memory / N (everything; in a cluster the sum over the masters,
#               and each node's as used_memory_node_I), the live tombstones (keys with a
#               TTL), and the same again after export and fsck (*_end, with the seconds
#               since the load and the corpus's tombstone_seconds), SIMHASH.INFO's
#               bytes_per_fingerprint, the AOF's size on disk, the AOF rewrites so far
#   buckets     the workers' bucket_splits; from a SCAN of every key of every node: keys
#               per kind, bucket count, the largest bucket (ZCARD), tombstones, keys per
#               OBJECT ENCODING (a skiplist or hashtable bucket would cost memory and time)
#   query       (once no AOF rewrite runs: the wait is query_wait_aof_rewrite_seconds)
#               SIMHASH.QUERY of BENCH_QUERIES corpus fingerprints, pipelined (bench-dist_load
#               sys-query, depth 32): queries/s, Redis's CPU and the workers' and
#               coordinator's together per query (query_*_cpu_us); 1,000 must come back at
#               distance 0 (bench-dist_load check); p50/p99 at BENCH_RATE queries/s for
#               BENCH_PACED_SECONDS (bench-dist_load paced, open loop)
#   raw         the same work straight to Redis at this size (bench-dist_load --dirs: the
#               live buckets of the directories): raw-query (pipelined, depth 32),
#               paced-raw p50/p99 at BENCH_RATE, raw-ingest of BENCH_RAW_N fingerprints
#               no one loads (then raw-remove takes them out again, before fsck checks
#               the corpus); query_vs_raw and ingest_vs_raw are the system's rates over
#               these (the targets: at least 0.9), each with Redis's CPU per operation;
#               BENCH_ROUNDS=R then adds R rounds of both query runs, alternating
#               (rounds_*: each round's rates and ratio, and their medians);
#               *_vs_raw_redis_cpu_bound is raw's Redis CPU per operation over the
#               system's: the ratio the system can reach where one Redis core bounds
#               both (the system's own processes then cost nothing). Not in a
#               cluster: bench-dist_load's raw modes talk to one Redis node and do not
#               follow the slot map, so with BENCH_CLUSTER none of these is printed
#   export      `simhash export` of the whole corpus to a temporary file (its lines counted,
#               then deleted)
#   fsck        `simhash fsck` against the Redis node (a cluster: `--cluster`, every master);
#               with BENCH_FSCK_MAX only at checkpoints up to that size (fsck_skipped 1
#               above it: a 30M fsck takes an hour here)
#   restart     every Redis node stopped by its PID (TERM: it flushes the AOF), all at
#               once, and started again on its AOF as simhash-local starts it: seconds
#               until every node answers PING, in a cluster until every node says
#               cluster_state:ok, and until a SIMHASH.QUERY through the coordinator finds
#               fingerprint 0
# Prints `bench=scale n=N metric=M value=V` lines on stdout (progress on stderr); each
# step is bounded by `timeout`. Environment: SIMHASH_BIN (default build/bin), BENCH_POINTS,
# BENCH_CLUSTER (masters of a Redis Cluster; empty: one Redis),
# BENCH_SEED (20),
# BENCH_QUERIES (100000), BENCH_RATE (1000), BENCH_PACED_SECONDS (10),
# BENCH_LOAD_TIMEOUT (seconds per segment, 14400), BENCH_TAIL, BENCH_RAW_N, BENCH_FSCK_MAX, BENCH_ROUNDS,
# BENCH_KEEP (a
# directory: the logs and configs of the deployment are copied there at exit).
# Everything runs on 127.0.0.1 in a mktemp -d directory; simhash-local stops its
# processes by PID (down) at exit, Ctrl-C included (the steps run under `timeout
# --foreground`, so a Ctrl-C reaches them and the script goes on to its exit trap).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=${SIMHASH_BIN:-$SRC/build/bin}
POINTS=${BENCH_POINTS:-1000000 10000000 30000000}
CLUSTER=${BENCH_CLUSTER:-}
SEED=${BENCH_SEED:-20}
QUERIES=${BENCH_QUERIES:-100000}
RATE=${BENCH_RATE:-1000}
PACED_SECS=${BENCH_PACED_SECONDS:-10}
LOAD_SECS=${BENCH_LOAD_TIMEOUT:-14400}
TAIL=${BENCH_TAIL:-50000}
RAW_N=${BENCH_RAW_N:-50000}
LAYOUT=4
FSCK_MAX=${BENCH_FSCK_MAX:-}
ROUNDS=${BENCH_ROUNDS:-0}
RAW_OFFSET=4000000000
LIFETIME=86400
for b in simhash simhash-shard simhash-coordinator bench-dist_load; do
    [ -x "$BIN/$b" ] || { echo "scale.sh: $BIN/$b is missing (build first)" >&2; exit 1; }
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/simhash-bench-scale.XXXXXX") || exit 1
D="$WORK/deploy"
cleanup() {
    SIMHASH_BIN=$BIN timeout --foreground 120 "$SRC/deploy/simhash-local" down --dir "$D" >/dev/null 2>&1
    if [ -n "${BENCH_KEEP:-}" ]; then
        mkdir -p "$BENCH_KEEP" && cp "$D"/*.log "$D"/*.conf "$WORK"/*.err "$BENCH_KEEP"/ 2>/dev/null
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "scale.sh: $(date -u +%T) $*" >&2; }
die() { log "$*"; exit 1; }
now() { date +%s.%N; }
secs() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2))" "$1" "$2"; }
ratio() { python3 -c "import sys; a, b = sys.argv[1:3]; print(round(float(a) / float(b), 3) if a and b and float(b) else 'nan')" "$1" "$2"; }
div() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(round(a / b, 1) if b else 'nan')" "$1" "$2"; }
free_port() { python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
N=0
emit() { echo "bench=scale n=$N metric=$1 value=$2"; }
ncli() { local p=$1; shift; timeout --foreground 60 redis-cli -p "$p" "$@" | tr -d '\r'; }
ccli() { ncli "$cport" "$@"; }
field() { sed -n "s/^$1://p"; }
# The Redis nodes: names (their pidfile, config and log in $D are NAME.pid, NAME.conf,
# NAME.log, their data in $D/NAME) and ports, in the same order; set after `up`
rnames=()
rports=()
# node_sum SECTION FIELD: FIELD of INFO SECTION summed over the nodes
node_sum() {
    local p s=0
    for p in "${rports[@]}"; do s=$(python3 -c "print($s + $(ncli "$p" info "$1" | field "$2"))"); done
    echo "$s"
}

# node_expires: keys with a TTL over the nodes (INFO keyspace's expires=: the live
# tombstones; nothing else of a corpus expires)
node_expires() {
    local p s=0 e
    for p in "${rports[@]}"; do
        e=$(ncli "$p" info keyspace | tr -d '\r' | sed -n 's/^db0:.*expires=\([0-9]*\).*/\1/p')
        s=$((s + ${e:-0}))
    done
    echo "$s"
}

# gen LO HI FILE: fingerprints [LO, HI) with their ids, as bench-dist_load numbers them
gen() {
    timeout --foreground 3600 python3 - "$SEED" "$1" "$2" >"$3" <<'PY' || die "cannot write the input"
import sys
seed, lo, hi = (int(a) for a in sys.argv[1:4])
M = (1 << 64) - 1
base = seed << 32
out = sys.stdout.write
buf = []
for i in range(lo, hi):
    x = (base + i + 0x9e3779b97f4a7c15) & M
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M
    buf.append("%d doc-%026d\n" % (x ^ (x >> 31), i))
    if len(buf) == 65536:
        out("".join(buf))
        buf = []
out("".join(buf))
PY
}

# keyscan PORT: every key of the Redis node on PORT, pipelined: keys per kind (the text
# before the first ':'), per OBJECT ENCODING, the bucket count and the largest bucket
# (ZCARD of s:)
keyscan() {
    timeout --foreground 1800 python3 - "$1" "$SRC/tests/tools" <<'PY'
import collections, sys
sys.path.insert(0, sys.argv[2])
from simhash_e2e import Conn     # the tests' RESP client (stdlib only)
c = Conn(int(sys.argv[1]), timeout=600.0)
kinds, encs = collections.Counter(), collections.Counter()
buckets = largest = tombstones = 0
cursor = b"0"
while True:
    cursor, keys = c.command("SCAN", cursor, "COUNT", 2000)
    encodings = c.pipeline([("OBJECT", "ENCODING", k) for k in keys], batch=2000)
    bs = [k for k in keys if k.startswith(b"s:")]
    for k, enc in zip(keys, encodings):
        kind = k.split(b":", 1)[0].decode()
        kinds[kind] += 1
        encs["%s_%s" % (kind, enc.decode() if isinstance(enc, bytes) else "none")] += 1
    for n in c.pipeline([("ZCARD", k) for k in bs], batch=2000):
        if isinstance(n, int):
            buckets += 1
            largest = max(largest, n)
        else:           # an error: a tombstone (a string under a split bucket's old name)
            tombstones += 1
    if cursor == b"0":
        break
print("keys", sum(kinds.values()))
for k, v in sorted(kinds.items()):
    print("keys_" + k, v)
for k, v in sorted(encs.items()):
    print("encoding_" + k, v)
print("buckets", buckets)
print("largest_bucket", largest)
print("tombstones", tombstones)
PY
}
# keyscan_all: keyscan of every node, the counts summed, the largest bucket the largest
keyscan_all() {
    local p
    : >"$WORK/scan-nodes.out"
    for p in "${rports[@]}"; do keyscan "$p" >>"$WORK/scan-nodes.out" || return 1; done
    awk '$1 == "largest_bucket" { if ($2 > v[$1]) v[$1] = $2 } $1 != "largest_bucket" { v[$1] += $2 }
             !($1 in seen) { seen[$1] = 1; order[++n] = $1 }
             END { for (i = 1; i <= n; i++) printf "%s %.0f\n", order[i], v[order[i]] }' "$WORK/scan-nodes.out"
}

# wait_until WHAT CMD..: CMD again every 0.1 s until it succeeds; dies after 600 s
wait_until() {
    local what=$1 i=0
    shift
    until "$@"; do
        [ $i -lt 6000 ] || die "$what: not within 600 s of the restart"
        sleep 0.1
        i=$((i + 1))
    done
}
# all_nodes TEST: TEST NAME PORT succeeds for every Redis node
all_nodes() {
    local k
    for k in "${!rnames[@]}"; do "$1" "${rnames[$k]}" "${rports[$k]}" || return 1; done
}
node_pongs() {
    kill -0 "$(cat "$D/$1.pid")" 2>/dev/null || die "$1 exited at restart: $(tail -n 5 "$D/$1.log")"
    [ "$(timeout --foreground 5 redis-cli -p "$2" ping 2>/dev/null | tr -d '\r')" = PONG ]
}
node_cluster_ok() {
    [ "$(timeout --foreground 5 redis-cli -p "$2" cluster info 2>/dev/null | tr -d '\r' | field cluster_state)" = ok ]
}
node_stopped() { ! kill -0 "$(cat "$D/$1.pid")" 2>/dev/null; }
# finds_fp0: a SIMHASH.QUERY through the coordinator finds fingerprint 0
finds_fp0() {
    case "$(timeout --foreground 5 redis-cli -p "$cport" simhash.query "$fp0" distance 0 2>/dev/null | tr -d '\r')" in
        *"$fp0"*) return 0 ;;
    esac
    return 1
}

# restart: every Redis node stopped by its PID, all at once (a power cut as an operator
# sees it, but with the AOF flushed), and started again on its AOF as simhash-local
# starts it (same config, pidfile and log, so `down` stops it)
restart() {
    local name pid t0 t1 t2
    t0=$(now)
    for name in "${rnames[@]}"; do
        pid=$(tr -dc 0-9 <"$D/$name.pid")
        [ -n "$pid" ] || die "no Redis pid in $D/$name.pid"
        kill -TERM "$pid" 2>/dev/null || die "cannot stop $name (pid $pid)"
    done
    wait_until "the Redis nodes did not stop" all_nodes node_stopped
    emit restart_stop_seconds "$(secs "$t0" "$(now)")"
    t0=$(now)
    for name in "${rnames[@]}"; do
        echo "---- $(date '+%F %T') start (scale.sh restart): redis-server $D/$name.conf" >>"$D/$name.log"
        setsid timeout --signal=TERM --kill-after=5 "$LIFETIME" redis-server "$D/$name.conf" \
            </dev/null >>"$D/$name.log" 2>&1 &
        echo $! >"$D/$name.pid"
    done
    wait_until "a Redis node did not answer PING" all_nodes node_pongs
    t1=$(now)
    emit restart_ping_seconds "$(secs "$t0" "$t1")"
    if [ -n "$CLUSTER" ]; then
        wait_until "a node did not reach cluster_state:ok" all_nodes node_cluster_ok
        emit restart_cluster_ok_seconds "$(secs "$t0" "$(now)")"
    fi
    fp0=$(python3 -c "
M = (1 << 64) - 1
x = (($SEED << 32) + 0x9e3779b97f4a7c15) & M
x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M
x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M
print(x ^ (x >> 31))")
    wait_until "no SIMHASH.QUERY answer through the coordinator found fingerprint 0" finds_fp0
    t2=$(now)
    emit restart_query_seconds "$(secs "$t0" "$t2")"
    emit restart_fingerprints "$(ccli simhash.info | field fingerprints)"
}

# redis_work: per Redis node one line: its CPU seconds (user + system) and its ZADD,
# ZCARD and EVALSHA calls so far
redis_work() {
    local p
    for p in "${rports[@]}"; do
        python3 - "$(ncli "$p" info cpu)" "$(ncli "$p" info commandstats)" <<'PY'
import re, sys
cpu = dict(l.split(":", 1) for l in sys.argv[1].splitlines() if ":" in l)
calls = dict(re.findall(r"^cmdstat_(\w+):calls=(\d+)", sys.argv[2], re.M))
print(float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
      *(calls.get(c, "0") for c in ("zadd", "zcard", "evalsha")))
PY
    done
}
# redis_cpu: the Redis nodes' CPU seconds so far (main processes, user + system, summed)
redis_cpu() { redis_work | awk '{s += $1} END {printf "%.3f\n", s}'; }
# daemons_cpu: CPU seconds so far of the deployment's workers and coordinator (/proc of
# each pidfile's process and its children: simhash-local runs each under `timeout`)
daemons_cpu() {
    local f p
    for f in "$D"/shard-*.pid "$D"/coordinator*.pid; do
        [ -f "$f" ] || continue
        p=$(tr -dc 0-9 <"$f")
        [ -n "$p" ] || continue
        for p in $p $(pgrep -P "$p"); do cut -d')' -f2 "/proc/$p/stat" 2>/dev/null; done
    done | awk -v hz="$(getconf CLK_TCK)" '{s += $12 + $13} END {printf "%.3f\n", s / hz}'
}
# per_op BEFORE AFTER N: microseconds per operation between two CPU readings (seconds)
per_op() { python3 -c "print(round(($2 - $1) * 1e6 / max($3, 1), 1))"; }
# work_metrics BEFORE AFTER N: the nodes' work between two redis_work outputs per
# fingerprint of N, summed over the nodes ("metric value" lines); with more than one
# node also the largest share of the CPU one node took
work_metrics() {
    python3 - "$1" "$2" "$3" <<'PY'
import sys
rows = lambda text: [[float(v) for v in l.split()] for l in text.splitlines() if l.strip()]
delta = [[a - b for a, b in zip(x, y)] for x, y in zip(rows(sys.argv[2]), rows(sys.argv[1]))]
n = max(int(sys.argv[3]), 1)
tot = [sum(col) for col in zip(*delta)]
print("segment_redis_cpu_us_per_fp", round(tot[0] * 1e6 / n, 1))
for k, name in ((1, "zadd"), (2, "zcard"), (3, "evalsha")):
    print("segment_%s_per_fp" % name, round(tot[k] / n, 2))
if len(delta) > 1:
    print("segment_redis_cpu_max_node_share", round(max(d[0] for d in delta) / tot[0], 3) if tot[0] else "nan")
PY
}

# dl MODE ARGS..: bench-dist_load against the coordinator; its output on stdout
dl() {
    local mode=$1
    shift
    timeout --foreground 1800 "$BIN/bench-dist_load" "$mode" --port "$cport" --seed "$SEED" --corpus "$N" \
        --name scale "$@" || die "bench-dist_load $mode failed"
}
metric() { sed -n "s/.* metric=$1 value=//p" | head -n 1; }
# rdl MODE ARGS..: bench-dist_load straight to the (one) Redis node, through its directories
rdl() {
    local mode=$1
    shift
    timeout --foreground 1800 "$BIN/bench-dist_load" "$mode" --port "${rports[0]}" --seed "$SEED" --corpus "$N" \
        --layout "$LAYOUT" --dirs --name scale "$@" || die "bench-dist_load $mode (raw) failed"
}

# raw_rates: the raw rates of the same work at this size, straight to Redis:
# bench-dist_load with the live directories (--dirs); raw ingest writes fingerprints no
# one loads (numbers from RAW_OFFSET) and raw-remove takes them out again, before the
# fsck (one Redis node only: bench-dist_load's raw modes do not follow a slot map)
raw_rates() {
    local q p w
    log "checkpoint $N: raw rates"
    c0=$(redis_cpu)
    q=$(rdl raw-query --count "$QUERIES" --seconds 600 --depth 32)
    c1=$(redis_cpu)
    emit raw_query_per_s "$(echo "$q" | metric queries_per_sec)"
    raw_query_cpu=$(per_op "$c0" "$c1" "$(echo "$q" | metric ops)")
    emit raw_query_redis_cpu_us "$raw_query_cpu"
    emit dirs_buckets "$(echo "$q" | metric dirs_buckets)"
    p=$(rdl paced-raw --rate "$RATE" --seconds "$PACED_SECS" --count 100000000)
    emit "raw_paced_${RATE}_p50_ms" "$(echo "$p" | metric p50_ms)"
    emit "raw_paced_${RATE}_p99_ms" "$(echo "$p" | metric p99_ms)"
    c0=$(redis_cpu)
    w=$(rdl raw-ingest --offset "$RAW_OFFSET" --count "$RAW_N" --seconds 600 --depth 64)
    c1=$(redis_cpu)
    emit raw_ingest_fp_per_s "$(echo "$w" | metric ingests_per_sec)"
    raw_ingest_cpu=$(per_op "$c0" "$c1" "$(echo "$w" | metric ops)")
    emit raw_ingest_redis_cpu_us_per_fp "$raw_ingest_cpu"
    rdl raw-remove --offset "$RAW_OFFSET" --count "$(echo "$w" | metric ops | cut -d. -f1)" --depth 64 >/dev/null
    emit used_memory_after_raw "$(node_sum memory used_memory)"
    emit query_vs_raw "$(ratio "$query_rate" "$(echo "$q" | metric queries_per_sec)")"
    emit ingest_vs_raw "$(ratio "$tail_rate" "$(echo "$w" | metric ingests_per_sec)")"
    # what Redis's CPU allows: the system's ingest over raw when one Redis core bounds
    # both (raw's Redis CPU per fingerprint over the tail load's); the same for queries
    emit ingest_vs_raw_redis_cpu_bound "$(ratio "$raw_ingest_cpu" "$tail_redis_cpu")"
    emit query_vs_raw_redis_cpu_bound "$(ratio "$raw_query_cpu" "$query_redis_cpu")"
}

# query_rounds: BENCH_ROUNDS rounds of sys-query and raw-query of BENCH_QUERIES each,
# the order swapped every round (system first in odd rounds), so a disturbance of the
# machine falls on both: every round's rates and their ratio (rounds_*_rK), then the
# medians of the rates and of the ratios
query_rounds() {
    local r side sq rq q ratios="" sys_all="" raw_all=""
    for ((r = 1; r <= ROUNDS; r++)); do
        log "checkpoint $N: query round $r of $ROUNDS"
        for side in $( [ $((r % 2)) = 1 ] && echo "sys raw" || echo "raw sys"); do
            if [ "$side" = sys ]; then
                sq=$(dl sys-query --count "$QUERIES" --seconds 600 --depth 32 | metric queries_per_sec)
            else
                rq=$(rdl raw-query --count "$QUERIES" --seconds 600 --depth 32 | metric queries_per_sec)
            fi
        done
        q=$(ratio "$sq" "$rq")
        emit "rounds_query_per_s_r$r" "$sq"
        emit "rounds_raw_query_per_s_r$r" "$rq"
        emit "rounds_query_vs_raw_r$r" "$q"
        sys_all="$sys_all $sq" raw_all="$raw_all $rq" ratios="$ratios $q"
    done
    med() { python3 -c "import statistics, sys; print(round(statistics.median(map(float, sys.argv[1:])), 3))" "$@"; }
    emit rounds_query_per_s_median "$(med $sys_all)"
    emit rounds_raw_query_per_s_median "$(med $raw_all)"
    emit rounds_query_vs_raw_median "$(med $ratios)"
}

# load_part LO HI: `simhash load` of fingerprints [LO, HI); sets part_secs, part_failed,
# part_not_new (pairs answered late and sent again: stored, but not new then)
load_part() {
    local out rc t0 t1
    gen "$1" "$2" "$WORK/seg.txt"
    t0=$(now)
    out=$(timeout --foreground "$LOAD_SECS" "$BIN/simhash" load --port "$cport" --timeout-ms 60000 \
        "$WORK/seg.txt" 2>"$WORK/load-$N.err")
    rc=$?
    t1=$(now)
    rm -f "$WORK/seg.txt"
    log "simhash load: exit $rc: $out"
    part_failed=$(sed -n 's/^simhash load: \([0-9]*\) entries failed$/\1/p' "$WORK/load-$N.err")
    part_failed=${part_failed:-0}
    case "$out" in "loaded "*) ;; *) die "simhash load failed (exit $rc): $(tail -n 3 "$WORK/load-$N.err")" ;; esac
    [ "$part_failed" = 0 ] || log "$part_failed pairs refused; the first: $(head -n 3 "$WORK/load-$N.err")"
    part_secs=$(secs "$t0" "$t1")
    part_not_new=$(echo "$out" | sed -n 's/^loaded \([0-9]*\) entries (\([0-9]*\) new).*/\1 - \2/p' | bc)
}

log "deployment in $D"
mode=()
[ -z "$CLUSTER" ] || mode=(--cluster --masters "$CLUSTER")
# the ports after the first ones given (the second worker's; a cluster's next nodes and
# their bus ports, +10000, which must stay below 65536) may be taken: new ports, up to 5 tries
for try in 1 2 3 4 5; do
    port=$(free_port)
    redis_port=$(free_port)
    while [ -n "$CLUSTER" ] && [ "$redis_port" -gt 55000 ]; do redis_port=$(free_port); done
    SIMHASH_BIN=$BIN timeout --foreground 180 "$SRC/deploy/simhash-local" up --dir "$D" --port "$port" \
        --redis-port "$redis_port" --shard-port "$(free_port)" --metrics-offset 0 --fresh \
        --lifetime "$LIFETIME" --layout "$LAYOUT" "${mode[@]}" >"$WORK/up.out" 2>&1 && break
    cat "$WORK/up.out" >&2
    [ "$try" -lt 5 ] || die "simhash-local up failed"
done
cport=$port
if [ -z "$CLUSTER" ]; then
    rnames=(redis)
else
    for ((k = 0; k < CLUSTER; k++)); do rnames+=("redis-$k"); done
fi
for name in "${rnames[@]}"; do rports+=("$(cat "$D/$name.port")"); done
[ "$(ccli simhash.info | field layout)" = "$LAYOUT" ] || die "the deployment is not of layout $LAYOUT"

echo "bench=scale n=0 metric=cores value=$(nproc)"
echo "bench=scale n=0 metric=mem_total_kb value=$(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo)"
prev=0
total_load=0
for N in $POINTS; do
    [ "$N" -gt "$prev" ] || die "BENCH_POINTS must grow: $N after $prev"
    # the segment in two parts: [prev, N - TAIL), then the last TAIL pairs, whose rate
    # is the system's ingest rate at about N (compared with the raw rate below)
    tail_n=$TAIL
    [ $((N - prev)) -gt "$tail_n" ] || tail_n=$((N - prev))
    seg=0
    failed=0
    not_new=0
    emit loadavg_1m_before "$(cut -d' ' -f1 /proc/loadavg)"
    redis_before=$(redis_work)
    for part in head tail; do
        if [ $part = head ]; then lo=$prev hi=$((N - tail_n)); else lo=$((N - tail_n)) hi=$N; fi
        [ "$hi" -gt "$lo" ] || continue
        log "checkpoint $N: simhash load of [$lo, $hi)"
        c0=$(redis_cpu)
        d0=$(daemons_cpu)
        load_part "$lo" "$hi"
        tail_redis_cpu=$(per_op "$c0" "$(redis_cpu)" $((hi - lo - part_failed)))
        tail_daemons_cpu=$(per_op "$d0" "$(daemons_cpu)" $((hi - lo - part_failed)))
        seg=$(python3 -c "print(round($seg + $part_secs, 2))")
        failed=$((failed + part_failed))
        not_new=$((not_new + part_not_new))
    done
    emit tail_load_pairs "$tail_n"
    if [ "$tail_n" -gt 0 ]; then
        tail_rate=$(div $((tail_n - part_failed)) "$part_secs")
        emit tail_load_fp_per_s "$tail_rate"
        emit tail_redis_cpu_us_per_fp "$tail_redis_cpu"
        emit tail_daemons_cpu_us_per_fp "$tail_daemons_cpu"
    else
        tail_rate="" tail_redis_cpu="" tail_daemons_cpu=""
    fi
    emit load_not_new "$not_new"
    emit load_failed "$failed"
    emit loadavg_1m_after_load "$(cut -d' ' -f1 /proc/loadavg)"
    total_load=$(python3 -c "print(round($total_load + $seg, 2))")
    emit segment_load_seconds "$seg"
    emit segment_load_fp_per_s "$(div $((N - prev - failed)) "$seg")"
    emit cumulative_load_seconds "$total_load"
    emit cumulative_load_fp_per_s "$(div "$N" "$total_load")"
    # Redis's own work per fingerprint loaded in this segment: CPU of its main
    # process (not the AOF rewrite children), table writes and script calls
    work_metrics "$redis_before" "$(redis_work)" $((N - prev - failed)) >"$WORK/work.out" ||
        die "cannot compute the Redis work"
    while read -r k v; do emit "$k" "$v"; done <"$WORK/work.out"

    used=$(node_sum memory used_memory)
    t_loaded=$(now)
    emit used_memory "$used"
    emit bytes_per_fp "$(div "$used" "$N")"
    emit tombstones_live "$(node_expires)"
    if [ -n "$CLUSTER" ]; then
        for k in "${!rports[@]}"; do
            emit "used_memory_node_$k" "$(ncli "${rports[$k]}" info memory | field used_memory)"
        done
    fi
    emit used_memory_rss "$(node_sum memory used_memory_rss)"
    emit aof_bytes "$(for name in "${rnames[@]}"; do du -sb "$D/$name"; done | awk '{ s += $1 } END { printf "%.0f\n", s }')"
    emit aof_rewrites "$(node_sum persistence aof_rewrites)"
    emit redis_cpu_s "$(python3 -c "print(round($(node_sum cpu used_cpu_user), 2))")"
    info=$(ccli simhash.info)
    for f in fingerprints bytes_per_fingerprint bucket_splits buckets_cached largest_bucket_read; do
        emit "info_$f" "$(echo "$info" | field "$f")"
    done
    log "checkpoint $N: scanning every key"
    t0=$(now)
    keyscan_all >"$WORK/scan.out" || die "the key scan failed"
    while read -r k v; do emit "$k" "$v"; done <"$WORK/scan.out"
    emit keyscan_seconds "$(secs "$t0" "$(now)")"

    log "checkpoint $N: queries"
    # an AOF rewrite the load set off (a fork copying pages the parent still writes)
    # slows Redis for the queries and not for the raw run after them: wait for it
    # (at most 600 s; the wait is printed)
    t0=$(now)
    for _ in $(seq 1200); do
        [ "$(node_sum persistence aof_rewrite_in_progress)" = 0 ] && break
        sleep 0.5
    done
    emit query_wait_aof_rewrite_seconds "$(secs "$t0" "$(now)")"
    emit check_missing "$(dl check --count 1000 | metric check_missing)"
    c0=$(redis_cpu)
    d0=$(daemons_cpu)
    q=$(dl sys-query --count "$QUERIES" --seconds 600 --depth 32)
    c1=$(redis_cpu)
    d1=$(daemons_cpu)
    query_rate=$(echo "$q" | metric queries_per_sec)
    emit query_per_s "$query_rate"
    query_redis_cpu=$(per_op "$c0" "$c1" "$(echo "$q" | metric ops)")
    emit query_redis_cpu_us "$query_redis_cpu"
    emit query_daemons_cpu_us "$(per_op "$d0" "$d1" "$(echo "$q" | metric ops)")"
    emit query_errors "$(echo "$q" | metric errors)"
    emit query_rows_per_op "$(echo "$q" | metric rows_per_op)"
    p=$(dl paced --rate "$RATE" --seconds "$PACED_SECS" --count 100000000)
    emit "paced_${RATE}_achieved" "$(echo "$p" | metric achieved_rate)"
    emit "paced_${RATE}_p50_ms" "$(echo "$p" | metric p50_ms)"
    emit "paced_${RATE}_p99_ms" "$(echo "$p" | metric p99_ms)"
    emit "paced_${RATE}_errors" "$(echo "$p" | metric errors)"

    [ -n "$CLUSTER" ] || raw_rates
    [ -n "$CLUSTER" ] || [ "$ROUNDS" = 0 ] || query_rounds

    log "checkpoint $N: export"
    t0=$(now)
    timeout --foreground 7200 "$BIN/simhash" export --port "$cport" >"$WORK/export.txt" 2>"$WORK/export-$N.err" ||
        die "simhash export failed: $(tail -n 3 "$WORK/export-$N.err")"
    t1=$(now)
    emit export_seconds "$(secs "$t0" "$t1")"
    emit export_lines "$(wc -l <"$WORK/export.txt")"
    rm -f "$WORK/export.txt"

    if [ -z "$FSCK_MAX" ] || [ "$N" -le "$FSCK_MAX" ]; then
        log "checkpoint $N: fsck"
        t0=$(now)
        timeout --foreground 7200 "$BIN/simhash" fsck ${CLUSTER:+--cluster} --redis "127.0.0.1:${rports[0]}" >"$WORK/fsck-$N.err" 2>&1
        emit fsck_exit "$?"
        emit fsck_seconds "$(secs "$t0" "$(now)")"
        log "fsck: $(tail -n 2 "$WORK/fsck-$N.err" | tr '\n' ' ')"
    else
        emit fsck_skipped 1
    fi

    # the same memory minutes later (the export and fsck took that long): the
    # tombstones of the load's last splits expire within the corpus's lifetime
    # (tombstone_seconds in simhash:meta, 120 s for a new corpus)
    emit end_seconds_after_load "$(secs "$t_loaded" "$(now)")"
    used=$(node_sum memory used_memory)
    emit used_memory_end "$used"
    emit bytes_per_fp_end "$(div "$used" "$N")"
    emit tombstones_live_end "$(node_expires)"
    emit tombstone_seconds "$(ncli "${rports[0]}" hget simhash:meta tombstone_seconds)"

    log "checkpoint $N: restart"
    restart
    emit loadavg_1m_end "$(cut -d' ' -f1 /proc/loadavg)"
    prev=$N
done
log "done"
