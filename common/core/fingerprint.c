/* fingerprint.c: text fingerprints: the tokenizer (ASCII, UTF-8, CJK; algorithm v5
 * folds Unicode with utf8proc), token, shingle (v1) and n-gram (v5) hashing with XXH3,
 * v5's boilerplate weights; the simhash vote is fp_vote.c. The format is a stored data
 * format, pinned by golden vectors (tests/unit/test_fingerprint.c) and described in
 * docs/fingerprint.md. fp_text streams: memory use does not grow with the text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#define XXH_INLINE_ALL
#include <xxhash.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "fingerprint.h"
#include "fp_bp.h"
#include "fp_vote.h"

/* ---- Byte and code point classes ---- */

enum { FP_SEP = 0, FP_WORD = 1, FP_SOLO = 2, FP_IGN = 3 };

#define FP_NOT_CP 0x110000u   /* fp_unit's code point for an invalid byte */
#define FP_FOLD_CPS 32        /* code points of one folded code point, at most */
#define FP_FOLD_MAX (4 * FP_FOLD_CPS)
/* v5: the token hashes a state keeps: the token about to vote needs the K-grams
 * ending at it and at the K - 1 tokens after it (2 * K - 1 tokens), and the token
 * before it for its bigram (K + 1) */
#define FP_V5_WINDOW (2 * FPBP_K - 1)

/* ASCII letters and digits map to their lower-case form; every other byte to 0
 * (ASCII separators, and bytes >= 0x80, which take the UTF-8 path). */
static const uint8_t fp_lower[256] = {
    ['0'] = '0', ['1'] = '1', ['2'] = '2', ['3'] = '3', ['4'] = '4',
    ['5'] = '5', ['6'] = '6', ['7'] = '7', ['8'] = '8', ['9'] = '9',
    ['A'] = 'a', ['B'] = 'b', ['C'] = 'c', ['D'] = 'd', ['E'] = 'e', ['F'] = 'f',
    ['G'] = 'g', ['H'] = 'h', ['I'] = 'i', ['J'] = 'j', ['K'] = 'k', ['L'] = 'l',
    ['M'] = 'm', ['N'] = 'n', ['O'] = 'o', ['P'] = 'p', ['Q'] = 'q', ['R'] = 'r',
    ['S'] = 's', ['T'] = 't', ['U'] = 'u', ['V'] = 'v', ['W'] = 'w', ['X'] = 'x',
    ['Y'] = 'y', ['Z'] = 'z',
    ['a'] = 'a', ['b'] = 'b', ['c'] = 'c', ['d'] = 'd', ['e'] = 'e', ['f'] = 'f',
    ['g'] = 'g', ['h'] = 'h', ['i'] = 'i', ['j'] = 'j', ['k'] = 'k', ['l'] = 'l',
    ['m'] = 'm', ['n'] = 'n', ['o'] = 'o', ['p'] = 'p', ['q'] = 'q', ['r'] = 'r',
    ['s'] = 's', ['t'] = 't', ['u'] = 'u', ['v'] = 'v', ['w'] = 'w', ['x'] = 'x',
    ['y'] = 'y', ['z'] = 'z',
};

/* Class of a valid non-ASCII code point: FP_SEP, FP_SOLO (a token by itself) or
 * FP_WORD. The ranges are listed in docs/fingerprint.md. */
static int fp_cp_class(uint32_t cp)
{
    if (cp <= 0xBF || cp == 0xD7 || cp == 0xF7) return FP_SEP;
    if (cp < 0x2000) return FP_WORD;
    if (cp <= 0x206F) return FP_SEP;
    if (cp < 0x3000) return FP_WORD;
    if (cp <= 0x303F) return FP_SEP;
    if (cp <= 0x30FF) return FP_SOLO;     /* kana */
    if (cp < 0x3400) return FP_WORD;
    if (cp <= 0x4DBF) return FP_SOLO;     /* Han extension A */
    if (cp < 0x4E00) return FP_WORD;
    if (cp <= 0x9FFF) return FP_SOLO;     /* Han */
    if (cp < 0xAC00) return FP_WORD;
    if (cp <= 0xD7AF) return FP_SOLO;     /* Hangul syllables */
    if (cp < 0xF900) return FP_WORD;
    if (cp <= 0xFAFF) return FP_SOLO;     /* Han compatibility */
    if (cp < 0xFF00) return FP_WORD;
    if (cp <= 0xFF0F) return FP_SEP;      /* full-width punctuation */
    if (cp < 0xFF1A) return FP_WORD;      /* full-width digits */
    if (cp <= 0xFF20) return FP_SEP;
    if (cp < 0xFF3B) return FP_WORD;      /* full-width upper case */
    if (cp <= 0xFF40) return FP_SEP;
    if (cp < 0xFF5B) return FP_WORD;      /* full-width lower case */
    if (cp <= 0xFF65) return FP_SEP;
    if (cp < 0x20000) return FP_WORD;
    if (cp <= 0x2FFFF) return FP_SOLO;    /* Han extensions B.. */
    return FP_WORD;
}

