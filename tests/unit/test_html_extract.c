/* test_html_extract.c: fp_html_extract (common/core/html_extract.c), the text a page's
 * fingerprint is taken from: its fingerprint equals fp_html_text's and fp_text_p's of
 * the text for every algorithm and flag (hand-written pages, random pages with
 * furniture, articles, license text, long blocks, invalid bytes, text after </html>,
 * legacy charsets), the rule names, bad parameters and flags, empty input, a page of
 * several MiB and the bound on a page's size (a page exactly at it is read in the plain
 * build only), unreadable pages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fingerprint.h"
#include "html.h"
#define TESTUTIL_SEED 0x6a09e667f3bcc908ULL
#include "testutil.h"

#define P1 "The committee met on Tuesday to discuss the budget for the coming year in detail."
#define P2 "Several members argued that the library should open longer hours on weekends."
#define FURN "Subscribe to our newsletter for the latest offers and updates from the whole team."
#define GPL "This program is free software: you can redistribute it and/or modify it under " \
            "the terms of the GNU General Public License as published by the Free Software " \
            "Foundation, either version 3 of the License, or (at your option) any later version."

/* Every algorithm, v1 with several windows. */
static const fp_params algos[] = {
    {FP_V1, 0}, {FP_V1, 1}, {FP_V1, 7}, {FP_V5, 0}, {0, 0},
};
#define NALGOS (sizeof algos / sizeof algos[0])
static const unsigned flag_sets[] = {0, FP_HTML_ALL_TEXT, FP_HTML_TITLE,
                                     FP_HTML_TITLE | FP_HTML_ALL_TEXT};
#define NFLAGS (sizeof flag_sets / sizeof flag_sets[0])

/* Checks the invariant for one page, algorithm and flags: fp_html_extract succeeds
 * exactly when fp_html_text does, and then its fingerprint is fp_html_text's and that
 * of its text; the text is NUL-terminated and the rule "all-text" or one of v5's
 * article rules. Returns
 * the rule (a static string) or NULL when the page could not be read. */
static const char *check_page(const char *html, size_t len, const fp_params *p, unsigned flags)
{
    uint64_t want = 0;
    char err1[200] = "", err2[200] = "";
    int rc1 = fp_html_text(html, len, p, flags, &want, err1, sizeof err1);
    fp_extraction x;
    int rc2 = fp_html_extract(html, len, p, flags, &x, err2, sizeof err2);
    if (rc1 != rc2)
        fail_msg("fp_html_text %d (%s), fp_html_extract %d (%s), v%u:%u flags %u", rc1, err1,
                 rc2, err2, p->version, p->window, flags);
    if (rc2 != 0) {
        assert_null(x.text);
        assert_string_equal(err1, err2);
        fp_extraction_free(&x);
        return NULL;
    }
    assert_non_null(x.text);
    assert_non_null(x.rule);
    assert_int_equal(x.text[x.len], '\0');
    uint64_t of_text = fp_text_p(x.text, x.len, p);
    if (x.fp != want || of_text != want)
        fail_msg("v%u:%u flags %u: extract %016llx, fp_html_text %016llx, text %016llx "
                 "(rule %s, %zu bytes of text, page %.80s)", p->version, p->window, flags,
                 (unsigned long long)x.fp, (unsigned long long)want,
                 (unsigned long long)of_text, x.rule, x.len, html);
    const char *rule = x.rule;
    unsigned v = p->version ? p->version : FP_VERSION_DEFAULT;
    int extracts = v == FP_V5 && !(flags & FP_HTML_ALL_TEXT);
    if (!extracts)
        assert_string_equal(rule, "all-text");
    else                        /* the article rules (html_article.h) */
        assert_true(strcmp(rule, "article") == 0 || strcmp(rule, "article-relaxed") == 0 ||
                    strcmp(rule, "page") == 0 || strcmp(rule, "empty") == 0);
    fp_extraction_free(&x);
    assert_null(x.text);
    return rule;
}

