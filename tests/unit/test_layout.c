/* test_layout.c: unit tests of the parts of the storage format with no layout decision
 * in them (layout.c): key names of a table-0 shard with and without a corpus name, the
 * packed document ids, the overflow set's read and the lock field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "layout.h"

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
    layout_tag_key(k, sizeof k, 's', 3, 0xa7);
    assert_string_equal(k, "news-2.b_x:s:{3:a7}");
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
    assert_true(layout_tag_key(k, sizeof k, 'r', 999, 0xff) > 0);
    assert_int_equal(layout_corpus_set(NULL), 0);
    assert_string_equal(layout_corpus(), "");
    layout_tag_key(k, sizeof k, 's', 3, 0xa7);
    assert_string_equal(k, "s:{3:a7}");
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
    layout_cmd_overflow(&c, fp, p0);
    assert_int_equal(c.argc, 2);
    assert_string_equal(c.argv[0], "SMEMBERS");
    assert_string_equal(c.argv[1], "d:{0:a7}:0123456789abcdef");
    assert_int_equal(c.argvlen[1], 25);
    char f[17];
    uint64_t back = 0;
    assert_int_equal(layout_lock_field(f, fp), 16);
    assert_string_equal(f, "0123456789abcdef");
    assert_int_equal(layout_lock_field_parse(f, 16, &back), 0);
    assert_true(back == fp);
    assert_int_equal(layout_lock_field_parse("0123456789ABCDEF", 16, &back), -1);
    assert_int_equal(layout_lock_field_parse(f, 15, &back), -1);
    /* the meta hash of this format: layout 4, with or without the legacy field */
    char err[400] = "";
    assert_int_equal(layout_meta_check(LAYOUT_VERSION, LAYOUT_SHARD_BITS, "h", 1, "m", err,
                                       sizeof err), 0);
    assert_string_equal(err, "");
    for (long v = 0; v < 8; v++)
        if (v != LAYOUT_VERSION)
            assert_int_equal(layout_meta_check(v, LAYOUT_SHARD_BITS, "h", 1, "m", err,
                                               sizeof err), -1);
    /* layout 4 with another legacy value is another layout's data too */
    assert_int_equal(layout_meta_check(LAYOUT_VERSION, 12, "10.0.0.1", 6379, "news:simhash:meta",
                                       err, sizeof err), -1);
    assert_non_null(strstr(err, "redis 10.0.0.1:6379 holds a corpus of data layout 4 "
                                "(news:simhash:meta: layout 4, bucket_bits 12)"));
    assert_non_null(strstr(err, "simhash export"));
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_names),
        cmocka_unit_test(test_ids_packing),
        cmocka_unit_test(test_commands),
        cmocka_unit_test(test_doc_key),
        cmocka_unit_test(test_count_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