/* Decode the unit starting at p[0] >= 0x80 with avail bytes left. Returns its length
 * (1..4) and its class in *cls. An invalid sequence is one byte of class FP_WORD.
 * Returns 0 when !final and the bytes up to the end are a valid but incomplete
 * prefix of a sequence (the caller must supply more bytes). Never reads p[avail]. */
static size_t fp_unit(const uint8_t *p, size_t avail, int final, int *cls, uint32_t *cpo)
{
    uint8_t c = p[0];
    *cls = FP_WORD;
    *cpo = FP_NOT_CP;
    if (c < 0xC2 || c > 0xF4)
        return 1;                         /* continuation byte, overlong lead, > U+10FFFF */
    size_t need = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    uint8_t lo = 0x80, hi = 0xBF;         /* allowed range of the second byte */
    if (c == 0xE0) lo = 0xA0;             /* overlong 3-byte */
    else if (c == 0xED) hi = 0x9F;        /* surrogates */
    else if (c == 0xF0) lo = 0x90;        /* overlong 4-byte */
    else if (c == 0xF4) hi = 0x8F;        /* > U+10FFFF */
    uint32_t cp = c & (need == 2 ? 0x1F : need == 3 ? 0x0F : 0x07);
    for (size_t k = 1; k < need; k++) {
        if (k >= avail)
            return final ? 1 : 0;
        uint8_t b = p[k];
        if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF))
            return 1;
        cp = (cp << 6) | (b & 0x3F);
    }
    *cls = fp_cp_class(cp);
    *cpo = cp;
    return need;
}

/* ---- Algorithm v5: Unicode classes and folding ---- */

/* Class of a valid non-ASCII code point in v5: solo for the same CJK ranges as v1;
 * letters, marks, numbers, private use and unassigned code points are word units;
 * format characters (soft hyphen, zero-width joiners, ...) are ignored (FP_IGN: they
 * neither join nor end a token); everything else (punctuation, symbols, spaces,
 * controls) separates. */
