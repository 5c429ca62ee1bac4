/* test_cli_parse.c: the CLI's fast line parser accepts exactly what parse_u64
 * accepts around blanks (random lines compared against a line-by-line reference), the streaming
 * parser matches it however the input is split and refuses over-long lines at
 * once, block reading, decimal formatting round-trips, and the output writer's
 * JSON and text escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "parse.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int rounds(int normal)
{
    const char *v = getenv("VALGRIND");
    return (v && v[0] == '1') ? normal / 20 + 1 : normal;
}

static void test_parse_basic(void **state)
{
    (void)state;
    const char *in = "0\n18446744073709551615\r\n42\n0007";
    uint64_t *v;
    size_t n;
    cli_parse_error e;

    assert_int_equal(cli_parse_u64_lines(in, strlen(in), &v, &n, &e), 0);
    assert_int_equal(n, 4);
    assert_true(v[0] == 0 && v[1] == UINT64_MAX && v[2] == 42 && v[3] == 7);
    free(v);

    assert_int_equal(cli_parse_u64_lines("", 0, &v, &n, &e), 0);
    assert_int_equal(n, 0);
    assert_null(v);

    const char *bad = "1\n2\n18446744073709551616\n";
    assert_int_equal(cli_parse_u64_lines(bad, strlen(bad), &v, &n, &e), -1);
    assert_int_equal(e.line, 3);
    assert_int_equal(e.textlen, 20);
    assert_memory_equal(e.text, "18446744073709551616", 20);
    assert_non_null(strstr(e.why, "out of range"));

    const char *blanks = " 1\n2 \n\t3\t\r\n 4";   /* as simhash-cpp reads them */
    assert_int_equal(cli_parse_u64_lines(blanks, strlen(blanks), &v, &n, &e), 0);
    assert_int_equal(n, 4);
    assert_true(v[0] == 1 && v[1] == 2 && v[2] == 3 && v[3] == 4);
    free(v);
    const char *inner = "1\n2 3\n";                  /* one number per line still */
    assert_int_equal(cli_parse_u64_lines(inner, strlen(inner), &v, &n, &e), -1);
    assert_int_equal(e.line, 2);
    assert_string_equal(e.why, "not a decimal number");
    assert_int_equal(cli_parse_u64_lines(" \n", 2, &v, &n, &e), -1);
    assert_string_equal(e.why, "empty");

    const char *cr = "1\n\r\n";
    assert_int_equal(cli_parse_u64_lines(cr, strlen(cr), &v, &n, &e), -1);
    assert_int_equal(e.line, 2);
    assert_string_equal(e.why, "empty");
}

/* Reference: split on '\n', drop one trailing '\r', then the blanks around the
 * number, parse_u64 each line. */
static int reference_parse(const char *s, size_t len, uint64_t *out, size_t *n,
                           size_t *bad_line, const char **why)
{
    size_t line = 0, count = 0, i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && s[j] != '\n')
            j++;
        size_t l = j - i;
        if (l > 0 && s[i + l - 1] == '\r')
            l--;
        size_t b = 0;                   /* blanks around the number are skipped */
        while (b < l && strchr(" \t\v\f", s[i + b]) && s[i + b])
            b++;
        while (l > b && strchr(" \t\v\f", s[i + l - 1]) && s[i + l - 1])
            l--;
        line++;
        if (parse_u64(s + i + b, l - b, &out[count], why) != 0) {
            *bad_line = line;
            return -1;
        }
        count++;
        i = j + 1;
    }
    *n = count;
    return 0;
}

