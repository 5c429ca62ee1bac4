#!/usr/bin/env bash
# test_deb.sh: the Debian packages of `cpack -G DEB` (deploy/CMakeLists.txt). Builds
# them from the build tree; lintian reports 0 errors, and every warning it gives is one
# docs/operations.md explains; the packages hold what Debian asks (stripped programs
# and libraries whose debug information is in the -dbgsym packages by build id,
# compressed man pages, copyright and changelog in every package, shlibs and an
# ldconfig trigger for the libraries, sysusers and tmpfiles entries with
# systemd-sysusers in postinst, /etc/simhash as conffiles); then installs all of them
# into a scratch root with `dpkg --root` (maintainer scripts run chrootless on that
# root): the simhash user exists there, the conffiles are registered, the units'
# --check-config commands pass on the installed configuration, the programs run;
# remove keeps the configuration, purge deletes it.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
th_init deb
ok() { th_log "ok: $*"; }
BUILD=$(cd "$TH_BIN/.." && pwd)
[ -f "$BUILD/CMakeCache.txt" ] || th_fail "no CMake build at $BUILD"
for t in lintian dpkg-deb dpkg readelf systemd-sysusers; do
    command -v $t >/dev/null || th_fail "$t missing (scripts/install-deps.sh)"
done
[ "$(id -u)" -eq 0 ] || th_fail "needs root: dpkg --root installs files owned by root and the simhash user"
# packages come from the Release build; a sanitizer build's programs are not shipped
grep -q '^SIMHASH_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" && { th_log "sanitizer build: not packaged (the Release build's run checks the packages)"; exit 0; }
VER=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$BUILD/CMakeCache.txt")
[ -n "$VER" ] || th_fail "no project version in the cache"

# ---- build ----
(cd "$BUILD" && timeout 600 cpack -G DEB -B "$TH_DIR/out" >"$TH_DIR/cpack.log" 2>&1) ||
    th_fail "cpack: $(tail -10 "$TH_DIR/cpack.log")"
D=$TH_DIR/out
PKGS="simhash libsimhash0 libsimhashclient0 libsimhash-dev"
for p in $PKGS; do
    [ -f "$D/${p}_${VER}_amd64.deb" ] || th_fail "no ${p}_${VER}_amd64.deb: $(ls "$D")"
done
for p in simhash libsimhash0 libsimhashclient0; do
    [ -f "$D/${p}-dbgsym_${VER}_amd64.ddeb" ] || th_fail "no ${p}-dbgsym .ddeb: $(ls "$D")"
done
ok "cpack: $(cd "$D" && ls *.deb *.ddeb | tr '\n' ' ')"

# ---- lintian ----
timeout 600 lintian "$D"/*.deb "$D"/*.ddeb >"$TH_DIR/lintian.txt" 2>&1
grep -v 'running with root privileges' "$TH_DIR/lintian.txt" >"$TH_DIR/lintian.tags"
nerr=$(grep -c '^E: ' "$TH_DIR/lintian.tags")
nwarn=$(grep -c '^W: ' "$TH_DIR/lintian.tags")
[ "$nerr" -eq 0 ] || th_fail "lintian: $nerr errors: $(grep '^E: ' "$TH_DIR/lintian.tags" | head -20)"
for tag in $(sed -n 's/^W: [^:]*: \([a-z0-9-]*\).*/\1/p' "$TH_DIR/lintian.tags" | sort -u); do
    grep -q -- "\`$tag\`" "$TH_SRC/docs/operations.md" ||
        th_fail "lintian warning $tag is not explained in docs/operations.md: $(grep "$tag" "$TH_DIR/lintian.tags")"
done
ok "lintian: 0 errors, $nwarn warnings (each explained in docs/operations.md)"

# ---- contents ----
X=$TH_DIR/x
for p in $PKGS; do
    dpkg-deb -x "$D/${p}_${VER}_amd64.deb" "$X"
    dpkg-deb -e "$D/${p}_${VER}_amd64.deb" "$TH_DIR/ctl-$p"
    [ -s "$X/usr/share/doc/$p/copyright" ] || th_fail "$p has no copyright"
    zcat "$X/usr/share/doc/$p/changelog.gz" | head -n 1 | grep -q "^simhash ($VER) " ||
        th_fail "$p changelog.gz does not start with $VER"
    d=$(dpkg-deb -f "$D/${p}_${VER}_amd64.deb" Description | sed -n '2,$p' | wc -l)
    [ "$d" -ge 2 ] || th_fail "$p has no extended description"
done
for p in simhash libsimhash0 libsimhashclient0; do
    dpkg-deb -x "$D/${p}-dbgsym_${VER}_amd64.ddeb" "$X"
done
elves=$(find "$X/usr/bin" "$X/usr/lib" -maxdepth 1 -type f \( -perm -u+x -o -name '*.so.*' \) -exec sh -c \
    'file -b "$1" | grep -q "^ELF" && echo "$1"' _ {} \;)