static int fp_v5_class(uint32_t cp)
{
    if ((cp >= 0x3040 && cp <= 0x30FF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
        (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7AF) ||
        (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x20000 && cp <= 0x2FFFF))
        return FP_SOLO;
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    if (c <= UTF8PROC_CATEGORY_NO || c == UTF8PROC_CATEGORY_CO)
        return FP_WORD;       /* Cn, L*, M*, N* (0..11), Co */
    if (c == UTF8PROC_CATEGORY_CF)
        return FP_IGN;
    return FP_SEP;
}

/* UTF-8 of the case folding and compatibility decomposition of cp (utf8proc:
 * UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT | UTF8PROC_CASEFOLD, one code point at a time:
 * NFKD with case folding, without reordering marks across code points), keeping only ASCII
 * letters and digits and non-ASCII code points of the word categories (Cn, L*, M*,
 * N*, Co). Returns the byte count (at most FP_FOLD_MAX). */
static size_t fp_v5_fold(uint32_t cp, uint8_t *out)
{
    utf8proc_int32_t d[FP_FOLD_CPS];
    int bound = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char((utf8proc_int32_t)cp, d, FP_FOLD_CPS,
                                                 UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT |
                                                     UTF8PROC_CASEFOLD, &bound);
    if (n < 0 || n > FP_FOLD_CPS) {
        /* cannot happen for valid code points (the longest mapping is 18): keep cp */
        d[0] = (utf8proc_int32_t)cp;
        n = 1;
    }
    size_t len = 0;
    for (utf8proc_ssize_t i = 0; i < n; i++) {
        utf8proc_int32_t c = d[i];
        if (c < 0x80) {
            if (fp_lower[c])
                out[len++] = fp_lower[c];
            continue;
        }
        utf8proc_category_t k = utf8proc_category(c);
        if (k > UTF8PROC_CATEGORY_NO && k != UTF8PROC_CATEGORY_CO)
            continue;
        len += (size_t)utf8proc_encode_char(c, out + len);
    }
    return len;
}

/* ---- Token hashes ---- */

#define FP_TOKBUF 256         /* token bytes buffered before hashing goes streaming */

uint64_t fp_token_hash(const char *tok, size_t len)
{
    uint8_t buf[FP_TOKBUF];
    const uint8_t *p = (const uint8_t *)tok;
    if (len <= FP_TOKBUF) {
        for (size_t i = 0; i < len; i++)
            buf[i] = fp_lower[p[i]] ? fp_lower[p[i]] : p[i];
        return XXH3_64bits(buf, len);
    }
    XXH3_state_t xs;
    XXH3_INITSTATE(&xs);
    XXH3_64bits_reset(&xs);
    for (size_t off = 0; off < len; off += FP_TOKBUF) {
        size_t m = len - off < FP_TOKBUF ? len - off : FP_TOKBUF;
        for (size_t i = 0; i < m; i++)
            buf[i] = fp_lower[p[off + i]] ? fp_lower[p[off + i]] : p[off + i];
        XXH3_64bits_update(&xs, buf, m);
    }
    return XXH3_64bits_digest(&xs);
}

/* ---- Streaming state ---- */

struct fp_state {
    XXH3_state_t xs;          /* hash of the current token once it outgrows tok[] */
    int spilled;              /* current token's first bytes are already in xs */
    unsigned window;          /* tokens in the ring: v1 the shingle, v5 FP_V5_WINDOW */
    unsigned version;         /* FP_V1 or FP_V5 */
    size_t tlen;              /* bytes in tok[] */
    uint64_t ntok;            /* tokens so far */
    unsigned ring_pos;        /* slot the next token hash goes to (0..window-1) */
    /* the last `window` token hashes as little-endian words, each stored at slot s
     * and s + window, so that they are always in order at ring[ring_pos..+window) */
    uint64_t ring[2 * FP_WINDOW_MAX];
    fp_vote vote;
    fp_vote bvote;            /* v5: the features of known boilerplate (fp_bp.h) */
    uint64_t bp_end;          /* v5: tokens up to the end of the last table K-gram */
    uint64_t kg_seen;         /* v5: the K-grams ending within the first kg_seen tokens
                               * need no lookup (fp_v5_bp) */
    int bp_prev;              /* v5: the last token voted was boilerplate */
    fpbp_kgram_cb kg_cb;      /* fpbp_kgrams: gets each K-gram hash, or NULL */
    void *kg_arg;
    unsigned npend;           /* bytes of an incomplete UTF-8 sequence from the last update */
    uint8_t pend[4];
    uint8_t tok[FP_TOKBUF];   /* current token, ASCII lower-cased */
};

/* The little-endian representation of x, as a uint64_t in memory. */
static inline uint64_t fp_le64(uint64_t x)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_bswap64(x);
#else
    return x;
#endif
}

static void fp_state_init(fp_state *s, const fp_params *p)
{
    s->spilled = 0;
    s->version = p->version;
    s->window = p->version == FP_V5 ? FP_V5_WINDOW : p->window;
    s->tlen = 0;
    s->ntok = 0;
    s->ring_pos = 0;
    s->npend = 0;
    s->bp_end = 0;
    s->kg_seen = 0;
    s->bp_prev = 0;
    s->kg_cb = NULL;
    s->kg_arg = NULL;
    fpvote_init(&s->vote);
    fpvote_init(&s->bvote);
}

/* A token hash enters the ring (w > 1); returns the slot the next one goes to. */
static inline unsigned fp_ring_push(fp_state *s, uint64_t th)
{
    unsigned w = s->window, pos = s->ring_pos;
    uint64_t le = fp_le64(th);
    s->ntok++;
    s->ring[pos] = le;
    s->ring[pos + w] = le;
    pos = pos + 1 == w ? 0 : pos + 1;
    s->ring_pos = pos;
    return pos;
}

/* v5's bigram and K-gram hashes, XXH3-64 of 2 and K little-endian token hashes, each
 * compiled for its one length: inlined into the tokenizer, which has grown too large
 * for gcc to inline them itself, the calls went to XXH3's generic entry. */
__attribute__((flatten)) static uint64_t fp_v5_bigram_hash(const uint64_t *ring)
{
    return XXH3_64bits(ring, 16);
}

__attribute__((flatten)) static uint64_t fp_v5_kgram_hash(const uint64_t *ring)
{
    return XXH3_64bits(ring, 8 * FPBP_K);
}

