/* fingerprint.h: Charikar simhash fingerprints of text and of feature hashes.
 *
 * The algorithm is pinned by golden vectors in tests/unit/test_fingerprint.c and
 * described byte for byte in docs/fingerprint.md: a fingerprint computed today is
 * the fingerprint computed by every later version, on every machine. */
#ifndef SIMHASH_FINGERPRINT_H
#define SIMHASH_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#define FP_WINDOW_DEFAULT 3   /* tokens per shingle (algorithm v1) */
#define FP_WINDOW_MAX 64

/* Fingerprint algorithms (docs/fingerprint.md). v1: ASCII case folding, shingles of
 * `window` tokens (the plain-text baseline). v5 (the default): Unicode case folding and
 * compatibility decomposition, its own token classes, unigram and bigram features, those
 * of known boilerplate (runs of words of a table of license text shipped with the
 * algorithm) weighing half (section "Algorithm v5: text"); HTML pages by their article,
 * found on a tree of the page (html_article.h, section "Algorithm v5").
 * Versions 2 to 4 existed before the first release and were removed (v5's text
 * fingerprints are the former v4's); fp_params_parse names v5 as their successor.
 * A fingerprint is only comparable with fingerprints of the same algorithm and
 * settings; deployments record them in simhash:meta. */
enum { FP_V1 = 1, FP_V5 = 5, FP_VERSION_DEFAULT = FP_V5 };

typedef struct fp_params {
    unsigned version;         /* FP_V1 or FP_V5; 0 means FP_VERSION_DEFAULT */
    unsigned window;          /* v1: tokens per shingle, 1..FP_WINDOW_MAX, 0 means
                                 FP_WINDOW_DEFAULT. v5: must be 0 (fixed features) */
} fp_params;

/* Settings as text, the form the programs take and store: "v5", "v1" (window 3) or
 * "v1:W". fp_params_parse returns 0, or -1 with a message in err ("v2", "v3" and "v4":
 * removed, v5 named as their successor). */
int fp_params_parse(const char *spec, fp_params *out, char *err, size_t errlen);
/* The version of the removed algorithm spec names ("v2", "v3", "v4", upper case V
 * too), else 0: a corpus recording one must be rebuilt (fp_params_parse refuses it). */
unsigned fp_params_removed(const char *spec);
/* The option fingerprint-algorithm of a program: spec NULL or "" (unset) leaves
 * *out and canon as they are and returns 0; otherwise parses it into *out and writes its canonical text
 * into canon. Returns 0, or -1 with "fingerprint-algorithm: ..." in err. */
int fp_params_option(const char *spec, fp_params *out, char *canon, size_t canon_len,
                     char *err, size_t errlen);
/* The canonical text of p ("v5", "v1:3"); p must be valid (fp_params_check). */
void fp_params_format(const fp_params *p, char *buf, size_t n);
/* 0 when p is valid, else -1 with a message in err. */
int fp_params_check(const fp_params *p, char *err, size_t errlen);

/* Fingerprint of a text with the given algorithm (NULL: the default, v5). */
uint64_t fp_text_p(const char *text, size_t len, const fp_params *p);

/* Called once per token (the token classes of algorithm v1); tok points into the (unmodified) input, len bytes,
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

/* Algorithm v1 fingerprint of a text: tokens, shingles of `window` consecutive tokens
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

/* Algorithm v1: NULL when window > FP_WINDOW_MAX (0 means FP_WINDOW_DEFAULT) or out
 * of memory. */
fp_state *fp_state_new(unsigned window);
/* Any algorithm (NULL: the default); NULL when p is invalid or out of memory. */
fp_state *fp_state_new_p(const fp_params *p);
void fp_state_free(fp_state *s);
/* dst becomes a copy of src (its parameters and the text given so far): both then go
 * on independently. */
void fp_state_copy(fp_state *dst, const fp_state *src);
void fp_state_update(fp_state *s, const void *data, size_t len);
/* The fingerprint of the text given so far; the state is then reset for a new text. */
uint64_t fp_state_final(fp_state *s);

#endif
