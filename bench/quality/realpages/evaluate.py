#!/usr/bin/env python3
"""bench/quality/realpages/evaluate.py: article extraction and page fingerprints
on real web pages with ground truth (bench/quality/realpages/README.md). For each
fingerprint algorithm of --algorithms (vN, or all-text: v5 with --all-text) and for
readability-lxml (Debian python3-readability), on the development and the held-out
pages separately:

  F1           token precision / recall / F1 of the extracted text against the ground
               truth (bag of lower-cased words); ours through `simhash extract` when the
               binary has it, else n/a
  snippets     pages with known passages instead of a known text (data/trafilatura):
               precision / recall / F1 of passages that must / must not be extracted
  fidelity     share of pages whose page fingerprint is within 3 bits of the
               fingerprint of the ground-truth text (same algorithm, text path)
  syndication  article A placed in page B's template (B's article node's content
               replaced by A's article): recall = share of pairs with fp(A's page)
               within 3 bits of fp(new page); false = share with fp(B's page) within
               3 bits of fp(new page)
  speed        MiB/s of `simhash fingerprint --html` over all pages (one process,
               median of 5 runs) and of readability-lxml (CPU time, in process)

With --trafilatura-dir DIR (a checkout of trafilatura, not committed here), a third
set, trafilatura-all: the snippets measure on every page of its tests/evaldata.json,
the set trafilatura's published figures are for.

Runs with Debian's /usr/bin/python3, python3-lxml and python3-readability."""
import argparse
import csv
import datetime
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter

import pagetext as pt

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
K = 3                      # a match: fingerprints within K bits
SETS = ("dev", "heldout")
TRAF_ALL = "trafilatura-all"   # the set of --trafilatura-dir: every page of a checkout
HOST_F1 = 0.6              # a host page's article node: token F1 with its ground truth


def die(msg, code=2):
    """Print msg and exit with code."""
    print(f"evaluate.py: {msg}", file=sys.stderr)
    sys.exit(code)


# ---------------------------------------------------------------- data


def load_pages(data_root, tmp):
    """The kept pages of every source under data_root (a dir per source with
    index.tsv and pages.tar.xz), unpacked under tmp: a list of dicts, sorted by
    source, then in the order of its index.tsv."""
    pages = []
    for src in sorted(os.listdir(data_root)):
        d = os.path.join(data_root, src)
        idx = os.path.join(d, "index.tsv")
        if not os.path.isfile(idx):
            continue
        out = os.path.join(tmp, "pages", src)
        os.makedirs(out)
        with tarfile.open(os.path.join(d, "pages.tar.xz")) as tar:
            for m in tar.getmembers():
                if not m.isfile() or m.name.startswith("/") or ".." in m.name.split("/"):
                    die(f"{src}/pages.tar.xz: unexpected member {m.name!r}", 1)
            tar.extractall(out)
        with open(idx, encoding="utf-8") as f:
            for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                if row["status"] != "kept":
                    continue
                pd = os.path.join(out, row["name"])
                p = {"id": f"{src}:{row['name']}", "source": src, "name": row["name"],
                     "site": f"{src}:{row['site']}", "lang": row["lang"],
                     "split": row["split"], "html": os.path.join(pd, "source.html"),
                     "expected": os.path.join(pd, "expected.html"),
                     "snippets": os.path.join(pd, "snippets.json")}
                # full: the article's text is known; snippets: text that must / must
                # not be extracted
                p["kind"] = "full" if os.path.isfile(p["expected"]) else "snippets"
                if p["kind"] == "snippets" and not os.path.isfile(p["snippets"]):
                    die(f"{p['id']}: neither expected.html nor snippets.json", 1)
                pages.append(p)
    return pages


