/* match.h: exact batch matching: every pair within k bits, and clusters. */
#ifndef SIMHASH_MATCH_H
#define SIMHASH_MATCH_H

#include <stddef.h>
#include <stdint.h>

typedef struct match_pair {
    uint64_t a, b;            /* a <= b; a == b only for a value given two or more times */
} match_pair;

/* All pairs within `distance` bits among hashes[0..n). A value that occurs two or
 * more times yields the pair (a, a) once; pairs of distinct values come once each.
 * *pairs is malloc'ed, sorted by (a, b). threads == 0 means all cores.
 * Returns 0, or -1 with err set (bad setting, out of memory). */
int match_find_all(const uint64_t *hashes, size_t n, unsigned blocks, unsigned distance,
                   unsigned threads, match_pair **pairs, size_t *npairs,
                   char *err, size_t errlen);

/* Connected components of the match graph over input lines (identical values are
 * at distance 0, so they connect). Only components of two or more lines are
 * returned. Cluster c is values[offsets[c] .. offsets[c+1]), sorted ascending and
 * keeping repeats (a value given twice appears twice); clusters are sorted by their
 * first value. *values and *offsets (nclusters + 1 entries) are malloc'ed. */
int match_find_clusters(const uint64_t *hashes, size_t n, unsigned blocks, unsigned distance,
                        unsigned threads, uint64_t **values, size_t **offsets,
                        size_t *nclusters, char *err, size_t errlen);

#endif
