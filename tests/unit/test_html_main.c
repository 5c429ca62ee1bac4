/* test_html_main.c: main-content extraction of HTML pages (algorithm v3,
 * common/core/html_main.c) on small hand-written pages: each rule (furniture
 * elements, ARIA roles, class and id names, hidden elements, header and footer inside
 * an article, link text, short blocks and their neighbours, headings), the fallback
 * to all visible text, the main tier, nested layouts, pages without semantic elements,
 * tables used for layout, blocks longer than the buffer, deep nesting; and the v3
 * fingerprint: the v2 fingerprint of the extracted text, the same in any pieces, all
 * visible text with FP_HTML_ALL_TEXT, golden vectors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fingerprint.h"
#include "html.h"

/* Paragraphs long enough to be content (60 letters or more). */
#define P1 "The committee met on Tuesday to discuss the budget for the coming year in detail."
#define P2 "Several members argued that the library should open longer hours on weekends."
#define P3 "A final vote on the proposal is expected when the council meets again next month."
/* Long furniture text: kept if it were not furniture. */
#define FURN "Subscribe to our newsletter for the latest offers and updates from the whole team."

static const fp_params V2 = {FP_V2, 0}, V3 = {FP_V3, 0};

typedef struct tiers {
    char *s[3];               /* text of FP_HTML_TIER_ALL, _CONTENT, _MAIN */
    size_t n[3], cap[3];
} tiers;

static void tier_add(tiers *t, int i, const char *s, size_t n)
{
    if (t->n[i] + n + 1 > t->cap[i]) {
        t->cap[i] = (t->n[i] + n + 1) * 2;
        t->s[i] = realloc(t->s[i], t->cap[i]);
        assert_non_null(t->s[i]);
    }
    memcpy(t->s[i] + t->n[i], s, n);
    t->n[i] += n;
    t->s[i][t->n[i]] = '\0';
}

static void tier_sink(void *arg, unsigned mask, const char *s, size_t n)
{
    for (int i = 0; i < 3; i++)
        if (mask & (1u << i))
            tier_add(arg, i, s, n);
}

/* s with runs of white space squeezed to one space, trimmed (in place). */
static char *squeeze(char *s)
{
    size_t o = 0;
    int space = 1;
    for (size_t i = 0; s[i]; i++) {
        int ws = s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r';
        if (!ws)
            s[o++] = s[i], space = 0;
        else if (!space)
            s[o++] = ' ', space = 1;
    }
    if (o > 0 && s[o - 1] == ' ')
        o--;
    s[o] = '\0';
    return s;
}

static int tier_index(unsigned tier)
{
    return tier == FP_HTML_TIER_MAIN ? 2 : tier == FP_HTML_TIER_CONTENT ? 1 : 0;
}

/* Checks that html's extracted text is want from tier want_tier, and that its v3
 * fingerprint is the v2/v3 text fingerprint of that text, fed whole and byte by byte. */
static void expect_main(const char *html, unsigned flags, unsigned want_tier, const char *want)
{
    tiers t = {{NULL, NULL, NULL}, {0, 0, 0}, {0, 0, 0}};
    for (int i = 0; i < 3; i++)
        tier_add(&t, i, "", 0);
    fp_html *h = fp_html_new_sink(flags | FP_HTML_MAIN, tier_sink, &t);
    assert_non_null(h);
    assert_int_equal(fp_html_update(h, html, strlen(html)), 0);
    assert_int_equal(fp_html_final(h, NULL), 0);
    unsigned tier = fp_html_tier(h);
    fp_html_free(h);
    int k = tier_index(tier);
    uint64_t want_fp = fp_text_p(t.s[k], t.n[k], &V3);
    char *got = squeeze(t.s[k]);
    if (tier != want_tier || strcmp(got, want) != 0)
        fail_msg("html %.100s\n  got  tier %u '%s'\n  want tier %u '%s'", html, tier, got,
                 want_tier, want);

    uint64_t fp = 0;
    char err[160];
    assert_int_equal(fp_html_text(html, strlen(html), &V3, flags, &fp, err, sizeof err), 0);
    assert_true(fp == want_fp);
    fp_html *p = fp_html_new(&V3, flags);
    assert_non_null(p);
    for (size_t i = 0; html[i]; i++)
        assert_int_equal(fp_html_update(p, html + i, 1), 0);
    uint64_t fp2 = 0;
    assert_int_equal(fp_html_final(p, &fp2), 0);
    assert_true(fp2 == fp);
    assert_int_equal(fp_html_tier(p), tier);
    fp_html_free(p);
    for (int i = 0; i < 3; i++)
        free(t.s[i]);
}

