/* html_article.h: the article of a page (algorithm v5): which part of the tree of
 * html_tree.h is the page's own text. Candidate containers are scored by the
 * paragraphs under them (letters, commas), their link density and what their names
 * say; the best one, with the siblings that belong to it, is cleaned of furniture
 * (share bars, related links, captions, bylines, lists of links) and its text is the
 * article. The rules, and what a page that is no article gives: docs/fingerprint.md
 * "Algorithm v5". Internal to the core library. */
#ifndef SIMHASH_HTML_ARTICLE_H
#define SIMHASH_HTML_ARTICLE_H

#include <stddef.h>

#include "html_tree.h"

/* What was taken as the article (hart_result.rule). */
#define HART_RULE_ARTICLE "article"          /* the best container, strict pass */
#define HART_RULE_RELAXED "article-relaxed"  /* the strict pass found too little text */
#define HART_RULE_PAGE "page"                /* no paragraph anywhere: the page's
                                                text without its furniture */
#define HART_RULE_EMPTY "empty"              /* no text at all */

#define HART_MIN_LETTERS 500      /* an article shorter than this tries the next pass */

typedef struct hart_result {
    char *text;               /* blocks separated by "\n", runs of white space as one
                                 space; malloc'd, NUL-terminated (also when empty) */
    size_t len;
    const char *rule;         /* HART_RULE_* */
} hart_result;

/* The article of the page in t (htree_finish'ed). 0, or -1 out of memory. */
int hart_extract(const htree *t, hart_result *out);

#endif
