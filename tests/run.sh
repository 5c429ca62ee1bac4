#!/usr/bin/env bash
# tests/run.sh: install what is missing, build, and run every test: the Release build
# (unit + integration, real redis-server on loopback), the multi-host scenarios
# (tests/multihost/run.sh: hosts as network namespaces, as root), then the same tests built with
# AddressSanitizer + UndefinedBehaviorSanitizer, then valgrind on the unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=${JOBS:-2}

bash scripts/install-deps.sh

echo "== Release build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$JOBS"
(cd build && ctest --output-on-failure -j"$JOBS")

echo "== multi-host scenarios (network namespaces, latency, partitions; needs root)"
bash tests/multihost/run.sh

echo "== ASan + UBSan build"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSIMHASH_SANITIZE=ON -DSIMHASH_BENCH=OFF \
      -DCMAKE_C_COMPILER=clang >/dev/null
cmake --build build-asan -j"$JOBS"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j"$JOBS")

echo "== valgrind (unit tests)"
for t in build/tests/test_* build/bin/test_*; do
    [ -x "$t" ] || continue
    case "$t" in *_slow) continue;; esac
    if ! VALGRIND=1 valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
            "$t" >"build/valgrind-$(basename "$t").log" 2>&1; then
        echo "valgrind: errors in $t"; tail -50 "build/valgrind-$(basename "$t").log"; exit 1
    fi
    echo "valgrind: $(basename "$t") clean"
done

echo "== fuzzing (libFuzzer, ${FUZZ_SECONDS:-20} s per target; longer runs: docs/security.md)"
bash fuzz/run.sh "${FUZZ_SECONDS:-20}"
echo "all tests passed"
