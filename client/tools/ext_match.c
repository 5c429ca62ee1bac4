/* ext_match.c: find-all and find-clusters on inputs of any size within a memory budget
 * (--memory). The values are kept in a binary file (the input itself when it is a
 * binary file, else a temporary copy); for each permutation table one pass splits them
 * by the top bits of their permuted value into partitions small enough for memory,
 * written to a temporary file in chunks; then every partition is read back, sorted,
 * de-duplicated and matched in memory (match_table_pairs), partitions spread over the
 * threads. Pairs that share a prefix share its top bits too, so no pair crosses a
 * partition, and each pair is emitted by its first table only (as in memory). Pairs
 * are kept in memory while they fit and otherwise spilled as sorted runs and merged.
 * Temporary files are unlinked as soon as they are created: nothing is left behind on
 * success, error or a signal.
 *
 * Written here rather than taken from a library: the work is the project's own
 * matching over its permutation tables; the external parts are a partition pass, a
 * run merge and positional reads. */
#include "cli.h"
#include "ext_match.h"
#include "match.h"
#include "match_sort.h"
#include "perm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define XM_IO_VALUES (1u << 17)             /* values per read of the input (1 MiB) */
#define XM_BYTES_PER_VALUE 48               /* memory of a partition in work, per value */

/* ---- Errors and temporary files ---- */

static pthread_mutex_t xm_err_lock = PTHREAD_MUTEX_INITIALIZER;

void xm_errf(xm_run *x, const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&xm_err_lock);
    if (!x->err[0]) {
        va_start(ap, fmt);
        vsnprintf(x->err, sizeof(x->err), fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&xm_err_lock);
}

/* fmt has two %s: a, then strerror(errnum) (or "" when errnum is 0). */
static void xm_err(xm_run *x, const char *fmt, const char *a, int errnum)
{
    char msg[sizeof(x->err)];
    snprintf(msg, sizeof(msg), fmt, a ? a : "", errnum ? strerror(errnum) : "");
    xm_errf(x, "%s", msg);
}

int xm_tmpfile(xm_run *x, const char *what)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof(path), "%s/simhash-%s.XXXXXX", x->opt.tmpdir, what);
    if (n < 0 || (size_t)n >= sizeof(path)) {
        xm_err(x, "temporary directory name too long: %s%s", x->opt.tmpdir, 0);
        return -1;
    }
    int fd = mkstemp(path);
    if (fd < 0) {
        xm_err(x, "cannot create a temporary file in %s: %s", x->opt.tmpdir, errno);
        return -1;
    }
    unlink(path);
    return fd;
}

int xm_append(xm_run *x, int fd, uint64_t *end, const void *p, size_t len, uint64_t *at)
{
    uint64_t off = __atomic_fetch_add(end, (uint64_t)len, __ATOMIC_RELAXED);
    if (at)
        *at = off;
    const char *c = p;
    while (len > 0) {
        ssize_t w = pwrite(fd, c, len, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            xm_err(x, "cannot write a temporary file in %s: %s", x->opt.tmpdir,
                   w < 0 ? errno : ENOSPC);
            return -1;
        }
        c += w;
        off += (uint64_t)w;
        len -= (size_t)w;
        __atomic_add_fetch(&x->st.tmp_bytes, (uint64_t)w, __ATOMIC_RELAXED);
    }
    return 0;
}