static void test_parse_matches_reference(void **state)
{
    (void)state;
    static const char alphabet[] = "0123456789012345678901234567890123456789 \t\r-+ax";
    char buf[4096];
    uint64_t ref[4096];

    for (int r = 0; r < rounds(20000); r++) {
        size_t len = 0;
        int lines = 1 + (int)(rng() % 8);
        for (int li = 0; li < lines; li++) {
            unsigned kind = (unsigned)(rng() % 10);
            int l = (int)(rng() % 26);
            for (int k = 0; k < l && len < sizeof(buf) - 4; k++) {
                /* mostly digits, sometimes anything from the alphabet */
                buf[len++] = kind < 7 ? (char)('0' + rng() % 10)
                                      : alphabet[rng() % (sizeof(alphabet) - 1)];
            }
            if (rng() % 5 == 0)
                buf[len++] = '\r';
            if (li + 1 < lines || rng() % 2)
                buf[len++] = '\n';
        }
        uint64_t *v = NULL;
        size_t n = 0, rn = 0, rline = 0;
        cli_parse_error e;
        const char *rwhy = NULL;
        int got = cli_parse_u64_lines(buf, len, &v, &n, &e);
        int want = reference_parse(buf, len, ref, &rn, &rline, &rwhy);
        assert_int_equal(got, want);
        if (want == 0) {
            assert_int_equal(n, rn);
            for (size_t i = 0; i < n; i++)
                assert_true(v[i] == ref[i]);
        } else {
            assert_int_equal(e.line, rline);
            assert_string_equal(e.why, rwhy);
        }
        free(v);
    }
}

/* More lines than the parser's first allocation: the array grows and keeps order. */
static void test_parse_growth(void **state)
{
    (void)state;
    const size_t lines = 150000;
    char *buf = malloc(lines * 21);
    size_t len = 0;
    assert_non_null(buf);
    for (size_t i = 0; i < lines; i++) {
        len += cli_u64_to_dec((uint64_t)i * 122949823u, buf + len);
        buf[len++] = '\n';
    }
    uint64_t *v;
    size_t n;
    cli_parse_error e;
    assert_int_equal(cli_parse_u64_lines(buf, len, &v, &n, &e), 0);
    assert_int_equal(n, lines);
    for (size_t i = 0; i < lines; i++)
        assert_true(v[i] == (uint64_t)i * 122949823u);
    free(v);
    buf[len - 3] = 'x';                   /* the last line goes bad */
    assert_int_equal(cli_parse_u64_lines(buf, len, &v, &n, &e), -1);
    assert_int_equal(e.line, lines);
    free(buf);
}

static void test_u64_to_dec(void **state)
{
    (void)state;
    char a[32], b[32];
    uint64_t fixed[] = {0, 1, 9, 10, 99, 100, 101, 999, 1000, UINT64_MAX, UINT64_MAX - 1,
                        10000000000000000000ull, 9999999999999999999ull};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        size_t n = cli_u64_to_dec(fixed[i], a);
        a[n] = '\0';
        snprintf(b, sizeof(b), "%" PRIu64, fixed[i]);
        assert_string_equal(a, b);
    }
    for (int r = 0; r < rounds(100000); r++) {
        uint64_t x = rng() >> (rng() % 64);
        size_t n = cli_u64_to_dec(x, a);
        a[n] = '\0';
        snprintf(b, sizeof(b), "%" PRIu64, x);
        assert_string_equal(a, b);
    }
}

/* Write through cli_out into a temporary file and return its content (malloc'ed). */
static char *out_roundtrip(void (*fill)(cli_out *o), size_t *len)
{
    char path[] = "/tmp/test_cli_parse_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    cli_out o;
    assert_int_equal(cli_out_open(&o, path), 0);
    fill(&o);
    assert_int_equal(cli_out_close(&o), 0);
    cli_buf b;
    assert_int_equal(cli_buf_read_path(path, &b), 0);
    char *copy = malloc(b.len + 1);
    assert_non_null(copy);
    memcpy(copy, b.data, b.len);
    copy[b.len] = '\0';
    *len = b.len;
    cli_buf_free(&b);
    unlink(path);
    return copy;
}

static void fill_json(cli_out *o)
{
    const char s[] = "a\"b\\c\n\t\x01 \xc3\xa9 \xe4\xb8\xad \xff \xc3 \xed\xa0\x80";
    cli_out_json_str(o, s, sizeof(s) - 1);
}

static void test_json_escape(void **state)
{
    (void)state;
    size_t len;
    char *got = out_roundtrip(fill_json, &len);
    /* valid UTF-8 passes through; a lone 0xff, a truncated sequence and an encoded
     * surrogate become \ufffd (the surrogate's three bytes each) */
    assert_string_equal(got, "\"a\\\"b\\\\c\\n\\t\\u0001 \xc3\xa9 \xe4\xb8\xad \\ufffd \\ufffd "
                             "\\ufffd\\ufffd\\ufffd\"");
    free(got);
}

