/* test_layout.c: unit tests of the Redis layouts: key names (with and without a
 * corpus name), member encoding round trips, prefix-range bounds for every
 * bucket_bits, edge values 0 and 2^64-1, layout 2's packed document ids and the
 * commands built for reading ids and taking a lock in both layouts. */
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
    assert_int_equal(layout_key_of(k, sizeof k, 0, 1, 10), 0);
    assert_int_equal(layout_key_of(k, sizeof k, 0, 1, 32), 0);
    assert_int_equal(layout_key_of(k, sizeof k, 0, 1, 0), 0);
    /* "s:{0:a7}:b3" needs 12 bytes with the NUL */
    assert_int_equal(layout_key_of(k, 11, 0, 0xa7b3ull << 48, 16), 0);
    assert_int_equal(layout_key_of(k, 12, 0, 0xa7b3ull << 48, 16), 11);
    assert_int_equal(layout_bucket_bits_ok(8), 1);
    assert_int_equal(layout_bucket_bits_ok(16), 1);
    assert_int_equal(layout_bucket_bits_ok(24), 1);
    assert_int_equal(layout_bucket_bits_ok(12), 1);
    assert_int_equal(layout_bucket_bits_ok(20), 1);
    assert_int_equal(layout_bucket_bits_ok(4), 0);
    assert_int_equal(layout_bucket_bits_ok(28), 0);
    assert_int_equal(layout_version_ok(1), 1);
    assert_int_equal(layout_version_ok(2), 1);
    assert_int_equal(layout_version_ok(0), 0);
    assert_int_equal(layout_version_ok(3), 1);
    assert_int_equal(layout_version_ok(4), 1);
    assert_int_equal(layout_version_ok(5), 0);
}

static void test_key_names_12_20(void **state)
{
    (void)state;
    char k[LAYOUT_KEY_MAX];
    uint64_t p = 0xa7b3c4d5e6f70819ull;
    assert_int_equal(layout_key_of(k, sizeof k, 4, p, 12), strlen("s:{4:a7}:b"));
    assert_string_equal(k, "s:{4:a7}:b");
    layout_key_of(k, sizeof k, 4, p, 20);
    assert_string_equal(k, "s:{4:a7}:b3c");
    assert_int_equal(layout_hash_key(k, sizeof k, p, 12), strlen("h:{0:a7}:b"));
    assert_string_equal(k, "h:{0:a7}:b");
    layout_hash_key(k, sizeof k, p, 16);
    assert_string_equal(k, "h:{0:a7}:b3");
    /* members: 7 bytes at 12 bits (the top 4 repeat the bucket's low 4), 6 at 20 */
    uint8_t m[LAYOUT_MEMBER_MAX];
    assert_int_equal(layout_member(m, p, 12), 7);
    static const uint8_t want12[7] = {0xb3, 0xc4, 0xd5, 0xe6, 0xf7, 0x08, 0x19};
    assert_memory_equal(m, want12, 7);
    assert_int_equal(layout_member(m, p, 20), 6);
    static const uint8_t want20[6] = {0xc4, 0xd5, 0xe6, 0xf7, 0x08, 0x19};
    assert_memory_equal(m, want20, 6);
}