/* v5: whether token j (the first not yet voted) is boilerplate: covered by a table
 * K-gram, one of those ending at tokens j .. j + K - 1 (of those read). Lookups are
 * made only when needed, newest first: inside boilerplate the newest K-gram is in the
 * table and covers the next K - 1 tokens too, so a run of boilerplate costs one
 * lookup (and one K-gram hash) per K tokens instead of one per token; elsewhere every
 * K-gram is looked up once, as before. The answers are the same as looking up every
 * K-gram in order.
 *
 * bp_end is the end of the last table K-gram found (a token < bp_end is covered).
 * Invariant: the K-grams ending (as token counts) in (max(bp_end, j), kg_seen] are
 * not in the table; those ending at counts <= j cannot cover j or any later token. */
static inline int fp_v5_bp(fp_state *s, uint64_t j)
{
    if (s->bp_end > j)
        return 1;
    uint64_t n = s->ntok, lo = s->kg_seen > j ? s->kg_seen : j;
    if (lo < FPBP_K - 1)
        lo = FPBP_K - 1;                /* no K-gram ends within fewer tokens */
    /* the ring holds the last FP_V5_WINDOW >= 2K - 1 tokens: the K-gram ending at
     * count c (tokens c - K .. c - 1) starts at ring[pos + w - K - (n - c)], and
     * n - c < K since c > j >= n - K */
    const uint64_t *newest = &s->ring[s->ring_pos + s->window - FPBP_K];
    for (uint64_t c = n; c > lo; c--) {
        if (fpbp_has(fp_v5_kgram_hash(newest - (n - c)))) {
            s->bp_end = c;
            break;
        }
    }
    s->kg_seen = n;
    return s->bp_end > j;
}

/* v5: token j, in ring slot `slot` (the token before it in slot - 1), votes its
 * unigram, and its bigram when j > 0, into bvote when boilerplate (fp_v5_bp) else
 * into vote. A bigram is boilerplate when both its tokens are. Called once per token,
 * in order, when its K-grams have all been read (K - 1 tokens later) or at the end. */
static inline void fp_v5_settle(fp_state *s, uint64_t j, unsigned slot)
{
    fp_vote *text = &s->vote, *bpv = &s->bvote;
    int bp = fp_v5_bp(s, j);
    fpvote_add(bp ? bpv : text, fp_le64(s->ring[slot]));
    if (j > 0)
        fpvote_add(bp && s->bp_prev ? bpv : text, fp_v5_bigram_hash(&s->ring[slot - 1]));
    s->bp_prev = bp;
}

/* v5: a token arrives; the token K - 1 back, whose K-grams have now all been read,
 * votes (the vote trails the text by K - 1 tokens; fp_v5_finish votes the rest). */
static inline void fp_push_v5(fp_state *s, uint64_t th)
{
    unsigned pos = fp_ring_push(s, th);
    if (s->ntok < FPBP_K)
        return;
    unsigned slot = pos + s->window - FPBP_K;   /* token ntok - K, the K-gram's first */
    if (s->kg_cb)
        s->kg_cb(fp_v5_kgram_hash(&s->ring[slot]), s->kg_arg);
    fp_v5_settle(s, s->ntok - FPBP_K, slot);
}

/* v5 at the end of the text: the last K - 1 tokens (or fewer) vote. */
static void fp_v5_finish(fp_state *s)
{
    unsigned w = s->window;
    uint64_t first = s->ntok >= FPBP_K ? s->ntok - FPBP_K + 1 : 0;
    for (uint64_t j = first; j < s->ntok; j++)
        fp_v5_settle(s, j, s->ring_pos + w - (unsigned)(s->ntok - j));
}

/* A token hash arrives: vote for the shingle (v1) or n-grams (v5) it completes. */
static inline void fp_push_hash(fp_state *s, uint64_t th)
{
    unsigned w = s->window;
    if (s->version == FP_V5) {
        fp_push_v5(s, th);
        return;
    }
    if (w == 1) {
        s->ntok++;
        fpvote_add(&s->vote, th);
        return;
    }
    unsigned pos = fp_ring_push(s, th);
    if (s->ntok >= w)
        fpvote_add(&s->vote, XXH3_64bits(&s->ring[pos], 8 * (size_t)w));
}

