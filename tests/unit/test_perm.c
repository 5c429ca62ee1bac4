/* test_perm.c: unit tests of the permutation tables (common/core/perm.c): table counts and
 * order, apply/revert as exact inverses, prefix layout, the canonical table of a pair
 * against a brute-force definition, and refusal of bad settings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hamming.h"
#include "perm.h"

#define TESTUTIL_SEED 0x9e3779b97f4a7c15ULL
#include "testutil.h"

/* C(n, r) by the multiplicative formula (small arguments only). */
static uint64_t choose(unsigned n, unsigned r)
{
    uint64_t c = 1;
    if (r > n - r)
        r = n - r;
    for (unsigned i = 0; i < r; i++)
        c = c * (n - i) / (i + 1);
    return c;
}

/* Mask of block b in unpermuted hashes. */
static uint64_t block_mask(unsigned m, unsigned b)
{
    unsigned lo = b * 64 / m, hi = (b + 1) * 64 / m;
    return (hi - lo == 64 ? ~0ULL : ((1ULL << (hi - lo)) - 1)) << lo;
}

/* Brute force: first table whose leading blocks all agree, or -1. */
static int brute_first(const perm_set *ps, uint64_t a, uint64_t b)
{
    for (unsigned t = 0; t < ps->ntables; t++) {
        int ok = 1;
        for (unsigned blk = 0; blk < ps->blocks && ok; blk++)
            if ((ps->tables[t].lead_blocks >> blk & 1) && ((a ^ b) & block_mask(ps->blocks, blk)))
                ok = 0;
        if (ok)
            return (int)t;
    }
    return -1;
}

/* Check one setting: counts, lexicographic order, inverses, layout, first table. */
static void check_setting(unsigned m, unsigned k, unsigned samples)
{
    perm_set ps;
    char err[128] = "";
    assert_int_equal(perm_set_init(&ps, m, k, err, sizeof err), 0);
    uint64_t want = choose(m, m - k);
    assert_int_equal(ps.ntables, want);
    assert_int_equal(perm_table_count(m, k), want);
    const perm_table *prev = NULL;
    for (unsigned t = 0; t < ps.ntables; t++) {
        const perm_table *pt = &ps.tables[t];
        assert_int_equal(pt->nlead, m - k);
        assert_int_equal(__builtin_popcountll(pt->lead_blocks), m - k);
        /* Lexicographic order: the leading block lists strictly increase as words,
         * and each list is ascending. */
        for (unsigned i = 1; i < pt->nlead; i++)
            assert_true(pt->order[i - 1] < pt->order[i]);
        if (prev)
            assert_true(memcmp(prev->order, pt->order, pt->nlead) < 0);
        prev = pt;
        unsigned width = 0;
        for (unsigned blk = 0; blk < m; blk++)
            if (pt->lead_blocks >> blk & 1)
                width += (unsigned)__builtin_popcountll(block_mask(m, blk));
        assert_int_equal(pt->prefix_bits, width);
        assert_true(pt->prefix_mask == (width == 64 ? ~0ULL : ~(~0ULL >> width)));
        for (unsigned s = 0; s < samples; s++) {
            uint64_t x = rnd();
            uint64_t p = perm_apply(pt, x);
            assert_true(perm_revert(pt, p) == x);
            assert_true(perm_apply(pt, perm_revert(pt, x)) == x);
            assert_int_equal(__builtin_popcountll(p), __builtin_popcountll(x));
            /* Leading blocks land on top, lowest index highest. */
            unsigned top = 64;
            for (unsigned i = 0; i < pt->nlead; i++) {
                unsigned blk = pt->order[i];
                uint64_t bm = block_mask(m, blk);
                unsigned w = (unsigned)__builtin_popcountll(bm), lo = blk * 64 / m;
                uint64_t wm = w == 64 ? ~0ULL : (1ULL << w) - 1;
                assert_true(((p >> (top - w)) & wm) == ((x >> lo) & wm));
                top -= w;
            }
            /* Two hashes agreeing on the leading blocks share the prefix. */
            uint64_t y = x;
            for (unsigned blk = 0; blk < m; blk++)
                if (!(pt->lead_blocks >> blk & 1))
                    y ^= rnd() & block_mask(m, blk);
            assert_true(((perm_apply(pt, x) ^ perm_apply(pt, y)) & pt->prefix_mask) == 0);
        }
    }
    /* perm_first_table against brute force on near and far pairs. */
    for (unsigned s = 0; s < samples * 4; s++) {
        uint64_t a = rnd();
        uint64_t b = flip_bits(a, (unsigned)(rnd() % (k + 3)));
        if (s % 7 == 0) /* random block patterns: agree on a random subset of blocks */
            for (unsigned blk = 0; blk < m; blk++)
                if (rnd() & 1)
                    b = (b & ~block_mask(m, blk)) | (rnd() & block_mask(m, blk));
        int got = perm_first_table(&ps, a, b);
        assert_int_equal(got, brute_first(&ps, a, b));
        if (ham_dist(a, b) <= k)
            assert_true(got >= 0);
        assert_int_equal(perm_first_table(&ps, b, a), got);
    }
    assert_int_equal(perm_first_table(&ps, 42, 42), 0);
    perm_set_free(&ps);
}

