/* match_sort.c: radix sorts for batch matching: an MSD sort of 64-bit values (one
 * scatter by the top bits, then cache-sized buckets) and an LSD sort of (a, b) pairs
 * (11-bit digits, one counting pass, digits on which every key agrees skipped). */
#include "match_sort.h"

#include <pthread.h>
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

#define MSD_CUTOFF 16 /* insertion sort up to this many values */

/* Insertion sort of a[0..n) by v >> lo. */
static void msd_insertion(uint64_t *a, size_t n, unsigned lo)
{
    for (size_t i = 1; i < n; i++) {
        uint64_t v = a[i], key = v >> lo;
        size_t j = i;
        while (j > 0 && (a[j - 1] >> lo) > key) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}

void match_msd_sort(uint64_t *a, uint64_t *tmp, size_t n, unsigned lo, unsigned hi)
{
    while (n >= 2 && hi > lo) {
        if (n <= MSD_CUTOFF) {
            msd_insertion(a, n, lo);
            return;
        }
        /* a digit of about log2(n) - 3 bits leaves sub-ranges of about 8 values */
        unsigned lg = 0;
        while (lg < 63 && ((size_t)1 << (lg + 1)) <= n)
            lg++;
        unsigned w = lg > 11 ? 8 : lg - 3;
        if (w > hi - lo)
            w = hi - lo;
        unsigned sh = hi - w, nd = 1u << w;
        uint64_t mask = nd - 1;
        size_t cnt[256];
        memset(cnt, 0, nd * sizeof cnt[0]);
        for (size_t i = 0; i < n; i++)
            cnt[(a[i] >> sh) & mask]++;
        size_t start[257], trivial = 0;
        start[0] = 0;
        for (unsigned d = 0; d < nd; d++) {
            start[d + 1] = start[d] + cnt[d];
            if (cnt[d] == n)
                trivial = 1;
        }
        if (trivial) { /* every value has the same digit: go on with the next one */
            hi = sh;
            continue;
        }
        size_t pos[256];
        memcpy(pos, start, nd * sizeof pos[0]);
        for (size_t i = 0; i < n; i++) {
            uint64_t v = a[i];
            tmp[pos[(v >> sh) & mask]++] = v;
        }
        memcpy(a, tmp, n * sizeof *a);
        for (unsigned d = 0; d < nd; d++)
            if (cnt[d] >= 2)
                match_msd_sort(a + start[d], tmp + start[d], cnt[d], lo, sh);
        return;
    }
}

unsigned match_top_bits(size_t n)
{
    unsigned lg = 0;
    while (lg < 63 && ((size_t)1 << (lg + 1)) <= n)
        lg++;
    return lg <= 11 ? 1 : lg - 10 > 12 ? 12 : lg - 10;
}

/* A share of the buckets of match_sort_u64 for one thread. */
typedef struct sort_part {
    uint64_t *dst;
    const size_t *end;        /* end[d]: end of bucket d (start of d + 1) */
    size_t d0, d1;            /* buckets [d0, d1) */
    size_t biggest;
    unsigned sh;
    int rc;
} sort_part;

/* Sort the buckets of one share. Returns NULL; rc = -1 out of memory. */
static void *sort_part_run(void *arg)
{
    sort_part *sp = arg;
    uint64_t *tmp = malloc((sp->biggest ? sp->biggest : 1) * sizeof *tmp);
    if (!tmp) {
        sp->rc = -1;
        return NULL;
    }
    for (size_t d = sp->d0; d < sp->d1; d++) {
        size_t from = d ? sp->end[d - 1] : 0;
        match_msd_sort(sp->dst + from, tmp, sp->end[d] - from, 0, sp->sh);
    }
    free(tmp);
    sp->rc = 0;
    return NULL;
}

int match_sort_u64(const uint64_t *src, uint64_t *dst, size_t n, unsigned threads)
{
    if (n == 0)
        return 0;
    unsigned w = match_top_bits(n), sh = 64 - w;
    size_t nb = (size_t)1 << w;
    size_t *start = calloc(nb + 1, sizeof *start);
    if (!start)
        return -1;
    for (size_t i = 0; i < n; i++)
        start[(src[i] >> sh) + 1]++;
    size_t biggest = 0;
    for (size_t d = 0; d < nb; d++) {
        if (start[d + 1] > biggest)
            biggest = start[d + 1];
        start[d + 1] += start[d];
    }
    for (size_t i = 0; i < n; i++)
        dst[start[src[i] >> sh]++] = src[i];
    /* start[d] is now the end of bucket d. Shares of about n / threads values. */
    if (threads < 1 || n < 65536)
        threads = 1;
    if (threads > 16)
        threads = 16;
    sort_part parts[16];
    pthread_t tids[16];
    size_t d = 0;
    for (unsigned t = 0; t < threads; t++) {
        size_t goal = t + 1 == threads ? n : n / threads * (t + 1);
        parts[t] = (sort_part){dst, start, d, d, biggest, sh, 0};
        while (d < nb && (t + 1 == threads || start[d] <= goal))
            d++;
        parts[t].d1 = d;
    }
    unsigned started = 0;
    for (unsigned t = 1; t < threads; t++) {
        if (pthread_create(&tids[t], NULL, sort_part_run, &parts[t]) != 0)
            break;
        started = t;
    }
    sort_part_run(&parts[0]);
    int rc = parts[0].rc;
    for (unsigned t = 1; t <= started; t++) {
        pthread_join(tids[t], NULL);
        rc |= parts[t].rc;
    }
    for (unsigned t = started + 1; t < threads; t++) { /* threads that did not start */
        sort_part_run(&parts[t]);
        rc |= parts[t].rc;
    }
    free(start);
    return rc ? -1 : 0;
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