#define CONTENT FP_HTML_TIER_CONTENT
#define MAIN FP_HTML_TIER_MAIN
#define ALL FP_HTML_TIER_ALL

static void test_furniture_elements(void **state)
{
    (void)state;
    expect_main("<nav><p>" FURN "</p></nav><p>" P1 "</p><p>" P2 "</p>", 0, CONTENT, P1 " " P2);
    expect_main("<header><p>" FURN "</p></header><p>" P1 "</p>", 0, CONTENT, P1);
    expect_main("<p>" P1 "</p><footer><p>" FURN "</p></footer>", 0, CONTENT, P1);
    expect_main("<p>" P1 "</p><aside><p>" FURN "</p></aside><p>" P2 "</p>", 0, CONTENT,
                P1 " " P2);
    expect_main("<form><p>" FURN "</p><textarea>" FURN "</textarea></form><p>" P1 "</p>", 0,
                CONTENT, P1);
    expect_main("<p>" P1 "</p><dialog><p>" FURN "</p><button>Accept all cookies</button>"
                "</dialog>", 0, CONTENT, P1);
    /* everything inside furniture, however deep */
    expect_main("<nav><div><div><section><p>" FURN "</p></section></div></div></nav><p>" P1
                "</p>", 0, CONTENT, P1);
}

static void test_roles(void **state)
{
    (void)state;
    const char *roles[] = {"navigation", "banner", "contentinfo", "complementary", "search",
                           "dialog", "alertdialog", "Navigation"};
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
        char page[600];
        snprintf(page, sizeof page, "<div role=\"%s\"><p>" FURN "</p></div><p>" P1 "</p>",
                 roles[i]);
        expect_main(page, 0, CONTENT, P1);
    }
    /* another role keeps the text */
    expect_main("<div role=\"region\"><p>" P2 "</p></div><p>" P1 "</p>", 0, CONTENT, P2 " " P1);
}

static void test_names_and_hidden(void **state)
{
    (void)state;
    const char *attrs[] = {"class=\"menu\"", "id=\"sidebar\"", "class=\"site-footer dark\"",
                           "class=\"cookie-banner\"", "id=\"Comments\"", "class=\"x related-posts\"",
                           "class=\"breadcrumb\"", "hidden", "aria-hidden=\"true\""};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        char page[600];
        snprintf(page, sizeof page, "<div %s><p>" FURN "</p></div><p>" P1 "</p>", attrs[i]);
        expect_main(page, 0, CONTENT, P1);
    }
    /* whole words only: "menus-of-the-day", "navigator", "sharp" name no furniture */
    expect_main("<div class=\"menus-of-the-day navigator sharp\"><p>" P2 "</p></div><p>" P1
                "</p>", 0, CONTENT, P2 " " P1);
    /* a class never drops the body or an article */
    expect_main("<body class=\"nav-open\"><article class=\"comment\"><p>" P1 "</p></article>"
                "</body>", 0, MAIN, P1);
}

static void test_article_header_footer(void **state)
{
    (void)state;
    expect_main("<header><h1>Site name</h1></header><article><header><h1>Budget talks</h1>"
                "</header><p>" P1 "</p><footer><p>" P2 "</p></footer></article>"
                "<footer><p>" FURN "</p></footer>",
                0, MAIN, "Budget talks " P1 " " P2);
}

