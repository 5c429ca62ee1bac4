/* html.h: fingerprints of HTML documents (libxml2's HTML parser, streaming, in push
 * mode): algorithm v5 fingerprints a page's article, found on a tree of the page; v1,
 * and v5 with FP_HTML_ALL_TEXT, all its visible text. docs/fingerprint.md "HTML" says
 * what counts as text, "Algorithm v5" how the article is found. */
#ifndef SIMHASH_HTML_H
#define SIMHASH_HTML_H

#include <stddef.h>
#include <stdint.h>

#include "fingerprint.h"

/* Flags. */
enum {
    FP_HTML_TITLE = 1,        /* the <title> is text too */
    FP_HTML_ALL_TEXT = 2,     /* all visible text, even with algorithm v5 (no article) */
};

/* Bytes the parser may hold without reaching a tag boundary (libxml2 buffers text up
 * to the next '<' or '&' and a tag up to its '>'); more is an error, so memory stays
 * bounded whatever the input. */
#define FP_HTML_MAX_PENDING ((size_t)64 << 20)

typedef struct fp_html fp_html;

/* Receives all visible text of a document piece by piece (UTF-8; block boundaries
 * arrive as "\n"). */
typedef void (*fp_html_sink)(void *arg, const char *text, size_t len);

/* A parser whose text goes to a fingerprint state with parameters p (NULL: the
 * default algorithm; v5 fingerprints the article unless FP_HTML_ALL_TEXT). NULL when
 * p is invalid or out of memory. */
fp_html *fp_html_new(const fp_params *p, unsigned flags);
/* A parser whose text, all visible text, goes to sink (fp_html_final then returns 0
 * as fingerprint). */
fp_html *fp_html_new_sink(unsigned flags, fp_html_sink sink, void *arg);
void fp_html_free(fp_html *h);

/* Feeds the next bytes of the document. 0, or -1 once the document cannot be read
 * (fp_html_error says why; further updates are ignored until fp_html_final). */
int fp_html_update(fp_html *h, const void *data, size_t len);
/* Ends the document: *fp its fingerprint; 0, or -1 with fp_html_error set. The
 * parser is then ready for the next document. */
int fp_html_final(fp_html *h, uint64_t *fp);
const char *fp_html_error(const fp_html *h);

/* Algorithm v5: the article text the last fp_html_final fingerprinted (*len bytes,
 * NUL-terminated; blocks separated by "\n") and the rule that chose it (*rule, when
 * rule is not NULL: "article", "article-relaxed", "page" or "empty"; docs/fingerprint.md
 * "Algorithm v5"). NULL for a parser that extracts no article (v1, all text). Valid
 * until the next call on h. */
const char *fp_html_article(const fp_html *h, size_t *len, const char **rule);

/* One document in one call: 0 and *fp, or -1 with a message in err. */
int fp_html_text(const char *html, size_t len, const fp_params *p, unsigned flags,
                 uint64_t *fp, char *err, size_t errlen);

/* ---- What was fingerprinted (html_extract.c) ---- */

/* Pages fp_html_extract reads: it holds the page and its text in memory (a larger page
 * is refused; fp_html_new streams any size). */
#define FP_HTML_EXTRACT_MAX ((size_t)64 << 20)
/* Bytes of extracted text it may gather: entities, U+FFFD for invalid bytes,
 * legacy charsets and block boundaries make the text at most about 3 times the page. */
#define FP_HTML_EXTRACT_TEXT_MAX (4 * FP_HTML_EXTRACT_MAX)

typedef struct fp_extraction {
    char *text;        /* the text that was fingerprinted, UTF-8, NUL-terminated, blocks
                          separated by "\n"; malloc'd */
    size_t len;
    const char *rule;  /* static string: which rule chose the text ("all-text", or v5's
                          "article", "article-relaxed", "page", "empty":
                          docs/fingerprint.md) */
    uint64_t fp;       /* its fingerprint: always equal to what fp_html_text gives for the
                          same html, params and flags, and to fp_text_p(text, len, p) */
} fp_extraction;

/* The text of the page html[0..len) that its fingerprint with parameters p (NULL: the
 * default algorithm) and flags (FP_HTML_TITLE, FP_HTML_ALL_TEXT) is taken from. Returns 0 with *out
 * filled (free it with fp_extraction_free), or -1 with a message in err (bad
 * parameters or flags, a page over FP_HTML_EXTRACT_MAX, a page fp_html_text cannot
 * read, out of memory); *out then holds nothing to free. */
int fp_html_extract(const char *html, size_t len, const fp_params *p, unsigned flags,
                    fp_extraction *out, char *err, size_t errlen);
/* Frees x's text and clears it (NULL or a cleared x: nothing to do). */
void fp_extraction_free(fp_extraction *x);

#endif
