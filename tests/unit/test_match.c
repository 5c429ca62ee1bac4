/* test_match.c: unit tests of batch matching (common/core/match.c): every pair within k
 * bits against an O(n^2) brute force on planted sets, duplicates, skewed data, thread
 * counts, and clusters against a brute-force union-find (including chains). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hamming.h"
#include "corpus.h"
#include "match.h"

#define TESTUTIL_SEED 0x2545f4914f6cdd1dULL
#include "testutil.h"

/* Planted set: nbase random hashes, each with copies at 0..k+2 flipped bits (0 flips
 * is a duplicate), shuffled. Returns the malloc'ed array and its length. */
static uint64_t *planted(size_t nbase, unsigned k, size_t *n)
{
    size_t per = k + 3, total = nbase * (per + 1);
    uint64_t *h = malloc(total * sizeof *h);
    assert_non_null(h);
    size_t j = 0;
    for (size_t i = 0; i < nbase; i++) {
        uint64_t b = rnd();
        h[j++] = b;
        /* only every third base gets a duplicate, the rest get a near copy instead */
        for (unsigned f = 0; f < per; f++)
            h[j++] = flip_bits(b, f == 0 && i % 3 ? 1 : f);
    }
    for (size_t i = total; i > 1; i--) {
        size_t r = rnd() % i;
        uint64_t t = h[i - 1];
        h[i - 1] = h[r];
        h[r] = t;
    }
    *n = total;
    return h;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static int cmp_pair(const void *x, const void *y)
{
    const match_pair *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

/* Brute force: all pairs of distinct values within k, plus (v, v) for repeated v,
 * sorted by (a, b). */
static match_pair *brute_pairs(const uint64_t *h, size_t n, unsigned k, size_t *np)
{
    uint64_t *u = malloc((n + 1) * sizeof *u);
    assert_non_null(u);
    memcpy(u, h, n * sizeof *u);
    qsort(u, n, sizeof *u, cmp_u64);
    size_t cap = 1024, cnt = 0, nu = 0;
    match_pair *p = malloc(cap * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && u[j] == u[i])
            j++;
        if (j - i >= 2) {
            if (cnt == cap)
                p = realloc(p, (cap *= 2) * sizeof *p);
            assert_non_null(p);
            p[cnt++] = (match_pair){u[i], u[i]};
        }
        u[nu++] = u[i];
        i = j;
    }
    for (size_t i = 0; i < nu; i++)
        for (size_t j = i + 1; j < nu; j++)
            if (ham_dist(u[i], u[j]) <= k) {
                if (cnt == cap)
                    p = realloc(p, (cap *= 2) * sizeof *p);
                assert_non_null(p);
                p[cnt++] = (match_pair){u[i], u[j]};
            }
    free(u);
    qsort(p, cnt, sizeof *p, cmp_pair);
    *np = cnt;
    return p;
}

/* Run match_find_all and compare with the brute force: 0 missed, 0 extra, no pair
 * twice, sorted. Returns the pair count. */
static size_t check_find_all(const uint64_t *h, size_t n, unsigned m, unsigned k,
                             unsigned threads)
{
    size_t nb = 0, np = 0;
    match_pair *want = brute_pairs(h, n, k, &nb), *got = NULL;
    char err[128] = "";
    assert_int_equal(match_find_all(h, n, m, k, threads, &got, &np, err, sizeof err), 0);
    for (size_t i = 1; i < np; i++)
        assert_true(cmp_pair(&got[i - 1], &got[i]) < 0); /* sorted, no pair twice */
    for (size_t i = 0; i < np; i++)
        assert_true(got[i].a <= got[i].b && ham_dist(got[i].a, got[i].b) <= k);
    assert_int_equal(np, nb);
    for (size_t i = 0; i < np; i++) {
        assert_true(got[i].a == want[i].a);
        assert_true(got[i].b == want[i].b);
    }
    free(want);
    free(got);
    return nb;
}

static const unsigned settings[][2] = {
    {4, 3}, {5, 3}, {6, 3}, {8, 2}, {3, 1}, {2, 0}, {7, 4}, {12, 5}, {1, 0}, {64, 1},
    {5, 2}, {4, 0}, {10, 3}, {12, 11}, {16, 14},
};

static void test_planted_exact(void **state)
{
    (void)state;
    size_t nbase = light() ? 60 : 500;
    for (size_t s = 0; s < sizeof settings / sizeof settings[0]; s++) {
        unsigned m = settings[s][0], k = settings[s][1];
        size_t n;
        uint64_t *h = planted(nbase, k, &n);
        size_t found = check_find_all(h, n, m, k, 1);
        /* every base has copies at 0..k flips: at least k pairs per base */
        assert_true(found >= nbase * k);
        free(h);
    }
}

/* Values confined to the low 20 bits: many long runs of equal prefix, many pairs. */
static void test_skewed(void **state)
{
    (void)state;
    size_t n = light() ? 1000 : 3000;
    uint64_t *h = malloc(n * sizeof *h);
    assert_non_null(h);
    const unsigned sk[][2] = {{4, 3}, {6, 3}, {3, 1}, {5, 2}};
    for (size_t s = 0; s < 4; s++) {
        for (size_t i = 0; i < n; i++)
            h[i] = rnd() & 0xfffffULL;
        assert_true(check_find_all(h, n, sk[s][0], sk[s][1], 1) > 0);
    }
    free(h);
}

/* Threads 1, 2 and 0 (all cores) give identical results on a set large enough to be
 * split over threads. */
static void test_threads_identical(void **state)
{
    (void)state;
    size_t nbase = light() ? 700 : 2000, n;
    uint64_t *h = planted(nbase, 3, &n);
    const unsigned sk[][2] = {{6, 3}, {5, 3}, {4, 3}};
    for (size_t s = 0; s < 3; s++) {
        match_pair *p1 = NULL, *p2 = NULL, *p0 = NULL;
        size_t n1, n2, n0;
        char err[128];
        assert_int_equal(match_find_all(h, n, sk[s][0], 3, 1, &p1, &n1, err, sizeof err), 0);
        assert_int_equal(match_find_all(h, n, sk[s][0], 3, 2, &p2, &n2, err, sizeof err), 0);
        assert_int_equal(match_find_all(h, n, sk[s][0], 3, 0, &p0, &n0, err, sizeof err), 0);
        assert_int_equal(n1, n2);
        assert_int_equal(n1, n0);
        assert_true(n1 > 0);
        assert_memory_equal(p1, p2, n1 * sizeof *p1);
        assert_memory_equal(p1, p0, n1 * sizeof *p1);
        free(p1);
        free(p2);
        free(p0);
        check_find_all(h, n, sk[s][0], 3, 2);
    }
    free(h);
}

/* A set large enough for the threaded input sort, checked against the corpus (an
 * independent index) instead of the quadratic brute force. */
static void check_large(unsigned m)
{
    size_t nbase = 12000, n;
    uint64_t *h = planted(nbase, 3, &n); /* 84000 values */
    match_pair *p1 = NULL, *p2 = NULL;
    size_t n1, n2;
    char err[128];
    assert_int_equal(match_find_all(h, n, m, 3, 1, &p1, &n1, err, sizeof err), 0);
    assert_int_equal(match_find_all(h, n, m, 3, 2, &p2, &n2, err, sizeof err), 0);
    assert_int_equal(n1, n2);
    assert_memory_equal(p1, p2, n1 * sizeof *p1);
    corpus *c = corpus_new(m, 3, err, sizeof err);
    assert_non_null(c);
    size_t ndup = 0;
    for (size_t i = 0; i < n; i++)
        if (corpus_insert(c, h[i]) == 0)
            ndup++;
    /* pairs of distinct values: sum over values of neighbours other than itself, / 2 */
    size_t want = 0, got_distinct = 0, got_dup = 0;
    for (size_t i = 0; i < n1; i++) {
        if (p1[i].a == p1[i].b)
            got_dup++;
        else
            got_distinct++;
        assert_true(ham_dist(p1[i].a, p1[i].b) <= 3);
        if (i)
            assert_true(cmp_pair(&p1[i - 1], &p1[i]) < 0);
    }
    uint64_t *u = malloc(n * sizeof *u);
    assert_non_null(u);
    memcpy(u, h, n * sizeof *u);
    qsort(u, n, sizeof *u, cmp_u64);
    size_t repeated = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && u[j] == u[i])
            j++;
        repeated += j - i >= 2;
        uint64_t *nb = NULL;
        long cnt = corpus_find_all(c, u[i], 3, &nb);
        assert_true(cnt >= 1);
        for (long x = 0; x < cnt; x++) {
            if (nb[x] <= u[i])
                continue;
            want++;
            /* the pair (u[i], nb[x]) is reported */
            match_pair key = {u[i], nb[x]};
            assert_non_null(bsearch(&key, p1, n1, sizeof *p1, cmp_pair));
        }
        free(nb);
        i = j;
    }
    assert_int_equal(got_distinct, want);
    assert_int_equal(got_dup, repeated);
    assert_true(ndup > 0 && repeated > 0);
    free(u);
    corpus_free(c);
    free(p1);
    free(p2);
    free(h);
}

