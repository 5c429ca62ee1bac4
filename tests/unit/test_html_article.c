/* test_html_article.c: the article of a page (algorithm v5, common/core/html_tree.c and
 * html_article.c) on small hand-written pages, one rule at a time: <article> and
 * class names beside a link-heavy sidebar, a scored container in markup with no
 * meaningful names, siblings merged (one class, or paragraphs beside the winner),
 * furniture cut from inside the article (comments, related links, share bars,
 * newsletter boxes, captions, bylines, headlines), hidden elements and widgets, lists
 * and tables inside an article, pages that are no article (a listing, a near-empty
 * page, no text at all), malformed and deeply nested markup, a page past the tree's
 * caps; and the v5 fingerprint: v5's text fingerprint of the article's text, the
 * same whatever pieces the page comes in, all visible text with FP_HTML_ALL_TEXT,
 * golden vectors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fingerprint.h"
#include "html.h"
#include "html_tree.h"

/* Paragraphs of an article: long enough, with commas, as articles are. */
#define P1 "The committee met on Tuesday, after a long delay, to discuss the budget for the coming year in detail and at length."
#define P2 "Several members argued, with some force, that the library should open longer hours on weekends, when students need it most."
#define P3 "A final vote on the proposal, which has divided the town, is expected when the council meets again next month."
#define P4 "Residents who spoke at the meeting, including two former mayors, asked for a public hearing before any decision is taken."
/* Furniture with enough text to be kept if it were not furniture. */
#define FURN "Subscribe to our newsletter for the latest offers, updates and news from the whole team, every single week of the year."
#define LINKS "<ul><li><a href='/1'>Markets rally as rates hold steady</a></li>" \
    "<li><a href='/2'>Storm warning for the coast this weekend</a></li>" \
    "<li><a href='/3'>Local team wins the cup after extra time</a></li>" \
    "<li><a href='/4'>New bridge opens to traffic on Monday</a></li></ul>"

static const fp_params V1 = {FP_V1, 0}, V5 = {FP_V5, 0};

/* s with runs of white space squeezed to one space, trimmed (a copy). */
static char *squeeze(const char *s)
{
    char *o = malloc(strlen(s) + 1);
    assert_non_null(o);
    size_t k = 0;
    int space = 1;
    for (size_t i = 0; s[i]; i++) {
        int ws = s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r';
        if (!ws)
            o[k++] = s[i], space = 0;
        else if (!space)
            o[k++] = ' ', space = 1;
    }
    if (k > 0 && o[k - 1] == ' ')
        k--;
    o[k] = '\0';
    return o;
}

/* The article of html, fed in pieces of `step` bytes (0: whole): its text (squeezed,
 * the caller frees), rule and fingerprint. */
static char *article(const char *html, size_t step, const char **rule, uint64_t *fp)
{
    fp_html *h = fp_html_new(&V5, 0);
    assert_non_null(h);
    size_t n = strlen(html);
    if (step == 0)
        step = n ? n : 1;
    for (size_t i = 0; i < n; i += step)
        assert_int_equal(fp_html_update(h, html + i, n - i < step ? n - i : step), 0);
    assert_int_equal(fp_html_final(h, fp), 0);
    size_t len = 0;
    const char *text = fp_html_article(h, &len, rule);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    /* the fingerprint is the text's, by v5's text path */
    assert_true(*fp == fp_text_p(text, len, &V5));
    assert_true(*fp == fp_text_p(text, len, NULL));
    char *s = squeeze(text);
    fp_html_free(h);
    return s;
}

/* Checks html's article: want_rule and want (squeezed), the same fed byte by byte. */
static void expect_article(const char *html, const char *want_rule, const char *want)
{
    const char *rule = NULL, *rule1 = NULL;
    uint64_t fp = 0, fp1 = 1;
    char *got = article(html, 0, &rule, &fp);
    if (strcmp(rule, want_rule) != 0 || strcmp(got, want) != 0)
        fail_msg("html %.120s\n  got  %s '%s'\n  want %s '%s'", html, rule, got, want_rule, want);
    char *got1 = article(html, 1, &rule1, &fp1);
    assert_string_equal(got1, got);
    assert_string_equal(rule1, rule);
    assert_true(fp1 == fp);
    uint64_t fp2 = 0;
    char err[160];
    assert_int_equal(fp_html_text(html, strlen(html), &V5, 0, &fp2, err, sizeof err), 0);
    assert_true(fp2 == fp);
    free(got);
    free(got1);
}

#define ARTICLE "article"

