#!/usr/bin/env bash
# test_install.sh: what `cmake --install` delivers, used as a user would: the
# installed tree moved elsewhere still works through pkg-config (relocatable .pc) and
# find_package (CMake config packages) for each library alone and both; libsimhash
# exports exactly the functions of its installed headers; man pages are compressed,
# render, and lexgrog reads each page's own name; bash completion completes every
# command of the program's table; the systemd units are hardened (systemd-analyze
# security <= 3.0); the default configuration passes --check-config. (The Debian
# packages: test_deb.sh.)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
th_init install
BUILD=$(cd "$TH_BIN/.." && pwd)
[ -f "$BUILD/CMakeCache.txt" ] || th_fail "no CMake build at $BUILD"
ok() { th_log "ok: $*"; }
# a sanitizer build's libraries need the same compiler and flags in what links them
CC=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
[ -n "$CC" ] || CC=cc
SANFLAGS=
grep -q '^SIMHASH_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" && SANFLAGS="-fsanitize=address,undefined"

# ---- install, then move the tree: everything must follow it ----
timeout 300 cmake --install "$BUILD" --prefix "$TH_DIR/p" >"$TH_DIR/install.log" 2>&1 ||
    th_fail "cmake --install: $(tail -5 "$TH_DIR/install.log")"
mv "$TH_DIR/p" "$TH_DIR/moved"
P="$TH_DIR/moved"
LIBDIR=$(cd "$P" && dirname "$(find . -name simhash.pc | head -n 1)")
LIBDIR=$(cd "$P/$LIBDIR/.." && pwd)
export PKG_CONFIG_PATH="$LIBDIR/pkgconfig"
flags=$(pkg-config --cflags --libs simhash simhashclient) || th_fail "pkg-config: $flags"
case "$flags" in *"$P"*) ;; *) th_fail "pkg-config flags do not follow the moved tree: $flags" ;; esac
ok "pkg-config finds the moved tree: $flags"

# one program per library, each built against that library alone, and one on both
cat >"$TH_DIR/use_core.c" <<'EOF'
#include <stdio.h>
#include <simhash/corpus.h>
#include <simhash/fingerprint.h>
int main(void)
{
    char err[128];
    corpus *c = corpus_new(6, 3, err, sizeof err);
    if (!c)
        return 1;
    uint64_t a = fp_text("the same text", 13, 0), found = 0;
    corpus_insert(c, a);
    int r = corpus_find_first(c, a ^ 5, 3, &found);
    printf("%d %d\n", r, found == a);
    corpus_free(c);
    return r == 1 && found == a ? 0 : 1;
}
EOF
cat >"$TH_DIR/use_client.c" <<'EOF'
#include <stdio.h>
#include <simhash/client.h>
int main(void)
{
    printf("%s\n", shc_status_name(SHC_OK));
    return 0;
}
EOF
sed 's|#include <simhash/fingerprint.h>|&\n#include <simhash/client.h>|
     s|printf("%d %d\\n", r, found == a);|printf("%d %d %s\\n", r, found == a, shc_status_name(SHC_OK));|' \
    "$TH_DIR/use_core.c" >"$TH_DIR/use_both.c"
# consumer | pkg-config modules = CMake packages | imported targets | its output
CONSUMERS=("core|simhash|simhash::simhash|1 1"
           "client|simhashclient|simhashclient::simhashclient|SHC_OK"
           "both|simhash simhashclient|simhash::simhash simhashclient::simhashclient|1 1 SHC_OK")
for spec in "${CONSUMERS[@]}"; do
    IFS='|' read -r name mods targets want <<<"$spec"
    "$CC" $SANFLAGS -o "$TH_DIR/use_$name" "$TH_DIR/use_$name.c" $(pkg-config --cflags --libs $mods) \
        >"$TH_DIR/cc.log" 2>&1 || th_fail "use_$name.c with pkg-config $mods alone: $(cat "$TH_DIR/cc.log")"
    out=$(LD_LIBRARY_PATH="$LIBDIR" "$TH_DIR/use_$name") || th_fail "use_$name on the installed libraries: $out"
    [ "$out" = "$want" ] || th_fail "use_$name output: $out"
    ok "pkg-config $mods alone: a program builds and runs"

    d="$TH_DIR/cm_$name"
    mkdir -p "$d"
    cp "$TH_DIR/use_$name.c" "$d/use.c"
    { echo "cmake_minimum_required(VERSION 3.20)"; echo "project(use C)"
      for m in $mods; do echo "find_package($m 0.1 REQUIRED)"; done
      echo "add_executable(use use.c)"
      echo "target_link_libraries(use PRIVATE $targets)"; } >"$d/CMakeLists.txt"
    (cd "$d" && timeout 300 cmake -S . -B b -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_COMPILER="$CC" \
            -DCMAKE_C_FLAGS="$SANFLAGS" -DCMAKE_EXE_LINKER_FLAGS="$SANFLAGS" >"$d.log" 2>&1 &&
        timeout 300 cmake --build b >>"$d.log" 2>&1) || th_fail "find_package with $targets alone: $(tail -20 "$d.log")"
    out=$(LD_LIBRARY_PATH="$LIBDIR" "$d/b/use") || th_fail "find_package use_$name: $out"
    [ "$out" = "$want" ] || th_fail "find_package use_$name output: $out"
    ok "find_package: $targets alone gives a working target"
