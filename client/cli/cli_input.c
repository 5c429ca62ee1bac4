/* cli_input.c: whole-input reading (mmap for regular files, big reads for pipes)
 * and the strict fast parser of one unsigned decimal 64-bit number per line. */
#include "cli.h"
#include "parse.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CLI_READ_CHUNK (1u << 20)
#define CLI_PARSE_INITIAL (1u << 16)   /* numbers before the first growth */

/* ---- Reading ---- */

/* Read fd to its end into a growing heap buffer. Returns 0, or -1 with errno. */
static int read_stream(int fd, cli_buf *b)
{
    size_t cap = CLI_READ_CHUNK, len = 0;
    char *buf = malloc(cap);

    if (!buf)
        return -1;
    for (;;) {
        if (cap - len < CLI_READ_CHUNK / 4) {
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
        ssize_t r = read(fd, buf + len, cap - len);
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
    b->data = buf;
    b->len = len;
    b->maplen = 0;
    return 0;
}

int cli_buf_read_fd(int fd, cli_buf *b)
{
    struct stat st;

    memset(b, 0, sizeof(*b));
    if (fstat(fd, &st) != 0)
        return -1;
    if (S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        return -1;
    }
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
        off_t pos = lseek(fd, 0, SEEK_CUR);
        if (pos == 0 && (uint64_t)st.st_size <= (uint64_t)SIZE_MAX) {
            size_t sz = (size_t)st.st_size;
            void *m = mmap(NULL, sz, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
            if (m != MAP_FAILED) {
                b->data = m;
                b->len = sz;
                b->maplen = sz;
                return 0;
            }
        }
    }
    return read_stream(fd, b);
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
    if (b->maplen)
        munmap(b->data, b->maplen);
    else
        free(b->data);
    memset(b, 0, sizeof(*b));
}

const char *cli_input_name(const char *path)
{
    return strcmp(path, "-") == 0 ? "<stdin>" : path;
}

/* ---- Parsing ---- */

int cli_parse_u64_lines(const char *data, size_t len, uint64_t **out, size_t *n,
                        cli_parse_error *e)
{
    const unsigned char *p = (const unsigned char *)data;
    const unsigned char *end = p + len;
    size_t count = 0, line = 0;
    uint64_t *v;

    *out = NULL;
    *n = 0;
    if (len == 0)
        return 0;
    /* Every line but the last takes at least 2 bytes (a digit and '\n'), so
     * len / 2 + 1 slots always suffice; start smaller and double (large blocks
     * grow by mremap, without copying) so memory follows the real line count. */
    size_t maxcap = len / 2 + 1;
    size_t cap = maxcap < CLI_PARSE_INITIAL ? maxcap : CLI_PARSE_INITIAL;
    v = malloc(cap * sizeof(*v));
    if (!v) {
        memset(e, 0, sizeof(*e));
        e->why = "out of memory";
        return -1;
    }
    while (p < end) {
        const unsigned char *start = p;
        uint64_t x = 0;
        unsigned nd = 0;

        line++;
        if (count == cap) {
            size_t ncap = cap * 2 < maxcap ? cap * 2 : maxcap;
            if (ncap <= cap)          /* cannot happen: lines <= maxcap */
                ncap = cap + 1;
            uint64_t *nv = ncap < SIZE_MAX / sizeof(*v) ? realloc(v, ncap * sizeof(*v)) : NULL;
            if (!nv) {
                free(v);
                memset(e, 0, sizeof(*e));
                e->why = "out of memory";
                return -1;
            }
            v = nv;
            cap = ncap;
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
        if (parse_u64((const char *)start, l, &x, &why) != 0) {
            free(v);
            e->line = line;
            e->why = why;
            e->text = (const char *)start;
            e->textlen = l;
            return -1;
        }
        v[count++] = x;
        p = nl ? nl + 1 : end;
    }
    if (count == 0) {
        free(v);
        return 0;
    }
    uint64_t *shrunk = realloc(v, count * sizeof(*v));
    *out = shrunk ? shrunk : v;
    *n = count;
    return 0;
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
