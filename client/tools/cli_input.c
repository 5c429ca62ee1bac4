/* cli_input.c: input reading with read(2) (whole into a buffer, or block by block
 * through one 1 MiB buffer) and the strict fast parser of one unsigned decimal
 * 64-bit number per line, over a whole buffer or streamed block by block. */
#include "cli.h"
#include "parse.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CLI_PARSE_INITIAL (1u << 16)   /* numbers before the first growth */

/* ---- Reading ---- */

/* Non-zero when two fstat results of one file differ in size or modification time. */
static int cli_in_stat_changed(const struct stat *a, const struct stat *b)
{
    return a->st_size != b->st_size || a->st_mtim.tv_sec != b->st_mtim.tv_sec ||
           a->st_mtim.tv_nsec != b->st_mtim.tv_nsec;
}

int cli_buf_read_fd(int fd, cli_buf *b)
{
    struct stat st, st2;
    size_t cap = CLI_READ_CHUNK, len = 0;
    char *buf;

    memset(b, 0, sizeof(*b));
    if (fstat(fd, &st) != 0)
        return -1;
    if (S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        return -1;
    }
    /* A regular file is read into one buffer of its size (+1 to see the end
     * without growing); anything else grows by doubling. */
    if (S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size < SIZE_MAX / 2)
        cap = (size_t)st.st_size + 1;
    buf = malloc(cap);
    if (!buf)
        return -1;
    for (;;) {
        if (len == cap) {
            if (cap > SIZE_MAX / 2) {
                free(buf);
                errno = ENOMEM;
                return -1;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                errno = ENOMEM;
                return -1;
            }
            buf = nb;
            cap *= 2;
        }
        size_t want = cap - len < CLI_READ_CHUNK * 16 ? cap - len : CLI_READ_CHUNK * 16;
        ssize_t r = read(fd, buf + len, want);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int saved = errno;
            free(buf);
            errno = saved;
            return -1;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    if (S_ISREG(st.st_mode) && (fstat(fd, &st2) != 0 || cli_in_stat_changed(&st, &st2))) {
        free(buf);
        errno = EIO;
        return -1;
    }
    b->data = buf;
    b->len = len;
    return 0;
}

int cli_buf_read_path(const char *path, cli_buf *b)
{
    if (strcmp(path, "-") == 0)
        return cli_buf_read_fd(STDIN_FILENO, b);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        memset(b, 0, sizeof(*b));
        return -1;
    }
    int rc = cli_buf_read_fd(fd, b);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

void cli_buf_free(cli_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof(*b));
}

int cli_reader_open(cli_reader *r, const char *path)
{
    struct stat st;

    memset(r, 0, sizeof(*r));
    r->fd = -1;
    if (strcmp(path, "-") == 0) {
        r->fd = STDIN_FILENO;
    } else {
        /* O_NONBLOCK: opening a FIFO without a writer must not hang here */
        r->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (r->fd < 0) {
            r->err = strerror(errno);
            return -1;
        }
        r->owns_fd = 1;
    }
    if (fstat(r->fd, &st) != 0) {
        r->err = strerror(errno);
        goto fail;
    }
    if (S_ISDIR(st.st_mode)) {
        r->err = strerror(EISDIR);
        goto fail;
    }
    if (r->owns_fd) {
        int fl = fcntl(r->fd, F_GETFL);
        if (fl < 0 || fcntl(r->fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
            r->err = strerror(errno);
            goto fail;
        }
    }
    r->regular = S_ISREG(st.st_mode);
    r->size = (long long)st.st_size;
    r->mtime_s = (long long)st.st_mtim.tv_sec;
    r->mtime_ns = (long long)st.st_mtim.tv_nsec;
    r->buf = malloc(CLI_READ_CHUNK);
    if (!r->buf) {
        r->err = "out of memory";
        goto fail;
    }
    return 0;
fail:
    if (r->owns_fd)
        close(r->fd);
    r->fd = -1;
    r->owns_fd = 0;
    return -1;
}

long cli_reader_next(cli_reader *r)
{
    for (;;) {
        ssize_t n = read(r->fd, r->buf, CLI_READ_CHUNK);
        if (n > 0)
            return (long)n;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r->err = strerror(errno);
            return -1;
        }
        break;
    }
    if (r->regular) {
        struct stat st;
        if (fstat(r->fd, &st) != 0) {
            r->err = strerror(errno);
            return -1;
        }
        if ((long long)st.st_size != r->size || (long long)st.st_mtim.tv_sec != r->mtime_s ||
            (long long)st.st_mtim.tv_nsec != r->mtime_ns) {
            r->err = "changed while reading";
            return -1;
        }
    }
    return 0;
}

