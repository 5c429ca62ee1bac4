/* fp_vote.h: the simhash vote of the text fingerprints (internal, not installed; the
 * fpvote_ prefix keeps it out of libsimhash's exports). A vote counts, per bit, the
 * feature hashes with the bit set; the fingerprint sets the bits more than half of
 * them have (docs/fingerprint.md "Vote"). The counts are exact, so the order of the
 * hashes and the way they are grouped never change a fingerprint. */
#ifndef SIMHASH_FP_VOTE_H
#define SIMHASH_FP_VOTE_H

#include <stdint.h>

typedef struct fp_vote {
    uint64_t pl[8];           /* bit-sliced counters: bit i of pl[k] is bit k of the
                                 count of hashes with bit i set, since the last flush */
    unsigned pl_n;            /* hashes in pl (at most 255) */
    uint64_t n;               /* hashes voted in total */
    uint64_t cnt[64];         /* per bit: hashes with the bit set, flushed part */
    uint64_t grp[8];          /* hashes waiting to be added as one group of 8 */
    unsigned ngrp;
} fp_vote;

void fpvote_init(fp_vote *v);
/* Adds the 8 hashes of v->grp (fpvote_add calls it). */
void fpvote_group(fp_vote *v);
/* The voted fingerprint: bit i set when more than half of the hashes had it set. */
uint64_t fpvote_result(fp_vote *v);
/* v5's weighted vote: v's hashes weigh FP_V5_W_TEXT, bp's FP_V5_W_BP (fp_bp.h). */
uint64_t fpvote_result_v5(fp_vote *v, fp_vote *bp);

static inline void fpvote_add(fp_vote *v, uint64_t h)
{
    v->grp[v->ngrp++] = h;
    v->n++;
    if (v->ngrp == 8)
        fpvote_group(v);
}

#endif