/* tok[0..tl) is full and the token goes on: feed it to the streaming hash. */
static void fp_spill(fp_state *s, size_t tl)
{
    if (!s->spilled) {
        XXH3_INITSTATE(&s->xs);
        XXH3_64bits_reset(&s->xs);
        s->spilled = 1;
    }
    XXH3_64bits_update(&s->xs, s->tok, tl);
}

/* The current token (tok[0..tl), after any spilled part) ends. */
static inline void fp_end_token(fp_state *s, size_t tl)
{
    uint64_t th;
    if (s->spilled) {
        XXH3_64bits_update(&s->xs, s->tok, tl);
        th = XXH3_64bits_digest(&s->xs);
        s->spilled = 0;
    } else {
        th = XXH3_64bits(s->tok, tl);
    }
    fp_push_hash(s, th);
}

#if defined(__SSE2__)
#define FP_BLOCK 32           /* bytes per vector step of the ASCII fast path */

/* If the FP_BLOCK bytes at p are all ASCII, tokenize them with vector compares and
 * bit masks and return 1 (*tlp: the current token's buffered length); else return 0
 * and touch nothing. Tokens inside the block are hashed in place, runs touching its
 * ends go through the token buffer. */
static inline int fp_block_ascii(fp_state *s, const uint8_t *p, size_t *tlp)
{
    __m128i v0 = _mm_loadu_si128((const __m128i *)p);
    __m128i v1 = _mm_loadu_si128((const __m128i *)(p + 16));
    if (_mm_movemask_epi8(_mm_or_si128(v0, v1)))
        return 0;
    /* all bytes < 0x80, so signed compares are exact; v | 0x20 lower-cases A-Z and
     * keeps a-z and 0-9, and maps no other byte into a-z */
    const __m128i x20 = _mm_set1_epi8(0x20);
    const __m128i d_lo = _mm_set1_epi8('0' - 1), d_hi = _mm_set1_epi8('9' + 1);
    const __m128i a_lo = _mm_set1_epi8('a' - 1), a_hi = _mm_set1_epi8('z' + 1);
    __m128i l0 = _mm_or_si128(v0, x20), l1 = _mm_or_si128(v1, x20);
    __m128i w0 = _mm_or_si128(_mm_and_si128(_mm_cmpgt_epi8(v0, d_lo), _mm_cmplt_epi8(v0, d_hi)),
                              _mm_and_si128(_mm_cmpgt_epi8(l0, a_lo), _mm_cmplt_epi8(l0, a_hi)));
    __m128i w1 = _mm_or_si128(_mm_and_si128(_mm_cmpgt_epi8(v1, d_lo), _mm_cmplt_epi8(v1, d_hi)),
                              _mm_and_si128(_mm_cmpgt_epi8(l1, a_lo), _mm_cmplt_epi8(l1, a_hi)));
    uint64_t wm = (uint64_t)(uint32_t)_mm_movemask_epi8(w0)
                | (uint64_t)(uint32_t)_mm_movemask_epi8(w1) << 16;
    uint8_t lb[FP_BLOCK];
    _mm_storeu_si128((__m128i *)lb, l0);
    _mm_storeu_si128((__m128i *)(lb + 16), l1);

    size_t tl = *tlp;
    unsigned pos = 0;
    if (tl || s->spilled) {
        /* the token in progress continues with the first run, if any */
        unsigned r = (unsigned)__builtin_ctzll(~wm);
        if (r) {
            if (tl + r > FP_TOKBUF) {
                fp_spill(s, tl);
                tl = 0;
            }
            memcpy(s->tok + tl, lb, r);
            tl += r;
        }
        if (r == FP_BLOCK) {
            *tlp = tl;
            return 1;
        }
        fp_end_token(s, tl);
        tl = 0;
        pos = r;
        wm &= ~(uint64_t)0 << pos;
    }
    while (wm) {
        unsigned st = (unsigned)__builtin_ctzll(wm);
        unsigned r = (unsigned)__builtin_ctzll(~(wm >> st));
        if (st + r == FP_BLOCK) {
            memcpy(s->tok, lb + st, r);   /* may continue in the next bytes */
            tl = r;
            break;
        }
        fp_push_hash(s, XXH3_64bits(lb + st, r));
        wm &= ~(uint64_t)0 << (st + r);
    }
    *tlp = tl;
    return 1;
}
#endif

/* v5: the valid non-ASCII code point cp; tl bytes of the current token are in
 * tok[]. Returns the new tl. */
