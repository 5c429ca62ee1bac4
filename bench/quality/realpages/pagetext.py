"""pagetext.py: the text helpers of the real-page evaluation (evaluate.py): the text of
an HTML document as blocks, word tokens, token precision / recall / F1, the element of
a page that best matches a text, and a page with one element's content replaced
(syndication). Debian's python3-lxml only."""
import re
from collections import Counter

import lxml.etree
import lxml.html

# Elements whose text is no text (as in docs/fingerprint.md "HTML"), and the inline
# elements that do not end a block.
SKIP = {"script", "style", "noscript", "template", "svg", "math", "iframe", "object",
        "canvas", "head", "title"}
INLINE = set("a abbr acronym b bdi bdo big cite code data del dfn em font i img ins kbd "
             "label mark nobr q rp rt ruby s samp small span strike strong sub sup time "
             "tt u var wbr".split())

# CJK ideographs, kana, hangul: one token per character (no spaces between words)
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])[^\W_])+")


def parse_html(data):
    """An lxml document from page bytes or str: UTF-8 when the bytes are valid UTF-8,
    else lxml's own detection (the page's meta charset). None when unparseable."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    if isinstance(data, str):
        # lxml refuses str input with an XML encoding declaration
        data = re.sub(r"^\s*<\?xml[^>]*>", "", data)
        if not data.strip():
            return None
    try:
        return lxml.html.document_fromstring(data)
    except (lxml.etree.ParserError, ValueError):
        return None


def _tag(el):
    """Lower-case tag name of an element, '' for comments and processing instructions."""
    return el.tag.lower() if isinstance(el.tag, str) else ""


def element_text(root):
    """The visible text under root as blocks ('\\n' between blocks, whitespace collapsed
    within a block, empty blocks dropped)."""
    blocks, cur = [], []

    def flush():
        s = " ".join("".join(cur).split())
        if s:
            blocks.append(s)
        cur.clear()

    def walk(el):
        tag = _tag(el)
        if tag in SKIP or not tag:
            return
        block = tag not in INLINE
        if block:
            flush()
        if tag == "br":
            flush()
        if el.text:
            cur.append(el.text)
        for ch in el:
            walk(ch)
            if ch.tail:
                cur.append(ch.tail)
        if block:
            flush()

    walk(root)
    flush()
    return "\n".join(blocks)


def html_text(data):
    """The text (blocks) of an HTML document or fragment given as bytes or str."""
    doc = parse_html(data)
    if doc is None:
        return ""
    body = doc.find("body")
    return element_text(body if body is not None else doc)


def tokens(text):
    """Lower-cased word tokens of text (runs of letters and digits; a CJK character is
    a token of its own)."""
    return _TOKEN.findall(text.lower())


def prf(pred, gold):
    """(precision, recall, F1) of the token multiset pred against gold (Counters)."""
    inter = sum((pred & gold).values())
    np_, ng = sum(pred.values()), sum(gold.values())
    p = inter / np_ if np_ else 0.0
    r = inter / ng if ng else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def best_element(doc, gold):
    """The element of doc (not html, head or anything under SKIP) whose text's tokens
    have the highest F1 against gold (a Counter), and that F1: (element, f1)."""
    best = [None, -1.0]

    def walk(el):
        """Token Counter of el's text (its tail excluded); updates best."""
        tag = _tag(el)
        if not tag or tag in SKIP:
            return Counter()
        c = Counter(tokens(el.text or ""))
        for ch in el:
            c.update(walk(ch))
            if ch.tail:
                c.update(tokens(ch.tail))
        if tag != "html" and c:
            f = prf(c, gold)[2]
            if f > best[1]:
                best[0], best[1] = el, f
        return c

    walk(doc)
    return best[0], best[1]


def article_children(expected):
    """The nodes of an expected.html article to insert in another page: the children of
    Readability's <div id="readability-page-1"> (or of <body>), and its leading text."""
    doc = parse_html(expected)
    if doc is None:
        return "", []
    body = doc.find("body")
    root = body if body is not None else doc
    pages = root.xpath(".//div[starts-with(@id, 'readability-page')]")
    if len(pages) == 1:
        root = pages[0]
    return root.text or "", list(root)


def syndicate(host_doc, host_node, guest_expected):
    """Page bytes (UTF-8): host_doc (an lxml document, changed in place: parse it again
    for another use) with host_node's content replaced by the article of guest_expected
    (expected.html bytes); the page's charset declarations replaced by UTF-8."""
    text, kids = article_children(guest_expected)
    for ch in list(host_node):
        host_node.remove(ch)
    host_node.text = text
    for k in kids:
        host_node.append(k)
    return serialize(host_doc)


def serialize(host_doc):
    """Page bytes (UTF-8) of an lxml document (changed in place): its charset
    declarations replaced by <meta charset="utf-8">, serialized by lxml as HTML."""
    for m in host_doc.xpath("//meta[@charset] | //meta[@http-equiv]"):
        if m.get("charset") is not None or \
                (m.get("http-equiv") or "").lower() == "content-type":
            m.getparent().remove(m)
    head = host_doc.find("head")
    if head is None:
        head = lxml.etree.Element("head")
        host_doc.insert(0, head)
    meta = lxml.etree.Element("meta")
    meta.set("charset", "utf-8")
    head.insert(0, meta)
    return lxml.html.tostring(host_doc, encoding="utf-8", method="html",
                              doctype="<!DOCTYPE html>")