static void check_all(const char *html, size_t len)
{
    for (size_t a = 0; a < NALGOS; a++)
        for (size_t f = 0; f < NFLAGS; f++)
            check_page(html, len, &algos[a], flag_sets[f]);
}

/* The extracted text of html (v5, flags), squeezed white space; caller frees. */
static char *text_of(const char *html, unsigned flags, const char **rule)
{
    fp_extraction x;
    char err[200];
    static const fp_params v5 = {FP_V5, 0};
    assert_int_equal(fp_html_extract(html, strlen(html), &v5, flags, &x, err, sizeof err), 0);
    *rule = x.rule;
    char *s = x.text;
    size_t o = 0;
    int space = 1;
    for (size_t i = 0; i < x.len; i++) {
        int ws = s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r';
        if (!ws)
            s[o++] = s[i], space = 0;
        else if (!space)
            s[o++] = ' ', space = 1;
    }
    if (o > 0 && s[o - 1] == ' ')
        o--;
    s[o] = '\0';
    return s;       /* x.text: freed by the caller */
}

#define ARTICLE_PAGE "<html><head><title>Budget news</title></head><body>" \
    "<nav><a href=\"/\">Home</a> <a href=\"/news\">News</a></nav>" \
    "<div class=\"sidebar\"><p>" FURN "</p></div>" \
    "<main><article><h1>Budget</h1><p>" P1 "</p><p>" P2 "</p></article></main>" \
    "<footer><p>" FURN "</p></footer></body></html>"

static void test_rules(void **state)
{
    (void)state;
    const char *rule;
    /* v5: the article, without the navigation, sidebar and footer (its rules are
       test_html_article.c's) */
    char *t = text_of(ARTICLE_PAGE, 0, &rule);
    assert_true(strcmp(rule, "article") == 0 || strcmp(rule, "article-relaxed") == 0);
    assert_non_null(strstr(t, P1 " " P2));
    assert_null(strstr(t, FURN));
    assert_null(strstr(t, "Home"));
    free(t);

    /* --all-text: everything visible, the title with FP_HTML_TITLE */
    t = text_of(ARTICLE_PAGE, FP_HTML_ALL_TEXT, &rule);
    assert_string_equal(rule, "all-text");
    assert_string_equal(t, "Home News " FURN " Budget " P1 " " P2 " " FURN);
    free(t);
    t = text_of(ARTICLE_PAGE, FP_HTML_ALL_TEXT | FP_HTML_TITLE, &rule);
    assert_string_equal(t, "Budget news Home News " FURN " Budget " P1 " " P2 " " FURN);
    free(t);

    /* v1 reads all visible text */
    static const fp_params v1 = {FP_V1, 0};
    fp_extraction x;
    char err[200];
    assert_int_equal(fp_html_extract(ARTICLE_PAGE, strlen(ARTICLE_PAGE), &v1, 0, &x, err,
                                     sizeof err), 0);
    assert_string_equal(x.rule, "all-text");
    assert_non_null(strstr(x.text, FURN));
    fp_extraction_free(&x);

    /* blocks are separated by "\n" */
    assert_int_equal(fp_html_extract("<p>one</p><p>two</p>", 20, &v1, 0, &x, err, sizeof err), 0);
    assert_non_null(strstr(x.text, "one\n"));
    assert_null(strstr(x.text, "one two"));
    fp_extraction_free(&x);
}

