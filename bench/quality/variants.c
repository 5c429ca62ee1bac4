/* variants.c: the feature schemes bench-quality compares (bench/quality/README.md):
 * n-gram windows and their mixes, term-frequency and stop-word weights, number
 * normalization and Unicode folding, each a function of a document's token list. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "quality.h"

/* ---- Feature schemes (the settings) ---- */


/* The settings measured; the first is the baseline (today's default). */
const setting settings[] = {
    {"w3", 4, WT_NONE, 0, TK_PLAIN, {0}},
    {"w1", 1, WT_NONE, 0, TK_PLAIN, {0}},
    {"w2", 2, WT_NONE, 0, TK_PLAIN, {0}},
    {"w4", 8, WT_NONE, 0, TK_PLAIN, {0}},
    {"w1+w2", 3, WT_NONE, 0, TK_PLAIN, {0}},
    {"w1+w2+w3", 7, WT_NONE, 0, TK_PLAIN, {0}},
    {"w1-logtf", 1, WT_LOGTF, 0, TK_PLAIN, {0}},
    {"w2-logtf", 2, WT_LOGTF, 0, TK_PLAIN, {0}},
    {"w1+w2-logtf", 3, WT_LOGTF, 0, TK_PLAIN, {0}},
    {"w1+w2+w3-logtf", 7, WT_LOGTF, 0, TK_PLAIN, {0}},
    {"w1-sqrttf", 1, WT_SQRTTF, 0, TK_PLAIN, {0}},
    {"w2-sqrttf", 2, WT_SQRTTF, 0, TK_PLAIN, {0}},
    {"w1+w2-sqrttf", 3, WT_SQRTTF, 0, TK_PLAIN, {0}},
    {"w1-stop0", 1, WT_STOP, 0, TK_PLAIN, {0}},
    {"w1-stop1/4", 1, WT_STOP, 1, TK_PLAIN, {0}},
    {"w2-stop0", 2, WT_STOP, 0, TK_PLAIN, {0}},
    {"w2-stop1/4", 2, WT_STOP, 1, TK_PLAIN, {0}},
    {"w1+w2-stop0", 3, WT_STOP, 0, TK_PLAIN, {0}},
    {"w1+w2-stop1/4", 3, WT_STOP, 1, TK_PLAIN, {0}},
    {"w1/2+w2", 3, WT_GRAM, 0, TK_PLAIN, {1, 2, 0, 0}},
    {"w1/4+w2", 3, WT_GRAM, 0, TK_PLAIN, {1, 4, 0, 0}},
    {"w1-docfreq", 1, WT_DOCFREQ, 0, TK_PLAIN, {0}},
    {"w1+w2-docfreq", 3, WT_DOCFREQ, 0, TK_PLAIN, {0}},
    {"w1-num", 1, WT_NONE, 0, TK_NUM, {0}},
    {"w2-num", 2, WT_NONE, 0, TK_NUM, {0}},
    {"w1+w2-num", 3, WT_NONE, 0, TK_NUM, {0}},
    {"w2-fold", 2, WT_NONE, 0, TK_FOLD, {0}},
};
const size_t nsettings = sizeof settings / sizeof settings[0];

/* The most common English function words; a feature made only of these is a "stop"
 * feature in the WT_STOP settings (compared after ASCII lower-casing, by token hash). */
static const char *const stop_words[] = {
    "the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "as", "with",
    "be", "on", "or", "by", "this", "are", "not", "an", "at", "from", "was", "if",
    "which", "you", "will", "can", "have", "has", "but", "its",
};
#define NSTOP (sizeof stop_words / sizeof stop_words[0])
#define STOP_SLOTS 128
static uint64_t stop_tab[STOP_SLOTS];   /* open addressing on token hash; 0 = empty */
static uint64_t num_hash;               /* fp_token_hash("0"): every all-digit token */

void variants_init(void)
{
    for (size_t i = 0; i < NSTOP; i++) {
        uint64_t h = fp_token_hash(stop_words[i], strlen(stop_words[i]));
        size_t s = h & (STOP_SLOTS - 1);
        while (stop_tab[s])
            s = (s + 1) & (STOP_SLOTS - 1);
        stop_tab[s] = h;
    }
    num_hash = fp_token_hash("0", 1);
}

