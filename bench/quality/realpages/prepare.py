#!/usr/bin/env python3
"""bench/quality/realpages/prepare.py (--readability GIT_DIR | --trafilatura GIT_DIR)
[--sample N] [--out DIR]: builds the committed data of the real-page evaluation from a
clone (bare or not) of one source repository, at its HEAD:

  --readability  Mozilla's Readability.js (https://github.com/mozilla/readability):
                 test/test-pages/<name>/{source.html,expected.html,
                 expected-metadata.json}; the article's text is known
  --trafilatura  trafilatura (https://github.com/adbar/trafilatura): the pages of
                 tests/evaldata.json (files in tests/eval or tests/cache) with their
                 snippets, text that must and must not be extracted; a sample of N
                 (default 120) by SHA-256 of the URL

Writes, under DIR (default: data/readability or data/trafilatura beside this script):
  pages.tar.xz  <name>/source.html and <name>/expected.html + expected-metadata.json
                (readability) or <name>/snippets.json (trafilatura) of the pages kept
                (fixed owner and time: the same input gives the same bytes)
  index.tsv     one line per page of the source: name, site, lang, split, status,
                reason, source bytes, and ground-truth characters (readability) or
                snippet counts and URL (trafilatura)
  SOURCE        the repository, its commit and date
It does not write the licence files: they are copied once from the repository's HEAD
(README.md "Data").

Readability rules: a page is dropped when its ground-truth text (the text of
expected.html, whitespace collapsed) has fewer than 200 characters, or when its
source.html has fewer than 10,000 bytes (the hand-written fixtures of Readability's
unit tests: a few paragraphs of filler text, not a page of a site). The split is by
site (readability: the name without a trailing -<digits>, a few names mapped in
SITE_OF; trafilatura: the URL's host without www.): held out when the first byte of
SHA-256(site) is below 64 (about a quarter), so every page of a site is on the same
side. Standard library and python3-lxml only.
"""
import argparse
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import unicodedata
import urllib.parse

import lxml.html

HERE = os.path.dirname(os.path.abspath(__file__))
MIN_TEXT = 200          # characters of ground truth
MIN_SOURCE = 10000      # bytes of source.html: smaller ones are unit-test fixtures
TRAF_SAMPLE = 120       # trafilatura pages taken (of about 950 with their file)
# names whose site is not their name without a trailing -<digits>
SITE_OF = {
    "cnet-svg-classes": "cnet",
    "lifehacker-post-comment-load": "lifehacker",
    "lifehacker-working": "lifehacker",
    "wikipedia-2": "wikipedia", "wikipedia-3": "wikipedia", "wikipedia-4": "wikipedia",
}


def site_of(name):
    """The site a test page comes from (the key of the split and of syndication)."""
    if name in SITE_OF:
        return SITE_OF[name]
    return re.sub(r"-\d+$", "", name)


def is_heldout(site):
    """True when the site's pages are in the held-out set: SHA-256(site)[0] < 64."""
    return hashlib.sha256(site.encode("utf-8")).digest()[0] < 64


def git(gitdir, *args):
    """stdout (bytes) of a git command on gitdir."""
    return subprocess.run(["git", "--git-dir", gitdir, *args], check=True,
                          capture_output=True).stdout


def gt_chars(expected):
    """Characters of the text of expected.html, whitespace collapsed."""
    if not expected.strip():
        return 0
    t = lxml.html.fromstring(expected.decode("utf-8", "replace")).text_content()
    return len(" ".join(t.split()))


def gitdir(path):
    """The git directory of a clone, bare or not."""
    return os.path.join(path, ".git") if os.path.isdir(os.path.join(path, ".git")) else path


def add_file(tar, name, data):
    """Add data (bytes) to tar as name, with fixed owner, mode and time."""
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mtime = 0
    ti.mode = 0o644
    ti.uname = ti.gname = "root"
    tar.addfile(ti, io.BytesIO(data))