static void test_all_small_settings(void **state)
{
    (void)state;
    unsigned samples = light() ? 8 : 200;
    for (unsigned m = 1; m <= 12; m++)
        for (unsigned k = 0; k < m; k++)
            check_setting(m, k, samples);
}

static void test_wide_settings(void **state)
{
    (void)state;
    check_setting(64, 0, 50);
    check_setting(64, 1, 50);
    check_setting(63, 1, 50);
    check_setting(45, 2, light() ? 5 : 50); /* C(45,43) = 990 tables */
    perm_set ps;
    char err[128] = "";
    assert_int_equal(perm_set_init(&ps, 64, 1, err, sizeof err), 0);
    assert_int_equal(ps.ntables, 64);
    for (unsigned t = 0; t < 64; t++)
        assert_int_equal(ps.tables[t].prefix_bits, 63);
    perm_set_free(&ps);
}

static void test_refusals(void **state)
{
    (void)state;
    perm_set ps;
    char err[128];
    assert_int_equal(perm_set_init(&ps, 20, 10, err, sizeof err), -1);
    assert_string_equal(err, "blocks 20 distance 10 would need 184756 tables (limit 1000)");
    assert_int_equal(perm_set_init(&ps, 3, 3, err, sizeof err), -1);
    assert_string_equal(err, "distance 3 must be smaller than blocks 3");
    assert_int_equal(perm_set_init(&ps, 65, 1, err, sizeof err), -1);
    assert_string_equal(err, "blocks 65 out of range (1..64)");
    assert_int_equal(perm_set_init(&ps, 0, 0, err, sizeof err), -1);
    assert_string_equal(err, "blocks 0 out of range (1..64)");
    assert_int_equal(perm_set_init(&ps, 64, 2, err, sizeof err), -1);
    assert_string_equal(err, "blocks 64 distance 2 would need 2016 tables (limit 1000)");
    assert_int_equal(perm_set_init(&ps, 64, 32, err, sizeof err), -1);
    assert_string_equal(err,
        "blocks 64 distance 32 would need 1832624140942590534 tables (limit 1000)");
    assert_int_equal(perm_table_count(3, 3), 0);
    assert_int_equal(perm_table_count(65, 0), 0);
    assert_int_equal(perm_table_count(20, 10), 0);
    /* A tiny error buffer is truncated, never overrun. */
    char small[8];
    memset(small, 'x', sizeof small);
    assert_int_equal(perm_set_init(&ps, 3, 3, small, sizeof small), -1);
    assert_int_equal(strlen(small), sizeof small - 1);
}

static void test_max_tables_edge(void **state)
{
    (void)state;
    /* C(45, 2) = 990 is allowed, C(46, 2) = 1035 is not; C(14, 7) = 3432 is not. */
    assert_int_equal(perm_table_count(45, 2), 990);
    assert_int_equal(perm_table_count(46, 2), 0);
    assert_int_equal(perm_table_count(14, 7), 0);
    assert_int_equal(perm_table_count(13, 3), 286);
    perm_set ps;
    char err[128];
    assert_int_equal(perm_set_init(&ps, 46, 2, err, sizeof err), -1);
    assert_string_equal(err, "blocks 46 distance 2 would need 1035 tables (limit 1000)");
    /* Largest count under the limit from the full search over (m, k). */
    unsigned best = 0;
    for (unsigned m = 1; m <= 64; m++)
        for (unsigned k = 0; k < m; k++) {
            size_t c = perm_table_count(m, k);
            assert_true(c <= PERM_MAX_TABLES);
            if (c > best)
                best = (unsigned)c;
        }
    assert_int_equal(best, 990);
}

static void test_known_layout(void **state)
{
    (void)state;
    /* blocks 4, distance 1: table 0 leads with blocks 0, 1, 2 (bits 0..47), block 3 last. */
    perm_set ps;
    char err[128];
    assert_int_equal(perm_set_init(&ps, 4, 1, err, sizeof err), 0);
    assert_int_equal(ps.ntables, 4);
    uint64_t x = 0x3333222211110000ULL;
    assert_true(perm_apply(&ps.tables[0], x) == 0x0000111122223333ULL);
    /* table 3 = blocks {1, 2, 3}: 1111 2222 3333 then 0000 */
    assert_true(perm_apply(&ps.tables[3], x) == 0x1111222233330000ULL);
    assert_int_equal(ps.tables[0].prefix_bits, 48);
    perm_set_free(&ps);
    /* blocks 5: widths 12, 13, 13, 13, 13 */
    assert_int_equal(perm_set_init(&ps, 5, 3, err, sizeof err), 0);
    assert_int_equal(ps.ntables, 10);
    assert_int_equal(ps.tables[0].prefix_bits, 25);
    assert_int_equal(ps.tables[9].prefix_bits, 26);
    perm_set_free(&ps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_small_settings),
        cmocka_unit_test(test_wide_settings),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_max_tables_edge),
        cmocka_unit_test(test_known_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
