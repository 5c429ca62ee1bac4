#!/usr/bin/env python3
"""html_templates.py OUTDIR FILE...: writes each text FILE as two HTML pages of
different templates, OUTDIR/<n>.a.html and OUTDIR/<n>.b.html, and its text as
OUTDIR/<n>.txt. The pages hold the same text; they differ in head (title, meta,
links, styles), scripts, comments, wrappers, inline tags around words and link
attributes, and template A declares windows-1252 and is written in it when the text
allows. Used by tests/integration/test_html.sh (the template pair target)."""
import html
import os
import random
import sys


def paragraphs(text):
    paras, cur = [], []
    for line in text.splitlines():
        if line.strip():
            cur.append(line.strip())
        elif cur:
            paras.append(" ".join(cur))
            cur = []
    if cur:
        paras.append(" ".join(cur))
    return paras


def inline(words, rng, tags):
    out = []
    for w in words:
        e = html.escape(w, quote=False)
        r = rng.random()
        if r < 0.05:
            e = "<%s>%s</%s>" % (tags[0], e, tags[0])
        elif r < 0.08:
            e = '<a href="https://example.%s/p?id=%d&amp;x=1" class="l%d" title="%s">%s</a>' % (
                tags[1], rng.randrange(10**6), rng.randrange(9), html.escape(w), e)
        elif r < 0.10:
            e = '<span class="w" data-n="%d">%s</span>' % (rng.randrange(999), e)
        out.append(e)
    return " ".join(out)


def page_a(paras, rng):
    body = "\n".join('<p class="para">%s</p>' % inline(p.split(), rng, ("b", "com"))
                     for p in paras)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"windows-1252\">"
            "<title>Document A</title><link rel=\"stylesheet\" href=\"/a.css\">"
            "<style>body { font-family: serif } p.para { margin: 1em }</style>"
            "<script>var tracking = {id: 'UA-1234', words: 'lorem ipsum dolor'};</script>"
            "</head><body><!-- template A: header comment with words sit amet -->"
            "<div id=\"page\"><main><article>%s</article></main></div>"
            "<script src=\"/app.js\"></script><noscript>Enable JavaScript please</noscript>"
            "</body></html>\n" % body)


def page_b(paras, rng):
    body = "\n".join("<section><div class=\"c\"><div class=\"t\">%s</div></div></section>"
                     % inline(p.split(), rng, ("em", "org")) for p in paras)
    return ("<html><head><meta name=\"viewport\" content=\"width=device-width\">"
            "<meta name=\"description\" content=\"another description entirely\">"
            "<title>B: a different title</title><style>.c{color:#333}.t{padding:2px}</style>"
            "<script type=\"application/ld+json\">{\"@type\": \"Article\", \"name\": \"x y z\"}"
            "</script></head>\n<body class=\"tmpl-b\"><!--[if IE]>old browsers<![endif]-->"
            "<div class=\"wrapper\"><div class=\"inner\">%s</div></div>"
            "<template><p>template content never shown</p></template>"
            "<script>document.write('<p>dynamic</p>')</script></body></html>\n" % body)


def main():
    out, files = sys.argv[1], sys.argv[2:]
    for n, path in enumerate(files):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        paras = paragraphs(text)
        rng = random.Random(n)
        with open(os.path.join(out, "%d.txt" % n), "w", encoding="utf-8") as f:
            f.write("\n\n".join(paras) + "\n")
        a = page_a(paras, rng)
        try:
            data = a.encode("cp1252")
        except UnicodeEncodeError:
            data = a.replace('charset="windows-1252"', 'charset="utf-8"').encode("utf-8")
        with open(os.path.join(out, "%d.a.html" % n), "wb") as f:
            f.write(data)
        with open(os.path.join(out, "%d.b.html" % n), "w", encoding="utf-8") as f:
            f.write(page_b(paras, rng))


if __name__ == "__main__":
    main()
