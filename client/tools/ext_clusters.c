/* ext_clusters.c: the clusters (connected components) of a spilled find-clusters run
 * within --memory, however many values are in pairs.
 *
 * The graph is an edge list of 16-byte records (x, y), each edge in both directions,
 * kept in an external sorter (sorted runs in a temporary file, k-way merged, repeats
 * dropped as they are read), so reading it walks every vertex x with its neighbours y
 * ascending. A value given several times is a record (v, v), which keeps a vertex
 * without other neighbours alive. Rounds of the alternating large-star / small-star
 * contraction (Kiveris, Lattanzi, Mirrokni, Rastogi, Vassilvitskii, "Connected
 * Components in MapReduce and Beyond", SoCC 2014) rewire the edges, one streaming pass
 * and one external sort each, never adding edges, until every component is a star
 * around its smallest value:
 *   large-star: each x links its larger neighbours to m = min(x, neighbours);
 *   small-star: each x links its smaller neighbours and itself to m.
 * A component is a star exactly when every vertex has either no smaller neighbour
 * (the centre) or one smaller neighbour and no larger one (a leaf); the large-star
 * pass checks that on its input, and counts each centre's members (with repeats) into
 * a sizes file as it goes. Once stars, the centres come in ascending order, each
 * followed by its leaves ascending: that is the output order, cluster by cluster,
 * with the sizes file read in step for the binary format's size-first records.
 *
 * Memory: one sorter's buffer (a quarter of --memory, plus as much scratch to sort it)
 * and the merge buffers of the sorter being read (another quarter), whatever the size
 * of the graph. Temporary files are unlinked when created. */
#include "cli.h"
#include "ext_match.h"
#include "match.h"
#include "match_sort.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define XM_CC_MIN_BUF 256           /* records per merge buffer, at least */
#define XM_CC_MAX_ROUNDS 1000       /* far beyond O(log^2 n); a bug if reached */

/* ---- An external sorter of (a, b) records ---- */

typedef struct xm_sorter {
    xm_run *x;
    int fd;                         /* the runs, created at the first spill */
    uint64_t end;                   /* bytes in fd */
    match_pair *buf;                /* records not yet in a run */
    size_t n, bufcap, cap;          /* used, allocated, the most it may hold */
    xm_span *runs;
    size_t nruns, runcap;
    uint64_t total;                 /* records added */
} xm_sorter;

static void xm_srt_init(xm_sorter *s, xm_run *x)
{
    memset(s, 0, sizeof(*s));
    s->x = x;
    s->fd = -1;
    /* a quarter of the budget for the buffer, another for the scratch of its sort */
    s->cap = x->opt.memory / 4 / sizeof(match_pair);
    if (s->cap < XM_CC_MIN_BUF)
        s->cap = XM_CC_MIN_BUF;
}

static void xm_srt_free(xm_sorter *s)
{
    if (s->fd >= 0)
        close(s->fd);
    free(s->buf);
    free(s->runs);
    memset(s, 0, sizeof(*s));
    s->fd = -1;
}

/* Sort the buffer in place. Returns 0, or -1 with x->err. */
static int xm_srt_sort(xm_sorter *s)
{
    if (s->n < 2)
        return 0;
    match_pair *tmp = malloc(s->n * sizeof(*tmp));
    int rc = tmp == NULL ? -1 : match_sort_pairs(s->buf, tmp, s->n);
    free(tmp);
    if (rc != 0)
        xm_errf(s->x, "out of memory sorting the cluster edges (raise --memory)");
    return rc;
}

/* Write the buffer as one sorted run. Returns 0, or -1 with x->err. */
static int xm_srt_spill(xm_sorter *s)
{
    if (s->n == 0)
        return 0;
    if (xm_srt_sort(s) != 0)
        return -1;
    if (s->fd < 0 && (s->fd = xm_tmpfile(s->x, "edges")) < 0)
        return -1;
    if (xm_grow(&s->runs, &s->runcap, s->nruns + 1, sizeof(*s->runs), 16) != 0) {
        xm_errf(s->x, "out of memory");
        return -1;
    }
    s->runs[s->nruns] = (xm_span){ s->end / sizeof(match_pair), s->n };
    if (xm_append(s->x, s->fd, &s->end, s->buf, s->n * sizeof(*s->buf), NULL) != 0)
        return -1;
    s->nruns++;
    s->n = 0;
    return 0;
}

