/* corpus.c: an in-memory corpus of fingerprints with exact near-duplicate lookup.
 * Every table keeps the permuted fingerprints in 2^bits buckets (by the top bits of the
 * permuted value), each a sorted vector; bits grows with the corpus. A query looks at
 * the prefix range of its permuted value in every table, verifies the distance with
 * popcount, and keeps a result only in the result's canonical table (perm_first_table),
 * so each result comes once without a de-duplication set. */
#include "corpus.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hamming.h"
#include "match_sort.h"
#include "perm.h"

#define CORPUS_MIN_BITS 8
#define CORPUS_MAX_BITS 20
#define CORPUS_STEP_BITS 4
#define CORPUS_GROW_AVG 64  /* grow the bucket count when buckets average this many */

typedef struct corpus_bucket {
    uint64_t *v;              /* sorted permuted values */
    uint32_t n, cap;
} corpus_bucket;

struct corpus {
    perm_set ps;
    size_t size;
    unsigned bits;            /* index bits of a table's hash (2^bits slots), the same for every table */
    corpus_bucket **tab;      /* tab[t][bucket] */
    long fail_after;          /* allocations left before failing; < 0 = never fail */
};

/* ---- Allocation (with the test hook) ---- */

/* realloc, or NULL when the test hook says this allocation fails. */
static void *corpus_realloc(corpus *c, void *p, size_t size)
{
    if (c->fail_after == 0)
        return NULL;
    if (c->fail_after > 0)
        c->fail_after--;
    return realloc(p, size);
}

void corpus_debug_fail_alloc(corpus *c, long after)
{
    c->fail_after = after;
}

/* ---- Buckets ---- */

static inline size_t corpus_bucket_of(unsigned bits, uint64_t p)
{
    return (size_t)(p >> (64 - bits));
}