static void test_hand_pages(void **state)
{
    (void)state;
    static const char *const pages[] = {
        ARTICLE_PAGE,
        "<p>" P1 "</p><p>" GPL "</p><nav>" FURN "</nav><p>" GPL " " P2 "</p>",
        "<article><p>" GPL "</p></article><p>" GPL "</p>",
        "<div>" P1 "<div>" P2 "</div>" GPL "</div>",
        "plain text, no markup at all " P1,
        "<p>" P1 "</p></html><p>after the end " P2 "</p></html>trailer " GPL,
        "<p>caf\xc3\xa9 \xff\xfe broken \xc3 bytes " P1 "</p><p>\xef\xbf\xbe nonchar</p>",
        "<meta charset=\"windows-1252\"><p>\x93quoted\x94 caf\xe9 " P1 "</p>",
        "\xef\xbb\xbf<p>" P1 "</p>",
        "\xff\xfe<\0p\0>\0a\0b\0 \0c\0<\0/\0p\0>\0",
        "<p>a &amp; b &lt;c&gt; &#x1F600; &nbsp;</p><script>var x = 1;</script><p>" P2 "</p>",
        "<h1>Title</h1><div><a href=x>" P1 "</a></div><p>" P2 "</p><h2>Short</h2>",
        "<table><tr><td>" P1 "</td><td>" P2 "</td></tr></table>",
        "<p>\0nul\0 bytes " P1 "</p>",
        "<title>Only a title</title>",
        "<p>wor<b>d</b> split</p><br><br>",
    };
    static const size_t lens[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 24, 0, 0, 0, 27, 0, 0};
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++)
        check_all(pages[i], lens[i] ? lens[i] : strlen(pages[i]));
}

/* ---- Random pages ---- */

typedef struct page {
    char *s;
    size_t n, cap;
} page;

static void put(page *p, const char *s, size_t n)
{
    if (p->n + n + 1 > p->cap) {
        p->cap = (p->n + n + 1) * 2;
        p->s = realloc(p->s, p->cap);
        assert_non_null(p->s);
    }
    memcpy(p->s + p->n, s, n);
    p->n += n;
    p->s[p->n] = '\0';
}

static void puts_(page *p, const char *s)
{
    put(p, s, strlen(s));
}

static const char *const words[] = {
    "budget", "council", "library", "weekend", "the", "of", "and", "a", "meeting",
    "caf\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "Stra\303\237e", "2026", "x",
    "free", "software", "License", "GNU", "General", "Public", "version",
};

static void put_words(page *p, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        puts_(p, words[rnd() % (sizeof words / sizeof words[0])]);
        puts_(p, rnd() % 9 ? " " : rnd() % 2 ? "\n" : "&amp; ");
    }
}

/* A page of random pieces: furniture, articles, paragraphs of every length, link
 * lists, headings, license sentences, scripts, inline tags, invalid bytes, text after
 * </html>, now and then a block longer than 16 KiB. */
static void random_page(page *p)
{
    static const char *const open[] = {
        "<p>", "<div>", "<nav>", "<article>", "<main>", "<aside>", "<footer>", "<header>",
        "<div class=\"sidebar\">", "<div id=\"comments\">", "<section>", "<li>", "<td>",
        "<h2>", "<div role=\"main\">", "<span>", "<a href=\"/x\">", "<b>", "<form>",
    };
    static const char *const close[] = {
        "</p>", "</div>", "</nav>", "</article>", "</main>", "</aside>", "</footer>",
        "</header>", "</section>", "</li>", "</td>", "</h2>", "</span>", "</a>", "</b>",
    };
    unsigned pieces = 5 + (unsigned)(rnd() % 60);
    if (rnd() % 2)
        puts_(p, "<html><head><title>A title of the page</title></head><body>");
    for (unsigned i = 0; i < pieces; i++) {
        switch (rnd() % 12) {
        case 0: case 1: case 2:
            puts_(p, open[rnd() % (sizeof open / sizeof open[0])]);
            break;
        case 3: case 4:
            puts_(p, close[rnd() % (sizeof close / sizeof close[0])]);
            break;
        case 5: case 6: case 7:
            put_words(p, 1 + (unsigned)(rnd() % 40));
            break;
        case 8:
            puts_(p, rnd() % 2 ? GPL : P1);
            break;
        case 9:
            puts_(p, "<ul><li><a href=\"/1\">Home page of the site</a></li><li><a href=\"/2\">"
                     "News and more news</a></li></ul>");
            break;
        case 10:
            switch (rnd() % 5) {
            case 0: puts_(p, "\xff\xc3 \xed\xa0\x80"); break;
            case 1: puts_(p, "</html>"); break;
            case 2: puts_(p, "<script>var a = '<p>';</script>"); break;
            case 3: put(p, "\0", 1); break;
            default: puts_(p, "<br>"); break;
            }
            break;
        default:
            if (rnd() % 8 == 0) {               /* a long block */
                unsigned n = 2000 + (unsigned)(rnd() % 3000);
                puts_(p, rnd() % 2 ? "<p>" : "<article><p>");
                for (unsigned k = 0; k < n; k++)
                    puts_(p, k % 7 == 0 ? GPL " " : "paragraph text ");
            } else {
                puts_(p, "<p>");
                put_words(p, 10 + (unsigned)(rnd() % 80));
                puts_(p, "</p>");
            }
            break;
        }
    }
}

