#!/usr/bin/env bash
# tests/integration/test_cli.sh: the offline command-line programs (simhash-find-all,
# simhash-find-clusters, simhash fingerprint/compute/find-all/find-clusters/dedup)
# checked against brute-force references in python3, bad input, exit codes, and
# the sample corpus generator. Needs SIMHASH_BIN and SIMHASH_SRC.
set -uo pipefail

BIN=${SIMHASH_BIN:?set SIMHASH_BIN to the build bin directory}
SRC=${SIMHASH_SRC:?set SIMHASH_SRC to the source tree}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAILS=0
CHECKS=0
# a bound on hangs, not a speed check: generous enough for ASan on a busy machine
TO="timeout 300"
TO_BIG="timeout 900"    # the streaming steps (56 MiB)

fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
ok() { CHECKS=$((CHECKS + 1)); }

# expect_rc WANT DESC CMD...: run CMD (stdout -> $T/out, stderr -> $T/err), check its exit status.
expect_rc() {
    local want=$1 desc=$2
    shift 2
    "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "$desc: exit $rc, wanted $want; stderr: $(head -c 300 "$T/err")"
    else
        ok
    fi
}
# same_files A B DESC
same_files() {
    if cmp -s "$1" "$2"; then ok; else fail "$3: $(diff "$1" "$2" | head -5)"; fi
}
# has TEXT FILE DESC
has() {
    if grep -qF -- "$1" "$2"; then ok; else fail "$3: '$1' not in: $(head -c 300 "$2")"; fi
}
empty() {
    if [ ! -s "$1" ]; then ok; else fail "$2: expected no output, got: $(head -c 200 "$1")"; fi
}

# ---- --help and --version ----
for p in simhash-find-all simhash-find-clusters simhash; do
    expect_rc 0 "$p --help" $TO "$BIN/$p" --help
    has "Usage:" "$T/out" "$p --help on stdout"
    expect_rc 0 "$p --version" $TO "$BIN/$p" --version
    if grep -qE '^simhash [0-9]+\.[0-9]+\.[0-9]+$' "$T/out"; then ok; else fail "$p --version: $(cat "$T/out")"; fi
done
expect_rc 0 "simhash --help" $TO "$BIN/simhash" --help
for c in fingerprint extract compute find-all find-clusters dedup add query check del load; do
    has "  $c " "$T/out" "simhash --help lists $c"
done
for c in fingerprint extract compute find-all find-clusters dedup; do
    expect_rc 0 "simhash $c --help" $TO "$BIN/simhash" "$c" --help
    has "Usage: simhash" "$T/out" "simhash $c --help"
done
expect_rc 2 "simhash without command" $TO "$BIN/simhash"
expect_rc 2 "simhash unknown command" $TO "$BIN/simhash" frobnicate
has "unknown command" "$T/err" "unknown command message"

# ---- planted data set and brute-force references ----
python3 - "$T" <<'EOF'
import random, sys
t = sys.argv[1]
r = random.Random(7)
vals = []
def flip(x, k):
    for b in r.sample(range(64), k):
        x ^= 1 << b
    return x
for i in range(600):
    vals.append(r.getrandbits(64))
for i in range(250):                        # planted neighbours at 1..5 bits
    vals.append(flip(r.choice(vals), r.randint(1, 5)))
for i in range(40):                         # repeated values, some three times
    v = r.choice(vals)
    vals += [v] * r.randint(1, 2)
a = r.getrandbits(64)                       # a chain: a~b (3), b~c (3), a-c 6 apart
b = a ^ 0b111
c = b ^ 0b111000
vals += [a, b, c, 0, 18446744073709551615, 18446744073709551615]
r.shuffle(vals)
open(t + "/planted.txt", "w").write("".join("%d\n" % v for v in vals))
open(t + "/chain.txt", "w").write("%d\n%d\n%d\n" % (c, a, b))
from collections import Counter
cnt = Counter(vals)
u = sorted(cnt)
for d in (2, 3, 4):
    pairs = [(x, x) for x in u if cnt[x] > 1]
    for i in range(len(u)):
        x = u[i]
        for j in range(i + 1, len(u)):
            if bin(x ^ u[j]).count("1") <= d:
                pairs.append((x, u[j]))
    pairs.sort()
    open(t + "/pairs%d.ref" % d, "w").write("".join("[%d, %d]\n" % p for p in pairs))
    parent = {x: x for x in u}
    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for x, y in pairs:
        parent[find(x)] = find(y)
    comp = {}
    for v in vals:
        comp.setdefault(find(v), []).append(v)
    cl = sorted(sorted(m) for m in comp.values() if len(m) > 1)
    open(t + "/clusters%d.ref" % d, "w").write("".join("[" + ", ".join(map(str, m)) + "]\n" for m in cl))
EOF
[ -s "$T/pairs3.ref" ] || { echo "FAIL: reference generation"; exit 1; }

# ---- find-all / find-clusters against the references ----
for bd in "6 3 3" "4 3 3" "5 3 3" "5 2 2" "3 2 2" "8 4 4" "10 3 3"; do
    set -- $bd
    b=$1 d=$2 ref=$3
    expect_rc 0 "find-all -b $b -d $d" $TO "$BIN/simhash-find-all" -b "$b" -d "$d" -i "$T/planted.txt"
    same_files "$T/out" "$T/pairs$ref.ref" "find-all -b $b -d $d vs brute force"
    expect_rc 0 "find-clusters -b $b -d $d" $TO "$BIN/simhash-find-clusters" --blocks "$b" --distance "$d" --input "$T/planted.txt"
    same_files "$T/out" "$T/clusters$ref.ref" "find-clusters -b $b -d $d vs union-find"
