/* html.c: the visible text of HTML pages for fingerprints. libxml2's HTML parser
 * (Debian libxml2, maintained, streaming SAX in push mode, entity decoding, charset
 * from a BOM or <meta>, converted with iconv) delivers elements and text; this file
 * decides what is text: no script, style, noscript, template, svg, head (the title
 * optionally), comments or attributes; block elements separate words, inline ones
 * do not. With algorithm v5 (unless FP_HTML_ALL_TEXT) the elements and text build a
 * tree of the page instead (html_tree.c) and the fingerprint is its article's
 * (html_article.c). docs/fingerprint.md "HTML" has the rules and why libxml2. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <libxml/HTMLparser.h>
#include <libxml/parserInternals.h>

#include "html.h"
#include "html_article.h"
#include "html_tree.h"

#define HTML_CACHE 64         /* element classes remembered (html_name_slot) */
#define HTML_CHUNK 65536      /* bytes per htmlParseChunk call */
#define HTML_MAX_RESTARTS 64  /* documents after </html> read in one call */
#define HTML_TEXTBUF 4096     /* text gathered for fs before it is tokenized */

struct fp_html {
    htmlParserCtxtPtr ctxt;   /* NULL until the first bytes (or after an error) */
    fp_state *fs;             /* fingerprint state of all visible text, or NULL with a sink */
    htree *tree;              /* algorithm v5: the page's tree, or NULL */
    hart_result art;          /* v5: the article the last fp_html_final fingerprinted */
    fp_html_sink sink;
    void *arg;
    unsigned flags;
    unsigned skip;            /* open elements whose text is dropped */
    unsigned title;           /* open <title> elements */
    int failed;
    uint8_t head[1024];       /* the first bytes: BOM and charset declaration checks */
    size_t nhead;
    int declared;             /* the first 1024 bytes mention "charset" */
    int ignore_enc;           /* v5: the page declares a charset but its first bytes are
                                 UTF-8: read as UTF-8 (html_head_utf8) */
    int utf16;                /* a UTF-16 BOM: bytes pass unchanged (NULs included) */
    int body;                 /* the <body> has started: the charset can no longer change */
    uint8_t pend[4];          /* an incomplete UTF-8 sequence held for the next bytes */
    size_t npend;
    /* element classes by name pointer: libxml2 interns names per document, so the
     * same tag comes with the same pointer (the cache is emptied per document) */
    const void *cname[HTML_CACHE];
    uint8_t cclass[HTML_CACHE];
    size_t nacc;
    size_t ntext;             /* bytes in text[] */
    char err[160];
    /* the buffers last: html_alloc zeroes what comes before them only (their bytes are
     * written before they are read) */
    uint8_t acc[HTML_CHUNK];  /* the page's next block, gathered from the caller's pieces */
    /* text for fs, gathered from the SAX pieces (often a few bytes each) and tokenized
     * in one call when full or at the end: the tokenizer sees the same bytes in fewer,
     * longer pieces (its 32-byte path works on them). */
    char text[HTML_TEXTBUF];
    uint8_t in[HTML_CHUNK + 4], out[3 * (HTML_CHUNK + 4)];   /* html_feed_block's buffers */
};

static pthread_once_t html_once = PTHREAD_ONCE_INIT;

static void html_init(void)
{
    xmlInitParser();
}

/* ---- Element classes ---- */

enum { HTML_BLOCK, HTML_INLINE, HTML_SKIP, HTML_TITLE_EL };

/* Inline (phrasing) elements: their boundaries do not split words. Every element
 * not listed here or in html_skipped separates words, so unknown elements do. */
static const char *const html_inline[] = {
    "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "cite", "code", "data", "del",
    "dfn", "em", "font", "i", "img", "ins", "kbd", "label", "mark", "nobr", "q", "rp",
    "rt", "ruby", "s", "samp", "small", "span", "strike", "strong", "sub", "sup",
    "time", "tt", "u", "var", "wbr", NULL,
};