static void fill_big(cli_out *o)
{
    /* more than the buffer, with a write larger than the buffer in the middle */
    static char block[3u << 20];
    memset(block, 'x', sizeof(block));
    for (int i = 0; i < 100000; i++)
        cli_out_u64(o, (uint64_t)i);
    cli_out_bytes(o, block, sizeof(block));
    cli_out_char(o, '\n');
}

static void test_out_big(void **state)
{
    (void)state;
    size_t len, want = 0;
    char tmp[24];
    for (int i = 0; i < 100000; i++)
        want += cli_u64_to_dec((uint64_t)i, tmp);
    want += (3u << 20) + 1;
    char *got = out_roundtrip(fill_big, &len);
    assert_int_equal(len, want);
    assert_memory_equal(got, "0123456789101112", 16);
    assert_int_equal(got[len - 1], '\n');
    assert_int_equal(got[len - 2], 'x');
    free(got);
}

static void test_out_full(void **state)
{
    (void)state;
    cli_out o;
    if (access("/dev/full", W_OK) != 0)
        fail_msg("/dev/full is not writable");
    assert_int_equal(cli_out_open(&o, "/dev/full"), 0);
    cli_out_str(&o, "hello\n");
    assert_int_equal(cli_out_close(&o), -1);
}

/* Feed buf[0..len) to the streaming parser in random pieces; returns its result. */
static int stream_parse(const char *buf, size_t len, uint64_t **v, size_t *n, cli_parse_error *e)
{
    cli_lines s;
    size_t off = 0;
    cli_lines_init(&s);
    while (off < len) {
        size_t piece = 1 + (size_t)(rng() % 9);
        if (rng() % 4 == 0)
            piece = len - off;
        if (piece > len - off)
            piece = len - off;
        if (cli_lines_feed(&s, buf + off, piece, e) != 0) {
            cli_lines_free(&s);
            return -1;
        }
        off += piece;
    }
    return cli_lines_end(&s, v, n, e);
}

/* Split anywhere, the streaming parser reads what the whole-buffer parser reads
 * (lines here stay under CLI_LINE_MAX), with the same error line and reason. */
static void test_stream_matches_whole(void **state)
{
    (void)state;
    static const char alphabet[] = "0123456789012345678901234567890123456789 \t\r-+ax";
    char buf[4096];

    for (int r = 0; r < rounds(20000); r++) {
        size_t len = 0;
        int lines = 1 + (int)(rng() % 8);
        for (int li = 0; li < lines; li++) {
            unsigned kind = (unsigned)(rng() % 10);
            int l = (int)(rng() % 26);
            for (int k = 0; k < l; k++)
                buf[len++] = kind < 7 ? (char)('0' + rng() % 10)
                                      : alphabet[rng() % (sizeof(alphabet) - 1)];
            if (rng() % 5 == 0)
                buf[len++] = '\r';
            if (li + 1 < lines || rng() % 2)
                buf[len++] = '\n';
        }
        uint64_t *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        cli_parse_error ea, eb;
        int ra = cli_parse_u64_lines(buf, len, &a, &na, &ea);
        int rb = stream_parse(buf, len, &b, &nb, &eb);
        assert_int_equal(ra, rb);
        if (ra == 0) {
            assert_int_equal(na, nb);
            if (na)
                assert_memory_equal(a, b, na * sizeof(*a));
            else
                assert_null(b);
        } else {
            assert_int_equal(ea.line, eb.line);
            assert_string_equal(ea.why, eb.why);
            assert_int_equal(ea.textlen, eb.textlen);
            assert_memory_equal(ea.text, eb.text, ea.textlen < 40 ? ea.textlen : 40);
        }
        free(a);
        free(b);
    }
}

/* Lines over CLI_LINE_MAX bytes are refused at once, with their line number, and a
 * line without end never accumulates; CLI_LINE_MAX bytes plus "\r\n" is fine. */