static void test_random_pages(void **state)
{
    (void)state;
    unsigned n = light() ? 12 : 150;
    for (unsigned i = 0; i < n; i++) {
        page p = {NULL, 0, 0};
        random_page(&p);
        check_all(p.s, p.n);
        free(p.s);
    }
}

static void test_bad_params(void **state)
{
    (void)state;
    fp_extraction x;
    char err[200];
    const char *html = "<p>" P1 "</p>";
    /* unknown, a window for v5, the removed v2..v4, a window too large */
    static const fp_params bad[] = {{9, 0}, {FP_V5, 3}, {2, 0}, {3, 0}, {4, 0}, {4, 1},
                                    {FP_V1, 65}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&x, 0x5a, sizeof x);
        err[0] = '\0';
        assert_int_equal(fp_html_extract(html, strlen(html), &bad[i], 0, &x, err, sizeof err), -1);
        assert_null(x.text);
        assert_int_equal(x.len, 0);
        assert_true(strlen(err) > 0);
        fp_extraction_free(&x);
    }
    err[0] = '\0';
    assert_int_equal(fp_html_extract(html, strlen(html), NULL, 0x100, &x, err, sizeof err), -1);
    assert_non_null(strstr(err, "flags"));
    assert_int_equal(fp_html_extract(html, strlen(html), NULL, 4, &x, err, sizeof err), -1);
    assert_non_null(strstr(err, "flags"));     /* 4: the former main-content flag */
    assert_null(x.text);
    assert_int_equal(fp_html_extract(NULL, 5, NULL, 0, &x, err, sizeof err), -1);
    assert_null(x.text);
    fp_extraction_free(NULL);
    /* a NULL err buffer of length 0 is allowed */
    assert_int_equal(fp_html_extract(html, strlen(html), &bad[0], 0, &x, NULL, 0), -1);
    /* NULL parameters: the default algorithm */
    assert_int_equal(fp_html_extract(ARTICLE_PAGE, strlen(ARTICLE_PAGE), NULL, 0, &x, err,
                                     sizeof err), 0);
    uint64_t want;
    static const fp_params def = {FP_VERSION_DEFAULT, 0};
    assert_int_equal(fp_html_text(ARTICLE_PAGE, strlen(ARTICLE_PAGE), &def, 0, &want, err,
                                  sizeof err), 0);
    assert_true(x.fp == want);
    assert_string_equal(x.rule, "article");
    fp_extraction_free(&x);
}