/* Elements whose content is not text of the page. */
static const char *const html_skipped[] = {
    "script", "style", "noscript", "template", "head", "svg", "math", "iframe", "object",
    "canvas", NULL,
};

static int html_in(const char *const *list, const char *name)
{
    for (size_t i = 0; list[i]; i++)
        if (list[i][0] == name[0] && strcmp(list[i], name) == 0)
            return 1;
    return 0;
}

/* libxml2 gives HTML element names in lower case. */
static int html_class(const char *name)
{
    if (html_in(html_inline, name))
        return HTML_INLINE;
    if (strcmp(name, "title") == 0)
        return HTML_TITLE_EL;
    if (html_in(html_skipped, name))
        return HTML_SKIP;
    return HTML_BLOCK;
}

/* ---- SAX callbacks ---- */

/* Tokenizes the text gathered for fs. */
static void html_fs_flush(fp_html *h)
{
    if (h->ntext) {
        fp_state_update(h->fs, h->text, h->ntext);
        h->ntext = 0;
    }
}

/* Text for fs: gathered, or tokenized at once when it does not fit. */
static void html_fs_text(fp_html *h, const char *s, size_t n)
{
    if (h->ntext + n > HTML_TEXTBUF) {
        html_fs_flush(h);
        if (n > HTML_TEXTBUF) {
            fp_state_update(h->fs, s, n);
            return;
        }
    }
    memcpy(h->text + h->ntext, s, n);
    h->ntext += n;
}

static void html_emit(fp_html *h, const char *s, size_t n)
{
    if (h->fs)
        html_fs_text(h, s, n);
    else
        h->sink(h->arg, s, n);
}

/* Block boundaries: "\n" into all visible text (with a tree: nothing, the tree knows
 * its blocks). */
static void html_boundary(fp_html *h)
{
    if (h->tree)
        return;
    html_emit(h, "\n", 1);
}

/* The cache slot (0..HTML_CACHE-1) of an element name, by its pointer (libxml2 interns
 * names per document, a few bytes apart: Fibonacci hashing spreads them). */
static inline size_t html_name_slot(const void *name)
{
    return (size_t)(((uint64_t)(uintptr_t)name * 0x9E3779B97F4A7C15u) >> 58);
}
_Static_assert(HTML_CACHE == 64, "html_name_slot gives 6 bits");

static int html_class_cached(fp_html *h, const xmlChar *name)
{
    size_t i = html_name_slot(name);
    if (h->cname[i] != name) {
        h->cclass[i] = (uint8_t)html_class((const char *)name);
        h->cname[i] = name;
    }
    return h->cclass[i];
}

static void html_on_start(void *ctx, const xmlChar *name, const xmlChar **atts)
{
    fp_html *h = ctx;
    if (!h->body && strcmp((const char *)name, "body") == 0)
        h->body = 1;            /* libxml2 reports an implied <body> too */
    int cls = html_class_cached(h, name);
    if (h->tree) {
        int how = cls == HTML_SKIP || cls == HTML_TITLE_EL ? HTREE_SKIP
                  : cls == HTML_INLINE ? HTREE_INLINE : HTREE_BLOCK;
        htree_start(h->tree, (const char *)name, how, (const char *const *)atts);
        return;
    }
    int block = cls == HTML_BLOCK || cls == HTML_TITLE_EL;   /* skipped ones split no words */
    if (block)
        html_boundary(h);
    if (cls == HTML_SKIP)
        h->skip++;
    else if (cls == HTML_TITLE_EL)
        h->title++;
}

static void html_on_end(void *ctx, const xmlChar *name)
{
    fp_html *h = ctx;
    if (h->tree) {
        htree_end(h->tree, (const char *)name);
        return;
    }
    int cls = html_class_cached(h, name);
    int block = cls == HTML_BLOCK || cls == HTML_TITLE_EL;
    if (block)
        html_boundary(h);
    if (cls == HTML_SKIP && h->skip)
        h->skip--;
    else if (cls == HTML_TITLE_EL && h->title)
        h->title--;
}

