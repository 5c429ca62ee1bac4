/* match.c: exact batch matching over the permutation tables: every pair of hashes
 * within k bits (match_find_all) and the connected components of that match graph
 * (match_find_clusters). Tables are spread over threads; each table is one scatter of
 * the values by the top bits of their permuted value, then per bucket, while it is in
 * cache, the values are grouped by prefix with a small hash table and compared within
 * groups. */
#include "match.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hamming.h"
#include "match_sort.h"
#include "perm.h"

#define MATCH_TOP_MAX 16                    /* most top bits a table scatters by */

/* ---- Shared state and per-thread workers ---- */

typedef struct match_ctx {
    const perm_set *ps;
    const uint64_t *uniq;     /* sorted distinct input values */
    size_t nu;
    unsigned known;           /* top bits of the permuted value all values share (a
                                 partition of an out-of-memory run; 0: none) */
    unsigned next_table;      /* next table to take (atomic) */
    int failed;               /* set on out of memory (atomic) */
} match_ctx;

typedef struct match_worker {
    match_ctx *ctx;
    uint64_t *buf;            /* nu values, by bucket of the current table */
    uint64_t *slots;          /* hash table of a bucket: (epoch << 32) | index */
    size_t nslots;            /* a power of two */
    uint32_t *next;           /* per bucket entry: previous entry with its prefix */
    size_t next_cap;
    uint64_t epoch;           /* slots of older epochs count as empty */
    size_t *start;            /* 2^MATCH_TOP_MAX + 1 bucket positions */
    match_pair *pairs;
    size_t npairs, cap;
} match_worker;

/* One table's permutation as (mask, rotation) per block: a block moves from bit src
 * to bit dst, which is a left rotation by (dst - src) mod 64 of its masked bits. */
typedef struct match_perm {
    unsigned m;
    uint64_t mask[64];
    unsigned rot[64];
} match_perm;

static void match_perm_load(match_perm *mp, const perm_table *t)
{
    mp->m = t->nblocks;
    for (unsigned p = 0; p < t->nblocks; p++) {
        unsigned b = t->order[p];
        mp->mask[p] = t->width_mask[b] << t->src_shift[b];
        mp->rot[p] = (unsigned)(t->dst_shift[b] - t->src_shift[b]) & 63;
    }
}

static inline uint64_t match_rotl(uint64_t x, unsigned r)
{
    return (x << r) | (x >> ((64 - r) & 63));
}

/* The first q blocks of the permuted value of x (q = m would give perm_apply). */
static inline uint64_t match_perm_apply_n(const match_perm *mp, unsigned q, uint64_t x)
{
    uint64_t out = 0;
    for (unsigned p = 0; p < q; p++)
        out |= match_rotl(x & mp->mask[p], mp->rot[p]);
    return out;
}

/* Append a pair. Returns 0, or -1 out of memory. */
static int match_push(match_pair **pairs, size_t *np, size_t *cap, uint64_t a, uint64_t b)
{
    if (*np == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        match_pair *p = realloc(*pairs, nc * sizeof *p);
        if (!p)
            return -1;
        *pairs = p;
        *cap = nc;
    }
    (*pairs)[(*np)++] = (match_pair){a < b ? a : b, a < b ? b : a};
    return 0;
}

/* ---- One table ---- */

/* Keep the pair (x, y) of table t if it is within distance and t is its canonical
 * table. Returns 0, or -1 out of memory. */
static inline int match_check(match_worker *w, unsigned t, uint64_t x, uint64_t y)
{
    const perm_set *ps = w->ctx->ps;
    if (ham_dist(x, y) > ps->distance || perm_first_table(ps, x, y) != (int)t)
        return 0;
    return match_push(&w->pairs, &w->npairs, &w->cap, x, y);
}

/* Every pair of v[0..n) that table t reports: within distance, and t its canonical
 * table (which implies sharing t's prefix, so v may hold several prefixes).
 * Returns 0, or -1 out of memory. */
static int match_all_pairs(match_worker *w, unsigned t, const uint64_t *v, size_t n)
{
    for (size_t a = 0; a < n; a++)
        for (size_t b = a + 1; b < n; b++)
            if (match_check(w, t, v[a], v[b]) < 0)
                return -1;
    return 0;
}

#define MATCH_NONE UINT32_MAX

/* The pairs of v[0..n) (one bucket of unpermuted values, n < 2^32) that share their
 * prefix in table t, i.e. agree on the bits lead_mask of the leading blocks: values are
 * grouped with a hash table keyed by those bits, and each value is compared with the
 * earlier values of its group. Returns 0, or -1 out of memory. */
