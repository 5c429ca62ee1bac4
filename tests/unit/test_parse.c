/* test_parse.c: strict parsing of user-given numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "parse.h"

static int p64(const char *s, uint64_t *v, const char **why)
{
    return parse_u64(s, strlen(s), v, why);
}

static void test_u64_good(void **state)
{
    uint64_t v;
    const char *why = NULL;
    (void)state;
    assert_int_equal(p64("0", &v, &why), 0);
    assert_true(v == 0);
    assert_int_equal(p64("18446744073709551615", &v, &why), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(p64("00012", &v, &why), 0);
    assert_true(v == 12);
    assert_int_equal(parse_u64("123abc", 3, &v, &why), 0);   /* only len bytes count */
    assert_true(v == 123);
}

static void test_u64_bad(void **state)
{
    static const struct { const char *in, *why; } bad[] = {
        {"", "empty"}, {"abc", "not a decimal number"}, {"0x10", "not a decimal number"},
        {"-5", "not a decimal number"}, {"+5", "not a decimal number"}, {" 1", "not a decimal number"},
        {"1 ", "not a decimal number"}, {"1.0", "not a decimal number"},
        {"18446744073709551616", "out of range (max 18446744073709551615)"},
        {"99999999999999999999999", "out of range (max 18446744073709551615)"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t v = 77;
        const char *why = NULL;
        assert_int_equal(p64(bad[i].in, &v, &why), -1);
        assert_string_equal(why, bad[i].why);
        assert_true(v == 77);
    }
    uint64_t v;
    const char *why;
    assert_int_equal(parse_u64("1\0002", 3, &v, &why), -1);   /* embedded NUL */
}

static void test_range(void **state)
{
    uint64_t v;
    const char *why = NULL;
    (void)state;
    assert_int_equal(parse_uint_range("64", 2, 1, 64, &v, &why), 0);
    assert_true(v == 64);
    assert_int_equal(parse_uint_range("65", 2, 1, 64, &v, &why), -1);
    assert_string_equal(why, "out of range (1..64)");
    assert_int_equal(parse_uint_range("0", 1, 1, 64, &v, &why), -1);
    assert_string_equal(why, "out of range (1..64)");
    assert_int_equal(parse_uint_range("99999999999999999999", 20, 1, 64, &v, &why), -1);
    assert_string_equal(why, "out of range (1..64)");
    /* overflow is refused even when the range reaches UINT64_MAX */
    assert_int_equal(parse_uint_range("99999999999999999999", 20, 0, UINT64_MAX, &v, &why), -1);
    assert_string_equal(why, "out of range (0..18446744073709551615)");
    assert_int_equal(parse_uint_range("18446744073709551615", 20, 0, UINT64_MAX, &v, &why), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(parse_uint_range("x", 1, 1, 64, &v, &why), -1);
    assert_string_equal(why, "not a decimal number");
    assert_int_equal(parse_uint_range("", 0, 1, 64, &v, &why), -1);
    assert_string_equal(why, "empty");
}

/* INFO lines: CRLF or LF, last line without one, whole-key match, absent names. */
static void test_info_line(void **state)
{
    (void)state;
    static const char info[] = "# Redis\r\nredis_addr:h:1\r\nredis:up\r\nrole:\r\n"
                               "lf:x\nlast:7";
    size_t n = sizeof info - 1;
    const char *v;
    size_t vl;
    char buf[8];
    assert_int_equal(parse_info_line(info, n, "redis", &v, &vl), 0);
    assert_int_equal(vl, 2);
    assert_memory_equal(v, "up", 2);
    assert_int_equal(parse_info_str(info, n, "redis_addr", buf, sizeof buf), 0);
    assert_string_equal(buf, "h:1");
    assert_int_equal(parse_info_str(info, n, "role", buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    assert_int_equal(parse_info_str(info, n, "lf", buf, sizeof buf), 0);
    assert_string_equal(buf, "x");
    assert_int_equal(parse_info_str(info, n, "last", buf, sizeof buf), 0);
    assert_string_equal(buf, "7");
    assert_int_equal(parse_info_str(info, n, "redis_", buf, sizeof buf), -1);
    assert_int_equal(parse_info_str(info, n, "red", buf, sizeof buf), -1);
    assert_int_equal(parse_info_str(info, n, "# Redis", buf, sizeof buf), -1);
    assert_int_equal(parse_info_str(info, 0, "redis", buf, sizeof buf), -1);
    /* truncated to the buffer, NUL-terminated */
    assert_int_equal(parse_info_str("k:0123456789\r\n", 14, "k", buf, 4), 0);
    assert_string_equal(buf, "012");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_u64_good),
        cmocka_unit_test(test_u64_bad),
        cmocka_unit_test(test_range),
        cmocka_unit_test(test_info_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
