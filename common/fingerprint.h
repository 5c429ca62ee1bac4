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

/* Split text into tokens (see docs/fingerprint.md); returns the token count. */
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

#endif
