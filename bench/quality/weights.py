#!/usr/bin/env python3
"""bench/quality/weights.py: feature weights against shared boilerplate, measured.

A simulation of unigram + bigram features (lower-cased runs of letters and
digits, unigrams + bigrams, each hashed with BLAKE2b-64, a weighted per-bit vote),
with weights from the document frequency of each feature in a background corpus:
every second document of tests/tools/site_templates.py's real text (1,990 documents).
Evaluated on the other half (300 documents: copies with 1/3/10% of words replaced,
inserted or deleted, recall within 3 bits; unrelated pairs with J < 0.3 within 3 bits)
and on the distinct /usr/share/doc/*/copyright files (pairs with J < 0.3 within 3
bits: texts sharing license boilerplate). Needs Debian's python3-numpy; minutes.

The boilerplate schemes (bp*) weight only the features of known boilerplate: a token
is boilerplate when a run of K words around it is in a table of word K-grams of
/usr/share/common-licenses (and, for the held-out measure, of the K-grams shared by
at least two copyright files of one half of them); its unigram, and a bigram of two
such tokens, vote with weight b. The copyright files are split in two halves by a hash
of their path: each half's pairs are counted with the table built from the other half
(held out), and a v1 simulation (word 3-shingles, unweighted) is the reference.
`weights.py --bp-only` runs only those. bench/quality/README.md "Feature weights,
tried" has the figures."""
import collections
import glob
import hashlib
import math
import os
import random
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "tools"))
import site_templates as st  # noqa: E402
TOK = re.compile(r"[A-Za-z0-9\u00c0-\uffff]+")
def toks(text): return [t.lower() for t in TOK.findall(text)]
H = {}
def h(s):
    v = H.get(s)
    if v is None:
        v = int.from_bytes(hashlib.blake2b(s.encode(), digest_size=8).digest(), 'little'); H[s] = v
    return v
def feats(tk):
    return [('u', t) for t in tk] + [('b', tk[i-1] + ' ' + tk[i]) for i in range(1, len(tk))]
def fp(tk, weight):
    """weight: a function of one feature, or (tagged .per_doc) of the token list,
    returning every feature's weight."""
    fs = feats(tk)
    if not fs: return 0
    return vote([h(a + b) for a, b in fs],
                weight(tk) if getattr(weight, "per_doc", False) else [weight(f) for f in fs])
def vote(hashes, weights):
    hs = np.array(hashes, dtype=np.uint64)
    w = np.array(weights, dtype=np.float64)
    bits = np.unpackbits(hs.view(np.uint8).reshape(-1, 8), axis=1, bitorder='little').astype(np.float64)
    s = (w[:, None] * (2 * bits - 1)).sum(axis=0)
    out = 0
    for i in range(64):
        if s[i] > 0: out |= 1 << i
    return out
docs = st.documents(200, 4000)
bg = docs[0::2]; ev = docs[1::2][:300]
df = collections.Counter()
for _, w in bg:
    tk = toks(" ".join(w[:5000]))
    df.update(set(a + b for a, b in feats(tk)))
N = len(bg)
def w1(f): return 1.0
def idf(f):
    return math.log((N + 1) / (df.get(f[0] + f[1], 0) + 1))
def idf_cap(f):
    return min(idf(f), math.log(N / 10))
def idf_sqrt(f): return math.sqrt(idf(f))
def idf_floor(f): return max(idf(f), 1.0)
IMAX = math.log(N + 1)
def idf_q(f): return idf(f) ** 0.25
def seen_half(f): return 1.0 if df.get(f[0] + f[1], 0) == 0 else 0.5
def mix(f): return 0.5 + 0.5 * idf(f) / IMAX
schemes = {'none': w1, 'idf': idf, 'idf_cap': idf_cap, 'idf_sqrt': idf_sqrt, 'idf_floor': idf_floor,
           'idf^0.25': idf_q, 'seen0.5': seen_half, 'mix': mix}
# license pairs
seen, lic, lic_path = set(), [], []
for f in sorted(glob.glob("/usr/share/doc/*/copyright")):
    data = open(f, 'rb').read(); k = hashlib.sha256(data).digest()
    words = data.decode('utf-8', 'replace').split()
    if k in seen or len(words) < 50: continue
    seen.add(k); lic.append(words); lic_path.append(f)
lsh = [st.shingles(w) for w in lic]
ltk = [toks(" ".join(w)) for w in lic]