static size_t fp_v5_unit(fp_state *s, uint32_t cp, size_t tl)
{
    int cls = fp_v5_class(cp);
    if (cls == FP_IGN)
        return tl;
    if (cls == FP_SEP || cls == FP_SOLO) {
        if (tl || s->spilled) {
            fp_end_token(s, tl);
            tl = 0;
        }
        if (cls == FP_SOLO) {
            uint8_t f[FP_FOLD_MAX];
            size_t n = fp_v5_fold(cp, f);
            if (n > 0)              /* kana punctuation (U+30A0, U+30FB) folds to nothing */
                fp_push_hash(s, XXH3_64bits(f, n));
        }
        return tl;
    }
    uint8_t f[FP_FOLD_MAX];
    size_t n = fp_v5_fold(cp, f);
    if (tl + n > FP_TOKBUF) {
        fp_spill(s, tl);
        tl = 0;
    }
    memcpy(s->tok + tl, f, n);
    return tl + n;
}

/* Tokenize and vote over p[0..len). Returns the bytes consumed: all of them, except
 * when !final and the data ends inside a UTF-8 sequence that may still be valid (at
 * most 3 bytes are left). */
static size_t fp_scan(fp_state *s, const uint8_t *p, size_t len, int final)
{
    const uint8_t *start = p, *end = p + len;
    uint8_t *tok = s->tok;
    size_t tl = s->tlen;
    while (p < end) {
        const uint8_t *lim = end;
#if defined(__SSE2__)
        if ((size_t)(end - p) >= FP_BLOCK) {
            if (fp_block_ascii(s, p, &tl)) {
                p += FP_BLOCK;
                continue;
            }
            lim = p + FP_BLOCK;       /* non-ASCII here: this block byte by byte */
        }
#endif
        while (p < lim) {
            uint8_t c = *p;
            uint8_t l = fp_lower[c];
            if (l) {
                /* ASCII run of the word: copy lower-cased while it lasts and fits */
                if (tl == FP_TOKBUF) {
                    fp_spill(s, tl);
                    tl = 0;
                }
                size_t room = FP_TOKBUF - tl;
                const uint8_t *stop = (size_t)(lim - p) < room ? lim : p + room;
                do {
                    tok[tl++] = l;
                    if (++p == stop)
                        break;
                    l = fp_lower[*p];
                } while (l);
                continue;
            }
            if (c < 0x80) {
                if (tl || s->spilled) {
                    fp_end_token(s, tl);
                    tl = 0;
                }
                p++;
                continue;
            }
            int cls;
            uint32_t cp;
            size_t u = fp_unit(p, (size_t)(end - p), final, &cls, &cp);
            if (u == 0) {
                s->tlen = tl;
                return (size_t)(p - start);
            }
            if (s->version != FP_V1 && cp != FP_NOT_CP) {
                tl = fp_v5_unit(s, cp, tl);
                p += u;
                continue;
            }
            if (cls == FP_WORD) {
                for (size_t i = 0; i < u; i++) {
                    if (tl == FP_TOKBUF) {
                        fp_spill(s, tl);
                        tl = 0;
                    }
                    tok[tl++] = p[i];
                }
            } else {
                if (tl || s->spilled) {
                    fp_end_token(s, tl);
                    tl = 0;
                }
                if (cls == FP_SOLO)
                    fp_push_hash(s, XXH3_64bits(p, u));
            }
            p += u;
        }
    }
    s->tlen = tl;
    return (size_t)(p - start);
}

/* End of text: the last token, the short-text shingle, the vote. */
static uint64_t fp_finish(fp_state *s)
{
    if (s->npend) {
        unsigned k = s->npend;
        s->npend = 0;
        fp_scan(s, s->pend, k, 1);
    }
    if (s->tlen || s->spilled) {
        fp_end_token(s, s->tlen);
        s->tlen = 0;
    }
    if (s->version == FP_V5) {
        fp_v5_finish(s);
        return fpvote_result_v5(&s->vote, &s->bvote);
    }
    /* fewer tokens than a shingle: one shingle of all of them */
    if (s->ntok > 0 && s->ntok < s->window)
        fpvote_add(&s->vote, XXH3_64bits(s->ring, 8 * (size_t)s->ntok));
    return fpvote_result(&s->vote);
}

/* ---- Settings ---- */

/* Algorithms v2..v4 existed before the first release and were removed: a user or a
 * corpus naming one gets this message (v5's text fingerprints are the former v4's). */
#define FP_REMOVED_MIN 2
#define FP_REMOVED_MAX 4
#define FP_REMOVED_FMT "fingerprint algorithm v%u was removed; v5 is its successor (v5's " \
                       "text fingerprints equal the former v4's)"

