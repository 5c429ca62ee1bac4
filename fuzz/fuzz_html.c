/* fuzz_html.c: libFuzzer target for the HTML text of fingerprints (common/core/html.c
 * on libxml2), the article extraction of algorithm v5 (html_tree.c, html_article.c)
 * and the tokenizers behind them (v1's and v5's).
 *
 * The first byte chooses the piece size (1..256), the flags (FP_HTML_TITLE; bit 2:
 * FP_HTML_ALL_TEXT) and the algorithm (bit 1: v1 with window 1 + bits 3..5, else v5);
 * the rest is the document. Checks: no crash, leak, overrun or hang under the
 * sanitizers; the fingerprint is the same fed whole or in pieces; all visible text,
 * collected from a sink parser, has the fingerprint fp_html_text gives with v1 and
 * with v5 and FP_HTML_ALL_TEXT; the text handed to the sink is valid UTF-8 when the
 * page declares no charset (html.c then turns invalid bytes into U+FFFD; with a
 * declaration libxml2 reads the first 1024 bytes itself and may pass invalid bytes
 * on, which the tokenizer takes as they are); a failed document leaves a message and
 * the parser usable. fp_html_extract with v1 (the first byte's window), v5 and v5 with
 * FP_HTML_ALL_TEXT: it fails exactly when fp_html_text does, else its fingerprint is
 * fp_html_text's and its text's (fp_text_p), the text NUL-terminated, its rule
 * all-text without an article, else one of the article rules ("empty" exactly when
 * the text is). v5's article: the same fingerprint fed whole or in pieces. */
#include <strings.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fingerprint.h"
#include "html.h"

static int fz_valid_utf8(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        size_t need = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                      : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (need == 0 || i + need > n)
            return 0;
        for (size_t k = 1; k < need; k++)
            if ((p[i + k] & 0xC0) != 0x80)
                return 0;
        i += need;
    }
    return 1;
}

typedef struct fz_sink {
    int bad;
    uint8_t carry[4];         /* a sequence split between two sink calls */
    size_t ncarry;
    fp_state *v1, *v5;        /* v1 and v5 fingerprints of the text */
} fz_sink;

/* libxml2 hands text in pieces that may split a UTF-8 sequence: check whole
 * sequences, carrying an incomplete tail to the next piece. */
static void fz_on_text(void *arg, const char *t, size_t n)
{
    fz_sink *s = arg;
    fp_state_update(s->v1, t, n);
    fp_state_update(s->v5, t, n);
    uint8_t buf[512 + 4];
    while (n > 0) {
        size_t m = n < 512 ? n : 512;
        memcpy(buf, s->carry, s->ncarry);
        memcpy(buf + s->ncarry, t, m);
        size_t len = s->ncarry + m, end = len;
        /* hold back the last sequence if it may be incomplete */
        size_t k = len;
        while (k > 0 && len - k < 3 && (buf[k - 1] & 0xC0) == 0x80)
            k--;
        if (k > 0 && buf[k - 1] >= 0xC0)
            end = k - 1;
        s->ncarry = len - end;
        if (s->ncarry > sizeof s->carry) {
            s->bad = 1;
            s->ncarry = 0;
        }
        memcpy(s->carry, buf + end, s->ncarry);
        if (!fz_valid_utf8(buf, end))
            s->bad = 1;
        t += m;
        n -= m;
    }
}

