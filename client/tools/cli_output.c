/* cli_output.c: buffered output through one big buffer and write(2), fast
 * decimal formatting of 64-bit numbers, JSON string escaping, C-style escaping of
 * names in one-entry-per-line text formats. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLI_OUT_CAP (1u << 20)

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

size_t cli_u64_to_dec(uint64_t v, char *dst)
{
    char tmp[20];
    size_t i = sizeof(tmp);

    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        i -= 2;
        memcpy(tmp + i, digit_pairs + 2 * r, 2);
    }
    if (v >= 10) {
        i -= 2;
        memcpy(tmp + i, digit_pairs + 2 * v, 2);
    } else {
        tmp[--i] = (char)('0' + v);
    }
    memcpy(dst, tmp + i, sizeof(tmp) - i);
    return sizeof(tmp) - i;
}

/* Write all of s[0..n) to fd. Returns 0, or -1 with errno. */
static int cli_out_write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

static void cli_out_flush(cli_out *o)
{
    if (o->len && !o->err && cli_out_write_all(o->fd, o->buf, o->len) != 0)
        o->err = errno ? errno : EIO;
    o->len = 0;
}

int cli_out_open(cli_out *o, const char *path)
{
    memset(o, 0, sizeof(*o));
    o->buf = malloc(CLI_OUT_CAP);
    if (!o->buf)
        return -1;
    o->cap = CLI_OUT_CAP;
    if (strcmp(path, "-") == 0) {
        o->fd = STDOUT_FILENO;
        return 0;
    }
    o->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (o->fd < 0) {
        int saved = errno;
        free(o->buf);
        o->buf = NULL;
        errno = saved;
        return -1;
    }
    o->owns_fd = 1;
    return 0;
}

void cli_out_bytes(cli_out *o, const char *s, size_t n)
{
    if (n > o->cap - o->len) {
        cli_out_flush(o);
        if (n > o->cap) {
            if (!o->err && cli_out_write_all(o->fd, s, n) != 0)
                o->err = errno ? errno : EIO;
            return;
        }
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

void cli_out_str(cli_out *o, const char *s)
{
    cli_out_bytes(o, s, strlen(s));
}

void cli_out_char(cli_out *o, char c)
{
    if (o->len == o->cap)
        cli_out_flush(o);
    o->buf[o->len++] = c;
}

void cli_out_u64(cli_out *o, uint64_t v)
{
    if (o->cap - o->len < 20)
        cli_out_flush(o);
    o->len += cli_u64_to_dec(v, o->buf + o->len);
}

void cli_out_u64_json(cli_out *o, uint64_t v)
{
    cli_out_char(o, '"');
    cli_out_u64(o, v);
    cli_out_char(o, '"');
}

/* Length of the valid UTF-8 sequence at s[0..n) (1..4), or 0 if invalid. */
static size_t cli_out_utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t need;
    unsigned min;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        need = 2;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < need)
        return 0;
    unsigned cp = c & (0x7f >> need);
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return need;
}

void cli_out_json_str(cli_out *o, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    cli_out_char(o, '"');
    while (i < n) {
        unsigned c = p[i];
        if (c == '"' || c == '\\') {
            cli_out_char(o, '\\');
            cli_out_char(o, (char)c);
            i++;
        } else if (c < 0x20) {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            switch (c) {
            case '\n': cli_out_bytes(o, "\\n", 2); break;
            case '\r': cli_out_bytes(o, "\\r", 2); break;
            case '\t': cli_out_bytes(o, "\\t", 2); break;
            case '\b': cli_out_bytes(o, "\\b", 2); break;
            case '\f': cli_out_bytes(o, "\\f", 2); break;
            default: cli_out_bytes(o, esc, 6); break;
            }
            i++;
        } else {
            size_t l = cli_out_utf8_seq_len(p + i, n - i);
            if (l == 0) {
                cli_out_bytes(o, "\\ufffd", 6);
                i++;
            } else {
                cli_out_bytes(o, s + i, l);
                i += l;
            }
        }
    }
    cli_out_char(o, '"');
}

void cli_out_text_str(cli_out *o, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;

    while (i < n) {
        /* copy the run of bytes that need no escape in one go */
        size_t j = i;
        while (j < n && (unsigned char)s[j] >= 0x20 && s[j] != 0x7f && s[j] != '\\')
            j++;
        if (j > i)
            cli_out_bytes(o, s + i, j - i);
        if (j == n)
            break;
        unsigned c = (unsigned char)s[j];
        char esc[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
        switch (c) {
        case '\\': cli_out_bytes(o, "\\\\", 2); break;
        case '\n': cli_out_bytes(o, "\\n", 2); break;
        case '\t': cli_out_bytes(o, "\\t", 2); break;
        case '\r': cli_out_bytes(o, "\\r", 2); break;
        default: cli_out_bytes(o, esc, 4); break;
        }
        i = j + 1;
    }
}

int cli_out_close(cli_out *o)
{
    int err;

    cli_out_flush(o);
    err = o->err;
    if (o->owns_fd && close(o->fd) != 0 && !err)
        err = errno;
    free(o->buf);
    memset(o, 0, sizeof(*o));
    o->fd = -1;
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}
