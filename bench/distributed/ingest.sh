#!/usr/bin/env bash
# bench/distributed/ingest.sh: bulk ingest rate of `simhash load` (data layout 4, the
# one format) against the raw Redis rates of the same work, all in one run.
#   raw_bulk    bench-dist_load preload + predocs of the same N fingerprints (one ZADD
#               of many members per key, the table-0 member with its id per
#               fingerprint) into a fresh redis-server: what Redis alone takes in bulk;
#               every shard one bucket, so only for N up to 50,000 (below the first
#               split; above it the raw rates are skipped)
#   raw_ingest  bench-dist_load raw-ingest (one ZADD per table + the table-0 member
#               per fingerprint, pipelined, no lock) for BENCH_SECONDS
#   load        `simhash load` of N pairs (random fingerprints, one 30-byte id each)
#               into a fresh deployment (one redis-server with the listpack limits of
#               deploy/simhash-local, one worker, one coordinator) of layout L
# With BENCH_BASE_BIN set (the programs of another build, e.g. the commit before a
# change), `load` runs with both builds in every round, alternating, so "before" and
# "after" meet the same machine load; lines carry build=base / build=test.
# Prints `bench=ingest build=B layout=L metric=M value=V` lines on stdout: per round,
# then `median_*` over BENCH_ROUNDS rounds and each median's ratio to the raw rates
# (progress on stderr). Per load also bytes_per_fp (used_memory / N after the load),
# redis_cpu_s, the worker's bucket_splits, shard_cpu_us_per_fp / coord_cpu_us_per_fp (the
# daemons' user + system CPU per stored fingerprint), per-command Redis calls and time per
# fingerprint (INFO commandstats), and load_failed (pairs the deployment
# refused: the first error is logged, and the rate counts only the pairs stored).
#   online      after each load of the test build, BENCH_ONLINE_N (20000; 0: none)
#               one-pair SIMHASH.ADDs of new fingerprints (bench-dist_load sys-ingest
#               on BENCH_ONLINE_CONNS (8) connections, each 32 deep: many crawler clients)
#               through a coordinator with merge-adds yes and one with merge-adds no,
#               in turn: rates, script calls per fingerprint, and the medians' ratios
#               to each other and to the raw ingest rate. BENCH_ONLINE_MODE=sys-check
#               sends one-pair SIMHASH.CHECKs instead (query, then add: a crawler)
# Environment: SIMHASH_BIN (default build/bin), BENCH_BASE_BIN (unset), BENCH_N
# (100000), BENCH_ROUNDS (3), BENCH_SECONDS (10),
# BENCH_BLOCKS/BENCH_DISTANCE (6/3), BENCH_RAW (1; 0 skips the raw rates).
# Everything runs on 127.0.0.1 in a mktemp -d directory, stopped by PID at exit.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export SIMHASH_SRC=${SIMHASH_SRC:-$(cd "$HERE/../.." && pwd)}
. "$SIMHASH_SRC/tests/integration/lib.sh"
th_init bench-ingest
th_need_bins simhash simhash-shard simhash-coordinator bench-dist_load
N=${BENCH_N:-100000}
ROUNDS=${BENCH_ROUNDS:-3}
SECS=${BENCH_SECONDS:-10}
# the raw corpus is written below its first split: a shard holds under 256 entries
RAW=${BENCH_RAW:-1}
if [ "$RAW" = 1 ] && [ "$N" -gt 50000 ]; then
    echo "bench/distributed/ingest.sh: no raw rates for BENCH_N > 50000 (the raw corpus would need splits)" >&2
    RAW=0
fi
M=${BENCH_BLOCKS:-6}
K=${BENCH_DISTANCE:-3}
export TH_DAEMON_SECS=${BENCH_DAEMON_SECS:-7200}
ONLINE_N=${BENCH_ONLINE_N:-20000}
ONLINE_CONNS=${BENCH_ONLINE_CONNS:-8}
ONLINE_MODE=${BENCH_ONLINE_MODE:-sys-ingest}
case "$ONLINE_MODE" in sys-ingest|sys-check) ;; *) th_fail "BENCH_ONLINE_MODE: sys-ingest or sys-check" ;; esac
TEST_BIN=$TH_BIN
BUILDS="test"
[ -n "${BENCH_BASE_BIN:-}" ] && BUILDS="base test"

