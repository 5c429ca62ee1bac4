"""tests/python/test_simhash.py: the Python package simhash against references written
here (pure-Python MD5 and vote, brute-force pairs and clusters on planted sets, a set
as the corpus), `simhash fingerprint` for text fingerprints, error cases, a memory
loop, and Client against a real deployment.

Run by tests/integration/test_python.sh, which installs the package with pip into a
temporary directory, starts a local deployment (with a password) and sets:
  PYTHONPATH             where the package was installed
  SIMHASH_BIN            the built programs (for `simhash fingerprint`)
  SIMHASH_TEST_PORT      the coordinator's port (Client tests are skipped without it)
  SIMHASH_TEST_PASSWORD  its password
Run alone: python3 tests/python/test_simhash.py (prints 'N passed, N failed').
"""
import array
import gc
import hashlib
import itertools
import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import tracemalloc
import unittest

import simhash

try:
    import numpy
except ImportError:  # numpy is optional
    numpy = None

M64 = (1 << 64) - 1
BIN = os.environ.get("SIMHASH_BIN", os.path.join(os.path.dirname(__file__), "..", "..",
                                                  "build", "bin"))

# ---- References ----


def ref_md5(data):
    """MD5 of RFC 1321, written from the RFC."""
    import math
    k = [int(abs(math.sin(i + 1)) * 2 ** 32) & 0xFFFFFFFF for i in range(64)]
    r = [7, 12, 17, 22] * 4 + [5, 9, 14, 20] * 4 + [4, 11, 16, 23] * 4 + [6, 10, 15, 21] * 4
    h = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476]
    msg = bytearray(data) + b"\x80"
    while len(msg) % 64 != 56:
        msg.append(0)
    msg += struct.pack("<Q", (len(data) * 8) & M64)
    for off in range(0, len(msg), 64):
        w = struct.unpack("<16I", msg[off:off + 64])
        a, b, c, d = h
        for i in range(64):
            if i < 16:
                f, g = (b & c) | (~b & d), i
            elif i < 32:
                f, g = (d & b) | (~d & c), (5 * i + 1) % 16
            elif i < 48:
                f, g = b ^ c ^ d, (3 * i + 5) % 16
            else:
                f, g = c ^ (b | ~d), (7 * i) % 16
            x = (a + f + k[i] + w[g]) & 0xFFFFFFFF
            a, d, c = d, c, b
            b = (b + ((x << r[i]) | (x >> (32 - r[i])))) & 0xFFFFFFFF
        h = [(v + u) & 0xFFFFFFFF for v, u in zip(h, (a, b, c, d))]
    return struct.pack("<4I", *h)


def ref_unsigned_hash(data):
    return int.from_bytes(ref_md5(data)[:8], "big")


def ref_compute(hashes):
    v = [0] * 64
    for h in hashes:
        for i in range(64):
            v[i] += 1 if (h >> i) & 1 else -1
    return sum(1 << i for i in range(64) if v[i] > 0)


def popcount(x):
    return bin(x).count("1")


def ref_pairs(hashes, k):
    """Every pair within k bits by brute force; (a, a) once for a repeated value."""
    out = set()
    for i in range(len(hashes)):
        for j in range(i + 1, len(hashes)):
            a, b = hashes[i], hashes[j]
            if popcount(a ^ b) <= k:
                out.add((min(a, b), max(a, b)))
    return sorted(out)