static int xm_srt_push(xm_sorter *s, uint64_t a, uint64_t b)
{
    if (s->n == s->bufcap) {
        if (s->bufcap == s->cap) {
            if (xm_srt_spill(s) != 0)
                return -1;
        } else {
            size_t nc = s->bufcap ? s->bufcap * 2 : 4096;
            if (nc > s->cap)
                nc = s->cap;
            match_pair *q = realloc(s->buf, nc * sizeof(*q));
            if (q == NULL) {
                xm_errf(s->x, "out of memory for the cluster edges (raise --memory)");
                return -1;
            }
            s->buf = q;
            s->bufcap = nc;
        }
    }
    s->buf[s->n++] = (match_pair){ a, b };
    s->total++;
    return 0;
}

/* The edge {a, b}, both directions. */
static int xm_srt_edge(xm_sorter *s, uint64_t a, uint64_t b)
{
    return xm_srt_push(s, a, b) != 0 || xm_srt_push(s, b, a) != 0 ? -1 : 0;
}

/* No more records: spilled runs are completed (the buffer freed), or the buffer is
 * sorted in memory. Returns 0, or -1 with x->err. */
static int xm_srt_finish(xm_sorter *s)
{
    if (s->nruns == 0)
        return xm_srt_sort(s);
    if (xm_srt_spill(s) != 0)
        return -1;
    free(s->buf);
    s->buf = NULL;
    s->bufcap = 0;
    return 0;
}

/* xm_srt_each's filter: passes each distinct record on once. */
typedef struct xm_distinct {
    match_pair last;
    int have;
    int (*fn)(void *ctx, uint64_t a, uint64_t b);
    void *ctx;
} xm_distinct;

static int xm_distinct_step(void *arg, const match_pair *p)
{
    xm_distinct *d = arg;
    if (d->have && p->a == d->last.a && p->b == d->last.b)
        return 0;
    d->last = *p;
    d->have = 1;
    return d->fn(d->ctx, p->a, p->b);
}

/* Calls fn for every distinct record of a finished sorter, ascending. The merge
 * buffers share a quarter of --memory. Returns 0, or -1 (fn failed, or x->err). */
static int xm_srt_each(xm_sorter *s, int (*fn)(void *ctx, uint64_t a, uint64_t b), void *ctx)
{
    xm_distinct d = { { 0, 0 }, 0, fn, ctx };
    if (s->nruns == 0) {
        for (size_t i = 0; i < s->n; i++)
            if (xm_distinct_step(&d, &s->buf[i]) != 0)
                return -1;
        return 0;
    }
    size_t per = s->x->opt.memory / 4 / sizeof(match_pair) / s->nruns;
    if (per < XM_CC_MIN_BUF)
        per = XM_CC_MIN_BUF;
    if (per > (1u << 16))
        per = 1u << 16;
    return xm_merge_runs(s->x, s->fd, s->runs, s->nruns, per, "the cluster edges",
                         xm_distinct_step, &d);
}

/* ---- The contraction ---- */

struct xm_cc {
    xm_sorter g;                    /* the stars */
    int sizes_fd;                   /* u64 per centre, in centre order */
    uint64_t sizes_end;
};

enum { XM_LARGE, XM_SMALL, XM_OUTPUT };

/* One streaming pass over the edges, vertex by vertex. */
typedef struct xm_pass {
    xm_run *x;
    xm_cc *cc;
    int mode;
    xm_sorter *out;                 /* large and small: the rewired edges */
    int started;
    uint64_t cur, m;                /* the vertex, min(it, its neighbours) */
    uint64_t nsmall, nlarge;        /* its neighbours below and above it */
    uint64_t size;                  /* large: its members with repeats, if a centre */
    int star;                       /* large: every vertex so far is a centre or a leaf */
    uint64_t centres;
    uint64_t sizes[512];            /* large: buffered for the sizes file; output: read */
    size_t nsizes, sizepos;
    uint64_t sizes_off;             /* output: next byte of the sizes file to read */
    uint64_t done;                  /* records read, for the bar */
    int (*fn)(void *ctx, int what, uint64_t v);
    void *ctx;
    int in_centre;                  /* output: cur is a centre being written */
} xm_pass;