void cli_reader_close(cli_reader *r)
{
    if (r->owns_fd && r->fd >= 0)
        close(r->fd);
    free(r->buf);
    memset(r, 0, sizeof(*r));
    r->fd = -1;
}

const char *cli_input_name(const char *path)
{
    return strcmp(path, "-") == 0 ? "<stdin>" : path;
}

/* ---- Parsing ---- */

static const char too_long_why[] = "line too long (over 64 bytes)";

static void cli_in_set_error(cli_parse_error *e, size_t line, const char *why, const char *text,
                             size_t textlen)
{
    e->line = line;
    e->why = why;
    e->text = text;
    e->textlen = textlen;
}

/* Make room for one more value; returns 0, or -1 out of memory. */
static int cli_in_lines_grow(cli_lines *s)
{
    size_t ncap = s->cap ? s->cap * 2 : CLI_PARSE_INITIAL;
    if (ncap <= s->cap || ncap > SIZE_MAX / sizeof(*s->v))
        return -1;
    /* large blocks grow by mremap, without copying */
    uint64_t *nv = realloc(s->v, ncap * sizeof(*s->v));
    if (!nv)
        return -1;
    s->v = nv;
    s->cap = ncap;
    return 0;
}

/* Spaces and tabs (and \v, \f) may surround a number on its line. */
static int cli_in_blank(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\v' || c == '\f';
}

/* Parse the lines of data[0..len) into s: every line but possibly the last ends in
 * '\n'; a last line without ending counts as a line. Returns 0, or -1 with *e. */
static int cli_in_parse_block(cli_lines *s, const char *data, size_t len, cli_parse_error *e)
{
    const unsigned char *p = (const unsigned char *)data;
    const unsigned char *end = p + len;
    uint64_t *v = s->v;
    size_t count = s->n, cap = s->cap, line = s->line;
    int rc = 0;

    while (p < end) {
        const unsigned char *start = p;
        uint64_t x = 0;
        unsigned nd = 0;

        line++;
        if (count == cap) {
            s->n = count;
            if (cli_in_lines_grow(s) != 0) {
                cli_in_set_error(e, line, "out of memory", NULL, 0);
                rc = -1;
                break;
            }
            v = s->v;
            cap = s->cap;
        }
        /* Fast path: 1..19 digits cannot overflow and are exactly what parse_u64
         * accepts for such a line; anything else goes through parse_u64. */
        while (p < end && nd < 19 && (unsigned)(*p - '0') < 10) {
            x = x * 10 + (unsigned)(*p - '0');
            p++;
            nd++;
        }
        if (nd > 0) {
            if (p == end) {
                v[count++] = x;
                break;
            }
            if (*p == '\n') {
                v[count++] = x;
                p++;
                continue;
            }
            if (*p == '\r' && (p + 1 == end || p[1] == '\n')) {
                v[count++] = x;
                p += (p + 1 == end) ? 1 : 2;
                continue;
            }
        }
        /* Slow path: the whole line through parse_u64. */
        const unsigned char *nl = memchr(start, '\n', (size_t)(end - start));
        size_t l = (size_t)((nl ? nl : end) - start);
        if (l > 0 && start[l - 1] == '\r')
            l--;
        const char *why = NULL;
        if (s->maxline && l > s->maxline) {
            cli_in_set_error(e, line, too_long_why, (const char *)start, l);
            rc = -1;
            break;
        }
        /* blanks around the number are skipped, as simhash-cpp's stream reads do */
        size_t b = 0;
        while (b < l && cli_in_blank(start[b]))
            b++;
        while (l > b && cli_in_blank(start[l - 1]))
            l--;
        if (parse_u64((const char *)start + b, l - b, &x, &why) != 0) {
            cli_in_set_error(e, line, why, (const char *)start, l);
            rc = -1;
            break;
        }
        v[count++] = x;
        p = nl ? nl + 1 : end;
    }
    s->n = count;
    s->line = line;
    return rc;
}

void cli_lines_init(cli_lines *s)
{
    memset(s, 0, sizeof(*s));
    s->maxline = CLI_LINE_MAX;
}

