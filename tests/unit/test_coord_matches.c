/* test_coord_matches.c: the coordinator's own code, linked from simhash_coord: the
 * merge of the workers' matches (coord_matches_merge) against brute force on planted
 * matches, and the options of SIMHASH.QUERY/CHECK/CHECKTEXT (coord_qopts_parse). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "matches.h"

#define NFP 300

static uint64_t tm_rng = 88172645463325252ull;

static uint64_t tm_next(void)
{
    tm_rng ^= tm_rng << 13;
    tm_rng ^= tm_rng >> 7;
    tm_rng ^= tm_rng << 17;
    return tm_rng;
}

/* Brute force answer of one planted fingerprint: its smallest distance, whether a
 * copy carried ids. */
typedef struct tm_truth {
    uint64_t fp;
    unsigned dist;
    int has_docs;
} tm_truth;

static int tm_cmp_truth(const void *a, const void *b)
{
    const tm_truth *x = a, *y = b;
    if (x->dist != y->dist)
        return x->dist < y->dist ? -1 : 1;
    return x->fp < y->fp ? -1 : x->fp > y->fp;
}

/* NFP distinct fingerprints, each reported by 1..5 tables in shuffled order, some
 * copies with a larger distance, some without ids. Returns the matches (*n of them)
 * and fills truth (sorted by distance, then fingerprint). */
static qmatch *tm_plant(size_t *n, tm_truth *truth)
{
    qmatch *m = calloc(NFP * 5, sizeof(*m));
    assert_non_null(m);
    size_t k = 0;
    for (size_t i = 0; i < NFP; i++) {
        uint64_t fp = tm_next() | 1;    /* odd: distinct with high probability */
        fp = (fp & ~0xffffull) | i;     /* ... and certainly */
        unsigned d = (unsigned)(tm_next() % 4);
        size_t copies = 1 + tm_next() % 5;
        int docs = (int)(tm_next() % 3 != 0);
        truth[i] = (tm_truth){ fp, d, docs };
        for (size_t c = 0; c < copies; c++) {
            qmatch *q = &m[k++];
            q->fp = fp;
            q->dist = c == 0 ? d : d + (unsigned)(tm_next() % 3);
            if (docs && (c == copies - 1 || tm_next() % 2)) {
                char buf[40];
                int len = snprintf(buf, sizeof(buf), "docs-%llu", (unsigned long long)fp);
                q->docs = strdup(buf);
                q->docslen = (size_t)len;
            }
        }
    }
    for (size_t i = k; i > 1; i--) {        /* as the replies of several workers arrive */
        size_t j = tm_next() % i;
        qmatch t = m[i - 1];
        m[i - 1] = m[j];
        m[j] = t;
    }
    *n = k;
    qsort(truth, NFP, sizeof(*truth), tm_cmp_truth);
    return m;
}

static void tm_check(qmatch *m, size_t n, const tm_truth *truth, size_t want)
{
    assert_int_equal(n, want);
    qsort(m, n, sizeof(*m), coord_cmp_dist_fp);
    for (size_t i = 0; i < n; i++) {
        assert_true(m[i].fp == truth[i].fp);
        assert_int_equal(m[i].dist, truth[i].dist);
        if (truth[i].has_docs) {
            char buf[40];
            snprintf(buf, sizeof(buf), "docs-%llu", (unsigned long long)truth[i].fp);
            assert_non_null(m[i].docs);
            assert_int_equal(m[i].docslen, strlen(buf));
            assert_memory_equal(m[i].docs, buf, m[i].docslen);
        } else {
            assert_null(m[i].docs);
        }
        free(m[i].docs);
    }
}

static void test_merge_all(void **state)
{
    tm_truth truth[NFP];
    size_t n;
    (void)state;
    qmatch *m = tm_plant(&n, truth);
    n = coord_matches_merge(m, n, 0);
    tm_check(m, n, truth, NFP);
    free(m);
}

