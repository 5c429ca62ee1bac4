/* test_html.c: HTML text for fingerprints (common/core/html.c): what counts as text
 * (entities, scripts, styles, comments, attributes, head, title, block and inline
 * elements), charsets (BOM, <meta charset>, http-equiv, invalid UTF-8), NUL bytes,
 * deep nesting, the bound on buffered input, and streaming in any pieces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fingerprint.h"
#include "html.h"
#include "testutil.h"

typedef struct textbuf {
    char *s;
    size_t n, cap;
} textbuf;

static void sink(void *arg, const char *t, size_t n)
{
    textbuf *b = arg;
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->s = realloc(b->s, b->cap);
        assert_non_null(b->s);
    }
    memcpy(b->s + b->n, t, n);
    b->n += n;
    b->s[b->n] = '\0';
}

/* The text of html with runs of white space squeezed to one space, trimmed. */
static char *extract(const char *html, size_t len, unsigned flags, int *rc)
{
    textbuf b = {NULL, 0, 0};
    sink(&b, "", 0);
    fp_html *h = fp_html_new_sink(flags, sink, &b);
    assert_non_null(h);
    int r1 = fp_html_update(h, html, len);
    uint64_t fp;
    int r2 = fp_html_final(h, &fp);
    *rc = r1 || r2 ? -1 : 0;
    fp_html_free(h);
    size_t o = 0;
    int space = 1;
    for (size_t i = 0; i < b.n; i++) {
        char c = b.s[i];
        int ws = c == ' ' || c == '\n' || c == '\t' || c == '\r';
        if (ws) {
            if (!space)
                b.s[o++] = ' ';
            space = 1;
        } else {
            b.s[o++] = c;
            space = 0;
        }
    }
    if (o > 0 && b.s[o - 1] == ' ')
        o--;
    b.s[o] = '\0';
    return b.s;
}

static void expect_text(const char *html, unsigned flags, const char *want)
{
    int rc;
    char *got = extract(html, strlen(html), flags, &rc);
    if (rc != 0 || strcmp(got, want) != 0)
        fail_msg("html %.80s\n  got  '%s' (rc %d)\n  want '%s'", html, got, rc, want);
    free(got);
}

static void test_text(void **state)
{
    (void)state;
    expect_text("<p>Hello <b>wor</b>ld</p>", 0, "Hello world");
    expect_text("<p>a</p><p>b</p><div>c<br>d</div><li>e</li>", 0, "a b c d e");
    expect_text("x &amp; y &lt;z&gt; &eacute;&#233;&#x41; &nbsp;.", 0, "x & y <z> ééA \xc2\xa0.");
    expect_text("<script>var a = '<p>no</p>';</script><style>p { x: 1 }</style>ok", 0, "ok");
    expect_text("a<!-- comment <p>no</p> -->b", 0, "ab");
    expect_text("<noscript>no</noscript><template>no</template><svg><text>no</text></svg>yes",
                0, "yes");
    expect_text("<a href=\"http://example.com/no\" title=\"no\">link</a> <img alt=\"no\">", 0,
                "link");
    expect_text("<html><head><title>Title</title><meta name=\"x\" content=\"no\"></head>"
                "<body>Body</body></html>", 0, "Body");
    expect_text("<html><head><title>Title</title></head><body>Body</body></html>", FP_HTML_TITLE,
                "Title Body");
    expect_text("<unknownelement>a</unknownelement>b", 0, "a b");
    expect_text("", 0, "");
    expect_text("no markup at all", 0, "no markup at all");
    expect_text("<p>unclosed <b>tags <i>everywhere", 0, "unclosed tags everywhere");
}

