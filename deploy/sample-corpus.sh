#!/usr/bin/env bash
# deploy/sample-corpus.sh: write a small deterministic corpus of English-like text
# files with planted near-duplicates, for demos and tests of `simhash dedup`.
#
#   bash deploy/sample-corpus.sh DIR [N]
#
# Writes N (default 200) files DIR/doc-0001.txt ... of 1200-2000 words each. Every 8th
# file is a near-duplicate of an earlier original with 1 or 2 words replaced, every
# 25th an exact copy. Prints one line per planted file on stdout:
#   <file> <source file> <words changed>
# The output depends only on N: a fixed-seed Park-Miller generator in awk (exact in
# every awk), not the awk's own rand().
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    echo "usage: $0 DIR [N]   (N files, default 200, at most 100000)" >&2
    exit 2
fi
DIR=$1
N=${2:-200}
if ! [[ $N =~ ^[0-9]{1,6}$ ]] || [ "$N" -lt 1 ] || [ "$N" -gt 100000 ]; then
    echo "$0: N must be a number from 1 to 100000, got '$N'" >&2
    exit 2
fi
mkdir -p "$DIR"

awk -v dir="$DIR" -v n="$N" '
function rnd(k) {                 # uniform integer in [0, k)
    seed = (seed * 16807) % 2147483647
    return int(seed * k / 2147483647)
}
function write_doc(i,    f, j, line, w) {
    f = sprintf("%s/doc-%04d.txt", dir, i)
    line = ""
    for (j = 1; j <= len[i]; j++) {
        w = word[i, j]
        line = (line == "") ? w : line " " w
        if (length(line) > 70 || j == len[i]) {
            print line > f
            line = ""
        }
    }
    close(f)
}
BEGIN {
    seed = 42
    nw = split("the of and to in that it was for on are as with his they at be this " \
        "from have or by one had not but what all were when we there can an your which " \
        "their said if do will each about how up out them then she many some so these " \
        "would other into has more her two like him see time could no make than first " \
        "been its who now people my made over did down only way find use may water long " \
        "little very after words called just where most know get through back much go " \
        "good new write our used me man too any day same right look think also around " \
        "another came come work three word must because does part even place well such " \
        "here take why things help put years different away again off went old number " \
        "great tell men say small every found still between name should home big give " \
        "air line set own under read last never us left end along while might next sound " \
        "below saw something thought both few those always looked show large often " \
        "together asked house world going want school important until form food keep " \
        "children feet land side without boy once animals life enough took sometimes four " \
        "head above kind began almost live page got earth need far hand high year mother " \
        "light parts country father let night following picture being study second eyes " \
        "soon times story boys since white days ever paper hard near sentence better best " \
        "across during today others however sure means knew its try told young miles sun " \
        "ways thing whole hear example heard several change answer room sea against top " \
        "turned learn point city play toward five using himself usually river garden " \
        "market bridge winter summer morning evening forest mountain village harbor", W, " ")
    norig = 0
    for (i = 1; i <= n; i++) {
        if (i % 25 == 0 && norig > 0) {               # exact copy
            src = orig[1 + rnd(norig)]
            len[i] = len[src]
            for (j = 1; j <= len[i]; j++) word[i, j] = word[src, j]
            printf "doc-%04d.txt doc-%04d.txt 0\n", i, src
        } else if (i % 8 == 0 && norig > 0) {         # near-duplicate
            src = orig[1 + rnd(norig)]
            len[i] = len[src]
            for (j = 1; j <= len[i]; j++) word[i, j] = word[src, j]
            changes = 1 + rnd(2)
            for (c = 0; c < changes; c++) {
                j = 1 + rnd(len[i])
                w = word[i, j]
                do { r = W[1 + rnd(nw)] } while (r == w)
                word[i, j] = r
            }
            printf "doc-%04d.txt doc-%04d.txt %d\n", i, src, changes
        } else {                                      # original prose
            len[i] = 1200 + rnd(801)
            slen = 0
            for (j = 1; j <= len[i]; j++) {
                w = W[1 + rnd(nw)]
                if (slen == 0) w = toupper(substr(w, 1, 1)) substr(w, 2)
                slen++
                if (slen >= 6 && rnd(10) == 0 || j == len[i]) { w = w "."; slen = 0 }
                word[i, j] = w
            }
            orig[++norig] = i
        }
        write_doc(i)
    }
}'
