/* match_sort.h: LSD radix sorts used by batch matching (64-bit values and pairs). */
#ifndef SIMHASH_MATCH_SORT_H
#define SIMHASH_MATCH_SORT_H

#include <stddef.h>
#include <stdint.h>

#include "match.h"

/* Sort a[0..n) ascending, using tmp[0..n) as scratch. The result is in a.
 * Returns 0, or -1 when the counters cannot be allocated (a is then unchanged). */
int match_sort_u64(uint64_t *a, uint64_t *tmp, size_t n);

/* Sort pairs by (a, b) ascending, using tmp[0..n) as scratch. The result is in p.
 * Returns 0, or -1 when the counters cannot be allocated (p is then unchanged). */
int match_sort_pairs(match_pair *p, match_pair *tmp, size_t n);

#endif
