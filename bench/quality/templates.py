#!/usr/bin/env python3
"""bench/quality/templates.py [--simhash BIN] [--docs N] [--site N] [--quick]: web pages
judged by their own content. Real documents of this machine (tests/tools/site_templates.py:
licenses, Python documentation sources, README/NEWS/changelogs, manual pages) wrapped in
site templates of different weight, fingerprinted with `simhash fingerprint` as plain
text (v5's text path: `text`), as pages with all visible text (`all-text`: v5
--all-text) and by their article (v5, the default), all in the same run (the removed
v2, v3 and v4 and their figures are in git history):

  same     the same article (100-2,000 words) in every template: articles whose pages
           and plain text are all within 3 bits of one another (must match)
  diff     different articles (their first L words), one template: pairs of pages whose
           articles' word 3-shingle Jaccard is < 0.3 within 3 bits (must not match), and
           the median distance between pages, against the same articles as plain text
  site     one site of N pages, each a 150-word passage of a different document: the
           share of pages with a false near-duplicate (J < 0.3) within 3 bits
  sphinx   a real template: the Python documentation pages (python3-doc) against their
           reST sources as plain text, the same counts as diff
  license  /usr/share/doc/*/copyright files (real texts sharing license boilerplate):
           pairs with J < 0.3 within 3 bits, v1 and v5 (text)

bench/quality/README.md "Main content" has the definitions and the figures."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "tools"))
import site_templates as st  # noqa: E402

K = 3          # the distance of a match
# what diff, site and sphinx print: the articles as plain text (v5), the pages
SERIES = ("text", "all-text", "v5")
J_FALSE = 0.3  # articles below this word 3-shingle Jaccard share almost nothing


def fingerprints(simhash, paths, *opts):
    """simhash fingerprint of every path (in chunks), in order."""
    out = []
    for i in range(0, len(paths), 400):
        r = subprocess.run([simhash, "fingerprint", *opts, "--", *paths[i:i + 400]],
                           check=True, capture_output=True, text=True)
        out += [int(line.split("\t")[0]) for line in r.stdout.splitlines()]
    if len(out) != len(paths):
        raise SystemExit("simhash fingerprint gave %d lines for %d files" % (len(out), len(paths)))
    return out


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


class Pages:
    """Pages and plain texts written to a directory, fingerprinted in three ways."""

    def __init__(self, simhash, tmp):
        self.simhash, self.tmp, self.html, self.txt = simhash, tmp, [], []

    def add_page(self, tmpl, title, words):
        self.html.append(write(os.path.join(self.tmp, "%d.html" % len(self.html)),
                               st.page(tmpl, title, words)))
        return len(self.html) - 1

    def add_text(self, title, words):
        self.txt.append(write(os.path.join(self.tmp, "%d.txt" % len(self.txt)),
                              title + "\n" + " ".join(words) + "\n"))
        return len(self.txt) - 1

    def run(self):
        self.fp = {
            "all-text": fingerprints(self.simhash, self.html, "--html", "--algorithm", "v5",
                                     "--all-text"),
            "v5": fingerprints(self.simhash, self.html, "--html", "--algorithm", "v5"),
            "text": fingerprints(self.simhash, self.txt, "--text", "--algorithm", "v5"),
        }


def dist(a, b):
    return (a ^ b).bit_count()


def false_pairs(fps, sh, k=K):
    """Pairs within k bits whose shingle sets have Jaccard < J_FALSE, and the median
    distance over all pairs; also, per item, whether it has such a pair."""
    n, count, ds, has = len(fps), 0, [], [False] * len(fps)
    for i in range(n):
        a = fps[i]
        for j in range(i + 1, n):
            d = (a ^ fps[j]).bit_count()
            ds.append(d)
            if d <= k and st.jaccard(sh[i], sh[j]) < J_FALSE:
                count += 1
                has[i] = has[j] = True
    return count, statistics.median(ds) if ds else 0, sum(has)


def set_same(simhash, docs, n, tmp):
    lengths = (100, 150, 300, 600, 1000, 2000)
    p = Pages(simhash, tmp)
    items = []
    pool = [d for d in docs if len(d[1]) >= 2000]
    for i, (label, words) in enumerate(pool[:n]):
        w = words[:lengths[i % len(lengths)]]
        title = os.path.basename(label).split(".")[0]
        items.append((p.add_text(title, w), [p.add_page(t, title, w) for t in st.TEMPLATES]))
    p.run()
    res = {}
    for alg in ("all-text", "v5"):
        fps, text = p.fp[alg], p.fp["text"]
        ok, worst = 0, []
        for t, pages in items:
            group = [text[t]] + [fps[x] for x in pages]
            m = max(dist(a, b) for a in group for b in group)
            worst.append(m)
            ok += m <= K
        res[alg] = (ok, len(items), statistics.median(worst))
        print("same  %s: %d of %d articles within %d bits in all %d templates and as text "
              "(median worst distance %s)" % (alg, ok, len(items), K, len(st.TEMPLATES),
                                              statistics.median(worst)))
    return res


def set_diff(simhash, docs, n, tmp, templates, lengths):
    rows = []
    for L in lengths:
        pool = [d for d in docs if len(d[1]) >= L][:n]
        sh = [st.shingles(w[:L]) for _, w in pool]
        for tmpl in templates:
            p = Pages(simhash, os.path.join(tmp, "%s-%d" % (tmpl, L)))
            os.mkdir(p.tmp)
            for label, words in pool:
                title = os.path.basename(label).split(".")[0]
                p.add_page(tmpl, title, words[:L])
                p.add_text(title, words[:L])
            p.run()
            r = {a: false_pairs(p.fp[a], sh) for a in SERIES}
            rows.append((tmpl, L, len(pool), r))
            print("diff  %-8s %4d words, %d articles, %d pairs: J<%.1f within %d bits: %s; "
                  "median distance %s"
                  % (tmpl, L, len(pool), len(pool) * (len(pool) - 1) // 2, J_FALSE, K,
                     ", ".join("%s %d" % (a, r[a][0]) for a in SERIES),
                     ", ".join("%s %s" % (a, r[a][1]) for a in SERIES)),
                  flush=True)
    return rows


def set_site(simhash, docs, n, tmp, templates):
    pool = [d for d in docs if len(d[1]) >= 150][:n]
    sh = [st.shingles(w[:150]) for _, w in pool]
    for tmpl in templates:
        p = Pages(simhash, os.path.join(tmp, "site-" + tmpl))
        os.mkdir(p.tmp)
        for label, words in pool:
            title = os.path.basename(label).split(".")[0]
            p.add_page(tmpl, title, words[:150])
            p.add_text(title, words[:150])
        p.run()
        r = {a: false_pairs(p.fp[a], sh) for a in SERIES}
        print("site  %-8s %d pages of 150 words: pages with a false near-duplicate within %d "
              "bits: %s" % (tmpl, len(pool), K, ", ".join(
                  "%s %.2f%%" % (a, 100.0 * r[a][2] / len(pool)) for a in SERIES)),
              flush=True)


def set_sphinx(simhash):
    """Real pages of one real template: the Python documentation as Debian ships it
    (python3-doc, Sphinx), against its reST sources as plain text."""
    import glob
    root = "/usr/share/doc/python3.11/html"
    pages, srcs, sh = [], [], []
    for h in sorted(glob.glob(root + "/**/*.html", recursive=True)):
        src = root + "/_sources/" + h[len(root) + 1:-5] + ".rst.txt"
        if not os.path.isfile(src):
            continue
        words = open(src, encoding="utf-8", errors="replace").read().split()
        if len(words) < 100:
            continue
        pages.append(h)
        srcs.append(src)
        sh.append(st.shingles(words))
    if not pages:
        print("sphinx: /usr/share/doc/python3.11/html missing (package python3-doc)")
        return
    r = {"text": false_pairs(fingerprints(simhash, srcs, "--text", "--algorithm", "v5"), sh),
         "all-text": false_pairs(fingerprints(simhash, pages, "--html", "--algorithm", "v5",
                                              "--all-text"), sh),
         "v5": false_pairs(fingerprints(simhash, pages, "--html", "--algorithm", "v5"), sh)}
    print("sphinx %d Python documentation pages, %d pairs: J<%.1f (of the sources) within %d bits: "
          "%s; median distance %s"
          % (len(pages), len(pages) * (len(pages) - 1) // 2, J_FALSE, K,
             ", ".join("%s %d" % (a, r[a][0]) for a in SERIES),
             ", ".join("%s %s" % (a, r[a][1]) for a in SERIES)), flush=True)


def set_license(simhash, tmp):
    import glob
    import hashlib
    seen, paths, sh = set(), [], []
    for f in sorted(glob.glob("/usr/share/doc/*/copyright")):
        try:
            data = open(f, "rb").read()
        except OSError:
            continue
        h = hashlib.sha256(data).digest()
        words = data.decode("utf-8", errors="replace").split()
        if h in seen or len(words) < 50:
            continue
        seen.add(h)
        paths.append(f)
        sh.append(st.shingles(words))
    for alg in ("v1", "v5"):
        fps = fingerprints(simhash, paths, "--text", "--algorithm", alg)
        c = false_pairs(fps, sh)
        print("license %s: %d copyright files, %d pairs: J<%.1f within %d bits: %d"
              % (alg, len(paths), len(paths) * (len(paths) - 1) // 2, J_FALSE, K, c[0]),
              flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--simhash", default=os.path.join(HERE, "..", "..", "build", "bin", "simhash"))
    ap.add_argument("--docs", type=int, default=300, help="articles per diff set")
    ap.add_argument("--same", type=int, default=30, help="articles of the same set")
    ap.add_argument("--site", type=int, default=1700, help="pages of the site")
    ap.add_argument("--sets", default="same,diff,site,sphinx,license")
    args = ap.parse_args()
    docs = st.documents(100, 4000)
    print("documents: %d of at least 100 words; template words: %s" % (
        len(docs), ", ".join("%s %d" % (t, st.words(t)) for t in st.TEMPLATES)), flush=True)
    sets = args.sets.split(",")
    with tempfile.TemporaryDirectory(prefix="simhash-templates.") as tmp:
        if "same" in sets:
            os.mkdir(os.path.join(tmp, "same"))
            set_same(args.simhash, docs, args.same, os.path.join(tmp, "same"))
        if "diff" in sets:
            set_diff(args.simhash, docs, args.docs, tmp, ("portal", "divsoup", "blog", "table"),
                     (100, 150, 300, 600, 1000))
        if "site" in sets:
            set_site(args.simhash, docs, args.site, tmp, ("portal", "divsoup"))
        if "sphinx" in sets:
            set_sphinx(args.simhash)
        if "license" in sets:
            set_license(args.simhash, tmp)


if __name__ == "__main__":
    main()