int xm_pread(xm_run *x, int fd, void *p, size_t len, uint64_t off)
{
    char *c = p;
    while (len > 0) {
        ssize_t r = pread(fd, c, len, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            xm_err(x, "cannot read a temporary file: %s%s", "", r < 0 ? errno : EIO);
            return -1;
        }
        c += r;
        len -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

int xm_grow(void *pp, size_t *cap, size_t need, size_t elem, size_t first)
{
    void **p = pp;
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : first;
    while (nc < need)
        nc *= 2;
    void *q = nc <= SIZE_MAX / elem ? realloc(*p, nc * elem) : NULL;
    if (q == NULL)
        return -1;
    *p = q;
    *cap = nc;
    return 0;
}

/* ---- Input ---- */

int xm_open_input(xm_run *x, const char *path, int binary)
{
    x->in_fd = -1;
    if (binary && strcmp(path, "-") != 0) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0) {
            xm_err(x, "cannot open %s: %s", path, errno);
            return -1;
        }
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            close(fd);
            fd = -1;        /* a pipe or device: copied below like stdin */
        } else {
            if (st.st_size % 8 != 0) {
                close(fd);
                snprintf(x->err, sizeof(x->err), "%s: truncated binary input: %lld bytes is "
                         "not a whole number of 8-byte values", path, (long long)st.st_size);
                return -1;
            }
            x->in_fd = fd;
            x->n = (uint64_t)st.st_size / 8;
            return 0;
        }
    }
    /* text (parsed block by block) or binary from a pipe: into a temporary file */
    cli_reader rd;
    if (cli_reader_open(&rd, path) != 0) {
        snprintf(x->err, sizeof(x->err), "%s: %s", cli_input_name(path), rd.err);
        return -1;
    }
    int fd = xm_tmpfile(x, "input");
    uint64_t in_end = 0;
    if (fd < 0) {
        cli_reader_close(&rd);
        return -1;
    }
    cli_lines ls;
    cli_lines_init(&ls);
    cli_parse_error pe;
    unsigned char carry[8];
    size_t ncarry = 0;
    long got;
    int rc = 0;
    while (rc == 0 && (got = cli_reader_next(&rd)) > 0) {
        if (binary) {
            const unsigned char *b = (const unsigned char *)rd.buf;
            size_t len = (size_t)got, off = 0;
            if (ncarry > 0) {   /* complete a value split across reads */
                while (ncarry < 8 && off < len)
                    carry[ncarry++] = b[off++];
                if (ncarry == 8) {
                    rc = xm_append(x, fd, &in_end, carry, 8, NULL);
                    ncarry = 0;
                }
            }
            size_t whole = (len - off) / 8 * 8;
            if (rc == 0)
                rc = xm_append(x, fd, &in_end, b + off, whole, NULL);
            off += whole;
            while (off < len)
                carry[ncarry++] = b[off++];
            continue;
        }
        if (cli_lines_feed(&ls, rd.buf, (size_t)got, &pe) != 0) {
            cli_report_parse_error(x->prog, cli_input_name(path), &pe);
            snprintf(x->err, sizeof(x->err), "-");     /* reported */
            rc = -1;
            break;
        }
        /* drain the parsed values to the file; the parser keeps counting lines */
        rc = xm_append(x, fd, &in_end, ls.v, ls.n * sizeof(uint64_t), NULL);
        x->n += ls.n;
        ls.n = 0;
    }
    if (rc == 0 && got < 0) {
        snprintf(x->err, sizeof(x->err), "%s: %s", cli_input_name(path), rd.err);
        rc = -1;
    }
    if (rc == 0 && binary && ncarry > 0) {
        snprintf(x->err, sizeof(x->err), "%s: truncated binary input: %zu bytes after the "
                 "last whole 8-byte value", cli_input_name(path), ncarry);
        rc = -1;
    }
    if (rc == 0 && binary) {
        struct stat st;
        if (fstat(fd, &st) == 0)
            x->n = (uint64_t)st.st_size / 8;
    }
    if (rc == 0 && !binary) {
        uint64_t *rest = NULL;
        size_t nrest = 0;
        if (cli_lines_end(&ls, &rest, &nrest, &pe) != 0) {
            cli_report_parse_error(x->prog, cli_input_name(path), &pe);
            snprintf(x->err, sizeof(x->err), "-");
            rc = -1;
        } else {
            rc = xm_append(x, fd, &in_end, rest, nrest * sizeof(uint64_t), NULL);
            x->n += nrest;
            free(rest);
        }
    } else {
        cli_lines_free(&ls);
    }
    cli_reader_close(&rd);
    if (rc != 0) {
        close(fd);
        return -1;
    }
    x->in_fd = fd;
    return 0;
}

/* ---- Pairs: in memory while they fit, else sorted runs in a temporary file ---- */

/* Append pairs p[0..n) as one sorted run (p is sorted here). Locked by the caller.
 * Returns 0, or -1 with x->err. */
