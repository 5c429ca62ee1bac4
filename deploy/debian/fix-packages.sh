#!/bin/sh
# fix-packages.sh PACKAGE: repairs a package made by cpack (CMake 3.25) in place, so
# lintian accepts it as it accepts Debian's own packages. Run by debian/fix-packages.cmake
# after cpack.
#   -dbgsym (.ddeb): md5sums name paths inside the package (cpack writes its staging
#     paths), the .debug files are not executable, and /usr/share/doc/<pkg>-dbgsym
#     links to the main package's documentation (copyright, changelog), as dh_strip
#     does.
#   a library package with an ldconfig trigger: the postinst and postrm cpack adds
#     only to call ldconfig are dropped (the trigger does it once per dpkg run).
set -eu
f=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
dpkg-deb -R "$f" "$t/p"
pkg=$(sed -n 's/^Package: //p' "$t/p/DEBIAN/control")
case "$f" in
*.ddeb)
    sed -i 's|^\([0-9a-f]*\)  .*/usr/lib/debug/|\1  usr/lib/debug/|' "$t/p/DEBIAN/md5sums"
    find "$t/p/usr/lib/debug" -type f -exec chmod 0644 {} +
    mkdir -p "$t/p/usr/share/doc"
    ln -s "${pkg%-dbgsym}" "$t/p/usr/share/doc/$pkg"
    ;;
*)
    [ -f "$t/p/DEBIAN/triggers" ] || exit 0
    for s in postinst postrm; do
        # only scripts that do nothing but ldconfig
        [ ! -f "$t/p/DEBIAN/$s" ] || ! grep -v -e '^#' -e '^set -e$' -e '^ *$' -e 'ldconfig' -e '^fi$' \
            -e '^if \[ "\$1" = "[a-z]*" \]; then$' -e '^exit 0$' "$t/p/DEBIAN/$s" >/dev/null ||
            { echo "fix-packages.sh: $pkg's $s does more than ldconfig: kept" >&2; continue; }
        rm -f "$t/p/DEBIAN/$s"
    done
    ;;
esac
dpkg-deb --root-owner-group -b "$t/p" "$f" >/dev/null
