/* fingerprint.h: Charikar simhash fingerprints of text and of feature hashes.
 *
 * The algorithm is pinned by golden vectors in tests/unit/test_fingerprint.c and
 * described byte for byte in docs/fingerprint.md: a fingerprint computed today is
 * the fingerprint computed by every later version, on every machine. */
#ifndef SIMHASH_FINGERPRINT_H
#define SIMHASH_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#define FP_WINDOW_DEFAULT 3   /* tokens per shingle */
#define FP_WINDOW_MAX 64

/* Called once per token; tok points into the (unmodified) input, len bytes,
 * not lower-cased. Return non-zero to stop tokenizing. */
typedef int (*fp_token_cb)(const char *tok, size_t len, void *arg);

/* Split text into tokens (see docs/fingerprint.md); returns the token count (when cb
 * stops early: the tokens passed to cb, the stopping one included). cb may be NULL. */
size_t fp_tokenize(const char *text, size_t len, fp_token_cb cb, void *arg);

/* 64-bit hash of one token as the fingerprint uses it (after ASCII lower-casing). */
uint64_t fp_token_hash(const char *tok, size_t len);

/* simhash-cpp compatible vote: bit i of the result is set when more of the n
 * hashes have bit i set than unset. n == 0 gives 0. */
uint64_t fp_compute(const uint64_t *hashes, size_t n);

/* Weighted vote: hash j adds weights[j] to bit i's sum when set, subtracts it
 * when unset; the bit is set when the sum is > 0. */
uint64_t fp_compute_weighted(const uint64_t *hashes, const int64_t *weights, size_t n);

/* Fingerprint of a text: tokens, shingles of `window` consecutive tokens
 * (1 <= window <= FP_WINDOW_MAX; 0 means FP_WINDOW_DEFAULT), each shingle hashed,
 * then fp_compute. A text with fewer tokens than window is one shingle of all of
 * them; a text without tokens has fingerprint 0. */
uint64_t fp_text(const char *text, size_t len, unsigned window);
/* (fp_text treats a window above FP_WINDOW_MAX as FP_WINDOW_MAX: callers taking the
 * window from users check it against 1..FP_WINDOW_MAX first.) */

/* Streaming form of fp_text: the fingerprint of the concatenation of all updates,
 * however the text is split (a split inside a UTF-8 sequence or a token is fine).
 * Memory stays bounded whatever the text length. */
typedef struct fp_state fp_state;

/* NULL when window > FP_WINDOW_MAX (0 means FP_WINDOW_DEFAULT) or out of memory. */
fp_state *fp_state_new(unsigned window);
void fp_state_free(fp_state *s);
void fp_state_update(fp_state *s, const void *data, size_t len);
/* The fingerprint of the text given so far; the state is then reset for a new text. */
uint64_t fp_state_final(fp_state *s);

#endif
