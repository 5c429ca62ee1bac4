#!/usr/bin/env bash
# bench/quality/run.sh [BUILD_DIR] [bench-quality options...]: gather the text corpus of
# this Debian machine and run bench-quality on it (see bench/quality/README.md).
#
#   licenses   /usr/share/common-licenses/* (symlinks followed)
#   readme     /usr/share/doc/*/README* (plain files; README*.gz decompressed)
#   changelog  /usr/share/doc/*/changelog*.gz (decompressed)
#   news       /usr/share/doc/*/NEWS*.gz (decompressed)
#   python     /usr/share/doc/python3.11/html/_sources/**/*.txt (package python3-doc;
#              installed first when running as root and it is missing)
#
# Files with identical bytes are kept once. Decompressed files go to a temporary
# directory under ${TMPDIR:-/tmp}, removed on exit.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
[ $# -gt 0 ] && shift
bin=$build/bin/bench-quality
if [ ! -x "$bin" ]; then
    echo "run.sh: $bin not found; build first:" >&2
    echo "  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j2" >&2
    exit 2
fi

pysrc=/usr/share/doc/python3.11/html/_sources
if [ ! -d "$pysrc" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "run.sh: installing python3-doc" >&2
        apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y python3-doc >&2 ||
            echo "run.sh: python3-doc could not be installed; going on without it" >&2
    else
        echo "run.sh: $pysrc missing (package python3-doc); going on without it" >&2
    fi
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/simhash-quality.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/z"

# category<TAB>path<TAB>label lines (label: the original file), in glob order
list=$tmp/all.tsv
: > "$list"
add() {  # add CATEGORY PATH [LABEL]: a regular, readable, non-empty file (symlinks followed)
    local f
    f=$(readlink -f -- "$2") || return 0
    [ -f "$f" ] && [ -r "$f" ] && [ -s "$f" ] || return 0
    printf '%s\t%s\t%s\n' "$1" "$f" "${3:-$2}" >> "$list"
}
unz() {  # unz CATEGORY FILE.gz: decompress into the temporary directory
    local out
    out=$tmp/z/$(printf '%05d' "$n").txt
    n=$((n + 1))
    if zcat -- "$1.gz" > "$out" 2>/dev/null; then
        add "$2" "$out" "$1.gz"
    fi
}
n=0
shopt -s nullglob globstar
for f in /usr/share/common-licenses/*; do add licenses "$f"; done
for f in /usr/share/doc/*/README*; do
    case $f in
        *.gz) unz "${f%.gz}" readme ;;
        *.bz2|*.xz|*.html|*.htm|*.pdf) ;;
        *) add readme "$f" ;;
    esac
done
for f in /usr/share/doc/*/changelog*.gz; do unz "${f%.gz}" changelog; done
for f in /usr/share/doc/*/NEWS*.gz; do unz "${f%.gz}" news; done
if [ -d "$pysrc" ]; then
    for f in "$pysrc"/**/*.txt; do add python "$f"; done
fi

# identical files once (the first in list order); a path may appear twice via symlinks
dedup=$tmp/corpus.tsv
cut -f2 "$list" | tr '\n' '\0' | xargs -0 sha256sum | cut -c1-64 > "$tmp/sums"
paste "$tmp/sums" "$list" | awk -F'\t' '!seen[$1]++ { print $2 "\t" $3 "\t" $4 }' > "$dedup"
echo "run.sh: $(wc -l < "$list") files listed, $(wc -l < "$dedup") with distinct contents" >&2

start=$(date +%s)
"$bin" "$@" "$dedup"
echo "run.sh: wall time $(( $(date +%s) - start )) s (bench-quality), cpus=$(nproc)"
