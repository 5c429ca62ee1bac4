/* test_layout.c: unit tests of the Redis layout: key names, member encoding round
 * trips, prefix-range bounds for every bucket_bits, edge values 0 and 2^64-1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "layout.h"

static uint64_t test_rng = 0x9e3779b97f4a7c15ull;

/* splitmix64: deterministic pseudo-random values for property checks. */
static uint64_t next_rand(void)
{
    uint64_t z = (test_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t test_iters(size_t n)
{
    const char *v = getenv("VALGRIND");
    return v && *v == '1' ? n / 20 + 1 : n;
}

static void test_key_names(void **state)
{
    (void)state;
    char k[LAYOUT_KEY_MAX];
    uint64_t p = 0xa7b3c4d5e6f70819ull;
    assert_int_equal(layout_key_of(k, sizeof k, 0, p, 16), strlen("s:{0:a7}:b3"));
    assert_string_equal(k, "s:{0:a7}:b3");
    assert_int_equal(layout_key_of(k, sizeof k, 19, p, 8), strlen("s:{19:a7}:"));
    assert_string_equal(k, "s:{19:a7}:");
    assert_int_equal(layout_key_of(k, sizeof k, 5, p, 24), strlen("s:{5:a7}:b3c4"));
    assert_string_equal(k, "s:{5:a7}:b3c4");
    layout_key_of(k, sizeof k, 999, 0, 24);
    assert_string_equal(k, "s:{999:00}:0000");
    layout_key_of(k, sizeof k, 0, UINT64_MAX, 16);
    assert_string_equal(k, "s:{0:ff}:ff");
    /* leading zero digits are kept */
    layout_key_of(k, sizeof k, 3, 0x0a0b000000000000ull, 24);
    assert_string_equal(k, "s:{3:0a}:0b00");
    /* bucket numbers directly */
    layout_bucket_key(k, sizeof k, 7, 0x12ab, 16);
    assert_string_equal(k, "s:{7:12}:ab");
    layout_bucket_key(k, sizeof k, 7, 0xfe, 8);
    assert_string_equal(k, "s:{7:fe}:");
}

static void test_key_errors(void **state)
{
    (void)state;
    char k[LAYOUT_KEY_MAX];
    assert_int_equal(layout_key_of(k, sizeof k, 0, 1, 12), 0);
    assert_int_equal(layout_key_of(k, sizeof k, 0, 1, 32), 0);
    assert_int_equal(layout_key_of(k, sizeof k, 0, 1, 0), 0);
    /* "s:{0:a7}:b3" needs 12 bytes with the NUL */
    assert_int_equal(layout_key_of(k, 11, 0, 0xa7b3ull << 48, 16), 0);
    assert_int_equal(layout_key_of(k, 12, 0, 0xa7b3ull << 48, 16), 11);
    assert_int_equal(layout_bucket_bits_ok(8), 1);
    assert_int_equal(layout_bucket_bits_ok(16), 1);
    assert_int_equal(layout_bucket_bits_ok(24), 1);
    assert_int_equal(layout_bucket_bits_ok(20), 0);
}

static void test_member_encoding(void **state)
{
    (void)state;
    uint8_t m[LAYOUT_MEMBER_MAX];
    uint64_t p = 0xa7b3c4d5e6f70819ull, back = 0;
    assert_int_equal(layout_member(m, p, 16), 6);
    static const uint8_t want16[6] = {0xc4, 0xd5, 0xe6, 0xf7, 0x08, 0x19};
    assert_memory_equal(m, want16, 6);
    assert_int_equal(layout_member(m, p, 8), 7);
    static const uint8_t want8[7] = {0xb3, 0xc4, 0xd5, 0xe6, 0xf7, 0x08, 0x19};
    assert_memory_equal(m, want8, 7);
    assert_int_equal(layout_member(m, p, 24), 5);
    static const uint8_t want24[5] = {0xd5, 0xe6, 0xf7, 0x08, 0x19};
    assert_memory_equal(m, want24, 5);

    /* wrong lengths are refused */
    assert_int_equal(layout_member_decode(m, 4, 0, 24, &back), -1);
    assert_int_equal(layout_member_decode(m, 6, 0, 24, &back), -1);
    assert_int_equal(layout_member_decode(m, 5, 0, 12, &back), -1);
}

static void test_member_round_trip(void **state)
{
    (void)state;
    static const unsigned bbs[] = {8, 16, 24};
    uint64_t edges[] = {0, UINT64_MAX, 1, (uint64_t)1 << 63, 0x00ffffffffffffffull,
                        0xff00000000000000ull};
    for (size_t b = 0; b < 3; b++) {
        unsigned bb = bbs[b];
        size_t n = test_iters(20000);
        for (size_t i = 0; i < n + 6; i++) {
            uint64_t p = i < 6 ? edges[i] : next_rand();
            uint8_t m[LAYOUT_MEMBER_MAX];
            size_t len = layout_member(m, p, bb);
            assert_int_equal(len, layout_member_len(bb));
            uint64_t back = ~p;
            assert_int_equal(layout_member_decode(m, len, layout_bucket_of(p, bb), bb, &back), 0);
            assert_true(back == p);
        }
    }
}

static void test_member_order(void **state)
{
    (void)state;
    /* within one bucket, memcmp order of members is numeric order of values */
    for (size_t i = 0; i < test_iters(20000); i++) {
        uint64_t a = next_rand(), b = (a & 0xffff000000000000ull) | (next_rand() >> 16);
        uint8_t ma[8], mb[8];
        layout_member(ma, a, 16);
        layout_member(mb, b, 16);
        int c = memcmp(ma, mb, 6);
        assert_true((c < 0) == (a < b));
        assert_true((c == 0) == (a == b));
    }
}

static void test_doc_key(void **state)
{
    (void)state;
    char k[LAYOUT_KEY_MAX];
    assert_int_equal(layout_doc_key(k, sizeof k, 0x0123456789abcdefull, 0xfe00000000000000ull), 25);
    assert_string_equal(k, "d:{0:fe}:0123456789abcdef");
    layout_doc_key(k, sizeof k, 0, 0);
    assert_string_equal(k, "d:{0:00}:0000000000000000");
    layout_doc_key(k, sizeof k, UINT64_MAX, UINT64_MAX);
    assert_string_equal(k, "d:{0:ff}:ffffffffffffffff");
    assert_int_equal(layout_doc_key(k, 25, 1, 1), 0);
    assert_int_equal(layout_doc_key(k, 26, 1, 1), 25);
}

static void test_count_key(void **state)
{
    (void)state;
    char k[LAYOUT_KEY_MAX];
    assert_int_equal(layout_count_key(k, sizeof k, 0xa7), 8);
    assert_string_equal(k, "c:{0:a7}");
    layout_count_key(k, sizeof k, 0);
    assert_string_equal(k, "c:{0:00}");
    assert_int_equal(layout_count_key(k, sizeof k, 256), 0);
    assert_int_equal(layout_count_key(k, 8, 1), 0);
    assert_int_equal(layout_count_key(k, 9, 1), 8);
}

/* 1 when member m lies in [lo, hi] as ZRANGEBYLEX would select it. */
static int in_lex_range(const uint8_t *m, size_t len, const layout_range *r)
{
    if (!(r->lo_len == 1 && r->lo[0] == '-')) {
        assert_int_equal(r->lo[0], '[');
        assert_int_equal(r->lo_len, len + 1);
        if (memcmp(m, r->lo + 1, len) < 0)
            return 0;
    }
    if (!(r->hi_len == 1 && r->hi[0] == '+')) {
        assert_int_equal(r->hi[0], '[');
        assert_int_equal(r->hi_len, len + 1);
        if (memcmp(m, r->hi + 1, len) > 0)
            return 0;
    }
    return 1;
}

/* Selected by the range: bucket among the scanned ones and member within bounds. */
static int selected(uint64_t x, const layout_range *r, unsigned bb)
{
    uint64_t b = layout_bucket_of(x, bb);
    if (b < r->first_bucket || b >= r->first_bucket + r->nbuckets)
        return 0;
    uint8_t m[LAYOUT_MEMBER_MAX];
    size_t len = layout_member(m, x, bb);
    return in_lex_range(m, len, r);
}

static uint64_t top_mask(unsigned bits)
{
    return bits == 64 ? UINT64_MAX : ~(UINT64_MAX >> bits);
}

/* The range selects exactly the values sharing the top prefix_bits bits of q. */
static void check_range_exact(unsigned prefix_bits, unsigned bb)
{
    size_t n = test_iters(3000);
    for (size_t i = 0; i < n; i++) {
        uint64_t q = i == 0 ? 0 : i == 1 ? UINT64_MAX : next_rand();
        layout_range r;
        assert_int_equal(layout_range_init(&r, q, prefix_bits, bb), 0);
        uint64_t mask = top_mask(prefix_bits);
        /* q itself, the extremes of its prefix class, and neighbours outside it */
        uint64_t inside[3] = {q, q & mask, q | ~mask};
        for (int j = 0; j < 3; j++)
            assert_true(selected(inside[j], &r, bb));
        if ((q & mask) != 0)
            assert_false(selected((q & mask) - 1, &r, bb));
        if ((q | ~mask) != UINT64_MAX)
            assert_false(selected((q | ~mask) + 1, &r, bb));
        /* random values: same prefix -> selected; flip one prefix bit -> not */
        for (int j = 0; j < 8; j++) {
            uint64_t x = (q & mask) | (next_rand() & ~mask);
            assert_true(selected(x, &r, bb));
            unsigned bit = 63u - (unsigned)(next_rand() % prefix_bits);
            assert_false(selected(x ^ ((uint64_t)1 << bit), &r, bb));
        }
    }
}

static void test_range_prefix_ge_bucket(void **state)
{
    (void)state;
    static const unsigned bbs[] = {8, 16, 24};
    static const unsigned pbs[] = {24, 25, 31, 32, 33, 48, 63, 64};
    for (size_t b = 0; b < 3; b++)
        for (size_t p = 0; p < sizeof pbs / sizeof pbs[0]; p++)
            check_range_exact(pbs[p], bbs[b]);
    layout_range r;
    /* golden bounds: prefix 32, bucket 16, q = 0xa7b3c4d5e6f70819 */
    assert_int_equal(layout_range_init(&r, 0xa7b3c4d5e6f70819ull, 32, 16), 0);
    assert_int_equal(r.first_bucket, 0xa7b3);
    assert_int_equal(r.nbuckets, 1);
    static const uint8_t lo[7] = {'[', 0xc4, 0xd5, 0, 0, 0, 0};
    static const uint8_t hi[7] = {'[', 0xc4, 0xd5, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(r.lo_len, 7);
    assert_memory_equal(r.lo, lo, 7);
    assert_memory_equal(r.hi, hi, 7);
    /* prefix 64: a single member */
    assert_int_equal(layout_range_init(&r, UINT64_MAX, 64, 24), 0);
    assert_int_equal(r.lo_len, 6);
    assert_memory_equal(r.lo + 1, r.hi + 1, 5);
}

static void test_range_prefix_lt_bucket(void **state)
{
    (void)state;
    check_range_exact(8, 16);
    check_range_exact(12, 16);
    check_range_exact(15, 16);
    check_range_exact(16, 16);
    check_range_exact(8, 8);
    check_range_exact(10, 24);
    check_range_exact(20, 24);
    layout_range r;
    assert_int_equal(layout_range_init(&r, 0xa7b3c4d5e6f70819ull, 12, 16), 0);
    assert_int_equal(r.first_bucket, 0xa7b0);
    assert_int_equal(r.nbuckets, 16);
    assert_int_equal(r.lo_len, 1);
    assert_int_equal(r.lo[0], '-');
    assert_int_equal(r.hi[0], '+');
    assert_int_equal(layout_range_init(&r, UINT64_MAX, 8, 24), 0);
    assert_int_equal(r.first_bucket, 0xff0000);
    assert_int_equal(r.nbuckets, 65536);
    assert_int_equal(layout_range_init(&r, 0, 8, 8), 0);
    assert_int_equal(r.first_bucket, 0);
    assert_int_equal(r.nbuckets, 1);
}

static void test_range_errors(void **state)
{
    (void)state;
    layout_range r;
    assert_int_equal(layout_range_init(&r, 1, 7, 16), -1);
    assert_int_equal(layout_range_init(&r, 1, 65, 16), -1);
    assert_int_equal(layout_range_init(&r, 1, 32, 12), -1);
    assert_int_equal(layout_range_init(&r, 1, 32, 32), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_names),
        cmocka_unit_test(test_key_errors),
        cmocka_unit_test(test_member_encoding),
        cmocka_unit_test(test_member_round_trip),
        cmocka_unit_test(test_member_order),
        cmocka_unit_test(test_doc_key),
        cmocka_unit_test(test_count_key),
        cmocka_unit_test(test_range_prefix_ge_bucket),
        cmocka_unit_test(test_range_prefix_lt_bucket),
        cmocka_unit_test(test_range_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
