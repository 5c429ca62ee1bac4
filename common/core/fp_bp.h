/* fp_bp.h: the known-boilerplate table of fingerprint algorithm v4 (internal, not
 * installed; the fpbp_ prefix keeps it out of libsimhash's exports).
 *
 * v4 votes the features of a token inside a run of FPBP_K tokens found in this table
 * with weight FP_V4_W_BP, the others with FP_V4_W_TEXT (docs/fingerprint.md
 * "Algorithm v4"; bench/quality/boilerplate.py measured 1/4, 1/2 and 2/3). The
 * table is part of the algorithm: generated once by bench/quality/bptable.py from
 * Debian-packaged license text, checked in (fp_bp_table.inc) and never rebuilt on a
 * user's machine, so v4 fingerprints are the same everywhere. A new table is a new
 * algorithm version. */
#ifndef SIMHASH_FP_BP_H
#define SIMHASH_FP_BP_H

#include <stddef.h>
#include <stdint.h>

#define FPBP_K 6              /* tokens per boilerplate K-gram */
#define FP_V4_W_TEXT 2        /* weight of a feature of other text */
#define FP_V4_W_BP 1          /* weight of a feature of boilerplate */

/* Whether the K-gram hash h is in the table (binary search in its bucket of the
 * sorted array). */
int fpbp_has(uint64_t h);
/* Entries and version of the table (fp_bp_table.inc: 39,619 sorted hashes, 310 KiB,
 * with a bucket index of 16 KiB and a bit filter of 64 KiB that turn most lookups
 * away in one bit test). */
size_t fpbp_table_size(void);
unsigned fpbp_table_version(void);

/* cb gets the hash of every K-gram of text as v4 computes it (v2's tokens; the
 * XXH3-64 of K little-endian token hashes), in order, repeats included: what the
 * table generator collects. */
typedef void (*fpbp_kgram_cb)(uint64_t h, void *arg);
void fpbp_kgrams(const char *text, size_t len, fpbp_kgram_cb cb, void *arg);

#endif
