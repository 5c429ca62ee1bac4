/* find_all.c: benchmark of batch matching. Times match_find_all and match_find_clusters
 * on uniformly random hashes (fixed seed) against a plain reference implementation
 * (per table: permute, qsort, compare within equal prefixes; pairs de-duplicated with
 * qsort; one thread), checks that both find the same pairs, and prints one
 * machine-readable line per setting.
 *
 * usage: bench-find_all [-n COUNT] [-d DISTANCE] [-b BLOCKS]... [-r REPEATS] [-t THREADS]
 *                       [-p PLANTED] [-x 1]
 * PLANTED near copies (1..DISTANCE bits flipped) replace random hashes, so pairs exist;
 * -x 1 skips the reference implementation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "hamming.h"
#include "match.h"
#include "parse.h"
#include "perm.h"

#include "bench_util.h"

/* ---- Helpers ---- */

static uint64_t bench_rng = 0x5eed5eed5eed5eedULL;

/* The next pseudo-random 64-bit value of the fixed sequence. */
static uint64_t bench_rand(void)
{
    return bench_next(&bench_rng);
}

/* CPU seconds (user + system) used by this process so far, all threads. */
static double bench_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static int bench_cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static int bench_cmp_pair(const void *x, const void *y)
{
    const match_pair *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

/* ---- Reference implementation ---- */

/* Every pair within k via qsort per table. Returns 0, or -1 on error (message printed). */
static int ref_find_all(const uint64_t *h, size_t n, unsigned m, unsigned k,
                        match_pair **out, size_t *nout)
{
    perm_set ps;
    char err[128];
    if (perm_set_init(&ps, m, k, err, sizeof err) < 0) {
        fprintf(stderr, "bench-find_all: %s\n", err);
        return -1;
    }
    uint64_t *p = malloc((n ? n : 1) * sizeof *p);
    size_t np = 0, cap = 1024;
    match_pair *pairs = malloc(cap * sizeof *pairs);
    if (!p || !pairs)
        goto oom;
    for (unsigned t = 0; t < ps.ntables; t++) {
        const perm_table *pt = &ps.tables[t];
        for (size_t i = 0; i < n; i++)
            p[i] = perm_apply(pt, h[i]);
        qsort(p, n, sizeof *p, bench_cmp_u64);
        for (size_t i = 0; i < n; i++) {
            for (size_t j = i + 1; j < n && ((p[i] ^ p[j]) & pt->prefix_mask) == 0; j++) {
                if (ham_dist(p[i], p[j]) > k)
                    continue;
                uint64_t a = perm_revert(pt, p[i]), b = perm_revert(pt, p[j]);
                if (np == cap) {
                    match_pair *np2 = realloc(pairs, (cap *= 2) * sizeof *pairs);
                    if (!np2)
                        goto oom;
                    pairs = np2;
                }
                pairs[np++] = (match_pair){a < b ? a : b, a < b ? b : a};
            }
        }
    }
    qsort(pairs, np, sizeof *pairs, bench_cmp_pair);
    size_t u = 0;
    for (size_t i = 0; i < np; i++)
        if (u == 0 || bench_cmp_pair(&pairs[u - 1], &pairs[i]) != 0)
            pairs[u++] = pairs[i];
    free(p);
    perm_set_free(&ps);
    *out = pairs;
    *nout = u;
    return 0;
oom:
    fprintf(stderr, "bench-find_all: out of memory\n");
    free(p);
    free(pairs);
    perm_set_free(&ps);
    return -1;
}

/* ---- Main ---- */

/* Parse an unsigned option value or exit with a message. */
static uint64_t bench_arg(const char *opt, const char *s, uint64_t min, uint64_t max)
{
    uint64_t v;
    const char *why;
    if (!s || parse_uint_range(s, strlen(s), min, max, &v, &why) < 0) {
        fprintf(stderr, "bench-find_all: %s: %s\n", opt, s ? why : "missing value");
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    size_t n = 1000000, planted = 0;
    int noref = 0;
    unsigned k = 3, reps = 3, threads = 0, nb = 0, blocks[16];
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-n"))
            n = (size_t)bench_arg(o, v, 0, 100000000);
        else if (!strcmp(o, "-d"))
            k = (unsigned)bench_arg(o, v, 0, 63);
        else if (!strcmp(o, "-b") && nb < 16)
            blocks[nb++] = (unsigned)bench_arg(o, v, 1, 64);
        else if (!strcmp(o, "-r"))
            reps = (unsigned)bench_arg(o, v, 1, 99);
        else if (!strcmp(o, "-t"))
            threads = (unsigned)bench_arg(o, v, 0, 64);
        else if (!strcmp(o, "-x"))
            noref = bench_arg(o, v, 0, 1) != 0;
        else if (!strcmp(o, "-p"))
            planted = (size_t)bench_arg(o, v, 0, 100000000);
        else {
            fprintf(stderr, "usage: bench-find_all [-n COUNT] [-d DISTANCE] [-b BLOCKS]... "
                            "[-r REPEATS] [-t THREADS] [-p PLANTED] [-x 1]\n");
            return 2;
        }
        i++;
    }
    if (nb == 0) {
        blocks[nb++] = 4;
        blocks[nb++] = 5;
        blocks[nb++] = 6;
    }
    if (planted > n)
        planted = n;
    uint64_t *h = malloc((n ? n : 1) * sizeof *h);
    if (!h) {
        fprintf(stderr, "bench-find_all: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        h[i] = bench_rand();
    for (size_t i = 0; i < planted; i++) { /* a near copy of an earlier random hash */
        size_t src = planted + (size_t)(bench_rand() % (n - planted ? n - planted : 1));
        uint64_t flip = 0;
        unsigned f = 1 + (unsigned)(bench_rand() % (k ? k : 1));
        while ((unsigned)__builtin_popcountll(flip) < f && k)
            flip |= 1ULL << (bench_rand() & 63);
        h[i] = h[src < n ? src : 0] ^ flip;
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int status = 0;
    for (unsigned bi = 0; bi < nb; bi++) {
        unsigned m = blocks[bi];
        double t_ours[99], t_clu[99], t_ref[99], c_ours[99];
        match_pair *ours = NULL, *ref = NULL;
        size_t n_ours = 0, n_ref = 0, nclu = 0;
        char err[128];
        for (unsigned r = 0; r < reps; r++) {
            free(ours);
            double c0 = bench_cpu(), t0 = bench_now();
            if (match_find_all(h, n, m, k, threads, &ours, &n_ours, err, sizeof err) < 0) {
                fprintf(stderr, "bench-find_all: %s\n", err);
                return 1;
            }
            t_ours[r] = bench_now() - t0;
            c_ours[r] = bench_cpu() - c0;
            uint64_t *vals;
            size_t *offs;
            t0 = bench_now();
            if (match_find_clusters(h, n, m, k, threads, &vals, &offs, &nclu, err, sizeof err) < 0) {
                fprintf(stderr, "bench-find_all: %s\n", err);
                return 1;
            }
            t_clu[r] = bench_now() - t0;
            free(vals);
            free(offs);
            free(ref);
            ref = NULL;
            t_ref[r] = 0;
            if (noref)
                continue;
            t0 = bench_now();
            if (ref_find_all(h, n, m, k, &ref, &n_ref) < 0)
                return 1;
            t_ref[r] = bench_now() - t0;
        }
        int same = noref || (n_ours == n_ref && (n_ref == 0 || !memcmp(ours, ref, n_ref * sizeof *ref)));
        double mo = bench_median(t_ours, (int)reps), mc = bench_median(t_clu, (int)reps);
        double mr = bench_median(t_ref, (int)reps), mcpu = bench_median(c_ours, (int)reps);
        printf("bench=find_all n=%zu distance=%u blocks=%u tables=%zu threads=%u cpus=%ld "
               "pairs=%zu clusters=%zu impl=ours median_s=%.4f cpu_median_s=%.4f "
               "clusters_median_s=%.4f ref_median_s=%.4f ratio=%.1f same_pairs=%s\n",
               n, k, m, perm_table_count(m, k), threads, ncpu, n_ours, nclu, mo, mcpu, mc, mr,
               mo > 0 ? mr / mo : 0.0, noref ? "unchecked" : same ? "yes" : "NO");
        fflush(stdout);
        if (!same)
            status = 1;
        free(ours);
        free(ref);
    }
    free(h);
    return status;
}