static void html_on_text(void *ctx, const xmlChar *s, int len)
{
    fp_html *h = ctx;
    if (len <= 0)
        return;
    if (h->tree) {
        htree_text(h->tree, (const char *)s, (size_t)len);
        return;
    }
    if (h->title ? !(h->flags & FP_HTML_TITLE) : h->skip > 0)
        return;
    html_emit(h, (const char *)s, (size_t)len);
}

static void html_on_blank(void *ctx, const xmlChar *s, int len)
{
    (void)s;
    fp_html *h = ctx;
    if (len > 0 && h->tree)
        htree_text(h->tree, " ", 1);
    else if (len > 0)
        html_emit(h, " ", 1);
}

static htmlSAXHandler html_sax = {
    .startElement = html_on_start,
    .endElement = html_on_end,
    .characters = html_on_text,
    .cdataBlock = html_on_text,
    .ignorableWhitespace = html_on_blank,
};

/* ---- Parser ---- */

static void html_fail(fp_html *h, const char *why)
{
    if (!h->failed)
        snprintf(h->err, sizeof h->err, "%s", why);
    h->failed = 1;
}

/* Length of the valid UTF-8 sequence at p (avail bytes), 0 when p[0] starts none,
 * -1 when the bytes are a valid but incomplete start. */
static int html_utf8_len(const uint8_t *p, size_t avail)
{
    uint8_t c = p[0];
    if (c < 0x80)
        return 1;
    if (c < 0xC2 || c > 0xF4)
        return 0;
    int need = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    uint8_t lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    uint8_t hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    for (int k = 1; k < need; k++) {
        if ((size_t)k >= avail)
            return -1;
        if (k == 1 ? (p[k] < lo || p[k] > hi) : (p[k] < 0x80 || p[k] > 0xBF))
            return 0;
    }
    return need;
}

/* Whether the valid UTF-8 sequence of l bytes at p is U+FFFE or U+FFFF. They are no
 * XML characters: libxml2 2.9 takes one inside markup (a tag name, an attribute) for
 * a fatal encoding error and stops the page, so html_clean makes each a U+FFFD. */
static int html_nonchar(const uint8_t *p, int l)
{
    return l == 3 && p[0] == 0xEF && p[1] == 0xBF && p[2] >= 0xBE;
}

/* The BOM, if any, at the start of the document: its length and encoding. */
static size_t html_bom(const uint8_t *p, size_t n, xmlCharEncoding *enc)
{
    if (n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) {
        *enc = XML_CHAR_ENCODING_UTF8;
        return 3;
    }
    if (n >= 2 && p[0] == 0xFF && p[1] == 0xFE) {
        *enc = XML_CHAR_ENCODING_UTF16LE;
        return 2;
    }
    if (n >= 2 && p[0] == 0xFE && p[1] == 0xFF) {
        *enc = XML_CHAR_ENCODING_UTF16BE;
        return 2;
    }
    *enc = XML_CHAR_ENCODING_UTF8;     /* undeclared: UTF-8 unless a <meta> says otherwise */
    return 0;
}

static int html_push(fp_html *h, const char *p, size_t n, int terminate);

/* Whether p[0..n) contains "charset" in any case (a <meta> may declare one). */
static int html_mentions_charset(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 7 <= n; i++)
        if ((p[i] | 0x20) == 'c' && strncasecmp((const char *)p + i, "charset", 7) == 0)
            return 1;
    return 0;
}

