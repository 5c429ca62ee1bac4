/* perm.c: the permutation tables of Manku, Jain and Das Sarma: building the tables,
 * applying and reverting a table's permutation, and finding the canonical (first)
 * table of a matching pair so that every pair is reported from exactly one table. */
#include "perm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Binomial coefficients ---- */

/* binom[n][r] for 0 <= r <= n <= 64; the largest, C(64, 32), fits in 64 bits. */
static uint64_t perm_binom[65][65];
static pthread_once_t perm_binom_once = PTHREAD_ONCE_INIT;

static void perm_binom_fill(void)
{
    for (unsigned n = 0; n <= 64; n++) {
        perm_binom[n][0] = 1;
        for (unsigned r = 1; r <= n; r++)
            perm_binom[n][r] = perm_binom[n - 1][r - 1] + (r < n ? perm_binom[n - 1][r] : 0);
    }
}

/* C(n, r), 0 when r > n. */
static inline uint64_t perm_choose(unsigned n, unsigned r)
{
    return r > n ? 0 : perm_binom[n][r];
}

/* Validate a setting. Returns the table count C(blocks, blocks-distance) (which may
 * exceed PERM_MAX_TABLES), or 0 with a message in err when blocks or distance is out of
 * range. */
static uint64_t perm_check(unsigned blocks, unsigned distance, char *err, size_t errlen)
{
    pthread_once(&perm_binom_once, perm_binom_fill);
    if (blocks < 1 || blocks > 64) {
        if (err && errlen)
            snprintf(err, errlen, "blocks %u out of range (1..64)", blocks);
        return 0;
    }
    if (distance >= blocks) {
        if (err && errlen)
            snprintf(err, errlen, "distance %u must be smaller than blocks %u", distance, blocks);
        return 0;
    }
    return perm_choose(blocks, blocks - distance);
}

size_t perm_table_count(unsigned blocks, unsigned distance)
{
    uint64_t n = perm_check(blocks, distance, NULL, 0);
    return n > PERM_MAX_TABLES ? 0 : (size_t)n;
}

/* ---- Building the tables ---- */

/* Fill table t from the (m-k)-combination comb[0..nlead) (ascending block indices). */
static void perm_table_build(perm_table *t, unsigned m, const unsigned *comb, unsigned nlead)
{
    memset(t, 0, sizeof *t);
    t->nlead = nlead;
    t->nblocks = m;
    unsigned npos = 0;
    for (unsigned i = 0; i < nlead; i++) {
        t->order[npos++] = (uint8_t)comb[i];
        t->lead_blocks |= 1ULL << comb[i];
    }
    for (unsigned b = 0; b < m; b++)
        if (!(t->lead_blocks & (1ULL << b)))
            t->order[npos++] = (uint8_t)b;
    /* Output positions: order[0] ends at bit 64, each next block right below. */
    unsigned top = 64;
    for (unsigned p = 0; p < m; p++) {
        unsigned b = t->order[p];
        unsigned lo = b * 64 / m, hi = (b + 1) * 64 / m, w = hi - lo;
        t->src_shift[b] = (uint8_t)lo;
        t->dst_shift[b] = (uint8_t)(top - w);
        t->width_mask[b] = w == 64 ? ~0ULL : (1ULL << w) - 1;
        top -= w;
        if (p < nlead)
            t->prefix_bits += w;
    }
    t->prefix_mask = t->prefix_bits == 64 ? ~0ULL : ~(~0ULL >> t->prefix_bits);
}

int perm_set_init(perm_set *ps, unsigned blocks, unsigned distance, char *err, size_t errlen)
{
    memset(ps, 0, sizeof *ps);
    uint64_t count = perm_check(blocks, distance, err, errlen);
    if (count == 0)
        return -1;
    if (count > PERM_MAX_TABLES) {
        if (err && errlen)
            snprintf(err, errlen, "blocks %u distance %u would need %llu tables (limit %d)",
                     blocks, distance, (unsigned long long)count, PERM_MAX_TABLES);
        return -1;
    }
    ps->tables = calloc((size_t)count, sizeof *ps->tables);
    if (!ps->tables) {
        if (err && errlen)
            snprintf(err, errlen, "out of memory building %llu tables", (unsigned long long)count);
        return -1;
    }
    ps->blocks = blocks;
    ps->distance = distance;
    ps->ntables = (unsigned)count;
    for (unsigned b = 0; b < blocks; b++) {
        unsigned lo = b * 64 / blocks, hi = (b + 1) * 64 / blocks, w = hi - lo;
        ps->block_mask[b] = (w == 64 ? ~0ULL : (1ULL << w) - 1) << lo;
    }
    /* Combinations of nlead out of blocks in lexicographic order. */
    unsigned nlead = blocks - distance, comb[64];
    for (unsigned i = 0; i < nlead; i++)
        comb[i] = i;
    for (unsigned t = 0; t < ps->ntables; t++) {
        perm_table_build(&ps->tables[t], blocks, comb, nlead);
        int i = (int)nlead - 1;
        while (i >= 0 && comb[i] == blocks - nlead + (unsigned)i)
            i--;
        if (i < 0)
            break;
        comb[i]++;
        for (unsigned j = (unsigned)i + 1; j < nlead; j++)
            comb[j] = comb[j - 1] + 1;
    }
    return 0;
}

void perm_set_free(perm_set *ps)
{
    free(ps->tables);
    ps->tables = NULL;
    ps->ntables = 0;
}

/* ---- Applying ---- */

uint64_t perm_apply(const perm_table *t, uint64_t x)
{
    uint64_t out = 0;
    for (unsigned p = 0; p < t->nblocks; p++) {
        unsigned b = t->order[p];
        out |= ((x >> t->src_shift[b]) & t->width_mask[b]) << t->dst_shift[b];
    }
    return out;
}

uint64_t perm_revert(const perm_table *t, uint64_t x)
{
    uint64_t out = 0;
    for (unsigned p = 0; p < t->nblocks; p++) {
        unsigned b = t->order[p];
        out |= ((x >> t->dst_shift[b]) & t->width_mask[b]) << t->src_shift[b];
    }
    return out;
}

/* ---- Canonical table of a pair ---- */

int perm_first_table(const perm_set *ps, uint64_t a, uint64_t b)
{
    unsigned m = ps->blocks, r = m - ps->distance;
    uint64_t x = a ^ b;
    /* The first r agreeing blocks in index order form the lexicographically first
     * r-subset of the agreeing blocks; its rank in lexicographic order is the table.
     * rank = sum over chosen c_i (i = 1..r, c_0 = -1) of the combinations skipped
     * between c_{i-1} and c_i: C(m - c_{i-1} - 1, r - i + 1) - C(m - c_i, r - i + 1). */
    uint64_t rank = 0;
    int prev = -1;
    unsigned i = 0;
    for (unsigned blk = 0; blk < m && i < r; blk++) {
        if (x & ps->block_mask[blk])
            continue;
        i++;
        rank += perm_choose((unsigned)((int)m - 1 - prev), r - i + 1) - perm_choose(m - blk, r - i + 1);
        prev = (int)blk;
    }
    return i < r ? -1 : (int)rank;
}
