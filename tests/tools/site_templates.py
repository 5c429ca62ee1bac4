#!/usr/bin/env python3
"""site_templates.py: real text of this Debian machine, and web-site templates to wrap
it in, for the article sets of bench/quality/templates.py and
tests/integration/test_extract.sh.

Articles are real documents, never generated words: licenses
(/usr/share/common-licenses), the Python documentation sources (package python3-doc,
when installed), README, NEWS and Debian changelog files of /usr/share/doc, and English
manual pages (/usr/share/man/man[1-8], roff requests and escapes stripped). Documents
with the same words are kept once; their order is fixed by a seeded hash, not by paths.

The templates are filled with real text too (package names as link labels, changelog
lines as headlines, license and README sentences as footers, comments and cookie
notices), each the same on every page of a site:

  portal   header + nav of 120 links, aside of 60 headlines, footer (semantic HTML5)
  divsoup  the same weight in <div>s with neutral class names, an "about" blurb
  blog     cookie banner, nav, article, comment section with a form, related posts
  table    the 1990s: a layout table, link column, footer row, <font>
  light    a small nav and one footer line

`words(t)` gives a template's own visible words (what it adds to every page)."""
import functools
import glob
import gzip
import hashlib
import html
import os
import random
import re

WORD = re.compile(r"[A-Za-z0-9]+")
TEMPLATES = ("portal", "divsoup", "blog", "table", "light")


# ---- real text ----

def _read(path):
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                data = f.read(400000)
        else:
            with open(path, "rb") as f:
                data = f.read(400000)
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")


_ROFF_ESC = re.compile(r"\\f(\[[^]]*\]|\(..|.)|\\\(..|\\\*(\(..|.)|\\[-&|^e0 ]|\\s[-+]?\d")


def _unroff(text):
    out = []
    for line in text.splitlines():
        if line.startswith((".", "'")):
            m = re.match(r"\.(SH|SS|B|I|BI|BR|IR|IB|RB|RI)\s+(.*)", line)
            if not m:
                continue
            line = m.group(2)
        line = _ROFF_ESC.sub(" ", line).replace('"', "")
        out.append(re.sub(r"\\\S*", " ", line))     # any other escape, with its word
    return "\n".join(out)


def _sources():
    yield from sorted(glob.glob("/usr/share/common-licenses/*"))
    yield from sorted(glob.glob("/usr/share/doc/python3.11/html/_sources/**/*.txt",
                                recursive=True))
    for pat in ("README*", "NEWS*", "changelog.Debian.gz", "changelog.gz"):
        yield from sorted(glob.glob("/usr/share/doc/*/" + pat))
    for sec in "12345678":
        yield from sorted(glob.glob("/usr/share/man/man%s/*.gz" % sec))


def documents(min_words, limit, seed=20240601):
    """Up to `limit` distinct real documents of at least min_words words, as
    (label, words) in a seeded order: label names the source file."""
    seen, docs = set(), []
    for path in _sources():
        if not os.path.isfile(path) or path.endswith((".html", ".pdf", ".bz2", ".xz")):
            continue
        text = _read(path)
        if "/man/" in path:
            text = _unroff(text)
        words = text.split()
        if len(words) < min_words:
            continue
        key = hashlib.sha256(" ".join(WORD.findall(" ".join(words[:400]).lower())).encode()).digest()
        if key in seen:
            continue
        seen.add(key)
        label = os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)
        docs.append((label, words))
    docs.sort(key=lambda d: hashlib.sha256(("%d:%s" % (seed, d[0])).encode()).digest())
    return docs[:limit]


def shingles(words, w=3):
    """Set of word w-shingles (lower-cased letters and digits only)."""
    toks = WORD.findall(" ".join(words).lower())
    if len(toks) < w:
        return {tuple(toks)}
    return {tuple(toks[i:i + w]) for i in range(len(toks) - w + 1)}


def jaccard(a, b):
    return len(a & b) / len(a | b) if a or b else 1.0


# ---- template text (real, fixed per template) ----

def _furniture_text(seed):
    rng = random.Random(seed)
    names = sorted(os.listdir("/usr/share/doc"))
    heads = []
    for path in sorted(glob.glob("/usr/share/doc/*/changelog.Debian.gz"))[:200]:
        for line in _read(path).splitlines():
            line = line.strip()
            if line.startswith("* ") and 30 < len(line) < 90:
                heads.append(line[2:])
                break
    lic = _read("/usr/share/common-licenses/Apache-2.0").split()
    readme = []
    for path in sorted(glob.glob("/usr/share/doc/*/README*"))[:80]:
        words = _read(path).split()
        if len(words) > 80:
            readme.append(words)
    rng.shuffle(names)
    rng.shuffle(heads)
    rng.shuffle(readme)
    return names, heads, lic, readme