static void test_stream_long_lines(void **state)
{
    (void)state;
    char line[CLI_LINE_MAX + 8];
    cli_lines s;
    cli_parse_error e;
    uint64_t *v;
    size_t n;

    memset(line, '0', sizeof(line));
    line[CLI_LINE_MAX - 1] = '7';
    line[CLI_LINE_MAX] = '\r';
    line[CLI_LINE_MAX + 1] = '\n';
    for (size_t split = 0; split <= CLI_LINE_MAX + 2; split++) {
        cli_lines_init(&s);
        assert_int_equal(cli_lines_feed(&s, "1\n", 2, &e), 0);
        assert_int_equal(cli_lines_feed(&s, line, split, &e), 0);
        assert_int_equal(cli_lines_feed(&s, line + split, CLI_LINE_MAX + 2 - split, &e), 0);
        assert_int_equal(cli_lines_end(&s, &v, &n, &e), 0);
        assert_int_equal(n, 2);
        assert_true(v[0] == 1 && v[1] == 7);
        free(v);
    }
    /* one byte more: refused wherever the split falls, also without an ending */
    memset(line, '0', sizeof(line));
    for (size_t split = 0; split <= CLI_LINE_MAX + 1; split++) {
        int rc;
        cli_lines_init(&s);
        assert_int_equal(cli_lines_feed(&s, "1\n2\n", 4, &e), 0);
        rc = cli_lines_feed(&s, line, split, &e);
        if (rc == 0)
            rc = cli_lines_feed(&s, line + split, CLI_LINE_MAX + 1 - split, &e);
        if (rc == 0)
            rc = cli_lines_end(&s, &v, &n, &e);
        assert_int_equal(rc, -1);
        assert_int_equal(e.line, 3);
        assert_non_null(strstr(e.why, "too long"));
        assert_true(e.textlen > CLI_LINE_MAX);
        cli_lines_free(&s);
    }
    /* a stream of NUL bytes fails on the first block */
    static char zeros[1 << 16];
    cli_lines_init(&s);
    assert_int_equal(cli_lines_feed(&s, zeros, sizeof(zeros), &e), -1);
    assert_int_equal(e.line, 1);
    assert_non_null(strstr(e.why, "too long"));
    cli_lines_free(&s);
}

/* Reading a file through cli_reader gives its bytes; a directory is refused. */
static void test_reader(void **state)
{
    (void)state;
    char path[] = "/tmp/test_cli_reader_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t len = (3u << 20) + 12345, got = 0;
    char *data = malloc(len);
    assert_non_null(data);
    for (size_t i = 0; i < len; i++)
        data[i] = (char)rng();
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
    cli_reader r;
    assert_int_equal(cli_reader_open(&r, path), 0);
    long n;
    while ((n = cli_reader_next(&r)) > 0) {
        assert_true((size_t)n <= CLI_READ_CHUNK && got + (size_t)n <= len);
        assert_memory_equal(r.buf, data + got, (size_t)n);
        got += (size_t)n;
    }
    assert_int_equal(n, 0);
    assert_int_equal(got, len);
    cli_reader_close(&r);
    unlink(path);
    free(data);
    assert_int_equal(cli_reader_open(&r, "/tmp"), -1);
    assert_non_null(r.err);
}

static void fill_text(cli_out *o)
{
    const char s[] = "a b\\c\nd\te\rf\x01g\x7fh\x1f\xc3\xa9";
    cli_out_text_str(o, s, sizeof(s) - 1);
}

static void test_text_escape(void **state)
{
    (void)state;
    size_t len;
    char *got = out_roundtrip(fill_text, &len);
    assert_string_equal(got, "a b\\\\c\\nd\\te\\rf\\x01g\\x7fh\\x1f\xc3\xa9");
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_basic),
        cmocka_unit_test(test_parse_matches_reference),
        cmocka_unit_test(test_parse_growth),
        cmocka_unit_test(test_u64_to_dec),
        cmocka_unit_test(test_json_escape),
        cmocka_unit_test(test_out_big),
        cmocka_unit_test(test_out_full),
        cmocka_unit_test(test_stream_matches_whole),
        cmocka_unit_test(test_stream_long_lines),
        cmocka_unit_test(test_reader),
        cmocka_unit_test(test_text_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
