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
static int msort_trivial(const size_t *h, size_t n)
{
    for (unsigned d = 0; d < SORT_RADIX; d++)
        if (h[d])
            return h[d] == n;
    return 1;
}

/* Turn counts into start positions. */
static void msort_prefix(size_t *h)
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
static void msort_msd_insertion(uint64_t *a, size_t n, unsigned lo)
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
            msort_msd_insertion(a, n, lo);
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

/* One thread's share of match_sort_u64: phase 0 counts src[i0..i1) per bucket, phase 1
 * scatters them, phase 2 sorts the buckets [d0, d1). */
typedef struct sort_part {
    const uint64_t *src;
    uint64_t *dst;
    size_t i0, i1;
    size_t *pos;              /* this share's counts, then its cursor in each bucket */
    const size_t *end;        /* end[d]: end of bucket d (start of d + 1) */
    size_t d0, d1;
    size_t biggest;           /* largest bucket */
    unsigned sh;              /* bucket = value >> sh */
    int phase;
    int rc;                   /* -1 out of memory */
} sort_part;

/* Run the current phase of one share. Returns NULL. */
static void *msort_part_run(void *arg)
{
    sort_part *sp = arg;
    const uint64_t *src = sp->src;
    unsigned sh = sp->sh;
    sp->rc = 0;
    if (sp->phase == 0) {
        for (size_t i = sp->i0; i < sp->i1; i++)
            sp->pos[src[i] >> sh]++;
    } else if (sp->phase == 1) {
        for (size_t i = sp->i0; i < sp->i1; i++)
            sp->dst[sp->pos[src[i] >> sh]++] = src[i];
    } else {
        uint64_t *tmp = malloc((sp->biggest ? sp->biggest : 1) * sizeof *tmp);
        if (!tmp) {
            sp->rc = -1;
            return NULL;
        }
        for (size_t d = sp->d0; d < sp->d1; d++) {
            size_t from = d ? sp->end[d - 1] : 0;
            match_msd_sort(sp->dst + from, tmp, sp->end[d] - from, 0, sh);
        }
        free(tmp);
    }
    return NULL;
}

/* Run phase `phase` of every share, shares 1.. on their own threads (in this thread
 * when a thread cannot start). Returns 0, or -1 when a share failed. */
static int msort_run_phase(sort_part *parts, unsigned nparts, int phase)
{
    pthread_t tids[16];
    int started[16] = {0};
    for (unsigned p = 0; p < nparts; p++)
        parts[p].phase = phase;
    for (unsigned p = 1; p < nparts; p++)
        started[p] = pthread_create(&tids[p], NULL, msort_part_run, &parts[p]) == 0;
    msort_part_run(&parts[0]);
    int rc = parts[0].rc;
    for (unsigned p = 1; p < nparts; p++) {
        if (started[p])
            pthread_join(tids[p], NULL);
        else
            msort_part_run(&parts[p]);
        rc |= parts[p].rc;
    }
    return rc ? -1 : 0;
}

int match_sort_u64(const uint64_t *src, uint64_t *dst, size_t n, unsigned threads)
{
    if (n == 0)
        return 0;
    if (threads < 1 || n < 65536)
        threads = 1;
    if (threads > 16)
        threads = 16;
    unsigned w = match_top_bits(n), sh = 64 - w;
    size_t nb = (size_t)1 << w;
    size_t *counts = calloc(nb * (threads + 1), sizeof *counts);
    if (!counts)
        return -1;
    size_t *end = counts + nb * threads;
    sort_part parts[16];
    for (unsigned p = 0; p < threads; p++)
        parts[p] = (sort_part){.src = src, .dst = dst, .i0 = n / threads * p,
                               .i1 = p + 1 == threads ? n : n / threads * (p + 1),
                               .pos = counts + nb * p, .end = end, .sh = sh};
    msort_run_phase(parts, threads, 0);
    /* Bucket d holds share 0's values, then share 1's, ... */
    size_t sum = 0, biggest = 0;
    for (size_t d = 0; d < nb; d++) {
        size_t first = sum;
        for (unsigned p = 0; p < threads; p++) {
            size_t c = parts[p].pos[d];
            parts[p].pos[d] = sum;
            sum += c;
        }
        end[d] = sum;
        if (sum - first > biggest)
            biggest = sum - first;
    }
    msort_run_phase(parts, threads, 1);
    /* Phase 2: shares of about n / threads values, whole buckets each. */
    size_t d = 0;
    for (unsigned p = 0; p < threads; p++) {
        size_t goal = p + 1 == threads ? n : n / threads * (p + 1);
        parts[p].d0 = d;
        while (d < nb && (p + 1 == threads || end[d] <= goal))
            d++;
        parts[p].d1 = d;
        parts[p].biggest = biggest;
    }
    int rc = msort_run_phase(parts, threads, 2);
    free(counts);
    return rc;
}

/* Digit d of a pair: digits 0..5 come from b, 6..11 from a. */
static inline unsigned msort_pair_digit(const match_pair *p, unsigned d)
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
            hist[d * SORT_RADIX + msort_pair_digit(&p[i], d)]++;
    match_pair *src = p, *dst = tmp;
    for (unsigned d = 0; d < 2 * SORT_DIGITS; d++) {
        size_t *h = hist + d * SORT_RADIX;
        if (msort_trivial(h, n))
            continue;
        msort_prefix(h);
        for (size_t i = 0; i < n; i++)
            dst[h[msort_pair_digit(&src[i], d)]++] = src[i];
        match_pair *t = src;
        src = dst;
        dst = t;
    }
    if (src != p)
        memcpy(p, src, n * sizeof *p);
    free(hist);
    return 0;
}
