/* quality.h: what bench-quality's two files share: the token type, the settings
 * (feature schemes, variants.c) and the allocation helpers (quality.c). */
#ifndef BENCH_QUALITY_H
#define BENCH_QUALITY_H

#include <stddef.h>
#include <stdint.h>

#include "fingerprint.h"

typedef struct tok {
    const char *p;            /* bytes in a document's text (unmodified) */
    uint32_t len;
    uint64_t h;               /* fp_token_hash */
} tok;

static inline uint64_t le64(uint64_t x)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_bswap64(x);
#else
    return x;
#endif
}

enum { WT_NONE, WT_LOGTF, WT_SQRTTF, WT_STOP, WT_DOCFREQ, WT_GRAM };
enum { TK_PLAIN, TK_NUM, TK_FOLD };

typedef struct setting {
    const char *name;
    unsigned grams;           /* bit w-1 set: w-token shingles are features (w 1..4) */
    int weight;               /* WT_* */
    int stop_w;               /* WT_STOP: weight (of 4) of features made only of stop words */
    int tokmode;              /* TK_*: how token hashes are made */
    int gram_w[4];            /* WT_GRAM: weight of each occurrence of a w-token feature */
} setting;

/* Per-thread working memory of the feature functions. */
typedef struct scratch {
    uint64_t *th;
    size_t th_cap;
    uint64_t *f;              /* features */
    size_t f_cap;
    int64_t *w;               /* their weights */
    size_t w_cap;
    uint64_t *hk;             /* hash table keys (feature or token hash) */
    uint32_t *hc;             /* counts; 0 = empty slot */
    size_t h_cap;             /* slots (power of two) */
} scratch;

/* The settings measured; the first is the baseline (algorithm v1, window 3). */
extern const setting settings[];
extern const size_t nsettings;
#define NSET nsettings
#define NSET_MAX 64           /* bound of the per-setting arrays */

void variants_init(void);
/* Fingerprint of the token list t[0..n) under setting s. */
uint64_t fingerprint(const setting *s, const tok *t, size_t n, scratch *sc);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t sz);
/* Grow *p (elements of sz bytes, capacity *cap) to hold at least need elements. */
void grow(void **p, size_t *cap, size_t need, size_t sz);

#endif