static uint64_t xm_cc_count(const xm_run *x, uint64_t v)
{
    return x->unique ? 1 : xm_count(x, v);
}

static int xm_cc_put(xm_pass *p, uint64_t v)
{
    for (uint64_t c = xm_cc_count(p->x, v); c > 0; c--)
        if (p->fn(p->ctx, XM_CC_VALUE, v) != 0)
            return -1;
    return 0;
}

static int xm_sizes_flush(xm_pass *p)
{
    int rc = xm_append(p->x, p->cc->sizes_fd, &p->cc->sizes_end, p->sizes,
                       p->nsizes * sizeof(p->sizes[0]), NULL);
    p->nsizes = 0;
    return rc;
}

/* The size of the next centre (output mode), read from the sizes file in step. */
static int xm_sizes_next(xm_pass *p, uint64_t *size)
{
    if (p->sizepos == p->nsizes) {
        uint64_t left = (p->cc->sizes_end - p->sizes_off) / sizeof(p->sizes[0]);
        size_t k = left > 512 ? 512 : (size_t)left;
        if (k == 0) {
            xm_errf(p->x, "internal error: the cluster sizes ran out");
            return -1;
        }
        if (xm_pread(p->x, p->cc->sizes_fd, p->sizes, k * sizeof(p->sizes[0]), p->sizes_off) != 0)
            return -1;
        p->sizes_off += k * sizeof(p->sizes[0]);
        p->nsizes = k;
        p->sizepos = 0;
    }
    *size = p->sizes[p->sizepos++];
    return 0;
}

/* The end of vertex p->cur. Returns 0 or -1. */
static int xm_pass_vertex_end(xm_pass *p)
{
    if (p->mode == XM_OUTPUT) {
        if (p->in_centre) {
            p->in_centre = 0;
            return p->fn(p->ctx, XM_CC_END, 0);
        }
        return 0;
    }
    if (p->nsmall == 0 && p->nlarge == 0 && xm_srt_push(p->out, p->cur, p->cur) != 0)
        return -1;     /* a repeated value alone: kept as (v, v) */
    if (p->mode == XM_SMALL)
        return p->nsmall > 0 ? xm_srt_edge(p->out, p->cur, p->m) : 0;
    if (!(p->nsmall == 0 || (p->nsmall == 1 && p->nlarge == 0)))
        p->star = 0;
    if (p->star && p->nsmall == 0) {
        p->centres++;
        p->sizes[p->nsizes++] = p->size;
        if (p->nsizes == sizeof(p->sizes) / sizeof(p->sizes[0]) && xm_sizes_flush(p) != 0)
            return -1;
    }
    return 0;
}

static int xm_pass_record(void *ctx, uint64_t a, uint64_t b)
{
    xm_pass *p = ctx;
    if (!p->started || a != p->cur) {
        if (p->started && xm_pass_vertex_end(p) != 0)
            return -1;
        p->started = 1;
        p->cur = a;
        p->m = a < b ? a : b;       /* neighbours come ascending */
        p->nsmall = p->nlarge = 0;
        if (p->mode == XM_LARGE)
            p->size = xm_cc_count(p->x, a);
        if (p->mode == XM_OUTPUT && b >= a) {   /* no smaller neighbour: a centre */
            uint64_t size;
            if (xm_sizes_next(p, &size) != 0 || p->fn(p->ctx, XM_CC_BEGIN, size) != 0 ||
                xm_cc_put(p, a) != 0)
                return -1;
            p->in_centre = 1;
        }
    }
    if ((++p->done & 0xffff) == 0)
        cli_progress_update(&p->x->progress, (size_t)p->done);
    if (b == a)
        return 0;
    if (b < a) {
        p->nsmall++;
        if (p->mode == XM_SMALL && b != p->m)
            return xm_srt_edge(p->out, b, p->m);
        return 0;
    }
    p->nlarge++;
    if (p->mode == XM_LARGE) {
        p->size += xm_cc_count(p->x, b);
        return xm_srt_edge(p->out, b, p->m);
    }
    if (p->mode == XM_OUTPUT && p->in_centre)
        return xm_cc_put(p, b);
    return 0;
}

