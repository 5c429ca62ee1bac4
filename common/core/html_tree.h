/* html_tree.h: a compact tree of a page's elements and visible text, for article
 * extraction (algorithm v5, html_article.c). html.c builds it from libxml2's SAX events
 * (so charset handling, byte cleaning and the restarts after </html> are html.c's), and
 * html_article.c reads it. Nodes are kept in document order (pre-order) in one array:
 * a node's subtree is the range [i, end), children come after their parent, so sums
 * over subtrees are one backward pass and a subtree's text one forward scan.
 * Memory: 24 bytes a node and the text itself, both capped (HTREE_MAX_NODES,
 * HTREE_MAX_TEXT); past a cap the rest of the page is not recorded (docs/fingerprint.md
 * "Algorithm v5"). Internal to the core library. */
#ifndef SIMHASH_HTML_TREE_H
#define SIMHASH_HTML_TREE_H

#include <stddef.h>
#include <stdint.h>

#define HTREE_DEPTH 512                   /* open elements recorded; deeper ones are not */
#define HTREE_MAX_NODES (1u << 20)        /* elements and text runs of one page */
#define HTREE_MAX_TEXT ((size_t)64 << 20) /* bytes of visible text of one page */
#define HTREE_DESC 1024                   /* bytes of the page's description kept */

/* Element kinds the extraction tells apart (HT_TEXT: a run of text, no element). */
enum {
    HT_TEXT, HT_OTHER, HT_A, HT_P, HT_DIV, HT_SECTION, HT_ARTICLE, HT_MAIN, HT_HEADER,
    HT_FOOTER, HT_NAV, HT_ASIDE, HT_H1, HT_H, HT_PRE, HT_TD, HT_TH, HT_TR, HT_TABLE,
    HT_BLOCKQUOTE, HT_UL, HT_OL, HT_LI, HT_DL, HT_DD, HT_DT, HT_FORM, HT_FIGURE,
    HT_FIGCAPTION, HT_IMG, HT_BR, HT_ADDRESS, HT_BODY, HT_INPUT, HT_EMBED, HT_CODE,
    HT_MENU, HT_HR, HT_NKINDS
};

/* Node flags (from the element and its attributes). */
enum {
    HTF_INLINE = 1,           /* phrasing element: its edges split no words */
    HTF_UNLIKELY = 2,         /* class/id/role of site furniture (menus, sidebars...) */
    HTF_FURNITURE = 4,        /* furniture inside an article too: comments, share bars,
                                 related links, newsletter boxes, bylines, captions */
    HTF_ARTICLE = 8,          /* says it is the article: itemprop=articleBody, role=main,
                                 <article>, <main> */
    HTF_BODYHINT = 16,        /* itemprop=articleBody or a class naming the article body */
    HTF_NEVER = 32,           /* never the article: readers' comments (a class or id
                                 word), an ARIA role of furniture */
    HTF_ROLE = 64,            /* an ARIA role of furniture (navigation, banner...) */
};

typedef struct htree_node {
    uint32_t parent;          /* index of the parent (the root: itself, 0) */
    uint32_t end;             /* one past the last node of the subtree */
    uint32_t off, len;        /* HT_TEXT: the text, in htree.text */
    uint8_t kind, flags;
    int16_t weight;           /* class and id words: +25 for each naming content, -25 for
                                 each naming furniture */
    uint32_t cls;             /* hash of the class attribute (0: none) */
} htree_node;

typedef struct htree {
    htree_node *node;
    uint32_t n, cap;
    char *text;               /* the visible text of the page, as runs */
    size_t ntext, captext;
    uint32_t open[HTREE_DEPTH];   /* open recorded elements */
    unsigned depth;
    unsigned over;            /* open elements not recorded (too deep, or a cap reached) */
    unsigned skip;            /* open elements whose content is not visible (hidden, forms' widgets) */
    int full;                 /* a cap was reached: nothing more is recorded */
    char desc[HTREE_DESC];    /* the page's description (<meta property="og:description">,
                                 else name="description"), NUL-terminated, cut at
                                 HTREE_DESC - 1 bytes */
    int desc_og;              /* desc is og:description */
} htree;

/* How html.c classes an element (htree_start). */
enum { HTREE_BLOCK, HTREE_INLINE, HTREE_SKIP };

void htree_init(htree *t);
/* Empties t for the next page (its buffers are kept). */
void htree_reset(htree *t);
void htree_free(htree *t);
/* An element starts or ends (libxml2's lower-case name; atts: name/value pairs,
 * NULL-terminated, or NULL). how: HTREE_INLINE for html.c's inline elements,
 * HTREE_SKIP for those whose content is no text (script, style, the title...). */
void htree_start(htree *t, const char *name, int how, const char *const *atts);
void htree_end(htree *t, const char *name);
/* Text at the current position (UTF-8); dropped inside skipped or hidden elements. */
void htree_text(htree *t, const char *s, size_t n);
/* A new parser goes on after </html>: every open element ends. */
void htree_restart(htree *t);
/* Ends the page: open elements end. */
void htree_finish(htree *t);

/* The kind of an element name. */
int htree_kind(const char *name);

#endif