/* p with defaults filled in (version 0 -> default, v1 window 0 -> 3), or -1 when
 * invalid. */
static int fp_params_norm(const fp_params *p, fp_params *out)
{
    fp_params d = {FP_VERSION_DEFAULT, 0};
    if (p)
        d = *p;
    if (d.version == 0)
        d.version = FP_VERSION_DEFAULT;
    if (d.version == FP_V1) {
        if (d.window == 0)
            d.window = FP_WINDOW_DEFAULT;
        if (d.window > FP_WINDOW_MAX)
            return -1;
    } else if (d.version == FP_V5) {
        if (d.window != 0)
            return -1;
    } else {
        return -1;
    }
    *out = d;
    return 0;
}

int fp_params_check(const fp_params *p, char *err, size_t errlen)
{
    fp_params d;
    if (fp_params_norm(p, &d) == 0)
        return 0;
    if (p->version >= FP_REMOVED_MIN && p->version <= FP_REMOVED_MAX)
        snprintf(err, errlen, FP_REMOVED_FMT, p->version);
    else if (p->version != 0 && p->version != FP_V1 && p->version != FP_V5)
        snprintf(err, errlen, "unknown fingerprint algorithm v%u (known: v1, v5)", p->version);
    else if (p->version == FP_V1 || (p->version == 0 && FP_VERSION_DEFAULT == FP_V1))
        snprintf(err, errlen, "window %u out of range 1..%d", p->window, FP_WINDOW_MAX);
    else
        snprintf(err, errlen, "fingerprint algorithm v%u has no window setting (a window "
                 "applies to v1: v1:W)", p->version ? p->version : FP_VERSION_DEFAULT);
    return -1;
}

int fp_params_parse(const char *spec, fp_params *out, char *err, size_t errlen)
{
    fp_params p = {0, 0};
    const char *q = spec;
    if (q[0] == 'v' || q[0] == 'V')
        q++;
    if (q[0] == '1' && (q[1] == '\0' || q[1] == ':')) {
        p.version = FP_V1;
        if (q[1] == ':') {
            const char *w = q + 2;
            unsigned long v = 0;
            if (*w == '\0')
                goto bad;
            for (; *w; w++) {
                if (*w < '0' || *w > '9' || v > FP_WINDOW_MAX)
                    goto bad;
                v = v * 10 + (unsigned long)(*w - '0');
            }
            if (v < 1 || v > FP_WINDOW_MAX)
                goto bad;
            p.window = (unsigned)v;
        }
    } else if (q[0] == '5' && q[1] == '\0') {
        p.version = FP_V5;
    } else if (q[0] >= '0' + FP_REMOVED_MIN && q[0] <= '0' + FP_REMOVED_MAX && q[1] == '\0') {
        snprintf(err, errlen, FP_REMOVED_FMT, (unsigned)(q[0] - '0'));
        return -1;
    } else {
        goto bad;
    }
    if (fp_params_norm(&p, out) != 0)
        goto bad;
    return 0;
bad:
    snprintf(err, errlen, "bad fingerprint algorithm '%.40s' (want v5, v1 or v1:W with "
             "W 1..%d)", spec, FP_WINDOW_MAX);
    return -1;
}

unsigned fp_params_removed(const char *spec)
{
    if (spec == NULL || (spec[0] != 'v' && spec[0] != 'V'))
        return 0;
    unsigned v = (unsigned)(spec[1] - '0');
    return spec[1] != '\0' && spec[2] == '\0' && v >= FP_REMOVED_MIN && v <= FP_REMOVED_MAX
               ? v : 0;
}

int fp_params_option(const char *spec, fp_params *out, char *canon, size_t canon_len,
                     char *err, size_t errlen)
{
    char perr[160];
    if (spec == NULL || spec[0] == '\0')
        return 0;
    if (fp_params_parse(spec, out, perr, sizeof perr) != 0) {
        snprintf(err, errlen, "fingerprint-algorithm: %s", perr);
        return -1;
    }
    fp_params_format(out, canon, canon_len);
    return 0;
}

void fp_params_format(const fp_params *p, char *buf, size_t n)
{
    fp_params d;
    if (fp_params_norm(p, &d) != 0)
        snprintf(buf, n, "invalid");
    else if (d.version == FP_V1)
        snprintf(buf, n, "v1:%u", d.window);
    else
        snprintf(buf, n, "v%u", d.version);
}