done
grep -q '^\[18446744073709551615, 18446744073709551615\]$' "$T/pairs3.ref" && ok || fail "reference lacks [max, max]"
grep -qE '^\[([0-9]+), \1\]$' "$T/pairs3.ref" && ok || fail "reference lacks [a, a] pairs"
for t in 1 2; do
    expect_rc 0 "find-all -t $t" $TO "$BIN/simhash-find-all" -t "$t" -i "$T/planted.txt"
    same_files "$T/out" "$T/pairs3.ref" "find-all -t $t"
done
# Defaults: -i - -o -, -b 6 -d 3; the simhash subcommands give the same output.
$TO "$BIN/simhash-find-all" <"$T/planted.txt" >"$T/stdio.out" 2>"$T/err" && ok || fail "find-all via stdin/stdout"
same_files "$T/stdio.out" "$T/pairs3.ref" "find-all defaults"
expect_rc 0 "find-all -i - -o file" $TO "$BIN/simhash-find-all" -i - -o "$T/o.txt" <"$T/planted.txt"
same_files "$T/o.txt" "$T/pairs3.ref" "find-all -o file"
empty "$T/out" "find-all -o file leaves stdout empty"
$TO "$BIN/simhash" find-all -i "$T/planted.txt" >"$T/sub.out" 2>"$T/err" && ok || fail "simhash find-all"
same_files "$T/sub.out" "$T/pairs3.ref" "simhash find-all"
$TO "$BIN/simhash" find-clusters <"$T/planted.txt" >"$T/sub.out" 2>"$T/err" && ok || fail "simhash find-clusters"
same_files "$T/sub.out" "$T/clusters3.ref" "simhash find-clusters"
# A chain a~b~c with a and c 6 bits apart is one cluster; find-all gives only its two links.
expect_rc 0 "chain clusters" $TO "$BIN/simhash-find-clusters" -i "$T/chain.txt"
python3 - "$T/chain.txt" "$T/out" <<'EOF' && ok || fail "chain cluster"
import sys
v = sorted(int(x) for x in open(sys.argv[1]))
got = open(sys.argv[2]).read()
want = "[" + ", ".join(map(str, v)) + "]\n"
sys.exit(0 if got == want else "got %r want %r" % (got, want))
EOF
expect_rc 0 "chain pairs" $TO "$BIN/simhash-find-all" -i "$T/chain.txt"
[ "$(wc -l <"$T/out")" -eq 2 ] && ok || fail "chain: find-all should give 2 pairs: $(cat "$T/out")"
# Line endings: \r\n and a last line without newline.
printf '5\r\n5\r\n7' | $TO "$BIN/simhash-find-all" >"$T/out" 2>"$T/err" && ok || fail "CRLF input: $(cat "$T/err")"
printf '[5, 5]\n[5, 7]\n' >"$T/want"
same_files "$T/out" "$T/want" "CRLF and unterminated last line"
# Leading zeros are decimal digits too (as parse_u64); 20+ digit lines take the slow path.
printf '0000000000000000000000042\n42\n' | $TO "$BIN/simhash-find-all" >"$T/out" 2>"$T/err" && ok || fail "leading zeros"
printf '[42, 42]\n' >"$T/want"
same_files "$T/out" "$T/want" "leading zeros"

# ---- empty input ----
: >"$T/empty.txt"
for p in simhash-find-all simhash-find-clusters; do
    expect_rc 0 "$p empty stdin" $TO "$BIN/$p" -i - <"$T/empty.txt"
    empty "$T/out" "$p empty input"
    expect_rc 0 "$p empty file" $TO "$BIN/$p" -i "$T/empty.txt" -o "$T/empty.out"
    [ -f "$T/empty.out" ] && [ ! -s "$T/empty.out" ] && ok || fail "$p: empty output file"
    expect_rc 0 "$p single value" $TO "$BIN/$p" -i - < <(echo 12345)
    empty "$T/out" "$p single value gives nothing"
done