static int xm_spill_run(xm_run *x, match_pair *p, size_t n)
{
    if (n == 0)
        return 0;
    match_pair *tmp = malloc(n * sizeof(*tmp));
    if (tmp == NULL || match_sort_pairs(p, tmp, n) < 0) {
        free(tmp);
        xm_err(x, "out of memory sorting pairs%s%s", "", 0);
        return -1;
    }
    free(tmp);
    if (x->pair_fd < 0 && (x->pair_fd = xm_tmpfile(x, "pairs")) < 0)
        return -1;
    if (xm_grow(&x->runs, &x->runcap, x->nruns + 1, sizeof(*x->runs), 16) != 0) {
        xm_err(x, "out of memory%s%s", "", 0);
        return -1;
    }
    x->runs[x->nruns].off = x->pair_bytes / sizeof(match_pair);
    x->runs[x->nruns].n = n;
    if (xm_append(x, x->pair_fd, &x->pair_bytes, p, n * sizeof(*p), NULL) != 0)
        return -1;
    x->nruns++;
    return 0;
}

/* ---- One table ---- */

typedef struct xm_chunk {
    uint64_t off;               /* byte offset in the partition file */
    uint32_t n;                 /* values */
    uint32_t next;              /* another chunk of the same partition, or UINT32_MAX */
} xm_chunk;

typedef struct xm_table {
    xm_run *x;
    unsigned t, pbits;
    size_t nparts;
    int fd;                     /* the partition file */
    uint64_t file_end;          /* atomic: bytes reserved in it */
    xm_chunk *chunks;
    size_t nchunks, chunk_cap;
    uint32_t *head;             /* first chunk of each partition */
    uint64_t *count;            /* values of each partition */
    size_t next_part;           /* atomic: the next partition to process */
    int sorted_runs;            /* its matching needs the values sorted */
    pthread_mutex_t lock;       /* pair runs and repeats */
    int failed;
} xm_table;

/* One thread's share of the partition pass: input values [from, to), its own buffers
 * (per values each), chunks appended to the shared file at offsets taken atomically. */
typedef struct xm_splitter {
    xm_table *tb;
    uint64_t from, to;
    size_t per;
    uint64_t *bufs;
    uint32_t *fill;
    uint64_t *in;
    int failed;
} xm_splitter;

/* Flush buffer p of sp as a chunk: write it, then link it (under the table's lock). */
static int xm_flush(xm_splitter *sp, size_t p)
{
    xm_table *tb = sp->tb;
    xm_run *x = tb->x;
    uint32_t n = sp->fill[p];
    size_t bytes = (size_t)n * sizeof(uint64_t);
    uint64_t off;
    if (xm_append(x, tb->fd, &tb->file_end, sp->bufs + p * sp->per, bytes, &off) != 0)
        return -1;
    pthread_mutex_lock(&tb->lock);
    int rc = 0;
    if (tb->nchunks + 1 >= UINT32_MAX ||
        xm_grow(&tb->chunks, &tb->chunk_cap, tb->nchunks + 1, sizeof(*tb->chunks), 1024) != 0) {
        xm_err(x, "out of memory%s%s", "", 0);
        rc = -1;
    }
    if (rc == 0) {
        uint32_t id = (uint32_t)tb->nchunks++;
        tb->chunks[id] = (xm_chunk){ off, n, tb->head[p] };
        tb->head[p] = id;           /* partitions' chunks in any order: they are sorted */
        tb->count[p] += n;
    }
    pthread_mutex_unlock(&tb->lock);
    sp->fill[p] = 0;
    return rc;
}

