/* resp.h: RESP2 on the server side: a reply writer into bounded buffers and an
 * incremental, bounded request parser (multibulk and inline commands).
 *
 * The parser is our own rather than hiredis's redisReader: hiredis 0.14.1 allocates
 * an array for "*<n>" before any element arrives and has no limit on element count
 * or bulk length, so a 20-byte request could ask for gigabytes. This one checks every
 * length against the limits before it allocates, consumes input byte by byte without
 * rescanning (feeding one byte at a time is as correct as feeding a whole buffer),
 * and copies each argument once, into its own allocation. */
#ifndef SIMHASH_RESP_H
#define SIMHASH_RESP_H

/* Length of a string literal (a command name in an argv-length array), counted by
 * the compiler: RESP_LITLEN("ZADD") is 4. Only literals compile. */
#define RESP_LITLEN(lit) (sizeof("" lit) - 1)

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Reply writer ---- */

/* A growable byte buffer that never grows past max. When an append would pass max,
 * nothing is appended and `overflow` is set; callers check it once at the end
 * (rserver turns an overflowed reply into an error reply). */
typedef struct resp_buf {
    char *data;
    size_t len;
    size_t cap;
    size_t max;
    int overflow;          /* an append was refused (too large or out of memory) */
    int resp3;             /* the reader speaks RESP3 (HELLO 3): nulls and maps in its
                              encoding; everything else is the same in both */
} resp_buf;

/* max == 0 means no limit beyond memory. */
void resp_buf_init(resp_buf *b, size_t max);
void resp_buf_free(resp_buf *b);
void resp_buf_clear(resp_buf *b);          /* len = 0, overflow = 0, keeps memory */

/* Raw bytes / printf text; return 0, or -1 (and overflow set). */
int resp_buf_append(resp_buf *b, const void *p, size_t n);
int resp_buf_printf(resp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int resp_buf_vprintf(resp_buf *b, const char *fmt, va_list ap);

/* RESP values. Every function returns 0 or -1 (overflow). */
int resp_add_simple(resp_buf *b, const char *s);            /* +s\r\n (CR/LF replaced by spaces) */
int resp_add_error(resp_buf *b, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));                  /* -CODE text\r\n */
int resp_add_int(resp_buf *b, long long v);                 /* :v\r\n */
int resp_add_bulk(resp_buf *b, const void *p, size_t n);    /* $n\r\n...\r\n */
int resp_add_bulk_str(resp_buf *b, const char *s);
int resp_add_bulk_u64(resp_buf *b, uint64_t v);             /* decimal text as a bulk string */
int resp_add_null(resp_buf *b);                             /* $-1\r\n */
int resp_add_array(resp_buf *b, size_t n);                  /* *n\r\n, then n values */
int resp_add_null_array(resp_buf *b);                       /* *-1\r\n */
/* A map of n pairs: %n in RESP3, an array of 2n in RESP2; then 2n values. */
int resp_add_map(resp_buf *b, size_t n);

/* Writes v in decimal at out (room for 20 bytes); returns the number of digits. */
size_t resp_u64_dec(char *out, uint64_t v);

/* 1 when the n bytes at s (an argument: binary-safe, not NUL-terminated) are word,
 * ignoring ASCII case, as Redis compares command and option names; else 0. */
int resp_word_is(const char *s, size_t n, const char *word);

/* Formats a command (argc arguments; argvlen NULL: NUL-terminated strings) as a RESP
 * multibulk request into buf, the bytes hiredis's redisFormatCommandArgv makes.
 * Returns its length, or 0 when it does not fit in cap bytes. */
size_t resp_format_command(char *buf, size_t cap, int argc, const char *const *argv,
                           const size_t *argvlen);

/* ---- Request parser ---- */

typedef struct resp_limits {
    size_t max_arg_bytes;      /* one argument */
    size_t max_req_bytes;      /* all arguments of one request together */
    size_t max_args;           /* arguments per request */
    size_t max_inline_bytes;   /* one inline command line */
    int unauth;                /* the limits of a client that has not authenticated: the
                                  errors say so, as Redis's do */
} resp_limits;

/* Longest text of an error reply (a failed batch lists the pairs it stored). */
#define RESP_ERROR_TEXT_MAX 8192

#define RESP_DEFAULT_MAX_ARG_BYTES (1u << 20)
#define RESP_DEFAULT_MAX_REQ_BYTES (8u << 20)
#define RESP_DEFAULT_MAX_ARGS 65536
#define RESP_DEFAULT_MAX_INLINE_BYTES (64u << 10)

void resp_limits_default(resp_limits *l);

/* One parsed request: argc arguments; argv[i] points to argvlen[i] bytes followed
 * by a NUL (arguments are binary-safe; the NUL is a convenience). */
typedef struct resp_request {
    size_t argc;
    char **argv;               /* into mem, each NUL-terminated */
    size_t *argvlen;
    size_t bytes;              /* sum of argvlen */
    char *mem;                 /* the arguments' bytes, one after the other */
} resp_request;

void resp_request_free(resp_request *r);   /* frees the contents; r itself is not freed */

typedef struct resp_parser resp_parser;

resp_parser *resp_parser_new(const resp_limits *l);
void resp_parser_free(resp_parser *p);
/* Replaces the limits (between requests: after AUTH, say). */
void resp_parser_set_limits(resp_parser *p, const resp_limits *l);

/* Feed up to len bytes. Stops after the first complete request.
 * Returns 1: a request is complete (take it with resp_parser_take), *used bytes
 *            were consumed (the rest must be fed again);
 *         0: all len bytes consumed, request not complete yet;
 *        -1: protocol error or limit passed; resp_parser_error() says what; the
 *            stream cannot be resynchronised and the connection must be closed. */
int resp_parser_feed(resp_parser *p, const char *buf, size_t len, size_t *used);

/* Move the completed request into *out (which the caller frees with
 * resp_request_free). The parser is ready for the next request. */
void resp_parser_take(resp_parser *p, resp_request *out);

/* Human readable reason of the last -1 ("invalid multibulk length", ...). */
const char *resp_parser_error(const resp_parser *p);

/* Bytes held by the parser for the request in progress (its arguments' buffer as
 * allocated, at most twice what they take, the inline line, the argument slots). */
size_t resp_parser_pending_bytes(const resp_parser *p);

#endif