def load_trafilatura_checkout(path):
    """Every page of trafilatura's evaluation in a checkout of its repository (path:
    the checkout or its tests/ dir): tests/evaldata.json with each page's file looked
    up in tests/cache, then tests/eval, as trafilatura's own evaluation resolves it.
    Snippets pages (set TRAF_ALL), sorted by URL; exits when a file is missing."""
    tests = path if os.path.isfile(os.path.join(path, "evaldata.json")) \
        else os.path.join(path, "tests")
    ev = os.path.join(tests, "evaldata.json")
    if not os.path.isfile(ev):
        die(f"--trafilatura-dir {path}: no evaldata.json in it or in its tests/", 2)
    with open(ev, encoding="utf-8") as f:
        evaldata = json.load(f)
    pages = []
    for url in sorted(evaldata):
        item = evaldata[url]
        html = next((p for p in (os.path.join(tests, d, item["file"]) for d in ("cache", "eval"))
                     if os.path.isfile(p)), None)
        if html is None:
            die(f"{ev}: {url}: file {item['file']!r} in neither tests/cache nor tests/eval", 1)
        pages.append({"id": f"{TRAF_ALL}:{item['file']}", "source": TRAF_ALL,
                      "name": item["file"], "site": f"{TRAF_ALL}:{url}", "lang": "-",
                      "split": TRAF_ALL, "html": html, "kind": "snippets",
                      "snip": {"url": url, "with": item.get("with") or [],
                               "without": item.get("without") or []}})
    return pages


def fname(page_id):
    """A file-name-safe form of a page id."""
    return page_id.replace(":", "__").replace("/", "_")


# ---------------------------------------------------------------- simhash