static void *xm_split_run(void *arg)
{
    xm_splitter *sp = arg;
    xm_table *tb = sp->tb;
    xm_run *x = tb->x;
    const perm_table *pt = &x->ps.tables[tb->t];
    unsigned sh = 64 - tb->pbits;
    for (uint64_t done = sp->from; done < sp->to && !sp->failed;) {
        if (__atomic_load_n(&tb->failed, __ATOMIC_RELAXED))
            break;
        size_t k = sp->to - done > XM_IO_VALUES ? XM_IO_VALUES : (size_t)(sp->to - done);
        if (xm_pread(x, x->in_fd, sp->in, k * sizeof(uint64_t), done * sizeof(uint64_t)) != 0) {
            sp->failed = 1;
            break;
        }
        for (size_t i = 0; i < k; i++) {
            size_t p = tb->pbits ? (size_t)(perm_apply(pt, sp->in[i]) >> sh) : 0;
            sp->bufs[p * sp->per + sp->fill[p]++] = sp->in[i];
            if (sp->fill[p] == sp->per && xm_flush(sp, p) != 0) {
                sp->failed = 1;
                break;
            }
        }
        done += k;
        if (sp->from == 0)      /* the first splitter draws the bar */
            cli_progress_update(&x->progress,
                                (size_t)(x->base_done + (done - sp->from) *
                                         (x->n / (sp->to - sp->from + 1) + 1) / 2));
    }
    for (size_t p = 0; p < tb->nparts && !sp->failed; p++)
        if (sp->fill[p] > 0 && xm_flush(sp, p) != 0)
            sp->failed = 1;
    if (sp->failed)
        __atomic_store_n(&tb->failed, 1, __ATOMIC_RELAXED);
    return NULL;
}

/* Split the input by the top pbits of the permuted value of table t into tb->fd, the
 * input divided among the threads. Returns 0, or -1 with x->err. */
static int xm_partition(xm_table *tb)
{
    xm_run *x = tb->x;
    size_t P = tb->nparts;
    unsigned nt = x->threads;
    if ((uint64_t)nt > x->n / XM_IO_VALUES + 1)
        nt = (unsigned)(x->n / XM_IO_VALUES + 1);
    /* a quarter of the budget for the buffers, at least 512 values each */
    size_t per = x->opt.memory / 4 / P / nt / sizeof(uint64_t);
    if (per < 512)
        per = 512;
    if (per > (1u << 20))
        per = 1u << 20;
    if ((uint64_t)P * per * sizeof(uint64_t) * nt > 4 * (uint64_t)x->opt.memory + (64u << 20)) {
        xm_errf(x, "--memory too small to make progress: %llu values need %zu partitions "
                "per table, whose buffers alone exceed it; raise --memory",
                (unsigned long long)x->n, P);
        return -1;
    }
    xm_splitter sp[64];
    memset(sp, 0, sizeof(sp));
    tb->head = malloc(P * sizeof(*tb->head));
    tb->count = calloc(P, sizeof(*tb->count));
    int rc = -1;
    if (!tb->head || !tb->count)
        goto oom;
    for (size_t p = 0; p < P; p++)
        tb->head[p] = UINT32_MAX;
    for (unsigned i = 0; i < nt; i++) {
        sp[i].tb = tb;
        sp[i].from = x->n * i / nt;
        sp[i].to = x->n * (i + 1) / nt;
        sp[i].per = per;
        sp[i].bufs = malloc(P * per * sizeof(uint64_t));
        sp[i].fill = calloc(P, sizeof(uint32_t));
        sp[i].in = malloc(XM_IO_VALUES * sizeof(uint64_t));
        if (!sp[i].bufs || !sp[i].fill || !sp[i].in)
            goto oom;
    }
    pthread_t tid[64];
    unsigned started = 0;
    for (unsigned i = 1; i < nt; i++) {
        if (pthread_create(&tid[started], NULL, xm_split_run, &sp[i]) != 0) {
            sp[i].failed = 1;
            xm_errf(x, "cannot start a thread");
            break;
        }
        started++;
    }
    xm_split_run(&sp[0]);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    rc = tb->failed || started + 1 < nt ? -1 : 0;
    goto out;
oom:
    xm_err(x, "out of memory for the partition buffers (raise --memory)%s%s", "", 0);
out:
    for (unsigned i = 0; i < nt; i++) {
        free(sp[i].bufs);
        free(sp[i].fill);
        free(sp[i].in);
    }
    return rc;
}

