/* html_main.h: main-content extraction for HTML fingerprints (algorithm v3, internal to
 * html.c). It follows the page's elements as libxml2 reports them, in one pass with
 * bounded memory and no tree: text in site furniture (nav, header and footer outside
 * an article, aside, form, ARIA navigation/banner/contentinfo roles, class or id names
 * of menus, sidebars, cookie banners, comments...) is dropped, and the remaining text
 * is cut into blocks at element boundaries and judged block by block (mostly link
 * text: dropped; too short: kept only after a kept block, right before one, or as a
 * heading before one; a block right after a run of link text: kept when long, or
 * when the next block is not short).
 * Kept text goes out in two tiers: every kept block (content) and the kept blocks
 * inside <main>/<article> (main); html.c fingerprints both beside all visible text and
 * hmain_finish says which one is the page's. docs/fingerprint.md "Main content (v3)"
 * has the rules. */
#ifndef SIMHASH_HTML_MAIN_H
#define SIMHASH_HTML_MAIN_H

#include <stddef.h>
#include <stdint.h>

#define HMAIN_DEPTH 256          /* open elements followed; deeper ones inherit */
#define HMAIN_BLOCK 16384        /* text bytes of one block held until its end */
#define HMAIN_PENDING 8192       /* bytes of blocks held until a later block decides */
#define HMAIN_NPEND 32           /* blocks held */
#define HMAIN_SHORT 60           /* a block with fewer letters is short */
#define HMAIN_LONG 400           /* a block right after link text with fewer letters
                                    waits for the next one (provisional) */
#define HMAIN_LINKRUN 150        /* ... after that many letters of link text in a row */
#define HMAIN_NAMES 64           /* slots of the furniture-word table (hmain.names) */
#define HMAIN_CACHE 64           /* element names whose rule kind is remembered (html.c's
                                    element classes too) */

/* The cache slot (0..HMAIN_CACHE-1) of an element name, by its pointer (libxml2 interns
 * names per document, a few bytes apart: Fibonacci hashing spreads them). */
static inline size_t hmain_name_slot(const void *name)
{
    return (size_t)(((uint64_t)(uintptr_t)name * 0x9E3779B97F4A7C15u) >> 58);
}
_Static_assert(HMAIN_CACHE == 64, "hmain_name_slot gives 6 bits");

/* Blocks held until a later block decides. */
enum { HMAIN_HELD_SHORT, HMAIN_HELD_HEADING, HMAIN_HELD_PROVISIONAL };

/* Tiers of text (bit mask); the values are html.h's FP_HTML_TIER_*. */
enum { HMAIN_ALL = 1, HMAIN_CONTENT = 2, HMAIN_MAIN = 4 };

/* How a block's kept text is handed over: the whole block at once, or in pieces (the
 * block outgrew blk[]) up to its end. */
enum { HMAIN_WHOLE, HMAIN_PIECE, HMAIN_END };

/* Receives kept text of block seq (hmain_seq) with the tiers it belongs to
 * (HMAIN_CONTENT, maybe HMAIN_MAIN): how is HMAIN_WHOLE (s[0..n) is the whole block,
 * a block boundary follows), HMAIN_PIECE (text of the block, more follows) or
 * HMAIN_END (the last text of a block handed over in pieces, then a boundary). When
 * gathering (hmain.gather), tiers HMAIN_ALL alone with HMAIN_PIECE: all visible text
 * of the block that leaves blk[] before the block ends (a block over HMAIN_BLOCK). */
typedef void (*hmain_emit_fn)(void *arg, unsigned tiers, uint64_t seq, const char *s,
                              size_t n, unsigned how);

typedef struct hmain_pend {
    uint64_t seq;             /* the block's number (hmain.seq) */
    uint32_t off, len, letters;
    uint8_t kind, main;       /* HMAIN_HELD_*; inside <main>/<article> */
} hmain_pend;

typedef struct hmain {
    hmain_emit_fn emit;
    void *arg;
    /* the caller reads all visible text from here (hmain_block_nl, and HMAIN_ALL
     * pieces of blocks over HMAIN_BLOCK) instead of keeping a copy of its own: every
     * block's text goes into blk[], dropped ones too. Set after hmain_init (which
     * clears it); hmain_finish keeps it. */
    int gather;
    /* open elements: name (libxml2's interned pointer) and the counters it raised */
    const void *name[HMAIN_DEPTH];
    uint8_t bits[HMAIN_DEPTH];
    unsigned depth, over;
    unsigned drop, main, link, heading;
    /* what each element name is (hm_kind), by name pointer: libxml2 interns names per
     * document, so the cache is emptied with the parser (hmain_init, hmain_restart) */
    const void *kname[HMAIN_CACHE];
    uint8_t kind[HMAIN_CACHE];
    uint8_t names[HMAIN_NAMES];      /* html_main.c's furniture words by hash: index + 1 */
    /* the current block */
    uint64_t seq;                    /* its number: blocks of the page so far */
    char blk[HMAIN_BLOCK + 16];      /* + 16: hmain_block_nl's "\n", and html_main.c's
                                        letter count reads 16 bytes at a time */
    size_t nblk;
    size_t counted;                  /* blk[0..counted) is counted in letters */
    uint64_t letters, lletters;      /* letters, and letters inside links */
    int blk_drop, blk_heading, blk_main;
    int streaming;                   /* the block outgrew blk[]: 1 kept, -1 dropped */
    /* blocks held until a later block decides */
    char pend[HMAIN_PENDING];
    size_t npend;
    hmain_pend pb[HMAIN_NPEND];
    unsigned npb;
    int prev_good;                   /* the last judged block was kept */
    uint64_t links_run;              /* letters of the mostly-link blocks since the last
                                        kept or held block */
    uint64_t good_content, good_main;   /* letters of kept long blocks per tier */
} hmain;

void hmain_init(hmain *m, hmain_emit_fn emit, void *arg);
/* Forgets the open elements (a new parser after </html>: new name pointers); the
 * text judged so far stays. */
void hmain_restart(hmain *m);
/* An element starts or ends; is_inline: an inline element (html.c's list). atts:
 * libxml2's name/value pairs, NULL-terminated, or NULL. */
void hmain_start(hmain *m, const char *name, int is_inline, const char *const *atts);
void hmain_end(hmain *m, const char *name, int is_inline);
/* The number of the current block (0 for the first of a page): a block ends and the
 * next starts at every hmain_start or hmain_end of a non-inline element and at
 * hmain_restart. */
static inline uint64_t hmain_seq(const hmain *m)
{
    return m->seq;
}
/* Visible text (UTF-8) at the current position. */
void hmain_text(hmain *m, const char *s, size_t n);
/* When gathering: the current block's text still in blk[] (all of it, or nothing
 * once the block outgrew blk[] and went out in HMAIN_ALL pieces) followed by "\n";
 * *n counts both. Valid until the next hmain_* call, which may end the block. */
static inline const char *hmain_block_nl(hmain *m, size_t *n)
{
    m->blk[m->nblk] = '\n';
    *n = m->nblk + 1;
    return m->blk;
}
/* Whether the current block, if it ended now, could be handed over whole (kept at
 * once, or held for a later block to decide: hmain_emit_fn's HMAIN_WHOLE); when not,
 * its text never reaches the tiers. */
int hmain_may_keep(hmain *m);
/* Ends the page: the tier that is its text (HMAIN_MAIN, HMAIN_CONTENT, or HMAIN_ALL
 * when no block was kept), and resets m for the next page. */
unsigned hmain_finish(hmain *m);

#endif