static int is_stop(uint64_t h)
{
    for (size_t s = h & (STOP_SLOTS - 1); stop_tab[s]; s = (s + 1) & (STOP_SLOTS - 1))
        if (stop_tab[s] == h)
            return 1;
    return 0;
}

/* Token hash with number normalization: a token of ASCII digits only hashes as "0". */
static uint64_t token_hash_num(const tok *t)
{
    for (uint32_t i = 0; i < t->len; i++)
        if (t->p[i] < '0' || t->p[i] > '9')
            return t->h;
    return t->len ? num_hash : t->h;
}

/* Token hash with Unicode folding: a token with a byte >= 0x80 is decomposed NFKD and
 * case-folded (utf8proc_decompose with DECOMPOSE | COMPAT | CASEFOLD), encoded back to
 * UTF-8 and hashed with fp_token_hash; ASCII tokens and invalid UTF-8 as usual. */
static uint64_t token_hash_fold(const tok *t)
{
    uint32_t i;
    for (i = 0; i < t->len; i++)
        if ((unsigned char)t->p[i] >= 0x80)
            break;
    if (i == t->len)
        return t->h;
    enum { CP_BUF = 256 };
    utf8proc_int32_t cpbuf[CP_BUF];
    utf8proc_uint8_t outbuf[4 * CP_BUF];
    const utf8proc_option_t opt = UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT | UTF8PROC_CASEFOLD;
    utf8proc_ssize_t n = utf8proc_decompose((const utf8proc_uint8_t *)t->p, t->len,
                                            cpbuf, CP_BUF, opt);
    if (n < 0)
        return t->h;
    utf8proc_int32_t *cp = cpbuf;
    utf8proc_uint8_t *out = outbuf;
    if (n > CP_BUF) {
        cp = xmalloc((size_t)n * sizeof *cp);
        out = xmalloc((size_t)n * 4);
        utf8proc_ssize_t n2 = utf8proc_decompose((const utf8proc_uint8_t *)t->p, t->len,
                                                 cp, n, opt);
        if (n2 != n) {
            free(cp);
            free(out);
            return t->h;
        }
    }
    size_t olen = 0;
    for (utf8proc_ssize_t k = 0; k < n; k++)
        olen += (size_t)utf8proc_encode_char(cp[k], out + olen);
    uint64_t h = fp_token_hash((const char *)out, olen);
    if (cp != cpbuf) {
        free(cp);
        free(out);
    }
    return h;
}


/* Clear the count table and make it at least 2*n slots. */
static void table_reset(scratch *sc, size_t n)
{
    size_t need = 16;
    while (need < 2 * n)
        need *= 2;
    if (need > sc->h_cap) {
        free(sc->hk);
        free(sc->hc);
        sc->hk = xmalloc(need * sizeof *sc->hk);
        sc->hc = xmalloc(need * sizeof *sc->hc);
        sc->h_cap = need;
    }
    memset(sc->hc, 0, sc->h_cap * sizeof *sc->hc);
}

/* Slot of key in the count table (inserted with count 0 when absent... the caller
 * increments it). Keys are well mixed hashes, so the low bits index directly. */
static size_t table_slot(scratch *sc, uint64_t key)
{
    size_t mask = sc->h_cap - 1, s = (size_t)(key ^ (key >> 32)) & mask;
    while (sc->hc[s] && sc->hk[s] != key)
        s = (s + 1) & mask;
    sc->hk[s] = key;
    return s;
}

/* Feature of the w token hashes th[0..w): th[0] for w == 1, else XXH3_64bits of their
 * little-endian 64-bit words (the project's shingle hash). */
static uint64_t gram(const uint64_t *th, unsigned w)
{
    if (w == 1)
        return th[0];
    uint64_t le[FP_WINDOW_MAX];
    for (unsigned k = 0; k < w; k++)
        le[k] = le64(th[k]);
    return XXH3_64bits(le, 8 * (size_t)w);
}