static int match_group(match_worker *w, unsigned t, uint64_t lead_mask, const uint64_t *v,
                       size_t n)
{
    unsigned tb = (unsigned)__builtin_ctzll((unsigned long long)w->nslots);
    size_t smask = w->nslots - 1;
    uint64_t *slots = w->slots;
    uint32_t *next = w->next;
    if (++w->epoch >= ((uint64_t)1 << 32)) {
        memset(slots, 0, w->nslots * sizeof *slots);
        w->epoch = 1;
    }
    uint64_t ep = w->epoch << 32;
    for (size_t i = 0; i < n; i++) {
        uint64_t key = v[i] & lead_mask, f = key ^ (key >> 32);
        size_t h = (size_t)((f * 0x9e3779b97f4a7c15ULL) >> (64 - tb));
        for (;;) {
            uint64_t s = slots[h];
            if ((s & ~0xffffffffULL) != ep) {
                next[i] = MATCH_NONE;
                break;
            }
            uint32_t j = (uint32_t)s;
            if ((v[j] & lead_mask) == key) {
                for (uint32_t x = j; x != MATCH_NONE; x = next[x])
                    if (match_check(w, t, v[x], v[i]) < 0)
                        return -1;
                next[i] = j;
                break;
            }
            h = (h + 1) & smask;
        }
        slots[h] = ep | i;
    }
    return 0;
}

/* Make the hash table hold at least 2 * n entries and next[] n. Returns 0, or -1 out
 * of memory. */
static int match_reserve(match_worker *w, size_t n)
{
    size_t want = 16;
    while (want < 2 * n)
        want *= 2;
    if (want > w->nslots) {
        uint64_t *s = calloc(want, sizeof *s);
        if (!s)
            return -1;
        free(w->slots);
        w->slots = s;
        w->nslots = want;
        w->epoch = 0;
    }
    if (n > w->next_cap) {
        uint32_t *nx = realloc(w->next, n * sizeof *nx);
        if (!nx)
            return -1;
        w->next = nx;
        w->next_cap = n;
    }
    return 0;
}

/* Pairs of table t when its leading blocks include the top lead_top bits of the
 * (sorted) input: runs of equal top bits are buckets without any scatter; a run is one
 * group when those bits are the whole prefix. Returns 0, or -1 out of memory. */
static int match_sorted_runs(match_worker *w, unsigned t, unsigned lead_top, uint64_t lead_mask)
{
    const uint64_t *v = w->ctx->uniq;
    size_t n = w->ctx->nu;
    if (lead_top >= 64) /* every block leads (distance 0): distinct values never match */
        return 0;
    unsigned sh = 64 - lead_top;
    int whole = lead_top == w->ctx->ps->tables[t].prefix_bits;
    for (size_t i = 0; i + 1 < n;) {
        uint64_t key = v[i] >> sh;
        if ((v[i + 1] >> sh) != key) {
            i++;
            continue;
        }
        size_t j = i + 2;
        while (j < n && (v[j] >> sh) == key)
            j++;
        size_t cnt = j - i;
        int rc;
        if (whole || cnt <= 16) {
            rc = match_all_pairs(w, t, v + i, cnt);
        } else {
            if (cnt >= MATCH_NONE || match_reserve(w, cnt) < 0)
                return -1;
            rc = match_group(w, t, lead_mask, v + i, cnt);
        }
        if (rc < 0)
            return -1;
        i = j;
    }
    return 0;
}

/* Table t: scatter the distinct values by the top bits of their permuted value (only
 * the first blocks of the permutation are needed for that), then find the pairs in
 * each bucket while it is in cache. Values stay unpermuted: sharing the prefix means
 * agreeing on the leading blocks, and the distance is the same either way.
 * Returns 0, or -1 out of memory. */