[ "$(echo "$elves" | wc -l)" -ge 7 ] || th_fail "fewer ELF files than expected: $elves"
for f in $elves; do
    file -b "$f" | grep -q ', stripped' || th_fail "$f is not stripped: $(file -b "$f")"
    id=$(readelf -n "$f" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
    [ -n "$id" ] || th_fail "$f has no build id"
    dbg="$X/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
    [ -f "$dbg" ] || th_fail "no debug file for $f (build id $id)"
    readelf -S "$dbg" | grep -q '\.debug_info' || th_fail "$dbg holds no .debug_info"
done
ok "$(echo "$elves" | wc -l) programs and libraries stripped, their DWARF in the -dbgsym packages by build id"
for m in man1/simhash.1 man1/simhash-find-all.1 man1/simhash-find-clusters.1 man8/simhash-coordinator.8 \
         man8/simhash-shard.8 man8/simhash-local.8; do
    gzip -t "$X/usr/share/man/$m.gz" 2>/dev/null || th_fail "man page $m.gz missing or not gzip"
done
for l in libsimhash libsimhashclient; do
    grep -qx "$l 0 ${l}0 (>= $VER)" "$TH_DIR/ctl-${l}0/shlibs" || th_fail "${l}0 shlibs: $(cat "$TH_DIR/ctl-${l}0/shlibs")"
    grep -qx 'activate-noawait ldconfig' "$TH_DIR/ctl-${l}0/triggers" || th_fail "${l}0 has no ldconfig trigger"
done
grep -q 'systemd-sysusers' "$TH_DIR/ctl-simhash/postinst" || th_fail "postinst does not run systemd-sysusers"
[ "$(cat "$TH_DIR/ctl-simhash/conffiles")" = "$(printf '/etc/simhash/coordinator.conf\n/etc/simhash/shard-0.conf')" ] ||
    th_fail "conffiles: $(cat "$TH_DIR/ctl-simhash/conffiles")"
for f in usr/lib/sysusers.d/simhash.conf usr/lib/tmpfiles.d/simhash.conf etc/simhash/coordinator.conf \
         etc/simhash/shard-0.conf usr/share/simhash/prometheus/simhash-alerts.yml usr/include/simhash/corpus.h \
         usr/lib/systemd/system/simhash-coordinator.service usr/lib/systemd/system/simhash-shard@.service; do
    [ -s "$X/$f" ] || th_fail "the packages lack /$f"
done
dpkg-deb -f "$D/simhash_${VER}_amd64.deb" Depends | grep -q libhiredis ||
    th_fail "simhash Depends lacks hiredis: $(dpkg-deb -f "$D/simhash_${VER}_amd64.deb" Depends)"
ok "man pages compressed, copyright and changelog in each package, shlibs and ldconfig triggers, conffiles, sysusers"

# ---- install into a scratch root ----
R=$TH_DIR/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/etc"
touch "$R/var/lib/dpkg/status"
dpkgr() { timeout 300 dpkg --root="$R" --force-script-chrootless --force-depends --log="$TH_DIR/dpkg.log" "$@"; }
dpkgr -i "$D"/*.deb "$D"/*.ddeb >"$TH_DIR/dpkg-i.log" 2>&1 || th_fail "dpkg -i: $(tail -20 "$TH_DIR/dpkg-i.log")"
for p in $PKGS; do
    s=$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${Status}' "$p")
    [ "$s" = "install ok installed" ] || th_fail "$p in the scratch root: $s"
done
grep -q '^simhash:x:[0-9]*:[0-9]*:.*:/nonexistent:' "$R/etc/passwd" || th_fail "no simhash user: $(cat "$R/etc/passwd" 2>&1)"
[ -d "$R/var/log/simhash" ] || th_fail "tmpfiles did not create /var/log/simhash"
uid=$(sed -n 's/^simhash:x:\([0-9]*\):.*/\1/p' "$R/etc/passwd")
[ "$(stat -c %u "$R/var/log/simhash")" = "$uid" ] || th_fail "/var/log/simhash is not owned by simhash"
cf=$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${Conffiles}' simhash | awk '{print $1}' | tr '\n' ' ')
[ "$cf" = "/etc/simhash/coordinator.conf /etc/simhash/shard-0.conf " ] || th_fail "registered conffiles: $cf"
ok "dpkg --root: 4 packages and 3 -dbgsym installed, user simhash ($uid), /var/log/simhash, conffiles registered"

# the units' ExecStartPre / ExecStart config checks, paths moved into the scratch root
export LD_LIBRARY_PATH=$R/usr/lib
for u in simhash-coordinator.service simhash-shard@.service; do
    cmd=$(sed -n 's/^ExecStartPre=//p; s/^ExecStart=//p' "$R/usr/lib/systemd/system/$u" | head -n 1)
    [ -n "$cmd" ] || th_fail "$u has no ExecStart"
    cmd=$(printf '%s' "$cmd" | sed "s|%i|0|g; s| --check-config||; s|/usr/bin/|$R/usr/bin/|; s|/etc/simhash/|$R/etc/simhash/|")
    out=$(timeout 30 $cmd --check-config 2>&1) || th_fail "$u on a fresh install: $cmd --check-config: $out"
    case "$out" in *"configuration OK"*) ;; *) th_fail "$u --check-config said: $out" ;; esac
done
v=$("$R/usr/bin/simhash" --version) && [ "$v" = "simhash $VER" ] || th_fail "installed simhash --version: $v"
ok "the units' --check-config passes on the installed /etc/simhash; programs run from the root"

dpkgr -r simhash >>"$TH_DIR/dpkg-r.log" 2>&1 || th_fail "dpkg -r: $(tail -5 "$TH_DIR/dpkg-r.log")"
[ -f "$R/etc/simhash/coordinator.conf" ] && [ ! -e "$R/usr/bin/simhash-coordinator" ] ||
    th_fail "after remove: programs or configuration in the wrong state"
dpkgr -P simhash >>"$TH_DIR/dpkg-r.log" 2>&1 || th_fail "dpkg -P: $(tail -5 "$TH_DIR/dpkg-r.log")"
[ ! -e "$R/etc/simhash/coordinator.conf" ] || th_fail "purge left /etc/simhash/coordinator.conf"
ok "remove keeps /etc/simhash, purge deletes it"
th_log "Debian packages checked"
