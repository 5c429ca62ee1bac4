/* testutil.h: helpers shared by the unit tests: a seeded splitmix64 generator,
 * planted near-duplicates, and the VALGRIND=1 switch for lighter runs.
 * Define TESTUTIL_SEED before including to choose the test's own sequence. */
#ifndef SIMHASH_TESTUTIL_H
#define SIMHASH_TESTUTIL_H

#include <stdint.h>
#include <stdlib.h>

#ifndef TESTUTIL_SEED
#define TESTUTIL_SEED 0x2545f4914f6cdd1dULL
#endif

static uint64_t rng_state = TESTUTIL_SEED;

/* splitmix64: returns the next pseudo-random 64-bit value. */
static inline uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Non-zero under valgrind (VALGRIND=1 in the environment): use smaller sets. */
static inline int light(void)
{
    return getenv("VALGRIND") != NULL;
}

/* A copy of x with exactly `flips` distinct bits flipped. */
static inline uint64_t flip_bits(uint64_t x, unsigned flips)
{
    uint64_t done = 0;
    while ((unsigned)__builtin_popcountll(done) < flips)
        done |= 1ULL << (rnd() & 63);
    return x ^ done;
}

#endif
