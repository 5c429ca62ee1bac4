/* resp.c: RESP2 reply writer into bounded buffers and the bounded incremental
 * request parser; see resp.h. */
#include "resp.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- Reply writer ---- */

void resp_buf_init(resp_buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
    b->overflow = 0;
    b->resp3 = 0;
}

void resp_buf_free(resp_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->overflow = 0;
}

void resp_buf_clear(resp_buf *b)
{
    b->len = 0;
    b->overflow = 0;
}

/* Make room for n more bytes (plus a NUL). Returns 0, or -1 with overflow set. */
static int resp_buf_reserve(resp_buf *b, size_t n)
{
    if (b->overflow)
        return -1;
    if (n > SIZE_MAX / 2 - b->len || (b->max > 0 && b->len + n > b->max)) {
        b->overflow = 1;
        return -1;
    }
    size_t need = b->len + n + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    char *d = realloc(b->data, cap);
    if (d == NULL) {
        b->overflow = 1;
        return -1;
    }
    b->data = d;
    b->cap = cap;
    return 0;
}

int resp_buf_append(resp_buf *b, const void *p, size_t n)
{
    if (resp_buf_reserve(b, n) != 0)
        return -1;
    if (n > 0)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int resp_buf_vprintf(resp_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    char small[256];

    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof(small), fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        b->overflow = 1;
        return -1;
    }
    if ((size_t)n < sizeof(small))
        return resp_buf_append(b, small, (size_t)n);
    if (resp_buf_reserve(b, (size_t)n) != 0)
        return -1;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int resp_buf_printf(resp_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = resp_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

int resp_word_is(const char *s, size_t n, const char *word)
{
    return n == strlen(word) && (n == 0 || strncasecmp(s, word, n) == 0);
}

size_t resp_u64_dec(char *out, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

/* Writes <c><n>\r\n at out (room for 23 bytes); returns its length. */
static size_t resp_put_header(char *out, char c, uint64_t n)
{
    out[0] = c;
    size_t len = 1 + resp_u64_dec(out + 1, n);
    out[len++] = '\r';
    out[len++] = '\n';
    return len;
}

/* Append s with CR and LF turned into spaces (simple strings and errors are one line). */
static int resp_put_line(resp_buf *b, const char *s, size_t n)
{
    size_t start = b->len;
    if (resp_buf_append(b, s, n) != 0)
        return -1;
    for (size_t i = start; i < b->len; i++)
        if (b->data[i] == '\r' || b->data[i] == '\n')
            b->data[i] = ' ';
    return 0;
}

int resp_add_simple(resp_buf *b, const char *s)
{
    if (resp_buf_append(b, "+", 1) != 0 || resp_put_line(b, s, strlen(s)) != 0)
        return -1;
    return resp_buf_append(b, "\r\n", 2);
}

int resp_add_error(resp_buf *b, const char *code, const char *fmt, ...)
{
    char text[RESP_ERROR_TEXT_MAX];
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof(text))
        n = sizeof(text) - 1;
    if (resp_buf_append(b, "-", 1) != 0 || resp_put_line(b, code, strlen(code)) != 0)
        return -1;
    if (n > 0 && (resp_buf_append(b, " ", 1) != 0 || resp_put_line(b, text, (size_t)n) != 0))
        return -1;
    return resp_buf_append(b, "\r\n", 2);
}

int resp_add_int(resp_buf *b, long long v)
{
    char tmp[32];
    size_t n;
    if (v < 0) {        /* -(v + 1) + 1: no overflow at LLONG_MIN */
        tmp[0] = ':';
        tmp[1] = '-';
        n = 2 + resp_u64_dec(tmp + 2, (uint64_t)(-(v + 1)) + 1);
        tmp[n++] = '\r';
        tmp[n++] = '\n';
    } else {
        n = resp_put_header(tmp, ':', (uint64_t)v);
    }
    return resp_buf_append(b, tmp, n);
}

int resp_add_bulk(resp_buf *b, const void *p, size_t n)
{
    char tmp[32];
    size_t h = resp_put_header(tmp, '$', n);
    if (resp_buf_reserve(b, h + n + 2) != 0)
        return -1;
    resp_buf_append(b, tmp, h);
    resp_buf_append(b, p, n);
    return resp_buf_append(b, "\r\n", 2);
}

int resp_add_bulk_str(resp_buf *b, const char *s)
{
    return resp_add_bulk(b, s, strlen(s));
}

int resp_add_bulk_u64(resp_buf *b, uint64_t v)
{
    char tmp[24];
    return resp_add_bulk(b, tmp, resp_u64_dec(tmp, v));
}

int resp_add_null(resp_buf *b)
{
    return b->resp3 ? resp_buf_append(b, "_\r\n", 3) : resp_buf_append(b, "$-1\r\n", 5);
}

int resp_add_array(resp_buf *b, size_t n)
{
    char tmp[32];
    return resp_buf_append(b, tmp, resp_put_header(tmp, '*', n));
}

size_t resp_format_command(char *buf, size_t cap, int argc, const char *const *argv,
                           const size_t *argvlen)
{
    char hdr[32];
    size_t len = resp_put_header(hdr, '*', (uint64_t)argc);
    if (argc < 0 || len > cap)
        return 0;
    memcpy(buf, hdr, len);
    for (int i = 0; i < argc; i++) {
        size_t n = argvlen ? argvlen[i] : strlen(argv[i]);
        size_t h = resp_put_header(hdr, '$', n);
        if (n > cap || cap - len < h + 2 || cap - len - h - 2 < n)
            return 0;
        memcpy(buf + len, hdr, h);
        memcpy(buf + len + h, argv[i], n);
        memcpy(buf + len + h + n, "\r\n", 2);
        len += h + n + 2;
    }
    return len;
}

int resp_add_null_array(resp_buf *b)
{
    return b->resp3 ? resp_buf_append(b, "_\r\n", 3) : resp_buf_append(b, "*-1\r\n", 5);
}

int resp_add_map(resp_buf *b, size_t n)
{
    if (!b->resp3)
        return resp_add_array(b, 2 * n);
    char head[32];
    int len = snprintf(head, sizeof(head), "%%%zu\r\n", n);
    return resp_buf_append(b, head, (size_t)len);
}

/* ---- Request parser ---- */

enum {
    PS_START,       /* first byte of a request decides: '*' multibulk, else inline */
    PS_MBLEN,       /* digits of *<n> */
    PS_BULKSIGN,    /* expecting '$' */
    PS_BULKLEN,     /* digits of $<len> */
    PS_BULKDATA,    /* len bytes */
    PS_BULKCR,      /* '\r' after the data */
    PS_BULKLF,      /* '\n' after the data */
    PS_INLINE,      /* an inline command line up to '\n' */
    PS_DONE,        /* a complete request waits to be taken */
    PS_ERROR
};

struct resp_parser {
    resp_limits lim;
    int state;
    /* number being read (PS_MBLEN, PS_BULKLEN) */
    uint64_t num;
    int num_digits;
    int num_neg;
    int num_cr;             /* saw '\r', want '\n' */
    /* request in progress */
    size_t nexpect;         /* multibulk: arguments announced */
    resp_request req;
    size_t cap;             /* slots in req.argv */
    size_t mem_len, mem_cap;  /* bytes used and allocated of req.mem */
    size_t cur_off;         /* where the argument being read starts in req.mem */
    size_t cur_len, cur_pos;
    /* inline line */
    char *line;
    size_t line_len, line_cap;
    char err[128];
};

void resp_limits_default(resp_limits *l)
{
    l->max_arg_bytes = RESP_DEFAULT_MAX_ARG_BYTES;
    l->max_req_bytes = RESP_DEFAULT_MAX_REQ_BYTES;
    l->max_args = RESP_DEFAULT_MAX_ARGS;
    l->max_inline_bytes = RESP_DEFAULT_MAX_INLINE_BYTES;
    l->unauth = 0;
}

void resp_request_free(resp_request *r)
{
    free(r->mem);
    free(r->argv);
    free(r->argvlen);
    memset(r, 0, sizeof(*r));
}

resp_parser *resp_parser_new(const resp_limits *l)
{
    resp_parser *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    if (l != NULL)
        p->lim = *l;
    else
        resp_limits_default(&p->lim);
    p->state = PS_START;
    return p;
}

static void resp_parser_reset_request(resp_parser *p)
{
    resp_request_free(&p->req);
    p->cap = 0;
    p->mem_len = p->mem_cap = 0;
    p->nexpect = 0;
    p->line_len = 0;
}

void resp_parser_free(resp_parser *p)
{
    if (p == NULL)
        return;
    resp_parser_reset_request(p);
    free(p->line);
    free(p);
}

void resp_parser_set_limits(resp_parser *p, const resp_limits *l)
{
    p->lim = *l;
}

const char *resp_parser_error(const resp_parser *p)
{
    return p->err[0] ? p->err : "no error";
}

size_t resp_parser_pending_bytes(const resp_parser *p)
{
    return p->mem_cap + p->line_len + p->req.argc * sizeof(char *);
}

static int resp_fail(resp_parser *p, const char *fmt, const char *arg)
{
    snprintf(p->err, sizeof(p->err), fmt, arg);
    p->state = PS_ERROR;
    return -1;
}

/* Append an empty argument slot of n bytes. Returns 0, or -1 (limit, no memory). */
static int resp_parser_add_arg(resp_parser *p, size_t n)
{
    if (p->req.argc >= p->lim.max_args)
        return resp_fail(p, "Protocol error: too many arguments (limit max-args)%s", "");
    if (n > p->lim.max_arg_bytes)
        return p->lim.unauth ? resp_fail(p, "Protocol error: unauthenticated bulk length%s", "")
                             : resp_fail(p, "Protocol error: argument too large (limit %s)",
                                         "max-arg-bytes");
    if (n > p->lim.max_req_bytes - p->req.bytes)
        return resp_fail(p, "Protocol error: request too large (limit %s)", "max-request-bytes");
    if (p->req.argc == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 8;
        char **v = realloc(p->req.argv, cap * sizeof(*v));
        if (v == NULL)
            return resp_fail(p, "Protocol error: out of memory%s", "");
        p->req.argv = v;
        size_t *lv = realloc(p->req.argvlen, cap * sizeof(*lv));
        if (lv == NULL)
            return resp_fail(p, "Protocol error: out of memory%s", "");
        p->req.argvlen = lv;
        p->cap = cap;
    }
    /* the bytes go into one buffer for the whole request (one allocation a request,
     * not one an argument); argv points into it once the request is complete */
    if (n + 1 > p->mem_cap - p->mem_len) {
        /* twice the size, or what this argument needs (n and mem_len are bounded
         * by the limits: no overflow) */
        size_t cap = p->mem_cap ? 2 * p->mem_cap : 256;
        if (cap < p->mem_len + n + 1)
            cap = p->mem_len + n + 1;
        char *m = realloc(p->req.mem, cap);
        if (m == NULL)
            return resp_fail(p, "Protocol error: out of memory%s", "");
        p->req.mem = m;
        p->mem_cap = cap;
    }
    p->cur_off = p->mem_len;
    p->req.mem[p->mem_len + n] = '\0';
    p->mem_len += n + 1;
    p->req.argv[p->req.argc] = NULL;
    p->req.argvlen[p->req.argc] = n;
    p->req.argc++;
    p->req.bytes += n;
    return 0;
}

/* The request is complete: argv points into mem (which no longer moves). */
static void resp_parser_done(resp_parser *p)
{
    size_t off = 0;
    for (size_t i = 0; i < p->req.argc; i++) {
        p->req.argv[i] = p->req.mem + off;
        off += p->req.argvlen[i] + 1;
    }
    p->state = PS_DONE;
}

/* Read a "<digits>\r\n" number one byte at a time.
 * Returns 1 when complete (p->num, p->num_neg), 0 need more, -1 bad byte. */
static int resp_parser_num_byte(resp_parser *p, char c)
{
    if (p->num_cr) {
        if (c != '\n')
            return -1;
        if (p->num_digits == 0)
            return -1;
        return 1;
    }
    if (c == '\r') {
        p->num_cr = 1;
        return 0;
    }
    if (c == '-' && p->num_digits == 0 && !p->num_neg) {
        p->num_neg = 1;
        return 0;
    }
    if (c < '0' || c > '9' || p->num_digits >= 18)
        return -1;
    p->num = p->num * 10 + (uint64_t)(c - '0');
    p->num_digits++;
    return 0;
}

static void resp_parser_num_start(resp_parser *p, int state)
{
    p->state = state;
    p->num = 0;
    p->num_digits = 0;
    p->num_neg = 0;
    p->num_cr = 0;
}

/* Split the inline line into arguments. Returns 0 (state DONE, or START for an empty
 * line), or -1. */
static int resp_parser_inline_done(resp_parser *p)
{
    size_t n = p->line_len;
    if (n > 0 && p->line[n - 1] == '\r')
        n--;
    size_t i = 0;
    while (i < n) {
        while (i < n && (p->line[i] == ' ' || p->line[i] == '\t'))
            i++;
        if (i >= n)
            break;
        size_t s = i;
        while (i < n && p->line[i] != ' ' && p->line[i] != '\t')
            i++;
        if (resp_parser_add_arg(p, i - s) != 0)
            return -1;
        memcpy(p->req.mem + p->cur_off, p->line + s, i - s);
    }
    p->line_len = 0;
    if (p->req.argc > 0)
        resp_parser_done(p);
    else
        p->state = PS_START;
    return 0;
}

int resp_parser_feed(resp_parser *p, const char *buf, size_t len, size_t *used)
{
    size_t i = 0;
    int r;

    *used = 0;
    if (p->state == PS_ERROR)
        return -1;
    if (p->state == PS_DONE)
        return 1;
    while (i < len) {
        char c = buf[i];
        switch (p->state) {
        case PS_START:
            if (c == '*') {
                resp_parser_num_start(p, PS_MBLEN);
                i++;
            } else {
                p->state = PS_INLINE;
            }
            break;
        case PS_MBLEN:
            i++;
            r = resp_parser_num_byte(p, c);
            if (r < 0)
                return resp_fail(p, "Protocol error: invalid multibulk length%s", "");
            if (r == 0)
                break;
            if (p->num_neg || p->num == 0) {          /* *0 / *-1: nothing to do */
                p->state = PS_START;
                break;
            }
            if (p->num > p->lim.max_args)
                return p->lim.unauth
                    ? resp_fail(p, "Protocol error: unauthenticated multibulk length%s", "")
                    : resp_fail(p, "Protocol error: invalid multibulk length (limit %s)",
                                "max-args");
            p->nexpect = (size_t)p->num;
            p->state = PS_BULKSIGN;
            break;
        case PS_BULKSIGN:
            i++;
            if (c != '$') {
                char tmp[8];
                snprintf(tmp, sizeof(tmp), "%c", (c >= 32 && c < 127) ? c : '?');
                return resp_fail(p, "Protocol error: expected '$', got '%s'", tmp);
            }
            resp_parser_num_start(p, PS_BULKLEN);
            break;
        case PS_BULKLEN:
            i++;
            r = resp_parser_num_byte(p, c);
            if (r < 0 || (r == 1 && p->num_neg))
                return resp_fail(p, "Protocol error: invalid bulk length%s", "");
            if (r == 0)
                break;
            if (resp_parser_add_arg(p, (size_t)p->num) != 0)
                return -1;
            p->cur_len = (size_t)p->num;
            p->cur_pos = 0;
            p->state = p->cur_len > 0 ? PS_BULKDATA : PS_BULKCR;
            break;
        case PS_BULKDATA: {
            size_t take = len - i;
            if (take > p->cur_len - p->cur_pos)
                take = p->cur_len - p->cur_pos;
            memcpy(p->req.mem + p->cur_off + p->cur_pos, buf + i, take);
            p->cur_pos += take;
            i += take;
            if (p->cur_pos == p->cur_len)
                p->state = PS_BULKCR;
            break;
        }
        case PS_BULKCR:
            i++;
            if (c != '\r')
                return resp_fail(p, "Protocol error: bulk string not followed by CRLF%s", "");
            p->state = PS_BULKLF;
            break;
        case PS_BULKLF:
            i++;
            if (c != '\n')
                return resp_fail(p, "Protocol error: bulk string not followed by CRLF%s", "");
            if (p->req.argc == p->nexpect)
                resp_parser_done(p);
            else
                p->state = PS_BULKSIGN;
            break;
        case PS_INLINE: {
            const char *nl = memchr(buf + i, '\n', len - i);
            size_t take = nl ? (size_t)(nl - (buf + i)) : len - i;
            if (take > p->lim.max_inline_bytes - p->line_len)
                return resp_fail(p, "Protocol error: too big inline request (limit %s)",
                                 p->lim.unauth ? "for unauthenticated clients"
                                               : "max-inline-bytes");
            if (p->line_len + take > p->line_cap) {
                size_t cap = p->line_cap ? p->line_cap : 128;
                while (cap < p->line_len + take)
                    cap *= 2;
                char *l = realloc(p->line, cap);
                if (l == NULL)
                    return resp_fail(p, "Protocol error: out of memory%s", "");
                p->line = l;
                p->line_cap = cap;
            }
            if (take > 0)
                memcpy(p->line + p->line_len, buf + i, take);
            p->line_len += take;
            i += take;
            if (nl) {
                i++;
                if (resp_parser_inline_done(p) != 0)
                    return -1;
            }
            break;
        }
        default:
            return resp_fail(p, "parser in a bad state%s", "");
        }
        if (p->state == PS_DONE) {
            *used = i;
            return 1;
        }
    }
    *used = i;
    return 0;
}

void resp_parser_take(resp_parser *p, resp_request *out)
{
    *out = p->req;
    memset(&p->req, 0, sizeof(p->req));
    p->cap = 0;
    p->mem_len = p->mem_cap = 0;
    p->nexpect = 0;
    p->state = PS_START;
}