/* A new libxml2 push parser in h->ctxt, reading encoding enc. 0, or -1 (failed). */
static int html_new_ctxt(fp_html *h, xmlCharEncoding enc)
{
    h->ctxt = htmlCreatePushParserCtxt(&html_sax, h, NULL, 0, NULL, enc);
    if (h->ctxt == NULL) {
        html_fail(h, "out of memory creating the HTML parser");
        return -1;
    }
    htmlCtxtUseOptions(h->ctxt, HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | HTML_PARSE_NONET |
                                HTML_PARSE_NODEFDTD | (h->ignore_enc ? HTML_PARSE_IGNORE_ENC : 0));
    return 0;
}

/* Whether the first bytes of a page, p[0..n), are UTF-8 beyond doubt: no byte sequence
 * invalid in UTF-8 (an incomplete one at the end aside) and at least 4 multi-byte
 * sequences. Text in a legacy charset almost never is (a Latin-1 accent is one byte
 * among ASCII ones; GB2312, Shift_JIS, EUC-KR and Big5 pairs are not lead and
 * continuation bytes), so a page like that declaring another charset was stored as
 * UTF-8 with its old declaration (algorithm v5 reads it so; the other algorithms keep
 * following the declaration, as their fingerprints always did). */
static int html_head_utf8(const uint8_t *p, size_t n)
{
    unsigned multi = 0;
    for (size_t i = 0; i < n;) {
        int l = html_utf8_len(p + i, n - i);
        if (l < 0)
            break;              /* cut at the end of the head */
        if (l == 0)
            return 0;
        multi += l > 1;
        i += (size_t)l;
    }
    return multi >= 4;
}

/* Makes the parser for the document whose first bytes are h->head. */
static int html_create(fp_html *h, int terminate)
{
    xmlCharEncoding enc;
    size_t bom = html_bom(h->head, h->nhead, &enc);
    h->declared = html_mentions_charset(h->head, h->nhead);
    if (h->tree && h->declared && bom == 0 && html_head_utf8(h->head, h->nhead)) {
        h->ignore_enc = 1;
        h->declared = 0;        /* UTF-8 from the first byte: html_clean checks it all */
    }
    h->utf16 = enc == XML_CHAR_ENCODING_UTF16LE || enc == XML_CHAR_ENCODING_UTF16BE;
    if (html_new_ctxt(h, enc) != 0)
        return -1;
    return html_push(h, (const char *)h->head + bom, h->nhead - bom, terminate);
}

/* After a chunk: an error when libxml2 stopped or holds too much unparsed input. */
static int html_check(fp_html *h, int terminated)
{
    htmlParserCtxtPtr c = h->ctxt;
    if (c->disableSAX || (!terminated && c->instate == XML_PARSER_EOF)) {
        const xmlError *e = xmlCtxtGetLastError(c);
        char why[160];
        snprintf(why, sizeof why, "the HTML parser stopped: %.100s",
                 e && e->message ? e->message : "unreadable input");
        why[strcspn(why, "\n")] = '\0';
        html_fail(h, why);
        return -1;
    }
    if (c->input && c->input->end && c->input->cur &&
        (size_t)(c->input->end - c->input->cur) > FP_HTML_MAX_PENDING) {
        html_fail(h, "more than 64 MiB of HTML without a tag boundary (a tag, comment or "
                     "attribute that long, or text with no '<' or '&'): refused to bound memory");
        return -1;
    }
    return 0;
}

#if defined(__SSE2__)
/* Whether the 16 bytes at p are all ASCII and none is NUL (html_clean passes them as
 * they are). */
static int html_plain16(const uint8_t *p)
{
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    return _mm_movemask_epi8(_mm_or_si128(v, _mm_cmpeq_epi8(v, _mm_setzero_si128()))) == 0;
}
#endif

/* The length of the run at the start of in[0..n) that libxml2 may read as it is:
 * bytes other than NUL and, when utf8 is set, valid UTF-8 sequences other than U+FFFE
 * and U+FFFF. It ends at the first byte html_clean must change, or (*held = 1, unless
 * final) at an incomplete UTF-8 sequence at the end. */
