/* test_resp.c: the RESP reply writer (golden bytes, bounds) and the request parser
 * (whole buffers, one byte at a time, inline form, limits, malformed input). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>
#include <limits.h>

#include "resp.h"

static void test_writer_golden(void **state)
{
    resp_buf b;
    (void)state;
    resp_buf_init(&b, 0);
    assert_int_equal(resp_add_simple(&b, "OK"), 0);
    assert_int_equal(resp_add_error(&b, "ERR", "bad %s", "thing"), 0);
    assert_int_equal(resp_add_int(&b, -42), 0);
    assert_int_equal(resp_add_bulk(&b, "a\0b", 3), 0);
    assert_int_equal(resp_add_bulk_u64(&b, UINT64_MAX), 0);
    assert_int_equal(resp_add_null(&b), 0);
    assert_int_equal(resp_add_array(&b, 2), 0);
    assert_int_equal(resp_add_null_array(&b), 0);
    static const char want[] = "+OK\r\n-ERR bad thing\r\n:-42\r\n$3\r\na\0b\r\n"
                               "$20\r\n18446744073709551615\r\n$-1\r\n*2\r\n*-1\r\n";
    assert_int_equal(b.len, sizeof(want) - 1);
    assert_memory_equal(b.data, want, sizeof(want) - 1);
    assert_int_equal(b.overflow, 0);
    /* a map is an array of pairs in RESP2; RESP3 has its own nulls and maps */
    resp_buf_clear(&b);
    assert_int_equal(resp_add_map(&b, 2), 0);
    b.resp3 = 1;
    assert_int_equal(resp_add_map(&b, 2), 0);
    assert_int_equal(resp_add_null(&b), 0);
    assert_int_equal(resp_add_null_array(&b), 0);
    static const char want3[] = "*4\r\n%2\r\n_\r\n_\r\n";
    assert_int_equal(b.len, sizeof(want3) - 1);
    assert_memory_equal(b.data, want3, sizeof(want3) - 1);
    resp_buf_free(&b);
}

/* Integers at the edges, written without printf. */
static void test_writer_integers(void **state)
{
    (void)state;
    static const long long v[] = {0, 1, 9, 10, -1, -10, 1234567890123LL, LLONG_MAX, LLONG_MIN};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        resp_buf b;
        char want[40];
        resp_buf_init(&b, 0);
        assert_int_equal(resp_add_int(&b, v[i]), 0);
        int n = snprintf(want, sizeof want, ":%lld\r\n", v[i]);
        assert_int_equal(b.len, (size_t)n);
        assert_memory_equal(b.data, want, (size_t)n);
        resp_buf_free(&b);
    }
    static const uint64_t u[] = {0, 7, 10, 99, 100, 4294967296ULL, UINT64_MAX - 1, UINT64_MAX};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
        char got[24], want[24];
        size_t n = resp_u64_dec(got, u[i]);
        int m = snprintf(want, sizeof want, "%llu", (unsigned long long)u[i]);
        assert_int_equal(n, (size_t)m);
        assert_memory_equal(got, want, n);
    }
}

/* resp_format_command writes exactly what hiredis's formatter writes, and refuses
 * (0) rather than truncates when the buffer is short. */
static void test_format_command(void **state)
{
    (void)state;
    char big[3000];
    memset(big, 'x', sizeof big);
    const char *argv[5] = {"ZRANGEBYLEX", "s:{12:ab}:cd", "[\x01\0\xff", "", big};
    size_t argvlen[5] = {11, 12, 4, 0, sizeof big};
    for (int argc = 0; argc <= 5; argc++) {
        char *ref = NULL;
        int rlen = redisFormatCommandArgv(&ref, argc, argv, argvlen);
        assert_true(rlen > 0);
        char buf[4000];
        size_t len = resp_format_command(buf, sizeof buf, argc, argv, argvlen);
        assert_int_equal(len, (size_t)rlen);
        assert_memory_equal(buf, ref, len);
        /* every shorter buffer is refused */
        for (size_t cap = 0; cap < len; cap += cap < 64 ? 1 : 97)
            assert_int_equal(resp_format_command(buf, cap, argc, argv, argvlen), 0);
        assert_int_equal(resp_format_command(buf, len, argc, argv, argvlen), len);
        redisFreeCommand(ref);
    }
    /* NULL argvlen: NUL-terminated strings */
    const char *cmd[2] = {"SMEMBERS", "d:{0:00}:0000000000000001"};
    char buf[128];
    static const char want[] = "*2\r\n$8\r\nSMEMBERS\r\n$25\r\nd:{0:00}:0000000000000001\r\n";
    assert_int_equal(resp_format_command(buf, sizeof buf, 2, cmd, NULL), sizeof want - 1);
    assert_memory_equal(buf, want, sizeof want - 1);
}

