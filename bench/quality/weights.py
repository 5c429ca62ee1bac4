#!/usr/bin/env python3
"""bench/quality/weights.py: feature weights against shared boilerplate, measured.

A simulation of fingerprint algorithm v2's features (lower-cased runs of letters and
digits, unigrams + bigrams, each hashed with BLAKE2b-64, a weighted per-bit vote),
with weights from the document frequency of each feature in a background corpus:
every second document of tests/tools/site_templates.py's real text (1,990 documents).
Evaluated on the other half (300 documents: copies with 1/3/10% of words replaced,
inserted or deleted, recall within 3 bits; unrelated pairs with J < 0.3 within 3 bits)
and on the distinct /usr/share/doc/*/copyright files (pairs with J < 0.3 within 3
bits: texts sharing license boilerplate). Needs Debian's python3-numpy; minutes.
bench/quality/README.md "Feature weights, tried" has the figures."""
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
    fs = feats(tk)
    if not fs: return 0
    hs = np.array([h(a + b) for a, b in fs], dtype=np.uint64)
    w = np.array([weight(f) for f in fs], dtype=np.float64)
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
seen, lic = set(), []
for f in sorted(glob.glob("/usr/share/doc/*/copyright")):
    data = open(f, 'rb').read(); k = hashlib.sha256(data).digest()
    words = data.decode('utf-8', 'replace').split()
    if k in seen or len(words) < 50: continue
    seen.add(k); lic.append(words)
lsh = [st.shingles(w) for w in lic]
ltk = [toks(" ".join(w)) for w in lic]
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
for name, wf in schemes.items():
    lf = [fp(t, wf) for t in ltk]
    false = sum(1 for i in range(len(lf)) for j in range(i+1, len(lf)) if (lf[i]^lf[j]).bit_count() <= 3 and st.jaccard(lsh[i], lsh[j]) < 0.3)
    orig = [fp(t, wf) for t in evtk]
    rec = {p: sum((fp(c, wf) ^ o).bit_count() <= 3 for c, o in zip(copies[p], orig)) / len(orig) for p in copies}
    # unrelated eval pairs within 3 bits with J<0.3
    esh = [st.shingles(t) for t in evtk]
    efalse = sum(1 for i in range(len(orig)) for j in range(i+1, len(orig)) if (orig[i]^orig[j]).bit_count() <= 3 and st.jaccard(esh[i], esh[j]) < 0.3)
    print("%-10s license pairs J<0.3 within 3 bits: %d of %d files; recall 1/3/10%%: %.3f %.3f %.3f; eval false pairs %d" % (name, false, len(lf), rec[0.01], rec[0.03], rec[0.10], efalse), flush=True)