# ---- bad input: exit 1, the line number, nothing on stdout ----
bad_cases=("abc" "0x10" "-5" "18446744073709551616" "" "  " "12 34" "+7" "1e5" "12a" "99999999999999999999999")
for p in simhash-find-all simhash-find-clusters; do
    for s in "${bad_cases[@]}"; do
        printf '1\n2\n%s\n4\n' "$s" >"$T/bad.txt"
        expect_rc 1 "$p bad line '$s'" $TO "$BIN/$p" -i "$T/bad.txt"
        has "$p: $T/bad.txt:3: " "$T/err" "$p bad line '$s' message"
        empty "$T/out" "$p bad line '$s' stdout"
        expect_rc 1 "$p bad line '$s' on stdin" $TO "$BIN/$p" <"$T/bad.txt"
        has "<stdin>:3: " "$T/err" "$p stdin bad line '$s' message"
    done
    printf '1\n2\n1\n2\nabc' >"$T/bad.txt"
    expect_rc 1 "$p bad last line" $TO "$BIN/$p" -i "$T/bad.txt" -o "$T/never.out"
    has ":5: not a decimal number: 'abc'" "$T/err" "$p bad last line message"
    [ ! -e "$T/never.out" ] && ok || fail "$p created its output file despite bad input"
    # blanks around a number are skipped, as simhash-cpp reads them
    printf ' 1\n3 \n\t64\t\r\n' >"$T/blanks.txt"
    expect_rc 0 "$p blanks around numbers" $TO "$BIN/$p" -d 1 -i "$T/blanks.txt"
    [ "$(cat "$T/out")" = "[1, 3]" ] && ok || fail "$p read ' 1', '3 ', tab 64 tab as: $(cat "$T/out")"
    printf '1\r\r\n' >"$T/bad.txt"
    expect_rc 1 "$p stray CR" $TO "$BIN/$p" -i "$T/bad.txt"
    printf '\n' >"$T/bad.txt"
    expect_rc 1 "$p lone empty line" $TO "$BIN/$p" -i "$T/bad.txt"
    has ":1: empty" "$T/err" "$p lone empty line message"
    head -c 100 /dev/zero | tr '\0' 'x' >"$T/bad.txt"
    expect_rc 1 "$p long bad line" $TO "$BIN/$p" -i "$T/bad.txt"
    has "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'" "$T/err" "$p truncates quoted text to 40"
    expect_rc 1 "$p missing input" $TO "$BIN/$p" -i "$T/does-not-exist"
    has "No such file or directory" "$T/err" "$p missing input message"
    expect_rc 1 "$p directory input" $TO "$BIN/$p" -i "$T"
    has "Is a directory" "$T/err" "$p directory input message"
    expect_rc 1 "$p /dev/full" $TO "$BIN/$p" -i "$T/planted.txt" -o /dev/full
    has "write error" "$T/err" "$p /dev/full message"
    $TO "$BIN/$p" -i "$T/planted.txt" >/dev/full 2>"$T/err"
    [ $? -eq 1 ] && ok || fail "$p stdout on /dev/full should exit 1"
    expect_rc 1 "$p unwritable output" $TO "$BIN/$p" -i "$T/planted.txt" -o "$T/no/such/dir/out"
    # usage errors: exit 2
    expect_rc 2 "$p -b 3 -d 3" $TO "$BIN/$p" -b 3 -d 3 -i "$T/planted.txt"
    has "$p: " "$T/err" "$p -b 3 -d 3 message"; empty "$T/out" "$p -b 3 -d 3 stdout"
    expect_rc 2 "$p -b 65" $TO "$BIN/$p" -b 65
    has "blocks" "$T/err" "$p -b 65 message"
    expect_rc 2 "$p -b 0" $TO "$BIN/$p" -b 0
    expect_rc 2 "$p -d x" $TO "$BIN/$p" -d x
    has "not a decimal number" "$T/err" "$p -d x message"
    expect_rc 2 "$p -d -1" $TO "$BIN/$p" -d -1
    expect_rc 2 "$p too many tables" $TO "$BIN/$p" -b 40 -d 20
    has "tables" "$T/err" "$p too many tables message"
    expect_rc 2 "$p unknown option" $TO "$BIN/$p" --frobnicate
    has "unknown option '--frobnicate'" "$T/err" "$p unknown option message"
    expect_rc 2 "$p unknown short option" $TO "$BIN/$p" -z
    expect_rc 2 "$p missing value" $TO "$BIN/$p" -b
    has "needs a value" "$T/err" "$p missing value message"
    expect_rc 2 "$p missing long value" $TO "$BIN/$p" --input
    expect_rc 2 "$p stray argument" $TO "$BIN/$p" "$T/planted.txt"
    expect_rc 2 "$p -t too large" $TO "$BIN/$p" -t 100000
done

# ---- fingerprint and compute ----
printf 'The quick brown fox jumps over the lazy dog near the river bank.\n' >"$T/one.txt"
printf 'Un texte en fran\xc3\xa7ais, pas tr\xc3\xa8s long mais assez.\n' >"$T/two.txt"
printf '\xe8\xbf\x91\xe9\x87\x8d\xe5\xa4\x8d\xe6\x96\x87\xe6\xa1\xa3\xe6\xa3\x80\xe6\xb5\x8b\n' >"$T/three.txt"
cat "$T/one.txt" "$T/two.txt" "$T/three.txt" >"$T/all.txt"
expect_rc 0 "fingerprint files" $TO "$BIN/simhash" fingerprint "$T/one.txt" "$T/two.txt" "$T/three.txt"
cut -f1 "$T/out" >"$T/fp_files"
cp "$T/fp_files" "$T/fp_files_one"
[ "$(wc -l <"$T/fp_files")" -eq 3 ] && ok || fail "fingerprint: 3 lines expected"
grep -qvE '^[0-9]+$' "$T/fp_files" && fail "fingerprint: non-numeric output" || ok
[ "$(cut -f2 "$T/out" | head -1)" = "$T/one.txt" ] && ok || fail "fingerprint: name column"
[ "$(sort -u "$T/fp_files" | wc -l)" -eq 3 ] && ok || fail "fingerprint: three texts, three fingerprints"
expect_rc 0 "fingerprint --lines" $TO "$BIN/simhash" fingerprint --lines "$T/all.txt"
cut -f1 "$T/out" >"$T/fp_lines"
same_files "$T/fp_lines" "$T/fp_files" "fingerprint of files == --lines of the same content"
printf '%s\n' "$T/all.txt:1" "$T/all.txt:2" "$T/all.txt:3" >"$T/want"
cut -f2 "$T/out" >"$T/names"
same_files "$T/names" "$T/want" "--lines names"
$TO "$BIN/simhash" fingerprint <"$T/one.txt" >"$T/out" 2>"$T/err" && ok || fail "fingerprint stdin"
printf '%s\t-\n' "$(head -1 "$T/fp_files")" >"$T/want"
same_files "$T/out" "$T/want" "fingerprint of stdin"
$TO "$BIN/simhash" fingerprint - <"$T/one.txt" >"$T/out" 2>"$T/err" && ok || fail "fingerprint -"
same_files "$T/out" "$T/want" "fingerprint of -"
tr -d '\n' <"$T/one.txt" | $TO "$BIN/simhash" fingerprint --lines >"$T/out" 2>"$T/err" && ok || fail "fingerprint --lines stdin"
printf '%s\t-:1\n' "$(head -1 "$T/fp_files")" >"$T/want"
same_files "$T/out" "$T/want" "--lines of stdin without final newline"
expect_rc 0 "fingerprint --window 1" $TO "$BIN/simhash" fingerprint --window 1 "$T/one.txt"
[ "$(cut -f1 "$T/out")" != "$(head -1 "$T/fp_files")" ] && ok || fail "--window 1 should change the fingerprint"
expect_rc 2 "fingerprint --window 0" $TO "$BIN/simhash" fingerprint --window 0 "$T/one.txt"
expect_rc 2 "fingerprint --window 65" $TO "$BIN/simhash" fingerprint --window 65 "$T/one.txt"
expect_rc 1 "fingerprint missing file" $TO "$BIN/simhash" fingerprint "$T/one.txt" "$T/nope.txt" "$T/two.txt"
has "nope.txt: No such file or directory" "$T/err" "fingerprint missing file message"
[ "$(wc -l <"$T/out")" -eq 2 ] && ok || fail "fingerprint prints the readable files"
$TO "$BIN/simhash" fingerprint "$T/one.txt" >/dev/full 2>/dev/null; [ $? -eq 1 ] && ok || fail "fingerprint to /dev/full"
# A large file (about 24 MiB) through mmap and through a pipe gives one fingerprint.
# all.txt 128,000 times, written by one process (2,064 cats took minutes on a busy machine)
python3 -c 'import sys
d = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(d * (64 * 2000))' "$T/all.txt" "$T/big.txt"
expect_rc 0 "fingerprint big file" $TO "$BIN/simhash" fingerprint "$T/big.txt"
a=$(cut -f1 "$T/out")
b=$(cat "$T/big.txt" | $TO "$BIN/simhash" fingerprint | cut -f1)
[ -n "$a" ] && [ "$a" = "$b" ] && ok || fail "big file: mmap '$a' vs pipe '$b'"
rm -f "$T/big.txt"