emit() { echo "bench=ingest build=$1 layout=$2 metric=$3 value=$4"; }
now() { date +%s.%N; }
rcli() { timeout 30 redis-cli -p "$rport" "$@" | tr -d '\r'; }
info_field() { rcli info "$1" | sed -n "s/^$2://p"; }
median() { python3 -c "import statistics, sys; print(round(statistics.median(float(x) for x in sys.argv[1:]), 1))" "$@"; }
ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(round(a / b, 3) if b else 'nan')" "$1" "$2"; }
[ "$ONLINE_N" -gt 0 ] && echo "bench=ingest online_mode=$ONLINE_MODE"

# fresh_redis: a new redis-server with the deployment's listpack limits; sets rport
fresh_redis() {
    th_start_redis "redis-$1"
    rport=$TH_REDIS_PORT
    rpid=$TH_REDIS_PID
    local s
    for s in zset-max-listpack-entries hash-max-listpack-entries; do   # as simhash-local
        rcli config set "$s" 2048 >/dev/null
    done
}

th_log "input: $N random fingerprints with one 30-byte id each"
python3 -c "
import random, sys
r = random.Random(20)
w = sys.stdout.write
for i in range($N):
    w('%d doc-%026d\n' % (r.getrandbits(64), i))
" >"$TH_DIR/pairs.txt" || th_fail "cannot write the input"

emit machine - cores "$(nproc)"
emit machine - loadavg_1m_start "$(cut -d' ' -f1 /proc/loadavg)"

# raw_layout L R: the raw rates of layout L on a fresh Redis; appends them to the files
# raw-bulk-L and raw-ingest-L
raw_layout() {
    local l=$1 r=$2 t0 t1 bulk ingest
    fresh_redis "raw-l$l-$r"
    t0=$(now)
    timeout 3600 "$TEST_BIN/bench-dist_load" preload --port "$rport" --count "$N" --layout "$l" \
        --blocks "$M" --distance "$K" --seed "$r" >"$TH_DIR/preload-$l-$r.out" &&
        timeout 3600 "$TEST_BIN/bench-dist_load" predocs --port "$rport" --count "$N" --layout "$l" \
            --blocks "$M" --distance "$K" --seed "$r" >"$TH_DIR/predocs-$l-$r.out" ||
        th_fail "bench-dist_load preload/predocs (layout $l)"
    t1=$(now)
    bulk=$(python3 -c "print(round($N / ($t1 - $t0), 1))")
    timeout $((SECS + 600)) "$TEST_BIN/bench-dist_load" raw-ingest --port "$rport" --layout "$l" \
        --blocks "$M" --distance "$K" --offset 100000000 --count 100000000 --seconds "$SECS" \
        --depth 32 >"$TH_DIR/raw-ingest-$l-$r.out" || th_fail "bench-dist_load raw-ingest (layout $l)"
    ingest=$(sed -n 's/.* metric=ingests_per_sec value=//p' "$TH_DIR/raw-ingest-$l-$r.out" | head -n 1)
    echo "$bulk" >>"$TH_DIR/raw-bulk-$l"
    echo "$ingest" >>"$TH_DIR/raw-ingest-$l"
    emit raw "$l" raw_bulk_fp_per_s "$bulk"
    emit raw "$l" raw_ingest_fp_per_s "$ingest"
    th_stop "$rpid"
}

# raw_round R: the raw rates (every shard one bucket: a corpus below its first split,
# bench-dist_load preload)
raw_round() {
    raw_layout 4 "$1"
}

