#!/usr/bin/env python3
"""bench/quality/boilerplate.py [--simhash BIN]: algorithm v5's boilerplate weights
measured with the library's own fingerprints (`simhash fingerprint --algorithm A`),
v1 and v5 in one run (the unweighted features they were measured against, the removed
v2 and v3, are in git history with their figures):

* license pairs: the distinct /usr/share/doc/*/copyright files (texts sharing license
  boilerplate), pairs with word 3-shingle J < 0.3 within 3 bits. v5's table
  (bench/quality/bptable.py) holds K-grams shared by copyright files of half 0, so the
  held-out figure is the pairs within half 1; the pairs within half 0 and over all
  files are printed too, marked as overlapping the table's sources.
* edited copies: the 300 evaluation documents of bench/quality/weights.py (real text,
  every second document of tests/tools/site_templates.py, the first 3,000 words) with
  1%, 3% and 10% of words replaced, inserted or deleted (the same seeded edits):
  recall within 3 bits, and unrelated pairs (J < 0.3) within 3 bits.
* edited licenses: the held-out copyright files with 3% of words edited: recall within
  3 bits (boilerplate-heavy text, where v5 weighs most of the features down).

--table-half 1 labels a run with a library built with `bptable.py --half 1` (half 0
then held out); the checked-in table is half 0's.

Minutes; bench/quality/README.md "Algorithm v4" has the figures (v4's text
fingerprints are v5's)."""
import argparse
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
sys.path.insert(0, HERE)
import bptable  # noqa: E402
import site_templates as st  # noqa: E402
from templates import fingerprints  # noqa: E402

ALGS = ("v1", "v5")
TOK = st.WORD


def toks(text):
    return [t.lower() for t in TOK.findall(text)]


def edit(rng, vocab, tk, p):
    """tk with round(p * len) random edits (replace, insert, delete a word), as
    weights.py edits."""
    tk = list(tk)
    for _ in range(max(1, round(p * len(tk)))):
        i = rng.randrange(len(tk))
        op = rng.randrange(3)
        if op == 0:
            tk[i] = rng.choice(vocab)
        elif op == 1:
            tk.insert(i, rng.choice(vocab))
        elif len(tk) > 1:
            del tk[i]
    return tk


def close_pairs(fps, sh, idx):
    """Pairs of idx within 3 bits whose texts have J < 0.3."""
    return sum(1 for a, i in enumerate(idx) for j in idx[a + 1:]
               if (fps[i] ^ fps[j]).bit_count() <= 3 and st.jaccard(sh[i], sh[j]) < 0.3)


def write_all(tmp, name, texts):
    paths = []
    for i, t in enumerate(texts):
        p = os.path.join(tmp, "%s%05d.txt" % (name, i))
        with open(p, "w", encoding="utf-8") as f:
            f.write(t)
        paths.append(p)
    return paths


def fp_all(simhash, paths):
    return {a: fingerprints(simhash, paths, "--text", "--algorithm", a) for a in ALGS}


def licenses(simhash, table_half):
    """Prints the license pairs; returns the held-out files."""
    paths, half = bptable.copyright_files()
    sh = [st.shingles(open(p, "rb").read().decode("utf-8", "replace").split()) for p in paths]
    fps = fp_all(simhash, paths)
    out, src = 1 - table_half, table_half
    idx = [[i for i in range(len(paths)) if half[i] == x] for x in (0, 1)]
    for a in ALGS:
        print("license %s: %d copyright files: J<0.3 within 3 bits: half %d (held out, %d files) %d; "
              "half %d (table source, %d files) %d; all %d"
              % (a, len(paths), out, len(idx[out]), close_pairs(fps[a], sh, idx[out]), src,
                 len(idx[src]), close_pairs(fps[a], sh, idx[src]),
                 close_pairs(fps[a], sh, list(range(len(paths))))), flush=True)
    return [paths[i] for i in idx[out]]


def recall(simhash, tmp, name, orig_tk, vocab, rates):
    rng = random.Random(1)
    copies = {p: [edit(rng, vocab, t, p) for t in orig_tk] for p in rates}
    orig = fp_all(simhash, write_all(tmp, name, [" ".join(t) for t in orig_tk]))
    rec = {}
    for p in rates:
        cf = fp_all(simhash, write_all(tmp, "%s%g_" % (name, p), [" ".join(t) for t in copies[p]]))
        rec[p] = {a: sum((x ^ y).bit_count() <= 3 for x, y in zip(cf[a], orig[a])) / len(orig_tk)
                  for a in ALGS}
    return orig, rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--simhash", default=os.path.join(ROOT, "build", "bin", "simhash"))
    ap.add_argument("--table-half", type=int, choices=(0, 1), default=0,
                    help="the half the library's table was built from (bptable.py --half)")
    a = ap.parse_args()
    held = licenses(a.simhash, a.table_half)
    docs = st.documents(200, 4000)
    bg, ev = docs[0::2], docs[1::2][:300]
    vocab = sorted({t for _, w in bg for t in toks(" ".join(w[:300]))})
    evtk = [toks(" ".join(w[:3000])) for _, w in ev]
    n_cl = sum(1 for label, _ in ev if label.startswith("common-licenses/"))
    with tempfile.TemporaryDirectory() as tmp:
        orig, rec = recall(a.simhash, tmp, "doc", evtk, vocab, (0.01, 0.03, 0.10))
        esh = [st.shingles(t) for t in evtk]
        for alg in ALGS:
            print("edited %s: %d documents (%d from common-licenses): recall 1/3/10%%: "
                  "%.3f %.3f %.3f; unrelated pairs J<0.3 within 3 bits: %d"
                  % (alg, len(evtk), n_cl, rec[0.01][alg], rec[0.03][alg], rec[0.10][alg],
                     close_pairs(orig[alg], esh, list(range(len(evtk))))), flush=True)
        ltk = [toks(open(p, "rb").read().decode("utf-8", "replace")) for p in held]
        _, lrec = recall(a.simhash, tmp, "lic", ltk, vocab, (0.03,))
        print("edited licenses (half %d, %d files, 3%% edited): recall %s"
              % (1 - a.table_half, len(ltk), " ".join("%s %.3f" % (alg, lrec[0.03][alg]) for alg in ALGS)))


if __name__ == "__main__":
    main()
