/* bench/gen.c: bench-gen, test data for the batch tools: N fingerprints, uniformly
 * random except that every K-th is a copy of an earlier one with 0..D random bits
 * flipped (a planted near-duplicate), from a fixed seed.
 *   bench-gen -n N [-k K] [-d D] [-s SEED] [--text] -o FILE
 * Binary output is little-endian u64s (the tools' --format binary); --text is one
 * decimal per line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

int main(int argc, char **argv)
{
    unsigned long long n = 0, k = 10, d = 3, seed = 1;
    const char *out = NULL;
    int text = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "-k") == 0 && i + 1 < argc)
            k = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "-d") == 0 && i + 1 < argc)
            d = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strcmp(argv[i], "--text") == 0)
            text = 1;
        else {
            fprintf(stderr, "usage: bench-gen -n N [-k K] [-d D] [-s SEED] [--text] -o FILE\n");
            return 2;
        }
    }
    if (n == 0 || out == NULL || k < 2 || d > 64) {
        fprintf(stderr, "usage: bench-gen -n N [-k K] [-d D] [-s SEED] [--text] -o FILE\n");
        return 2;
    }
    FILE *f = fopen(out, "wb");
    if (f == NULL) {
        perror(out);
        return 1;
    }
    static uint64_t recent[4096];
    uint64_t st = seed * 0x9e3779b97f4a7c15ULL;
    for (unsigned long long i = 0; i < n; i++) {
        uint64_t v;
        if (i % k == k - 1 && i > 0) {
            v = recent[bench_next(&st) % (i < 4096 ? i : 4096)];
            unsigned flips = (unsigned)(bench_next(&st) % (d + 1));
            for (unsigned j = 0; j < flips; j++)
                v ^= 1ull << (bench_next(&st) & 63);
        } else {
            v = bench_next(&st);
        }
        recent[i % 4096] = v;
        if (text)
            fprintf(f, "%llu\n", (unsigned long long)v);
        else
            fwrite(&v, 8, 1, f);
    }
    if (fclose(f) != 0) {
        perror(out);
        return 1;
    }
    return 0;
}