/* fp_html_extract of doc with p and flags against fp_html_text: aborts on a mismatch. */
static void fz_extract(const char *doc, size_t len, const fp_params *p, unsigned flags)
{
    char err[200], err2[200];
    uint64_t want = 0;
    int rc_text = fp_html_text(doc, len, p, flags, &want, err, sizeof err);
    fp_extraction x;
    int rc = fp_html_extract(doc, len, p, flags, &x, err2, sizeof err2);
    if ((rc == 0) != (rc_text == 0))
        abort();
    if (rc != 0) {
        if (x.text != NULL || strcmp(err, err2) != 0)
            abort();
        return;
    }
    int article = p->version == FP_V5 && !(flags & FP_HTML_ALL_TEXT);
    if (x.text == NULL || x.text[x.len] != '\0' || x.rule == NULL || x.fp != want ||
        fp_text_p(x.text, x.len, p) != want || strlen(x.text) != x.len)
        abort();
    if (article) {
        if (strcmp(x.rule, "article") != 0 && strcmp(x.rule, "article-relaxed") != 0 &&
            strcmp(x.rule, "page") != 0 && strcmp(x.rule, "empty") != 0)
            abort();
        if ((x.len == 0) != (strcmp(x.rule, "empty") == 0))
            abort();
    } else if (strcmp(x.rule, "all-text") != 0) {
        abort();
    }
    fp_extraction_free(&x);
    if (x.text != NULL)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = (size_t)(data[0] & 0xFF) + 1;
    unsigned flags = data[0] & 1 ? FP_HTML_TITLE : 0;
    unsigned aflags = flags | (data[0] & 4 ? FP_HTML_ALL_TEXT : 0);
    const fp_params v1 = {FP_V1, 1u + ((data[0] >> 3) & 7)}, v5 = {FP_V5, 0};
    const fp_params alg = data[0] & 2 ? v1 : v5;
    const char *doc = (const char *)data + 1;
    size_t len = size - 1;

    uint64_t whole = 0, parts = 0;
    char err[200];
    int rc_whole = fp_html_text(doc, len, &alg, aflags, &whole, err, sizeof err);
    fp_html *h = fp_html_new(&alg, aflags);
    if (h == NULL)
        abort();
    int rc = 0;
    for (size_t o = 0; o < len && rc == 0; o += piece)
        rc = fp_html_update(h, doc + o, len - o < piece ? len - o : piece);
    int rc_parts = fp_html_final(h, &parts) != 0 || rc != 0;
    if (rc_parts && strlen(fp_html_error(h)) == 0)
        abort();
    if ((rc_whole == 0) != !rc_parts || (rc_whole == 0 && whole != parts))
        abort();
    /* usable after any document */
    uint64_t again, fresh;
    if (fp_html_update(h, "<p>x</p>", 8) != 0 || fp_html_final(h, &again) != 0 ||
        fp_html_text("<p>x</p>", 8, &alg, aflags, &fresh, err, sizeof err) != 0 ||
        again != fresh)
        abort();
    fp_html_free(h);

    /* all visible text: v1's page fingerprint, and v5's with FP_HTML_ALL_TEXT */
    uint64_t a1 = 0, a5 = 0;
    int r1 = fp_html_text(doc, len, &v1, flags, &a1, err, sizeof err);
    int ra5 = fp_html_text(doc, len, &v5, flags | FP_HTML_ALL_TEXT, &a5, err, sizeof err);
    if (r1 != ra5)
        abort();
    fz_sink s = {0, {0}, 0, fp_state_new_p(&v1), fp_state_new_p(&v5)};
    if (s.v1 == NULL || s.v5 == NULL)
        abort();
    fp_html *t = fp_html_new_sink(flags, fz_on_text, &s);
    if (t == NULL)
        abort();
    fp_html_update(t, doc, len);
    int rc_sink = fp_html_final(t, NULL);
    fp_html_free(t);
    uint64_t t1 = fp_state_final(s.v1), t5 = fp_state_final(s.v5);
    fp_state_free(s.v1);
    fp_state_free(s.v5);
    if ((rc_sink == 0) != (r1 == 0) || (r1 == 0 && (a1 != t1 || a5 != t5)))
        abort();
    int declared = 0;
    for (size_t i = 0; i + 7 <= len && i < 1024 && !declared; i++)
        declared = strncasecmp(doc + i, "charset", 7) == 0;
    int utf16 = len >= 2 && (((uint8_t)doc[0] == 0xFF && (uint8_t)doc[1] == 0xFE) ||
                             ((uint8_t)doc[0] == 0xFE && (uint8_t)doc[1] == 0xFF));
    if (!declared && !utf16 && (s.bad || !fz_valid_utf8(s.carry, s.ncarry)))
        abort();

    /* v5: the article found on the page's tree, the same fed whole or in pieces */
    uint64_t w5 = 0, p5 = 0;
    int r5 = fp_html_text(doc, len, &v5, flags, &w5, err, sizeof err);
    fp_html *h5 = fp_html_new(&v5, flags);
    if (h5 == NULL)
        abort();
    rc = 0;
    for (size_t o = 0; o < len && rc == 0; o += piece)
        rc = fp_html_update(h5, doc + o, len - o < piece ? len - o : piece);
    int rp5 = fp_html_final(h5, &p5) != 0 || rc != 0;
    if ((r5 == 0) != !rp5 || (r5 == 0 && w5 != p5))
        abort();
    fp_html_free(h5);

    fz_extract(doc, len, &v1, flags);
    fz_extract(doc, len, &v5, flags);
    fz_extract(doc, len, &v5, flags | FP_HTML_ALL_TEXT);
    return 0;
}