# ---- boilerplate tables (bp schemes) ----
def kgrams(tk, k): return {" ".join(tk[i:i + k]) for i in range(len(tk) - k + 1)}
half = [hashlib.sha256(f.encode()).digest()[0] & 1 for f in lic_path]
common = []
for f in sorted(glob.glob("/usr/share/common-licenses/*")):
    r = os.path.realpath(f)
    if os.path.isfile(r) and r not in common: common.append(r)
ctk = [toks(open(r, 'rb').read().decode('utf-8', 'replace')) for r in common]
def bp_table(k, table_half):
    """Word k-grams of the common licenses, and those shared by >= 2 copyright files of
    table_half (None: the common licenses only)."""
    t = set().union(*(kgrams(c, k) for c in ctk))
    if table_half is not None:
        n = collections.Counter()
        for tk, hf in zip(ltk, half):
            if hf == table_half: n.update(kgrams(tk, k))
        t |= {g for g, c in n.items() if c >= 2}
    return t
def bp_scheme(k, b, table):
    def weights(tk):
        cov = [False] * len(tk)
        for i in range(len(tk) - k + 1):
            if " ".join(tk[i:i + k]) in table: cov[i:i + k] = [True] * k
        return [b if c else 1.0 for c in cov] + \
               [b if cov[i - 1] and cov[i] else 1.0 for i in range(1, len(tk))]
    weights.per_doc = True
    return weights
def fp_v1(tk):
    sh = [" ".join(tk[i:i + 3]) for i in range(max(1, len(tk) - 2))]
    return vote([h("s" + s) for s in sh], [1.0] * len(sh)) if tk else 0
vocab = sorted({t for _, w in bg for t in toks(" ".join(w[:300]))})
rng = random.Random(1)
def edit(tk, p):
    tk = list(tk); n = max(1, round(p * len(tk)))
    for _ in range(n):
        i = rng.randrange(len(tk)); op = rng.randrange(3)
        if op == 0: tk[i] = rng.choice(vocab)
        elif op == 1: tk.insert(i, rng.choice(vocab))
        elif len(tk) > 1: del tk[i]
    return tk
evtk = [toks(" ".join(w[:3000])) for _, w in ev]
copies = {p: [edit(t, p) for t in evtk] for p in (0.01, 0.03, 0.10)}
def pairs_within(fps, idx):
    return sum(1 for a, i in enumerate(idx) for j in idx[a + 1:]
               if (fps[i] ^ fps[j]).bit_count() <= 3 and st.jaccard(lsh[i], lsh[j]) < 0.3)
halves = [[i for i in range(len(lic)) if half[i] == x] for x in (0, 1)]
def report(name, f_of_doc, f_of_half=None):
    """f_of_half(x): the fingerprint function whose table was built without half x."""
    lf = [f_of_doc(t) for t in ltk]
    held = [pairs_within([(f_of_half(x) if f_of_half else f_of_doc)(t) if half[i] == x else 0
                          for i, t in enumerate(ltk)], halves[x]) for x in (0, 1)]
    false = "-" if f_of_half else str(pairs_within(lf, list(range(len(lf)))))
    orig = [f_of_doc(t) for t in evtk]
    rec = {p: sum((f_of_doc(c) ^ o).bit_count() <= 3 for c, o in zip(copies[p], orig)) / len(orig) for p in copies}
    esh = [st.shingles(t) for t in evtk]
    efalse = sum(1 for i in range(len(orig)) for j in range(i+1, len(orig)) if (orig[i]^orig[j]).bit_count() <= 3 and st.jaccard(esh[i], esh[j]) < 0.3)
    print("%-10s license pairs J<0.3 within 3 bits: %s of %d files (held-out halves: %d + %d); recall 1/3/10%%: %.3f %.3f %.3f; eval false pairs %d" % (name, false, len(lf), held[0], held[1], rec[0.01], rec[0.03], rec[0.10], efalse), flush=True)
if "--bp-only" in sys.argv:
    schemes = {'none': w1}
for name, wf in schemes.items():
    report(name, lambda t, wf=wf: fp(t, wf))
report('v1-sim', fp_v1)
for k in (6, 8):
    for b in (0.0, 0.25):
        cl = bp_scheme(k, b, bp_table(k, None))
        report("bp%d-cl b=%g" % (k, b), lambda t, w=cl: fp(t, w))
        tabs = [bp_scheme(k, b, bp_table(k, 1 - x)) for x in (0, 1)]
        # recall with the table of half 0 (built without half 1's files)
        report("bp%d b=%g" % (k, b), lambda t, w=tabs[1]: fp(t, w),
               lambda x, tabs=tabs: (lambda t: fp(t, tabs[x])))
