/* corpus.h: an in-memory corpus of fingerprints with exact near-duplicate lookup.
 * A set: each fingerprint is held once. Not thread-safe for writers; concurrent
 * readers without writers are fine. */
#ifndef SIMHASH_CORPUS_H
#define SIMHASH_CORPUS_H

#include <stddef.h>
#include <stdint.h>

typedef struct corpus corpus;

/* NULL with err set on a bad setting or out of memory. */
corpus *corpus_new(unsigned blocks, unsigned distance, char *err, size_t errlen);
void corpus_free(corpus *c);

size_t corpus_size(const corpus *c);
unsigned corpus_blocks(const corpus *c);
unsigned corpus_distance(const corpus *c);

/* 1 inserted, 0 already there, -1 out of memory (corpus unchanged). */
int corpus_insert(corpus *c, uint64_t h);
/* 1 removed, 0 not there. */
int corpus_remove(corpus *c, uint64_t h);
/* 1 if present. */
int corpus_contains(const corpus *c, uint64_t h);

/* Some stored fingerprint within d bits of q (d <= corpus distance): 1 and *found,
 * or 0. Returns -1 if d exceeds the corpus distance. */
int corpus_find_first(const corpus *c, uint64_t q, unsigned d, uint64_t *found);

/* Every stored fingerprint within d bits of q, each once, sorted by distance then
 * value. *out is malloc'ed (NULL when none). Returns the count, or -1 (d too large,
 * out of memory). */
long corpus_find_all(const corpus *c, uint64_t q, unsigned d, uint64_t **out);

/* Bulk forms: return the number inserted / removed, or -1 on out of memory (the
 * entries before the failing one stay inserted). */
long corpus_insert_many(corpus *c, const uint64_t *hs, size_t n);
long corpus_remove_many(corpus *c, const uint64_t *hs, size_t n);
/* found[i] = 1 and first[i] set when some fingerprint is within d of qs[i], else
 * found[i] = 0: the same as corpus_find_first of each. Returns 0, or -1 if d exceeds
 * the corpus distance. */
int corpus_find_first_many(const corpus *c, const uint64_t *qs, size_t n, unsigned d,
                           uint8_t *found, uint64_t *first);
/* corpus_find_all of every qs[i]: counts[i] results for query i (n entries), all of
 * them in *out (malloc'ed, NULL when none), query after query, each query's as
 * corpus_find_all orders them. Returns the total, or -1 (d too large, out of memory).
 * Batches of 64 or more visit the tables in order of the queries' permuted values:
 * the same results, much faster for large batches. */
long corpus_find_all_many(const corpus *c, const uint64_t *qs, size_t n, unsigned d,
                          long *counts, uint64_t **out);

/* For tests of the out-of-memory paths: the corpus's next `after` allocations succeed,
 * the following ones fail (after < 0: never fail, the default). */
void corpus_debug_fail_alloc(corpus *c, long after);

#endif
