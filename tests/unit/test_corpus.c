/* test_corpus.c: unit tests of the in-memory corpus (common/core/corpus.c): random insert /
 * remove / query sequences against a brute-force list, find_first semantics, queries
 * with d < k, duplicates, bulk forms, bucket growth and out-of-memory rollback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "corpus.h"
#include "hamming.h"

#define TESTUTIL_SEED 0x0ddc0ffeebadf00dULL
#include "testutil.h"

/* ---- Brute-force model: an unordered list of distinct values ---- */

typedef struct model {
    uint64_t *v;
    size_t n, cap;
} model;

static long model_find(const model *m, uint64_t x)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i] == x)
            return (long)i;
    return -1;
}

static int model_insert(model *m, uint64_t x)
{
    if (model_find(m, x) >= 0)
        return 0;
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 64;
        m->v = realloc(m->v, m->cap * sizeof *m->v);
        assert_non_null(m->v);
    }
    m->v[m->n++] = x;
    return 1;
}

static int model_remove(model *m, uint64_t x)
{
    long i = model_find(m, x);
    if (i < 0)
        return 0;
    m->v[i] = m->v[--m->n];
    return 1;
}

static uint64_t cmp_query;

static int cmp_dist_value(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    unsigned da = ham_dist(a, cmp_query), db = ham_dist(b, cmp_query);
    if (da != db)
        return da < db ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* Compare find_all and find_first of q at distance d with the model. */
static void check_query(const corpus *c, const model *m, uint64_t q, unsigned d)
{
    uint64_t *want = malloc((m->n + 1) * sizeof *want);
    assert_non_null(want);
    size_t nw = 0;
    for (size_t i = 0; i < m->n; i++)
        if (ham_dist(m->v[i], q) <= d)
            want[nw++] = m->v[i];
    cmp_query = q;
    qsort(want, nw, sizeof *want, cmp_dist_value);
    uint64_t *got = NULL;
    long ng = corpus_find_all(c, q, d, &got);
    assert_int_equal(ng, (long)nw);
    if (nw)
        assert_memory_equal(got, want, nw * sizeof *want);
    else
        assert_null(got);
    free(got);
    uint64_t f = 0;
    int r = corpus_find_first(c, q, d, &f);
    assert_int_equal(r, nw > 0);
    if (r) {
        assert_true(ham_dist(f, q) <= d);
        assert_true(model_find(m, f) >= 0);
        if (model_find(m, q) >= 0) /* an exact match is preferred */
            assert_true(f == q);
    }
    free(want);
}

/* Queries near stored values, far from everything, and the stored values themselves. */
static void check_some_queries(const corpus *c, const model *m, unsigned k, unsigned count)
{
    for (unsigned i = 0; i < count; i++) {
        uint64_t q = m->n && (i % 4) ? flip_bits(m->v[rnd() % m->n], (unsigned)(rnd() % (k + 3)))
                                     : rnd();
        check_query(c, m, q, (unsigned)(rnd() % (k + 1)));
        check_query(c, m, q, k);
    }
    assert_int_equal(corpus_size(c), m->n);
    for (size_t i = 0; i < m->n; i += 1 + m->n / 64)
        assert_true(corpus_contains(c, m->v[i]));
}

static void random_sequence(unsigned blocks, unsigned k, unsigned ops)
{
    char err[128];
    corpus *c = corpus_new(blocks, k, err, sizeof err);
    assert_non_null(c);
    assert_int_equal(corpus_blocks(c), blocks);
    assert_int_equal(corpus_distance(c), k);
    model m = {0};
    uint64_t pool[64];
    for (unsigned i = 0; i < 64; i++)
        pool[i] = rnd();
    for (unsigned op = 0; op < ops; op++) {
        unsigned what = (unsigned)(rnd() % 10);
        uint64_t x = flip_bits(pool[rnd() % 64], (unsigned)(rnd() % (k + 4)));
        if (what < 5) {
            assert_int_equal(corpus_insert(c, x), model_insert(&m, x));
        } else if (what < 7) {
            if (m.n && (rnd() & 1))
                x = m.v[rnd() % m.n];
            assert_int_equal(corpus_remove(c, x), model_remove(&m, x));
        } else {
            check_query(c, &m, x, (unsigned)(rnd() % (k + 1)));
        }
        assert_int_equal(corpus_size(c), m.n);
    }
    check_some_queries(c, &m, k, 50);
    corpus_free(c);
    free(m.v);
}

static void test_random_sequences(void **state)
{
    (void)state;
    unsigned ops = light() ? 400 : 4000;
    const unsigned sk[][2] = {{4, 3}, {5, 3}, {6, 3}, {8, 2}, {3, 1}, {2, 0}, {1, 0},
                              {7, 4}, {12, 5}, {64, 1}, {5, 2}};
    for (size_t s = 0; s < sizeof sk / sizeof sk[0]; s++)
        random_sequence(sk[s][0], sk[s][1], ops);
}

static void test_semantics(void **state)
{
    (void)state;
    char err[128];
    assert_null(corpus_new(3, 3, err, sizeof err));
    assert_string_equal(err, "distance 3 must be smaller than blocks 3");
    assert_null(corpus_new(20, 10, err, sizeof err));
    assert_string_equal(err, "blocks 20 distance 10 would need 184756 tables (limit 1000)");
    corpus *c = corpus_new(6, 3, err, sizeof err);
    assert_non_null(c);
    uint64_t a = 0x1234567890abcdefULL, f = 0, *out = NULL;
    assert_int_equal(corpus_find_first(c, a, 3, &f), 0);
    assert_int_equal(corpus_find_all(c, a, 3, &out), 0);
    assert_null(out);
    assert_int_equal(corpus_insert(c, a), 1);
    assert_int_equal(corpus_insert(c, a), 0); /* duplicate */
    assert_int_equal(corpus_size(c), 1);
    assert_int_equal(corpus_remove(c, a ^ 1), 0); /* absent */
    assert_int_equal(corpus_size(c), 1);
    /* d beyond the corpus distance is refused */
    assert_int_equal(corpus_find_first(c, a, 4, &f), -1);
    assert_int_equal(corpus_find_all(c, a, 4, &out), -1);
    /* d < k: 2 bits away is found at d = 2 and 3 but not at d = 1 */
    uint64_t q = a ^ 0x11;
    assert_int_equal(corpus_find_first(c, q, 1, &f), 0);
    assert_int_equal(corpus_find_first(c, q, 2, &f), 1);
    assert_true(f == a);
    assert_int_equal(corpus_find_all(c, q, 1, &out), 0);
    assert_int_equal(corpus_find_all(c, q, 3, &out), 1);
    assert_true(out[0] == a);
    free(out);
    /* results sorted by distance, then value */
    uint64_t b = a ^ 0x10, d3 = a ^ 0x1c00000000000000ULL;
    assert_int_equal(corpus_insert(c, b), 1);
    assert_int_equal(corpus_insert(c, d3), 1);
    assert_int_equal(corpus_find_all(c, a, 3, &out), 3);
    assert_true(out[0] == a && out[1] == b && out[2] == d3);
    free(out);
    /* find_first returns the query itself when stored */
    assert_int_equal(corpus_find_first(c, b, 3, &f), 1);
    assert_true(f == b);
    /* removal takes it out of every table */
    assert_int_equal(corpus_remove(c, a), 1);
    assert_int_equal(corpus_contains(c, a), 0);
    assert_int_equal(corpus_find_all(c, a, 3, &out), 2);
    assert_true(out[0] == b && out[1] == d3);
    free(out);
    corpus_free(c);
}

static void test_bulk(void **state)
{
    (void)state;
    char err[128];
    corpus *c = corpus_new(5, 3, err, sizeof err);
    assert_non_null(c);
    uint64_t hs[200];
    for (size_t i = 0; i < 100; i++)
        hs[i] = rnd();
    for (size_t i = 100; i < 200; i++)
        hs[i] = i % 2 ? hs[i - 100] : flip_bits(hs[i - 100], 2); /* 50 repeats */
    assert_int_equal(corpus_insert_many(c, hs, 200), 150);
    assert_int_equal(corpus_size(c), 150);
    assert_int_equal(corpus_insert_many(c, hs, 200), 0);
    uint64_t qs[4] = {flip_bits(hs[0], 3), flip_bits(hs[1], 1), rnd(), hs[2]};
    uint8_t found[4];
    uint64_t first[4];
    assert_int_equal(corpus_find_first_many(c, qs, 4, 3, found, first), 0);
    assert_int_equal(found[0], 1);
    assert_true(ham_dist(first[0], qs[0]) <= 3);
    assert_int_equal(found[1], 1);
    assert_true(ham_dist(first[1], qs[1]) <= 3);
    assert_int_equal(found[2], 0);
    assert_int_equal(found[3], 1);
    assert_true(first[3] == hs[2]);
    assert_int_equal(corpus_find_first_many(c, qs, 4, 4, found, first), -1);
    assert_int_equal(corpus_remove_many(c, hs, 100), 100);
    assert_int_equal(corpus_size(c), 50);
    assert_int_equal(corpus_remove_many(c, hs, 200), 50);
    assert_int_equal(corpus_size(c), 0);
    assert_int_equal(corpus_find_first_many(c, qs, 4, 3, found, first), 0);
    assert_true(!found[0] && !found[1] && !found[2] && !found[3]);
    corpus_free(c);
}

/* The same corpus by bulk calls (sort and merge) and by single inserts and removes. */
static void assert_same_corpus(corpus *a, corpus *b, const uint64_t *hs, size_t n)
{
    assert_int_equal(corpus_size(a), corpus_size(b));
    for (size_t i = 0; i < n; i += 7) {
        uint64_t q = i % 2 ? hs[i] : flip_bits(hs[i], 2), *oa = NULL, *ob = NULL;
        assert_int_equal(corpus_contains(a, hs[i]), corpus_contains(b, hs[i]));
        long na = corpus_find_all(a, q, 3, &oa), nb = corpus_find_all(b, q, 3, &ob);
        assert_int_equal(na, nb);
        for (long k = 0; k < na; k++)
            assert_true(oa[k] == ob[k]);
        free(oa);
        free(ob);
    }
}

static void test_bulk_merge(void **state)
{
    (void)state;
    char err[128];
    enum { N = 20000 };
    static uint64_t hs[N];
    for (size_t i = 0; i < N; i++)
        hs[i] = i % 5 == 4 ? hs[i - 3] : i % 5 == 3 ? flip_bits(hs[i - 1], 1) : rnd();
    corpus *a = corpus_new(5, 3, err, sizeof err), *b = corpus_new(5, 3, err, sizeof err);
    assert_non_null(a);
    assert_non_null(b);
    /* a first part one at a time in both, then the whole batch in bulk into a */
    long single = 0;
    for (size_t i = 0; i < N; i++)
        single += corpus_insert(b, hs[i]);
    for (size_t i = 0; i < N / 4; i++)
        corpus_insert(a, hs[i]);
    long before = (long)corpus_size(a);
    assert_int_equal(corpus_insert_many(a, hs, N), single - before);
    assert_same_corpus(a, b, hs, N);
    /* remove every third value (some twice, some absent) */
    static uint64_t rm[N / 3 + 1 + 300];
    size_t nrm = 0;
    for (size_t i = 0; i < N; i += 3)
        rm[nrm++] = hs[i];
    for (size_t i = 0; i < 300; i++)
        rm[nrm++] = i % 2 ? hs[i * 3] : rnd();
    long removed = 0;
    for (size_t i = 0; i < nrm; i++)
        removed += corpus_remove(b, rm[i]);
    assert_int_equal(corpus_remove_many(a, rm, nrm), removed);
    assert_same_corpus(a, b, hs, N);
    corpus_free(a);
    corpus_free(b);
}

/* Batched queries give exactly what one query at a time gives (which check_query
 * holds to brute force): planted matches at 0..k and k+1 bits, clusters with many
 * matches, exact values, random queries; batches above and below the batch size. */
static void test_batch_queries(void **state)
{
    (void)state;
    static const unsigned set[][2] = { {4, 3}, {5, 3}, {6, 3}, {8, 2}, {3, 1}, {7, 4} };
    enum { N = 4000, Q = 3000 };
    static uint64_t hs[N], qs[Q], first[Q];
    static uint8_t found[Q];
    static long counts[Q];
    char err[128];
    for (size_t s = 0; s < sizeof(set) / sizeof(set[0]); s++) {
        unsigned m = set[s][0], k = set[s][1];
        corpus *c = corpus_new(m, k, err, sizeof err);
        assert_non_null(c);
        for (size_t i = 0; i < N; i++)
            hs[i] = i % 4 == 3 ? flip_bits(hs[i - 1 - i % 3], 1 + (unsigned)(i % k)) : rnd();
        corpus_insert_many(c, hs, N);
        for (size_t i = 0; i < Q; i++) {
            uint64_t base = hs[(i * 7) % N];
            switch (i % 5) {
            case 0: qs[i] = base; break;
            case 1: qs[i] = flip_bits(base, (unsigned)(i % (k + 1))); break;
            case 2: qs[i] = flip_bits(base, k + 1); break;
            case 3: qs[i] = flip_bits(base, k); break;
            default: qs[i] = rnd(); break;
            }
        }
        for (unsigned d = 0; d <= k; d += k) {
            size_t sizes[2] = { Q, 10 };
            for (int z = 0; z < 2; z++) {
                size_t n = sizes[z];
                assert_int_equal(corpus_find_first_many(c, qs, n, d, found, first), 0);
                uint64_t *all = NULL;
                long total = corpus_find_all_many(c, qs, n, d, counts, &all);
                assert_true(total >= 0);
                long pos = 0, nonzero = 0;
                for (size_t i = 0; i < n; i++) {
                    uint64_t f = 0, *one = NULL;
                    int r = corpus_find_first(c, qs[i], d, &f);
                    assert_int_equal(found[i], r);
                    if (r)
                        assert_true(first[i] == f);
                    long cnt = corpus_find_all(c, qs[i], d, &one);
                    assert_int_equal(counts[i], cnt);
                    for (long j = 0; j < cnt; j++)
                        assert_true(all[pos + j] == one[j]);
                    nonzero += cnt > 1;
                    pos += cnt;
                    free(one);
                }
                assert_int_equal(pos, total);
                if (n == Q && d == k)
                    assert_true(nonzero > 0);    /* some queries had several matches */
                free(all);
            }
        }
        /* small batches whose first queries match nothing (random values) */
        uint64_t lone[3] = { rnd(), rnd(), hs[0] }, *none = NULL;
        assert_int_equal(corpus_find_all_many(c, lone, 2, k, counts, &none), 0);
        assert_null(none);
        assert_true(corpus_find_all_many(c, lone, 3, k, counts, &none) >= 1);
        assert_int_equal(counts[0], 0);
        assert_true(counts[2] >= 1);
        free(none);
        none = NULL;
        assert_int_equal(corpus_find_all_many(c, qs, Q, k + 1, counts, &none), -1);
        assert_null(none);
        assert_int_equal(corpus_find_first_many(c, qs, Q, k + 1, found, first), -1);
        corpus_free(c);
    }
}

/* Out of memory inside a bulk insert: -1, and the corpus stays consistent (every table
 * holds the same set, the size counts it). */
static void test_bulk_merge_oom(void **state)
{
    (void)state;
    char err[128];
    enum { N = 3000 };
    static uint64_t hs[N];
    for (size_t i = 0; i < N; i++)
        hs[i] = rnd();
    long points[] = {0, 1, 5, 100, 1000, 2500};
    for (size_t p = 0; p < sizeof(points) / sizeof(points[0]); p++) {
        corpus *c = corpus_new(5, 3, err, sizeof err);
        assert_non_null(c);
        corpus_insert_many(c, hs, N / 2);
        corpus_debug_fail_alloc(c, points[p]);
        long r = corpus_insert_many(c, hs, N);
        corpus_debug_fail_alloc(c, -1);
        assert_true(r == -1 || r == N - N / 2);
        size_t present = 0;
        for (size_t i = 0; i < N; i++) {
            uint64_t *out = NULL;
            long k = corpus_find_all(c, hs[i], 0, &out);   /* looks in every table */
            free(out);
            if (!corpus_contains(c, hs[i])) {
                assert_int_equal(k, 0);
                continue;
            }
            present++;
            assert_int_equal(k, 1);
        }
        assert_int_equal(present, corpus_size(c));
        assert_true(present >= N / 2);
        corpus_free(c);
    }
}

/* Enough entries to split the buckets (more than 64 per bucket of 2^8), then checks. */
static void test_growth(void **state)
{
    (void)state;
    char err[128];
    const unsigned sk[][2] = {{4, 3}, {6, 3}};
    size_t n = light() ? 17000 : 40000;
    for (size_t s = 0; s < 2; s++) {
        corpus *c = corpus_new(sk[s][0], sk[s][1], err, sizeof err);
        assert_non_null(c);
        model m = {0};
        m.cap = n + 16;
        m.v = malloc(m.cap * sizeof *m.v);
        assert_non_null(m.v);
        for (size_t i = 0; i < n; i++) {
            uint64_t x = i % 5 && m.n ? flip_bits(m.v[rnd() % m.n], 1 + (unsigned)(rnd() % 4)) : rnd();
            int r = corpus_insert(c, x);
            assert_true(r >= 0);
            if (r)
                m.v[m.n++] = x; /* corpus says new, so the model has no copy */
        }
        check_some_queries(c, &m, sk[s][1], light() ? 20 : 100);
        /* remove half, check again */
        for (size_t i = 0; i < m.n / 2; i++)
            assert_int_equal(corpus_remove(c, m.v[i]), 1);
        memmove(m.v, m.v + m.n / 2, (m.n - m.n / 2) * sizeof *m.v);
        m.n -= m.n / 2;
        check_some_queries(c, &m, sk[s][1], light() ? 20 : 100);
        corpus_free(c);
        free(m.v);
    }
}

/* Failing allocations leave the corpus as it was: an insert failing in any table rolls
 * back the others, and a failed bucket split keeps the old buckets. */
static void test_out_of_memory(void **state)
{
    (void)state;
    char err[128];
    corpus *c = corpus_new(6, 3, err, sizeof err); /* 20 tables */
    assert_non_null(c);
    model m = {0};
    int failures = 0;
    for (long after = 0; after < 45; after++) {
        uint64_t x = m.n && after % 2 ? flip_bits(m.v[rnd() % m.n], 2) : rnd();
        corpus_debug_fail_alloc(c, after);
        int r = corpus_insert(c, x);
        corpus_debug_fail_alloc(c, -1);
        if (r < 0) {
            failures++;
            assert_int_equal(corpus_contains(c, x), 0);
            assert_int_equal(corpus_size(c), m.n);
            check_query(c, &m, x, 3);
        } else {
            assert_int_equal(r, model_insert(&m, x));
        }
    }
    assert_true(failures > 0);
    check_some_queries(c, &m, 3, 30);
    /* bulk insert failing midway: entries before the failure stay */
    uint64_t hs[8];
    for (int i = 0; i < 8; i++)
        hs[i] = rnd();
    corpus_debug_fail_alloc(c, 50);
    long r = corpus_insert_many(c, hs, 8);
    corpus_debug_fail_alloc(c, -1);
    assert_int_equal(r, -1);
    for (int i = 0; i < 8; i++)
        if (corpus_contains(c, hs[i]))
            model_insert(&m, hs[i]);
    check_some_queries(c, &m, 3, 30);
    corpus_free(c);
    free(m.v);

    /* a bucket split that fails at various points, then one that succeeds */
    c = corpus_new(4, 1, err, sizeof err);
    assert_non_null(c);
    model big = {0};
    while (corpus_size(c) < 16384) {
        uint64_t x = rnd();
        assert_int_equal(corpus_insert(c, x), 1);
        model_insert(&big, x);
    }
    long points[] = {1, 2, 3, 50, 700, 3000};
    for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
        uint64_t x = rnd();
        corpus_debug_fail_alloc(c, points[i]);
        int ri = corpus_insert(c, x);
        corpus_debug_fail_alloc(c, -1);
        assert_true(ri == 1 || ri == -1);
        if (ri == 1)
            model_insert(&big, x);
        check_some_queries(c, &big, 1, 10);
    }
    uint64_t x = rnd();
    assert_int_equal(corpus_insert(c, x), 1);
    model_insert(&big, x);
    check_some_queries(c, &big, 1, light() ? 10 : 100);
    corpus_free(c);
    free(big.v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_sequences),
        cmocka_unit_test(test_semantics),
        cmocka_unit_test(test_bulk),
        cmocka_unit_test(test_bulk_merge),
        cmocka_unit_test(test_bulk_merge_oom),
        cmocka_unit_test(test_batch_queries),
        cmocka_unit_test(test_growth),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
