#!/usr/bin/env python3
"""bench/quality/bptable.py [--kgrams BIN] [--out FILE] [--half 0|1] [--reindex]: builds
the known-boilerplate table of fingerprint algorithm v5 (common/core/fp_bp_table.inc)
from Debian-packaged text, and names the files it was built from
(bench/quality/boilerplate.py evaluates on the others). --reindex rewrites only the
filter beside the checked-in table, from its own rows.

The table is every word K-gram (bench-kgrams: v5's own tokens and K-gram hashes) of the
license texts in /usr/share/common-licenses, and every K-gram found in at least two of
the distinct /usr/share/doc/*/copyright files of half 0 (files split in halves by a hash
of their path, as bench/quality/weights.py does). It is generated once and checked in:
v5 fingerprints must not depend on the files of the machine they are computed on, so
the build never runs this. A new table is a new algorithm version (docs/fingerprint.md
"Algorithm v5: text"; the table was first shipped with the removed v4)."""
import argparse
import collections
import glob
import hashlib
import os
import re
import subprocess

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TABLE_VERSION = 1


def copyright_files():
    """The distinct copyright files of at least 50 words, and each one's half (0, 1)."""
    seen, paths = set(), []
    for f in sorted(glob.glob("/usr/share/doc/*/copyright")):
        data = open(f, "rb").read()
        k = hashlib.sha256(data).digest()
        if k in seen or len(data.decode("utf-8", "replace").split()) < 50:
            continue
        seen.add(k)
        paths.append(f)
    return paths, [hashlib.sha256(f.encode()).digest()[0] & 1 for f in paths]


def common_licenses():
    out = []
    for f in sorted(glob.glob("/usr/share/common-licenses/*")):
        r = os.path.realpath(f)
        if os.path.isfile(r) and r not in out:
            out.append(r)
    return out


def kgrams(binary, paths):
    """{path: set of K-gram hashes}"""
    out = {}
    for i in range(0, len(paths), 200):
        r = subprocess.run([binary, *paths[i:i + 200]], check=True, capture_output=True, text=True)
        for line in r.stdout.splitlines():
            path, _, hs = line.partition("\t")
            out[path] = {int(x, 16) for x in hs.split()}
    return out


# The filter beside the table (fp_bp.h has the same constants):
FILTER_WORD_BITS = 13   # fpbp_filter: 2^13 words of 64 bits (64 KiB)
FILTER_K = 3            # bits set per entry, all in the word its low 13 bits name


def filter_bits(h):
    """(word, [bit, ...]) of hash h in fpbp_filter."""
    x = h >> FILTER_WORD_BITS
    return h & ((1 << FILTER_WORD_BITS) - 1), [(x >> (6 * i)) & 63 for i in range(FILTER_K)]


def write_inc(out, header, rows):
    """fp_bp_table.inc: the sorted table rows and their filter."""
    with open(out, "w") as f:
        f.write(header)
        f.write("#define FPBP_TABLE_VERSION %d\n" % TABLE_VERSION)
        f.write("static const uint64_t fpbp_table[%d] = {\n" % len(rows))
        for i in range(0, len(rows), 3):
            f.write("   " + "".join(" 0x%016xu," % h for h in rows[i:i + 3]) + "\n")
        f.write("};\n")
        # fpbp_filter: FILTER_K bits of one word set for every entry: ordinary text's
        # K-grams pass with a chance of about 1.2% (one cache line read)
        words = [0] * (1 << FILTER_WORD_BITS)
        for h in rows:
            w, bits = filter_bits(h)
            for b in bits:
                words[w] |= 1 << b
        f.write("const uint64_t fpbp_filter[%d] = {\n" % len(words))
        for i in range(0, len(words), 4):
            f.write("   " + "".join(" 0x%xu," % x for x in words[i:i + 4]) + "\n")
        f.write("};\n")


def reindex(path):
    """Rewrites the filter of the checked-in table (same header and rows)."""
    text = open(path).read()
    header = text[:text.index("#define FPBP_TABLE_VERSION")]
    body = text[text.index("fpbp_table["):]
    rows = [int(x, 16) for x in re.findall(r"0x([0-9a-f]{16})u", body[:body.index("};")])]
    assert rows == sorted(set(rows)) and rows[0] != 0, "sorted, no repeats, no 0 (fp_bp.c)"
    write_inc(path, header, rows)
    print("%d K-grams reindexed -> %s" % (len(rows), path))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kgrams", default=os.path.join(ROOT, "build", "bin", "bench-kgrams"))
    ap.add_argument("--out", default=os.path.join(ROOT, "common", "core", "fp_bp_table.inc"))
    ap.add_argument("--half", type=int, choices=(0, 1), default=0,
                    help="the half of the copyright files to take K-grams from (the checked-in "
                    "table: 0; 1 only to measure half 0 held out, never to ship)")
    ap.add_argument("--reindex", action="store_true",
                    help="only rewrite the filter of the table in --out (same rows)")
    a = ap.parse_args()
    if a.reindex:
        reindex(a.out)
        return
    cl = common_licenses()
    paths, half = copyright_files()
    train = [p for p, h in zip(paths, half) if h == a.half]
    table = set().union(*kgrams(a.kgrams, cl).values())
    n_cl = len(table)
    count = collections.Counter()
    for s in kgrams(a.kgrams, train).values():
        count.update(s)
    table |= {h for h, c in count.items() if c >= 2}
    rows = sorted(table)
    header = ("/* fp_bp_table.inc: the known-boilerplate table of fingerprint algorithm v5\n"
              " * (fp_bp.h), generated by bench/quality/bptable.py: do not edit. Version %d:\n"
              " * %d word 6-gram hashes, %d of them from %d texts of\n"
              " * /usr/share/common-licenses, the rest found in at least 2 of %d distinct\n"
              " * /usr/share/doc/PACKAGE/copyright files (half %d of %d; Debian 12). Sorted. */\n"
              % (TABLE_VERSION, len(rows), n_cl, len(cl), len(train), a.half, len(paths)))
    write_inc(a.out, header, rows)
    print("%d K-grams (%d from %d common licenses, %d shared by >= 2 of %d copyright files) -> %s"
          % (len(rows), n_cl, len(cl), len(rows) - n_cl, len(train), a.out))


if __name__ == "__main__":
    main()