# online LAYOUT R SHARD_PID: one-pair SIMHASH.ADDs of new fingerprints (bench-dist_load
# sys-ingest on BENCH_ONLINE_CONNS connections at once, each pipelining 32, the
# coordinator's max-inflight-client: many crawler clients) into the corpus the load made, through a coordinator with merge-adds yes
# and one with merge-adds no, in turn (order alternating by round); rates and script
# calls per fingerprint
online() {
    local l=$1 r=$2 m order=(yes no) off=$((200000000 + r * 2 * ONLINE_N))
    [ $((r % 2)) = 0 ] && order=(no yes)
    for m in "${order[@]}"; do
        th_start_coord "coord-online-$m-l$l-$r" "$M" "$K" 10000 "127.0.0.1:$TH_SHARD_PORT" "" --merge-adds "$m"
        local ocpid=$TH_COORD_PID ocport=$TH_COORD_PORT
        rcli config resetstat >/dev/null
        local c per=$((ONLINE_N / ONLINE_CONNS)) pids=() t0 t1
        t0=$(now)
        for c in $(seq 1 "$ONLINE_CONNS"); do
            timeout 3600 "$TEST_BIN/bench-dist_load" "$ONLINE_MODE" --port "$ocport" --blocks "$M" \
                --distance "$K" --seed 5 --offset $((off + (c - 1) * per)) --count "$per" \
                --seconds 3600 --depth 32 >"$TH_DIR/online-$m-$l-$r-$c.out" &
            pids+=($!)
        done
        for c in "${pids[@]}"; do wait "$c" || th_fail "bench-dist_load $ONLINE_MODE (merge-adds $m)"; done
        t1=$(now)
        cat "$TH_DIR"/online-"$m"-"$l"-"$r"-*.out | grep -q "metric=errors value=0" ||
            th_fail "$ONLINE_MODE errors (merge-adds $m): $(cat "$TH_DIR"/online-"$m"-"$l"-"$r"-*.out)"
        off=$((off + ONLINE_N))
        local rate scripts
        rate=$(python3 -c "print(round($per * $ONLINE_CONNS / ($t1 - $t0), 1))")
        echo "$rate" >>"$TH_DIR/online-$m-$l"
        emit test "$l" "online_merge_${m}_fp_per_s" "$rate"
        scripts=$(rcli info commandstats | sed -n 's/^cmdstat_eval\(sha\)*:calls=\([0-9]*\),.*/\2/p' |
            python3 -c "import sys; print(round(sum(int(x) for x in sys.stdin) / $ONLINE_N, 2))")
        emit test "$l" "online_merge_${m}_script_calls_per_fp" "$scripts"
        th_stop "$ocpid"
    done
}

# load_round BUILD LAYOUT R: `simhash load` into a fresh deployment; prints fp/s
load_round() {
    local b=$1 l=$2 r=$3 bin t0 t1 out
    bin=$TEST_BIN
    [ "$b" = base ] && bin=$BENCH_BASE_BIN
    fresh_redis "$b-l$l-$r"
    TH_BIN=$bin th_start_shard "shard-$b-l$l-$r" "$rport" 0-255 "$M" "$K" "" --layout "$l"
    local spid=$TH_SHARD_PID
    TH_BIN=$bin th_start_coord "coord-$b-l$l-$r" "$M" "$K" 10000 "127.0.0.1:$TH_SHARD_PORT"
    local cpid=$TH_COORD_PID cport=$TH_COORD_PORT
    t0=$(now)
    local err="$TH_DIR/load-$b-l$l-$r.err" failed=0
    out=$(timeout 7200 "$bin/simhash" load --port "$cport" --timeout-ms 60000 "$TH_DIR/pairs.txt" 2>"$err")
    t1=$(now)
    case "$out" in
    "loaded $N entries ($N new)"*) ;;
    "loaded $N entries ("*) # all stored; a pair answered late was sent again (not new then)
        th_log "simhash load ($b, layout $l): $out (pairs sent again after a timeout)" ;;
    "loaded "*) # items refused: reported, and the rate counts only the pairs stored
        failed=$(sed -n 's/^simhash load: \([0-9]*\) entries failed$/\1/p' "$err")
        [ -n "$failed" ] || th_fail "simhash load ($b, layout $l): $out $(tail -n 3 "$err")"
        th_log "simhash load ($b, layout $l): $failed pairs refused; the first: $(grep -v 'SHC_ERR_[A-Z]*$' "$err" | head -n 2)" ;;
    *) th_fail "simhash load ($b, layout $l): $out $(tail -n 3 "$err")" ;;
    esac
    emit "$b" "$l" load_failed "$failed"
    emit "$b" "$l" bucket_splits "$(timeout 30 redis-cli -p "$TH_SHARD_PORT" shard.info | tr -d '\r' | sed -n 's/^bucket_splits://p')"
    local rate mem cpu
    rate=$(python3 -c "print(round(($N - $failed) / ($t1 - $t0), 1))")
    mem=$(info_field memory used_memory)
    cpu=$(info_field cpu used_cpu_user_main_thread)
    emit "$b" "$l" load_fp_per_s "$rate"
    emit "$b" "$l" load_seconds "$(python3 -c "print(round($t1 - $t0, 2))")"
    emit "$b" "$l" bytes_per_fp "$(python3 -c "print(round($mem / ($N - $failed), 1))")"
    emit "$b" "$l" redis_cpu_s "$cpu"
    emit "$b" "$l" redis_cpu_us_per_fp "$(python3 -c "print(round($cpu * 1e6 / ($N - $failed), 1))")"
    # the worker's and the coordinator's CPU (user + system) per stored fingerprint
    local who pid
    for who in shard:$spid coord:$cpid; do
        pid=$(th_child_pid "${who#*:}")
        [ -n "$pid" ] && emit "$b" "$l" "${who%%:*}_cpu_us_per_fp" "$(python3 -c "
