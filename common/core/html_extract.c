/* html_extract.c: the text an HTML page's fingerprint is taken from (fp_html_extract),
 * so that a user who sees two pages match, or not, can read what was compared.
 *
 * Algorithm v5 reads it from the parser (fp_html_article: the article html_article.c
 * found, which is what the parser fingerprinted). Algorithm v1, and v5 with
 * FP_HTML_ALL_TEXT, fingerprint all visible text: a sink parser (fp_html_new_sink)
 * hands it over piece by piece, the pieces are gathered, and the fingerprint is that
 * text's (fp_text_p): the sink receives the same bytes, block boundaries included, as
 * the fingerprint state of fp_html_new, so it equals fp_html_text's;
 * tests/unit/test_html_extract.c and fuzz/fuzz_html.c check it. docs/fingerprint.md
 * "What was fingerprinted". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"

/* The text gathered, growing. */
typedef struct hx_buf {
    char *s;
    size_t n, cap;
} hx_buf;

typedef struct hx_gather {
    hx_buf t;
    size_t limit;              /* bytes the text may reach */
    int failed;                /* out of memory, or the text past limit */
    const char *why;
} hx_gather;

/* Appends s[0..n) to b (NUL-terminated); 0, or -1 out of memory or past limit. */
static int hx_append(hx_buf *b, const char *s, size_t n, size_t limit, const char **why)
{
    if (n > limit - b->n) {
        *why = "the extracted text is larger than its bound (FP_HTML_EXTRACT_TEXT_MAX)";
        return -1;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (p == NULL) {
            *why = "out of memory";
            return -1;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
    return 0;
}

/* fp_html_sink: a piece of text gathered. */
static void hx_sink(void *arg, const char *s, size_t n)
{
    hx_gather *g = arg;
    if (!g->failed && hx_append(&g->t, s, n, g->limit, &g->why) != 0)
        g->failed = 1;
}

/* Algorithm v1, and v5 with FP_HTML_ALL_TEXT: all visible text, gathered through a
 * sink parser. Returns 0 with out filled (out->text owned by the caller), or -1 with
 * err. */
static int hx_all_text(const char *html, size_t len, const fp_params *p, unsigned flags,
                       fp_extraction *out, char *err, size_t errlen)
{
    hx_gather g;
    memset(&g, 0, sizeof g);
    g.limit = FP_HTML_EXTRACT_TEXT_MAX;
    fp_html *h = fp_html_new_sink(flags, hx_sink, &g);
    if (h == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = fp_html_update(h, html, len);
    int rc2 = fp_html_final(h, NULL);
    if (rc != 0 || rc2 != 0)
        snprintf(err, errlen, "%s", fp_html_error(h));
    else if (g.failed)
        snprintf(err, errlen, "%s", g.why);
    fp_html_free(h);
    if (rc != 0 || rc2 != 0 || g.failed) {
        free(g.t.s);
        return -1;
    }
    if (g.t.s == NULL && hx_append(&g.t, "", 0, g.limit, &g.why) != 0) {
        snprintf(err, errlen, "%s", g.why);
        return -1;
    }
    out->text = g.t.s;
    out->len = g.t.n;
    out->rule = "all-text";
    out->fp = fp_text_p(out->text, out->len, p);
    return 0;
}

/* Algorithm v5 (without FP_HTML_ALL_TEXT): the article html.c found on the page's
 * tree and fingerprinted (fp_html_article). Returns 0 with out filled, or -1 with err. */
static int hx_article(const char *html, size_t len, const fp_params *p, unsigned flags,
                      fp_extraction *out, char *err, size_t errlen)
{
    fp_html *h = fp_html_new(p, flags);
    if (h == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    uint64_t fp = 0;
    int rc = fp_html_update(h, html, len);
    int rc2 = fp_html_final(h, &fp);
    size_t n = 0;
    const char *rule = NULL;
    const char *text = fp_html_article(h, &n, &rule);
    if (rc != 0 || rc2 != 0 || text == NULL) {
        snprintf(err, errlen, "%s", fp_html_error(h));
        fp_html_free(h);
        return -1;
    }
    out->text = malloc(n + 1);
    if (out->text == NULL) {
        snprintf(err, errlen, "out of memory");
        fp_html_free(h);
        return -1;
    }
    memcpy(out->text, text, n + 1);
    out->len = n;
    out->rule = rule;
    out->fp = fp;
    fp_html_free(h);
    return 0;
}

int fp_html_extract(const char *html, size_t len, const fp_params *p, unsigned flags,
                    fp_extraction *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    fp_params q = p ? *p : (fp_params){ 0, 0 };
    if (fp_params_check(&q, err, errlen) != 0)
        return -1;
    if (q.version == 0)
        q.version = FP_VERSION_DEFAULT;
    if (flags & ~(unsigned)(FP_HTML_TITLE | FP_HTML_ALL_TEXT)) {
        snprintf(err, errlen, "unknown HTML flags 0x%x", flags);
        return -1;
    }
    if (len > FP_HTML_EXTRACT_MAX) {
        snprintf(err, errlen, "the page is larger than %zu MiB: refused to bound the "
                 "extraction's memory", FP_HTML_EXTRACT_MAX >> 20);
        return -1;
    }
    if (html == NULL && len > 0) {
        snprintf(err, errlen, "no page (NULL) of %zu bytes", len);
        return -1;
    }
    /* one branch per extraction design, chosen by q.version */
    if (q.version == FP_V5 && !(flags & FP_HTML_ALL_TEXT))
        return hx_article(html ? html : "", len, &q, flags, out, err, errlen);
    return hx_all_text(html ? html : "", len, &q, flags, out, err, errlen);
}

void fp_extraction_free(fp_extraction *x)
{
    if (x == NULL)
        return;
    free(x->text);
    memset(x, 0, sizeof *x);
}