done

# ---- libsimhash exports the functions of its installed headers, nothing else ----
declared=$(cat "$P"/include/simhash/{fingerprint,html,perm,match,corpus}.h |
    grep -oE '^[a-z_0-9 *]+\b(fp|perm|match|corpus)_[a-z_0-9]+\(' |
    grep -v '^static' | sed -E 's/.*\b([a-z_0-9]+)\($/\1/' | sort -u)
exported=$(nm -D --defined-only "$LIBDIR/libsimhash.so" | awk '$2 == "T" {sub(/@.*/, "", $3); print $3}' | sort -u)
[ "$declared" = "$exported" ] || th_fail "libsimhash exports differ from its headers:
$(diff <(echo "$declared") <(echo "$exported"))"
ok "libsimhash exports exactly the $(echo "$exported" | wc -l) functions of its headers"

# ---- man pages (installed gzip-compressed) ----
for page in man1/simhash.1 man1/simhash-find-all.1 man1/simhash-find-clusters.1 \
            man8/simhash-coordinator.8 man8/simhash-shard.8 man8/simhash-local.8; do
    f="$P/share/man/$page.gz"
    [ -s "$f" ] || th_fail "man page $page.gz not installed"
    gzip -t "$f" || th_fail "$page.gz is not gzip"
    warn=$(zcat "$f" | groff -man -ww -z 2>&1)
    [ -z "$warn" ] || th_fail "groff warnings in $page: $warn"
    zcat "$f" | grep -q '^\.SH "SEE ALSO"' || th_fail "$page has no SEE ALSO"
    # whatis/apropos read the NAME section: it must name this page's own program
    name=$(basename "$page"); name=${name%.*}
    lg=$(lexgrog "$f" 2>&1) || th_fail "lexgrog $page: $lg"
    case "$lg" in *": \"$name - "*) ;; *) th_fail "lexgrog reads $page as: $lg" ;; esac
    zcat "$f" | grep -q "^\.TH ${name^^} " || th_fail "$page title is not ${name^^}: $(zcat "$f" | grep '^\.TH')"
done
zcat "$P/share/man/man8/simhash-coordinator.8.gz" | grep -q -- 'metrics\\-port' ||
    th_fail "simhash-coordinator(8) lacks its options"
ok "six man pages, compressed, rendered without warnings, each named after its program (lexgrog)"

# ---- bash completion ----
comp=$(PATH="$P/bin:$PATH" bash -c '. "$1"
COMP_WORDS=(simhash qu); COMP_CWORD=1; _simhash; echo "${COMPREPLY[*]}"
COMP_WORDS=(simhash query --li); COMP_CWORD=2; _simhash; echo "${COMPREPLY[*]}"' _ \
    "$P/share/bash-completion/completions/simhash")
[ "$comp" = "$(printf 'query\n--limit')" ] || th_fail "bash completion: $comp"
# every command of the program's table (its --help) is completed, none other
want=$("$P/bin/simhash" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p' | sort | tr '\n' ' ')
got=$(PATH="$P/bin:$PATH" bash -c '. "$1"; COMP_WORDS=(simhash ""); COMP_CWORD=1; _simhash
    printf "%s\n" "${COMPREPLY[@]}"' _ "$P/share/bash-completion/completions/simhash" | grep -v '^--' | sort | tr '\n' ' ')
[ -n "$want" ] && [ "$got" = "$want" ] || th_fail "bash completion commands: '$got', the program has '$want'"
case " $got " in *" export "*" migrate "*) ;; *) th_fail "bash completion lacks export or migrate: $got" ;; esac
ok "bash completion completes commands ($got) and options"

# ---- systemd units ----
for u in simhash-coordinator.service simhash-shard@.service; do
    f="$P/lib/systemd/system/$u"
    grep -q '^Type=notify$' "$f" || th_fail "$u is not Type=notify"
    grep -q "^ExecStart=$TH_DIR/p/bin/" "$f" || th_fail "$u does not start the installed program: $(grep ExecStart "$f")"
    lvl=$(systemd-analyze security --offline=true "$f" 2>/dev/null | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
    [ -n "$lvl" ] || th_fail "systemd-analyze security gave no level for $u"
    awk -v l="$lvl" 'BEGIN { exit !(l <= 3.0) }' || th_fail "$u exposure $lvl > 3.0"
    ok "$u: Type=notify, exposure $lvl"
done

# ---- default configuration (the units' config files) ----
for conf in coordinator.conf shard-0.conf; do
    [ -s "$P/etc/simhash/$conf" ] || th_fail "$conf not installed in etc/simhash"
done
LD_LIBRARY_PATH="$LIBDIR" "$P/bin/simhash-coordinator" --check-config --config "$P/etc/simhash/coordinator.conf" \
    >"$TH_DIR/cc.out" 2>&1 || th_fail "installed coordinator.conf: $(cat "$TH_DIR/cc.out")"
LD_LIBRARY_PATH="$LIBDIR" "$P/bin/simhash-shard" --check-config --config "$P/etc/simhash/shard-0.conf" \
    >"$TH_DIR/cc.out" 2>&1 || th_fail "installed shard-0.conf: $(cat "$TH_DIR/cc.out")"
ok "etc/simhash/coordinator.conf and shard-0.conf pass --check-config (the Debian packages: test_deb.sh)"
th_log "all install checks passed"