static void test_link_text(void **state)
{
    (void)state;
    /* a block that is mostly link text goes, a paragraph with a link stays */
    expect_main("<div><a href=\"/a\">Read the whole story about the budget and the library "
                "hours here</a> now</div><p>" P1 " See <a href=\"/b\">the minutes</a>.</p>",
                0, CONTENT, P1 " See the minutes.");
    expect_main("<ul><li><a href=\"/1\">Council approves the new budget for the library</a></li>"
                "<li><a href=\"/2\">Weekend opening hours extended after the long debate</a>"
                "</li></ul><p>" P1 "</p>", 0, CONTENT, P1);
}

static void test_short_blocks(void **state)
{
    (void)state;
    /* short between kept blocks: kept; short next to furniture: dropped */
    expect_main("<p>" P1 "</p><p>Short one.</p><p>" P2 "</p>", 0, CONTENT,
                P1 " Short one. " P2);
    /* right before kept text (a title line) it stays, further away it goes */
    expect_main("<nav><a href=\"/\">Home</a></nav><p>Short one.</p><p>" P1 "</p>", 0, CONTENT,
                "Short one. " P1);
    expect_main("<nav><a href=\"/\">Home</a></nav><p>Short one.</p><p>Short two.</p><p>" P1
                "</p>", 0, CONTENT, "Short two. " P1);
    expect_main("<p>" P1 "</p><p>Short one.</p><ul><li><a href=\"/1\">Link one</a></li></ul>"
                "<p>" P2 "</p><p>" P3 "</p>", 0, CONTENT, P1 " " P2 " " P3);
    /* a short block at the end of the page: dropped */
    expect_main("<p>" P1 "</p><p>Share this.</p>", 0, CONTENT, P1);
    /* a heading right before kept text is kept, before furniture it is not */
    expect_main("<div><a href=\"/x\">Home page</a></div><h2>The budget</h2><p>" P1 "</p><p>" P2
                "</p><h3>Related stories</h3><ul><li><a href=\"/y\">Another story</a></li></ul>",
                0, CONTENT, "The budget " P1 " " P2);
}

/* A block right after a run of link text (150 letters or more) that is not long waits
 * for the next one: kept when the next is kept too or the page ends with nothing else
 * kept, dropped when the next is short (an "about" blurb between a box of headlines
 * and a title). */
#define LINKTEXT "Council approves the new budget Weekend opening hours extended " \
                 "Library wins the regional prize for its reading programme " \
                 "Parking rules change in the old town next spring " \
                 "Museum reopens after two years of careful restoration work"
#define LINKBOX "<div><a href=\"/1\">Council approves the new budget</a> <a href=\"/2\">" \
                "Weekend opening hours extended</a></div><div><a href=\"/3\">Library wins the " \
                "regional prize for its reading programme</a></div><div><a href=\"/4\">Parking " \
                "rules change in the old town next spring</a></div><div><a href=\"/5\">Museum " \
                "reopens after two years of careful restoration work</a></div>"
