#!/usr/bin/env python3
"""bench/quality/realpages/prepare.py --readability GIT_DIR [--out DIR]: builds the
committed data of the real-page evaluation from a clone (bare or not) of Mozilla's
Readability.js repository (https://github.com/mozilla/readability): the test pages
test/test-pages/<name>/{source.html,expected.html,expected-metadata.json} of its HEAD.

Writes, under DIR (default: data/readability beside this script):
  pages.tar.xz  <name>/source.html, <name>/expected.html, <name>/expected-metadata.json
                of the pages kept (sorted by name, fixed owner and time: reproducible)
  index.tsv     one line per test page: name, site, lang, split, status, reason,
                source bytes, ground-truth characters
  SOURCE        the repository, its commit and date
It does not write LICENSE / NOTICE: those are copied by hand once (the files of the
repository's HEAD), see README.md.

Rules (README.md "Data"): a page is dropped when its ground-truth text (the text of
expected.html, whitespace collapsed) has fewer than 200 characters, or when its
source.html has fewer than 10,000 bytes (the hand-written fixtures of Readability's
unit tests: a few paragraphs of filler text, not a page of a site). The split is by
site (the name without a trailing -<digits>, and a few names mapped to their site in
SITE_OF): held out when the first byte of SHA-256(site) is below 64 (about a quarter),
so every page of a site is on the same side. Standard library and python3-lxml only.
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

import lxml.html

HERE = os.path.dirname(os.path.abspath(__file__))
MIN_TEXT = 200          # characters of ground truth
MIN_SOURCE = 10000      # bytes of source.html: smaller ones are unit-test fixtures
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--readability", required=True, help="git dir of mozilla/readability")
    ap.add_argument("--out", default=os.path.join(HERE, "data", "readability"))
    a = ap.parse_args()
    g = a.readability
    if os.path.isdir(os.path.join(g, ".git")):
        g = os.path.join(g, ".git")
    commit = git(g, "rev-parse", "HEAD").decode().strip()
    date = git(g, "log", "-1", "--format=%ci", "HEAD").decode().strip()
    tree = git(g, "ls-tree", "HEAD", "test/test-pages/").decode().splitlines()
    names = sorted(line.split("\t")[1].rsplit("/", 1)[1] for line in tree)
    os.makedirs(a.out, exist_ok=True)
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
                ti = tarfile.TarInfo(f"{n}/{f}")
                ti.size = len(data)
                ti.mtime = 0
                ti.mode = 0o644
                ti.uname = ti.gname = "root"
                tar.addfile(ti, io.BytesIO(data))
    with open(os.path.join(a.out, "pages.tar.xz"), "wb") as f:
        f.write(buf.getvalue())
    with open(os.path.join(a.out, "index.tsv"), "w", encoding="utf-8") as f:
        f.write("name\tsite\tlang\tsplit\tstatus\treason\tsource_bytes\tgt_chars\n")
        for r in rows:
            f.write("\t".join(r) + "\n")
    with open(os.path.join(a.out, "SOURCE"), "w", encoding="utf-8") as f:
        f.write("https://github.com/mozilla/readability test/test-pages/\n"
                f"commit {commit} ({date})\n"
                "License: Apache-2.0 (LICENSE, NOTICE beside this file)\n")
    kept = [r for r in rows if r[4] == "kept"]
    print(f"{len(rows)} pages, {len(kept)} kept "
          f"({sum(r[3] == 'heldout' for r in kept)} held out), "
          f"pages.tar.xz {len(buf.getvalue())} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