static void test_article_beside_sidebar(void **state)
{
    (void)state;
    /* <article> among navigation, a sidebar of headlines and a footer */
    expect_article("<html><head><title>T</title></head><body><header><nav><a href='/'>Home</a>"
                   "<a href='/n'>News</a></nav></header><div class='sidebar'><h3>Popular</h3>"
                   LINKS "</div><article><p>" P1 "</p><p>" P2 "</p><p>" P3 "</p></article>"
                   "<footer><p>" FURN "</p></footer></body></html>",
                   ARTICLE, P1 " " P2 " " P3);
    /* no semantic elements, names that mean nothing: the container of the paragraphs */
    expect_article("<body><div class='x1'><div class='x2'>" LINKS "</div><div class='x3'>"
                   "<div class='x4'><p>" P1 "</p><p>" P2 "</p><p>" P3 "</p></div></div>"
                   "<div class='x5'>" LINKS "</div></div></body>",
                   ARTICLE, P1 " " P2 " " P3);
    /* a table used for layout: the cell with the paragraphs */
    expect_article("<body><table><tr><td>" LINKS "</td><td><p>" P1 "</p><p>" P2 "</p><p>" P3
                   "</p></td></tr></table></body>", ARTICLE, P1 " " P2 " " P3);
}

static void test_names_and_roles(void **state)
{
    (void)state;
    /* a text block whose class names it furniture is out of the search, even long */
    expect_article("<body><div class='comments'><p>" P4 "</p><p>" P4 "</p><p>" P4 "</p><p>" P4
                   "</p></div><div class='story'><p>" P1 "</p><p>" P2 "</p><p>" P3 "</p></div>"
                   "</body>", ARTICLE, P1 " " P2 " " P3);
    /* ARIA furniture roles */
    expect_article("<body><div role='complementary'><p>" P4 "</p><p>" P4 "</p><p>" P4 "</p>"
                   "<p>" P4 "</p></div><div><p>" P1 "</p><p>" P2 "</p><p>" P3 "</p></div></body>",
                   ARTICLE, P1 " " P2 " " P3);
    /* a banner never closed holds the whole page: markup gone wrong, not furniture */
    expect_article("<body><header role='banner'><nav><a href='/'>Home</a></nav><div><p>" P1
                   "</p><p>" P2 "</p><p>" P3 "</p></div></body>", ARTICLE, P1 " " P2 " " P3);
    /* itemprop=articleBody names the article's body */
    expect_article("<body><div><p>" P4 "</p></div><div itemprop='articleBody'><p>" P1 "</p><p>"
                   P2 "</p></div></body>", ARTICLE, P1 " " P2);
}

static void test_furniture_cut_from_article(void **state)
{
    (void)state;
    /* headline, byline, caption, share bar, newsletter box, related links and comments
       inside the article element */
    expect_article("<body><article><h1>The headline of the story</h1>"
                   "<div class='byline'>By Jane Doe, staff writer</div><p>" P1 "</p>"
                   "<figure><img src='a.jpg'><figcaption>The town hall, seen from the square"
                   "</figcaption></figure><p>" P2 "</p>"
                   "<div class='share-tools'><a href='#'>Share</a> <a href='#'>Tweet</a></div>"
                   "<p>" P3 "</p><div class='newsletter'>" FURN "</div>"
                   "<div class='related'><h2>Related</h2>" LINKS "</div>"
                   "<section id='comments'><p>First! Great article, thanks for writing it.</p>"
                   "</section></article></body>",
                   ARTICLE, P1 " " P2 " " P3);
    /* headings inside the article stay */
    expect_article("<body><article><p>" P1 "</p><h2>What comes next</h2><p>" P2 "</p><p>" P3
                   "</p></article></body>", ARTICLE, P1 " What comes next " P2 " " P3);
    /* lists and data tables inside the article stay */
    expect_article("<body><article><p>" P1 "</p><ul><li>Longer opening hours on weekends"
                   "</li><li>A new reading room for students</li></ul><p>" P2 "</p><p>" P3
                   "</p></article></body>",
                   ARTICLE, P1 " Longer opening hours on weekends A new reading room for "
                   "students " P2 " " P3);
}

static void test_hidden_and_widgets(void **state)
{
    (void)state;
    expect_article("<body><div><p>" P1 "</p><p style='display: none'>" FURN "</p><p hidden>"
                   FURN "</p><div aria-hidden='true'>" FURN "</div><p>" P2 "</p>"
                   "<select><option>One option with a long label</option></select>"
                   "<button>Load more comments and replies</button><p>" P3 "</p></div></body>",
                   ARTICLE, P1 " " P2 " " P3);
    /* scripts, styles and the title are no text; the title is not the article */
    expect_article("<html><head><title>A title</title><style>p{color:red}</style></head><body>"
                   "<script>var s = 'not text';</script><div><p>" P1 "</p><p>" P2 "</p><p>"
                   P3 "</p></div></body></html>", ARTICLE, P1 " " P2 " " P3);
}