static void test_large_against_corpus(void **state)
{
    (void)state;
    check_large(5); /* prefixes wider than the buckets: grouped by hashing */
    check_large(4); /* 16-bit prefixes: one bucket per prefix */
}

static void test_edges_and_errors(void **state)
{
    (void)state;
    match_pair *p = NULL;
    size_t np = 99;
    char err[128];
    assert_int_equal(match_find_all(NULL, 0, 5, 3, 1, &p, &np, err, sizeof err), 0);
    assert_int_equal(np, 0);
    free(p);
    uint64_t one = 7;
    assert_int_equal(match_find_all(&one, 1, 5, 3, 1, &p, &np, err, sizeof err), 0);
    assert_int_equal(np, 0);
    free(p);
    uint64_t three[] = {5, 5, 5};
    assert_int_equal(match_find_all(three, 3, 5, 3, 2, &p, &np, err, sizeof err), 0);
    assert_int_equal(np, 1);
    assert_true(p[0].a == 5 && p[0].b == 5);
    free(p);
    uint64_t ext[] = {0, ~0ULL, ~0ULL ^ 7, 1ULL << 63, (1ULL << 63) | 1};
    check_find_all(ext, 5, 4, 3, 1);
    assert_int_equal(match_find_all(three, 3, 3, 3, 1, &p, &np, err, sizeof err), -1);
    assert_string_equal(err, "distance 3 must be smaller than blocks 3");
    assert_int_equal(match_find_all(three, 3, 20, 10, 1, &p, &np, err, sizeof err), -1);
    assert_string_equal(err, "blocks 20 distance 10 would need 184756 tables (limit 1000)");
    uint64_t *v;
    size_t *off, nc;
    assert_int_equal(match_find_clusters(three, 3, 65, 1, 1, &v, &off, &nc, err, sizeof err), -1);
    assert_string_equal(err, "blocks 65 out of range (1..64)");
}