static void test_writer_line_safety(void **state)
{
    resp_buf b;
    (void)state;
    resp_buf_init(&b, 0);
    resp_add_simple(&b, "a\r\nb");
    resp_add_error(&b, "ERR", "x\ny");
    assert_string_equal(b.data, "+a  b\r\n-ERR x y\r\n");
    resp_buf_free(&b);
}

static void test_writer_bound(void **state)
{
    resp_buf b;
    (void)state;
    resp_buf_init(&b, 16);
    assert_int_equal(resp_add_simple(&b, "OK"), 0);
    assert_int_equal(resp_add_bulk(&b, "0123456789", 10), -1);
    assert_int_equal(b.overflow, 1);
    assert_int_equal(b.len, 5);                 /* nothing of the refused append */
    assert_int_equal(resp_add_int(&b, 1), -1);  /* stays refused */
    resp_buf_clear(&b);
    assert_int_equal(b.overflow, 0);
    assert_int_equal(resp_add_int(&b, 1), 0);
    resp_buf_free(&b);
}

/* Feed all of s, step bytes at a time; collect requests as "arg|arg|...;" in out.
 * Returns the last feed result (0 normally, -1 on a protocol error). */
static int feed_all(resp_parser *p, const char *s, size_t len, size_t step, char *out, size_t cap)
{
    size_t pos = 0;
    out[0] = '\0';
    while (pos < len) {
        size_t n = len - pos < step ? len - pos : step, used;
        int rc = resp_parser_feed(p, s + pos, n, &used);
        if (rc < 0)
            return -1;
        pos += used;
        if (rc == 1) {
            resp_request rq;
            resp_parser_take(p, &rq);
            for (size_t i = 0; i < rq.argc; i++) {
                assert_int_equal(rq.argv[i][rq.argvlen[i]], '\0');
                strncat(out, rq.argv[i], cap - strlen(out) - 2);
                strncat(out, i + 1 < rq.argc ? "|" : ";", cap - strlen(out) - 1);
            }
            resp_request_free(&rq);
        } else {
            assert_int_equal(used, n);
        }
    }
    return 0;
}

static const char stream[] =
    "*1\r\n$4\r\nPING\r\n"
    "*3\r\n$11\r\nSIMHASH.ADD\r\n$20\r\n18446744073709551615\r\n$5\r\ndoc-1\r\n"
    "PING hello  world\r\n"
    "\r\n"                                  /* empty inline line: ignored */
    "*0\r\n"                                /* empty multibulk: ignored */
    "*2\r\n$0\r\n\r\n$1\r\nx\r\n"
    "SIMHASH.INFO\n";
static const char stream_want[] =
    "PING;SIMHASH.ADD|18446744073709551615|doc-1;PING|hello|world;|x;SIMHASH.INFO;";

static void test_parser_steps(void **state)
{
    (void)state;
    size_t steps[] = { 1, 2, 3, 7, 16, sizeof(stream) };
    for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
        resp_parser *p = resp_parser_new(NULL);
        char out[512];
        assert_non_null(p);
        assert_int_equal(feed_all(p, stream, sizeof(stream) - 1, steps[k], out, sizeof(out)), 0);
        assert_string_equal(out, stream_want);
        assert_int_equal(resp_parser_pending_bytes(p), 0);
        resp_parser_free(p);
    }
}

static void test_parser_binary(void **state)
{
    static const char req[] = "*2\r\n$3\r\nA\0B\r\n$2\r\n\r\n\r\n";
    resp_parser *p = resp_parser_new(NULL);
    size_t used;
    resp_request rq;
    (void)state;
    assert_int_equal(resp_parser_feed(p, req, sizeof(req) - 1, &used), 1);
    assert_int_equal(used, sizeof(req) - 1);
    resp_parser_take(p, &rq);
    assert_int_equal(rq.argc, 2);
    assert_int_equal(rq.argvlen[0], 3);
    assert_memory_equal(rq.argv[0], "A\0B", 3);
    assert_int_equal(rq.argvlen[1], 2);
    assert_memory_equal(rq.argv[1], "\r\n", 2);
    resp_request_free(&rq);
    resp_parser_free(p);
}

/* The parser reports an error for s (fed in one piece and byte by byte), and the
 * message contains want. */
static void expect_error(const resp_limits *l, const char *s, const char *want)
{
    for (int bytewise = 0; bytewise < 2; bytewise++) {
        resp_parser *p = resp_parser_new(l);
        char out[256];
        int rc = feed_all(p, s, strlen(s), bytewise ? 1 : strlen(s), out, sizeof(out));
        if (rc != -1)
            fail_msg("no error for %s", s);
        if (strstr(resp_parser_error(p), want) == NULL)
            fail_msg("error '%s' for %s, want '%s'", resp_parser_error(p), s, want);
        /* stays in error */
        size_t used;
        assert_int_equal(resp_parser_feed(p, "*1\r\n", 4, &used), -1);
        resp_parser_free(p);
    }
}

