/* fp_bp.h: the known-boilerplate table of fingerprint algorithm v5 (internal, not
 * installed; the fpbp_ prefix keeps it out of libsimhash's exports).
 *
 * v5 (text) votes the features of a token inside a run of FPBP_K tokens found in this table
 * with weight FP_V5_W_BP, the others with FP_V5_W_TEXT (docs/fingerprint.md
 * "Algorithm v5: text"; bench/quality/boilerplate.py measured 1/4, 1/2 and 2/3). The
 * table is part of the algorithm: generated once by bench/quality/bptable.py from
 * Debian-packaged license text, checked in (fp_bp_table.inc) and never rebuilt on a
 * user's machine, so v5 fingerprints are the same everywhere. A new table is a new
 * algorithm version. */
#ifndef SIMHASH_FP_BP_H
#define SIMHASH_FP_BP_H

#include <stddef.h>
#include <stdint.h>

#define FPBP_K 6              /* tokens per boilerplate K-gram */
#define FP_V5_W_TEXT 2        /* weight of a feature of other text */
#define FP_V5_W_BP 1          /* weight of a feature of boilerplate */

/* The lookup structures: a filter of 64-bit words beside the table (bptable.py writes
 * it with the same constants) in which every entry sets FPBP_FILTER_K bits, all in the
 * word its low bits name: one cache line read turns away about 98.8% of the K-grams
 * of ordinary text; then the table in hash slots by the top FPBP_SLOT_BITS bits
 * (fp_bp.c), usually one more cache line. */
#define FPBP_FILTER_MASK 8191u
#define FPBP_FILTER_SHIFT 13  /* the bits' numbers: 6 bits each, from bit 13 on */
#define FPBP_FILTER_K 3
#define FPBP_SLOT_BITS 16     /* 512 KiB of slots, 60% full */
#define FPBP_SLOT_TAIL 256    /* slots past the last home slot (runs go on there) */
extern const uint64_t fpbp_filter[FPBP_FILTER_MASK + 1];
extern uint64_t fpbp_slots[(1u << FPBP_SLOT_BITS) + FPBP_SLOT_TAIL];

/* Whether the K-gram hash h is in the table: the scan of its slots. */
int fpbp_find(uint64_t h);

/* Whether h is in the table: the filter first. */
static inline int fpbp_has(uint64_t h)
{
    uint64_t w = fpbp_filter[h & FPBP_FILTER_MASK], x = h >> FPBP_FILTER_SHIFT;
    _Static_assert(FPBP_FILTER_K == 3, "three bits a word");
    return ((w >> (x & 63)) & (w >> ((x >> 6) & 63)) & (w >> ((x >> 12) & 63)) & 1) &&
           fpbp_find(h);
}

/* Entries and version of the table (fp_bp_table.inc: 39,619 sorted hashes, 310 KiB,
 * and its filter of 64 KiB). */
size_t fpbp_table_size(void);
unsigned fpbp_table_version(void);
/* Entry i of the sorted table (i < fpbp_table_size(); 0 past its end): for tests. */
uint64_t fpbp_table_at(size_t i);

/* cb gets the hash of every K-gram of text as v5 computes it (v5's tokens; the
 * XXH3-64 of K little-endian token hashes), in order, repeats included: what the
 * table generator collects. */
typedef void (*fpbp_kgram_cb)(uint64_t h, void *arg);
void fpbp_kgrams(const char *text, size_t len, fpbp_kgram_cb cb, void *arg);

#endif