static void test_after_links(void **state)
{
    (void)state;
    expect_main(LINKBOX "<p>" P2 "</p><div>Budget talks</div><p>" P1 "</p><p>" P3 "</p>", 0,
                CONTENT, "Budget talks " P1 " " P3);
    expect_main(LINKBOX "<p>" P2 "</p><p>" P1 "</p>", 0, CONTENT, P2 " " P1);
    expect_main(LINKBOX "<p>" P2 "</p>", 0, CONTENT, P2);
    /* at the end of a page with kept text before: a footer line, dropped */
    expect_main("<p>" P1 "</p>" LINKBOX "<p>" P2 "</p>", 0, CONTENT, P1);
    /* inside <main> or <article> link text makes nothing wait */
    expect_main("<article><p>" P1 "</p>" LINKBOX "<p>" P2 "</p></article>", 0, MAIN, P1 " " P2);
    /* a heading does not decide: the block after it does */
    expect_main(LINKBOX "<p>" P2 "</p><h2>Budget talks</h2><p>" P1 "</p>", 0, CONTENT,
                P2 " Budget talks " P1);
    /* a lone block between link lists goes (with the rest: all visible text) */
    expect_main(LINKBOX "<p>" P2 "</p>" LINKBOX, 0, ALL, LINKTEXT " " P2 " " LINKTEXT);
    /* a short run of link text (a linked line) makes nothing wait */
    expect_main("<div><a href=\"/1\">Council approves the new budget</a></div><p>" P2
                "</p><div>Budget talks</div><p>" P1 "</p>", 0, CONTENT, P2 " Budget talks " P1);
    expect_main(LINKBOX "<p>" P2 "</p>" LINKBOX "<p>" P1 "</p><p>" P3 "</p>", 0, CONTENT,
                P1 " " P3);
    /* not after link text (the start of the page, after furniture): kept at once */
    expect_main("<p>" P2 "</p><p>Short.</p>", 0, CONTENT, P2);
    expect_main("<nav>" LINKBOX "</nav><p>" P2 "</p><div>Budget talks</div><p>" P1 "</p>", 0,
                CONTENT, P2 " Budget talks " P1);
}

static void test_fallback(void **state)
{
    (void)state;
    /* nothing recognised as content: all visible text */
    expect_main("<nav><a href=\"/\">Home</a> <a href=\"/b\">Blog</a></nav><p>Hello there.</p>",
                0, ALL, "Home Blog Hello there.");
    expect_main("just some words", 0, ALL, "just some words");
    expect_main("", 0, ALL, "");
    expect_main("<ul><li><a href=\"/1\">" FURN "</a></li></ul>", 0, ALL, FURN);
}

static void test_main_tier(void **state)
{
    (void)state;
    /* <main> has content: only its text, not the long text around it */
    expect_main("<div><p>" P2 "</p></div><main><p>" P1 "</p></main><div><p>" P3 "</p></div>",
                0, MAIN, P1);
    expect_main("<div role=\"main\"><p>" P1 "</p></div><div><p>" P3 "</p></div>", 0, MAIN, P1);
    /* a small <article> (a teaser) beside five times more content: the content tier */
    expect_main("<article><p>" P3 "</p></article><div><p>" P1 "</p><p>" P2 "</p><p>" P1
                "</p><p>" P2 "</p><p>" P1 "</p><p>" P2 "</p></div>",
                0, CONTENT, P3 " " P1 " " P2 " " P1 " " P2 " " P1 " " P2);
}

static void test_nested_layouts(void **state)
{
    (void)state;
    expect_main("<body><div id=\"page\"><header><nav><ul><li><a href=\"/\">Home</a></li></ul>"
                "</nav></header><div class=\"wrap\"><main><article><header><h1>Title here</h1>"
                "</header><aside><p>" FURN "</p></aside><section><p>" P1 "</p><div><div><p>" P2
                "</p></div></div></section><nav><p>" FURN "</p></nav></article></main>"
                "<div id=\"sidebar\"><p>" FURN "</p></div></div><footer><p>" FURN "</p></footer>"
                "</div></body>",
                0, MAIN, "Title here " P1 " " P2);
}

static void test_no_semantic_elements(void **state)
{
    (void)state;
    expect_main("<div class=\"top\"><div><a href=\"/\">Home</a> | <a href=\"/n\">News</a> | "
                "<a href=\"/s\">Sports</a></div></div><div class=\"content\"><div><b>Budget "
                "talks</b></div><div>" P1 "</div><div>" P2 "</div></div><div class=\"bottom\">"
                "<div><a href=\"/c\">Contact</a> <a href=\"/p\">Privacy</a></div><div>(c) 2024 "
                "Example</div></div>",
                0, CONTENT, "Budget talks " P1 " " P2);
}