/* Add (v, count) to the repeated values (table 0 only). Locked by the caller. */
static int xm_note_repeat(xm_run *x, uint64_t v, uint64_t count)
{
    if (xm_grow(&x->rep, &x->repcap, x->nrep + 1, sizeof(*x->rep), 64) != 0)
        return -1;
    x->rep[x->nrep++] = (xm_repeat){ v, count };
    return 0;
}

/* Append the distinct values v[0..n) of a partition of table 0 to the distinct file
 * (offsets taken atomically). Returns 0, or -1 with x->err. */
static int xm_append_distinct(xm_run *x, const uint64_t *v, size_t n)
{
    return xm_append(x, x->dist_fd, &x->dist_end, v, n * sizeof(uint64_t), NULL);
}

/* Thread body: take partitions of the table until none is left. */
static void *xm_table_worker(void *arg)
{
    xm_table *tb = arg;
    xm_run *x = tb->x;
    uint64_t *vals = NULL, *sorted = NULL;
    size_t cap = 0;
    match_pair *pairs = NULL;
    size_t np = 0, pcap = 0;
    /* this thread's share of the pair budget before it spills a run */
    size_t pair_limit = x->opt.memory / 4 / sizeof(match_pair) / x->threads + 1024;

    for (;;) {
        if (__atomic_load_n(&tb->failed, __ATOMIC_RELAXED))
            break;
        size_t p = __atomic_fetch_add(&tb->next_part, 1, __ATOMIC_RELAXED);
        if (p >= tb->nparts)
            break;
        size_t n = (size_t)tb->count[p];
        if (n == 0)
            continue;
        if ((uint64_t)n * 2 * sizeof(uint64_t) > x->opt.memory) {
            xm_errf(x, "--memory too small to make progress: %zu values share the leading "
                    "bits of table %u (many repeats of a value, or a small prefix) and need "
                    "%zu MiB at once; raise --memory", n, tb->t,
                    (size_t)((uint64_t)n * 2 * sizeof(uint64_t) >> 20) + 1);
            __atomic_store_n(&tb->failed, 1, __ATOMIC_RELAXED);
            break;
        }
        if (n > cap) {
            free(vals);
            free(sorted);
            vals = malloc(n * sizeof(*vals));
            sorted = malloc(n * sizeof(*sorted));
            cap = n;
            if (!vals || !sorted) {
                xm_errf(x, "--memory too small to make progress: a partition of %zu values "
                        "does not fit (raise --memory)", n);
                __atomic_store_n(&tb->failed, 1, __ATOMIC_RELAXED);
                break;
            }
        }
        size_t got = 0;
        int bad = 0;
        for (uint32_t c = tb->head[p]; c != UINT32_MAX && !bad; c = tb->chunks[c].next) {
            bad = xm_pread(x, tb->fd, vals + got, tb->chunks[c].n * sizeof(uint64_t),
                           tb->chunks[c].off) != 0;
            got += tb->chunks[c].n;
        }
        if (bad) {
            __atomic_store_n(&tb->failed, 1, __ATOMIC_RELAXED);
            break;
        }
        /* Table 0 sorts to find the distinct values (noting the repeated ones: pairs
         * [a, a]) and writes them out as the input of the other tables, which sort
         * only when their matching walks sorted runs. */
        const uint64_t *uniq = vals;
        size_t u = n;
        int oom = 0;
        if (tb->t == 0 || tb->sorted_runs) {
            if (match_sort_u64(vals, sorted, n, 1) < 0) {
                xm_err(x, "out of memory%s%s", "", 0);
                __atomic_store_n(&tb->failed, 1, __ATOMIC_RELAXED);
                break;
            }
            u = 0;
            for (size_t i = 0; i < n;) {
                size_t j = i + 1;
                while (j < n && sorted[j] == sorted[i])
                    j++;
                if (j - i >= 2 && tb->t == 0) {
                    pthread_mutex_lock(&tb->lock);
                    oom |= xm_note_repeat(x, sorted[i], j - i) != 0;
                    pthread_mutex_unlock(&tb->lock);
                }
                sorted[u++] = sorted[i];
                i = j;
            }
            uniq = sorted;
        }
        if (tb->t == 0) {
            __atomic_add_fetch(&x->st.distinct, (uint64_t)u, __ATOMIC_RELAXED);
            if (xm_append_distinct(x, uniq, u) != 0) {
                __atomic_store_n(&tb->failed, 1, __ATOMIC_RELAXED);
                break;
            }
        }
        if (oom || match_table_pairs(&x->ps, tb->t, uniq, u, tb->pbits, &pairs, &np,
                                     &pcap) < 0) {
            xm_err(x, "out of memory matching a partition (raise --memory)%s%s", "", 0);
            __atomic_store_n(&tb->failed, 1, __ATOMIC_RELAXED);
            break;
        }
        if (np > pair_limit) {
            pthread_mutex_lock(&tb->lock);
            int r = xm_spill_run(x, pairs, np);
            pthread_mutex_unlock(&tb->lock);
            if (r != 0) {
                __atomic_store_n(&tb->failed, 1, __ATOMIC_RELAXED);
                break;
            }
            np = 0;
        }
        uint64_t d = __atomic_add_fetch(&x->done_in_table, (uint64_t)n, __ATOMIC_RELAXED);
        if (x->threads == 1 || pthread_equal(pthread_self(), x->main_thread))
            cli_progress_update(&x->progress, (size_t)(x->base_done + x->n / 2 + d / 2));
    }
    free(vals);
    free(sorted);
    /* keep what is left in memory: appended to the run's list */
    pthread_mutex_lock(&tb->lock);
    if (!tb->failed && np > 0) {
        if (xm_grow(&x->mem, &x->memcap, x->nmem + np, sizeof(*x->mem), 1024) != 0) {
            tb->failed = 1;
            xm_err(x, "out of memory%s%s", "", 0);
        }
        if (!tb->failed) {
            memcpy(x->mem + x->nmem, pairs, np * sizeof(*pairs));
            x->nmem += np;
            if (x->nmem > x->opt.memory / 4 / sizeof(match_pair) + 1024) {
                if (xm_spill_run(x, x->mem, x->nmem) != 0)
                    tb->failed = 1;
                x->nmem = 0;
            }
        }
    }
    pthread_mutex_unlock(&tb->lock);
    free(pairs);
    return NULL;
}

