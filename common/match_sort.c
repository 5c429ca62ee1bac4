/* match_sort.c: LSD radix sorts of 64-bit values and of (a, b) pairs, 11-bit digits,
 * one counting pass for all digits, digits on which every key agrees are skipped. */
#include "match_sort.h"

#include <stdlib.h>
#include <string.h>

#define SORT_BITS 11
#define SORT_RADIX (1u << SORT_BITS)
#define SORT_DIGITS 6 /* ceil(64 / 11) */

/* True when every key has the same digit (one counter holds all n). */
static int sort_trivial(const size_t *h, size_t n)
{
    for (unsigned d = 0; d < SORT_RADIX; d++)
        if (h[d])
            return h[d] == n;
    return 1;
}

/* Turn counts into start positions. */
static void sort_prefix(size_t *h)
{
    size_t sum = 0;
    for (unsigned d = 0; d < SORT_RADIX; d++) {
        size_t c = h[d];
        h[d] = sum;
        sum += c;
    }
}

int match_sort_u64(uint64_t *a, uint64_t *tmp, size_t n)
{
    if (n < 2)
        return 0;
    size_t *hist = calloc((size_t)SORT_DIGITS * SORT_RADIX, sizeof *hist);
    if (!hist)
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = a[i];
        for (unsigned d = 0; d < SORT_DIGITS; d++)
            hist[d * SORT_RADIX + ((v >> (d * SORT_BITS)) & (SORT_RADIX - 1))]++;
    }
    uint64_t *src = a, *dst = tmp;
    for (unsigned d = 0; d < SORT_DIGITS; d++) {
        size_t *h = hist + d * SORT_RADIX;
        if (sort_trivial(h, n))
            continue;
        sort_prefix(h);
        unsigned sh = d * SORT_BITS;
        for (size_t i = 0; i < n; i++) {
            uint64_t v = src[i];
            dst[h[(v >> sh) & (SORT_RADIX - 1)]++] = v;
        }
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
    free(hist);
    return 0;
}

/* Digit d of a pair: digits 0..5 come from b, 6..11 from a. */
static inline unsigned sort_pair_digit(const match_pair *p, unsigned d)
{
    uint64_t v = d < SORT_DIGITS ? p->b : p->a;
    return (unsigned)((v >> ((d % SORT_DIGITS) * SORT_BITS)) & (SORT_RADIX - 1));
}

int match_sort_pairs(match_pair *p, match_pair *tmp, size_t n)
{
    if (n < 2)
        return 0;
    size_t *hist = calloc((size_t)2 * SORT_DIGITS * SORT_RADIX, sizeof *hist);
    if (!hist)
        return -1;
    for (size_t i = 0; i < n; i++)
        for (unsigned d = 0; d < 2 * SORT_DIGITS; d++)
            hist[d * SORT_RADIX + sort_pair_digit(&p[i], d)]++;
    match_pair *src = p, *dst = tmp;
    for (unsigned d = 0; d < 2 * SORT_DIGITS; d++) {
        size_t *h = hist + d * SORT_RADIX;
        if (sort_trivial(h, n))
            continue;
        sort_prefix(h);
        for (size_t i = 0; i < n; i++)
            dst[h[sort_pair_digit(&src[i], d)]++] = src[i];
        match_pair *t = src;
        src = dst;
        dst = t;
    }
    if (src != p)
        memcpy(p, src, n * sizeof *p);
    free(hist);
    return 0;
}