static void test_layout_table(void **state)
{
    (void)state;
    expect_main("<table><tr><td colspan=2><a href=\"/\">Example Times</a></td></tr><tr><td>"
                "<a href=\"/1\">World</a><br><a href=\"/2\">Business</a><br><a href=\"/3\">"
                "Science</a></td><td><h1>Budget talks</h1><p>" P1 "</p><p>" P2 "</p></td></tr>"
                "<tr><td colspan=2><a href=\"/c\">Contact us</a> - <a href=\"/t\">Terms</a>"
                "</td></tr></table>",
                0, CONTENT, "Budget talks " P1 " " P2);
}

/* A block longer than the block buffer is judged when the buffer fills: kept whole,
 * or dropped whole when mostly links. */
static void test_long_blocks(void **state)
{
    (void)state;
    size_t words = 6000;
    char *text = malloc(words * 6 + 1), *page = malloc(words * 20 + 200);
    assert_non_null(text);
    assert_non_null(page);
    size_t n = 0;
    for (size_t i = 0; i < words; i++)
        n += (size_t)sprintf(text + n, "w%04zu ", i % 9973);
    int m = sprintf(page, "<nav>menu</nav><p>%s</p><footer>foot</footer>", text);
    uint64_t fp = 0;
    char err[160];
    assert_int_equal(fp_html_text(page, (size_t)m, &V3, 0, &fp, err, sizeof err), 0);
    assert_true(fp == fp_text_p(text, n, &V3));
    m = sprintf(page, "<p>" P1 "</p><div><a href=\"/x\">%s</a></div><p>" P2 "</p><p>" P3 "</p>",
                text);
    assert_int_equal(fp_html_text(page, (size_t)m, &V3, 0, &fp, err, sizeof err), 0);
    assert_true(fp == fp_text_p(P1 "\n" P2 "\n" P3, strlen(P1 "\n" P2 "\n" P3), &V3));
    free(text);
    free(page);
}

/* Deeper than the elements followed (HMAIN_DEPTH 256): still extracted. */
static void test_deep_nesting(void **state)
{
    (void)state;
    size_t depth = 1000;
    char *page = malloc(depth * 11 + 1000);
    assert_non_null(page);
    size_t n = (size_t)sprintf(page, "<nav><p>" FURN "</p></nav>");
    for (size_t i = 0; i < depth; i++)
        n += (size_t)sprintf(page + n, "<div>");
    n += (size_t)sprintf(page + n, "<p>" P1 "</p>");
    for (size_t i = 0; i < depth; i++)
        n += (size_t)sprintf(page + n, "</div>");
    sprintf(page + n, "<footer><p>" FURN "</p></footer>");
    expect_main(page, 0, CONTENT, P1);
    free(page);
}