static int match_table(match_worker *w, unsigned t)
{
    const match_ctx *ctx = w->ctx;
    const perm_set *ps = ctx->ps;
    const perm_table *pt = &ps->tables[t];
    const uint64_t *in = ctx->uniq;
    size_t n = ctx->nu;
    match_perm mp;
    match_perm_load(&mp, pt);
    uint64_t lead_mask = 0;
    for (unsigned b = 0; b < ps->blocks; b++)
        if (pt->lead_blocks >> b & 1)
            lead_mask |= ps->block_mask[b];
    /* Tables that lead with the highest block: the input is sorted, so its runs of
     * equal top bits are already buckets. */
    unsigned lead_top = 0;
    for (unsigned b = ps->blocks; b-- > 0 && (pt->lead_blocks >> b & 1);)
        lead_top += (unsigned)__builtin_popcountll(ps->block_mask[b]);
    if (lead_top > 0)
        return match_sorted_runs(w, t, lead_top, lead_mask);
    /* A prefix of at most 16 bits (and no more buckets than values) is the bucket
     * itself: the buckets are the groups and need no hashing. */
    unsigned pb = pt->prefix_bits, known = ctx->known, top = known + match_top_bits(n);
    if (top > pb || (pb - known <= MATCH_TOP_MAX && ((size_t)1 << (pb - known)) <= n))
        top = pb;
    unsigned sh = 64 - top, q = 0;
    uint64_t bmask = ((uint64_t)1 << (top - known)) - 1;  /* top - known <= MATCH_TOP_MAX */
    for (unsigned covered = 0; covered < top; q++)
        covered += (unsigned)__builtin_popcountll(mp.mask[q]);
    size_t nb = (size_t)1 << (top - known), *start = w->start;
    memset(start, 0, (nb + 1) * sizeof *start);
    for (size_t i = 0; i < n; i++)
        start[((match_perm_apply_n(&mp, q, in[i]) >> sh) & bmask) + 1]++;
    size_t biggest = 0;
    for (size_t d = 0; d < nb; d++) {
        if (start[d + 1] > biggest)
            biggest = start[d + 1];
        start[d + 1] += start[d];
    }
    /* Buckets of one prefix (pb == top) need no grouping. Entries of a bucket are
     * 32-bit indexes: more than 4 billion values in one bucket count as out of memory. */
    int hashing = pb > top;
    if (hashing && (biggest >= MATCH_NONE || match_reserve(w, biggest) < 0))
        return -1;
    uint64_t *buf = w->buf;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = in[i];
        buf[start[(match_perm_apply_n(&mp, q, x) >> sh) & bmask]++] = x;
    }
    /* start[d] is now the end of bucket d */
    size_t from = 0;
    for (size_t d = 0; d < nb; d++) {
        size_t cnt = start[d] - from;
        if (cnt >= 2) {
            int rc = hashing ? match_group(w, t, lead_mask, buf + from, cnt)
                             : match_all_pairs(w, t, buf + from, cnt);
            if (rc < 0)
                return -1;
        }
        from = start[d];
    }
    return 0;
}

/* Thread body: take tables until none is left or another worker failed. */
static void *match_worker_run(void *arg)
{
    match_worker *w = arg;
    match_ctx *ctx = w->ctx;
    for (;;) {
        if (__atomic_load_n(&ctx->failed, __ATOMIC_RELAXED))
            break;
        unsigned t = __atomic_fetch_add(&ctx->next_table, 1, __ATOMIC_RELAXED);
        if (t >= ctx->ps->ntables)
            break;
        if (match_table(w, t) < 0) {
            __atomic_store_n(&ctx->failed, 1, __ATOMIC_RELAXED);
            break;
        }
    }
    return NULL;
}

int match_table_pairs(const perm_set *ps, unsigned t, const uint64_t *uniq, size_t nu,
                      unsigned known, match_pair **pairs, size_t *npairs, size_t *cap)
{
    if (nu < 2)
        return 0;
    match_ctx ctx = {.ps = ps, .uniq = uniq, .nu = nu, .known = known};
    match_worker w = {.ctx = &ctx, .pairs = *pairs, .npairs = *npairs, .cap = *cap};
    w.buf = malloc(nu * sizeof(uint64_t));
    w.start = malloc((((size_t)1 << MATCH_TOP_MAX) + 1) * sizeof(size_t));
    int rc = -1;
    if (w.buf && w.start)
        rc = match_table(&w, t);
    free(w.buf);
    free(w.start);
    free(w.slots);
    free(w.next);
    *pairs = w.pairs;
    *npairs = w.npairs;
    *cap = w.cap;
    return rc;
}

/* ---- Driver shared by find_all and find_clusters ---- */

static void match_err(char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        snprintf(err, errlen, "%s", msg);
}

/* Number of threads to use for ntables tables and nu values. */
static unsigned match_threads(unsigned threads, unsigned ntables, size_t nu)
{
    if (threads == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        threads = c > 0 ? (unsigned)c : 1;
    }
    if (threads > 64)
        threads = 64;
    if (threads > ntables)
        threads = ntables;
    if (nu < 4096) /* thread start-up costs more than the work */
        threads = 1;
    return threads ? threads : 1;
}

