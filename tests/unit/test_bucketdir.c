/* test_bucketdir.c: unit tests of elastic buckets' pure part (bucketdir.h): bounds
 * order exactly as Redis's ZRANGEBYLEX (memcmp, prefix first), byte round trips, key
 * suffixes and their parser's refusals, and the cached directory against a linear
 * scan. The split point is the write scripts' (test_bucket_scripts.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bucketdir.h"
#include "layout.h"
#include "testutil.h"

/* Redis's order of two byte strings (memcmp of the common part, then the shorter). */
static int lexcmp(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    if (c != 0)
        return c < 0 ? -1 : 1;
    return (na > nb) - (na < nb);
}

/* A random byte string of 0..7 bytes, biased towards zero bytes and shared prefixes. */
static size_t rand_bytes(uint8_t *out)
{
    size_t n = (size_t)(rnd() % 8);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd();
        out[i] = (r & 3) == 0 ? 0 : (r & 3) == 1 ? 0xff : (uint8_t)(r >> 8) % 4;
    }
    return n;
}

static size_t iters(size_t n)
{
    return light() ? n / 20 + 1 : n;
}

static void test_bound_order(void **state)
{
    (void)state;
    for (size_t it = 0; it < iters(200000); it++) {
        uint8_t a[8], b[8], back[8];
        size_t na = rand_bytes(a), nb = rand_bytes(b);
        bdir_bound x = bdir_bound_make(a, na), y = bdir_bound_make(b, nb);
        int want = lexcmp(a, na, b, nb), got = (x > y) - (x < y);
        assert_int_equal(got, want);
        assert_int_equal(bdir_bound_bytes(x, back), na);
        assert_memory_equal(back, a, na);
    }
    /* members: the low 56 bits of a value, in value order */
    for (size_t it = 0; it < iters(100000); it++) {
        uint64_t p = rnd(), q = rnd();
        unsigned shard = (unsigned)(p >> 56);
        assert_true(bdir_member_value(bdir_member(p), shard) == p);
        uint64_t lp = p & 0x00ffffffffffffffULL, lq = q & 0x00ffffffffffffffULL;
        assert_int_equal((bdir_member(p) > bdir_member(q)) - (bdir_member(p) < bdir_member(q)),
                         (lp > lq) - (lp < lq));
        assert_true(bdir_member(p) < BDIR_NONE);
    }
}

/* A bound of 1 to 7 leading bytes of member v (the short bounds split points are),
 * never the empty one (the first bucket's). */
static bdir_bound test_prefix_bound(uint64_t v)
{
    uint8_t b[BDIR_BOUND_MAX];
    size_t n = 1 + (size_t)(rnd() % BDIR_BOUND_MAX);
    for (size_t i = 0; i < BDIR_BOUND_MAX; i++)
        b[i] = (uint8_t)(v >> (48 - 8 * i));
    return bdir_bound_make(b, n);
}