import os, sys
f = open('/proc/$pid/stat').read().rsplit(')', 1)[1].split()
print(round((int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK') * 1e6 / ($N - $failed), 1))")"
    done
    # where Redis's time went: calls and microseconds per stored fingerprint per command
    rcli info commandstats | sed -n 's/^cmdstat_\([a-z]*\):calls=\([0-9]*\),usec=\([0-9]*\),.*/\1 \2 \3/p' |
        while read -r c n us; do
            emit "$b" "$l" "calls_per_fp_$c" "$(python3 -c "print(round($n / ($N - $failed), 3))")"
            emit "$b" "$l" "redis_us_per_fp_$c" "$(python3 -c "print(round($us / ($N - $failed), 1))")"
        done
    [ "$b" = test ] && [ "$ONLINE_N" -gt 0 ] && online "$l" "$r" "$spid"
    th_stop "$cpid"
    th_stop "$spid"
    th_stop "$rpid"
    echo "$rate" >"$TH_DIR/rate-$b-l$l-$r"
}

for r in $(seq 1 "$ROUNDS"); do
    if [ "$RAW" = 1 ]; then
        th_log "round $r: raw rates"
        raw_round "$r"
    fi
    for l in 4; do
        for b in $BUILDS; do
            th_log "round $r: simhash load, build $b, layout $l"
            load_round "$b" "$l" "$r"
        done
    done
done

if [ "$RAW" = 1 ]; then
    mrb=$(median $(cat "$TH_DIR/raw-bulk-4"))
    mri=$(median $(cat "$TH_DIR/raw-ingest-4"))
    emit raw 4 median_raw_bulk_fp_per_s "$mrb"
    emit raw 4 median_raw_ingest_fp_per_s "$mri"
fi
for l in 4; do
    for b in $BUILDS; do
        m=$(median $(cat "$TH_DIR"/rate-"$b"-l"$l"-*))
        emit "$b" "$l" median_load_fp_per_s "$m"
        if [ "$RAW" = 1 ]; then
            emit "$b" "$l" load_over_raw_bulk "$(ratio "$m" "$mrb")"
            emit "$b" "$l" load_over_raw_ingest "$(ratio "$m" "$mri")"
        fi
    done
    if [ "$ONLINE_N" -gt 0 ]; then
        my=$(median $(cat "$TH_DIR/online-yes-$l")) mn=$(median $(cat "$TH_DIR/online-no-$l"))
        emit test "$l" median_online_merge_yes_fp_per_s "$my"
        emit test "$l" median_online_merge_no_fp_per_s "$mn"
        emit test "$l" online_merge_yes_over_no "$(ratio "$my" "$mn")"
        if [ "$RAW" = 1 ]; then
            emit test "$l" online_merge_yes_over_raw_ingest "$(ratio "$my" "$mri")"
        fi
    fi
    if [ -n "${BENCH_BASE_BIN:-}" ]; then
        emit test "$l" test_over_base "$(ratio "$(median $(cat "$TH_DIR"/rate-test-l"$l"-*))" \
            "$(median $(cat "$TH_DIR"/rate-base-l"$l"-*))")"
    fi
done
emit machine - loadavg_1m_end "$(cut -d' ' -f1 /proc/loadavg)"