static size_t html_clean_run(const uint8_t *in, size_t n, int utf8, int final, int *held)
{
    size_t i = 0;
    *held = 0;
    while (i < n) {
#if defined(__SSE2__)
        if (i + 16 <= n && html_plain16(in + i)) {
            i += 16;
            continue;
        }
#endif
        uint8_t c = in[i];
        if (c < 0x80 || !utf8) {
            if (c == 0)
                break;
            i++;
            continue;
        }
        int l = html_utf8_len(in + i, n - i);
        if (l < 0 && !final) {
            *held = 1;
            break;
        }
        if (l <= 0 || html_nonchar(in + i, l))
            break;
        i += (size_t)l;
    }
    return i;
}

/* Cleans in[0..n) for libxml2: NUL bytes become spaces (libxml2 stops at a NUL in
 * places; HTML gives them no meaning in text), and when utf8 is set every byte that
 * does not start a valid UTF-8 sequence becomes U+FFFD (libxml2 would otherwise read
 * the rest of the page as ISO-8859-1), as do U+FFFE and U+FFFF. An incomplete
 * sequence at the end goes to h->pend unless final. Returns the bytes to hand over
 * (*len of them): in itself while nothing changes (most pages: no copy), else out,
 * where at most 3 * n bytes are written. */
static const uint8_t *html_clean(fp_html *h, const uint8_t *in, size_t n, int utf8,
                                 int final, uint8_t *out, size_t *len)
{
    int held = 0;
    size_t i = h->utf16 ? n : html_clean_run(in, n, utf8, final, &held), o = i;
    const uint8_t *ret = in;
    if (i < n && !held) {
        ret = out;
        memcpy(out, in, i);
        while (i < n && !held) {
            /* in[i] is a NUL, or starts no valid UTF-8 sequence or a noncharacter */
            int l = in[i] < 0x80 || !utf8 ? 1 : html_utf8_len(in + i, n - i);
            if (in[i] == 0) {
                out[o++] = ' ';
            } else {
                memcpy(out + o, "\xEF\xBF\xBD", 3);
                o += 3;
            }
            i += l > 0 ? (size_t)l : 1;
            size_t k = html_clean_run(in + i, n - i, utf8, final, &held);
            memcpy(out + o, in + i, k);
            o += k;
            i += k;
        }
    }
    if (held) {
        h->npend = n - i;
        memcpy(h->pend, in + i, h->npend);
    }
    *len = o;
    return ret;
}

/* Checks UTF-8 while libxml2 reads UTF-8 as is, and the charset can no longer
 * change: no declaration in the first 1024 bytes (where HTML puts the <meta>), or the
 * body has started (libxml2 reads a <meta> of the head only; its tag may end past
 * those 1024 bytes). */
static int html_utf8_mode(const fp_html *h)
{
    const htmlParserCtxtPtr c = h->ctxt;
    return (!h->declared || h->body) && c->input && c->input->buf &&
           c->input->buf->encoder == NULL;
}

/* libxml2 stops reading at the end of the document (after </html>, the state is EOF
 * with the rest left unparsed); browsers show what follows as part of the body, and
 * pages often carry such trailers. So a UTF-8 page goes on in a new parser from the
 * first byte left (at most HTML_MAX_RESTARTS times, and only while that makes
 * progress). A page in another charset stops there (its undecoded bytes cannot be
 * handed over). Returns 0, or -1 out of memory. */
