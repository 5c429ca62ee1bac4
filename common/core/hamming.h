/* hamming.h: Hamming distance of 64-bit fingerprints (popcnt instruction on x86-64). */
#ifndef SIMHASH_HAMMING_H
#define SIMHASH_HAMMING_H

#include <stdint.h>

static inline unsigned ham_dist(uint64_t a, uint64_t b)
{
    return (unsigned)__builtin_popcountll(a ^ b);
}

#endif