static void test_suffix(void **state)
{
    (void)state;
    char buf[BDIR_SUFFIX_MAX];
    bdir_bound lo, hi;
    assert_int_equal(bdir_suffix(buf, bdir_bound_make("", 0), BDIR_NONE), 1);
    assert_string_equal(buf, "-");
    assert_int_equal(bdir_suffix_parse("-", 1, &lo, &hi), 0);
    assert_true(lo == 0 && hi == BDIR_NONE);
    uint8_t a[2] = {0x00, 0xab}, b[1] = {0x3c};
    bdir_suffix(buf, bdir_bound_make(a, 2), bdir_bound_make(b, 1));
    assert_string_equal(buf, "00ab-3c");
    assert_int_equal(bdir_suffix_parse(buf, strlen(buf), &lo, &hi), 0);
    assert_true(lo == bdir_bound_make(a, 2) && hi == bdir_bound_make(b, 1));
    static const char *bad[] = {"", "00", "0-", "-0", "zz-", "AB-", "3c-00ab", "3c-3c",
                                "0011223344556677-", "a-b-c", "00--", " 0-"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(bdir_suffix_parse(bad[i], strlen(bad[i]), &lo, &hi), -1);
    for (size_t it = 0; it < iters(50000); it++) {
        uint8_t x[8], y[8];
        size_t nx = rand_bytes(x), ny = rand_bytes(y);
        bdir_bound bx = bdir_bound_make(x, nx), by = bdir_bound_make(y, ny);
        if (bx == by)
            continue;
        bdir_bound l = bx < by ? bx : by, h = bx < by ? by : bx;
        size_t n = bdir_suffix(buf, l, h);
        assert_int_equal(strlen(buf), n);
        assert_int_equal(bdir_suffix_parse(buf, n, &lo, &hi), 0);
        assert_true(lo == l && hi == h);
    }
}

static void test_key(void **state)
{
    (void)state;
    char buf[LAYOUT_KEY_MAX];
    uint8_t a[2] = {0x00, 0xab}, b[1] = {0x3c};
    assert_int_equal(bdir_key(buf, sizeof buf, 's', 7, 0x0a, bdir_bound_make(a, 2),
                              bdir_bound_make(b, 1)), 16);
    assert_string_equal(buf, "s:{7:0a}:00ab-3c");
    assert_int_equal(bdir_key(buf, sizeof buf, 'h', 0, 0xff, 0, BDIR_NONE), 10);
    assert_string_equal(buf, "h:{0:ff}:-");
    assert_int_equal(bdir_key(buf, 11, 'h', 0, 0xff, 0, BDIR_NONE), 10);
    assert_int_equal(bdir_key(buf, 10, 'h', 0, 0xff, 0, BDIR_NONE), 0);
    assert_int_equal(layout_corpus_set("news"), 0);
    assert_int_equal(bdir_key(buf, sizeof buf, 's', 19, 1, bdir_bound_make(b, 1), BDIR_NONE), 18);
    assert_string_equal(buf, "news:s:{19:01}:3c-");
    assert_int_equal(layout_corpus_set(NULL), 0);
}

static void test_shard_directory(void **state)
{
    (void)state;
    bdir_shard d;
    assert_int_equal(bdir_shard_init(&d), 0);
    assert_int_equal(d.n, 1);
    assert_true(bdir_shard_find(&d, bdir_member(rnd())) == 0);
    assert_true(bdir_shard_hi(&d, 0) == BDIR_NONE);
    bdir_bound all[600];
    size_t nall = 0;
    for (size_t it = 0; it < 600; it++) {
        bdir_bound s = test_prefix_bound(rnd());
        all[nall++] = s;
        assert_int_equal(bdir_shard_add(&d, s), 0);
        assert_int_equal(bdir_shard_add(&d, s), 0);   /* twice: no change */
    }
    for (size_t i = 1; i < d.n; i++)
        assert_true(d.lo[i - 1] < d.lo[i]);
    for (size_t it = 0; it < iters(20000); it++) {
        bdir_bound m = bdir_member(rnd());
        size_t want = 0;
        for (size_t i = 0; i < d.n; i++)
            if (d.lo[i] <= m)
                want = i;
        size_t got = bdir_shard_find(&d, m);
        assert_int_equal(got, want);
        assert_true(d.lo[got] <= m && m < bdir_shard_hi(&d, got));
    }
    /* loading what Redis holds (any order, repeats, "" absent) gives the same bounds */
    bdir_shard e;
    assert_int_equal(bdir_shard_init(&e), 0);
    for (size_t i = 0; i < nall / 2; i++) {
        bdir_bound t = all[i];
        all[i] = all[nall - 1 - i];
        all[nall - 1 - i] = t;
    }
    assert_int_equal(bdir_shard_load(&e, all, nall), 0);
    assert_int_equal(e.n, d.n);
    assert_memory_equal(e.lo, d.lo, d.n * sizeof *d.lo);
    bdir_shard_free(&e);
    bdir_shard_free(&d);
}

/* bdir_shard_find starts where m would be if the bounds were spread evenly: bounds
 * packed into a narrow range, or spread unevenly, are found exactly all the same
 * (lookups inside, below and above the packed range, and at every bound). */
static void test_shard_find_skewed(void **state)
{
    (void)state;
    const uint64_t masks[] = {0x000000ffffffffffull, 0x00ffffffffffffffull,
                              0x0000000000ffffffull, 0x0fffffffffffffffull};
    const uint64_t bases[] = {0x7f00000000000000ull, 0x0000000000000000ull,
                              0xffffffffff000000ull, 0x3000000000000000ull};
    for (size_t k = 0; k < sizeof masks / sizeof masks[0]; k++) {
        bdir_shard d;
        assert_int_equal(bdir_shard_init(&d), 0);
        size_t nb = 3 + 97 * k;             /* 3, 100, 197, 294 bounds */
        for (size_t i = 0; i < nb; i++) {
            uint64_t v = bases[k] | (rnd() & masks[k]);
            assert_int_equal(bdir_shard_add(&d, test_prefix_bound(v >> 8)), 0);
        }
        for (size_t it = 0; it < iters(20000) + d.n; it++) {
            bdir_bound m;
            if (it < d.n)
                m = d.lo[it];               /* every bound itself */
            else if (it % 3 == 0)
                m = bdir_member(rnd());
            else
                m = bdir_member((bases[k] | (rnd() & masks[k])) >> 8);
            size_t want = 0;
            for (size_t i = 0; i < d.n; i++)
                if (d.lo[i] <= m)
                    want = i;
            assert_int_equal(bdir_shard_find(&d, m), want);
        }
        bdir_shard_free(&d);
    }
}

/* The writer's counts beside the buckets: a split leaves both halves without a count,
 * a load keeps the counts of buckets whose bounds stay and no others. */
static void test_shard_counts(void **state)
{
    (void)state;
    bdir_shard d;
    assert_int_equal(bdir_shard_init(&d), 0);
    assert_int_equal(d.cnt[0], BDIR_COUNT_NONE);
    bdir_bound a = bdir_bound_make("\x40", 1), b = bdir_bound_make("\x80", 1),
               c = bdir_bound_make("\xc0", 1), x = bdir_bound_make("\x90", 1);
    assert_int_equal(bdir_shard_add(&d, b), 0);
    assert_int_equal(bdir_shard_add(&d, a), 0);
    assert_int_equal(d.n, 3);                   /* "" a b */
    for (size_t i = 0; i < d.n; i++)
        assert_int_equal(d.cnt[i], BDIR_COUNT_NONE);
    d.cnt[0] = 10, d.cnt[1] = 11, d.cnt[2] = 12;
    assert_int_equal(bdir_shard_add(&d, a), 0);     /* present: nothing changes */
    assert_int_equal(d.cnt[1], 11);
    assert_int_equal(bdir_shard_add(&d, c), 0);     /* splits [b, -) */
    assert_int_equal(d.n, 4);
    assert_int_equal(d.cnt[0], 10);
    assert_int_equal(d.cnt[1], 11);
    assert_int_equal(d.cnt[2], BDIR_COUNT_NONE);
    assert_int_equal(d.cnt[3], BDIR_COUNT_NONE);
    d.cnt[2] = 22, d.cnt[3] = 23;
    /* read again: [a, b) split at x elsewhere; ["", a) and [c, -) stay, listed twice
     * and out of order */
    bdir_bound los[] = {c, x, a, b, c};
    assert_int_equal(bdir_shard_load(&d, los, sizeof los / sizeof los[0]), 0);
    assert_int_equal(d.n, 5);                   /* "" a b x c */
    assert_true(d.lo[3] == x);
    assert_int_equal(d.cnt[0], 10);             /* ["", a) */
    assert_int_equal(d.cnt[1], 11);             /* [a, b) */
    assert_int_equal(d.cnt[2], BDIR_COUNT_NONE); /* [b, x): was [b, c) */
    assert_int_equal(d.cnt[3], BDIR_COUNT_NONE); /* [x, c): new */
    assert_int_equal(d.cnt[4], 23);             /* [c, -) */
    bdir_shard_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bound_order),
        cmocka_unit_test(test_suffix),
        cmocka_unit_test(test_key),
        cmocka_unit_test(test_shard_directory),
        cmocka_unit_test(test_shard_find_skewed),
        cmocka_unit_test(test_shard_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