uint64_t fp_text_p(const char *text, size_t len, const fp_params *p)
{
    fp_params d;
    if (fp_params_norm(p, &d) != 0) {
        d.version = p && p->version == FP_V1 ? FP_V1 : FP_VERSION_DEFAULT;
        d.window = d.version == FP_V1 ? FP_WINDOW_MAX : 0;
    }
    fp_state s;
    fp_state_init(&s, &d);
    fp_scan(&s, (const uint8_t *)text, len, 1);
    return fp_finish(&s);
}

uint64_t fp_text(const char *text, size_t len, unsigned window)
{
    fp_params p = {FP_V1, window > FP_WINDOW_MAX ? FP_WINDOW_MAX : window};
    return fp_text_p(text, len, &p);
}

fp_state *fp_state_new_p(const fp_params *p)
{
    fp_params d;
    if (fp_params_norm(p, &d) != 0)
        return NULL;
    fp_state *s = aligned_alloc(64, (sizeof(fp_state) + 63) / 64 * 64);
    if (s)
        fp_state_init(s, &d);
    return s;
}

fp_state *fp_state_new(unsigned window)
{
    fp_params p = {FP_V1, window};
    return fp_state_new_p(&p);
}

void fp_state_free(fp_state *s)
{
    free(s);
}

void fp_state_copy(fp_state *dst, const fp_state *src)
{
    memcpy(dst, src, sizeof *dst);
    XXH3_copyState(&dst->xs, &src->xs);
}

void fp_state_update(fp_state *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    if (len == 0)
        return;
    if (len == 1 && s->npend == 0 && p[0] < 0x80 && fp_lower[p[0]] == 0) {
        /* one ASCII separator (the HTML path's block boundaries and blanks): it ends
         * the token in progress, as fp_scan would, without fp_scan's setup */
        if (s->tlen || s->spilled) {
            fp_end_token(s, s->tlen);
            s->tlen = 0;
        }
        return;
    }
    if (s->npend) {
        /* finish the sequence split between the two pieces in a small buffer */
        uint8_t tmp[8];
        size_t k = s->npend, m = len < 4 ? len : 4;
        memcpy(tmp, s->pend, k);
        memcpy(tmp + k, p, m);
        size_t c = fp_scan(s, tmp, k + m, 0);
        if (c < k) {
            /* still incomplete, so all of data is in tmp (fewer than 4 bytes) */
            s->npend = (unsigned)(k + m - c);
            memcpy(s->pend, tmp + c, s->npend);
            return;
        }
        s->npend = 0;
        p += c - k;
        len -= c - k;
    }
    size_t c = fp_scan(s, p, len, 0);
    s->npend = (unsigned)(len - c);
    memcpy(s->pend, p + c, s->npend);
}

uint64_t fp_state_final(fp_state *s)
{
    uint64_t r = fp_finish(s);
    fp_params p = {s->version, s->version == FP_V1 ? s->window : 0};
    fp_state_init(s, &p);
    return r;
}

/* ---- Tokens for callers ---- */

size_t fp_tokenize(const char *text, size_t len, fp_token_cb cb, void *arg)
{
    const uint8_t *p = (const uint8_t *)text, *end = p + len, *ts = NULL;
    size_t count = 0;
    while (p < end) {
        int cls;
        size_t u = 1;
        uint32_t cp;
        if (*p < 0x80)
            cls = fp_lower[*p] ? FP_WORD : FP_SEP;
        else
            u = fp_unit(p, (size_t)(end - p), 1, &cls, &cp);
        if (cls == FP_WORD) {
            if (!ts)
                ts = p;
            p += u;
            continue;
        }
        if (ts) {
            count++;
            if (cb && cb((const char *)ts, (size_t)(p - ts), arg))
                return count;
            ts = NULL;
        }
        if (cls == FP_SOLO) {
            count++;
            if (cb && cb((const char *)p, u, arg))
                return count;
        }
        p += u;
    }
    if (ts) {
        count++;
        if (cb)
            cb((const char *)ts, (size_t)(p - ts), arg);
    }
    return count;
}

/* ---- Boilerplate K-grams for the table generator (fp_bp.h) ---- */

void fpbp_kgrams(const char *text, size_t len, fpbp_kgram_cb cb, void *arg)
{
    fp_params p = {FP_V5, 0};
    fp_state s;
    fp_state_init(&s, &p);
    s.kg_cb = cb;
    s.kg_arg = arg;
    fp_scan(&s, (const uint8_t *)text, len, 1);
    fp_finish(&s);
}