static void test_charsets(void **state)
{
    (void)state;
    expect_text("<html><head><meta charset=\"windows-1252\"></head><body>caf\xe9 \x93q\x94 \x80"
                "</body></html>", 0, "caf\xc3\xa9 \xe2\x80\x9cq\xe2\x80\x9d \xe2\x82\xac");
    expect_text("<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; "
                "charset=iso-8859-1\"></head><body>na\xefve</body></html>", 0, "na\xc3\xafve");
    expect_text("\xef\xbb\xbf<p>bom caf\xc3\xa9</p>", 0, "bom caf\xc3\xa9");
    expect_text("<p>caf\xc3\xa9</p>", 0, "caf\xc3\xa9");   /* undeclared: UTF-8 */
    /* UTF-16LE with a BOM */
    const char u16[] = "\xff\xfe<\0p\0>\0h\0\xe9\0<\0/\0p\0>\0";
    int rc;
    char *got = extract(u16, sizeof u16 - 1, 0, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(got, "h\xc3\xa9");
    free(got);
    /* invalid UTF-8 in an undeclared page: U+FFFD, the rest still UTF-8 */
    expect_text("<p>ab \xff\xfe bad \xc3\xa9 ok</p>", 0,
                "ab \xef\xbf\xbd\xef\xbf\xbd bad \xc3\xa9 ok");
    /* NUL bytes are spaces */
    const char nul[] = "<p>ab\0cd</p>";
    got = extract(nul, sizeof nul - 1, 0, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(got, "ab cd");
    free(got);
}

static void test_nesting_and_limits(void **state)
{
    (void)state;
    size_t depth = light() ? 10000 : 100000;
    size_t len = depth * 11 + 32;
    char *h = malloc(len);
    assert_non_null(h);
    size_t o = 0;
    for (size_t i = 0; i < depth; i++)
        o += (size_t)sprintf(h + o, "<div>");
    o += (size_t)sprintf(h + o, "deep text");
    for (size_t i = 0; i < depth / 2; i++)
        o += (size_t)sprintf(h + o, "</div>");
    int rc;
    char *got = extract(h, o, 0, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(got, "deep text");
    free(got);
    free(h);

    /* an attribute longer than FP_HTML_MAX_PENDING: a clear error, no crash */
    size_t big = FP_HTML_MAX_PENDING + (1u << 20);
    h = malloc(big + 64);
    assert_non_null(h);
    o = (size_t)sprintf(h, "<a href=\"");
    memset(h + o, 'x', big);
    o += big;
    o += (size_t)sprintf(h + o, "\">t</a>");
    fp_html *p = fp_html_new(NULL, 0);
    assert_non_null(p);
    int r1 = 0;
    for (size_t k = 0; k < o && r1 == 0; k += 1u << 20)
        r1 = fp_html_update(p, h + k, o - k < (1u << 20) ? o - k : 1u << 20);
    uint64_t fp;
    int r2 = fp_html_final(p, &fp);
    assert_true(r1 != 0 || r2 != 0);
    assert_non_null(strstr(fp_html_error(p), "64 MiB"));
    /* the parser is usable again after an error */
    assert_int_equal(fp_html_update(p, "<p>fine</p>", 11), 0);
    assert_int_equal(fp_html_final(p, &fp), 0);
    assert_true(fp == fp_text_p("fine", 4, NULL));
    fp_html_free(p);
    free(h);
}

/* Text after the end of the document (</html>) still counts, fed whole or in pieces;
 * a charset declared by a <meta> whose tag ends past byte 1024 is still honoured. */
static void test_trailer_and_late_meta(void **state)
{
    (void)state;
    expect_text("<html><body><p>alpha beta</p></body></html><p>gamma delta</p>", 0,
                "alpha beta gamma delta");
    expect_text("<html><body><p>a</p></body></html>\n<!-- c --></html><p>b</p></html>c", 0,
                "a b c");
    const char *page = "<html><body><p>alpha beta</p></body></html><p>gamma delta</p>";
    uint64_t want = fp_text_p("alpha beta gamma delta", 22, NULL), fp;
    fp_html *h = fp_html_new(NULL, 0);
    assert_non_null(h);
    size_t len = strlen(page);
    for (size_t piece = 1; piece <= len; piece++) {
        for (size_t o = 0; o < len; o += piece)
            assert_int_equal(fp_html_update(h, page + o, len - o < piece ? len - o : piece), 0);
        assert_int_equal(fp_html_final(h, &fp), 0);
        if (fp != want)
            fail_msg("trailer, pieces of %zu bytes differ", piece);
    }
    fp_html_free(h);
    char late[2048];
    int n = snprintf(late, sizeof late, "<html><head><!--%0900d--><meta http-equiv=\"Content-Type\" "
                     "content=\"text/html; charset=iso-8859-1\"%200s><body>caf\xe9 ok</body></html>",
                     0, "");
    assert_true(n > 1100 && n < (int)sizeof late);
    int rc;
    char *got = extract(late, (size_t)n, 0, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(got, "caf\xc3\xa9 ok");
    free(got);
}

/* Fingerprints: the page's text as plain text, whatever the pieces. */
static void test_fingerprint(void **state)
{
    (void)state;
    const char *page = "<!DOCTYPE html><html><head><title>T</title><style>p{}</style></head>"
                       "<body><p>The quick <b>brown</b> fox</p><script>x()</script>"
                       "<div>jumps over &amp; the lazy dog</div></body></html>";
    const char *plain = "The quick brown fox\njumps over & the lazy dog";
    uint64_t fp, want = fp_text_p(plain, strlen(plain), NULL);
    char err[200];
    assert_int_equal(fp_html_text(page, strlen(page), NULL, 0, &fp, err, sizeof err), 0);
    assert_true(fp == want);
    fp_params v1 = {FP_V1, 3};
    assert_int_equal(fp_html_text(page, strlen(page), &v1, 0, &fp, err, sizeof err), 0);
    assert_true(fp == fp_text_p(plain, strlen(plain), &v1));
    fp_html *h = fp_html_new(NULL, 0);
    assert_non_null(h);
    size_t len = strlen(page);
    for (size_t piece = 1; piece <= len; piece += 7) {
        for (size_t o = 0; o < len; o += piece)
            assert_int_equal(fp_html_update(h, page + o, len - o < piece ? len - o : piece), 0);
        assert_int_equal(fp_html_final(h, &fp), 0);
        if (fp != want)
            fail_msg("pieces of %zu bytes differ", piece);
    }
    fp_html_free(h);
    fp_params bad = {FP_V5, 5};
    assert_null(fp_html_new(&bad, 0));
    fp_params removed = {4, 0};       /* the former v4: no parser */
    assert_null(fp_html_new(&removed, 0));
}

/* U+FFFE and U+FFFF (no XML characters) in a tag name, an attribute, a title and text:
 * the page is read (libxml2 alone stops at one inside markup) as with U+FFFD there,
 * in any pieces, in every algorithm. */
static void test_noncharacters(void **state)
{
    (void)state;
    static const char *pages[][2] = {
        {"<html><body><p\xef\xbf\xbe class=\"a\xef\xbf\xbf\">one two</p></body></html>",
         "<html><body><p\xef\xbf\xbd class=\"a\xef\xbf\xbd\">one two</p></body></html>"},
        {"<html><head><title>t\xef\xbf\xbe</title></head><body><d\xef\xbf\xbfiv>x y</div>"
         "<p>three \xef\xbf\xbe four</p><a href=\"u\xef\xbf\xbe\">l</a></body></html>\xef\xbf\xbf",
         "<html><head><title>t\xef\xbf\xbd</title></head><body><d\xef\xbf\xbdiv>x y</div>"
         "<p>three \xef\xbf\xbd four</p><a href=\"u\xef\xbf\xbd\">l</a></body></html>\xef\xbf\xbd"},
    };
    /* v1, v5 (the article), v5 with all visible text */
    static const fp_params algos[] = {{FP_V1, 3}, {FP_V5, 0}, {FP_V5, 0}};
    static const unsigned aflags[] = {0, 0, FP_HTML_ALL_TEXT};
    char err[200];
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
        for (size_t a = 0; a < sizeof algos / sizeof algos[0]; a++) {
            uint64_t fp, want;
            const char *p = pages[i][0], *q = pages[i][1];
            assert_int_equal(fp_html_text(q, strlen(q), &algos[a], aflags[a], &want, err,
                                          sizeof err), 0);
            if (fp_html_text(p, strlen(p), &algos[a], aflags[a], &fp, err, sizeof err) != 0)
                fail_msg("page %zu, algorithm %zu: %s", i, a, err);
            if (fp != want)
                fail_msg("page %zu, algorithm %zu: %016llx, with U+FFFD %016llx", i, a,
                         (unsigned long long)fp, (unsigned long long)want);
            fp_html *h = fp_html_new(&algos[a], aflags[a]);
            assert_non_null(h);
            size_t len = strlen(p);
            for (size_t piece = 1; piece <= 5; piece++) {
                for (size_t o = 0; o < len; o += piece)
                    assert_int_equal(fp_html_update(h, p + o, len - o < piece ? len - o : piece), 0);
                assert_int_equal(fp_html_final(h, &fp), 0);
                assert_true(fp == want);
            }
            fp_html_free(h);
        }
    }
}

/* Random bytes with markup fragments: never a crash, always an answer. */
static void test_random(void **state)
{
    (void)state;
    static const char *frag[] = { "<", ">", "</", "<p>", "<script>", "</script>", "<!--", "-->",
                                  "&", "&amp;", "&#", "\"", "=", "<a href=", "\xff", "\xc3",
                                  "\xa9", "\0", "<meta charset=latin1>", "text", " ", "<![CDATA[" };
    char buf[2048];
    size_t rounds = light() ? 100 : 1000;
    fp_html *h = fp_html_new(NULL, 0);
    assert_non_null(h);
    for (size_t r = 0; r < rounds; r++) {
        size_t o = 0;
        while (o < sizeof buf - 32) {
            const char *f = frag[rnd() % (sizeof frag / sizeof frag[0])];
            size_t fl = f[0] ? strlen(f) : 1;
            memcpy(buf + o, f, fl);
            o += fl;
            if (rnd() % 64 == 0)
                break;
        }
        size_t piece = 1 + rnd() % 300;
        for (size_t k = 0; k < o; k += piece)
            fp_html_update(h, buf + k, o - k < piece ? o - k : piece);
        uint64_t fp;
        if (fp_html_final(h, &fp) != 0)
            assert_true(strlen(fp_html_error(h)) > 0);
    }
    fp_html_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_charsets),
        cmocka_unit_test(test_nesting_and_limits),
        cmocka_unit_test(test_trailer_and_late_meta),
        cmocka_unit_test(test_fingerprint),
        cmocka_unit_test(test_noncharacters),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
