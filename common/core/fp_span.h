/* fp_span.h: features recorded once and voted into several fingerprint states
 * (internal: html.c fingerprints the blocks a page keeps a second time, for its main
 * content, without tokenizing and hashing their text again). Not installed; the
 * fpspan_ prefix keeps the functions out of libsimhash's exports.
 *
 * A state recording a span (fpspan_begin .. fpspan_end) votes as before, and keeps
 * in the span what the span's tokens contribute: their first and last token hashes,
 * their count, and the vote of their features, except the n-grams of the span's first
 * token (those reach back to tokens before the span). fpspan_replay then does to
 * another state exactly what feeding it the span's text would do, given that the
 * text starts and ends at token boundaries (a separator before and after it): the
 * missing n-grams come from that state's own last tokens. Algorithms v2 and v3
 * (unigrams and bigrams, docs/fingerprint.md "Algorithm v2") and v4.
 *
 * v4 (a token is boilerplate when a table K-gram covers it, fp_bp.h) reaches K - 1
 * tokens across each end of a span: the span keeps the vote of its tokens FPSPAN_HEAD
 * - K + 1 .. ntok - K only (their K-grams and bigrams lie inside it), its first
 * FPSPAN_HEAD token hashes, its last FP_V4_WINDOW hashes, where its last table K-gram
 * ends and up to where its K-grams were looked up; a replay pushes the first tokens
 * (the K-grams they need are looked up then), adds the recorded vote and leaves the
 * last K - 1 tokens to vote later, as a text would. */
#ifndef SIMHASH_FP_SPAN_H
#define SIMHASH_FP_SPAN_H

#include <stdint.h>

#include "fingerprint.h"
#include "fp_bp.h"
#include "fp_vote.h"

/* v4: the first token hashes a span keeps: replays push them, the K-grams of the
 * last K - 1 given (2 * K - 1 tokens: every token whose vote depends on the tokens
 * before the span) */
#define FPSPAN_HEAD (2 * FPBP_K - 1)
/* v4: the token hashes a state keeps: the token about to vote needs the K-grams
 * ending at it and at the K - 1 tokens after it (2 * K - 1 tokens), and the token
 * before it for its bigram (K + 1) */
#define FP_V4_WINDOW (2 * FPBP_K - 1)

typedef struct fp_span {
    fp_vote vote;             /* the span's features but its first token's n-grams */
    uint64_t first, last;     /* its first and last token hashes */
    uint64_t ntok;            /* its tokens */
    int v4;                   /* recorded by a v4 state: the fields below are set */
    fp_vote bvote;            /* the boilerplate features of the vote above */
    uint64_t base;            /* the recording state's tokens before the span */
    uint64_t head[FPSPAN_HEAD];   /* its first token hashes */
    uint64_t tail[FP_V4_WINDOW];  /* its last token hashes, little-endian, oldest first */
    uint64_t hit_end;         /* 1 + the last token of its last table K-gram found
                                 (one inside it, from its token 0 on), or 0 */
    uint64_t kg_seen;         /* its K-grams ending within its first kg_seen tokens
                                 were looked up or need no lookup (fp_v4_bp) */
    int tail_bp;              /* its token ntok - K is boilerplate */
} fp_span;

/* s records its next tokens in sp (until fpspan_end, or fp_state_final, which ends
 * it). 0, or -1 when s is no v2/v3/v4 state or is inside a token (nothing recorded). */
int fpspan_begin(fp_state *s, fp_span *sp);
/* Ends the recording: 0 when sp holds whole tokens (s is between tokens), -1 when a
 * token was still open (the span must not be replayed) or nothing was recorded. */
int fpspan_end(fp_state *s);
/* Votes sp into t as if t were fed the span's text: 0, or -1 when t is no state of
 * sp's algorithm (v2 and v3 share features), records a span itself, or is inside a
 * token (t unchanged: feed the text). */
int fpspan_replay(fp_state *t, const fp_span *sp);

#endif