def write_index(out, header, rows):
    """Write out/index.tsv: the header fields, then the rows."""
    with open(os.path.join(out, "index.tsv"), "w", encoding="utf-8") as f:
        f.write("\t".join(header) + "\n")
        for r in rows:
            f.write("\t".join(r) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--readability", help="git dir of mozilla/readability")
    ap.add_argument("--trafilatura", help="git dir of adbar/trafilatura")
    ap.add_argument("--sample", type=int, default=TRAF_SAMPLE,
                    help=f"trafilatura pages to take (default {TRAF_SAMPLE})")
    ap.add_argument("--out", help="output dir (default data/<source> beside this script)")
    a = ap.parse_args()
    if bool(a.readability) == bool(a.trafilatura):
        ap.error("give one of --readability and --trafilatura")
    if a.trafilatura:
        prepare_trafilatura(gitdir(a.trafilatura), a.sample,
                            a.out or os.path.join(HERE, "data", "trafilatura"))
    else:
        prepare_readability(gitdir(a.readability),
                            a.out or os.path.join(HERE, "data", "readability"))


def prepare_readability(g, out):
    """Writes the readability source's pages.tar.xz, index.tsv and SOURCE under out."""
    commit = git(g, "rev-parse", "HEAD").decode().strip()
    date = git(g, "log", "-1", "--format=%ci", "HEAD").decode().strip()
    tree = git(g, "ls-tree", "HEAD", "test/test-pages/").decode().splitlines()
    names = sorted(line.split("\t")[1].rsplit("/", 1)[1] for line in tree)
    os.makedirs(out, exist_ok=True)
    rows = []
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz", preset=9) as tar:
        for n in names:
            files = {}
            for f in ("source.html", "expected.html", "expected-metadata.json"):
                files[f] = git(g, "show", f"HEAD:test/test-pages/{n}/{f}")
            meta = json.loads(files["expected-metadata.json"] or b"{}")
            lang = meta.get("lang") or "-"
            chars = gt_chars(files["expected.html"])
            src = len(files["source.html"])
            site = site_of(n)
            split = "heldout" if is_heldout(site) else "dev"
            if chars < MIN_TEXT:
                status, reason = "dropped", f"ground truth {chars} < {MIN_TEXT} characters"
            elif src < MIN_SOURCE:
                status, reason = "dropped", f"fixture: source {src} < {MIN_SOURCE} bytes"
            else:
                status, reason = "kept", "-"
            rows.append((n, site, lang, split, status, reason, str(src), str(chars)))
            if status != "kept":
                continue
            for f, data in files.items():
                add_file(tar, f"{n}/{f}", data)
    with open(os.path.join(out, "pages.tar.xz"), "wb") as f:
        f.write(buf.getvalue())
    write_index(out, ["name", "site", "lang", "split", "status", "reason", "source_bytes",
                      "gt_chars"], rows)
    with open(os.path.join(out, "SOURCE"), "w", encoding="utf-8") as f:
        f.write("https://github.com/mozilla/readability test/test-pages/\n"
                f"commit {commit} ({date})\n"
                "License: Apache-2.0 (LICENSE, NOTICE beside this file)\n")
    kept = [r for r in rows if r[4] == "kept"]
    print(f"readability: {len(rows)} pages, {len(kept)} kept "
          f"({sum(r[3] == 'heldout' for r in kept)} held out), "
          f"pages.tar.xz {len(buf.getvalue())} bytes", file=sys.stderr)


def nfc(s):
    """s in Unicode normalization form C."""
    return unicodedata.normalize("NFC", s)


def traf_site(url, fn):
    """The site of a trafilatura page: the host of its URL without www., the archived
    host for a web.archive.org URL; for a key that is no URL ("hard::dw.com.colonial.html")
    the file name up to its last two dot-separated parts."""
    m = re.match(r"https?://web\.archive\.org/web/[^/]+/(.*)$", url)
    if m:
        url = m.group(1)
    if "::" in url:
        url = ".".join(fn.split(".")[:-2]) or fn
    if "://" not in url:
        url = "http://" + url
    host = (urllib.parse.urlsplit(url).hostname or "-").lower()
    return re.sub(r"^www\d?\.", "", host)


def prepare_trafilatura(g, sample, out):
    """Writes the trafilatura source under out: a sample of the pages of
    tests/evaldata.json (the first `sample` by SHA-256 of their URL among those whose
    file is in tests/eval or tests/cache), each as <name>/source.html and
    <name>/snippets.json ({"url", "with", "without"}: text that must and must not be
    extracted); every annotation in index.tsv with the reason it was not taken."""
    commit = git(g, "rev-parse", "HEAD").decode().strip()
    date = git(g, "log", "-1", "--format=%ci", "HEAD").decode().strip()
    # file names compared in NFC (some are stored decomposed); -z: names unquoted
    have = {nfc(p): p for p in git(g, "ls-tree", "-r", "-z", "--name-only", "HEAD",
                                   "tests/eval", "tests/cache").decode("utf-8").split("\0")
            if p}
    evaldata = json.loads(git(g, "show", "HEAD:tests/evaldata.json"))
    order = sorted(evaldata, key=lambda u: hashlib.sha256(u.encode("utf-8")).hexdigest())
    os.makedirs(out, exist_ok=True)
    rows, taken, names = [], 0, set()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz", preset=9) as tar:
        for url in order:
            item = evaldata[url]
            fn = item["file"]
            site = traf_site(url, fn)
            name = re.sub(r"[^A-Za-z0-9._-]+", "_", fn)[:80]
            while name in names:
                name += "_"
            names.add(name)
            split = "heldout" if is_heldout(site) else "dev"
            path = next((have[p] for p in (nfc(f"tests/eval/{fn}"), nfc(f"tests/cache/{fn}"))
                         if p in have), None)
            withs, withouts = item.get("with") or [], item.get("without") or []
            src = b""
            if path is None:
                status, reason = "dropped", "file not in the repository tree"
            elif not withs or not withouts:
                status, reason = "dropped", "no with or no without snippets"
            elif taken >= sample:
                status, reason = "dropped", f"not in the sample of {sample}"
            else:
                src = git(g, "show", f"HEAD:{path}")
                status, reason = "kept", "-"
                taken += 1
                add_file(tar, f"{name}/source.html", src)
                add_file(tar, f"{name}/snippets.json", json.dumps(
                    {"url": url, "file": fn, "with": withs, "without": withouts},
                    ensure_ascii=False, indent=1).encode("utf-8"))
            rows.append((name, site, "-", split, status, reason, str(len(src)),
                         str(len(withs)), str(len(withouts)), url))
    with open(os.path.join(out, "pages.tar.xz"), "wb") as f:
        f.write(buf.getvalue())
    write_index(out, ["name", "site", "lang", "split", "status", "reason", "source_bytes",
                      "with", "without", "url"], rows)
    with open(os.path.join(out, "SOURCE"), "w", encoding="utf-8") as f:
        f.write("https://github.com/adbar/trafilatura tests/evaldata.json, tests/eval/, "
                "tests/cache/\n"
                f"commit {commit} ({date})\n"
                "License: Apache-2.0 (LICENSE beside this file)\n")
    kept = [r for r in rows if r[4] == "kept"]
    print(f"trafilatura: {len(rows)} annotated pages, {len(kept)} kept "
          f"({sum(r[3] == 'heldout' for r in kept)} held out), "
          f"pages.tar.xz {len(buf.getvalue())} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