static void test_merge_limit(void **state)
{
    tm_truth truth[NFP];
    size_t n;
    (void)state;
    for (size_t limit = 1; limit <= NFP + 1; limit += 37) {
        qmatch *m = tm_plant(&n, truth);
        n = coord_matches_merge(m, n, limit);
        tm_check(m, n, truth, limit < NFP ? limit : NFP);
        free(m);
    }
}

static void test_merge_small(void **state)
{
    (void)state;
    assert_int_equal(coord_matches_merge(NULL, 0, 0), 0);
    qmatch one = { 7, 2, 0, NULL, 0 };
    assert_int_equal(coord_matches_merge(&one, 1, 5), 1);
    assert_int_equal(one.dist, 2);
}

/* ---- Options ---- */

typedef struct tm_args {
    const char *const *v;
    size_t n;
} tm_args;

static const char *tm_arg(void *src, size_t i, size_t *len)
{
    tm_args *a = src;
    *len = strlen(a->v[i]);
    return a->v[i];
}

/* Parses argv[2..] (argv[0] the command, argv[1] the fingerprint) with corpus distance 3. */
static int tm_parse(const char *const *v, size_t n, unsigned allow, coord_qopts *o, char *err)
{
    tm_args a = { v, n };
    err[0] = '\0';
    return coord_qopts_parse(3, tm_arg, &a, n, 2, allow, o, err, 256);
}

static void test_options(void **state)
{
    coord_qopts o;
    char err[256];
    const unsigned dl = COORD_OPT_DISTANCE | COORD_OPT_LIMIT;
    (void)state;
    const char *none[] = { "SIMHASH.QUERY", "1" };
    assert_int_equal(tm_parse(none, 2, dl, &o, err), 0);
    assert_int_equal(o.d, 3);                               /* the corpus distance */
    assert_int_equal(o.limit, 0);
    const char *both[] = { "SIMHASH.QUERY", "1", "distance", "2", "LiMiT", "5" };
    assert_int_equal(tm_parse(both, 6, dl, &o, err), 0);
    assert_int_equal(o.d, 2);
    assert_int_equal(o.limit, 5);
    const char *fmt[] = { "SIMHASH.CHECKTEXT", "d", "FORMAT", "HTML-ALL" };
    assert_int_equal(tm_parse(fmt, 4, COORD_OPT_DISTANCE | COORD_OPT_FORMAT, &o, err), 0);
    assert_int_equal(o.html, 2);

    const char *unknown[] = { "SIMHASH.QUERY", "1", "DIST", "2" };
    assert_int_equal(tm_parse(unknown, 4, dl, &o, err), -1);
    assert_string_equal(err, "unknown option 'DIST' (argument 2); expected DISTANCE d or LIMIT n");
    assert_int_equal(tm_parse(fmt, 4, dl, &o, err), -1);    /* FORMAT not allowed here */
    assert_non_null(strstr(err, "unknown option 'FORMAT'"));
    const char *far[] = { "SIMHASH.QUERY", "1", "DISTANCE", "4" };
    assert_int_equal(tm_parse(far, 4, dl, &o, err), -1);
    assert_non_null(strstr(err, "invalid DISTANCE '4' (argument 3)"));
    assert_non_null(strstr(err, "the corpus distance is 3"));
    const char *zero[] = { "SIMHASH.QUERY", "1", "LIMIT", "0" };
    assert_int_equal(tm_parse(zero, 4, dl, &o, err), -1);
    assert_non_null(strstr(err, "invalid LIMIT '0' (argument 3)"));
    const char *novalue[] = { "SIMHASH.QUERY", "1", "DISTANCE", "1", "LIMIT" };
    assert_int_equal(tm_parse(novalue, 5, dl, &o, err), -1);
    assert_string_equal(err, "LIMIT needs a value (argument 5)");
    const char *badfmt[] = { "SIMHASH.CHECKTEXT", "d", "FORMAT", "pdf" };
    assert_int_equal(tm_parse(badfmt, 4, COORD_OPT_FORMAT, &o, err), -1);
    assert_string_equal(err, "invalid FORMAT 'pdf' (argument 3): expected text, html or html-all");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_all),
        cmocka_unit_test(test_merge_limit),
        cmocka_unit_test(test_merge_small),
        cmocka_unit_test(test_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