python3 - "$T" <<'EOF'
import random, sys
t = sys.argv[1]
r = random.Random(3)
hs = [r.getrandbits(64) for _ in range(1001)]
fp = 0
for i in range(64):
    s = sum(1 if (h >> i) & 1 else -1 for h in hs)
    if s > 0:
        fp |= 1 << i
open(t + "/features.txt", "w").write("".join("%d\n" % h for h in hs))
open(t + "/compute.ref", "w").write("%d\n" % fp)
EOF
expect_rc 0 "compute" $TO "$BIN/simhash" compute "$T/features.txt"
same_files "$T/out" "$T/compute.ref" "compute vs python vote"
$TO "$BIN/simhash" compute <"$T/features.txt" >"$T/out" 2>"$T/err" && ok || fail "compute stdin"
same_files "$T/out" "$T/compute.ref" "compute from stdin"
printf '0\n' >"$T/want"
expect_rc 0 "compute empty" $TO "$BIN/simhash" compute "$T/empty.txt"
same_files "$T/out" "$T/want" "compute of nothing is 0"
printf '1\n2\n0x3\n' >"$T/bad.txt"
expect_rc 1 "compute bad input" $TO "$BIN/simhash" compute "$T/bad.txt"
has "simhash compute: $T/bad.txt:3: not a decimal number: '0x3'" "$T/err" "compute bad input message"
empty "$T/out" "compute bad input stdout"
expect_rc 2 "compute two files" $TO "$BIN/simhash" compute "$T/bad.txt" "$T/bad.txt"

# ---- sample corpus and dedup ----
expect_rc 2 "sample-corpus without args" bash "$SRC/deploy/sample-corpus.sh"
expect_rc 2 "sample-corpus bad N" bash "$SRC/deploy/sample-corpus.sh" "$T/x" 12abc
C="$T/corpus"
$TO bash "$SRC/deploy/sample-corpus.sh" "$C" 120 >"$T/manifest.txt" 2>"$T/err" && ok || fail "sample-corpus: $(cat "$T/err")"
[ "$(ls "$C" | wc -l)" -eq 120 ] && ok || fail "sample-corpus: 120 files expected"
[ "$(wc -l <"$T/manifest.txt")" -ge 15 ] && ok || fail "sample-corpus: planted list too short"
$TO bash "$SRC/deploy/sample-corpus.sh" "$T/corpus2" 120 >"$T/manifest2.txt" 2>&1
diff -r "$C" "$T/corpus2" >/dev/null && same_files "$T/manifest.txt" "$T/manifest2.txt" "sample-corpus determinism" \
    || fail "sample-corpus is not deterministic"
rm -rf "$T/corpus2"
# A subdirectory, a copy with an awkward name, a symbolic link loop and a link to a file.
mkdir -p "$C/sub/deeper"
cp "$C/doc-0001.txt" "$C/sub/deeper/we\"ird\\name.txt"
ln -s .. "$C/sub/loop"
ln -s ../doc-0002.txt "$C/sub/link-to-2.txt"
ln -s /nonexistent/target "$C/sub/broken"
expected_groups() {  # connected components of the manifest plus doc-0001 ~ its copy
    python3 - "$T/manifest.txt" <<'EOF'
import sys
parent = {}
def find(x):
    parent.setdefault(x, x)
    while parent[x] != x:
        x = parent[x]
    return x
edges = [l.split()[:2] for l in open(sys.argv[1])]
edges.append(["doc-0001.txt", 'we"ird\\name.txt'])
for a, b in edges:
    parent[find(a)] = find(b)
groups = {}
for x in list(parent):
    groups.setdefault(find(x), []).append(x)
for g in sorted(sorted(m) for m in groups.values()):
    print(" ".join(g))
EOF
}
expected_groups >"$T/groups.ref"
expect_rc 0 "dedup --json" $TO "$BIN/simhash" dedup --json "$C"
python3 - "$T/out" "$T/groups.ref" "$C" <<'EOF' && ok || fail "dedup --json groups differ from the planted ones"
import json, os, sys
groups, fps_ok = [], True
for n, line in enumerate(open(sys.argv[1]), 1):
    o = json.loads(line)
    assert o["group"] == n, o
    assert len(o["files"]) == len(o["fingerprints"]) >= 2, o
    # fingerprints are JSON strings of decimal u64 (exact in every JSON reader)
    assert all(isinstance(v, str) and v.isdigit() and int(v) < 1 << 64 for v in o["fingerprints"]), o
    for f in o["files"]:
        assert f.startswith(sys.argv[3] + "/"), f
        assert os.path.isfile(f), f
    groups.append(" ".join(sorted(os.path.basename(f) for f in o["files"])))
