/* bench-dirfind: a worker's bucket lookups in its cached directories
 * (bdir_shard_find) against a plain binary search over the same bounds, in the same
 * run. A worker of a two-worker deployment caches 128 first-byte shards of 20
 * tables (2,560 directories); a query looks up 20 of them at random, so the lookups
 * read memory no cache holds. --bounds is the buckets a shard has: about N / 256 /
 * 190 for a corpus of N fingerprints (205 at 10M, 20 at 1M).
 *
 *   bench-dirfind [--bounds B] [--shards S] [--lookups L] [--runs R] [--seed X]
 *
 * Prints `bench=dirfind path=P ns_per_lookup=T` (median of R runs) for P = binary
 * and find, then find_vs_binary (binary's time over find's: above 1 is faster). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "bucketdir.h"

static size_t binary_find(const bdir_shard *d, bdir_bound m)
{
    size_t a = 0, b = d->n;
    while (b - a > 1) {
        size_t c = a + (b - a) / 2;
        if (d->lo[c] <= m)
            a = c;
        else
            b = c;
    }
    return a;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static long opt(int argc, char **argv, const char *name, long def, long lo, long hi)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], name) != 0)
            continue;
        char *end;
        long v = strtol(argv[i + 1], &end, 10);
        if (*end != '\0' || v < lo || v > hi) {
            fprintf(stderr, "bench-dirfind: %s: want %ld..%ld\n", name, lo, hi);
            exit(2);
        }
        return v;
    }
    return def;
}

int main(int argc, char **argv)
{
    static const char *known[] = {"--bounds", "--shards", "--lookups", "--runs", "--seed"};
    for (int i = 1; i < argc; i += 2) {
        int ok = i + 1 < argc;
        for (size_t k = 0; ok && k < sizeof known / sizeof known[0]; k++)
            if (strcmp(argv[i], known[k]) == 0)
                ok = 2;
        if (ok != 2) {
            fprintf(stderr, "usage: bench-dirfind [--bounds B] [--shards S] [--lookups L] "
                            "[--runs R] [--seed X]\n");
            return 2;
        }
    }
    size_t nb = (size_t)opt(argc, argv, "--bounds", 205, 1, 1000000);
    size_t ns = (size_t)opt(argc, argv, "--shards", 2560, 1, 1000000);
    size_t nl = (size_t)opt(argc, argv, "--lookups", 5000000, 1, 1000000000);
    int runs = (int)opt(argc, argv, "--runs", 5, 1, 101);
    uint64_t seed = (uint64_t)opt(argc, argv, "--seed", 1, 0, 1L << 40), st = seed << 32;

    bdir_shard *d = calloc(ns, sizeof *d);
    bdir_bound *m = malloc(nl * sizeof *m);
    uint32_t *which = malloc(nl * sizeof *which);
    double *t[2] = {malloc((size_t)runs * sizeof(double)), malloc((size_t)runs * sizeof(double))};
    if (!d || !m || !which || !t[0] || !t[1]) {
        fprintf(stderr, "bench-dirfind: out of memory\n");
        return 1;
    }
    /* each directory: the split points between neighbours of 2 * B sorted random
     * members, as splits at the middle of full buckets leave them */
    uint64_t *mem = malloc(2 * nb * sizeof *mem);
    if (mem == NULL)
        return 1;
    for (size_t s = 0; s < ns; s++) {
        if (bdir_shard_init(&d[s]) != 0)
            return 1;
        for (size_t i = 0; i < 2 * nb; i++)
            mem[i] = bdir_member(bench_next(&st));
        qsort(mem, 2 * nb, sizeof *mem, cmp_u64);
        for (size_t i = 1; i < nb; i++)
            if (mem[2 * i - 1] < mem[2 * i] &&
                bdir_shard_add(&d[s], mem[2 * i]) != 0)     /* a bound above mem[2i-1] */
                return 1;
    }
    free(mem);
    for (size_t i = 0; i < nl; i++) {
        which[i] = (uint32_t)(bench_next(&st) % ns);
        m[i] = bdir_member(bench_next(&st));
    }
    uint64_t check[2] = {0, 0};
    for (int r = 0; r < runs; r++) {
        for (int p = 0; p < 2; p++) {           /* alternating: the same conditions */
            uint64_t sum = 0;
            double t0 = bench_now();
            for (size_t i = 0; i < nl; i++)
                sum += p ? bdir_shard_find(&d[which[i]], m[i]) : binary_find(&d[which[i]], m[i]);
            t[p][r] = (bench_now() - t0) * 1e9 / (double)nl;
            check[p] = sum;
        }
    }
    if (check[0] != check[1]) {
        fprintf(stderr, "bench-dirfind: the two searches disagree\n");
        return 1;
    }
    double med[2];
    for (int p = 0; p < 2; p++) {
        med[p] = bench_median(t[p], runs);
        printf("bench=dirfind path=%s bounds=%zu shards=%zu lookups=%zu ns_per_lookup=%.1f\n",
               p ? "find" : "binary", d[0].n, ns, nl, med[p]);
    }
    printf("bench=dirfind find_vs_binary=%.2f\n", med[0] / med[1]);
    for (size_t s = 0; s < ns; s++)
        bdir_shard_free(&d[s]);
    free(d);
    free(m);
    free(which);
    free(t[0]);
    free(t[1]);
    return 0;
}