static void test_parser_errors(void **state)
{
    resp_limits l;
    (void)state;
    resp_limits_default(&l);
    expect_error(&l, "*1000000000000\r\n", "multibulk length");
    expect_error(&l, "*x\r\n", "multibulk length");
    expect_error(&l, "*1\r\n+PING\r\n", "expected '$'");
    expect_error(&l, "*2\r\n$-5\r\nab\r\n", "bulk length");
    expect_error(&l, "*1\r\n$99999999999\r\n", "argument too large");
    expect_error(&l, "*1\r\n$2\r\nabc\r\n", "CRLF");
    expect_error(&l, "*1\r\n$\r\n", "bulk length");
    expect_error(&l, "*1\n", "multibulk length");
    l.max_args = 3;
    expect_error(&l, "*4\r\n", "max-args");
    expect_error(&l, "A B C D\r\n", "too many arguments");
    resp_limits_default(&l);
    l.max_arg_bytes = 4;
    expect_error(&l, "*1\r\n$5\r\nhello\r\n", "max-arg-bytes");
    resp_limits_default(&l);
    l.max_req_bytes = 6;
    expect_error(&l, "*2\r\n$4\r\nabcd\r\n$3\r\nabc\r\n", "max-request-bytes");
    resp_limits_default(&l);
    l.max_inline_bytes = 8;
    expect_error(&l, "PING 123456789\r\n", "max-inline-bytes");
    /* the limits of a client before AUTH say so, in Redis's words */
    resp_limits_default(&l);
    l.unauth = 1;
    l.max_args = 10;
    l.max_arg_bytes = 16384;
    expect_error(&l, "*11\r\n", "unauthenticated multibulk length");
    expect_error(&l, "*2\r\n$4\r\nPING\r\n$16385\r\n", "unauthenticated bulk length");
}

static void test_parser_limits_exact(void **state)
{
    resp_limits l;
    resp_parser *p;
    char out[256];
    (void)state;
    resp_limits_default(&l);
    l.max_arg_bytes = 5;
    l.max_req_bytes = 10;
    l.max_args = 2;
    p = resp_parser_new(&l);
    /* exactly at every limit: accepted */
    assert_int_equal(feed_all(p, "*2\r\n$5\r\nhello\r\n$5\r\nworld\r\n", 27, 1, out, sizeof(out)), 0);
    assert_string_equal(out, "hello|world;");
    resp_parser_free(p);
}

/* Random bytes never crash the parser, and what it accepts has argc >= 1. */
static void test_parser_fuzz(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int rounds = getenv("VALGRIND") ? 300 : 5000;
    for (int r = 0; r < rounds; r++) {
        char buf[64];
        size_t n = 1 + (size_t)(x % sizeof(buf));
        static const char alpha[] = "*$\r\n0123456789-abc ";
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[i] = (x & 1) ? alpha[(x >> 8) % (sizeof(alpha) - 1)] : (char)(x >> 16);
        }
        resp_limits l;
        resp_limits_default(&l);
        l.max_arg_bytes = 32;
        l.max_args = 8;
        resp_parser *p = resp_parser_new(&l);
        size_t pos = 0;
        while (pos < n) {
            size_t used;
            int rc = resp_parser_feed(p, buf + pos, n - pos, &used);
            if (rc < 0)
                break;
            pos += used;
            if (rc == 1) {
                resp_request rq;
                resp_parser_take(p, &rq);
                assert_true(rq.argc >= 1 && rq.argc <= 8);
                resp_request_free(&rq);
            }
        }
        resp_parser_free(p);
    }
}

/* Option names: the whole argument, any ASCII case, never a prefix or a longer word. */
static void test_word_is(void **state)
{
    (void)state;
    assert_true(resp_word_is("DISTANCE", 8, "DISTANCE"));
    assert_true(resp_word_is("distance", 8, "DISTANCE"));
    assert_true(resp_word_is("LiMiTxx", 5, "limit"));          /* n bytes, not the NUL */
    assert_false(resp_word_is("DISTANC", 7, "DISTANCE"));
    assert_false(resp_word_is("DISTANCES", 9, "DISTANCE"));
    assert_false(resp_word_is("DIST\0NCE", 8, "DISTANCE"));
    assert_false(resp_word_is(NULL, 0, "DOCS"));
    assert_true(resp_word_is("", 0, ""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_golden),
        cmocka_unit_test(test_writer_integers),
        cmocka_unit_test(test_format_command),
        cmocka_unit_test(test_word_is),
        cmocka_unit_test(test_writer_line_safety),
        cmocka_unit_test(test_writer_bound),
        cmocka_unit_test(test_parser_steps),
        cmocka_unit_test(test_parser_binary),
        cmocka_unit_test(test_parser_errors),
        cmocka_unit_test(test_parser_limits_exact),
        cmocka_unit_test(test_parser_fuzz),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