want = [l.rstrip("\n") for l in open(sys.argv[2])]
if sorted(groups) != want:
    print("got:", sorted(groups), "\nwant:", want, file=sys.stderr)
    sys.exit(1)
EOF
has '"'"$C"'/sub/deeper/we\"ird\\name.txt"' "$T/out" "dedup --json escapes quote and backslash"
grep -q 'loop' "$T/out" && fail "dedup followed the symlink loop into duplicates" || ok
grep -q 'link-to-2' "$T/out" && fail "dedup listed a file twice through a link" || ok
has "broken symbolic link" "$T/err" "dedup reports a broken link"
# The human format lists the same groups; -v adds binary fingerprints and distances.
expect_rc 0 "dedup human" $TO "$BIN/simhash" dedup -t 1 "$C"
[ "$(grep -c '^group [0-9]* ([0-9]* files):$' "$T/out")" -eq "$(wc -l <"$T/groups.ref")" ] && ok \
    || fail "dedup human: group count"
has "  $C/doc-0001.txt" "$T/out" "dedup human lists paths"
expect_rc 0 "dedup -v" $TO "$BIN/simhash" dedup -v "$C"
grep -qE '^  [01]{64}  ' "$T/out" && ok || fail "dedup -v: binary fingerprints"
grep -qE '^  distance [0-3]: ' "$T/out" && ok || fail "dedup -v: pair distances"
grep -qE '^  distance ([4-9]|[1-6][0-9]): ' "$T/out" && fail "dedup -v: distance over 3 in a pair of planted near-duplicates" || ok
# A stricter distance separates near-duplicates, identical files still group.
expect_rc 0 "dedup -d 0" $TO "$BIN/simhash" dedup --json -d 0 -b 4 "$C"
python3 - "$T/out" <<'EOF' && ok || fail "dedup -d 0: groups must have one fingerprint each"
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    assert len(set(o["fingerprints"])) == 1, o
EOF
# Distinct files stay apart: two unrelated texts give no group.
mkdir -p "$T/distinct"
cp "$T/one.txt" "$T/two.txt" "$T/three.txt" "$T/distinct/"
expect_rc 0 "dedup distinct" $TO "$BIN/simhash" dedup "$T/distinct"
empty "$T/out" "dedup of distinct files"
# An unreadable file is reported, the rest is still grouped, exit 1.
expect_rc 1 "dedup with unreadable file" $TO "$BIN/simhash" dedup --json "$C" /proc/self/mem
has "/proc/self/mem" "$T/err" "dedup reports the unreadable file"
[ "$(wc -l <"$T/out")" -eq "$(wc -l <"$T/groups.ref")" ] && ok || fail "dedup still groups after a read error"
if [ "$(id -u)" -ne 0 ]; then
    cp "$C/doc-0003.txt" "$T/distinct/locked.txt" && chmod 000 "$T/distinct/locked.txt"
    expect_rc 1 "dedup with a mode-000 file" $TO "$BIN/simhash" dedup "$T/distinct"
    has "Permission denied" "$T/err" "dedup reports permission denied"
    chmod 600 "$T/distinct/locked.txt"
fi
expect_rc 1 "dedup missing path" $TO "$BIN/simhash" dedup "$T/nope"
has "No such file or directory" "$T/err" "dedup missing path message"
expect_rc 2 "dedup no path" $TO "$BIN/simhash" dedup
expect_rc 2 "dedup -b 3 -d 3" $TO "$BIN/simhash" dedup -b 3 -d 3 "$C"
expect_rc 2 "dedup unknown option" $TO "$BIN/simhash" dedup --nope "$C"
$TO "$BIN/simhash" dedup "$C" >/dev/full 2>/dev/null; [ $? -eq 1 ] && ok || fail "dedup to /dev/full"
# Identical files and empty files group together.
mkdir -p "$T/same"
cp "$T/one.txt" "$T/same/a"; cp "$T/one.txt" "$T/same/b"; : >"$T/same/e1"; : >"$T/same/e2"
expect_rc 0 "dedup identical" $TO "$BIN/simhash" dedup --json "$T/same"
[ "$(wc -l <"$T/out")" -eq 2 ] && ok || fail "dedup identical: two groups expected: $(cat "$T/out")"

# ---- input that changes or never ends, special files, odd names ----
# A preloaded shim makes races deterministic: after the first read or mmap of the
# file named in SHIM_SHRINK it truncates that file to 1000 bytes; opening the file
# named in SHIM_FIFO first replaces it by a FIFO; readdir of the directory named in
# SHIM_READDIR_FAIL fails with EIO.
cat >"$T/shim.c" <<'SHIM_EOF'
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
static int fd_is(int fd, const char *want)
{
    char link[64], got[4096];
    if (!want || fd < 0)
        return 0;
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, got, sizeof(got) - 1);
    if (n <= 0)
        return 0;
    got[n] = '\0';
    return strcmp(got, want) == 0;
}
static void maybe_shrink(int fd)
{
    static int done;
    if (!done && fd_is(fd, getenv("SHIM_SHRINK"))) {
        done = 1;
        if (truncate(getenv("SHIM_SHRINK"), 1000) != 0)
            abort();
    }
}
ssize_t read(int fd, void *buf, size_t n)
{
    static ssize_t (*real)(int, void *, size_t);
    if (!real)
        real = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    ssize_t r = real(fd, buf, n);
    if (r > 0)
        maybe_shrink(fd);
    return r;
}
#define MMAP_SHIM(name)                                                        \
    void *name(void *a, size_t len, int prot, int fl, int fd, off_t off)       \
    {                                                                          \
        static void *(*real)(void *, size_t, int, int, int, off_t);            \
        if (!real)                                                             \
            real = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, #name); \
        void *m = real(a, len, prot, fl, fd, off);                             \
        if (m != MAP_FAILED)                                                   \
            maybe_shrink(fd);                                                  \
        return m;                                                              \
    }