/* ---- Clusters ---- */

static size_t uf_find(size_t *par, size_t i)
{
    while (par[i] != i)
        i = par[i] = par[par[i]];
    return i;
}

/* Compare match_find_clusters with a brute-force union-find over input lines. */
static void check_clusters(const uint64_t *h, size_t n, unsigned m, unsigned k, unsigned threads)
{
    size_t *par = malloc((n + 1) * sizeof *par);
    assert_non_null(par);
    for (size_t i = 0; i < n; i++)
        par[i] = i;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (ham_dist(h[i], h[j]) <= k) {
                size_t a = uf_find(par, i), b = uf_find(par, j);
                if (a != b)
                    par[a] = b;
            }
    /* Expected clusters: per root the sorted values; order by first value. */
    uint64_t *vals = malloc((n + 1) * sizeof *vals);
    size_t *order = malloc((n + 1) * sizeof *order);
    assert_non_null(vals);
    assert_non_null(order);
    size_t *off;
    uint64_t *got;
    size_t nc;
    char err[128];
    assert_int_equal(match_find_clusters(h, n, m, k, threads, &got, &off, &nc, err, sizeof err), 0);
    /* Every line in a multi-line component appears in exactly one cluster, in the
     * cluster of its component. Check by: component sizes and membership. */
    size_t *size = calloc(n + 1, sizeof *size);
    assert_non_null(size);
    for (size_t i = 0; i < n; i++)
        size[uf_find(par, i)]++;
    size_t expect_lines = 0, expect_clusters = 0;
    for (size_t i = 0; i < n; i++)
        if (par[i] == i && size[i] >= 2) {
            expect_clusters++;
            expect_lines += size[i];
        }
    assert_int_equal(nc, expect_clusters);
    assert_int_equal(off[0], 0);
    assert_int_equal(off[nc], expect_lines);
    for (size_t c = 0; c < nc; c++) {
        assert_true(off[c + 1] - off[c] >= 2);
        for (size_t i = off[c] + 1; i < off[c + 1]; i++)
            assert_true(got[i - 1] <= got[i]);
        if (c > 0)
            assert_true(got[off[c - 1]] < got[off[c]]);
        /* the cluster is exactly the lines of one brute-force component */
        size_t line = n;
        for (size_t i = 0; i < n && line == n; i++)
            if (h[i] == got[off[c]])
                line = i;
        assert_true(line < n);
        size_t root = uf_find(par, line), cnt = 0;
        for (size_t i = 0; i < n; i++)
            if (uf_find(par, i) == root)
                vals[cnt++] = h[i];
        qsort(vals, cnt, sizeof *vals, cmp_u64);
        assert_int_equal(cnt, off[c + 1] - off[c]);
        assert_memory_equal(vals, got + off[c], cnt * sizeof *vals);
    }
    free(size);
    free(vals);
    free(order);
    free(par);
    free(got);
    free(off);
}

