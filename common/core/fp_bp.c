/* fp_bp.c: lookups in the known-boilerplate table of algorithm v4 (fp_bp.h). The
 * table itself is generated data, fp_bp_table.inc (scripts/fp-bp-table.py). */
#include "fp_bp.h"

/* FPBP_TABLE_VERSION and fpbp_table[], sorted ascending, no repeats */
#include "fp_bp_table.inc"

#define FPBP_N (sizeof fpbp_table / sizeof fpbp_table[0])

int fpbp_has(uint64_t h)
{
    size_t lo = 0, hi = FPBP_N;
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