/* Partitions of table t for the budget: a power of two with at most memory /
 * XM_BYTES_PER_VALUE / threads values each on average (twice as many as needed, for
 * uneven partitions), never more than the table's prefix bits allow. */
static unsigned xm_pbits(const xm_run *x, unsigned t)
{
    uint64_t per = x->opt.memory / XM_BYTES_PER_VALUE / x->threads;
    if (per < 1024)
        per = 1024;
    uint64_t need = (x->n + per - 1) / per * 2;
    unsigned b = 0;
    while (((uint64_t)1 << b) < need && b < 20)
        b++;
    if (b > x->ps.tables[t].prefix_bits)
        b = x->ps.tables[t].prefix_bits;
    return b;
}

static double xm_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int xm_run_table(xm_run *x, unsigned t)
{
    xm_table tb;
    memset(&tb, 0, sizeof(tb));
    tb.x = x;
    tb.t = t;
    tb.pbits = xm_pbits(x, t);
    /* the matching of tables led by the highest block walks runs of sorted values */
    tb.sorted_runs = (x->ps.tables[t].lead_blocks >> (x->ps.blocks - 1)) & 1;
    tb.nparts = (size_t)1 << tb.pbits;
    tb.fd = xm_tmpfile(x, "part");
    if (tb.fd < 0)
        return -1;
    pthread_mutex_init(&tb.lock, NULL);
    x->done_in_table = 0;
    double t0 = xm_now();
    int rc = xm_partition(&tb);
    double t1 = xm_now();
    x->st.secs_split += t1 - t0;
    if (rc == 0) {
        pthread_t tid[64];
        unsigned started = 0;
        x->main_thread = pthread_self();
        for (unsigned i = 1; i < x->threads && i < 64; i++) {
            if (pthread_create(&tid[started], NULL, xm_table_worker, &tb) != 0)
                break;
            started++;
        }
        xm_table_worker(&tb);
        for (unsigned i = 0; i < started; i++)
            pthread_join(tid[i], NULL);
        rc = tb.failed ? -1 : 0;
        x->st.secs_match += xm_now() - t1;
    }
    close(tb.fd);
    pthread_mutex_destroy(&tb.lock);
    free(tb.chunks);
    free(tb.head);
    free(tb.count);
    return rc;
}

