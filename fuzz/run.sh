#!/usr/bin/env bash
# fuzz/run.sh SECONDS [TARGET...]: build the libFuzzer targets with clang
# (-fsanitize=fuzzer,address,undefined) in build-fuzz/ and run each for SECONDS
# seconds on a copy of its seed corpus (fuzz/corpus/<target>/). New inputs that add
# coverage are kept in build-fuzz/corpus/<target>/; a crash leaves its input in
# build-fuzz/crash-<target>-* and makes the script exit 1.
#
#   bash fuzz/run.sh 20                  short bounded run (CI)
#   bash fuzz/run.sh 3600 fuzz_request   a longer run of one target
#   FUZZ_JOBS=2 bash fuzz/run.sh 600     libFuzzer -fork=2 (one process per core)
#
# Environment: FUZZ_BUILD (build directory, default <repo>/build-fuzz), CC (default clang).
set -eu
secs=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
case "$secs" in ''|*[!0-9]*) echo "fuzz/run.sh: SECONDS must be a number" >&2; exit 2;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD:-$root/build-fuzz}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_request fuzz_cli_input fuzz_config fuzz_html fuzz_http fuzz_layout_keys fuzz_aclfile)
jobs=${FUZZ_JOBS:-1}

command -v "${CC:-clang}" >/dev/null || { echo "fuzz/run.sh: ${CC:-clang} not found" >&2; exit 2; }
cmake -S "$root/fuzz" -B "$build" -DCMAKE_C_COMPILER="${CC:-clang}" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build" -j2 >/dev/null

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
rc=0
for t in "${targets[@]}"; do
    [ -x "$build/bin/$t" ] || { echo "fuzz/run.sh: no target $t" >&2; exit 2; }
    corpus="$build/corpus/$t"
    mkdir -p "$corpus"
    cp -n "$root/fuzz/corpus/$t"/* "$corpus"/ 2>/dev/null || true
    extra=()
    [ "$jobs" -gt 1 ] && extra=(-fork="$jobs" -ignore_crashes=0)
    echo "== $t: ${secs}s"
    # timeout is a backstop only: libFuzzer stops itself after -max_total_time
    if timeout --kill-after=10 $((secs + 60)) "$build/bin/$t" -max_total_time="$secs" \
            -timeout=10 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
            -artifact_prefix="$build/crash-$t-" "${extra[@]}" "$corpus" \
            >"$build/$t.log" 2>&1; then
        grep -E '^stat::number_of_executed_units|^stat::new_units_added|^stat::peak_rss_mb' \
            "$build/$t.log" | tr '\n' ' '
        echo
    else
        echo "== $t FAILED; log: $build/$t.log" >&2
        grep -E -A25 'ERROR: |runtime error|==ABORTING|deadly signal' "$build/$t.log" | head -60 >&2
        rc=1
    fi
done
exit $rc