static void test_corpus_names(void **state)
{
    (void)state;
    char k[LAYOUT_KEY_MAX];
    uint64_t p = 0xa7b3c4d5e6f70819ull;
    assert_string_equal(layout_corpus(), "");
    assert_int_equal(layout_meta_key(k, sizeof k), strlen("simhash:meta"));
    assert_string_equal(k, "simhash:meta");
    assert_int_equal(layout_corpus_set("news-2.b_x"), 0);
    assert_string_equal(layout_corpus(), "news-2.b_x");
    layout_meta_key(k, sizeof k);
    assert_string_equal(k, "news-2.b_x:simhash:meta");
    layout_key_of(k, sizeof k, 3, p, 16);
    assert_string_equal(k, "news-2.b_x:s:{3:a7}:b3");
    layout_hash_key(k, sizeof k, p, 12);
    assert_string_equal(k, "news-2.b_x:h:{0:a7}:b");
    layout_doc_key(k, sizeof k, 1, p);
    assert_string_equal(k, "news-2.b_x:d:{0:a7}:0000000000000001");
    layout_count_key(k, sizeof k, 0xa7);
    assert_string_equal(k, "news-2.b_x:c:{0:a7}");
    layout_lock_key(k, sizeof k, 0xa7);
    assert_string_equal(k, "news-2.b_x:w:{0:a7}");
    /* too small a buffer: 0, never a partial key */
    assert_int_equal(layout_count_key(k, strlen("news-2.b_x:c:{0:a7}"), 0xa7), 0);
    /* bad names are refused and leave the name as it was */
    static const char *bad[] = {"a{b", "a}b", "a:b", "a b", "a\nb", "\xc3\xa9",
                                "123456789012345678901234567890123"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(layout_corpus_set(bad[i]), -1);
    assert_string_equal(layout_corpus(), "news-2.b_x");
    /* the longest name fits every key */
    assert_int_equal(layout_corpus_set("12345678901234567890123456789012"), 0);
    assert_true(layout_doc_key(k, sizeof k, UINT64_MAX, UINT64_MAX) > 0);
    assert_true(layout_key_of(k, sizeof k, 999, p, 24) > 0);
    assert_int_equal(layout_corpus_set(NULL), 0);
    assert_string_equal(layout_corpus(), "");
    layout_key_of(k, sizeof k, 3, p, 16);
    assert_string_equal(k, "s:{3:a7}:b3");
}

static void test_ids_packing(void **state)
{
    (void)state;
    static const size_t lens[] = {1, 2, 30, 64, 127, 128, 129, 300, 16383, 16384, 70000};
    size_t total = 0;
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        total += lens[i] + 10;
    uint8_t *buf = malloc(total), *id = malloc(70000);
    assert_non_null(buf);
    assert_non_null(id);
    size_t len = 0;
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        for (size_t j = 0; j < lens[i]; j++)
            id[j] = (uint8_t)(i * 31 + j);  /* NUL and newline bytes among them */
        size_t n = layout_ids_put(buf + len, id, lens[i]);
        assert_int_equal(n, lens[i] + (lens[i] < 128 ? 1 : lens[i] < 16384 ? 2 : 3));
        len += n;
    }
    size_t off = 0, idlen;
    const uint8_t *got;
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        assert_int_equal(layout_ids_next(buf, len, &off, &got, &idlen), 1);
        assert_int_equal(idlen, lens[i]);
        for (size_t j = 0; j < lens[i]; j++)
            assert_int_equal(got[j], (uint8_t)(i * 31 + j));
    }
    assert_int_equal(layout_ids_next(buf, len, &off, &got, &idlen), 0);
    /* golden: "ab" then a 128-byte id */
    assert_int_equal(layout_ids_put(buf, "ab", 2), 3);
    static const uint8_t g[3] = {2, 'a', 'b'};
    assert_memory_equal(buf, g, 3);
    assert_int_equal(layout_ids_put(buf, id, 128), 130);
    assert_int_equal(buf[0], 0x80);
    assert_int_equal(buf[1], 0x01);
    /* malformed: length past the end, zero length, varint cut or too long */
    static const uint8_t past[3] = {5, 'a', 'b'}, zero[2] = {0, 'a'}, cut[1] = {0x80},
                         huge[11] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0x01};
    off = 0;
    assert_int_equal(layout_ids_next(past, 3, &off, &got, &idlen), -1);
    off = 0;
    assert_int_equal(layout_ids_next(zero, 2, &off, &got, &idlen), -1);
    off = 0;
    assert_int_equal(layout_ids_next(cut, 1, &off, &got, &idlen), -1);
    off = 0;
    assert_int_equal(layout_ids_next(huge, 11, &off, &got, &idlen), -1);
    off = 0;
    assert_int_equal(layout_ids_next(g, 0, &off, &got, &idlen), 0);
    free(buf);
    free(id);
}