static int html_restart_after_end(fp_html *h, int terminate)
{
    for (unsigned k = 0; k < HTML_MAX_RESTARTS; k++) {
        htmlParserCtxtPtr c = h->ctxt;
        if (c->instate != XML_PARSER_EOF || c->disableSAX || !c->input || !c->input->cur ||
            !c->input->buf || c->input->buf->encoder != NULL || h->utf16)
            return 0;
        size_t left = (size_t)(c->input->end - c->input->cur);
        if (left == 0)
            return 0;
        char *rest = malloc(left);
        if (rest == NULL) {
            html_fail(h, "out of memory");
            return -1;
        }
        memcpy(rest, c->input->cur, left);
        html_boundary(h);
        if (h->tree)
            htree_restart(h->tree);
        htmlFreeParserCtxt(c);
        if (html_new_ctxt(h, XML_CHAR_ENCODING_UTF8) != 0) {
            free(rest);
            return -1;
        }
        h->skip = h->title = 0;
        memset(h->cname, 0, sizeof h->cname);     /* a new dictionary: new name pointers */
        htmlParseChunk(h->ctxt, rest, (int)left, terminate);
        free(rest);
        c = h->ctxt;
        if (c->instate == XML_PARSER_EOF && c->input && c->input->cur &&
            (size_t)(c->input->end - c->input->cur) >= left)
            return 0;           /* no progress: html_check reports it */
    }
    if (h->ctxt->instate == XML_PARSER_EOF && h->ctxt->input && h->ctxt->input->cur &&
        h->ctxt->input->end > h->ctxt->input->cur) {
        html_fail(h, "more than 64 documents ended by </html> in one 64 KiB piece of the "
                     "page: refused (each starts a new parser)");
        return -1;
    }
    return 0;
}

/* Hands the bytes gathered in h->acc to libxml2 (through html_clean), with the end
 * of the document when last. */
static int html_feed_block(fp_html *h, int last)
{
    const uint8_t *in = h->acc;
    size_t n = h->nacc, o;
    if (h->npend) {         /* an incomplete UTF-8 sequence held: it goes first */
        memcpy(h->in, h->pend, h->npend);
        memcpy(h->in + h->npend, h->acc, h->nacc);
        in = h->in;
        n += h->npend;
        h->npend = 0;
    }
    const uint8_t *p = html_clean(h, in, n, html_utf8_mode(h), last, h->out, &o);
    h->nacc = 0;
    htmlParseChunk(h->ctxt, (const char *)p, (int)o, last);
    if (html_restart_after_end(h, last) != 0 || html_check(h, last) != 0)
        return -1;
    return 0;
}

/* Feeds p[0..n), the end of the document too when terminate. libxml2 gets the page in
 * blocks of HTML_CHUNK bytes whatever pieces the caller hands over: its push parser is
 * not quite indifferent to where chunks end (after </html>, for one), and a page must
 * fingerprint the same however it is read. */
static int html_push(fp_html *h, const char *p, size_t n, int terminate)
{
    while (n > 0) {
        size_t m = HTML_CHUNK - h->nacc < n ? HTML_CHUNK - h->nacc : n;
        memcpy(h->acc + h->nacc, p, m);
        h->nacc += m;
        p += m;
        n -= m;
        if (h->nacc == HTML_CHUNK && html_feed_block(h, 0) != 0)
            return -1;
    }
    return terminate ? html_feed_block(h, 1) : 0;
}

static fp_html *html_alloc(unsigned flags)
{
    pthread_once(&html_once, html_init);
    fp_html *h = malloc(sizeof *h);
    if (h == NULL)
        return NULL;
    memset(h, 0, offsetof(fp_html, acc));
    h->flags = flags;
    return h;
}

void fp_html_free(fp_html *h);

fp_html *fp_html_new(const fp_params *p, unsigned flags)
{
    unsigned v = p && p->version ? p->version : FP_VERSION_DEFAULT;
    fp_html *h = html_alloc(flags);
    if (h == NULL)
        return NULL;
    h->fs = fp_state_new_p(p);
    if (h->fs == NULL) {
        fp_html_free(h);
        return NULL;
    }
    if (v == FP_V5 && !(flags & FP_HTML_ALL_TEXT)) {
        h->tree = malloc(sizeof *h->tree);
        if (h->tree == NULL) {
            fp_html_free(h);
            return NULL;
        }
        htree_init(h->tree);
    }
    return h;
}