/* Sorted copy of the input with repeats collapsed: *uniq (nu values). When counts is
 * not NULL, *counts[i] = occurrences of uniq[i]. When dups is not NULL, (v, v) is
 * appended to *dups for every value given two or more times.
 * Returns 0, or -1 out of memory (nothing allocated). */
static int match_unique(const uint64_t *hashes, size_t n, unsigned threads, uint64_t **uniq,
                        size_t *nu, size_t **counts, match_pair **dups, size_t *ndups,
                        size_t *dcap)
{
    uint64_t *v = malloc((n ? n : 1) * sizeof *v);
    size_t *cnt = counts ? malloc((n ? n : 1) * sizeof *cnt) : NULL;
    if (!v || (counts && !cnt))
        goto oom;
    if (match_sort_u64(hashes, v, n, threads) < 0)
        goto oom;
    size_t u = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && v[j] == v[i])
            j++;
        if (j - i >= 2 && dups && match_push(dups, ndups, dcap, v[i], v[i]) < 0)
            goto oom;
        if (cnt)
            cnt[u] = j - i;
        v[u++] = v[i];
        i = j;
    }
    uint64_t *shrunk = realloc(v, (u ? u : 1) * sizeof *v);
    *uniq = shrunk ? shrunk : v;
    *nu = u;
    if (counts) {
        size_t *cs = realloc(cnt, (u ? u : 1) * sizeof *cnt);
        *counts = cs ? cs : cnt;
    }
    return 0;
oom:
    free(v);
    free(cnt);
    return -1;
}

/* Run every table over uniq[0..nu) and append the pairs of distinct values to
 * *pairs (unsorted). Returns 0, or -1 out of memory. */
static int match_run(const perm_set *ps, const uint64_t *uniq, size_t nu, unsigned threads,
                     match_pair **pairs, size_t *npairs, size_t *cap)
{
    if (nu < 2)
        return 0;
    match_ctx ctx = {.ps = ps, .uniq = uniq, .nu = nu};
    unsigned nt = match_threads(threads, ps->ntables, nu);
    match_worker *ws = calloc(nt, sizeof *ws);
    pthread_t *tids = calloc(nt, sizeof *tids);
    unsigned started = 0, ready = 0;
    int rc = -1;
    if (!ws || !tids)
        goto done;
    for (; ready < nt; ready++) {
        match_worker *w = &ws[ready];
        w->ctx = &ctx;
        w->buf = malloc(nu * sizeof(uint64_t));
        w->start = malloc((((size_t)1 << MATCH_TOP_MAX) + 1) * sizeof(size_t));
        if (!w->buf || !w->start) {
            free(w->buf);
            free(w->start);
            break;
        }
    }
    if (ready == 0)
        goto done;
    /* Worker 0 runs in this thread; a thread that cannot start just leaves its
     * tables to the others. */
    for (unsigned i = 1; i < ready; i++) {
        if (pthread_create(&tids[i], NULL, match_worker_run, &ws[i]) != 0)
            break;
        started = i;
    }
    match_worker_run(&ws[0]);
    for (unsigned i = 1; i <= started; i++)
        pthread_join(tids[i], NULL);
    if (ctx.failed)
        goto done;
    rc = 0;
    for (unsigned i = 0; i < ready && rc == 0; i++)
        for (size_t j = 0; j < ws[i].npairs; j++)
            if (match_push(pairs, npairs, cap, ws[i].pairs[j].a, ws[i].pairs[j].b) < 0) {
                rc = -1;
                break;
            }
done:
    for (unsigned i = 0; ws && i < ready; i++) {
        free(ws[i].buf);
        free(ws[i].slots);
        free(ws[i].next);
        free(ws[i].start);
        free(ws[i].pairs);
    }
    free(ws);
    free(tids);
    return rc;
}

int match_find_all(const uint64_t *hashes, size_t n, unsigned blocks, unsigned distance,
                   unsigned threads, match_pair **pairs, size_t *npairs,
                   char *err, size_t errlen)
{
    *pairs = NULL;
    *npairs = 0;
    perm_set ps;
    if (perm_set_init(&ps, blocks, distance, err, errlen) < 0)
        return -1;
    uint64_t *uniq = NULL;
    size_t nu = 0, np = 0, cap = 0;
    match_pair *out = NULL, *tmp = NULL;
    unsigned sort_threads = match_threads(threads, 64, n);
    if (match_unique(hashes, n, sort_threads, &uniq, &nu, NULL, &out, &np, &cap) < 0)
        goto oom;
    if (match_run(&ps, uniq, nu, threads, &out, &np, &cap) < 0)
        goto oom;
    free(uniq);
    uniq = NULL;
    if (np > 1) {
        tmp = malloc(np * sizeof *tmp);
        if (!tmp || match_sort_pairs(out, tmp, np) < 0)
            goto oom;
        free(tmp);
    }
    perm_set_free(&ps);
    *pairs = out;
    *npairs = np;
    return 0;
oom:
    free(uniq);
    free(out);
    free(tmp);
    perm_set_free(&ps);
    match_err(err, errlen, "out of memory");
    return -1;
}