static void test_commands(void **state)
{
    (void)state;
    layout_cmd c;
    uint64_t fp = 0x0123456789abcdefull, p0 = 0xa7b3c4d5e6f70819ull;
    assert_int_equal(layout_cmd_docs(&c, 1, 16, fp, p0), 0);
    assert_int_equal(c.argc, 2);
    assert_string_equal(c.argv[0], "SMEMBERS");
    assert_string_equal(c.argv[1], "d:{0:a7}:0123456789abcdef");
    assert_int_equal(c.argvlen[1], 25);
    assert_int_equal(layout_cmd_docs(&c, 2, 12, fp, p0), 0);
    assert_int_equal(c.argc, 3);
    assert_string_equal(c.argv[0], "HGET");
    assert_string_equal(c.argv[1], "h:{0:a7}:b");
    assert_int_equal(c.argvlen[1], strlen("h:{0:a7}:b"));
    assert_int_equal(c.argvlen[2], 7);
    uint8_t m[LAYOUT_MEMBER_MAX];
    layout_member(m, p0, 12);
    assert_memory_equal(c.argv[2], m, 7);
    layout_cmd_overflow(&c, fp, p0);
    assert_int_equal(c.argc, 2);
    assert_string_equal(c.argv[0], "SMEMBERS");
    assert_string_equal(c.argv[1], "d:{0:a7}:0123456789abcdef");
    assert_int_equal(layout_cmd_docs(&c, 3, 12, fp, p0), -1);
    assert_int_equal(layout_cmd_docs(&c, 2, 11, fp, p0), -1);

    assert_int_equal(layout_cmd_lock(&c, 1, 16, fp, p0, "tok", 4000, "A"), 0);
    static const char *want1[] = {"EVAL", NULL, "3", "d:{0:a7}:0123456789abcdef", "w:{0:a7}",
                                  "c:{0:a7}", "0123456789abcdef", "tok", "4000", "A"};
    assert_int_equal(c.argc, 10);
    assert_true(c.argv[1] == LAYOUT_LOCK_LUA);
    for (int i = 0; i < 10; i++)
        if (want1[i]) {
            assert_string_equal(c.argv[i], want1[i]);
            assert_int_equal(c.argvlen[i], strlen(want1[i]));
        }
    assert_int_equal(layout_cmd_lock(&c, 2, 12, fp, p0, "tok", 5000, "S"), 0);
    static const char *want2[] = {"EVAL", NULL, "4", "h:{0:a7}:b", "d:{0:a7}:0123456789abcdef",
                                  "w:{0:a7}", "c:{0:a7}", "0123456789abcdef", "tok", "5000",
                                  "S"};
    assert_int_equal(c.argc, 12);
    assert_true(c.argv[1] == LAYOUT2_LOCK_LUA);
    for (int i = 0; i < 11; i++)
        if (want2[i])
            assert_string_equal(c.argv[i], want2[i]);
    assert_int_equal(c.argvlen[11], 7);
    assert_memory_equal(c.argv[11], m, 7);
    assert_int_equal(layout_cmd_lock(&c, 0, 12, fp, p0, "tok", 5000, "S"), -1);
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
    static const unsigned bbs[] = {8, 12, 16, 20, 24};
    uint64_t edges[] = {0, UINT64_MAX, 1, (uint64_t)1 << 63, 0x00ffffffffffffffull,
                        0xff00000000000000ull};
    for (size_t b = 0; b < sizeof bbs / sizeof bbs[0]; b++) {
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
            /* at 12 and 20 bits the member repeats the bucket's low 4 bits: read as a
             * member of a bucket whose low 4 bits differ, it is refused */
            if (bb % 8 != 0)
                assert_int_equal(layout_member_decode(m, len, layout_bucket_of(p, bb) ^ 1, bb,
                                                      &back), -1);
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
    static const unsigned bbs[] = {8, 12, 16, 20, 24};
    static const unsigned pbs[] = {24, 25, 31, 32, 33, 48, 63, 64};
    for (size_t b = 0; b < sizeof bbs / sizeof bbs[0]; b++)
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
    check_range_exact(8, 12);
    check_range_exact(11, 12);
    check_range_exact(12, 12);
    check_range_exact(16, 20);
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
    assert_int_equal(layout_range_init(&r, 1, 32, 10), -1);
    assert_int_equal(layout_range_init(&r, 1, 32, 32), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_names),
        cmocka_unit_test(test_key_errors),
        cmocka_unit_test(test_key_names_12_20),
        cmocka_unit_test(test_corpus_names),
        cmocka_unit_test(test_ids_packing),
        cmocka_unit_test(test_commands),
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
