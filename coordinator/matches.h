/* matches.h: the parts of SIMHASH.QUERY/CHECK that need no event loop: parsing the
 * options [DISTANCE d] [LIMIT n] [FORMAT f] and merging the workers' matches. Used by
 * commands.c, query.c and info.c; tests/unit/test_coord_matches.c calls them directly. */
#ifndef SIMHASH_COORD_MATCHES_H
#define SIMHASH_COORD_MATCHES_H

#include <stddef.h>
#include <stdint.h>

/* One match as the workers report it (one per table that found it). */
typedef struct qmatch {
    uint64_t fp;
    unsigned dist;
    int gone;               /* no document ids: not (or no longer) in the corpus */
    char *docs;             /* RESP array of document ids, as received order */
    size_t docslen;
} qmatch;

/* Orders of the matches: by fingerprint; by distance, then fingerprint (answers). */
int coord_cmp_fp(const void *a, const void *b);
int coord_cmp_dist_fp(const void *a, const void *b);

/* Merges the n matches of all tables in m: one per fingerprint, with the smallest
 * distance reported and any id list found (the others freed); then, with limit > 0
 * and more matches than that, keeps the limit nearest (by distance, then
 * fingerprint; the rest freed). Returns the number kept. */
size_t coord_matches_merge(qmatch *m, size_t n, size_t limit);

enum { COORD_OPT_DISTANCE = 1, COORD_OPT_LIMIT = 2, COORD_OPT_FORMAT = 4 };
typedef struct coord_qopts {
    unsigned d;                     /* DISTANCE, default the corpus distance */
    size_t limit;                   /* LIMIT, 0: none */
    int html;                       /* FORMAT html: 1, html-all (all visible text): 2 */
} coord_qopts;

/* Argument i of a request (binary-safe, *len bytes): rs_req_arg, or a test's array. */
typedef const char *(*coord_arg_fn)(void *src, size_t i, size_t *len);

/* Parses the options among arguments [from, argc) of src (only those in allow; a
 * DISTANCE up to corpus_distance). Returns 0, or -1 with the error reply's text in
 * err ("unknown option 'X' (argument 3); expected DISTANCE d or LIMIT n", ...). */
int coord_qopts_parse(unsigned corpus_distance, coord_arg_fn arg, void *src, size_t argc,
                      size_t from, unsigned allow, coord_qopts *o, char *err, size_t errlen);

#endif
