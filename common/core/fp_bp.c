/* fp_bp.c: lookups in the known-boilerplate table of algorithm v4 (fp_bp.h). The
 * table itself is generated data, fp_bp_table.inc (bench/quality/bptable.py). */
#include "fp_bp.h"

/* FPBP_TABLE_VERSION, fpbp_table[] (sorted ascending, no repeats), fpbp_index[]
 * (where each bucket of equal top FPBP_INDEX_BITS bits starts) and fpbp_filter[] (a
 * bit per value of the low FPBP_FILTER_BITS bits, set when an entry has it) */
#include "fp_bp_table.inc"

#define FPBP_N (sizeof fpbp_table / sizeof fpbp_table[0])
_Static_assert(sizeof fpbp_index / sizeof fpbp_index[0] == (1u << FPBP_INDEX_BITS) + 1,
               "one index entry per bucket, and the end");
_Static_assert(sizeof fpbp_filter * 8 == (size_t)1 << FPBP_FILTER_BITS, "one filter bit per value");

int fpbp_has(uint64_t h)
{
    uint64_t f = h & (((uint64_t)1 << FPBP_FILTER_BITS) - 1);
    if (!((fpbp_filter[f >> 6] >> (f & 63)) & 1))
        return 0;
    size_t b = (size_t)(h >> (64 - FPBP_INDEX_BITS));
    size_t lo = fpbp_index[b], hi = fpbp_index[b + 1];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (fpbp_table[mid] < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < FPBP_N && fpbp_table[lo] == h;
}

size_t fpbp_table_size(void)
{
    return FPBP_N;
}

unsigned fpbp_table_version(void)
{
    return FPBP_TABLE_VERSION;
}