static void test_v3_fingerprint(void **state)
{
    (void)state;
    const char *page = "<html><head><title>Budget</title></head><body><nav><a href=\"/\">Home"
                       "</a></nav><p>" P1 "</p><footer>" FURN "</footer></body></html>";
    char err[160];
    uint64_t v2 = 0, v3 = 0, v3all = 0, v3title = 0;
    assert_int_equal(fp_html_text(page, strlen(page), &V2, 0, &v2, err, sizeof err), 0);
    assert_int_equal(fp_html_text(page, strlen(page), &V3, 0, &v3, err, sizeof err), 0);
    assert_int_equal(fp_html_text(page, strlen(page), &V3, FP_HTML_ALL_TEXT, &v3all, err,
                                  sizeof err), 0);
    assert_int_equal(fp_html_text(page, strlen(page), &V3, FP_HTML_TITLE, &v3title, err,
                                  sizeof err), 0);
    /* --all-text is v2's HTML path; v2 never extracts; v3 is v2 on the extracted text */
    assert_true(v3all == v2);
    assert_true(v3 == fp_text_p(P1, strlen(P1), &V2));
    assert_true(v3 != v2);
    /* the title is a short block before content: kept with FP_HTML_TITLE */
    assert_true(v3title == fp_text_p("Budget\n" P1, strlen("Budget\n" P1), &V2));
    /* v3's text fingerprint is v2's */
    assert_true(fp_text_p(P1, strlen(P1), &V3) == fp_text_p(P1, strlen(P1), &V2));
    /* a script inside a word splits it in neither */
    const char *w = "<p>" P1 " wor<script>x()</script>d</p>";
    assert_int_equal(fp_html_text(w, strlen(w), &V3, 0, &v3, err, sizeof err), 0);
    assert_true(v3 == fp_text_p(P1 " word", strlen(P1 " word"), &V2));
    /* FP_HTML_ALL_TEXT wins over FP_HTML_MAIN in a sink parser */
    fp_html *h = fp_html_new_sink(FP_HTML_MAIN | FP_HTML_ALL_TEXT, tier_sink, NULL);
    assert_non_null(h);
    assert_int_equal(fp_html_final(h, NULL), 0);
    assert_int_equal(fp_html_tier(h), ALL);
    fp_html_free(h);
}

/* Golden vectors: pages and their v3 fingerprints (docs/fingerprint.md). */
static void test_v3_golden(void **state)
{
    (void)state;
    static const struct {
        const char *page;
        uint64_t fp;
    } g[] = {
        {"", 0x0000000000000000ULL},
        {"<p>hello</p>", 0x9555e8555c62dcfdULL},
        {"<nav><a href=\"/\">Home</a></nav><p>" P1 "</p><footer>" FURN "</footer>",
         0xb902a7e31873f4daULL},
        {"<main><h1>Budget talks</h1><p>" P1 "</p></main><aside><p>" P2 "</p></aside><div>"
         "<p>" P3 "</p></div>",
         0xa942b7a35073f4deULL},
    };
    char err[160];
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        uint64_t fp = 0;
        assert_int_equal(fp_html_text(g[i].page, strlen(g[i].page), &V3, 0, &fp, err, sizeof err),
                         0);
        if (fp != g[i].fp)
            fail_msg("golden %zu: got 0x%016llx want 0x%016llx", i, (unsigned long long)fp,
                     (unsigned long long)g[i].fp);
    }
}

static void test_params(void **state)
{
    (void)state;
    fp_params p;
    char err[160], buf[16];
    assert_int_equal(fp_params_parse("v3", &p, err, sizeof err), 0);
    assert_int_equal(p.version, FP_V3);
    fp_params_format(&p, buf, sizeof buf);
    assert_string_equal(buf, "v3");
    assert_int_not_equal(fp_params_parse("v3:3", &p, err, sizeof err), 0);
    fp_params bad = {FP_V3, 2};
    assert_int_not_equal(fp_params_check(&bad, err, sizeof err), 0);
    assert_null(fp_html_new(&bad, 0));
    fp_params v6 = {6, 0};
    assert_int_not_equal(fp_params_check(&v6, err, sizeof err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_furniture_elements), cmocka_unit_test(test_roles),
        cmocka_unit_test(test_names_and_hidden), cmocka_unit_test(test_article_header_footer),
        cmocka_unit_test(test_link_text), cmocka_unit_test(test_short_blocks),
        cmocka_unit_test(test_after_links),
        cmocka_unit_test(test_fallback), cmocka_unit_test(test_main_tier),
        cmocka_unit_test(test_nested_layouts), cmocka_unit_test(test_no_semantic_elements),
        cmocka_unit_test(test_layout_table), cmocka_unit_test(test_long_blocks),
        cmocka_unit_test(test_deep_nesting), cmocka_unit_test(test_v3_fingerprint),
        cmocka_unit_test(test_v3_golden), cmocka_unit_test(test_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