/* First position in b whose value is >= x. */
static uint32_t corpus_lower(const corpus_bucket *b, uint64_t x)
{
    uint32_t lo = 0, hi = b->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (b->v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Insert p into table t (p known absent). Returns 0, or -1 out of memory. */
static int corpus_table_add(corpus *c, unsigned t, uint64_t p)
{
    corpus_bucket *b = &c->tab[t][corpus_bucket_of(c->bits, p)];
    if (b->n == b->cap) {
        uint64_t nc = b->cap ? (uint64_t)b->cap + b->cap / 2 + 2 : 4;
        if (nc > UINT32_MAX)
            return -1;
        uint64_t *v = corpus_realloc(c, b->v, (size_t)nc * sizeof *v);
        if (!v)
            return -1;
        b->v = v;
        b->cap = (uint32_t)nc;
    }
    uint32_t pos = corpus_lower(b, p);
    memmove(b->v + pos + 1, b->v + pos, (size_t)(b->n - pos) * sizeof *b->v);
    b->v[pos] = p;
    b->n++;
    return 0;
}

/* Remove p from table t. Returns 1 removed, 0 absent. */
static int corpus_table_del(corpus *c, unsigned t, uint64_t p)
{
    corpus_bucket *b = &c->tab[t][corpus_bucket_of(c->bits, p)];
    uint32_t pos = corpus_lower(b, p);
    if (pos == b->n || b->v[pos] != p)
        return 0;
    memmove(b->v + pos, b->v + pos + 1, (size_t)(b->n - pos - 1) * sizeof *b->v);
    if (--b->n == 0) {
        free(b->v);
        b->v = NULL;
        b->cap = 0;
    }
    return 1;
}

static void corpus_free_table(corpus_bucket *bk, unsigned bits)
{
    if (!bk)
        return;
    for (size_t i = 0; i < ((size_t)1 << bits); i++)
        free(bk[i].v);
    free(bk);
}

/* Split every bucket of every table into 2^CORPUS_STEP_BITS buckets when the buckets
 * grew large. All or nothing: on out of memory the corpus keeps its old buckets. */
static void corpus_maybe_grow(corpus *c)
{
    if (c->bits >= CORPUS_MAX_BITS || c->size <= ((size_t)CORPUS_GROW_AVG << c->bits))
        return;
    unsigned nb = c->bits + CORPUS_STEP_BITS, T = c->ps.ntables;
    size_t nbuckets = (size_t)1 << nb;
    corpus_bucket **fresh = corpus_realloc(c, NULL, T * sizeof *fresh);
    if (!fresh)
        return;
    memset(fresh, 0, T * sizeof *fresh);
    for (unsigned t = 0; t < T; t++) {
        fresh[t] = corpus_realloc(c, NULL, nbuckets * sizeof **fresh);
        if (!fresh[t])
            goto fail;
        memset(fresh[t], 0, nbuckets * sizeof **fresh);
        for (size_t ob = 0; ob < ((size_t)1 << c->bits); ob++) {
            const corpus_bucket *b = &c->tab[t][ob];
            /* sorted, so each new bucket's values form one run */
            for (uint32_t i = 0; i < b->n;) {
                size_t k = corpus_bucket_of(nb, b->v[i]);
                uint32_t j = i + 1;
                while (j < b->n && corpus_bucket_of(nb, b->v[j]) == k)
                    j++;
                corpus_bucket *d = &fresh[t][k];
                d->v = corpus_realloc(c, NULL, (size_t)(j - i) * sizeof *d->v);
                if (!d->v)
                    goto fail;
                memcpy(d->v, b->v + i, (size_t)(j - i) * sizeof *d->v);
                d->n = d->cap = j - i;
                i = j;
            }
        }
    }
    for (unsigned t = 0; t < T; t++) {
        corpus_free_table(c->tab[t], c->bits);
        c->tab[t] = fresh[t];
    }
    free(fresh);
    c->bits = nb;
    return;
fail:
    for (unsigned t = 0; t < T; t++)
        corpus_free_table(fresh[t], nb);
    free(fresh);
}

/* ---- Life cycle ---- */

corpus *corpus_new(unsigned blocks, unsigned distance, char *err, size_t errlen)
{
    corpus *c = calloc(1, sizeof *c);
    if (!c) {
        if (err && errlen)
            snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->fail_after = -1;
    if (perm_set_init(&c->ps, blocks, distance, err, errlen) < 0) {
        free(c);
        return NULL;
    }
    c->bits = CORPUS_MIN_BITS;
    c->tab = calloc(c->ps.ntables, sizeof *c->tab);
    for (unsigned t = 0; c->tab && t < c->ps.ntables; t++) {
        c->tab[t] = calloc((size_t)1 << c->bits, sizeof **c->tab);
        if (!c->tab[t]) {
            corpus_free(c);
            c = NULL;
            break;
        }
    }
    if (c && !c->tab) {
        corpus_free(c);
        c = NULL;
    }
    if (!c && err && errlen)
        snprintf(err, errlen, "out of memory");
    return c;
}

void corpus_free(corpus *c)
{
    if (!c)
        return;
    for (unsigned t = 0; c->tab && t < c->ps.ntables; t++)
        corpus_free_table(c->tab[t], c->bits);
    free(c->tab);
    perm_set_free(&c->ps);
    free(c);
}

size_t corpus_size(const corpus *c) { return c->size; }
unsigned corpus_blocks(const corpus *c) { return c->ps.blocks; }
unsigned corpus_distance(const corpus *c) { return c->ps.distance; }

/* ---- Updates ---- */

int corpus_contains(const corpus *c, uint64_t h)
{
    uint64_t p = perm_apply(&c->ps.tables[0], h);
    const corpus_bucket *b = &c->tab[0][corpus_bucket_of(c->bits, p)];
    uint32_t pos = corpus_lower(b, p);
    return pos < b->n && b->v[pos] == p;
}

int corpus_insert(corpus *c, uint64_t h)
{
    if (corpus_contains(c, h))
        return 0;
    for (unsigned t = 0; t < c->ps.ntables; t++) {
        if (corpus_table_add(c, t, perm_apply(&c->ps.tables[t], h)) < 0) {
            while (t-- > 0)
                corpus_table_del(c, t, perm_apply(&c->ps.tables[t], h));
            return -1;
        }
    }
    c->size++;
    corpus_maybe_grow(c);
    return 1;
}

int corpus_remove(corpus *c, uint64_t h)
{
    if (!corpus_contains(c, h))
        return 0;
    for (unsigned t = 0; t < c->ps.ntables; t++)
        corpus_table_del(c, t, perm_apply(&c->ps.tables[t], h));
    c->size--;
    return 1;
}

/* ---- Bulk updates ----
 * Large batches are sorted and merged into every table in bucket order instead of being
 * inserted one at a time: one radix sort per table, sequential memory access, tables
 * split over the machine's cores (one thread while the test hook counts allocations).
 * Small batches take the one-at-a-time path. */

#define CORPUS_BULK_MIN 256

/* The values of hs[0..n) as table t permutes them, sorted ascending and distinct, in a
 * malloc'ed array (*out, *m entries). Returns 0 or -1 (out of memory). */
static int corpus_sorted_perm(const corpus *c, unsigned t, const uint64_t *hs, size_t n,
                              uint64_t **out, size_t *m)
{
    uint64_t *p = malloc(n * sizeof(*p)), *sorted = malloc(n * sizeof(*sorted));
    if (!p || !sorted || !n) {
        free(p);
        free(sorted);
        *out = NULL;
        *m = 0;
        return n ? -1 : 0;
    }
    for (size_t i = 0; i < n; i++)
        p[i] = perm_apply(&c->ps.tables[t], hs[i]);
    if (match_sort_u64(p, sorted, n, 1) < 0) {
        free(p);
        free(sorted);
        return -1;
    }
    free(p);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || sorted[i] != sorted[k - 1])
            sorted[k++] = sorted[i];
    *out = sorted;
    *m = k;
    return 0;
}

/* Keep in p[0..*m) (sorted permuted values of table 0) those whose presence in table
 * 0 is `want`, in place; a merge with the buckets in order. */
static void corpus_filter_present(const corpus *c, uint64_t *p, size_t *m, int want)
{
    size_t k = 0;
    for (size_t i = 0; i < *m;) {
        size_t bi = corpus_bucket_of(c->bits, p[i]);
        const corpus_bucket *b = &c->tab[0][bi];
        uint32_t pos = 0;
        for (; i < *m && corpus_bucket_of(c->bits, p[i]) == bi; i++) {
            while (pos < b->n && b->v[pos] < p[i])
                pos++;
            int present = pos < b->n && b->v[pos] == p[i];
            if (present == want)
                p[k++] = p[i];
        }
    }
    *m = k;
}

/* One table's share of a bulk update: add (or remove) the values orig[0..m) in table t.
 * Returns 0, or -1 out of memory (add only; the table then holds some of them). */
static int corpus_table_bulk(corpus *c, unsigned t, const uint64_t *orig, size_t m, int add)
{
    uint64_t *s;
    size_t k;

    if (corpus_sorted_perm(c, t, orig, m, &s, &k) < 0)
        return -1;
    for (size_t i = 0; i < k;) {
        size_t bi = corpus_bucket_of(c->bits, s[i]), j = i;
        while (j < k && corpus_bucket_of(c->bits, s[j]) == bi)
            j++;
        corpus_bucket *b = &c->tab[t][bi];
        size_t r = j - i;
        if (add) {
            if ((uint64_t)b->n + r > UINT32_MAX) {
                free(s);
                return -1;
            }
            if (b->n + r > b->cap) {
                uint64_t nc = (uint64_t)b->n + r + (b->n + r) / 2;
                if (nc > UINT32_MAX)
                    nc = UINT32_MAX;
                uint64_t *v = corpus_realloc(c, b->v, (size_t)nc * sizeof(*v));
                if (!v) {
                    free(s);
                    return -1;
                }
                b->v = v;
                b->cap = (uint32_t)nc;
            }
            /* merge from the back: both runs are sorted, the new values are absent */
            size_t x = b->n, y = r, w = b->n + r;
            while (y > 0) {
                if (x > 0 && b->v[x - 1] > s[i + y - 1])
                    b->v[--w] = b->v[--x];
                else
                    b->v[--w] = s[i + --y];
            }
            b->n += (uint32_t)r;
        } else {
            uint32_t w = 0;
            size_t y = i;
            for (uint32_t x = 0; x < b->n; x++) {
                while (y < j && s[y] < b->v[x])
                    y++;
                if (y < j && s[y] == b->v[x])
                    continue;
                b->v[w++] = b->v[x];
            }
            b->n = w;
            if (w == 0) {
                free(b->v);
                b->v = NULL;
                b->cap = 0;
            }
        }
        i = j;
    }
    free(s);
    return 0;
}

typedef struct corpus_bulk_job {
    corpus *c;
    const uint64_t *orig;
    size_t m;
    int add;
    unsigned first, step;     /* tables first, first + step, ... */
    int failed;
} corpus_bulk_job;

static void *corpus_bulk_run(void *arg)
{
    corpus_bulk_job *j = arg;
    for (unsigned t = j->first; t < j->c->ps.ntables; t += j->step)
        if (corpus_table_bulk(j->c, t, j->orig, j->m, j->add) < 0)
            j->failed = 1;
    return NULL;
}

/* Add or remove orig[0..m) (distinct; absent when adding, present when removing) in
 * every table, the tables split over the cores (one thread under the test hook).
 * Returns 0, or -1 out of memory (tables partly updated). */
static int corpus_bulk_tables(corpus *c, const uint64_t *orig, size_t m, int add)
{
    corpus_bulk_job jobs[16];
    pthread_t tid[16];
    int started[16] = {0};
    long cpus = c->fail_after >= 0 ? 1 : sysconf(_SC_NPROCESSORS_ONLN);
    unsigned nt = cpus < 1 ? 1 : cpus > 16 ? 16 : (unsigned)cpus, failed = 0;

    if (nt > c->ps.ntables)
        nt = c->ps.ntables;
    for (unsigned i = 0; i < nt; i++) {
        jobs[i] = (corpus_bulk_job){ c, orig, m, add, i, nt, 0 };
        if (i > 0)
            started[i] = pthread_create(&tid[i], NULL, corpus_bulk_run, &jobs[i]) == 0;
    }
    for (unsigned i = 0; i < nt; i++)
        if (!started[i])
            corpus_bulk_run(&jobs[i]);
    for (unsigned i = 0; i < nt; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        failed |= (unsigned)jobs[i].failed;
    }
    return failed ? -1 : 0;
}

/* The distinct values of hs[0..n) that are (want 1) or are not (want 0) in the corpus,
 * unpermuted, in a malloc'ed array. Returns 0 or -1 (out of memory). */
static int corpus_bulk_select(const corpus *c, const uint64_t *hs, size_t n, int want,
                              uint64_t **orig, size_t *m)
{
    if (corpus_sorted_perm(c, 0, hs, n, orig, m) < 0)
        return -1;
    corpus_filter_present(c, *orig, m, want);
    for (size_t i = 0; i < *m; i++)
        (*orig)[i] = perm_revert(&c->ps.tables[0], (*orig)[i]);
    return 0;
}

/* Grow the buckets ahead of a bulk insert of `more` values (what corpus_insert does
 * one value at a time), so the merge goes into buckets of the final size. */
static void corpus_grow_for(corpus *c, size_t more)
{
    size_t size = c->size;
    unsigned bits;
    c->size += more;
    do {
        bits = c->bits;
        corpus_maybe_grow(c);
    } while (c->bits != bits);
    c->size = size;
}

static long corpus_insert_each(corpus *c, const uint64_t *hs, size_t n)
{
    long added = 0;
    for (size_t i = 0; i < n; i++) {
        int r = corpus_insert(c, hs[i]);
        if (r < 0)
            return -1;
        added += r;
    }
    return added;
}

long corpus_insert_many(corpus *c, const uint64_t *hs, size_t n)
{
    uint64_t *orig;
    size_t m;

    if (n < CORPUS_BULK_MIN || corpus_bulk_select(c, hs, n, 0, &orig, &m) < 0)
        return corpus_insert_each(c, hs, n);
    corpus_grow_for(c, m);
    if (corpus_bulk_tables(c, orig, m, 1) < 0) {
        /* out of memory part way: take the values out of every table again, then
         * insert one at a time (which stops at the first value that cannot be added) */
        for (unsigned t = 0; t < c->ps.ntables; t++)
            for (size_t i = 0; i < m; i++)
                corpus_table_del(c, t, perm_apply(&c->ps.tables[t], orig[i]));
        free(orig);
        return corpus_insert_each(c, hs, n);
    }
    free(orig);
    c->size += m;
    corpus_maybe_grow(c);
    return (long)m;
}

long corpus_remove_many(corpus *c, const uint64_t *hs, size_t n)
{
    uint64_t *orig;
    size_t m;

    if (n < CORPUS_BULK_MIN || corpus_bulk_select(c, hs, n, 1, &orig, &m) < 0) {
        long removed = 0;
        for (size_t i = 0; i < n; i++)
            removed += corpus_remove(c, hs[i]);
        return removed;
    }
    corpus_bulk_tables(c, orig, m, 0);      /* removing allocates nothing: cannot fail */
    free(orig);
    c->size -= m;
    return (long)m;
}

/* ---- Queries ---- */

/* The candidates of table t for the permuted query pq: buckets [*b0, *b1] and the
 * value range [*lo, *hi] (all values sharing pq's prefix). */
static void corpus_range(const corpus *c, unsigned t, uint64_t pq, size_t *b0, size_t *b1,
                         uint64_t *lo, uint64_t *hi)
{
    uint64_t mask = c->ps.tables[t].prefix_mask;
    *lo = pq & mask;
    *hi = *lo | ~mask;
    *b0 = corpus_bucket_of(c->bits, *lo);
    *b1 = corpus_bucket_of(c->bits, *hi);
}

/* Calls visit(ctx, t, value, dist) for every stored value within d bits of q, table by
 * table, in each table's range of q's leading blocks; the same value can be visited
 * once per table it shares blocks with q in. Stops at visit's first non-zero return
 * and returns it; 0 when every value was visited. corpus_scan_table is the same for
 * table t and q's permuted value pq. static inline: each caller gets its own copy with
 * visit inlined. */
static inline int corpus_scan_table(const corpus *c, unsigned t, uint64_t pq, unsigned d,
                                    int (*visit)(void *ctx, unsigned t, uint64_t v,
                                                 unsigned dist),
                                    void *ctx)
{
    const perm_table *pt = &c->ps.tables[t];
    uint64_t lo, hi;
    size_t b0, b1;
    corpus_range(c, t, pq, &b0, &b1, &lo, &hi);
    for (size_t bi = b0; bi <= b1; bi++) {
        const corpus_bucket *b = &c->tab[t][bi];
        for (uint32_t i = corpus_lower(b, lo); i < b->n && b->v[i] <= hi; i++) {
            unsigned dist = ham_dist(b->v[i], pq);
            if (dist > d)
                continue;
            int rc = visit(ctx, t, perm_revert(pt, b->v[i]), dist);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

static inline int corpus_scan(const corpus *c, uint64_t q, unsigned d,
                              int (*visit)(void *ctx, unsigned t, uint64_t v, unsigned dist),
                              void *ctx)
{
    for (unsigned t = 0; t < c->ps.ntables; t++) {
        int rc = corpus_scan_table(c, t, perm_apply(&c->ps.tables[t], q), d, visit, ctx);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int corpus_visit_first(void *ctx, unsigned t, uint64_t v, unsigned dist)
{
    (void)t;
    (void)dist;
    *(uint64_t *)ctx = v;
    return 1;
}

int corpus_find_first(const corpus *c, uint64_t q, unsigned d, uint64_t *found)
{
    if (d > c->ps.distance)
        return -1;
    if (corpus_contains(c, q)) {
        *found = q;
        return 1;
    }
    return corpus_scan(c, q, d, corpus_visit_first, found);
}

/* A result and its distance to the query; ordered by distance, then value. */
typedef struct corpus_hit {
    unsigned dist;
    uint64_t v;
} corpus_hit;

static int corpus_hit_cmp(const void *x, const void *y)
{
    const corpus_hit *a = x, *b = y;
    if (a->dist != b->dist)
        return a->dist < b->dist ? -1 : 1;
    return a->v < b->v ? -1 : a->v > b->v;
}

/* The growing list of corpus_find_all. */
typedef struct corpus_hits {
    const corpus *c;
    uint64_t q;
    corpus_hit *v;
    size_t n, cap;
} corpus_hits;

/* Keeps v when t is the first table in which v and q share their leading blocks (so
 * every value is listed once); -1 when out of memory. */
static int corpus_visit_all(void *ctx, unsigned t, uint64_t v, unsigned dist)
{
    corpus_hits *h = ctx;
    if (perm_first_table(&h->c->ps, h->q, v) != (int)t)
        return 0;
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 16;
        corpus_hit *nv = realloc(h->v, nc * sizeof(*nv));
        if (!nv)
            return -1;
        h->v = nv;
        h->cap = nc;
    }
    h->v[h->n++] = (corpus_hit){dist, v};
    return 0;
}

long corpus_find_all(const corpus *c, uint64_t q, unsigned d, uint64_t **out)
{
    *out = NULL;
    if (d > c->ps.distance)
        return -1;
    corpus_hits h = {c, q, NULL, 0, 0};
    if (corpus_scan(c, q, d, corpus_visit_all, &h) != 0) {
        free(h.v);
        return -1;
    }
    if (h.n == 0)
        return 0;
    qsort(h.v, h.n, sizeof(*h.v), corpus_hit_cmp);
    uint64_t *res = malloc(h.n * sizeof(*res));
    if (!res) {
        free(h.v);
        return -1;
    }
    for (size_t i = 0; i < h.n; i++)
        res[i] = h.v[i].v;
    free(h.v);
    *out = res;
    return (long)h.n;
}

/* ---- Batched queries ----
 * One query at a time touches a random bucket of every table: a cache miss or two per
 * table and query. A batch visits the tables one after the other and, in each, the
 * queries in the order of their permuted values (a counting sort on the top 16 bits),
 * so consecutive queries read neighbouring buckets. Results are the same as the
 * one-at-a-time functions give. */

#define CORPUS_BATCH_MIN 64

/* The order of the queries idx[0..m) by the top 16 bits of pv[idx[i]], into out[0..m);
 * cnt has room for 65537 counters. */
static void corpus_order16(const uint64_t *pv, const uint32_t *idx, size_t m, uint32_t *out,
                           uint32_t *cnt)
{
    memset(cnt, 0, 65537 * sizeof(*cnt));
    for (size_t i = 0; i < m; i++)
        cnt[(pv[idx[i]] >> 48) + 1]++;
    for (size_t k = 1; k <= 65536; k++)
        cnt[k] += cnt[k - 1];
    for (size_t i = 0; i < m; i++)
        out[cnt[pv[idx[i]] >> 48]++] = idx[i];
}

int corpus_find_first_many(const corpus *c, const uint64_t *qs, size_t n, unsigned d,
                           uint8_t *found, uint64_t *first)
{
    if (d > c->ps.distance)
        return -1;
    uint64_t *pv = NULL;
    uint32_t *idx = NULL, *ord = NULL, *cnt = NULL;
    if (n >= CORPUS_BATCH_MIN && n <= UINT32_MAX) {
        pv = malloc(n * sizeof(*pv));
        idx = malloc(n * sizeof(*idx));
        ord = malloc(n * sizeof(*ord));
        cnt = malloc(65537 * sizeof(*cnt));
    }
    if (!pv || !idx || !ord || !cnt) {      /* small batch, or no memory for the orders */
        free(pv);
        free(idx);
        free(ord);
        free(cnt);
        for (size_t i = 0; i < n; i++) {
            uint64_t f = 0;
            found[i] = (uint8_t)corpus_find_first(c, qs[i], d, &f);
            first[i] = found[i] ? f : 0;
        }
        return 0;
    }
    size_t m = n;       /* queries not answered yet: idx[0..m) */
    for (size_t i = 0; i < n; i++) {
        idx[i] = (uint32_t)i;
        found[i] = 0;
        first[i] = 0;
    }
    for (unsigned t = 0; t < c->ps.ntables && m > 0; t++) {
        const perm_table *pt = &c->ps.tables[t];
        for (size_t i = 0; i < m; i++)
            pv[idx[i]] = perm_apply(pt, qs[idx[i]]);
        corpus_order16(pv, idx, m, ord, cnt);
        size_t k = 0;
        for (size_t i = 0; i < m; i++) {
            uint32_t q = ord[i];
            uint64_t f = 0;
            /* as corpus_find_first: the query itself before any range of table 0 */
            if (t == 0 && corpus_contains(c, qs[q]))
                f = qs[q], found[q] = 1;
            else
                found[q] = (uint8_t)corpus_scan_table(c, t, pv[q], d, corpus_visit_first, &f);
            if (found[q])
                first[q] = f;
            else
                idx[k++] = q;
        }
        m = k;
    }
    free(pv);
    free(idx);
    free(ord);
    free(cnt);
    return 0;
}

/* The hits of a batch: (query, distance, value), kept when the table visited is the
 * value's first table with the query (so each is listed once). */
typedef struct corpus_bhit {
    uint32_t q;
    uint32_t dist;
    uint64_t v;
} corpus_bhit;

typedef struct corpus_bhits {
    const corpus *c;
    const uint64_t *qs;
    uint32_t q;             /* the query being scanned */
    corpus_bhit *h;
    size_t n, cap;
} corpus_bhits;

static int corpus_visit_batch(void *ctx, unsigned t, uint64_t v, unsigned dist)
{
    corpus_bhits *b = ctx;
    if (perm_first_table(&b->c->ps, b->qs[b->q], v) != (int)t)
        return 0;
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 1024;
        corpus_bhit *nh = realloc(b->h, nc * sizeof(*nh));
        if (!nh)
            return -1;
        b->h = nh;
        b->cap = nc;
    }
    b->h[b->n++] = (corpus_bhit){ b->q, dist, v };
    return 0;
}

long corpus_find_all_many(const corpus *c, const uint64_t *qs, size_t n, unsigned d,
                          long *counts, uint64_t **out)
{
    *out = NULL;
    if (d > c->ps.distance)
        return -1;
    if (n < CORPUS_BATCH_MIN || n > UINT32_MAX) {
        /* one at a time */
        uint64_t *all = NULL;
        size_t total = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t *r = NULL;
            long k = corpus_find_all(c, qs[i], d, &r);
            if (k > 0) {
                uint64_t *na = realloc(all, (total + (size_t)k) * sizeof(*na));
                if (!na)
                    k = -1;
                else
                    all = na;
            }
            if (k < 0) {
                free(r);
                free(all);
                return -1;
            }
            if (k > 0)
                memcpy(all + total, r, (size_t)k * sizeof(*r));
            free(r);
            counts[i] = k;
            total += (size_t)k;
        }
        *out = all;
        return (long)total;
    }
    uint64_t *pv = malloc(n * sizeof(*pv));
    uint32_t *idx = malloc(n * sizeof(*idx)), *ord = malloc(n * sizeof(*ord));
    uint32_t *cnt = malloc(65537 * sizeof(*cnt));
    corpus_bhits b = { c, qs, 0, NULL, 0, 0 };
    long rc = -1;
    if (!pv || !idx || !ord || !cnt)
        goto out;
    for (size_t i = 0; i < n; i++)
        idx[i] = (uint32_t)i;
    for (unsigned t = 0; t < c->ps.ntables; t++) {
        const perm_table *pt = &c->ps.tables[t];
        for (size_t i = 0; i < n; i++)
            pv[i] = perm_apply(pt, qs[i]);
        corpus_order16(pv, idx, n, ord, cnt);
        for (size_t i = 0; i < n; i++) {
            b.q = ord[i];
            if (corpus_scan_table(c, t, pv[b.q], d, corpus_visit_batch, &b) != 0)
                goto out;
        }
    }
    /* group by query (counting sort on the query), then each query's hits by distance
     * and value, as corpus_find_all orders them */
    for (size_t i = 0; i < n; i++)
        counts[i] = 0;
    for (size_t i = 0; i < b.n; i++)
        counts[b.h[i].q]++;
    size_t *start = malloc((n + 1) * sizeof(*start));
    corpus_hit *g = b.n ? malloc(b.n * sizeof(*g)) : NULL;
    uint64_t *res = b.n ? malloc(b.n * sizeof(*res)) : NULL;
    if (!start || (b.n && (!g || !res))) {
        free(start);
        free(g);
        free(res);
        goto out;
    }
    start[0] = 0;
    for (size_t i = 0; i < n; i++)
        start[i + 1] = start[i] + (size_t)counts[i];
    for (size_t i = 0; i < b.n; i++)
        g[start[b.h[i].q]++] = (corpus_hit){ b.h[i].dist, b.h[i].v };
    size_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)counts[i];
        if (k > 1)
            qsort(g + pos, k, sizeof(*g), corpus_hit_cmp);
        for (size_t j = 0; j < k; j++)
            res[pos + j] = g[pos + j].v;
        pos += k;
    }
    free(start);
    free(g);
    *out = res;
    rc = (long)b.n;
out:
    free(pv);
    free(idx);
    free(ord);
    free(cnt);
    free(b.h);
    return rc;
}
