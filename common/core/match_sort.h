/* match_sort.h: LSD radix sorts used by batch matching (64-bit values and pairs). */
#ifndef SIMHASH_MATCH_SORT_H
#define SIMHASH_MATCH_SORT_H

#include <stddef.h>
#include <stdint.h>

#include "match.h"

/* Sort a[0..n) by the bits [lo, hi) of each value, given that all values agree on the
 * bits above hi (MSD radix with 8-bit digits, insertion sort for small ranges); values
 * equal in [lo, hi) end up ordered by their bits below lo as well. tmp[0..n) is
 * scratch. Meant for ranges that fit in cache. */
void match_msd_sort(uint64_t *a, uint64_t *tmp, size_t n, unsigned lo, unsigned hi);

/* Number of top bits for a first scatter of n values so that buckets hold about a
 * thousand values (1..12). */
unsigned match_top_bits(size_t n);

/* Copy src[0..n) to dst[0..n) sorted ascending: one scatter by the top bits, then the
 * buckets sorted in cache, split over `threads` threads (at least 1). Returns 0, or -1
 * out of memory (dst undefined). */
int match_sort_u64(const uint64_t *src, uint64_t *dst, size_t n, unsigned threads);

/* Sort pairs by (a, b) ascending, using tmp[0..n) as scratch. The result is in p.
 * Returns 0, or -1 when the counters cannot be allocated (p is then unchanged). */
int match_sort_pairs(match_pair *p, match_pair *tmp, size_t n);

/* ---- Building blocks of out-of-memory matching (client/tools/ext_match.c) ---- */

struct perm_set;
/* Append to *pairs (*npairs used of *cap, realloc'ed) the pairs that table t reports
 * among uniq[0..nu): distinct values sorted ascending whose permuted values (table t)
 * all share their top `known` bits, known <= the table's prefix_bits (a partition;
 * 0 for the whole input). One thread. Returns 0, or -1 out of memory (*pairs keeps
 * what it had). */
int match_table_pairs(const struct perm_set *ps, unsigned t, const uint64_t *uniq, size_t nu,
                      unsigned known, match_pair **pairs, size_t *npairs, size_t *cap);

#endif