void cli_lines_free(cli_lines *s)
{
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

int cli_lines_feed(cli_lines *s, const char *data, size_t len, cli_parse_error *e)
{
    const char *p = data, *end = data + len;
    const size_t carrymax = s->maxline + 1;       /* the line and a '\r' */

    if (len == 0)
        return 0;
    if (s->carrylen > 0) {
        /* complete the line carried over from the last block */
        const char *nl = memchr(p, '\n', len);
        size_t take = (size_t)((nl ? nl : end) - p);
        size_t room = carrymax - s->carrylen;
        memcpy(s->carry + s->carrylen, p, take < room ? take : room);
        if (take > room) {
            cli_in_set_error(e, s->line + 1, too_long_why, s->carry, s->carrylen + take);
            return -1;
        }
        s->carrylen += take;
        if (!nl)
            return 0;
        size_t cl = s->carrylen;
        s->carrylen = 0;
        if (cli_in_parse_block(s, s->carry, cl, e) != 0)
            return -1;
        p = nl + 1;
    }
    const char *last = memrchr(p, '\n', (size_t)(end - p));
    if (last) {
        if (cli_in_parse_block(s, p, (size_t)(last + 1 - p), e) != 0)
            return -1;
        p = last + 1;
    }
    size_t tail = (size_t)(end - p);
    if (tail > carrymax) {
        cli_in_set_error(e, s->line + 1, too_long_why, p, tail);
        return -1;
    }
    memcpy(s->carry, p, tail);
    s->carrylen = tail;
    return 0;
}

int cli_lines_end(cli_lines *s, uint64_t **out, size_t *n, cli_parse_error *e)
{
    *out = NULL;
    *n = 0;
    if (s->carrylen > 0) {
        size_t cl = s->carrylen;
        s->carrylen = 0;
        if (cli_in_parse_block(s, s->carry, cl, e) != 0) {
            cli_lines_free(s);
            return -1;
        }
    }
    if (s->n == 0) {
        cli_lines_free(s);
        return 0;
    }
    uint64_t *shrunk = realloc(s->v, s->n * sizeof(*s->v));
    *out = shrunk ? shrunk : s->v;
    *n = s->n;
    s->v = NULL;
    s->n = s->cap = 0;
    return 0;
}

int cli_parse_u64_lines(const char *data, size_t len, uint64_t **out, size_t *n,
                        cli_parse_error *e)
{
    cli_lines s;

    *out = NULL;
    *n = 0;
    memset(&s, 0, sizeof(s));                    /* maxline 0: no limit */
    /* Every line but the last takes at least 2 bytes, so len / 2 + 1 slots
     * suffice; start at most that small so memory follows the real line count. */
    size_t maxcap = len / 2 + 1;
    if (len > 0 && maxcap < CLI_PARSE_INITIAL) {
        s.v = malloc(maxcap * sizeof(*s.v));
        if (!s.v) {
            cli_in_set_error(e, 0, "out of memory", NULL, 0);
            return -1;
        }
        s.cap = maxcap;
    }
    if (cli_in_parse_block(&s, data, len, e) != 0) {
        cli_lines_free(&s);
        return -1;
    }
    return cli_lines_end(&s, out, n, e);
}

int cli_read_u64_input(const char *prog, const char *path, uint64_t **out, size_t *n)
{
    const char *name = cli_input_name(path);
    cli_reader r;
    cli_lines s;
    cli_parse_error e;
    long got;

    *out = NULL;
    *n = 0;
    if (cli_reader_open(&r, path) != 0) {
        fprintf(stderr, "%s: %s: %s\n", prog, name, r.err);
        return -1;
    }
    cli_lines_init(&s);
    while ((got = cli_reader_next(&r)) > 0) {
        if (cli_lines_feed(&s, r.buf, (size_t)got, &e) != 0) {
            cli_report_parse_error(prog, name, &e);
            goto fail;
        }
    }
    if (got < 0) {
        fprintf(stderr, "%s: %s: %s\n", prog, name, r.err);
        goto fail;
    }
    if (cli_lines_end(&s, out, n, &e) != 0) {
        cli_report_parse_error(prog, name, &e);
        goto fail;
    }
    cli_reader_close(&r);
    return 0;
fail:
    cli_lines_free(&s);
    cli_reader_close(&r);
    return -1;
}

void cli_report_parse_error(const char *prog, const char *name, const cli_parse_error *e)
{
    char text[CLI_ERR_TEXT_MAX + 4];
    size_t n = e->textlen < CLI_ERR_TEXT_MAX ? e->textlen : CLI_ERR_TEXT_MAX;

    if (!e->text) {
        fprintf(stderr, "%s: %s: %s\n", prog, name, e->why);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)e->text[i];
        text[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (e->textlen > CLI_ERR_TEXT_MAX) {
        memcpy(text + n, "...", 3);
        n += 3;
    }
    text[n] = '\0';
    fprintf(stderr, "%s: %s:%zu: %s: '%s'\n", prog, name, e->line, e->why, text);
}
