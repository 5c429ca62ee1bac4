/* bench/bench_util.h: the helpers every benchmark program shares: a seeded
 * pseudo-random sequence and clocks. Header-only (static inline) so each program
 * stays one file plus the libraries it measures. */
#ifndef SIMHASH_BENCH_UTIL_H
#define SIMHASH_BENCH_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* qsort order of doubles, ascending. */
static inline int bench_cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Median of r timings (sorts t; the mean of the two middle ones when r is even). */
static inline double bench_median(double *t, int r)
{
    qsort(t, (size_t)r, sizeof *t, bench_cmp_double);
    return r % 2 ? t[r / 2] : (t[r / 2 - 1] + t[r / 2]) / 2;
}

/* splitmix64 finaliser of x + the golden-ratio increment: a well-mixed 64-bit value
 * for every x; (seed, i) -> bench_splitmix(seed + i) gives a reproducible sequence. */
static inline uint64_t bench_splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* The next value of the sequence kept in *state. */
static inline uint64_t bench_next(uint64_t *state)
{
    uint64_t z = bench_splitmix(*state);
    *state += 0x9e3779b97f4a7c15ULL;
    return z;
}

/* Seconds on clock id (CLOCK_MONOTONIC for wall time, CLOCK_THREAD_CPUTIME_ID for one
 * thread's CPU time). */
static inline double bench_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Monotonic wall-clock seconds. */
static inline double bench_now(void)
{
    return bench_clock(CLOCK_MONOTONIC);
}

#endif