/* ---- Clusters ---- */

/* Root of i with path halving. */
static size_t match_uf_find(size_t *parent, size_t i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

/* Index of v in the sorted array u[0..n) (v is known to be present). */
static size_t match_index(const uint64_t *u, size_t n, uint64_t v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (u[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int match_find_clusters(const uint64_t *hashes, size_t n, unsigned blocks, unsigned distance,
                        unsigned threads, uint64_t **values, size_t **offsets,
                        size_t *nclusters, char *err, size_t errlen)
{
    *values = NULL;
    *offsets = NULL;
    *nclusters = 0;
    perm_set ps;
    if (perm_set_init(&ps, blocks, distance, err, errlen) < 0)
        return -1;
    uint64_t *uniq = NULL, *vals = NULL;
    size_t nu = 0, np = 0, cap = 0, *counts = NULL, *parent = NULL, *cid = NULL, *offs = NULL;
    match_pair *pairs = NULL;
    unsigned sort_threads = match_threads(threads, 64, n);
    if (match_unique(hashes, n, sort_threads, &uniq, &nu, &counts, NULL, NULL, NULL) < 0)
        goto oom;
    if (match_run(&ps, uniq, nu, threads, &pairs, &np, &cap) < 0)
        goto oom;
    parent = malloc((nu ? nu : 1) * sizeof *parent);
    if (!parent)
        goto oom;
    for (size_t i = 0; i < nu; i++)
        parent[i] = i;
    for (size_t j = 0; j < np; j++) {
        size_t a = match_uf_find(parent, match_index(uniq, nu, pairs[j].a));
        size_t b = match_uf_find(parent, match_index(uniq, nu, pairs[j].b));
        /* the smaller index becomes the root: a root is its component's minimum */
        if (a < b)
            parent[b] = a;
        else if (b < a)
            parent[a] = b;
    }
    free(pairs);
    pairs = NULL;
    /* Lines per component, accumulated on the root (roots are minima, so a root is
     * seen before the rest of its component when walking upwards). */
    cid = malloc((nu ? nu : 1) * sizeof *cid);
    if (!cid)
        goto oom;
    for (size_t i = 0; i < nu; i++)
        cid[i] = 0;
    for (size_t i = 0; i < nu; i++)
        cid[match_uf_find(parent, i)] += counts[i];
    /* Cluster ids in order of their minimum value; cid[root] becomes the id + 1. */
    size_t nc = 0, total = 0;
    for (size_t i = 0; i < nu; i++) {
        if (parent[i] != i)
            continue;
        if (cid[i] >= 2) {
            total += cid[i];
            cid[i] = ++nc;
        } else {
            cid[i] = 0;
        }
    }
    offs = calloc(nc + 1, sizeof *offs);
    vals = malloc((total ? total : 1) * sizeof *vals);
    if (!offs || !vals)
        goto oom;
    for (size_t i = 0; i < nu; i++) {
        size_t c = cid[match_uf_find(parent, i)];
        if (c)
            offs[c] += counts[i];
    }
    for (size_t c = 1; c <= nc; c++)
        offs[c] += offs[c - 1];
    /* Fill: walking values ascending keeps each cluster sorted. offs[c-1] is used as
     * the write position of cluster c and ends at its end, i.e. the start of c+1. */
    for (size_t i = 0; i < nu; i++) {
        size_t c = cid[match_uf_find(parent, i)];
        for (size_t r = 0; c && r < counts[i]; r++)
            vals[offs[c - 1]++] = uniq[i];
    }
    for (size_t c = nc; c > 0; c--)
        offs[c] = offs[c - 1];
    offs[0] = 0;
    free(uniq);
    free(counts);
    free(parent);
    free(cid);
    perm_set_free(&ps);
    *values = vals;
    *offsets = offs;
    *nclusters = nc;
    return 0;
oom:
    free(uniq);
    free(counts);
    free(parent);
    free(cid);
    free(offs);
    free(vals);
    free(pairs);
    perm_set_free(&ps);
    match_err(err, errlen, "out of memory");
    return -1;
}
