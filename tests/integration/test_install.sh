#!/usr/bin/env bash
# test_install.sh: what `cmake --install` and `cpack -G DEB` deliver, used as a user
# would: the installed tree moved elsewhere still works through pkg-config (relocatable
# .pc) and find_package (CMake config packages) for each library alone and both;
# libsimhash exports exactly the functions of its installed headers; man pages render
# and lexgrog reads each page's own name; bash completion completes every command; the systemd units are hardened (systemd-analyze security <= 3.0); the .deb
# holds the files and its programs run from an unpacked root.
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

# ---- man pages ----
for page in man1/simhash.1 man1/simhash-find-all.1 man1/simhash-find-clusters.1 \
            man8/simhash-coordinator.8 man8/simhash-shard.8 man8/simhash-local.8; do
    f="$P/share/man/$page"
    [ -s "$f" ] || th_fail "man page $page not installed"
    warn=$(groff -man -ww -z "$f" 2>&1)
    [ -z "$warn" ] || th_fail "groff warnings in $page: $warn"
    grep -q '^\.SH "SEE ALSO"' "$f" || th_fail "$page has no SEE ALSO"
    # whatis/apropos read the NAME section: it must name this page's own program
    name=$(basename "$page"); name=${name%.*}
    lg=$(lexgrog "$f" 2>&1) || th_fail "lexgrog $page: $lg"
    case "$lg" in *": \"$name - "*) ;; *) th_fail "lexgrog reads $page as: $lg" ;; esac
    grep -q "^\.TH ${name^^} " "$f" || th_fail "$page title is not ${name^^}: $(grep '^\.TH' "$f")"
done
grep -q -- 'metrics\\-port' "$P/share/man/man8/simhash-coordinator.8" || th_fail "simhash-coordinator(8) lacks its options"
ok "six man pages, rendered without warnings, each named after its program (lexgrog)"

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

# ---- the Debian package ----
(cd "$BUILD" && timeout 600 cpack -G DEB -B "$TH_DIR/deb" >"$TH_DIR/cpack.log" 2>&1) ||
    th_fail "cpack: $(tail -10 "$TH_DIR/cpack.log")"
deb=$(ls "$TH_DIR"/deb/simhash_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || th_fail "no .deb: $(tail -5 "$TH_DIR/cpack.log")"
files=$(dpkg-deb -c "$deb" | awk '{print $6}')
for want in ./usr/bin/simhash ./usr/bin/simhash-coordinator ./usr/bin/simhash-shard ./usr/bin/simhash-local \
            ./usr/lib/systemd/system/simhash-coordinator.service ./usr/share/man/man8/simhash-shard.8 \
            ./usr/include/simhash/corpus.h ./usr/lib/pkgconfig/simhash.pc; do
    printf '%s\n' "$files" | grep -qx -- "$want" || th_fail ".deb lacks $want"
done
dpkg-deb -f "$deb" Depends | grep -q libhiredis || th_fail ".deb Depends lacks hiredis: $(dpkg-deb -f "$deb" Depends)"
mkdir "$TH_DIR/root"
dpkg-deb -x "$deb" "$TH_DIR/root"
grep -q '^ExecStart=/usr/bin/simhash-coordinator ' "$TH_DIR/root/usr/lib/systemd/system/simhash-coordinator.service" ||
    th_fail "the .deb's unit does not run /usr/bin/simhash-coordinator"
v=$(LD_LIBRARY_PATH="$TH_DIR/root/usr/lib" "$TH_DIR/root/usr/bin/simhash" --version) || th_fail "unpacked simhash: $v"
[ "$v" = "simhash 0.1.0" ] || th_fail "unpacked simhash --version: $v"
v=$(bash "$TH_DIR/root/usr/bin/simhash-local" --version) || th_fail "unpacked simhash-local: $v"
[ "$v" = "simhash-local (simhash) 0.1.0" ] || th_fail "unpacked simhash-local --version: $v"
ok ".deb: $(printf '%s\n' "$files" | grep -c '[^/]$') files, programs run from the unpacked root"
th_log "all install checks passed"
