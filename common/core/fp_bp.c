/* fp_bp.c: lookups in the known-boilerplate table of algorithm v5 (fp_bp.h). The
 * table itself is generated data, fp_bp_table.inc (bench/quality/bptable.py). */
#include <pthread.h>

#include "fp_bp.h"

/* FPBP_TABLE_VERSION, fpbp_table[] (sorted ascending, no repeats, no 0) and
 * fpbp_filter[] (FPBP_FILTER_K bits of one word set per entry, fp_bp.h) */
#include "fp_bp_table.inc"

#define FPBP_N (sizeof fpbp_table / sizeof fpbp_table[0])
_Static_assert(sizeof fpbp_filter / sizeof fpbp_filter[0] == FPBP_FILTER_MASK + 1,
               "one filter word per value of the low bits");
_Static_assert(FPBP_N < (1u << FPBP_SLOT_BITS) * 3 / 4, "slots at most 3/4 full");

/* The table's entries in slots: each at its home slot (its top FPBP_SLOT_BITS bits)
 * or, when taken, right after the entry before it, in ascending order with empty
 * slots (0) between runs. An entry's run starts at or before its home slot and has no
 * gap up to it, so a lookup scans from the home slot to the first slot holding 0 or
 * a value >= the hash: usually the one cache line. Built from fpbp_table on the first
 * lookup (the same slots everywhere: they follow from the table alone). */
uint64_t fpbp_slots[(1u << FPBP_SLOT_BITS) + FPBP_SLOT_TAIL];
static pthread_once_t fpbp_once = PTHREAD_ONCE_INIT;
static int fpbp_ready;        /* fpbp_slots is built (atomic) */

static void fpbp_build(void)
{
    size_t next = 0;
    for (size_t i = 0; i < FPBP_N; i++) {
        size_t pos = (size_t)(fpbp_table[i] >> (64 - FPBP_SLOT_BITS));
        if (pos < next)
            pos = next;
        if (pos >= sizeof fpbp_slots / sizeof fpbp_slots[0] - 1)
            break;      /* cannot happen (the tail is far longer than any run): the
                           test of every entry would fail */
        fpbp_slots[pos] = fpbp_table[i];
        next = pos + 1;
    }
    __atomic_store_n(&fpbp_ready, 1, __ATOMIC_RELEASE);
}

int fpbp_find(uint64_t h)
{
    if (!__atomic_load_n(&fpbp_ready, __ATOMIC_ACQUIRE))
        pthread_once(&fpbp_once, fpbp_build);
    if (h == 0)
        return 0;       /* no entry is 0 (bptable.py checks): 0 marks an empty slot */
    /* the first two slots without branches (values ascend along a run, and a run has
     * no gap up to h's home slot, so h cannot come after a 0 or a larger value) */
    const uint64_t *p = &fpbp_slots[h >> (64 - FPBP_SLOT_BITS)];
    int hit = (p[0] == h) | (p[1] == h);
    if (hit | (p[1] >= h) | (p[1] == 0))       /* one branch, nearly always taken */
        return hit;
    for (p += 2;; p++)
        if (*p >= h || *p == 0)
            return *p == h;
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