/* Run one pass of mode over g into out (NULL for output). Returns 0, or -1. */
static int xm_pass_run(xm_run *x, xm_cc *cc, int mode, xm_sorter *g, xm_sorter *out,
                       xm_pass *p)
{
    p->x = x;
    p->cc = cc;
    p->mode = mode;
    p->out = out;
    p->star = 1;
    cli_progress_init(&x->progress, x->phase, (size_t)g->total);
    if (xm_srt_each(g, xm_pass_record, p) != 0)
        return -1;
    if (p->started && xm_pass_vertex_end(p) != 0)
        return -1;
    if (mode == XM_LARGE && p->nsizes > 0 && xm_sizes_flush(p) != 0)
        return -1;
    cli_progress_end(&x->progress);
    return out ? xm_srt_finish(out) : 0;
}

static int xm_cc_load_pair(void *ctx, const match_pair *p)
{
    xm_sorter *g = ctx;
    return p->a == p->b ? xm_srt_push(g, p->a, p->a) : xm_srt_edge(g, p->a, p->b);
}

void xm_cc_free(xm_cc *c)
{
    if (c == NULL)
        return;
    xm_srt_free(&c->g);
    if (c->sizes_fd >= 0)
        close(c->sizes_fd);
    free(c);
}

static double xm_cc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int xm_cc_build(xm_run *x, xm_cc **out)
{
    double t0 = xm_cc_now();
    *out = NULL;
    xm_cc *cc = calloc(1, sizeof(*cc));
    if (cc == NULL) {
        xm_errf(x, "out of memory");
        return -1;
    }
    cc->sizes_fd = -1;
    xm_srt_init(&cc->g, x);
    xm_sorter next;
    xm_srt_init(&next, x);
    snprintf(x->phase, sizeof(x->phase), "clusters: loading pairs");
    cli_progress_init(&x->progress, x->phase, 0);
    if (xm_each_pair(x, xm_cc_load_pair, &cc->g) != 0 || xm_srt_finish(&cc->g) != 0)
        goto fail;
    cli_progress_end(&x->progress);
    /* the pairs kept in memory are not needed any more */
    free(x->mem);
    x->mem = NULL;
    x->nmem = x->memcap = 0;
    if ((cc->sizes_fd = xm_tmpfile(x, "sizes")) < 0)
        goto fail;
    for (unsigned round = 1;; round++) {
        if (round > XM_CC_MAX_ROUNDS) {
            xm_errf(x, "internal error: clusters did not converge in %d rounds",
                    XM_CC_MAX_ROUNDS);
            goto fail;
        }
        xm_pass lp;
        memset(&lp, 0, sizeof(lp));
        cc->sizes_end = 0;
        if (ftruncate(cc->sizes_fd, 0) != 0) {
            xm_errf(x, "cannot truncate a temporary file");
            goto fail;
        }
        snprintf(x->phase, sizeof(x->phase), "clusters: round %u large", round);
        if (xm_pass_run(x, cc, XM_LARGE, &cc->g, &next, &lp) != 0)
            goto fail;
        if (lp.star) {              /* g is stars already: next is the same graph */
            x->st.clusters = lp.centres;
            x->st.cc_rounds = round;
            x->st.secs_clusters = xm_cc_now() - t0;
            xm_srt_free(&next);
            *out = cc;
            return 0;
        }
        xm_srt_free(&cc->g);
        cc->g = next;
        xm_srt_init(&next, x);
        xm_pass sp;
        memset(&sp, 0, sizeof(sp));
        snprintf(x->phase, sizeof(x->phase), "clusters: round %u small", round);
        if (xm_pass_run(x, cc, XM_SMALL, &cc->g, &next, &sp) != 0)
            goto fail;
        xm_srt_free(&cc->g);
        cc->g = next;
        xm_srt_init(&next, x);
    }
fail:
    cli_progress_end(&x->progress);
    xm_srt_free(&next);
    xm_cc_free(cc);
    return -1;
}

int xm_cc_each(xm_run *x, xm_cc *c, int (*fn)(void *ctx, int what, uint64_t v), void *ctx)
{
    xm_pass p;
    memset(&p, 0, sizeof(p));
    p.fn = fn;
    p.ctx = ctx;
    snprintf(x->phase, sizeof(x->phase), "clusters: writing");
    return xm_pass_run(x, c, XM_OUTPUT, &c->g, NULL, &p);
}