static void test_siblings(void **state)
{
    (void)state;
    /* an article in two blocks of one class, an advertisement between them */
    expect_article("<body><div class='wrap'><div class='txt'><p>" P1 "</p><p>" P2 "</p></div>"
                   "<div class='advert'><a href='/ad'>Buy now, limited offer</a></div>"
                   "<div class='txt'><p>" P3 "</p><p>" P4 "</p></div>" LINKS "</div></body>",
                   ARTICLE, P1 " " P2 " " P3 " " P4);
    /* a lead the page's description names joins the article, not an unnamed one */
#define LEAD "Town council splits over the library budget and weekend hours"
    expect_article("<html><head><meta property='og:description' content='" LEAD "'>"
                   "</head><body><div class='top'><p class='lead'>" LEAD "</p></div>"
                   "<div class='body'><p>" P1 "</p><p>" P2 "</p><p>" P3 "</p></div></body>"
                   "</html>", ARTICLE, LEAD " " P1 " " P2 " " P3);
    expect_article("<html><head></head><body><div class='top'><p class='lead'>" LEAD
                   "</p></div><div class='body'><p>" P1 "</p><p>" P2 "</p><p>" P3 "</p></div>"
                   "</body></html>", ARTICLE, P1 " " P2 " " P3);
    /* a lead paragraph right before the article's body, in a div of its own */
    expect_article("<body><div><div class='lead'>" P4 "</div><div class='body'><p>" P1
                   "</p><p>" P2 "</p><p>" P3 "</p></div></div></body>",
                   ARTICLE, P4 " " P1 " " P2 " " P3);
}

static void test_not_articles(void **state)
{
    (void)state;
    /* a listing: only link text, no paragraph: the page's text less its furniture */
    expect_article("<body><nav><a href='/'>Home</a></nav><h1>Latest news</h1>" LINKS
                   "<footer>" FURN "</footer></body>", "page",
                   "Latest news Markets rally as rates hold steady Storm warning for the coast "
                   "this weekend Local team wins the cup after extra time New bridge opens to "
                   "traffic on Monday");
    /* short text only */
    expect_article("<body><p>Hello.</p></body>", "page", "Hello.");
    /* nothing visible */
    expect_article("<html><head><title>Empty</title></head><body><script>x()</script></body>"
                   "</html>", "empty", "");
    expect_article("", "empty", "");
    /* a short article: less than HART_MIN_LETTERS in the strict pass, still the article */
    expect_article("<body><div class='sidebar'>" LINKS "</div><div><p>" P1 "</p></div></body>",
                   "article", P1);
}

static void test_malformed_and_deep(void **state)
{
    (void)state;
    /* unclosed paragraphs and divs, stray end tags */
    expect_article("<body><div class='nav'>" LINKS "<div id=main><p>" P1 "<p>" P2 "</span><p>"
                   P3 "</td></body>", ARTICLE, P1 " " P2 " " P3);
    /* 20,000 nested divs around the article: deeper than the tree follows */
    size_t depth = 20000;
    size_t n = depth * 11 + 1024;
    char *html = malloc(n);
    assert_non_null(html);
    size_t k = 0;
    for (size_t i = 0; i < depth; i++)
        k += (size_t)snprintf(html + k, n - k, "<div>");
    k += (size_t)snprintf(html + k, n - k, "<p>%s</p><p>%s</p>", P1, P2);
    for (size_t i = 0; i < depth; i++)
        k += (size_t)snprintf(html + k, n - k, "</div>");
    const char *rule;
    uint64_t fp;
    char *got = article(html, 0, &rule, &fp);
    assert_non_null(strstr(got, "The committee met on Tuesday"));
    free(got);
    free(html);
}

/* A page past the tree's element cap: the extraction works on what was recorded. */
static void test_caps(void **state)
{
    (void)state;
    size_t cells = (size_t)HTREE_MAX_NODES + 1000;
    size_t n = cells * 7 + 4096;
    char *html = malloc(n);
    assert_non_null(html);
    size_t k = (size_t)snprintf(html, n, "<body><div><p>%s</p><p>%s</p><p>%s</p></div><div>",
                                P1, P2, P3);
    for (size_t i = 0; i < cells; i++)
        k += (size_t)snprintf(html + k, n - k, "<i></i>");
    /* past the cap: not recorded */
    k += (size_t)snprintf(html + k, n - k, "</div><div><p>%s</p></div></body>", P4);
    const char *rule;
    uint64_t fp;
    char *got = article(html, 0, &rule, &fp);
    assert_string_equal(rule, ARTICLE);
    assert_string_equal(got, P1 " " P2 " " P3);
    free(got);
    free(html);
}