/* ---- Driver ---- */

void xm_init(xm_run *x, const char *prog, const xm_opts *o)
{
    memset(x, 0, sizeof(*x));
    x->prog = prog;
    x->opt = *o;
    x->in_fd = -1;
    x->pair_fd = -1;
    x->dist_fd = -1;
    x->threads = o->threads ? o->threads : cli_ncpus();
    if (x->threads > 64)
        x->threads = 64;
}

void xm_free(xm_run *x)
{
    if (x->in_fd >= 0)
        close(x->in_fd);
    if (x->pair_fd >= 0)
        close(x->pair_fd);
    if (x->dist_fd >= 0)
        close(x->dist_fd);
    free(x->runs);
    free(x->mem);
    free(x->rep);
    perm_set_free(&x->ps);
}

static int xm_repeat_cmp(const void *a, const void *b)
{
    uint64_t x = ((const xm_repeat *)a)->v, y = ((const xm_repeat *)b)->v;
    return (x > y) - (x < y);
}

uint64_t xm_count(const xm_run *x, uint64_t v)
{
    size_t lo = 0, hi = x->nrep;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->rep[mid].v < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < x->nrep && x->rep[lo].v == v ? x->rep[lo].count : 1;
}

int xm_find_pairs(xm_run *x, unsigned blocks, unsigned distance)
{
    char err[256];
    if (perm_set_init(&x->ps, blocks, distance, err, sizeof(err)) != 0) {
        snprintf(x->err, sizeof(x->err), "%s", err);
        return -1;
    }
    x->st.values = x->n;
    uint64_t total = (uint64_t)x->ps.ntables * x->n;
    cli_progress_init(&x->progress, "matching", (size_t)total);
    if ((x->dist_fd = xm_tmpfile(x, "distinct")) < 0)
        return -1;
    for (unsigned t = 0; t < x->ps.ntables; t++) {
        if (t == 1) {
            /* from now on the input is the distinct values table 0 wrote */
            close(x->in_fd);
            x->in_fd = x->dist_fd;
            x->dist_fd = -1;
            x->n = x->dist_end / sizeof(uint64_t);
        }
        x->base_done = (uint64_t)t * x->st.values;
        snprintf(x->phase, sizeof(x->phase), "table %u/%u", t + 1, x->ps.ntables);
        x->progress.label = x->phase;
        if (xm_run_table(x, t) != 0) {
            cli_progress_end(&x->progress);
            return -1;
        }
    }
    cli_progress_end(&x->progress);
    if (x->nrep > 1)        /* qsort of NULL (no repeats) is undefined */
        qsort(x->rep, x->nrep, sizeof(*x->rep), xm_repeat_cmp);
    /* repeated values give [a, a]: into the pairs as well */
    for (size_t i = 0; i < x->nrep && !x->unique; i++) {
        if (xm_grow(&x->mem, &x->memcap, x->nmem + 1, sizeof(*x->mem), 1024) != 0) {
            xm_err(x, "out of memory%s%s", "", 0);
            return -1;
        }
        x->mem[x->nmem++] = (match_pair){ x->rep[i].v, x->rep[i].v };
    }
    if (x->nruns > 0 && x->nmem > 0) {
        if (xm_spill_run(x, x->mem, x->nmem) != 0)
            return -1;
        x->nmem = 0;
    } else if (x->nmem > 1) {
        match_pair *tmp = malloc(x->nmem * sizeof(*tmp));
        if (tmp == NULL || match_sort_pairs(x->mem, tmp, x->nmem) < 0) {
            free(tmp);
            xm_err(x, "out of memory sorting pairs%s%s", "", 0);
            return -1;
        }
        free(tmp);
    }
    x->st.pairs = x->nmem;
    for (size_t r = 0; r < x->nruns; r++)
        x->st.pairs += x->runs[r].n;
    return 0;
}

/* ---- k-way merge of sorted runs ---- */