def ref_clusters(hashes, k):
    parent = list(range(len(hashes)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for i in range(len(hashes)):
        for j in range(i + 1, len(hashes)):
            if popcount(hashes[i] ^ hashes[j]) <= k:
                parent[find(i)] = find(j)
    groups = {}
    for i, h in enumerate(hashes):
        groups.setdefault(find(i), []).append(h)
    return sorted(sorted(g) for g in groups.values() if len(g) > 1)


def flip(h, nbits, rng):
    for b in rng.sample(range(64), nbits):
        h ^= 1 << b
    return h


def planted(rng, k, nbase=60):
    """Random bases, each with near copies at 0..k+2 flipped bits, some values repeated."""
    out = []
    for _ in range(nbase):
        base = rng.getrandbits(64)
        out.append(base)
        for nb in range(0, k + 3):
            out.append(flip(base, nb, rng))
    out += rng.sample(out, 5)
    rng.shuffle(out)
    return out


def ref_shingle(tokens, window):
    tokens = list(tokens)
    return [tokens[i:i + window] for i in range(len(tokens) - window + 1)]


def cli_fingerprint(data, window=None, lines=False, algorithm=None, html=False):
    """`simhash fingerprint` of data: a list of ints (one per line with lines)."""
    args = [os.path.join(BIN, "simhash"), "fingerprint"]
    if window is not None:
        args += ["--window", str(window)]
    if algorithm is not None:
        args += ["--algorithm", algorithm]
    if lines:
        args.append("--lines")
    if html:
        args.append("--html")
    out = subprocess.run(args, input=data, stdout=subprocess.PIPE, check=True, timeout=60)
    vals = [int(line.split(b"\t")[0]) for line in out.stdout.splitlines()]
    return vals if lines else vals[0]


def cli_extract(data, algorithm=None, all_text=False):
    """`simhash extract --html --format json` of data: the decoded JSON object."""
    args = [os.path.join(BIN, "simhash"), "extract", "--html", "--format", "json"]
    if algorithm is not None:
        args += ["--algorithm", algorithm]
    if all_text:
        args.append("--all-text")
    out = subprocess.run(args, input=data, stdout=subprocess.PIPE, check=True, timeout=60)
    return json.loads(out.stdout)


SETTINGS = [(2, 1), (4, 1), (4, 3), (5, 3), (6, 3), (7, 2), (10, 3), (8, 4)]
TEXTS = [
    b"", b"   ", b"Hello, World!", b"the quick brown fox jumps over the lazy dog " * 7,
    "naïve café – Москва 中文。测试 ａｂ！ｃｄ".encode(), b"x_y a-b 42abc\x00\xff\xfe tail",
    b"\xe4\xb8\x41 broken \xe4\xb8\xe4\xb8\xad", b"line one\r\nline two\n\nlast\r",
    b"Near-duplicate detection at web-crawl scale with simhash fingerprints.\nSecond line.\n",
]


class Functions(unittest.TestCase):
    def setUp(self):
        self.rng = random.Random(1234)

    def test_unsigned_hash(self):
        for n in list(range(0, 140)) + [1000, 20000, 70000]:
            data = bytes(self.rng.getrandbits(8) for _ in range(n))
            want = int.from_bytes(hashlib.md5(data).digest()[:8], "big")
            self.assertEqual(simhash.unsigned_hash(data), want)
            if n < 300:
                self.assertEqual(want, ref_unsigned_hash(data))
        self.assertEqual(simhash.unsigned_hash(bytearray(b"abc")), ref_unsigned_hash(b"abc"))
        self.assertEqual(simhash.unsigned_hash(memoryview(b"xabc")[1:]),
                         ref_unsigned_hash(b"abc"))

    def test_num_differing_bits(self):
        for _ in range(2000):
            a, b = self.rng.getrandbits(64), self.rng.getrandbits(64)
            self.assertEqual(simhash.num_differing_bits(a, b), popcount(a ^ b))
        self.assertEqual(simhash.num_differing_bits(0, M64), 64)
        self.assertEqual(simhash.num_differing_bits(M64, M64), 0)

    def test_compute(self):
        for n in [0, 1, 2, 3, 10, 101, 5000]:
            hs = [self.rng.getrandbits(64) for _ in range(n)]
            want = ref_compute(hs)
            self.assertEqual(simhash.compute(hs), want)
            self.assertEqual(simhash.compute(tuple(hs)), want)
            self.assertEqual(simhash.compute(iter(hs)), want)
            self.assertEqual(simhash.compute(h for h in hs), want)
            self.assertEqual(simhash.compute(array.array("Q", hs)), want)
            self.assertEqual(simhash.compute(struct.pack("<%dQ" % n, *hs)), want)
        # ties: one set, one unset -> 0 (the bit needs a strict majority)
        self.assertEqual(simhash.compute([1, 0]), 0)
        self.assertEqual(simhash.compute([M64]), M64)

    def test_compute_cli(self):
        hs = [self.rng.getrandbits(64) for _ in range(300)]
        out = subprocess.run([os.path.join(BIN, "simhash"), "compute"],
                             input="".join("%d\n" % h for h in hs).encode(),
                             stdout=subprocess.PIPE, check=True, timeout=60)
        self.assertEqual(simhash.compute(hs), int(out.stdout))

    def test_shingle(self):
        toks = "a b c d e f g".split()
        for w in range(1, 10):
            self.assertEqual(list(simhash.shingle(toks, w)), ref_shingle(toks, w))
            self.assertEqual(list(simhash.shingle(iter(toks), w)), ref_shingle(toks, w))
        self.assertEqual(list(simhash.shingle(toks)), ref_shingle(toks, 4))
        self.assertEqual(list(simhash.shingle([], 2)), [])
        gen = simhash.shingle(itertools.count(), 3)          # lazy over an endless iterator
        self.assertEqual(next(gen), [0, 1, 2])
        self.assertEqual(next(gen), [1, 2, 3])
        with self.assertRaises(ValueError):
            simhash.shingle(toks, 0)
        with self.assertRaises(TypeError):
            simhash.shingle(toks, 2.0)

    def test_find_all_planted(self):
        for blocks, k in SETTINGS:
            hs = planted(self.rng, k)
            with self.subTest(blocks=blocks, distance=k):
                want = ref_pairs(hs, k)
                got = simhash.find_all(hs, blocks, k)
                self.assertEqual(got, want)
                self.assertTrue(all(isinstance(p, tuple) for p in got))
                self.assertEqual(simhash.find_all(array.array("Q", hs), blocks, k), want)

    def test_find_clusters_planted(self):
        for blocks, k in SETTINGS:
            hs = planted(self.rng, k, nbase=30)
            with self.subTest(blocks=blocks, distance=k):
                self.assertEqual(simhash.find_clusters(hs, blocks, k), ref_clusters(hs, k))
        chain = [0, 0b111, 0b111111, 0b111111111]                  # A~B~C~D, A and D far
        self.assertEqual(simhash.find_clusters(chain + [M64], 4, 3), [chain])

    def test_find_all_large(self):
        # many values, few pairs: compare with the brute force over the planted part only
        hs = [self.rng.getrandbits(64) for _ in range(50000)]
        extra = [flip(hs[i], i % 4, self.rng) for i in range(0, 400, 2)]
        got = simhash.find_all(hs + extra, 6, 3)
        want = set(ref_pairs(hs[:400] + extra, 3))
        self.assertTrue(want <= set(got))
        for a, b in got:
            self.assertLessEqual(popcount(a ^ b), 3)

    def test_fingerprint_cli(self):
        big = b"".join(b"word%d filler text %d. " % (i % 977, i * 7919 % 1000)
                       for i in range(5000))                  # > 16 KiB: GIL released
        for data in TEXTS + [big]:
            for w in [None, 1, 2, 3, 4, 7, 64]:
                want = cli_fingerprint(data, w)
                got = simhash.fingerprint(data) if w is None else simhash.fingerprint(data, w)
                self.assertEqual(got, want, (data[:40], w))
                got_l = simhash.fingerprint(data, lines=True) if w is None else \
                    simhash.fingerprint(data, window=w, lines=True)
                self.assertEqual(got_l, cli_fingerprint(data, w, lines=True), (data[:40], w))
        s = "naïve café – Москва 中文。测试"
        self.assertEqual(simhash.fingerprint(s), simhash.fingerprint(s.encode()))
        self.assertEqual(simhash.fingerprint(bytearray(b"ab cd")), simhash.fingerprint(b"ab cd"))
        self.assertEqual(simhash.fingerprint(b""), 0)
        self.assertEqual(simhash.fingerprint(b"", lines=True), [])

    def test_algorithms_and_html(self):
        page = (b"<html><head><title>T</title><style>p{}</style></head><body><p>The quick "
                b"<b>brown</b> fox</p><script>x()</script><div>jumps &amp; runs</div></body></html>")
        for data in TEXTS + [page]:
            for algo in ["v5", "v1", "v1:5"]:
                self.assertEqual(simhash.fingerprint(data, algorithm=algo),
                                 cli_fingerprint(data, algorithm=algo), (data[:40], algo))
            self.assertEqual(simhash.fingerprint(data, html=True), cli_fingerprint(data, html=True))
        self.assertEqual(simhash.fingerprint(page, html=True),
                         simhash.fingerprint("The quick brown fox\njumps & runs"))
        self.assertEqual(simhash.fingerprint(page, html=True, algorithm="v1"),
                         simhash.fingerprint("The quick brown fox jumps & runs", window=3))
        # v5 (the default) reads a page's article; all_text=True all of it
        art = ("The committee met on Tuesday to discuss the budget for the coming year in "
               "detail. Several members argued that the library should open longer hours.")
        site = ("<html><body><nav><a href='/'>Home</a> <a href='/b'>Blog</a></nav><article><p>%s"
                "</p></article><footer>Copyright 2024 Example Times, all rights reserved</footer>"
                "</body></html>" % art)
        self.assertEqual(simhash.fingerprint(site, html=True), simhash.fingerprint(art))
        self.assertEqual(simhash.fingerprint(site, html=True),
                         simhash.fingerprint(site, html=True, algorithm="v5"))
        self.assertEqual(simhash.fingerprint(site, html=True, all_text=True),
                         simhash.fingerprint("Home Blog\n%s\nCopyright 2024 Example Times, all "
                                             "rights reserved" % art))
        self.assertNotEqual(simhash.fingerprint(site, html=True, all_text=True),
                            simhash.fingerprint(art))
        # v5: known license boilerplate weighs half, the same in both paths
        lic = (art + " On Debian systems, the complete text of the GNU General Public License "
               "version 2 can be found in /usr/share/common-licenses/GPL-2.").encode()
        self.assertEqual(simhash.fingerprint(lic, algorithm="v5"), cli_fingerprint(lic, algorithm="v5"))
        self.assertEqual(simhash.fingerprint(lic), simhash.fingerprint(lic, algorithm="v5"))
        # v5 folds Unicode case; v1 does not
        self.assertEqual(simhash.fingerprint("БЫСТРАЯ ЛИСА"), simhash.fingerprint("быстрая лиса"))
        self.assertNotEqual(simhash.fingerprint("БЫСТРАЯ ЛИСА", algorithm="v1"),
                            simhash.fingerprint("быстрая лиса", algorithm="v1"))
        self.assertEqual(simhash.fingerprint(b"abc", algorithm="v1:3"), simhash.fingerprint(b"abc", window=3))
        for bad in [dict(algorithm="v6"), dict(algorithm="v5", window=3), dict(html=True, lines=True),
                    dict(algorithm=""), dict(algorithm="v1:5", window=3)]:
            with self.assertRaises(ValueError, msg=str(bad)):
                simhash.fingerprint(b"x", **bad)
        # the removed algorithms: named, v5 as their successor
        for old in ("v2", "v3", "v4"):
            with self.assertRaisesRegex(ValueError, "%s was removed; v5 is its successor" % old):
                simhash.fingerprint(b"x", algorithm=old)
            with self.assertRaisesRegex(ValueError, "was removed"):
                simhash.extract(b"<p>x</p>", algorithm=old)
        with self.assertRaises(ValueError):
            simhash.fingerprint(b"<a href='" + b"x" * (70 << 20) + b"'>t</a>", html=True)

    def test_extract(self):
        art = ("The committee met on Tuesday to discuss the budget for the coming year in "
               "detail. Several members argued that the library should open longer hours.")
        site = ("<html><body><nav><a href='/'>Home</a> <a href='/b'>Blog</a></nav><article><h1>"
                "Budget</h1><p>%s</p></article><footer>Copyright 2024 Example Times, all rights "
                "reserved</footer></body></html>" % art)
        e = simhash.extract(site)
        self.assertIsInstance(e, simhash.Extraction)
        self.assertIsInstance(e, tuple)
        self.assertEqual(e.rule, "article")       # v5, the default: the article
        self.assertEqual(e.algorithm, "v5")
        self.assertIn(art, e.text)
        self.assertNotIn("Budget", e.text)         # the headline is the page's
        self.assertNotIn("Home", e.text)
        self.assertNotIn("Copyright", e.text)
        self.assertEqual(e.fingerprint, simhash.fingerprint(site, html=True))
        self.assertEqual(e.fingerprint, simhash.fingerprint(e.text))
        text, rule, fp, algo = e
        self.assertEqual((text, rule, fp, algo), (e.text, e.rule, e.fingerprint, e.algorithm))
        a = simhash.extract(site, all_text=True)
        self.assertEqual(a.rule, "all-text")
        self.assertIn("Home", a.text)
        self.assertIn("Copyright", a.text)
        links = "<ul><li><a href='/1'>One</a></li><li><a href='/2'>Two</a></li></ul>"
        self.assertEqual(simhash.extract(links).rule, "page")
        self.assertEqual(simhash.extract(links, algorithm="v1").rule, "all-text")
        plain = "<div><div class='menu'><p>Menu</p></div><p>%s</p></div>" % art
        self.assertNotIn("Menu", simhash.extract(plain).text)
        self.assertIn("Menu", simhash.extract(plain, algorithm="v1").text)
        lic = ("<p>%s</p><p>On Debian systems, the complete text of the GNU General Public "
               "License version 2 can be found in /usr/share/common-licenses/GPL-2.</p>" % art)
        legacy = b'<meta charset="windows-1252"><p>\x93Quoted\x94 caf\xe9 ' + art.encode() + b"</p>"
        for page in (site, site.encode(), plain, links, lic, legacy, "", b"\xff\xfe\xc3 x",
                     "<p>caf\u00e9 \u65e5\u672c</p>" * 50):
            for algo in (None, "v5", "v1", "v1:5"):
                for all_text in (False, True):
                    e = simhash.extract(page, algorithm=algo, all_text=all_text)
                    want = simhash.fingerprint(page, html=True, algorithm=algo, all_text=all_text)
                    self.assertEqual(e.fingerprint, want, (page[:40], algo, all_text))
                    self.assertEqual(simhash.fingerprint(e.text, algorithm=algo), want)
                    self.assertEqual(e.algorithm, {"v1": "v1:3", None: "v5"}.get(algo, algo))
                    data = page.encode() if isinstance(page, str) else page
                    c = cli_extract(data, algo, all_text)
                    self.assertEqual((c["text"], c["rule"], int(c["fingerprint"]), c["algorithm"]),
                                     tuple(e), (page[:40], algo, all_text))
        self.assertEqual(simhash.extract(bytearray(site.encode())), simhash.extract(site))
        self.assertEqual(simhash.extract(memoryview(site.encode())), simhash.extract(site))
        e = simhash.extract(b"")
        self.assertEqual((e.text, e.rule, e.fingerprint), ("", "empty", 0))
        e = simhash.extract(b"", algorithm="v1")
        self.assertEqual((e.text, e.rule, e.fingerprint), ("", "all-text", 0))
        for bad in [dict(algorithm="v9"), dict(algorithm=""), dict(algorithm="v2:3")]:
            with self.assertRaises(ValueError, msg=str(bad)):
                simhash.extract(site, **bad)
        with self.assertRaises(TypeError):
            simhash.extract(5)
        with self.assertRaises(TypeError):
            simhash.extract(site, window=3)
        with self.assertRaisesRegex(ValueError, "64 MiB"):
            simhash.extract(b"<p>" + b"x" * (64 << 20))

    def test_buffers(self):
        hs = [self.rng.getrandbits(64) for _ in range(100)]
        want = ref_compute(hs)
        raw = struct.pack("<100Q", *hs)
        self.assertEqual(simhash.compute(memoryview(b"x" + raw)[1:]), want)   # unaligned
        self.assertEqual(simhash.compute(bytearray(raw)), want)
        self.assertEqual(simhash.compute(memoryview(array.array("Q", hs))), want)
        self.assertEqual(simhash.compute(b""), 0)
        with self.assertRaises(ValueError):
            simhash.compute(raw[:-1])
        with self.assertRaises(TypeError):
            simhash.compute(array.array("d", [1.0]))
        with self.assertRaises(TypeError):
            simhash.compute(array.array("q", [1]))     # signed: not taken as fingerprints
        with self.assertRaises(TypeError):
            simhash.compute(array.array("I", [1]))
        with self.assertRaises(ValueError):            # not contiguous
            simhash.compute(memoryview(array.array("Q", hs))[::2])

    @unittest.skipUnless(numpy, "numpy not installed")
    def test_numpy(self):
        hs = [self.rng.getrandbits(64) for _ in range(1000)]
        a = numpy.array(hs, dtype=numpy.uint64)
        self.assertEqual(simhash.compute(a), ref_compute(hs))
        self.assertEqual(simhash.find_all(a, 6, 3), simhash.find_all(hs, 6, 3))
        c = simhash.Corpus(6, 3)
        self.assertEqual(c.insert_bulk(a), len(set(hs)))
        self.assertEqual(c.find_first_bulk(a[:10]), hs[:10])
        self.assertTrue(int(a[0]) in c and a[0] in c)
        self.assertEqual(simhash.num_differing_bits(a[0], a[1]), popcount(hs[0] ^ hs[1]))
        with self.assertRaises(TypeError):
            simhash.compute(numpy.array([1], dtype=numpy.int64))
        with self.assertRaises(ValueError):
            simhash.compute(a[::2])


class Corpora(unittest.TestCase):
    def check_against_set(self, blocks, k, rng):
        c = simhash.Corpus(blocks, k)
        ref = set()
        pool = planted(rng, k, nbase=25)
        for step in range(1500):
            h = rng.choice(pool)
            op = rng.random()
            if op < 0.45:
                self.assertEqual(c.insert(h), h not in ref)
                ref.add(h)
            elif op < 0.6:
                self.assertEqual(c.remove(h), h in ref)
                ref.discard(h)
            elif op < 0.8:
                d = rng.randint(0, k)
                got = c.find_all(h, distance=d)
                want = sorted((v for v in ref if popcount(v ^ h) <= d),
                              key=lambda v: (popcount(v ^ h), v))
                self.assertEqual(got, want)
            else:
                f = c.find_first(h)
                near = [v for v in ref if popcount(v ^ h) <= k]
                if near:
                    self.assertIn(f, near)
                else:
                    self.assertIsNone(f)
            self.assertEqual(len(c), len(ref))
        self.assertEqual(sorted(v for v in pool if v in c), sorted(v for v in pool if v in ref))
        # bulk forms agree with the single ones
        qs = rng.sample(pool, 60) + [rng.getrandbits(64) for _ in range(20)]
        self.assertEqual(c.find_first_bulk(qs), [c.find_first(q) for q in qs])
        self.assertEqual(c.find_all_bulk(qs), [c.find_all(q) for q in qs])
        self.assertEqual(c.find_all_bulk(qs, distance=0), [c.find_all(q, 0) for q in qs])
        n = len(c)
        self.assertEqual(c.remove_bulk(list(ref)), n)
        self.assertEqual(len(c), 0)
        self.assertEqual(c.insert_bulk(pool), len(set(pool)))
        self.assertEqual(c.insert_bulk(pool), 0)

    def test_against_set(self):
        rng = random.Random(99)
        for blocks, k in SETTINGS:
            with self.subTest(blocks=blocks, distance=k):
                self.check_against_set(blocks, k, rng)

    def test_bulk_large(self):
        rng = random.Random(5)
        hs = [rng.getrandbits(64) for _ in range(30000)]
        c = simhash.Corpus(5, 3)
        self.assertEqual(c.insert_bulk(array.array("Q", hs)), len(set(hs)))
        qs = [flip(h, i % 5, rng) for i, h in enumerate(hs[:3000])] + hs[3000:6000]
        first = c.find_first_bulk(qs)
        alls = c.find_all_bulk(qs)
        for i, q in enumerate(qs):
            if i < 3000:
                ok = popcount(q ^ hs[i]) <= 3
                if ok:
                    self.assertIn(hs[i], alls[i])
            for v in alls[i]:
                self.assertLessEqual(popcount(v ^ q), 3)
            self.assertEqual(first[i] is None, not alls[i])
        self.assertEqual(c.remove_bulk(hs[::2]), len(set(hs[::2])))
        self.assertEqual(len(c), len(set(hs) - set(hs[::2])))

    def test_contains_and_attrs(self):
        c = simhash.Corpus(6, 3)
        c.insert(M64)
        self.assertIn(M64, c)
        self.assertNotIn(0, c)
        self.assertNotIn(-1, c)           # out of range ints are simply not there
        self.assertNotIn(1 << 64, c)
        with self.assertRaises(TypeError):
            "x" in c
        self.assertEqual((c.blocks, c.distance), (6, 3))
        self.assertIn("blocks=6", repr(c))
        self.assertEqual(c.find_first(M64), M64)
        c.insert(0)
        self.assertEqual(c.find_first(1), 0)          # 0 is a real answer, None is none


class Errors(unittest.TestCase):
    def test_bad_input(self):
        c = simhash.Corpus(6, 3)
        cases = [
            (OverflowError, simhash.num_differing_bits, (-1, 0)),
            (OverflowError, simhash.num_differing_bits, (1 << 64, 0)),
            (TypeError, simhash.num_differing_bits, (1.5, 0)),
            (TypeError, simhash.num_differing_bits, ("1", 0)),
            (TypeError, simhash.num_differing_bits, (1,)),
            (TypeError, simhash.compute, (5,)),
            (TypeError, simhash.compute, ("abc",)),
            (TypeError, simhash.compute, ([1, None],)),
            (OverflowError, simhash.compute, ([1, -5],)),
            (TypeError, simhash.compute, (None,)),
            (TypeError, simhash.unsigned_hash, ("text",)),
            (TypeError, simhash.unsigned_hash, (5,)),
            (ValueError, simhash.find_all, ([1], 3, 3)),
            (ValueError, simhash.find_all, ([1], 0, 0)),
            (ValueError, simhash.find_all, ([1], 65, 3)),
            (ValueError, simhash.find_all, ([1], 64, 3)),        # too many tables
            (ValueError, simhash.find_all, ([1], 6, -1)),
            (TypeError, simhash.find_all, ([1], "6", 3)),
            (TypeError, simhash.find_all, ([1], 6.0, 3)),
            (TypeError, simhash.find_all, ([1], 6)),
            (ValueError, simhash.find_clusters, ([1], 2, 2)),
            (ValueError, simhash.find_all, ([1], 1 << 70, 3)),
            (ValueError, simhash.Corpus, (3, 3)),
            (ValueError, simhash.Corpus, (3, 5)),
            (ValueError, simhash.Corpus, (0, 0)),
            (ValueError, simhash.Corpus, (64, 10)),
            (TypeError, simhash.Corpus, ("6", 3)),
            (ValueError, simhash.fingerprint, (b"x", 0)),
            (ValueError, simhash.fingerprint, (b"x", 65)),
            (TypeError, simhash.fingerprint, (5,)),
            (TypeError, simhash.fingerprint, (None,)),
            (UnicodeEncodeError, simhash.fingerprint, ("\ud800",)),
            (OverflowError, c.insert, (-1,)),
            (TypeError, c.insert, ("1",)),
            (OverflowError, c.insert_bulk, ([1, 2, 1 << 64],)),
            (TypeError, c.remove_bulk, (7,)),
            (ValueError, c.find_first, (1, 4)),
            (ValueError, c.find_all, (1, -1)),
            (ValueError, c.find_all_bulk, ([1], 9)),
            (TypeError, c.find_first_bulk, ([1], "x")),
            (TypeError, simhash.Client, (), {"port": "x"}),
            (ValueError, simhash.Client, (), {"port": 0}),
            (ValueError, simhash.Client, (), {"port": 70000}),
            (ValueError, simhash.Client, (), {"timeout": -1}),
            (TypeError, simhash.Client, (), {"timeout": "x"}),
        ]
        for case in cases:
            exc, fn, args = case[0], case[1], case[2]
            kw = case[3] if len(case) > 3 else {}
            with self.subTest(fn=getattr(fn, "__name__", fn), args=args, kw=kw):
                with self.assertRaises(exc) as cm:
                    fn(*args, **kw)
                self.assertTrue(str(cm.exception))
        # a failed bulk insert leaves the corpus as it was
        self.assertEqual(len(c), 0)

    def test_fuzz_no_crash(self):
        """Random junk into every function: exceptions of the documented types only."""
        rng = random.Random(7)
        c = simhash.Corpus(5, 2)
        junk = [None, -1, 0, 1, 1 << 64, 1 << 200, -(1 << 70), 1.5, float("nan"), "s", b"",
                b"\x00" * 7, b"\x01" * 8, [], [1, "x"], [-1], (1, 2), {1: 2}, object(),
                array.array("Q", [1, 2]), array.array("b", [1]), memoryview(b"abcdefgh"),
                range(5), iter([1, 2]), True, bytearray(16), "\ud800"]
        fns = [simhash.unsigned_hash, simhash.num_differing_bits, simhash.compute,
               simhash.fingerprint, simhash.find_all, simhash.find_clusters, c.insert,
               c.remove, c.find_first, c.find_all, c.insert_bulk, c.remove_bulk,
               c.find_first_bulk, c.find_all_bulk, simhash.Corpus]
        allowed = (TypeError, ValueError, OverflowError)
        for _ in range(4000):
            fn = rng.choice(fns)
            args = [rng.choice(junk) for _ in range(rng.randint(0, 4))]
            try:
                fn(*args)
            except allowed:
                pass


class Threads(unittest.TestCase):
    def test_shared_corpus(self):
        c = simhash.Corpus(6, 3)
        rng = random.Random(3)
        hs = [rng.getrandbits(64) for _ in range(40000)]
        errors = []

        def writer():
            try:
                for i in range(0, len(hs), 4000):
                    c.insert_bulk(hs[i:i + 4000])
                    c.remove_bulk(hs[i:i + 1000])
            except Exception as e:  # pragma: no cover
                errors.append(e)

        def reader():
            try:
                for _ in range(10):
                    for v in c.find_all_bulk(hs[:5000]):
                        self.assertIsInstance(v, list)
                    c.find_first(hs[0])
                    len(c)
            except Exception as e:  # pragma: no cover
                errors.append(e)
        ts = [threading.Thread(target=f) for f in (writer, reader, reader)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(120)
        self.assertEqual(errors, [])
        self.assertEqual(len(c), len(set(hs) - set(h for i in range(0, len(hs), 4000)
                                                  for h in hs[i:i + 1000])))

    def test_gil_released(self):
        """find_all on 300K values runs while another thread makes progress."""
        rng = random.Random(4)
        hs = array.array("Q", (rng.getrandbits(64) for _ in range(300000)))
        ticks = []
        stop = threading.Event()

        def ticker():
            while not stop.is_set():
                ticks.append(1)
                stop.wait(0.001)
        t = threading.Thread(target=ticker)
        t.start()
        try:
            for _ in range(3):
                simhash.find_all(hs, 10, 3)
        finally:
            stop.set()
            t.join()
        self.assertGreater(len(ticks), 0)

    def test_extract_gil_released(self):
        """Another thread runs while extract() reads a page of several MiB."""
        page = ("<html><body><nav>menu</nav><article>"
                + "<p>a paragraph of the long article, with enough words in it to be kept "
                  "as a block of its own</p>" * 80000
                + "</article></body></html>").encode()
        ticks = []
        stop = threading.Event()

        def ticker():
            while not stop.is_set():
                ticks.append(time.monotonic())
                stop.wait(0.001)
        t = threading.Thread(target=ticker)
        t.start()
        try:
            time.sleep(0.05)
            t0 = time.monotonic()
            e = simhash.extract(page)
            t1 = time.monotonic()
        finally:
            stop.set()
            t.join()
        self.assertEqual(e.rule, "article")
        inside = [x for x in ticks if t0 + 0.002 < x < t1 - 0.002]
        # ticks while the call ran: the GIL was released (a held GIL allows none)
        self.assertGreater(len(inside), 0, "no tick in the %.3f s of the call" % (t1 - t0))


def rss_kb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


class Leaks(unittest.TestCase):
    def test_loop_memory(self):
        """Every function many times: Python allocations and RSS do not grow."""
        rng = random.Random(11)
        hs = [rng.getrandbits(64) for _ in range(300)]
        buf = array.array("Q", hs)
        text = "some text to fingerprint, twice: some text " * 20

        def once():
            simhash.unsigned_hash(b"abc" * 10)
            simhash.num_differing_bits(hs[0], hs[1])
            simhash.compute(hs)
            simhash.compute(buf)
            simhash.fingerprint(text)
            simhash.fingerprint(text.encode(), 4, lines=True)
            simhash.extract("<nav>n</nav><article><p>%s</p></article>" % text)
            simhash.find_all(hs + hs[:5], 6, 3)
            simhash.find_clusters(hs + hs[:5], 6, 3)
            list(simhash.shingle(hs[:20], 4))
            c = simhash.Corpus(6, 3)
            c.insert_bulk(buf)
            c.insert(5)
            c.find_first(hs[3])
            c.find_all(hs[3])
            c.find_first_bulk(hs)
            c.find_all_bulk(hs)
            c.remove(5)
            c.remove_bulk(hs[:100])
            5 in c
            len(c)
            for bad in ((simhash.compute, [1, -1]), (simhash.find_all, hs, 3, 3),
                        (c.insert, "x"), (simhash.fingerprint, b"", 99),
                        (simhash.extract, b"", "v9"),
                        (simhash.Corpus, 2, 2), (c.find_all_bulk, [1], 7)):
                try:
                    bad[0](*bad[1:])
                except (TypeError, ValueError, OverflowError):
                    pass
        for _ in range(200):
            once()
        gc.collect()
        tracemalloc.start()
        r0 = rss_kb()
        s0 = tracemalloc.take_snapshot()
        for _ in range(1500):
            once()
        gc.collect()
        s1 = tracemalloc.take_snapshot()
        r1 = rss_kb()
        tracemalloc.stop()
        grown = sum(st.size_diff for st in s1.compare_to(s0, "filename"))
        self.assertLess(grown, 256 * 1024, "Python allocations grew by %d bytes" % grown)
        self.assertLess(r1 - r0, 8 * 1024, "RSS grew from %d to %d KiB" % (r0, r1))


PORT = int(os.environ.get("SIMHASH_TEST_PORT", "0"))
PASSWORD = os.environ.get("SIMHASH_TEST_PASSWORD")


@unittest.skipUnless(PORT, "no deployment (SIMHASH_TEST_PORT unset)")
class Clients(unittest.TestCase):
    def client(self, **kw):
        kw.setdefault("password", PASSWORD)
        return simhash.Client("127.0.0.1", PORT, timeout=10, **kw)

    def test_roundtrip(self):
        rng = random.Random(21)
        base = rng.getrandbits(64)
        near1, near3, far = flip(base, 1, rng), flip(base, 3, rng), flip(base, 9, rng)
        with self.client() as c:
            self.assertFalse(c.closed)
            self.assertTrue(c.add(base, "doc-a"))
            self.assertFalse(c.add(base, "doc-a"))
            self.assertTrue(c.add(base, b"doc-a2"))
            self.assertTrue(c.add(near1, "doc-b"))
            self.assertTrue(c.add(near3, "doc-c"))
            self.assertTrue(c.add(far, "doc-far"))
            self.assertEqual(c.query(base), [(base, 0, ["doc-a", "doc-a2"]), (near1, 1, ["doc-b"]),
                                             (near3, 3, ["doc-c"])])
            self.assertEqual(c.query(base, distance=1), [(base, 0, ["doc-a", "doc-a2"]),
                                                         (near1, 1, ["doc-b"])])
            self.assertEqual(c.query(base, limit=1), [(base, 0, ["doc-a", "doc-a2"])])
            self.assertEqual(c.query(rng.getrandbits(64)), [])
            q2 = flip(base, 2, rng)
            want = sorted([(h, popcount(h ^ q2), ids) for h, ids in
                           [(base, ["doc-a", "doc-a2"]), (near1, ["doc-b"]), (near3, ["doc-c"])]
                           if popcount(h ^ q2) <= 3], key=lambda m: (m[1], m[0]))
            self.assertEqual(c.check(q2, "doc-new"), want)
            self.assertEqual(c.query(q2, distance=0), [(q2, 0, ["doc-new"])])
            # ids round trip: unicode, and bytes that are not UTF-8
            self.assertTrue(c.add(far, "ünï-文"))
            self.assertTrue(c.add(far, b"raw\xff\xfe"))
            ids = c.query(far, distance=0)[0][2]
            self.assertIn("ünï-文", ids)
            self.assertIn(b"raw\xff\xfe", [i.encode("utf-8", "surrogateescape") for i in ids])
            # delete one id, then the whole fingerprint
            self.assertEqual(c.delete(base, "doc-a"), 1)
            self.assertEqual(c.delete(base, "doc-a"), 0)
            self.assertEqual(c.query(base, 0), [(base, 0, ["doc-a2"])])
            self.assertEqual(c.delete(base), 1)
            self.assertEqual(c.query(base, 0), [])
        self.assertTrue(c.closed)

    @unittest.skipUnless(os.environ.get("SIMHASH_TEST_PID2"), "no second coordinator")
    def test_zz_failover(self):
        """Runs last in Clients: kills the second coordinator under a client that uses it."""
        port2, pid2 = int(os.environ["SIMHASH_TEST_PORT2"]), int(os.environ["SIMHASH_TEST_PID2"])
        rng = random.Random(31)
        fps = [rng.getrandbits(64) for _ in range(3000)]
        ids = ["fo-%d" % i for i in range(len(fps))]
        hosts = "127.0.0.1:%d,127.0.0.1:%d" % (port2, PORT)
        with simhash.Client(hosts, PORT, timeout=10, password=PASSWORD) as c:
            self.assertEqual(c.add_many(fps[:1000], ids[:1000]), 1000)
            self.assertEqual(c.query(fps[0], 0), [(fps[0], 0, ["fo-0"])])
            os.kill(pid2, signal.SIGKILL)
            for _ in range(200):                    # wait until it is gone
                try:
                    os.kill(pid2, 0)
                except OSError:
                    break
                time.sleep(0.02)
            failed = 0
            for i in range(0, 1000, 10):            # queries on the same handle
                try:
                    self.assertEqual(c.query(fps[i], 0), [(fps[i], 0, [ids[i]])])
                except simhash.ClientError:
                    failed += 1
            self.assertEqual(failed, 0)
            self.assertEqual(c.add_many(fps[1000:], ids[1000:]), 2000)
            fp, matches = c.check_text("fo-text", "failover text")
            self.assertEqual(matches, [])
            self.assertEqual(c.query_many(fps[2990:], distance=0),
                             [[(f, 0, [d])] for f, d in zip(fps[2990:], ids[2990:])])

    def test_text(self):
        text = TEXTS[-1]
        with self.client() as c:
            fp = c.fingerprint(text)
            self.assertEqual(fp, simhash.fingerprint(text))
            self.assertEqual(c.fingerprint(text.decode()), fp)
            self.assertEqual(c.fingerprint(b""), 0)
            got_fp, matches = c.check_text("page-1", text)
            self.assertEqual(got_fp, fp)
            self.assertEqual(matches, [])
            got_fp, matches = c.check_text("page-2", text.decode())
            self.assertEqual(matches, [(fp, 0, ["page-1"])])
            big = "word " * 200000
            self.assertEqual(c.fingerprint(big), simhash.fingerprint(big))
            page = "<html><head><title>x</title></head><body><p>%s</p></body></html>" % text.decode()
            fph = c.fingerprint(page, format="html")
            self.assertEqual(fph, simhash.fingerprint(page, html=True))
            self.assertEqual(fph, fp)
            got_fp, matches = c.check_text("page-3", page, format="html", distance=0)
            self.assertEqual(got_fp, fp)
            self.assertEqual(matches, [(fp, 0, ["page-1", "page-2"])])
            with self.assertRaises(ValueError):
                c.fingerprint(page, format="pdf")
            with self.assertRaises(ValueError):
                c.check_text("page-4", page, distance=65)

    def test_bulk(self):
        rng = random.Random(22)
        fps = [rng.getrandbits(64) for _ in range(2500)]
        ids = ["bulk-%d" % i for i in range(len(fps))]
        with self.client() as c:
            self.assertEqual(c.add_many(list(zip(fps, ids))), len(fps))
            self.assertEqual(c.add_many(array.array("Q", fps), ids), 0)
            self.assertEqual(c.add_many(fps[:10], [b"other-%d" % i for i in range(10)]), 10)
            res = c.query_many(fps[:50], distance=0)
            self.assertEqual(len(res), 50)
            for i, r in enumerate(res[:10]):
                self.assertEqual(r, [(fps[i], 0, sorted(["bulk-%d" % i, "other-%d" % i]))])
            self.assertEqual(res[20], [(fps[20], 0, ["bulk-20"])])
            self.assertEqual(c.add_many([]), 0)
            with self.assertRaises(ValueError):
                c.add_many(fps[:3], ids[:2])
            with self.assertRaises(ValueError):
                c.add_many([(1, "")])
            with self.assertRaises(TypeError):
                c.add_many([1, 2])
            info = c.info()
            self.assertIsInstance(info, dict)
            self.assertTrue(info)
            self.assertTrue(any(isinstance(v, int) for v in info.values()))

    def test_errors(self):
        with self.client() as c:
            with self.assertRaises(simhash.ServerError) as cm:
                c.query(1, distance=10)                 # beyond the corpus distance
            self.assertIn("distance", str(cm.exception))
            self.assertEqual(cm.exception.status, "SHC_ERR_SERVER")
            self.assertIsInstance(cm.exception, simhash.ClientError)
            self.assertEqual(c.query(1, distance=0), [])   # the connection is still usable
            for bad in [lambda: c.add(1, ""), lambda: c.add(1, "a\0b"), lambda: c.add(1, "x" * 5000),
                        lambda: c.add(-1, "x"), lambda: c.add(1 << 64, "x"), lambda: c.add(1, 5),
                        lambda: c.query(1, distance=65), lambda: c.query(1, limit=-1),
                        lambda: c.query("1"), lambda: c.fingerprint(5), lambda: c.check(1, None)]:
                with self.assertRaises((TypeError, ValueError, OverflowError)):
                    bad()
            c.close()
            c.close()
            with self.assertRaises(simhash.ClientError) as cm:
                c.query(1)
            self.assertIn("closed", str(cm.exception))
            with self.assertRaises(simhash.ClientError):
                c.info()
        if PASSWORD:
            with self.assertRaises(simhash.ServerError) as cm:
                simhash.Client("127.0.0.1", PORT, timeout=10, password="wrong-" + PASSWORD)
            self.assertIn("AUTH", str(cm.exception))
            c = simhash.Client("127.0.0.1", PORT, timeout=10)       # no AUTH: refused commands
            with self.assertRaises(simhash.ServerError):
                c.query(1)
            c.close()

    def test_connection_errors(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        with self.assertRaises(simhash.ClientConnectionError) as cm:
            simhash.Client("127.0.0.1", port, timeout=2)
        self.assertIn("refused", str(cm.exception))
        # a listener that never answers: the call times out
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        try:
            c = simhash.Client("127.0.0.1", s.getsockname()[1], timeout=0.3)
            with self.assertRaises(simhash.ClientTimeoutError):
                c.query(1)
            c.close()
        finally:
            s.close()

    def test_threads_share_client(self):
        errors = []
        with self.client() as c:
            def work(k):
                try:
                    for i in range(200):
                        c.add(1000000 + k * 1000 + i, "t%d" % k)
                        c.query(1000000 + k * 1000 + i, distance=0)
                except Exception as e:  # pragma: no cover
                    errors.append(e)
            ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(120)
        self.assertEqual(errors, [])

    def test_client_leaks(self):
        with self.client() as c:
            def once():
                c.add(77, "leak")
                c.query(77)
                c.check(78, "leak2")
                c.fingerprint("abc def")
                c.check_text("leak3", "abc def")
                c.add_many([(79, "x"), (80, "y")])
                c.query_many([77, 78])
                c.info()
                try:
                    c.query(1, distance=10)
                except simhash.ServerError:
                    pass
            for _ in range(100):
                once()
            gc.collect()
            tracemalloc.start()
            s0 = tracemalloc.take_snapshot()
            r0 = rss_kb()
            for _ in range(600):
                once()
            gc.collect()
            s1 = tracemalloc.take_snapshot()
            r1 = rss_kb()
            tracemalloc.stop()
        grown = sum(st.size_diff for st in s1.compare_to(s0, "filename"))
        self.assertLess(grown, 256 * 1024)
        self.assertLess(r1 - r0, 8 * 1024)


class Docs(unittest.TestCase):
    def test_docstrings(self):
        for name in simhash.__all__:
            obj = getattr(simhash, name)
            if callable(obj):
                self.assertTrue(obj.__doc__, name)
        for cls in (simhash.Corpus, simhash.Client):
            for name, obj in vars(cls).items():
                if not name.startswith("_") and callable(obj):
                    self.assertTrue(obj.__doc__, "%s.%s" % (cls.__name__, name))
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(simhash.__file__),
                                                    "__init__.pyi")))


def main():
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped
    print("python: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
    sys.exit(1 if failed or result.testsRun == 0 else 0)


if __name__ == "__main__":
    main()