static void test_clusters(void **state)
{
    (void)state;
    /* chain A ~ B ~ C with A and C 6 bits apart, plus a far value D and a duplicate E */
    uint64_t a = 0x0123456789abcdefULL;
    uint64_t b = a ^ 0x7ULL;               /* 3 bits from a */
    uint64_t c = b ^ (0x7ULL << 40);        /* 3 bits from b, 6 from a */
    uint64_t d = a ^ 0xffff0000ffff0000ULL;
    uint64_t e = 0xfedcba9876543210ULL;
    uint64_t h[] = {c, d, e, a, b, e};
    uint64_t *v;
    size_t *off, nc;
    char err[128];
    assert_int_equal(match_find_clusters(h, 6, 4, 3, 1, &v, &off, &nc, err, sizeof err), 0);
    assert_int_equal(nc, 2);
    /* clusters sorted by first value: {a, b, c} (a < b < c) vs {e, e} */
    uint64_t first[3] = {a, b, c};
    qsort(first, 3, sizeof first[0], cmp_u64);
    if (first[0] < e) {
        assert_int_equal(off[1], 3);
        assert_memory_equal(v, first, sizeof first);
        assert_true(v[3] == e && v[4] == e);
    } else {
        assert_int_equal(off[1], 2);
        assert_memory_equal(v + 2, first, sizeof first);
    }
    assert_int_equal(off[2], 5);
    free(v);
    free(off);
    check_clusters(h, 6, 4, 3, 1);

    size_t nbase = light() ? 80 : 400, n;
    const unsigned sk[][2] = {{4, 3}, {6, 3}, {8, 2}, {3, 1}, {2, 0}, {1, 0}};
    for (size_t s = 0; s < 6; s++) {
        uint64_t *p = planted(nbase, sk[s][1], &n);
        check_clusters(p, n, sk[s][0], sk[s][1], s % 2 ? 2 : 1);
        free(p);
    }
    /* dense data: chains merge into big clusters */
    n = light() ? 300 : 2000;
    uint64_t *p = malloc(n * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = rnd() & 0x3ffffULL;
    check_clusters(p, n, 4, 3, 2);
    free(p);
    /* empty input: no clusters, offsets = {0} */
    assert_int_equal(match_find_clusters(NULL, 0, 4, 3, 1, &v, &off, &nc, err, sizeof err), 0);
    assert_int_equal(nc, 0);
    assert_int_equal(off[0], 0);
    free(v);
    free(off);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_planted_exact),
        cmocka_unit_test(test_skewed),
        cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_large_against_corpus),
        cmocka_unit_test(test_edges_and_errors),
        cmocka_unit_test(test_clusters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