def _e(s):
    return html.escape(s, quote=False)


def _links(labels, sep=""):
    return sep.join('<a href="/%s">%s</a>' % (_e(x), _e(x)) for x in labels)


def _li_links(labels):
    return "".join('<li><a href="/%s">%s</a></li>' % (_e(x), _e(x)) for x in labels)


@functools.lru_cache(maxsize=None)
def template(name, seed=7):
    """(before, after) HTML around the article of template `name`; the title and the
    article body go between them (see page())."""
    names, heads, lic, readme = _furniture_text(seed + TEMPLATES.index(name))
    copy = " ".join(lic[200:260])
    head = ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{TITLE}</title>'
            '<link rel="stylesheet" href="/s.css"><script>var cfg={a:1}</script></head>')
    if name == "portal":
        before = head + ('<body><header><div class="logo">Debian Times</div><nav><ul>%s</ul></nav>'
                  '</header><div class="wrap"><main><article>'
                  % (_li_links(names[:120])))
        after = ('</article></main><aside><h3>Latest headlines</h3><ul>%s</ul></aside></div>'
                 '<footer><ul>%s</ul><p>%s</p></footer></body></html>'
                 % (_li_links(heads[:60]), _li_links(names[120:150]), _e(copy)))
    elif name == "divsoup":
        about = " ".join(readme[0][:45])
        before = head + ('<body><div class="top"><div class="brand">Package Weekly</div>'
                  '<div class="links">%s</div></div><div class="row"><div class="col-left">'
                  '<div class="box">%s</div><div class="blurb">%s</div></div>'
                  '<div class="col-main"><div class="entry">'
                  % (_links(names[:120], " | "),
                     "".join("<div><a href=\"/h\">%s</a></div>" % _e(h) for h in heads[:60]),
                     _e(about)))
        after = ('</div></div></div><div class="bottom"><div class="links">%s</div><div>%s</div>'
                 '</div></body></html>' % (_links(names[120:150], " | "), _e(copy)))
    elif name == "blog":
        cookie = " ".join(readme[1][:50])
        comments = "".join('<div class="c"><b>%s</b><p>%s</p></div>'
                           % (_e(names[200 + i]), _e(" ".join(readme[2 + i][:30 + 8 * i])))
                           for i in range(5))
        before = head + ('<body><div id="cookie-notice"><p>%s</p><button>Accept</button></div>'
                  '<header><h2>A Debian blog</h2><nav>%s</nav></header><article>'
                  % (_e(cookie), _links(names[:40], " ")))
        after = ('</article><section id="comments"><h3>5 comments</h3>%s<form><textarea>'
                 '</textarea><button>Post comment</button></form></section><div class="more">'
                 '<h3>Related posts</h3><ul>%s</ul></div><footer><p>%s</p></footer></body></html>'
                 % (comments, _li_links(heads[:20]), _e(copy)))
    elif name == "table":
        before = head + ('<body bgcolor="white"><table width="100%%"><tr><td colspan="2">'
                  '<font size="5">Old Site Home</font></td></tr><tr><td width="20%%">%s</td>'
                  '<td><font face="Arial">' % (_links(names[:60], "<br>")))
        after = ('</font></td></tr><tr><td colspan="2">%s<br><font size="1">%s</font></td></tr>'
                 '</table></body></html>' % (_links(names[60:90], " - "), _e(copy)))
    elif name == "light":
        before = head + '<body><nav>%s</nav><main>' % _links(names[:10], " ")
        after = '</main><footer>%s</footer></body></html>' % _e(" ".join(lic[300:310]))
    else:
        raise ValueError(name)
    return before, after


def words(name):
    """The visible words a template adds to every page (the title excluded)."""
    before, after = template(name)
    text = re.sub(r"<(script|style|title)[^>]*>.*?</\1>", " ", before + after, flags=re.S)
    return len(WORD.findall(html.unescape(re.sub(r"<[^>]+>", " ", text))))


def page(name, title, words_, para=60):
    """An HTML page of template `name`: title as <h1>, the words in paragraphs."""
    before, after = template(name)
    body = "".join("<p>%s</p>" % _e(" ".join(words_[i:i + para]))
                   for i in range(0, len(words_), para))
    tag = "div" if name in ("divsoup", "table") else "h1"
    return before.replace("{TITLE}", _e(title), 1) + "<%s>%s</%s>" % (tag, _e(title), tag) + body + after
