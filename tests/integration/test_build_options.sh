#!/usr/bin/env bash
# test_build_options.sh: what a packager may set at configure time. By default every
# source compiles with -Werror (developers and CI); -DSIMHASH_WERROR=OFF drops it from
# every compile command (a packager's newer compiler may warn where ours does not),
# the other warnings stay. Configure only, in scratch build directories.
set -u
. "$(dirname "$0")/lib.sh"
th_init build_options
flags() {   # configure into $1 with the remaining arguments; print the compile commands
    local dir=$1
    shift
    timeout 300 cmake -S "$TH_SRC" -B "$dir" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
        -DSIMHASH_TESTS=OFF -DSIMHASH_BENCH=OFF "$@" >"$dir.log" 2>&1 \
        || th_fail "cmake $* failed: $(tail -5 "$dir.log")"
    cat "$dir/compile_commands.json"
}
on=$(flags "$TH_DIR/default")
off=$(flags "$TH_DIR/nowerror" -DSIMHASH_WERROR=OFF)
n=$(grep -c '"command"' <<<"$on")
[ "$n" -gt 10 ] || th_fail "only $n compile commands by default"
[ "$(grep '"command"' <<<"$on" | grep -vc -- ' -Werror')" -eq 0 ] \
    || th_fail "a compile command lacks -Werror by default"
grep -q -- '-Werror' <<<"$off" && th_fail "-Werror still set with SIMHASH_WERROR=OFF"
[ "$(grep '"command"' <<<"$off" | grep -vc -- ' -Wall -Wextra')" -eq 0 ] \
    || th_fail "SIMHASH_WERROR=OFF also dropped -Wall -Wextra"
th_log "ok: $n compile commands with -Werror by default, none with SIMHASH_WERROR=OFF"
