#!/usr/bin/env bash
# test_bigbatch.sh: find-all / find-clusters within a memory budget. A tiny --memory
# forces the spilling path (many partitions per table, pair runs merged): its pairs
# and clusters equal brute force on planted near-duplicates (0..k and k+1 flipped
# bits) for several (blocks, distance), in text and binary, and equal the in-memory
# path on a larger input; clusters whose values exceed --memory (chains, large
# clusters) are built on disk and equal the in-memory ones; bad input and resources (a truncated binary file, an
# unusable or full --tmpdir, --memory too small to make progress) give a clear error,
# leave no temporary files and no partial output; SIGINT too.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
th_init bigbatch
th_need_bins simhash-find-all simhash-find-clusters simhash
FA="$TH_BIN/simhash-find-all"
FC="$TH_BIN/simhash-find-clusters"
T="$TH_DIR/tmp"
mkdir -p "$T"
ok() { th_log "ok: $*"; }
no_temps() {  # nothing of ours left in the temporary directory or beside the output
    [ -z "$(ls -A "$T")" ] || th_fail "$1: temporary files left in --tmpdir: $(ls -A "$T")"
    ls "$TH_DIR"/*.tmp.* >/dev/null 2>&1 && th_fail "$1: a temporary output was left: $(ls "$TH_DIR"/*.tmp.*)"
    return 0
}

# ---- exactness against brute force, spilling forced by --memory 64k ----
python3 - "$TH_DIR" <<'PYEOF'
import random, struct, sys
d = sys.argv[1]
r = random.Random(11)
vals = []
for i in range(3000):
    if i % 4 == 3:
        v = vals[r.randrange(len(vals))]
        for b in r.sample(range(64), r.randrange(0, 6)):    # 0..5 flips: k, k+1 and beyond
            v ^= 1 << b
        vals.append(v)
    else:
        vals.append(r.getrandbits(64))
open(d + "/p.txt", "w").write("".join("%d\n" % v for v in vals))
open(d + "/p.bin", "wb").write(b"".join(struct.pack("<Q", v) for v in vals))
PYEOF
# The expected pairs and clusters at every distance up to 3, from one brute-force pass
# over all pairs (distances up to 3 noted once, not one pass per distance: each pass is
# seconds of Python): bf-K.pairs and bf-K.clusters for K in 0..3.
python3 - "$TH_DIR/p.txt" 3 "$TH_DIR/bf" <<'PYEOF'
import sys
vals = [int(l) for l in open(sys.argv[1])]
kmax = int(sys.argv[2])
u = sorted(set(vals))
count = {}
for v in vals:
    count[v] = count.get(v, 0) + 1
near = []                                   # (a, b, distance) with a < b, distance <= kmax
for i, a in enumerate(u):
    for b in u[i + 1:]:
        d = bin(a ^ b).count("1")
        if d <= kmax:
            near.append((a, b, d))
parent = {}
def find(x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x
for k in range(kmax + 1):
    pairs = [(v, v) for v in u if count[v] > 1]
    parent = {v: v for v in u}
    for a, b, d in near:
        if d <= k:
            pairs.append((a, b))
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    pairs.sort()
    open("%s-%d.pairs" % (sys.argv[3], k), "w").write("".join("[%d, %d]\n" % p for p in pairs))
    groups = {}
    for v in u:
        groups.setdefault(find(v), []).extend([v] * count[v])
    cl = sorted(sorted(g) for g in groups.values() if len(g) >= 2)
    open("%s-%d.clusters" % (sys.argv[3], k), "w").write(
        "".join("[" + ", ".join(map(str, c)) + "]\n" for c in cl))
PYEOF
brute() {  # brute BLOCKS DISTANCE: the expected pairs and clusters in bf.pairs, bf.clusters
    cp "$TH_DIR/bf-$2.pairs" "$TH_DIR/bf.pairs" && cp "$TH_DIR/bf-$2.clusters" "$TH_DIR/bf.clusters" ||
        th_fail "no brute-force answer at distance $2"
}
bin2txt() {  # bin2txt FILE pairs|clusters
    python3 - "$1" "$2" <<'PYEOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
out, i = [], 0
if sys.argv[2] == "pairs":
    for i in range(0, len(d), 16):
        out.append("[%d, %d]\n" % struct.unpack("<QQ", d[i:i + 16]))
else:
    while i < len(d):
        (n,) = struct.unpack("<Q", d[i:i + 8])
        vs = struct.unpack("<%dQ" % n, d[i + 8:i + 8 + 8 * n])
        out.append("[" + ", ".join(map(str, vs)) + "]\n")
        i += 8 + 8 * n
sys.stdout.write("".join(out))
PYEOF
}
for s in "6 3" "4 3" "8 2" "5 1" "3 0"; do
    set -- $s
    brute "$1" "$2"
    [ -s "$TH_DIR/bf.pairs" ] || th_fail "no planted pairs at blocks $1 distance $2"
    timeout 120 "$FA" -b "$1" -d "$2" --memory 64k --tmpdir "$T" -i "$TH_DIR/p.txt" -o "$TH_DIR/x.pairs" -v \
        2>"$TH_DIR/v.err" || th_fail "find-all -b $1 -d $2 --memory 64k: $(cat "$TH_DIR/v.err")"
    grep -q 'spilled by table and partition' "$TH_DIR/v.err" || th_fail "--memory 64k did not spill: $(cat "$TH_DIR/v.err")"
    cmp -s "$TH_DIR/x.pairs" "$TH_DIR/bf.pairs" || th_fail "spilled pairs differ from brute force at -b $1 -d $2: $(diff "$TH_DIR/x.pairs" "$TH_DIR/bf.pairs" | head -5)"
    timeout 120 "$FC" -b "$1" -d "$2" --memory 64k --tmpdir "$T" -i "$TH_DIR/p.txt" -o "$TH_DIR/x.cl" ||
        th_fail "find-clusters -b $1 -d $2 --memory 64k"
    cmp -s "$TH_DIR/x.cl" "$TH_DIR/bf.clusters" || th_fail "spilled clusters differ from brute force at -b $1 -d $2"
    timeout 120 "$FA" -b "$1" -d "$2" --memory 64k --tmpdir "$T" --format binary -i "$TH_DIR/p.bin" -o "$TH_DIR/x.bin" ||
        th_fail "binary find-all -b $1 -d $2"
    [ "$(bin2txt "$TH_DIR/x.bin" pairs)" = "$(cat "$TH_DIR/bf.pairs")" ] || th_fail "binary pairs differ at -b $1 -d $2"
    timeout 120 "$FC" -b "$1" -d "$2" --memory 64k --tmpdir "$T" --format binary -i "$TH_DIR/p.bin" -o "$TH_DIR/x.clb" ||
        th_fail "binary find-clusters -b $1 -d $2"
    [ "$(bin2txt "$TH_DIR/x.clb" clusters)" = "$(cat "$TH_DIR/bf.clusters")" ] || th_fail "binary clusters differ at -b $1 -d $2"
    no_temps "-b $1 -d $2"
    ok "blocks $1 distance $2: spilled pairs and clusters = brute force ($(wc -l <"$TH_DIR/bf.pairs") pairs), text and binary"
done
# binary from a pipe, and --unique
cat "$TH_DIR/p.bin" | timeout 120 "$FA" --memory 64k --tmpdir "$T" --format binary -i - -o "$TH_DIR/x.bin" ||
    th_fail "binary input from a pipe"
brute 6 3
[ "$(bin2txt "$TH_DIR/x.bin" pairs)" = "$(cat "$TH_DIR/bf.pairs")" ] || th_fail "binary input from a pipe: pairs differ"
"$FA" --unique -i "$TH_DIR/p.txt" -o "$TH_DIR/u.mem"
"$FA" --unique --memory 64k --tmpdir "$T" -i "$TH_DIR/p.txt" -o "$TH_DIR/u.ext"
cmp -s "$TH_DIR/u.mem" "$TH_DIR/u.ext" || th_fail "--unique: spilled and in-memory differ"
grep -q '^\[\([0-9]*\), \1\]$' "$TH_DIR/u.ext" && th_fail "--unique listed [a, a]"
ok "binary input from a pipe; --unique spilled = in memory"

# ---- a larger input: spilled = in memory (text and binary) ----
python3 - "$TH_DIR" <<'PYEOF'
import os, random, struct, sys
r = random.Random(3)
vals = []
for i in range(150000):
    v = r.getrandbits(64) if i % 5 or not vals else vals[r.randrange(len(vals))] ^ (1 << r.randrange(64))
    vals.append(v)
open(sys.argv[1] + "/big.txt", "w").write("".join("%d\n" % v for v in vals))
open(sys.argv[1] + "/big.bin", "wb").write(b"".join(struct.pack("<Q", v) for v in vals))
PYEOF
"$FA" -i "$TH_DIR/big.txt" -o "$TH_DIR/big.mem"
"$FA" --memory 1m --tmpdir "$T" -i "$TH_DIR/big.txt" -o "$TH_DIR/big.ext"
cmp -s "$TH_DIR/big.mem" "$TH_DIR/big.ext" || th_fail "150k: spilled pairs differ from in-memory"
"$FC" -i "$TH_DIR/big.txt" -o "$TH_DIR/bigc.mem"
"$FC" --memory 1m --tmpdir "$T" --format binary -i "$TH_DIR/big.bin" -o "$TH_DIR/bigc.bin"
[ "$(bin2txt "$TH_DIR/bigc.bin" clusters)" = "$(cat "$TH_DIR/bigc.mem")" ] || th_fail "150k: spilled clusters differ"
no_temps "150k"
ok "150k values: spilled = in memory ($(wc -l <"$TH_DIR/big.mem") pairs)"

# ---- clusters on disk: more values in pairs than --memory holds ----
# long chains (random walks of 2-bit steps, endpoints far apart), a chain in ascending
# order (Gray codes: neighbours 1 bit apart), a few large clusters, noise and repeats
python3 - "$TH_DIR" <<'PYEOF'
import random, struct, sys
d = sys.argv[1]
r = random.Random(7)
vals = []
def flip(v, k):
    for b in r.sample(range(64), k):
        v ^= 1 << b
    return v
for c in range(150):
    v = r.getrandbits(64)
    for i in range(120):
        vals.append(v)
        v = flip(v, 2)
base = r.getrandbits(20)
for i in range(1500):
    vals.append(((i ^ (i >> 1)) << 44) | base)
for c in range(4):
    cv = r.getrandbits(64)
    for i in range(800):
        vals.append(flip(cv, r.randrange(0, 4)))
for i in range(8000):
    vals.append(r.getrandbits(64))
for i in range(300):
    vals.append(vals[r.randrange(len(vals))])
r.shuffle(vals)
open(d + "/ch.txt", "w").write("".join("%d\n" % v for v in vals))
open(d + "/ch.bin", "wb").write(b"".join(struct.pack("<Q", v) for v in vals))
PYEOF
"$FC" -i "$TH_DIR/ch.txt" -o "$TH_DIR/ch.mem" -v 2>"$TH_DIR/v.err" || th_fail "chains in memory"
grep -q 'in memory' "$TH_DIR/v.err" || th_fail "chains: the reference run did not stay in memory: $(cat "$TH_DIR/v.err")"
[ "$(awk -F, 'NF > m { m = NF } END { print m }' "$TH_DIR/ch.mem")" -ge 1000 ] || th_fail "chains: no large cluster"
for mem in 64k 1m; do
    for t in 1 2; do
        timeout 120 "$FC" --memory $mem -t $t --tmpdir "$T" -i "$TH_DIR/ch.txt" -o "$TH_DIR/ch.ext" -v \
            2>"$TH_DIR/v.err" || th_fail "chains --memory $mem -t $t: $(cat "$TH_DIR/v.err")"
        grep -q 'rounds of star contraction' "$TH_DIR/v.err" ||
            th_fail "chains --memory $mem: clusters were not built on disk: $(cat "$TH_DIR/v.err")"
        grep -q " $(wc -l <"$TH_DIR/ch.mem") clusters;" "$TH_DIR/v.err" ||
            th_fail "chains --memory $mem: -v cluster count: $(cat "$TH_DIR/v.err")"
        cmp -s "$TH_DIR/ch.ext" "$TH_DIR/ch.mem" ||
            th_fail "chains --memory $mem -t $t: clusters on disk differ from in memory: $(diff "$TH_DIR/ch.ext" "$TH_DIR/ch.mem" | head -3)"
        no_temps "chains --memory $mem -t $t"
    done
done
timeout 120 "$FC" --memory 64k --tmpdir "$T" --format binary -i "$TH_DIR/ch.bin" -o "$TH_DIR/ch.bext" ||
    th_fail "chains binary --memory 64k"
[ "$(bin2txt "$TH_DIR/ch.bext" clusters)" = "$(cat "$TH_DIR/ch.mem")" ] || th_fail "chains: binary clusters on disk differ"
"$FC" --format binary -i "$TH_DIR/ch.bin" -o "$TH_DIR/ch.bmem"
cmp -s "$TH_DIR/ch.bext" "$TH_DIR/ch.bmem" || th_fail "chains: binary output differs between the paths"
for o in --unique --json-strings; do
    "$FC" $o -i "$TH_DIR/ch.txt" -o "$TH_DIR/ch.omem"
    timeout 120 "$FC" $o --memory 64k --tmpdir "$T" -i "$TH_DIR/ch.txt" -o "$TH_DIR/ch.oext" ||
        th_fail "chains $o --memory 64k"
    cmp -s "$TH_DIR/ch.omem" "$TH_DIR/ch.oext" || th_fail "chains $o: clusters on disk differ from in memory"
done
no_temps "chains"
# an error while the clusters are built (a file size limit: the pairs pass, the edge
# file does not): exit 1, a message, nothing left, the output untouched
echo keep >"$TH_DIR/out"
(trap '' XFSZ; ulimit -f 5000; timeout 120 "$FC" --memory 64k --tmpdir "$T" -i "$TH_DIR/ch.txt" \
    -o "$TH_DIR/out" -v 2>"$TH_DIR/e.err"; echo $? >"$TH_DIR/e.rc")
[ "$(cat "$TH_DIR/e.rc")" = 1 ] || th_fail "clusters, file size limit: exit $(cat "$TH_DIR/e.rc"): $(cat "$TH_DIR/e.err")"
grep -q 'File too large' "$TH_DIR/e.err" || th_fail "clusters, file size limit: $(cat "$TH_DIR/e.err")"
[ "$(cat "$TH_DIR/out")" = keep ] || th_fail "clusters, file size limit: the existing output was changed"
no_temps "clusters, file size limit"
# SIGINT while the clusters are built (seen by the edge file among its open files;
# through timeout, which passes it on: a background job of a script ignores SIGINT)
python3 - "$TH_DIR" <<'PYEOF'
import random, struct, sys
r = random.Random(9)
out = []
for c in range(8):      # 8 dense clusters of Gray codes: millions of pairs
    base = r.getrandbits(64)
    out += [((i ^ (i >> 1)) << 20) ^ base for i in range(2500)]
r.shuffle(out)
open(sys.argv[1] + "/gray.bin", "wb").write(b"".join(struct.pack("<Q", v) for v in out))
PYEOF
timeout 120 "$FC" --format binary --memory 256k --tmpdir "$T" -i "$TH_DIR/gray.bin" -o "$TH_DIR/int.out" 2>/dev/null &
pid=$!
seen=0
for i in $(seq 1 6000); do
    cpid=$(pgrep -P "$pid" | head -1)   # timeout's child: the program
    if [ -n "$cpid" ] && ls -l "/proc/$cpid/fd" 2>/dev/null | grep -q simhash-edges; then
        seen=1
        kill -INT "$pid"
        break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
done
[ "$seen" = 1 ] || kill -INT "$pid" 2>/dev/null    # not seen within a minute
wait "$pid"
rc=$?
[ "$seen" = 1 ] || th_fail "the clusters phase was not seen before the run ended (exit $rc)"
[ "$rc" -ne 0 ] || th_fail "the run interrupted while building clusters exited 0"
[ ! -e "$TH_DIR/int.out" ] || th_fail "a run interrupted while building clusters left its output"
no_temps "SIGINT while building clusters"
ok "clusters on disk (chains, a sorted chain, large clusters, repeats): = in memory, text and binary, --unique, --json-strings, -t 1 and 2; an error and SIGINT leave nothing"

# ---- bad input and resources ----
echo keep >"$TH_DIR/out"
expect_fail() {  # expect_fail RC PATTERN CMD...: exit RC, stderr matching, out untouched
    local want=$1 pat=$2 rc
    shift 2
    timeout 120 "$@" >"$TH_DIR/e.out" 2>"$TH_DIR/e.err"
    rc=$?
    [ "$rc" -eq "$want" ] || th_fail "$*: exit $rc, wanted $want: $(cat "$TH_DIR/e.err")"
    grep -Eq -- "$pat" "$TH_DIR/e.err" || th_fail "$*: message lacks /$pat/: $(cat "$TH_DIR/e.err")"
    [ "$(cat "$TH_DIR/out")" = keep ] || th_fail "$*: the existing output was changed"
    no_temps "$*"
}
head -c 20 "$TH_DIR/p.bin" >"$TH_DIR/trunc.bin"
expect_fail 1 'truncated binary input: 20 bytes' "$FA" --format binary --tmpdir "$T" -i "$TH_DIR/trunc.bin" -o "$TH_DIR/out"
head -c 20 "$TH_DIR/p.bin" | expect_fail 1 'truncated binary input: 4 bytes after the last whole' \
    "$FA" --format binary --tmpdir "$T" -i - -o "$TH_DIR/out"
printf '1\n2\nx3\n' >"$TH_DIR/bad.txt"
expect_fail 1 'bad.txt:3: ' "$FA" --memory 64k --tmpdir "$T" -i "$TH_DIR/bad.txt" -o "$TH_DIR/out"
expect_fail 2 'tmpdir .*No such file' "$FA" --tmpdir "$TH_DIR/nope" -i "$TH_DIR/p.txt" -o "$TH_DIR/out"
mkdir -p "$TH_DIR/ro"; chmod 555 "$TH_DIR/ro"
if [ "$(id -u)" -ne 0 ]; then
    expect_fail 2 'not writable' "$FA" --tmpdir "$TH_DIR/ro" -i "$TH_DIR/p.txt" -o "$TH_DIR/out"
fi
touch "$TH_DIR/afile"
expect_fail 2 'not a directory' "$FA" --tmpdir "$TH_DIR/afile" -i "$TH_DIR/p.txt" -o "$TH_DIR/out"
expect_fail 2 'expected a size of at least 64k' "$FA" --memory 10k -i "$TH_DIR/p.txt" -o "$TH_DIR/out"
expect_fail 2 "expected text or binary" "$FA" --format csv -i "$TH_DIR/p.txt" -o "$TH_DIR/out"
python3 -c 'import sys; sys.stdout.write("12345\n" * 40000)' >"$TH_DIR/same.txt"
expect_fail 1 'memory too small to make progress' "$FA" --memory 64k --tmpdir "$T" -i "$TH_DIR/same.txt" -o "$TH_DIR/out"
ok "truncated binary, a parse error, bad --tmpdir / --memory / --format, --memory too small: clear errors, output untouched"

# a full disk: a 1 MiB tmpfs as --tmpdir, in a private mount namespace
if unshare -m --propagation private true 2>/dev/null; then
    cat >"$TH_DIR/full.sh" <<EOF
mkdir -p "$TH_DIR/tiny"
mount -t tmpfs -o size=1m tmpfs "$TH_DIR/tiny" || exit 99
timeout 120 "$FA" --memory 1m --tmpdir "$TH_DIR/tiny" -i "$TH_DIR/big.txt" -o "$TH_DIR/out" 2>"$TH_DIR/full.err"
echo \$? >"$TH_DIR/full.rc"
ls -A "$TH_DIR/tiny" >"$TH_DIR/full.left"
EOF
    timeout 200 unshare -m --propagation private bash "$TH_DIR/full.sh"
    [ "$(cat "$TH_DIR/full.rc")" = 1 ] || th_fail "full --tmpdir: exit $(cat "$TH_DIR/full.rc"): $(cat "$TH_DIR/full.err")"
    grep -q 'No space left on device' "$TH_DIR/full.err" || th_fail "full --tmpdir message: $(cat "$TH_DIR/full.err")"
    [ ! -s "$TH_DIR/full.left" ] || th_fail "full --tmpdir: files left: $(cat "$TH_DIR/full.left")"
    [ "$(cat "$TH_DIR/out")" = keep ] || th_fail "full --tmpdir: the existing output was changed"
    ok "a full --tmpdir: 'No space left on device', exit 1, nothing left, output untouched"
else
    th_fail "unshare -m is needed for the full-disk check (run as root)"
fi

# ---- SIGINT in the middle: no temporary files, no output ----
python3 -c 'import os, sys; sys.stdout.buffer.write(os.urandom(8 * 3000000))' >"$TH_DIR/r.bin"
timeout 120 "$FA" --format binary --memory 1m --tmpdir "$T" -i "$TH_DIR/r.bin" -o "$TH_DIR/int.out" 2>/dev/null &
pid=$!
sleep 0.5
kill -INT "$pid" 2>/dev/null
wait "$pid"
rc=$?
[ "$rc" -ne 0 ] || th_fail "the interrupted run finished before SIGINT (make the input larger)"
[ ! -e "$TH_DIR/int.out" ] || th_fail "an interrupted run left its output"
no_temps "SIGINT"
ok "SIGINT: exit $rc, no output, no temporary files"

# ---- the whole pipeline without decimal text: fingerprint --format binary --names ----
mkdir -p "$TH_DIR/docs"
for i in 1 2 3 4 5; do
    printf 'document %s about the same subject with many shared words in it\n' "$((i % 3))" >"$TH_DIR/docs/d$i.txt"
done
(cd "$TH_DIR" && "$TH_BIN/simhash" fingerprint --format binary --names names.txt docs/*.txt >fps.bin) ||
    th_fail "simhash fingerprint --format binary"
[ "$(stat -c %s "$TH_DIR/fps.bin")" = 40 ] || th_fail "5 documents should give 40 bytes: $(stat -c %s "$TH_DIR/fps.bin")"
[ "$(cat "$TH_DIR/names.txt")" = "$(printf 'docs/d1.txt\ndocs/d2.txt\ndocs/d3.txt\ndocs/d4.txt\ndocs/d5.txt')" ] ||
    th_fail "names file: $(cat "$TH_DIR/names.txt")"
(cd "$TH_DIR" && "$TH_BIN/simhash" fingerprint docs/*.txt | cut -f1 >fps.txt)
"$FC" --format binary -i "$TH_DIR/fps.bin" -o "$TH_DIR/pipe.cl" || th_fail "find-clusters on the binary fingerprints"
[ "$(bin2txt "$TH_DIR/pipe.cl" clusters)" = "$("$FC" -i "$TH_DIR/fps.txt")" ] ||
    th_fail "binary pipeline clusters differ from the text pipeline's"
ok "text -> binary fingerprints (+ names) -> clusters, the same as through decimal text"
th_log "all big-batch checks passed"