class Simhash:
    """The simhash binary: fingerprints (one process for many files) and extraction."""

    def __init__(self, path):
        self.path = path
        r = subprocess.run([path, "extract", "--help"], capture_output=True)
        self.has_extract = r.returncode == 0
        self.errors = {}                # "alg opts" -> ["file: message"]
        self.rules = {}                 # (alg, opts) -> {path: rule of extract}

    def knows(self, alg, opts):
        """Whether `fingerprint --algorithm alg opts` is accepted by the binary."""
        r = subprocess.run([self.path, "fingerprint", "--algorithm", alg, *opts,
                            "--text", os.devnull], capture_output=True)
        return r.returncode == 0

    def fingerprints(self, alg, opts, paths):
        """{path: fingerprint} of `simhash fingerprint --algorithm alg opts paths`."""
        out = {}
        for i in range(0, len(paths), 500):
            chunk = paths[i:i + 500]
            r = subprocess.run([self.path, "fingerprint", "--algorithm", alg, *opts,
                                *chunk], capture_output=True, text=True)
            if r.returncode not in (0, 1):
                die(f"simhash fingerprint --algorithm {alg} {' '.join(opts)}: "
                    f"exit {r.returncode}: {r.stderr.strip()}", 1)
            for line in r.stdout.splitlines():
                fp, name = line.split("\t", 1)
                out[name] = int(fp)
            for line in r.stderr.splitlines():
                if line.startswith("simhash fingerprint: "):
                    self.errors.setdefault(f"{alg} {' '.join(opts)}", []).append(
                        line[len("simhash fingerprint: "):])
        for p in paths:
            out.setdefault(p, None)     # refused by simhash: no fingerprint
        return out

    def extract(self, alg, opts, paths):
        """{path: text} of `simhash extract --format json --algorithm alg opts paths`
        (and self.rules[(alg, opts)] = {path: rule}), or None when the binary has no
        extract command or refuses the options."""
        if not self.has_extract:
            return None
        out = {}
        rules = self.rules.setdefault((alg, tuple(opts)), {})
        for i in range(0, len(paths), 500):
            chunk = paths[i:i + 500]
            r = subprocess.run([self.path, "extract", "--format", "json", "--algorithm",
                                alg, *opts, *chunk], capture_output=True)
            err = r.stderr.decode("utf-8", "replace").strip()
            if r.returncode not in (0, 1):
                print(f"evaluate.py: simhash extract --algorithm {alg} {' '.join(opts)}: "
                      f"exit {r.returncode}: {err} (F1 n/a)", file=sys.stderr)
                return None
            if err:
                self.errors.setdefault(f"extract {alg} {' '.join(opts)}", []).extend(
                    err.splitlines())
            objs = [json.loads(line) for line in
                    r.stdout.decode("utf-8", "replace").split("\n") if line.strip()]
            known = set(chunk)
            if objs and not any(o.get("file") in known for o in objs):
                if len(objs) != len(chunk):
                    die(f"simhash extract: {len(objs)} objects for {len(chunk)} files, "
                        "none naming a file as given", 1)
                print("evaluate.py: simhash extract names no file as given: taking the "
                      "objects in file order", file=sys.stderr)
                for o, p in zip(objs, chunk):
                    o["file"] = p
            for o in objs:
                out[o["file"]] = o.get("text") or ""
                rules[o["file"]] = o.get("rule") or "-"
        for p in paths:
            out.setdefault(p, "")       # refused by simhash: nothing extracted
        return out

    def time_html(self, rows, paths, runs=5):
        """{row: [wall seconds]} of `fingerprint --html` over all paths in one process
        per run; the rows take turns in each of the runs (so a slower moment of a
        shared machine does not fall on one row only)."""
        times = {r["row"]: [] for r in rows}
        for _ in range(runs):
            for r in rows:
                t0 = time.perf_counter()
                p = subprocess.run([self.path, "fingerprint", "--algorithm", r["alg"],
                                    *r["opts"], "--html", *paths],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                times[r["row"]].append(time.perf_counter() - t0)
                if p.returncode not in (0, 1):
                    die(f"simhash fingerprint (timing): exit {p.returncode}", 1)
        return times


def dist(a, b):
    """Hamming distance of two 64-bit fingerprints; None when either is missing (a
    page simhash refused: never a match)."""
    if a is None or b is None:
        return None
    return bin(a ^ b).count("1")


# ---------------------------------------------------------------- rows


def parse_rows(spec, sh):
    """The algorithm rows: [{'row', 'alg', 'opts', 'text_alg'}] of the binary knows;
    unknown ones are reported on stderr and left out."""
    rows = []
    for a in [s.strip() for s in spec.split(",") if s.strip()]:
        if a == "all-text":
            r = {"row": a, "alg": "v5", "opts": ["--all-text"], "text_alg": "v5"}
        else:
            r = {"row": a, "alg": a, "opts": [], "text_alg": a}
        if not sh.knows(r["alg"], r["opts"]):
            print(f"evaluate.py: {a}: not known to {sh.path}: left out", file=sys.stderr)
            continue
        rows.append(r)
    return rows


def readability_text(data):
    """(text, cpu seconds, error or None) of readability-lxml's summary of page bytes."""
    from readability import Document
    t0 = time.process_time()
    try:
        html = Document(data).summary()
        err = None
    except Exception as e:  # readability raises its own and lxml's errors
        html, err = "", f"{type(e).__name__}: {e}"
    cpu = time.process_time() - t0
    return (pt.html_text(html) if html else ""), cpu, err


def write(path, text):
    """Write text (UTF-8) to path."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


# ---------------------------------------------------------------- measures


def summary_f1(scores):
    """Means of P, R, F1 and the median F1 over [(p, r, f)], or None."""
    if not scores:
        return None
    return {"n": len(scores),
            "precision": statistics.fmean(s[0] for s in scores),
            "recall": statistics.fmean(s[1] for s in scores),
            "f1": statistics.fmean(s[2] for s in scores),
            "f1_median": statistics.median(s[2] for s in scores)}


def summary_dist(ds):
    """Share and count within K of distances ds (None: no fingerprint, not within),
    the median of the others and the count of None."""
    ok = [d for d in ds if d is not None]
    within = sum(d <= K for d in ok)
    return {"n": len(ds), "within": within, "errors": len(ds) - len(ok),
            "share": within / len(ds) if ds else None,
            "median": statistics.median(ok) if ok else None}


def snippet_hits(page, text):
    """Each passage of a snippets page against an extracted text: (kind, passage,
    found) with kind "with" (must be in the text) or "without" (must not);
    whitespace-normalized substring matching."""
    t = " ".join(text.split())
    return [(kind, w, " ".join(w.split()) in t)
            for kind in ("with", "without") for w in page["snip"][kind]]


def snippet_counts(pages, texts):
    """Snippet measure of extracted texts (one per page of pages): with = snippets
    that must be in the text, found (tp) or not (fn); without = snippets that must not
    be, found (fp) or not (tn); counts pooled over pages; precision tp/(tp+fp),
    recall tp/(tp+fn), F1. None without pages."""
    if not pages:
        return None
    tp = fp = fn = tn = 0
    for p, text in zip(pages, texts):
        for kind, _, found in snippet_hits(p, text):
            if kind == "with":
                tp += found
                fn += not found
            else:
                fp += found
                tn += not found
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    return {"n": len(pages), "tp": tp, "fp": fp, "fn": fn, "tn": tn, "precision": prec,
            "recall": rec, "f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0}


def make_pairs(pages, can_host):
    """(guest, host) pairs: each page with the next page of the list (cyclic) from
    another site for which can_host(page) holds; pages without one are left out."""
    pairs = []
    n = len(pages)
    for i, a in enumerate(pages):
        for k in range(1, n):
            b = pages[(i + k) % n]
            if b["site"] != a["site"] and can_host(b):
                pairs.append((a, b))
                break
    return pairs


def main():
    ap = argparse.ArgumentParser(
        description="Main-content extraction on real pages with ground truth.")
    ap.add_argument("--algorithms", default="v5,v1,all-text",
                    help="rows: vN or all-text (v5 --all-text); default v5,v1,all-text")
    ap.add_argument("--set", choices=("dev", "heldout", TRAF_ALL, "all"), default="all",
                    help=f"{TRAF_ALL}: only the pages of --trafilatura-dir")
    ap.add_argument("--trafilatura-dir", metavar="DIR",
                    help="a checkout of trafilatura (github.com/adbar/trafilatura): "
                    f"adds the set {TRAF_ALL}, the snippets measure on every page of its "
                    "tests/evaldata.json")
    ap.add_argument("--simhash", default=os.path.join(REPO, "build", "bin", "simhash"))
    ap.add_argument("--pages", type=int, default=0, help="only the first N pages of each set")
    ap.add_argument("--dump", help="write per-page texts, distances and pages here")
    ap.add_argument("--json", default=os.path.join(REPO, "build", "realpages.json"),
                    help="the figures as JSON (default build/realpages.json)")
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--no-readability", action="store_true",
                    help="leave readability-lxml out")
    a = ap.parse_args()
    if not os.access(a.simhash, os.X_OK):
        die(f"{a.simhash}: no executable; build first: cmake -S . -B build "
            "-DCMAKE_BUILD_TYPE=Release && cmake --build build -j2")
    if a.pages < 0:
        die("--pages must be >= 0")
    if a.set == TRAF_ALL and not a.trafilatura_dir:
        die(f"--set {TRAF_ALL} needs --trafilatura-dir")
    sh = Simhash(a.simhash)
    rows = parse_rows(a.algorithms, sh)
    use_rd = not a.no_readability
    if not rows and not use_rd:
        die("nothing to measure: no algorithm of --algorithms is known to the binary")
    if use_rd:
        try:
            import readability  # noqa: F401
        except ImportError:
            die("readability-lxml missing: apt-get install python3-readability "
                "(or --no-readability)")
    text_algs = []
    for r in rows:
        if r["text_alg"] not in text_algs:
            text_algs.append(r["text_alg"])
    t_start = time.time()
    tmp = tempfile.mkdtemp(prefix="simhash-realpages.")
    try:
        result = run(a, sh, rows, text_algs, use_rd, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result["meta"]["seconds"] = round(time.time() - t_start, 1)
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print(f"\nfigures: {a.json} ({result['meta']['seconds']} s)")


def run(a, sh, rows, text_algs, use_rd, tmp):
    """Computes every measure; prints the tables; returns the JSON result."""
    pages = load_pages(a.data, tmp)
    if not pages:
        die(f"no pages under {a.data}", 1)
    sets = SETS if a.set == "all" else (a.set,)
    if a.trafilatura_dir:
        pages += load_trafilatura_checkout(a.trafilatura_dir)
        if a.set == "all":
            sets += (TRAF_ALL,)
    by_set = {}
    for s in sets:
        by_set[s] = []
        for src in sorted({p["source"] for p in pages}):
            v = [p for p in pages if p["split"] == s and p["source"] == src]
            by_set[s] += v[:a.pages] if a.pages else v
    sel = [p for s in sets for p in by_set[s]]
    full = {s: [p for p in by_set[s] if p["kind"] == "full"] for s in sets}
    snip = {s: [p for p in by_set[s] if p["kind"] == "snippets"] for s in sets}
    sel_full = [p for s in sets for p in full[s]]
    for d in ("gt", "rd", "syn", "rdsyn"):
        os.makedirs(os.path.join(tmp, d))
    dump = a.dump
    if dump:
        for d in ["gt", "syn"] + [r["row"] for r in rows] + (["readability-lxml"] if use_rd else []):
            os.makedirs(os.path.join(dump, d), exist_ok=True)

    # ground truth and readability-lxml on every page
    rd_cpu, rd_bytes, rd_errors = 0.0, 0, {}
    for p in sel:
        with open(p["html"], "rb") as f:
            p["src_bytes"] = f.read()
        if p["kind"] == "full":
            with open(p["expected"], "rb") as f:
                p["exp_bytes"] = f.read()
            p["gt_text"] = pt.html_text(p["exp_bytes"])
            p["gt_tok"] = Counter(pt.tokens(p["gt_text"]))
            p["gt_path"] = os.path.join(tmp, "gt", fname(p["id"]) + ".txt")
            write(p["gt_path"], p["gt_text"])
        else:
            if "snip" not in p:
                with open(p["snippets"], encoding="utf-8") as f:
                    p["snip"] = json.load(f)
            p["gt_text"] = "\n".join(["# with:"] + p["snip"]["with"] +
                                      ["# without:"] + p["snip"]["without"])
        if use_rd:
            txt, cpu, err = readability_text(p["src_bytes"])
            rd_cpu += cpu
            rd_bytes += len(p["src_bytes"])
            if err:
                rd_errors[p["id"]] = err
            p["rd_text"] = txt
            p["rd_path"] = os.path.join(tmp, "rd", fname(p["id"]) + ".txt")
            write(p["rd_path"], txt)
        if dump:
            write(os.path.join(dump, "gt", fname(p["id"]) + ".txt"), p["gt_text"])
            if use_rd:
                write(os.path.join(dump, "readability-lxml", fname(p["id"]) + ".txt"),
                      p["rd_text"])

    # syndication pages: guest's article in the host's template
    node_of = {}                       # page id -> (xpath, tag, f1) or None
    for p in sel_full:
        doc = pt.parse_html(p["src_bytes"])
        el, f1 = pt.best_element(doc, p["gt_tok"]) if doc is not None else (None, 0)
        node_of[p["id"]] = (el.getroottree().getpath(el), el.tag, f1) if el is not None \
            else None

    def can_host(p):
        """A page can host when one element holds its article (token F1 >= HOST_F1)."""
        return node_of[p["id"]] is not None and node_of[p["id"]][2] >= HOST_F1

    pairs = {s: make_pairs(full[s], can_host) for s in sets}
    syn = []                           # dicts: set, guest, host, path
    for s in sets:
        for g, h in pairs[s]:
            doc = pt.parse_html(h["src_bytes"])
            xp = node_of[h["id"]][0]
            el = doc.getroottree().xpath(xp)[0]
            page = pt.syndicate(doc, el, g["exp_bytes"])
            path = os.path.join(tmp, "syn", f"{fname(g['id'])}--in--{fname(h['id'])}.html")
            with open(path, "wb") as f:
                f.write(page)
            item = {"set": s, "guest": g, "host": h, "path": path}
            if use_rd:
                txt, _, _ = readability_text(page)
                item["rd_path"] = os.path.join(tmp, "rdsyn", os.path.basename(path) + ".txt")
                write(item["rd_path"], txt)
            syn.append(item)
            if dump:
                shutil.copy(path, os.path.join(dump, "syn", os.path.basename(path)))

    # control: each host re-serialized the same way, its content unchanged
    hosts = sorted({i["host"]["id"]: i["host"] for i in syn}.values(), key=lambda p: p["id"])
    for h in hosts:
        h["reser_path"] = os.path.join(tmp, "syn", f"{fname(h['id'])}--reserialized.html")
        with open(h["reser_path"], "wb") as f:
            f.write(pt.serialize(pt.parse_html(h["src_bytes"])))

    # our fingerprints and extraction
    src_paths = [p["html"] for p in sel]
    full_paths = [p["html"] for p in sel_full]
    syn_paths = [i["path"] for i in syn] + [h["reser_path"] for h in hosts]
    gt_paths = [p["gt_path"] for p in sel_full]
    fp = {}
    ext = {}
    for r in rows:
        fp[r["row"]] = sh.fingerprints(r["alg"], r["opts"] + ["--html"], full_paths + syn_paths)
        ext[r["row"]] = sh.extract(r["alg"], r["opts"], src_paths)
    fp_text = {}
    for t in text_algs:
        paths = gt_paths + ([p["rd_path"] for p in sel_full] + [i["rd_path"] for i in syn]
                            if use_rd else [])
        fp_text[t] = sh.fingerprints(t, ["--text"], paths)

    result = {"meta": {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "simhash": os.path.abspath(a.simhash), "extract": sh.has_extract,
        "k": K, "rows": [r["row"] for r in rows], "set": a.set,
        "pages": {s: len(full[s]) for s in sets},
        "snippet_pages": {s: len(snip[s]) for s in sets},
        "pairs": {s: sum(i["set"] == s for i in syn) for s in sets},
        "readability_errors": rd_errors, "simhash_errors": sh.errors,
        "data_sha256": {},
    }, "sets": {}, "speed": {}}
    for src in sorted(os.listdir(a.data)):
        tf = os.path.join(a.data, src, "pages.tar.xz")
        if os.path.isfile(tf):
            with open(tf, "rb") as f:
                result["meta"]["data_sha256"][src] = hashlib.sha256(f.read()).hexdigest()

    per_page = []                       # dump lines
    per_snip = []
    per_pair = []
    per_host = []                       # (host, row, distance re-serialized - original)
    for s in sets:
        res = {}
        sp = full[s]
        ss = [i for i in syn if i["set"] == s]
        for r in rows:
            name = r["row"]
            f = fp[name]
            ft = fp_text[r["text_alg"]]
            fid = [dist(f[p["html"]], ft[p["gt_path"]]) for p in sp]
            scores = None
            snips = None
            if ext[name] is not None:
                scores = []
                for p in sp:
                    txt = ext[name].get(p["html"], "")
                    scores.append(pt.prf(Counter(pt.tokens(txt)), p["gt_tok"]))
                snips = snippet_counts(snip[s], [ext[name].get(p["html"], "")
                                                 for p in snip[s]])
                if dump:
                    for p in sp + snip[s]:
                        write(os.path.join(dump, name, fname(p["id"]) + ".txt"),
                              ext[name].get(p["html"], ""))
            rec = [dist(f[i["guest"]["html"]], f[i["path"]]) for i in ss]
            fal = [dist(f[i["host"]["html"]], f[i["path"]]) for i in ss]
            sh_ = {i["host"]["id"]: i["host"] for i in ss}.values()
            ctl = [dist(f[h["html"]], f[h["reser_path"]]) for h in sh_]
            for h, d in zip(sh_, ctl):
                per_host.append((h["id"], name, d))
            res[name] = {"f1": summary_f1(scores), "fidelity": summary_dist(fid),
                         "syndication_recall": summary_dist(rec),
                         "syndication_false": summary_dist(fal),
                         "hosts_reserialized": summary_dist(ctl), "snippets": snips}
            rules = sh.rules.get((r["alg"], tuple(r["opts"])), {})
            if rules:
                res[name]["rules"] = dict(Counter(rules.get(p["html"], "-")
                                                  for p in sp + snip[s]))
            for j, p in enumerate(sp):
                per_page.append((s, p["id"], name, fid[j],
                                 "%.4f" % scores[j][2] if scores else "n/a",
                                 rules.get(p["html"], "-")))
            for p in snip[s]:
                per_page.append((s, p["id"], name, "-", "-", rules.get(p["html"], "-")))
                if ext[name] is not None:
                    for kind, w, found in snippet_hits(p, ext[name].get(p["html"], "")):
                        per_snip.append((s, p["id"], name, kind, int(found),
                                         " ".join(w.split())))
            for j, i in enumerate(ss):
                per_pair.append((s, i["guest"]["id"], i["host"]["id"], name, rec[j], fal[j]))
        if use_rd:
            scores = [pt.prf(Counter(pt.tokens(p["rd_text"])), p["gt_tok"]) for p in sp]
            snips = snippet_counts(snip[s], [p["rd_text"] for p in snip[s]])
            for t in text_algs:
                ft = fp_text[t]
                name = f"readability-lxml/{t}"
                fid = [dist(ft[p["rd_path"]], ft[p["gt_path"]]) for p in sp]
                rec = [dist(ft[i["guest"]["rd_path"]], ft[i["rd_path"]]) for i in ss]
                fal = [dist(ft[i["host"]["rd_path"]], ft[i["rd_path"]]) for i in ss]
                res[name] = {"f1": summary_f1(scores), "fidelity": summary_dist(fid),
                             "syndication_recall": summary_dist(rec),
                             "syndication_false": summary_dist(fal), "snippets": snips}
                for j, p in enumerate(sp):
                    per_page.append((s, p["id"], name, fid[j], "%.4f" % scores[j][2], "-"))
                for j, i in enumerate(ss):
                    per_pair.append((s, i["guest"]["id"], i["host"]["id"], name,
                                     rec[j], fal[j]))
        result["sets"][s] = {"pages": [p["id"] for p in sp],
                             "snippet_pages": [p["id"] for p in snip[s]],
                             "pairs": [[i["guest"]["id"], i["host"]["id"]] for i in ss],
                             "rows": res}

    # speed over every selected page
    total = sum(len(p["src_bytes"]) for p in sel)
    mib = total / 2**20
    all_times = sh.time_html(rows, src_paths)
    for r in rows:
        times = all_times[r["row"]]
        med = statistics.median(times)
        result["speed"][r["row"]] = {"bytes": total, "seconds": times,
                                     "mib_s_median": mib / med, "mib_s_best": mib / min(times)}
    if use_rd:
        result["speed"]["readability-lxml"] = {"bytes": rd_bytes, "cpu_seconds": rd_cpu,
                                               "mib_s": rd_bytes / 2**20 / rd_cpu if rd_cpu else None}
    if dump:
        with open(os.path.join(dump, "pages.tsv"), "w", encoding="utf-8") as f:
            f.write("set\tpage\trow\tfidelity_distance\tf1\textract_rule\n")
            for t in per_page:
                f.write("\t".join(map(str, t)) + "\n")
        with open(os.path.join(dump, "syndication.tsv"), "w", encoding="utf-8") as f:
            f.write("set\tguest\thost\trow\tdistance_to_guest\tdistance_to_host\n")
            for t in per_pair:
                f.write("\t".join(map(str, t)) + "\n")
        with open(os.path.join(dump, "snippets.tsv"), "w", encoding="utf-8") as f:
            f.write("set\tpage\trow\tkind\tfound\tpassage\n")
            for t in per_snip:
                f.write("\t".join(map(str, t)) + "\n")
        with open(os.path.join(dump, "hosts.tsv"), "w", encoding="utf-8") as f:
            f.write("page\tarticle_node\ttag\tnode_f1\n")
            for h, v in sorted(node_of.items()):
                if v:
                    f.write(f"{h}\t{v[0]}\t{v[1]}\t{v[2]:.4f}\n")
        with open(os.path.join(dump, "reserialized.tsv"), "w", encoding="utf-8") as f:
            f.write("host\trow\tdistance_reserialized_to_original\n")
            for t in per_host:
                f.write("\t".join(map(str, t)) + "\n")
    result["meta"]["article_nodes"] = {h: {"xpath": v[0], "f1": round(v[2], 4)}
                                       for h, v in node_of.items() if v}
    result["meta"]["not_hosts"] = sorted(p["id"] for p in sel_full if not can_host(p))
    report(result, sets)
    return result


def fmt(x, d=3):
    """A number with d decimals, or n/a."""
    return "n/a" if x is None else f"{x:.{d}f}"


def report(res, sets):
    """Print one table per set and the speed table."""
    m = res["meta"]
    if not m["extract"]:
        print("simhash has no 'extract' command: F1 of our algorithms is n/a")
    for how, errs in m["simhash_errors"].items():
        print(f"simhash fingerprint {how} refused {len(errs)} files (never a match):")
        for e in errs[:5]:
            print(f"  {e[-160:]}")
    for pid, e in m["readability_errors"].items():
        print(f"readability-lxml failed on {pid}: {e[:120]}")
    for s in sets:
        if not m["pages"][s]:           # snippets pages only (trafilatura-all)
            print(f"\n== {s}: no page with article text")
        else:
            print(f"\n== {s}: {m['pages'][s]} pages with article text, {m['pairs'][s]} "
                  f"syndication pairs (match: within {K} bits)")
            print(f"{'row':22s} {'P':>6s} {'R':>6s} {'F1':>6s} {'F1med':>6s}  "
                  f"{'fid<=3':>14s} {'med':>5s}  {'syn recall':>14s} {'syn false':>14s}")
        for name, r in (res["sets"][s]["rows"] if m["pages"][s] else {}).items():
            f1 = r["f1"] or {}
            fd, rc, fa = r["fidelity"], r["syndication_recall"], r["syndication_false"]

            def share(x):
                return f"{fmt(x['share'])} ({x['within']}/{x['n']})" if x["n"] else "n/a"
            print(f"{name:22s} {fmt(f1.get('precision')):>6s} {fmt(f1.get('recall')):>6s} "
                  f"{fmt(f1.get('f1')):>6s} {fmt(f1.get('f1_median')):>6s}  "
                  f"{share(fd):>14s} {fmt(fd['median'], 1):>5s}  "
                  f"{share(rc):>14s} {share(fa):>14s}")
        if m["snippet_pages"][s]:
            print(f"snippets: {m['snippet_pages'][s]} pages (text that must / must not "
                  "be extracted, counts over all snippets)")
            for name, r in res["sets"][s]["rows"].items():
                x = r["snippets"]
                if x is None:
                    print(f"  {name:22s} n/a")
                else:
                    print(f"  {name:22s} P {x['precision']:.3f} R {x['recall']:.3f} "
                          f"F1 {x['f1']:.3f}  (with found {x['tp']}/{x['tp'] + x['fn']}, "
                          f"without found {x['fp']}/{x['fp'] + x['tn']})")
        ctl = [f"{name} {r['hosts_reserialized']['within']}/{r['hosts_reserialized']['n']}"
               for name, r in res["sets"][s]["rows"].items()
               if r.get("hosts_reserialized", {}).get("n")]
        if ctl:
            print(f"control: host pages re-serialized by lxml, content unchanged, within "
                  f"{K} bits of the original: {', '.join(ctl)}")
    print("\n== speed (all selected pages)")
    rd = res["speed"].get("readability-lxml")
    for name, v in res["speed"].items():
        if name == "readability-lxml":
            continue
        ratio = f", {v['mib_s_median'] / rd['mib_s']:.1f}x readability-lxml" \
            if rd and rd["mib_s"] else ""
        print(f"{name:22s} {v['mib_s_median']:8.1f} MiB/s (median of 5 wall times, "
              f"best {v['mib_s_best']:.1f}; {v['bytes'] / 2**20:.1f} MiB){ratio}")
    if rd:
        print(f"{'readability-lxml':22s} {fmt(rd['mib_s'], 1):>8s} MiB/s (CPU time in "
              f"process, {rd['cpu_seconds']:.1f} s)")


if __name__ == "__main__":
    main()