/* A page declaring a legacy charset but stored as UTF-8 is read as UTF-8 (its first
 * bytes say so); a page in the charset it declares is read in it. */
static void test_charset(void **state)
{
    (void)state;
    const char *cn = "<html><head><meta http-equiv='Content-Type' content='text/html; "
                     "charset=gb2312'><title>\xe8\xb0\xb7\xe6\xad\x8c\xe6\x94\xb6"
                     "\xe8\xb4\xad</title></head><body><div><p>" P1 "</p><p>\xe8\xb0\xb7"
                     "\xe6\xad\x8c\xe5\x9c\xa8\xe5\xb9\xb4\xe6\x94\xb6\xe8\xb4\xad"
                     "\xe4\xba\x86\xe4\xba\xba\xe5\xb7\xa5\xe6\x99\xba\xe8\x83\xbd"
                     "\xe5\x85\xac\xe5\x8f\xb8\xef\xbc\x8c" P2 "</p><p>" P3 "</p></div>"
                     "</body></html>";
    const char *rule;
    uint64_t fp;
    char *got = article(cn, 0, &rule, &fp);
    assert_string_equal(rule, ARTICLE);
    assert_non_null(strstr(got, "\xe4\xba\xba\xe5\xb7\xa5\xe6\x99\xba\xe8\x83\xbd"));
    free(got);
    /* windows-1252 as declared: its bytes are no UTF-8 */
    const char *w = "<html><head><meta charset='windows-1252'></head><body><div><p>" P1
                    " \x93Quoted\x94 caf\xe9.</p><p>" P2 "</p><p>" P3 "</p></div></body></html>";
    got = article(w, 0, &rule, &fp);
    assert_non_null(strstr(got, "\xe2\x80\x9cQuoted\xe2\x80\x9d caf\xc3\xa9."));
    free(got);
}

static void test_all_text_and_golden(void **state)
{
    (void)state;
    const char *page = "<html><head><title>Golden</title></head><body><nav><a href='/'>Home"
                       "</a></nav><article><h1>Headline</h1><p>" P1 "</p><p>" P2 "</p><p>" P3
                       "</p></article><footer>" FURN "</footer></body></html>";
    uint64_t fp = 0, all = 0;
    char err[160];
    assert_int_equal(fp_html_text(page, strlen(page), &V5, 0, &fp, err, sizeof err), 0);
    /* FP_HTML_ALL_TEXT: all visible text (the title not, without FP_HTML_TITLE), voted
       as text */
    assert_int_equal(fp_html_text(page, strlen(page), &V5, FP_HTML_ALL_TEXT, &all, err,
                                  sizeof err), 0);
    const char *visible = "Home\nHeadline\n" P1 "\n" P2 "\n" P3 "\n" FURN;
    assert_true(all == fp_text_p(visible, strlen(visible), &V5));
    assert_true(fp != all);
    const char *text = P1 "\n" P2 "\n" P3;
    assert_true(fp == fp_text_p(text, strlen(text), &V5));
    /* golden vectors: a v5 fingerprint computed today is the one computed by every later
       version (docs/fingerprint.md "Algorithm v5") */
    assert_true(fp == 0xcb560ef731b3f4ffULL);
    fp_params p;
    char canon[16];
    assert_int_equal(fp_params_parse("v5", &p, err, sizeof err), 0);
    assert_int_equal(p.version, FP_V5);
    fp_params_format(&p, canon, sizeof canon);
    assert_string_equal(canon, "v5");
    /* a parser without a tree has no article to show */
    fp_html *h = fp_html_new(&V1, 0);
    assert_non_null(h);
    assert_int_equal(fp_html_final(h, NULL), 0);
    size_t len;
    assert_null(fp_html_article(h, &len, NULL));
    fp_html_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_article_beside_sidebar),
        cmocka_unit_test(test_names_and_roles),
        cmocka_unit_test(test_furniture_cut_from_article),
        cmocka_unit_test(test_hidden_and_widgets),
        cmocka_unit_test(test_siblings),
        cmocka_unit_test(test_not_articles),
        cmocka_unit_test(test_malformed_and_deep),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_charset),
        cmocka_unit_test(test_all_text_and_golden),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