static void test_empty(void **state)
{
    (void)state;
    for (size_t a = 0; a < NALGOS; a++) {
        fp_extraction x;
        char err[200];
        assert_int_equal(fp_html_extract("", 0, &algos[a], 0, &x, err, sizeof err), 0);
        assert_non_null(x.text);
        assert_int_equal(x.len, 0);
        assert_string_equal(x.text, "");
        unsigned v = algos[a].version ? algos[a].version : FP_VERSION_DEFAULT;
        assert_string_equal(x.rule, v == FP_V5 ? "empty" : "all-text");
        assert_true(x.fp == 0);
        fp_extraction_free(&x);
        assert_int_equal(fp_html_extract(NULL, 0, &algos[a], 0, &x, err, sizeof err), 0);
        assert_int_equal(x.len, 0);
        fp_extraction_free(&x);
        check_page("", 0, &algos[a], 0);
        check_page("   \n\t ", 6, &algos[a], 0);
        check_page("<html><body></body></html>", 26, &algos[a], 0);
    }
}

/* Returns 1 in a build with AddressSanitizer (gcc defines __SANITIZE_ADDRESS__, clang
 * answers __has_feature), else 0. */
static int sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 1;
#else
    return 0;
#endif
#else
    return 0;
#endif
}

/* A page of several MiB: paragraphs, an article, and a block of 1 MiB without a tag
 * (more than html.c's 64 KiB pieces). */
static void test_huge(void **state)
{
    (void)state;
    page p = {NULL, 0, 0};
    size_t target = light() ? ((size_t)1 << 20) : ((size_t)6 << 20);
    puts_(&p, "<html><body><nav>" FURN "</nav><article>");
    while (p.n < target / 2) {
        puts_(&p, "<p>" P1 " ");
        put_words(&p, 30);
        puts_(&p, GPL "</p>");
    }
    puts_(&p, "<p>");
    while (p.n < target)
        puts_(&p, "one long paragraph without any tag " GPL " ");
    puts_(&p, "</p></article></body></html>");
    static const fp_params v[] = {{FP_V1, 0}, {FP_V5, 0}};
    for (size_t a = 0; a < sizeof v / sizeof v[0]; a++) {
        const char *rule = check_page(p.s, p.n, &v[a], 0);
        assert_non_null(rule);
        check_page(p.s, p.n, &v[a], FP_HTML_ALL_TEXT);
    }
    free(p.s);

    /* over the bound: refused before reading */
    size_t big = FP_HTML_EXTRACT_MAX + 1;
    char *b = malloc(big);
    assert_non_null(b);
    memset(b, 'a', big);
    fp_extraction x;
    char err[200];
    assert_int_equal(fp_html_extract(b, big, NULL, 0, &x, err, sizeof err), -1);
    assert_non_null(strstr(err, "64 MiB"));
    assert_null(x.text);
    /* exactly at the bound: read (text without tags, in pieces past every buffer). Not
     * under valgrind or the sanitizers (minutes there): what this page adds to the one
     * above, whose 1 MiB block without a tag already crosses every buffer and piece
     * boundary in every build, is that the bound is the reader's and not html.c's (the
     * sizes, FP_HTML_EXTRACT_MAX against FP_HTML_MAX_PENDING), which the plain build
     * shows as well as an instrumented one. */
    if (!light() && !sanitized()) {
        static const fp_params v5 = {FP_V5, 0};
        const char *rule = check_page(b, FP_HTML_EXTRACT_MAX, &v5, 0);
        assert_non_null(rule);
    }
    free(b);
}

/* A page html.c cannot read: the same error as fp_html_text, nothing to free. */
static void test_unreadable(void **state)
{
    (void)state;
    page p = {NULL, 0, 0};
    for (int i = 0; i < 100; i++)
        puts_(&p, "<p>a</p></html>");
    for (size_t a = 0; a < NALGOS; a++)
        assert_null(check_page(p.s, p.n, &algos[a], 0));
    free(p.s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_hand_pages),
        cmocka_unit_test(test_random_pages),
        cmocka_unit_test(test_bad_params),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_huge),
        cmocka_unit_test(test_unreadable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