MMAP_SHIM(mmap)
MMAP_SHIM(mmap64)
static void maybe_fifo(const char *path)
{
    static int done;
    const char *t = getenv("SHIM_FIFO");
    if (!done && t && strcmp(path, t) == 0) {
        done = 1;
        if (unlink(t) != 0 || mkfifo(t, 0600) != 0)
            abort();
    }
}
#define OPEN_SHIM(name)                                                        \
    int name(const char *path, int flags, ...)                                 \
    {                                                                          \
        static int (*real)(const char *, int, ...);                            \
        va_list ap;                                                            \
        va_start(ap, flags);                                                   \
        int mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, int) : 0;      \
        va_end(ap);                                                            \
        if (!real)                                                             \
            real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, #name);   \
        maybe_fifo(path);                                                      \
        return real(path, flags, mode);                                        \
    }
OPEN_SHIM(open)
OPEN_SHIM(open64)
#define READDIR_SHIM(name, type)                                               \
    type *name(DIR *d)                                                         \
    {                                                                          \
        static type *(*real)(DIR *);                                           \
        if (!real)                                                             \
            real = (type * (*)(DIR *)) dlsym(RTLD_NEXT, #name);                \
        if (fd_is(dirfd(d), getenv("SHIM_READDIR_FAIL"))) {                    \
            errno = EIO;                                                       \
            return NULL;                                                       \
        }                                                                      \
        return real(d);                                                        \
    }
READDIR_SHIM(readdir, struct dirent)
READDIR_SHIM(readdir64, struct dirent64)
SHIM_EOF
SHIM="$T/shim.so"
cc -shared -fPIC -O1 -o "$SHIM" "$T/shim.c" -ldl 2>"$T/err" && ok || fail "building the test shim: $(head -c 300 "$T/err")"
# A file truncated while being read: an error naming the file, never a crash.
for p in simhash-find-all simhash-find-clusters; do
    yes 12345678901234567 | head -c $((8 << 20)) >"$T/shrink.txt"
    expect_rc 1 "$p on a file truncated while read" env LD_PRELOAD="$SHIM" SHIM_SHRINK="$T/shrink.txt" \
        $TO "$BIN/$p" -t 1 -i "$T/shrink.txt"
    has "$p: $T/shrink.txt: changed while reading" "$T/err" "$p truncated file message"
done
yes 12345678901234567 | head -c $((8 << 20)) >"$T/shrink.txt"
expect_rc 1 "compute on a file truncated while read" env LD_PRELOAD="$SHIM" SHIM_SHRINK="$T/shrink.txt" \
    $TO "$BIN/simhash" compute "$T/shrink.txt"
has "changed while reading" "$T/err" "compute truncated file message"
yes 'some words of text' | head -c $((8 << 20)) >"$T/shrink.txt"
expect_rc 1 "fingerprint on a file truncated while read" env LD_PRELOAD="$SHIM" SHIM_SHRINK="$T/shrink.txt" \
    $TO "$BIN/simhash" fingerprint "$T/one.txt" "$T/shrink.txt"
has "simhash fingerprint: $T/shrink.txt: changed while reading" "$T/err" "fingerprint truncated file message"
[ "$(wc -l <"$T/out")" -eq 1 ] && ok || fail "fingerprint prints the other file only: $(cat "$T/out")"
rm -f "$T/shrink.txt"
mkdir -p "$T/shrinkdir"
cp "$T/one.txt" "$T/shrinkdir/a"; cp "$T/one.txt" "$T/shrinkdir/b"
yes 'some words of text' | head -c $((6 << 20)) >"$T/shrinkdir/big"
expect_rc 1 "dedup on a file truncated while read" env LD_PRELOAD="$SHIM" SHIM_SHRINK="$T/shrinkdir/big" \
    $TO "$BIN/simhash" dedup -t 1 "$T/shrinkdir"
has "$T/shrinkdir/big: changed while reading" "$T/err" "dedup truncated file message"
has "group 1 (2 files):" "$T/out" "dedup still groups the other files"
# A listed file replaced by a FIFO before it is fingerprinted: refused, no hang.
rm -f "$T/shrinkdir/big"
cp "$T/two.txt" "$T/shrinkdir/c"
expect_rc 1 "dedup on a file replaced by a FIFO" env LD_PRELOAD="$SHIM" SHIM_FIFO="$T/shrinkdir/c" \
    timeout 20 "$BIN/simhash" dedup -t 1 "$T/shrinkdir"
has "$T/shrinkdir/c: no longer a regular file" "$T/err" "dedup FIFO message"
has "group 1 (2 files):" "$T/out" "dedup still groups after the FIFO"
rm -f "$T/shrinkdir/c"
# A directory that fails to be read is reported, exit 1.
mkdir -p "$T/rd/bad"; cp "$T/one.txt" "$T/rd/bad/x"; cp "$T/one.txt" "$T/rd/y"; cp "$T/one.txt" "$T/rd/z"
expect_rc 1 "dedup with a readdir error" env LD_PRELOAD="$SHIM" SHIM_READDIR_FAIL="$T/rd/bad" \
    $TO "$BIN/simhash" dedup "$T/rd"
has "$T/rd/bad: cannot read directory: Input/output error" "$T/err" "dedup readdir error message"
has "group 1 (2 files):" "$T/out" "dedup groups what it could read"
expect_rc 0 "dedup without the readdir error" $TO "$BIN/simhash" dedup "$T/rd"
has "group 1 (3 files):" "$T/out" "dedup reads the whole tree normally"
# Symbolic link loops and links through a file are broken links: noted, skipped.
mkdir -p "$T/links"; cp "$T/one.txt" "$T/links/a"; cp "$T/one.txt" "$T/links/b"
ln -s loop2 "$T/links/loop1"; ln -s loop1 "$T/links/loop2"; ln -s a/x "$T/links/notdir"
expect_rc 0 "dedup with link loops" $TO "$BIN/simhash" dedup "$T/links"
has "$T/links/loop1: broken symbolic link" "$T/err" "link loop noted"
has "$T/links/notdir: broken symbolic link" "$T/err" "link through a file noted"
has "group 1 (2 files):" "$T/out" "dedup groups around broken links"

# Unbounded or never-ending input fails fast: a bad first line, a line without end.
yes abc | $TO "$BIN/simhash-find-all" >"$T/out" 2>"$T/err"
[ $? -eq 1 ] && ok || fail "yes abc | find-all should exit 1"
has "simhash-find-all: <stdin>:1: not a decimal number: 'abc'" "$T/err" "yes abc message"
for p in simhash-find-all simhash-find-clusters; do
    expect_rc 1 "$p -i /dev/zero" timeout 20 "$BIN/$p" -i /dev/zero
    has "/dev/zero:1: line too long (over 64 bytes)" "$T/err" "$p /dev/zero message"
done
expect_rc 1 "compute /dev/zero" timeout 20 "$BIN/simhash" compute /dev/zero
has "line too long" "$T/err" "compute /dev/zero message"
{ seq 1 3; printf '%065d\n' 7; } >"$T/long.txt"
expect_rc 1 "find-all 65-byte line" $TO "$BIN/simhash-find-all" -i "$T/long.txt"
has ":4: line too long (over 64 bytes)" "$T/err" "65-byte line message"
{ seq 1 3; printf '%064d\r\n' 3; } >"$T/long.txt"
expect_rc 0 "find-all 64-byte line with CRLF" $TO "$BIN/simhash-find-all" -i "$T/long.txt"
has "[3, 3]" "$T/out" "64-byte line read"
# Streaming keeps memory constant: 56 MiB through a pipe and from a file, in less than
# 40 MB of peak RSS (about 6 MB in a Release build, 15 MB under ASan; a reader that held
# the input would need more than the input).
BIG=$((56 << 20))
yes 'a few words of text to fingerprint' | head -c $BIG >"$T/big.ref"
yes 'a few words of text to fingerprint' | head -c $BIG |
    /usr/bin/time -f '%M' -o "$T/rss" $TO_BIG "$BIN/simhash" fingerprint >"$T/out" 2>"$T/err"
a=$(cut -f1 "$T/out")
rss=$(tail -1 "$T/rss")
[ -n "$rss" ] && [ "$rss" -lt 40000 ] && ok || fail "fingerprint of 56 MiB on stdin: peak RSS ${rss} KB (want < 40 MB)"
/usr/bin/time -f '%M' -o "$T/rss" $TO_BIG "$BIN/simhash" fingerprint "$T/big.ref" >"$T/out" 2>"$T/err"
b=$(cut -f1 "$T/out")
[ -n "$a" ] && [ "$a" = "$b" ] && ok || fail "big input: pipe '$a' vs file '$b'"
rss=$(tail -1 "$T/rss")
[ -n "$rss" ] && [ "$rss" -lt 40000 ] && ok || fail "fingerprint of a 56 MiB file: peak RSS ${rss} KB"
/usr/bin/time -f '%M' -o "$T/rss" $TO_BIG "$BIN/simhash" fingerprint --lines <"$T/big.ref" | tail -1 >"$T/out"
rss=$(tail -1 "$T/rss")
[ -n "$rss" ] && [ "$rss" -lt 40000 ] && ok || fail "fingerprint --lines of 56 MiB: peak RSS ${rss} KB"
has ":$(( (BIG + 34) / 35 ))" "$T/out" "--lines counts every line of a big input"
rm -f "$T/big.ref"
# --lines across read blocks: CRLF split between blocks, long lines, no final newline.
python3 - "$T" <<'PY_EOF'
import sys
t = sys.argv[1]
parts = []
for i in range(300):
    parts.append(("word%d " % i) * (i * 37 % 5000) + ("\r\n" if i % 3 else "\n"))
data = "".join(parts) + "tail without newline\r"
open(t + "/blocks.txt", "w", newline="").write(data)
with open(t + "/blocks-lines", "w", newline="") as f:
    for i, l in enumerate(data.split("\n")):
        if l.endswith("\r"):
            l = l[:-1]
        open(t + "/bl-%d" % i, "w", newline="").write(l)
        f.write(t + "/bl-%d\n" % i)
PY_EOF
expect_rc 0 "fingerprint --lines across blocks" $TO "$BIN/simhash" fingerprint --lines "$T/blocks.txt"
cut -f1 "$T/out" >"$T/fp_lines"
xargs -d '\n' $TO "$BIN/simhash" fingerprint <"$T/blocks-lines" | cut -f1 >"$T/fp_files"
[ "$(wc -l <"$T/fp_lines")" -eq 301 ] && ok || fail "--lines across blocks: 301 lines expected"
same_files "$T/fp_lines" "$T/fp_files" "--lines across blocks == each line as a file"
rm -f "$T"/bl-* "$T/blocks.txt"

# File names with control characters stay one entry per line in the text formats.
mkdir -p "$T/oddnames"
cp "$T/one.txt" "$T/oddnames/$(printf 'new\nline')"; cp "$T/one.txt" "$T/oddnames/$(printf 'tab\there\001')"
cp "$T/one.txt" "$T/oddnames/back\\slash"
expect_rc 0 "dedup odd names" $TO "$BIN/simhash" dedup "$T/oddnames"
has "  $T/oddnames/new\\nline" "$T/out" "dedup escapes a newline"
has "  $T/oddnames/tab\\there\\x01" "$T/out" "dedup escapes a tab and \\x01"
has "  $T/oddnames/back\\\\slash" "$T/out" "dedup escapes a backslash"
[ "$(wc -l <"$T/out")" -eq 4 ] && ok || fail "dedup odd names: 4 lines expected: $(cat "$T/out")"
expect_rc 0 "dedup -v odd names" $TO "$BIN/simhash" dedup -v "$T/oddnames"
[ "$(wc -l <"$T/out")" -eq 7 ] && ok || fail "dedup -v odd names: 7 lines expected: $(cat "$T/out")"
expect_rc 0 "dedup --json odd names" $TO "$BIN/simhash" dedup --json "$T/oddnames"
has '/oddnames/new\nline"' "$T/out" "dedup --json keeps JSON escaping"
expect_rc 0 "fingerprint odd names" $TO "$BIN/simhash" fingerprint --lines "$T/oddnames/$(printf 'new\nline')"
printf '%s\t%s\n' "$(head -1 "$T/fp_files_one")" "$T/oddnames/new\\nline:1" >"$T/want"
same_files "$T/out" "$T/want" "fingerprint escapes a newline in the name"

# Usage errors name long options as typed.
expect_rc 2 "--help=3" $TO "$BIN/simhash-find-all" --help=3
has "simhash-find-all: option '--help' doesn't allow an argument" "$T/err" "--help=3 message"
expect_rc 2 "--version=1" $TO "$BIN/simhash-find-clusters" --version=1
has "option '--version' doesn't allow an argument" "$T/err" "--version=1 message"
expect_rc 2 "dedup --blocks" $TO "$BIN/simhash" dedup --blocks
has "simhash dedup: option '--blocks' needs a value" "$T/err" "--blocks message"
expect_rc 2 "find-all --dist (abbreviated, no value)" $TO "$BIN/simhash-find-all" --dist
has "option '--dist' needs a value" "$T/err" "abbreviated long option message"
expect_rc 2 "fingerprint --lines=2" $TO "$BIN/simhash" fingerprint --lines=2
has "option '--lines' doesn't allow an argument" "$T/err" "--lines=2 message"
expect_rc 2 "dedup -b (short)" $TO "$BIN/simhash" dedup -b
has "option '-b' needs a value" "$T/err" "short option message"
expect_rc 2 "dedup --json -zj" $TO "$BIN/simhash" dedup --json -zj "$T/oddnames"
has "unknown option '-z'" "$T/err" "short option inside a cluster after a long option"

# A matching failure (out of memory) leaves an existing output file untouched: 65536
# values in 16 low bits give about 23 million pairs within 3 bits.
python3 -c "print('\n'.join(str(i) for i in range(65536)))" >"$T/dense.txt"
echo "previous content" >"$T/keep.out"
cp "$T/keep.out" "$T/keep.ref"
if { (ulimit -v 400000 && "$BIN/simhash-find-all" --version) >/dev/null 2>&1; } 2>/dev/null; then
    (ulimit -v 400000 && exec $TO "$BIN/simhash-find-all" -t 1 -i "$T/dense.txt" -o "$T/keep.out") >/dev/null 2>"$T/err"
else   # a sanitizer build cannot run under ulimit -v: cap its allocations instead
    ASAN_OPTIONS="allocator_may_return_null=1:max_allocation_size_mb=64:${ASAN_OPTIONS:-}" \
        $TO "$BIN/simhash-find-all" -t 1 -i "$T/dense.txt" -o "$T/keep.out" >/dev/null 2>"$T/err"
fi
rc=$?
[ "$rc" -eq 1 ] && ok || fail "find-all out of memory: exit $rc, wanted 1: $(head -c 300 "$T/err")"
has "out of memory" "$T/err" "find-all out of memory message"
same_files "$T/keep.out" "$T/keep.ref" "a failed find-all leaves its output file untouched"

# simhash-find-all / -clusters: numbers by default (as simhash-cpp), --json-strings,
# --unique (simhash-cpp's treatment of repeated values)
printf '5\n5\n7\n18446744073709551615\n18446744073709551614\n' >"$T/rep.txt"
expect_rc 0 "find-all repeats" $TO "$BIN/simhash-find-all" -i "$T/rep.txt"
[ "$(cat "$T/out")" = "$(printf '[5, 5]\n[5, 7]\n[18446744073709551614, 18446744073709551615]')" ] && ok || fail "find-all: [a, a] for a repeated value"
expect_rc 0 "find-all --unique --json-strings" $TO "$BIN/simhash-find-all" --unique --json-strings -i "$T/rep.txt"
[ "$(cat "$T/out")" = "$(printf '["5", "7"]\n["18446744073709551614", "18446744073709551615"]')" ] && ok || fail "find-all --unique --json-strings: $(cat "$T/out")"
expect_rc 0 "find-clusters --unique" $TO "$BIN/simhash-find-clusters" --unique -i "$T/rep.txt"
[ "$(cat "$T/out")" = "$(printf '[5, 7]\n[18446744073709551614, 18446744073709551615]')" ] && ok || fail "find-clusters --unique: $(cat "$T/out")"
expect_rc 0 "simhash find-clusters repeats" $TO "$BIN/simhash" find-clusters -i "$T/rep.txt"
[ "$(cat "$T/out")" = "$(printf '[5, 5, 7]\n[18446744073709551614, 18446744073709551615]')" ] && ok || fail "find-clusters keeps repeats: $(cat "$T/out")"

echo "test_cli: $CHECKS checks passed, $FAILS failed"
[ "$FAILS" -eq 0 ]
