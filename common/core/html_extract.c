/* html_extract.c: the text an HTML page's fingerprint is taken from (fp_html_extract),
 * so that a user who sees two pages match, or not, can read what was compared.
 *
 * Algorithm v5 reads it from the parser (fp_html_article: the article html_article.c
 * found, which is what the parser fingerprinted). Algorithms v1 to v4 take it from
 * html.c's own machinery: a sink parser
 * (fp_html_new_sink, with FP_HTML_MAIN when the algorithm extracts the main content)
 * hands over each piece of text with the tiers it belongs to; the pieces are gathered
 * per tier, and the tier fp_html_tier names after the page is the text. Its fingerprint
 * is that text's fingerprint (fp_text_p): the sink receives the same bytes, block
 * boundaries included, as the fingerprint states of fp_html_new, but for two things
 * that change no fingerprint (the kept blocks reach the content and main states as
 * recorded features, fp_span.h, whose replays equal their text's; with extraction the
 * all-text state reads one more "\n" at the page's end, a separator that adds no
 * token), so it equals fp_html_text's; tests/unit/test_html_extract.c and
 * fuzz/fuzz_html.c check it. docs/fingerprint.md "What was fingerprinted". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"

/* Tiers gathered (index: 0 all visible text, 1 content, 2 main). */
#define HX_TIERS 3

/* Text of one tier, growing. */
typedef struct hx_buf {
    char *s;
    size_t n, cap;
} hx_buf;

typedef struct hx_gather {
    hx_buf t[HX_TIERS];
    size_t limit;              /* bytes a tier may reach */
    int failed;                /* out of memory, or a tier past limit */
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

/* fp_html_sink: a piece of text into each tier it belongs to. */
static void hx_sink(void *arg, unsigned tiers, const char *s, size_t n)
{
    hx_gather *g = arg;
    if (g->failed)
        return;
    for (unsigned i = 0; i < HX_TIERS; i++)
        if ((tiers & (1u << i)) && hx_append(&g->t[i], s, n, g->limit, &g->why) != 0) {
            g->failed = 1;
            return;
        }
}

static int hx_tier_index(unsigned tier)
{
    return tier == FP_HTML_TIER_MAIN ? 2 : tier == FP_HTML_TIER_CONTENT ? 1 : 0;
}

/* The rule names of html.c's tiers (docs/fingerprint.md "Main content (v3)"). */
static const char *hx_tier_rule(unsigned tier)
{
    return tier == FP_HTML_TIER_MAIN ? "main" : tier == FP_HTML_TIER_CONTENT ? "content"
                                                                             : "all-text";
}

/* Algorithms v1-v4: the tier html.c chose, gathered through a sink parser. Returns 0
 * with out filled (out->text owned by the caller), or -1 with err. */
static int hx_tiers(const char *html, size_t len, const fp_params *p, unsigned flags,
                    fp_extraction *out, char *err, size_t errlen)
{
    hx_gather g;
    memset(&g, 0, sizeof g);
    g.limit = FP_HTML_EXTRACT_TEXT_MAX;
    unsigned f = flags & ~(unsigned)FP_HTML_MAIN;
    if ((p->version == FP_V3 || p->version == FP_V4) && !(flags & FP_HTML_ALL_TEXT))
        f |= FP_HTML_MAIN;              /* as fp_html_new decides */
    fp_html *h = fp_html_new_sink(f, hx_sink, &g);
    if (h == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = fp_html_update(h, html, len);
    int rc2 = fp_html_final(h, NULL);
    unsigned tier = fp_html_tier(h);
    if (rc != 0 || rc2 != 0)
        snprintf(err, errlen, "%s", fp_html_error(h));
    else if (g.failed)
        snprintf(err, errlen, "%s", g.why);
    fp_html_free(h);
    int k = hx_tier_index(tier);
    for (int i = 0; i < HX_TIERS; i++)
        if (i != k || rc != 0 || rc2 != 0 || g.failed)
            free(g.t[i].s);
    if (rc != 0 || rc2 != 0 || g.failed)
        return -1;
    if (g.t[k].s == NULL && hx_append(&g.t[k], "", 0, g.limit, &g.why) != 0) {
        snprintf(err, errlen, "%s", g.why);
        return -1;
    }
    out->text = g.t[k].s;
    out->len = g.t[k].n;
    out->rule = hx_tier_rule(tier);
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
    if (flags & ~(unsigned)(FP_HTML_TITLE | FP_HTML_ALL_TEXT | FP_HTML_MAIN)) {
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
    return hx_tiers(html ? html : "", len, &q, flags, out, err, errlen);
}

void fp_extraction_free(fp_extraction *x)
{
    if (x == NULL)
        return;
    free(x->text);
    memset(x, 0, sizeof *x);
}