/* One buffered reader per run. */
typedef struct xm_reader {
    match_pair *buf;
    size_t len, pos, cap;
    uint64_t next, end;         /* record index in the file */
} xm_reader;

/* Reads the reader's next records (len 0: the run is done). Returns 0, or -1 with
 * x->err. */
static int xm_reader_fill(xm_run *x, int fd, xm_reader *r)
{
    uint64_t left = r->end - r->next;
    size_t k = left > r->cap ? r->cap : (size_t)left;
    r->pos = 0;
    r->len = k;
    if (k == 0)
        return 0;
    if (xm_pread(x, fd, r->buf, k * sizeof(match_pair), r->next * sizeof(match_pair)) != 0)
        return -1;
    r->next += k;
    return 0;
}

/* A binary min-heap of reader indexes ordered by their current records. */
static int xm_heap_less(const xm_reader *rd, size_t i, size_t j)
{
    return xm_pair_less(&rd[i].buf[rd[i].pos], &rd[j].buf[rd[j].pos]);
}

/* The reader just added at position c moves up to its place. */
static void xm_heap_up(size_t *heap, size_t c, const xm_reader *rd)
{
    while (c > 0) {
        size_t pa = (c - 1) / 2;
        if (!xm_heap_less(rd, heap[c], heap[pa]))
            break;
        size_t t = heap[c];
        heap[c] = heap[pa];
        heap[pa] = t;
        c = pa;
    }
}

/* The reader at the top (hn readers in the heap) moves down to its place. */
static void xm_heap_down(size_t *heap, size_t hn, const xm_reader *rd)
{
    size_t c = 0;
    for (;;) {
        size_t l = 2 * c + 1, m = c;
        if (l < hn && xm_heap_less(rd, heap[l], heap[m]))
            m = l;
        if (l + 1 < hn && xm_heap_less(rd, heap[l + 1], heap[m]))
            m = l + 1;
        if (m == c)
            break;
        size_t t = heap[c];
        heap[c] = heap[m];
        heap[m] = t;
        c = m;
    }
}

int xm_merge_runs(xm_run *x, int fd, const xm_span *runs, size_t k, size_t per,
                  const char *what, int (*fn)(void *ctx, const match_pair *p), void *ctx)
{
    if (k == 0)
        return 0;
    xm_reader *rd = calloc(k, sizeof(*rd));
    size_t *heap = malloc(k * sizeof(*heap)), hn = 0;
    int rc = -1;
    if (!rd || !heap)
        goto oom;
    for (size_t i = 0; i < k; i++) {
        rd[i].cap = per;
        rd[i].buf = malloc(per * sizeof(match_pair));
        rd[i].next = runs[i].off;
        rd[i].end = runs[i].off + runs[i].n;
        if (rd[i].buf == NULL)
            goto oom;
        if (xm_reader_fill(x, fd, &rd[i]) != 0)
            goto out;
        if (rd[i].len == 0)
            continue;
        heap[hn] = i;
        xm_heap_up(heap, hn++, rd);
    }
    while (hn > 0) {
        xm_reader *r = &rd[heap[0]];
        if (fn(ctx, &r->buf[r->pos]) != 0)
            goto out;
        if (++r->pos == r->len && xm_reader_fill(x, fd, r) != 0)
            goto out;
        if (r->len == 0)
            heap[0] = heap[--hn];
        xm_heap_down(heap, hn, rd);
    }
    rc = 0;
    goto out;
oom:
    xm_errf(x, "out of memory merging %s", what);
out:
    for (size_t i = 0; rd && i < k; i++)
        free(rd[i].buf);
    free(rd);
    free(heap);
    return rc;
}

int xm_each_pair(xm_run *x, int (*fn)(void *ctx, const match_pair *p), void *ctx)
{
    if (x->nruns == 0) {
        for (size_t i = 0; i < x->nmem; i++)
            if (fn(ctx, &x->mem[i]) != 0)
                return -1;
        return 0;
    }
    return xm_merge_runs(x, x->pair_fd, x->runs, x->nruns, 4096, "pairs", fn, ctx);
}

long xm_peak_rss_kb(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}