fp_html *fp_html_new_sink(unsigned flags, fp_html_sink sink, void *arg)
{
    fp_html *h = html_alloc(flags);
    if (h) {
        h->sink = sink;
        h->arg = arg;
    }
    return h;
}

static void html_reset(fp_html *h)
{
    if (h->ctxt)
        htmlFreeParserCtxt(h->ctxt);
    h->ctxt = NULL;
    h->skip = h->title = 0;
    h->nhead = 0;
    h->npend = 0;
    h->nacc = 0;
    h->ntext = 0;
    h->utf16 = 0;
    h->body = 0;
    h->ignore_enc = 0;
    memset(h->cname, 0, sizeof h->cname);
    if (h->tree)
        htree_reset(h->tree);
}

void fp_html_free(fp_html *h)
{
    if (h == NULL)
        return;
    html_reset(h);
    fp_state_free(h->fs);
    if (h->tree)
        htree_free(h->tree);
    free(h->tree);
    free(h->art.text);
    free(h);
}

int fp_html_update(fp_html *h, const void *data, size_t len)
{
    const char *p = data;
    if (h->failed)
        return -1;
    if (h->ctxt == NULL) {
        /* the parser is made once the first 1024 bytes are here */
        size_t m = sizeof h->head - h->nhead < len ? sizeof h->head - h->nhead : len;
        memcpy(h->head + h->nhead, p, m);
        h->nhead += m;
        p += m;
        len -= m;
        if (h->nhead < sizeof h->head)
            return 0;
        if (html_create(h, 0) != 0)
            return -1;
    }
    return len ? html_push(h, p, len, 0) : 0;
}

/* Algorithm v5 at the end of a page: the article of the tree (h->art), fingerprinted
 * into h->fs; -1 out of memory (with h->err), else 0. */
static int html_article_into_fs(fp_html *h)
{
    int rc = 0;
    htree_finish(h->tree);
    free(h->art.text);
    if (hart_extract(h->tree, &h->art) != 0) {
        h->art = (hart_result){ 0 };
        html_fail(h, "out of memory extracting the article");
        rc = -1;
    }
    if (h->art.text)
        fp_state_update(h->fs, h->art.text, h->art.len);
    return rc;
}

int fp_html_final(fp_html *h, uint64_t *fp)
{
    int rc = 0;
    if (!h->failed && h->ctxt == NULL) {
        if (h->nhead > 0 && html_create(h, 1) != 0)
            rc = -1;
    } else if (!h->failed && html_push(h, "", 0, 1) != 0) {
        rc = -1;
    }
    if (h->failed)
        rc = -1;
    if (h->tree && html_article_into_fs(h) != 0)
        rc = -1;
    else if (!h->tree && h->fs)
        html_fs_flush(h);
    uint64_t v = h->fs ? fp_state_final(h->fs) : 0;
    if (fp)
        *fp = v;
    html_reset(h);
    if (rc == 0)
        h->err[0] = '\0';
    h->failed = 0;
    return rc;
}

const char *fp_html_article(const fp_html *h, size_t *len, const char **rule)
{
    if (h->tree == NULL || h->art.text == NULL)
        return NULL;
    *len = h->art.len;
    if (rule)
        *rule = h->art.rule;
    return h->art.text;
}

const char *fp_html_error(const fp_html *h)
{
    return h->err[0] ? h->err : "no error";
}

int fp_html_text(const char *html, size_t len, const fp_params *p, unsigned flags,
                 uint64_t *fp, char *err, size_t errlen)
{
    fp_html *h = fp_html_new(p, flags);
    if (h == NULL) {
        snprintf(err, errlen, "bad fingerprint parameters or out of memory");
        return -1;
    }
    int rc = fp_html_update(h, html, len);
    int rc2 = fp_html_final(h, fp);
    if (rc != 0 || rc2 != 0)
        snprintf(err, errlen, "%s", fp_html_error(h));
    fp_html_free(h);
    return rc != 0 || rc2 != 0 ? -1 : 0;
}
