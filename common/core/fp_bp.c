/* fp_bp.c: lookups in the known-boilerplate table of algorithm v4 (fp_bp.h). The
 * table itself is generated data, fp_bp_table.inc (bench/quality/bptable.py). */
#include "fp_bp.h"

/* FPBP_TABLE_VERSION, fpbp_table[] (sorted ascending, no repeats), fpbp_index[]
 * (where each bucket of equal top FPBP_INDEX_BITS bits starts) and fpbp_filter[]
 * (FPBP_FILTER_K bits of one word set per entry, fp_bp.h) */
#include "fp_bp_table.inc"

#define FPBP_N (sizeof fpbp_table / sizeof fpbp_table[0])
_Static_assert(sizeof fpbp_index / sizeof fpbp_index[0] == (1u << FPBP_INDEX_BITS) + 1,
               "one index entry per bucket, and the end");
_Static_assert(FPBP_N < 65536, "16-bit bucket starts");
_Static_assert(sizeof fpbp_filter / sizeof fpbp_filter[0] == FPBP_FILTER_MASK + 1,
               "one filter word per value of the low bits");

int fpbp_find(uint64_t h)
{
    size_t b = (size_t)(h >> (64 - FPBP_INDEX_BITS));
    for (size_t i = fpbp_index[b], end = fpbp_index[b + 1]; i < end; i++)
        if (fpbp_table[i] >= h)
            return fpbp_table[i] == h;
    return 0;
}

size_t fpbp_table_size(void)
{
    return FPBP_N;
}

uint64_t fpbp_table_at(size_t i)
{
    return i < FPBP_N ? fpbp_table[i] : 0;
}

unsigned fpbp_table_version(void)
{
    return FPBP_TABLE_VERSION;
}
