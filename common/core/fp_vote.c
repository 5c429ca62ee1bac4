/* fp_vote.c: the simhash vote of fingerprint.c (fp_vote.h): per-bit counts of the
 * feature hashes, kept as bit-sliced counters and added 8 hashes at a time. */
#include <string.h>

#include "fingerprint.h"
#include "fp_bp.h"
#include "fp_vote.h"

/* fpvote_spread[b]: byte k is bit k of b, so adding fpvote_spread[byte j of p] << k
 * to one uint64_t adds p's bits 8j..8j+7, each counting 2^k, into eight byte-wide
 * counters. */
static const uint64_t fpvote_spread[256] = {
#define FP_S1(b) (((uint64_t)((b) & 1)) | ((uint64_t)(((b) >> 1) & 1) << 8) | \
    ((uint64_t)(((b) >> 2) & 1) << 16) | ((uint64_t)(((b) >> 3) & 1) << 24) | \
    ((uint64_t)(((b) >> 4) & 1) << 32) | ((uint64_t)(((b) >> 5) & 1) << 40) | \
    ((uint64_t)(((b) >> 6) & 1) << 48) | ((uint64_t)(((b) >> 7) & 1) << 56))
#define FP_S4(b) FP_S1(b), FP_S1((b) + 1), FP_S1((b) + 2), FP_S1((b) + 3)
#define FP_S16(b) FP_S4(b), FP_S4((b) + 4), FP_S4((b) + 8), FP_S4((b) + 12)
#define FP_S64(b) FP_S16(b), FP_S16((b) + 16), FP_S16((b) + 32), FP_S16((b) + 48)
    FP_S64(0), FP_S64(64), FP_S64(128), FP_S64(192)
#undef FP_S64
#undef FP_S16
#undef FP_S4
#undef FP_S1
};

#define FPVOTE_PLANES 8           /* bit-sliced counter planes: counts up to 255 */
#define FPVOTE_PLANES_MAX 255u

void fpvote_init(fp_vote *v)
{
    memset(v, 0, sizeof *v);
}

/* Moves the bit-sliced counts into cnt[]: each plane through the byte-wide counters
 * (a byte's count stays below 256). */
static void fpvote_flush(fp_vote *v)
{
    uint64_t acc[8] = {0};
    for (unsigned k = 0; k < FPVOTE_PLANES; k++) {
        uint64_t p = v->pl[k];
        for (unsigned j = 0; p && j < 8; j++)
            acc[j] += fpvote_spread[(p >> (8 * j)) & 0xFF] << k;
        v->pl[k] = 0;
    }
    for (unsigned j = 0; j < 8; j++)
        for (unsigned k = 0; k < 8; k++)
            v->cnt[8 * j + k] += (acc[j] >> (8 * k)) & 0xFF;
    v->pl_n = 0;
}

/* Adds the ns-plane bit-sliced number s (the per-bit counts of `count` hashes) into
 * the counter planes: a ripple-carry adder, 64 bits at a time. */
static inline void fpvote_planes(fp_vote *v, const uint64_t *s, unsigned ns, unsigned count)
{
    if (v->pl_n + count > FPVOTE_PLANES_MAX)
        fpvote_flush(v);
    uint64_t c = 0;
    unsigned k = 0;
    for (; k < ns; k++) {
        uint64_t a = v->pl[k], t = a ^ s[k];
        v->pl[k] = t ^ c;
        c = (a & s[k]) | (c & t);
    }
    for (; k < FPVOTE_PLANES; k++) {
        uint64_t a = v->pl[k];
        v->pl[k] = a ^ c;
        c &= a;
    }
    v->pl_n += count;
}

/* Adds one hash on its own (the group's leftovers). */
static void fpvote_one(fp_vote *v, uint64_t h)
{
    fpvote_planes(v, &h, 1, 1);
}

/* Adds the 8 grouped hashes: a bit-sliced adder turns them into the 4 bit planes of
 * their per-bit counts (0..8), which one ripple-carry add puts into the counters. */
void fpvote_group(fp_vote *v)
{
    const uint64_t *g = v->grp;
    uint64_t l[4], h[4];                    /* 2-bit sums of pairs */
    for (unsigned i = 0; i < 4; i++) {
        l[i] = g[2 * i] ^ g[2 * i + 1];
        h[i] = g[2 * i] & g[2 * i + 1];
    }
    uint64_t q[2][3];                       /* 3-bit sums of quads */
    for (unsigned i = 0; i < 2; i++) {
        uint64_t a0 = l[2 * i], a1 = h[2 * i], b0 = l[2 * i + 1], b1 = h[2 * i + 1];
        uint64_t c0 = a0 & b0;
        q[i][0] = a0 ^ b0;
        q[i][1] = a1 ^ b1 ^ c0;
        q[i][2] = (a1 & b1) | (c0 & (a1 ^ b1));
    }
    uint64_t s[4];                          /* the 4-bit sum of all eight */
    uint64_t c0 = q[0][0] & q[1][0];
    s[0] = q[0][0] ^ q[1][0];
    s[1] = q[0][1] ^ q[1][1] ^ c0;
    uint64_t c1 = (q[0][1] & q[1][1]) | (c0 & (q[0][1] ^ q[1][1]));
    s[2] = q[0][2] ^ q[1][2] ^ c1;
    s[3] = (q[0][2] & q[1][2]) | (c1 & (q[0][2] ^ q[1][2]));
    fpvote_planes(v, s, 4, 8);
    v->ngrp = 0;
}

/* Every vote of v into cnt[] (v->n hashes in all). */
static void fpvote_settle(fp_vote *v)
{
    for (unsigned i = 0; i < v->ngrp; i++)
        fpvote_one(v, v->grp[i]);
    v->ngrp = 0;
    fpvote_flush(v);
}

uint64_t fpvote_result(fp_vote *v)
{
    fpvote_settle(v);
    uint64_t r = 0;
    for (unsigned i = 0; i < 64; i++)
        if (v->cnt[i] > v->n - v->cnt[i])
            r |= (uint64_t)1 << i;
    return r;
}

/* Bit i is set when the weighted sum of the hashes with it set exceeds that of the
 * hashes with it unset. */
uint64_t fpvote_result_v5(fp_vote *v, fp_vote *bp)
{
    fpvote_settle(v);
    fpvote_settle(bp);
    uint64_t r = 0;
    for (unsigned i = 0; i < 64; i++) {
        int64_t sum = FP_V5_W_TEXT * (2 * (int64_t)v->cnt[i] - (int64_t)v->n) +
                      FP_V5_W_BP * (2 * (int64_t)bp->cnt[i] - (int64_t)bp->n);
        if (sum > 0)
            r |= (uint64_t)1 << i;
    }
    return r;
}

uint64_t fp_compute(const uint64_t *hashes, size_t n)
{
    fp_vote v;
    fpvote_init(&v);
    for (size_t i = 0; i < n; i++)
        fpvote_add(&v, hashes[i]);
    return fpvote_result(&v);
}

uint64_t fp_compute_weighted(const uint64_t *hashes, const int64_t *weights, size_t n)
{
    /* 128-bit sums: n * |weight| cannot overflow them. */
    __int128 sum[64];
    memset(sum, 0, sizeof sum);
    for (size_t j = 0; j < n; j++) {
        uint64_t h = hashes[j];
        __int128 w = weights[j];
        for (unsigned i = 0; i < 64; i++)
            sum[i] += ((h >> i) & 1) ? w : -w;
    }
    uint64_t r = 0;
    for (unsigned i = 0; i < 64; i++)
        if (sum[i] > 0)
            r |= (uint64_t)1 << i;
    return r;
}