/* Fingerprint of the token list t[0..n) under setting s. */
uint64_t fingerprint(const setting *s, const tok *t, size_t n, scratch *sc)
{
    if (n == 0)
        return 0;
    grow((void **)&sc->th, &sc->th_cap, n, sizeof(uint64_t));
    uint64_t *th = sc->th;
    for (size_t i = 0; i < n; i++)
        th[i] = s->tokmode == TK_NUM ? token_hash_num(&t[i])
              : s->tokmode == TK_FOLD ? token_hash_fold(&t[i]) : t[i].h;

    /* features: for each w in the set, one per run of w consecutive tokens; a single
     * window larger than the text gives one shingle of all tokens (as fp_text) */
    size_t maxf = 4 * n + 1;
    grow((void **)&sc->f, &sc->f_cap, maxf, sizeof(uint64_t));
    grow((void **)&sc->w, &sc->w_cap, maxf, sizeof(int64_t));
    uint64_t *f = sc->f;
    int64_t *wt = sc->w;
    size_t nf = 0;
    int single = (s->grams & (s->grams - 1)) == 0;
    for (unsigned w = 1; w <= 4; w++) {
        if (!(s->grams & (1u << (w - 1))))
            continue;
        if (n < w) {
            if (single)
                f[nf++] = gram(th, (unsigned)n);
            continue;
        }
        for (size_t i = 0; i + w <= n; i++)
            f[nf++] = gram(th + i, w);
    }

    switch (s->weight) {
    case WT_NONE:
        return fp_compute(f, nf);
    case WT_GRAM: {
        size_t j = 0;
        for (unsigned w = 1; w <= 4; w++) {
            if (!(s->grams & (1u << (w - 1))))
                continue;
            size_t m = n >= w ? n - w + 1 : (size_t)single;
            for (size_t i = 0; i < m; i++)
                wt[j++] = s->gram_w[w - 1];
        }
        return fp_compute_weighted(f, wt, nf);
    }
    case WT_STOP: {
        /* each occurrence votes 4; features made only of stop words vote stop_w */
        size_t j = 0;
        for (unsigned w = 1; w <= 4; w++) {
            if (!(s->grams & (1u << (w - 1))))
                continue;
            if (n < w) {
                if (single) {
                    int all = 1;
                    for (size_t k = 0; k < n; k++)
                        all &= is_stop(th[k]);
                    wt[j++] = all ? s->stop_w : 4;
                }
                continue;
            }
            for (size_t i = 0; i + w <= n; i++) {
                int all = 1;
                for (unsigned k = 0; k < w && all; k++)
                    all = is_stop(th[i + k]);
                wt[j++] = all ? s->stop_w : 4;
            }
        }
        return fp_compute_weighted(f, wt, nf);
    }
    case WT_DOCFREQ: {
        /* tokens making up more than 1% of the text are "frequent"; a feature made
         * only of frequent tokens votes 1, every other occurrence votes 4 */
        table_reset(sc, n);
        for (size_t i = 0; i < n; i++) {
            size_t sl = table_slot(sc, th[i]);
            sc->hc[sl]++;
        }
        size_t j = 0;
        for (unsigned w = 1; w <= 4; w++) {
            if (!(s->grams & (1u << (w - 1))))
                continue;
            if (n < w) {
                if (single)
                    wt[j++] = 4;
                continue;
            }
            for (size_t i = 0; i + w <= n; i++) {
                int all = 1;
                for (unsigned k = 0; k < w && all; k++)
                    all = (size_t)sc->hc[table_slot(sc, th[i + k])] * 100 > n;
                wt[j++] = all ? 1 : 4;
            }
        }
        return fp_compute_weighted(f, wt, nf);
    }
    case WT_LOGTF:
    case WT_SQRTTF: {
        /* each distinct feature once, weight round(1000 * (1 + ln tf)) or
         * round(1000 * sqrt(tf)) */
        table_reset(sc, nf);
        size_t nd = 0;
        for (size_t i = 0; i < nf; i++) {
            size_t sl = table_slot(sc, f[i]);
            if (sc->hc[sl]++ == 0)
                nd++;
        }
        size_t j = 0;
        for (size_t sl = 0; sl < sc->h_cap && j < nd; sl++)
            if (sc->hc[sl]) {
                f[j] = sc->hk[sl];
                double tf = (double)sc->hc[sl];
                wt[j] = (int64_t)llround(1000.0 * (s->weight == WT_LOGTF ? 1.0 + log(tf)
                                                                          : sqrt(tf)));
                j++;
            }
        return fp_compute_weighted(f, wt, j);
    }
    }
    return 0;
}
