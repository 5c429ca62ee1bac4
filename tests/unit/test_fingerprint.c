/* test_fingerprint.c: unit tests of common/core/fingerprint.c: golden vectors of the
 * stored fingerprint format, checked against a slow, plain reference written here
 * (strict UTF-8 decoder by code point value, range table, XXH3 over explicit byte
 * arrays, per-bit vote); tokenizer boundaries; the vote against simhash-cpp
 * semantics; weighted votes; streaming in arbitrary pieces. VALGRIND=1 shrinks sizes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <xxhash.h>

#include "fingerprint.h"

static int small_run;         /* VALGRIND=1: smaller sizes */

/* ---- Deterministic randomness ---- */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- Reference implementation (slow and plain) ---- */

enum { REF_SEP, REF_WORD, REF_SOLO };

static const struct { uint32_t lo, hi; int cls; } ref_ranges[] = {
    { 0x0080, 0x00BF, REF_SEP }, { 0x00D7, 0x00D7, REF_SEP }, { 0x00F7, 0x00F7, REF_SEP },
    { 0x2000, 0x206F, REF_SEP }, { 0x3000, 0x303F, REF_SEP }, { 0xFF00, 0xFF0F, REF_SEP },
    { 0xFF1A, 0xFF20, REF_SEP }, { 0xFF3B, 0xFF40, REF_SEP }, { 0xFF5B, 0xFF65, REF_SEP },
    { 0x3040, 0x30FF, REF_SOLO }, { 0x3400, 0x4DBF, REF_SOLO }, { 0x4E00, 0x9FFF, REF_SOLO },
    { 0xF900, 0xFAFF, REF_SOLO }, { 0x20000, 0x2FFFF, REF_SOLO }, { 0xAC00, 0xD7AF, REF_SOLO },
};

static int ref_class(uint32_t cp)
{
    if (cp < 0x80) {
        int alnum = (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
        return alnum ? REF_WORD : REF_SEP;
    }
    for (size_t i = 0; i < sizeof ref_ranges / sizeof ref_ranges[0]; i++)
        if (cp >= ref_ranges[i].lo && cp <= ref_ranges[i].hi)
            return ref_ranges[i].cls;
    return REF_WORD;
}

/* Decodes one unit at s[i]: returns its length; *cls its class. An invalid sequence
 * (judged by the decoded value: overlong, surrogate, too large) is one word byte. */
static size_t ref_unit(const uint8_t *s, size_t len, size_t i, int *cls)
{
    uint8_t c = s[i];
    size_t n;
    uint32_t cp, min;
    if (c < 0x80) {
        *cls = ref_class(c);
        return 1;
    }
    if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; min = 0x10000; }
    else { *cls = REF_WORD; return 1; }
    for (size_t k = 1; k < n; k++) {
        if (i + k >= len || (s[i + k] & 0xC0) != 0x80) {
            *cls = REF_WORD;
            return 1;
        }
        cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
        *cls = REF_WORD;
        return 1;
    }
    *cls = ref_class(cp);
    return n;
}

typedef struct ref_tokens {
    size_t n;
    size_t *start, *len;
} ref_tokens;

static void ref_tokens_push(ref_tokens *t, size_t start, size_t len)
{
    t->start = realloc(t->start, (t->n + 1) * sizeof(size_t));
    t->len = realloc(t->len, (t->n + 1) * sizeof(size_t));
    assert_non_null(t->start);
    assert_non_null(t->len);
    t->start[t->n] = start;
    t->len[t->n] = len;
    t->n++;
}

static ref_tokens ref_tokenize(const uint8_t *s, size_t len)
{
    ref_tokens t = { 0, NULL, NULL };
    size_t i = 0, word = 0, in_word = 0;
    while (i < len) {
        int cls;
        size_t u = ref_unit(s, len, i, &cls);
        if (cls == REF_WORD) {
            if (!in_word) {
                in_word = 1;
                word = i;
            }
        } else {
            if (in_word) {
                ref_tokens_push(&t, word, i - word);
                in_word = 0;
            }
            if (cls == REF_SOLO)
                ref_tokens_push(&t, i, u);
        }
        i += u;
    }
    if (in_word)
        ref_tokens_push(&t, word, len - word);
    return t;
}

static uint64_t ref_token_hash(const uint8_t *tok, size_t len)
{
    uint8_t *copy = malloc(len + 1);
    assert_non_null(copy);
    for (size_t i = 0; i < len; i++)
        copy[i] = (tok[i] >= 'A' && tok[i] <= 'Z') ? (uint8_t)(tok[i] + 32) : tok[i];
    uint64_t h = XXH3_64bits(copy, len);
    free(copy);
    return h;
}

/* XXH3 of words as consecutive 8-byte little-endian words. */
static uint64_t ref_words_hash(const uint64_t *w, size_t n)
{
    uint8_t *b = malloc(8 * n);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < 8; k++)
            b[8 * i + k] = (uint8_t)(w[i] >> (8 * k));
    uint64_t h = XXH3_64bits(b, 8 * n);
    free(b);
    return h;
}

static uint64_t ref_vote(const uint64_t *h, size_t n)
{
    uint64_t r = 0;
    for (unsigned bit = 0; bit < 64; bit++) {
        long long sum = 0;
        for (size_t j = 0; j < n; j++)
            sum += ((h[j] >> bit) & 1) ? 1 : -1;
        if (sum > 0)
            r |= (uint64_t)1 << bit;
    }
    return r;
}

static uint64_t ref_text(const void *text, size_t len, unsigned w)
{
    const uint8_t *s = text;
    ref_tokens t = ref_tokenize(s, len);
    uint64_t r = 0;
    if (t.n > 0) {
        uint64_t *th = malloc(t.n * sizeof *th);
        assert_non_null(th);
        for (size_t i = 0; i < t.n; i++)
            th[i] = ref_token_hash(s + t.start[i], t.len[i]);
        size_t nsh = t.n >= w ? t.n - w + 1 : 1;
        uint64_t *sh = malloc(nsh * sizeof *sh);
        assert_non_null(sh);
        for (size_t i = 0; i < nsh; i++) {
            if (w == 1)
                sh[i] = th[i];
            else
                sh[i] = ref_words_hash(th + i, t.n >= w ? w : t.n);
        }
        r = ref_vote(sh, nsh);
        free(sh);
        free(th);
    }
    free(t.start);
    free(t.len);
    return r;
}

/* ---- Inputs ---- */

/* A deterministic text of about `len` bytes of mixed-case words, digits and punctuation. */
static char *gen_words(size_t len, uint64_t seed)
{
    static const char *const words[] = {
        "the", "Quick", "brown", "FOX", "jumps", "over", "lazy", "dog", "near", "river",
        "bank", "2024", "v1", "of", "and", "to", "simhash", "Near", "duplicate", "pages",
    };
    char *t = malloc(len + 1);
    assert_non_null(t);
    rng_state = seed;
    size_t n = 0;
    while (n < len) {
        const char *w = words[rng_next() % 20];
        size_t wl = strlen(w);
        for (size_t k = 0; k < wl && n < len; k++)
            t[n++] = w[k];
        if (n < len)
            t[n++] = ", .\n"[rng_next() % 4];
    }
    t[len] = 0;
    return t;
}

/* A deterministic text of `nchars` Han characters with occasional ideographic commas. */
static char *gen_han(size_t nchars, uint64_t seed, size_t *outlen)
{
    char *t = malloc(nchars * 3 + 1);
    assert_non_null(t);
    rng_state = seed;
    size_t n = 0;
    for (size_t i = 0; i < nchars; i++) {
        uint32_t cp = i % 17 == 16 ? 0x3001 : 0x4E00 + (uint32_t)(rng_next() % 0x5200);
        t[n++] = (char)(0xE0 | (cp >> 12));
        t[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        t[n++] = (char)(0x80 | (cp & 0x3F));
    }
    t[n] = 0;
    *outlen = n;
    return t;
}

/* A 5000-byte token of mixed-case letters, digits and non-ASCII word characters. */
static char *gen_long_token(size_t *outlen)
{
    size_t len = 5000;
    char *t = malloc(len + 1);
    assert_non_null(t);
    for (size_t i = 0; i < len; i++)
        t[i] = "aBcDeFgHiJ0123456789xYz"[i % 23];
    memcpy(t + 1000, "\xc3\xa9", 2);      /* é inside the token */
    t[len] = 0;
    *outlen = len;
    return t;
}

/* ---- Golden vectors ---- */

typedef struct golden {
    const char *name;
    const char *text;         /* NULL: generated (see golden_input) */
    unsigned window;
    uint64_t expect;
} golden;

static const golden goldens[] = {
    { "empty", "", 3, 0x0000000000000000ull },
    { "one word", "hello", 3, 0xb475014e03674818ull },
    { "punctuation only", " ,.;!?\t\n-()[]{}\"'", 3, 0x0000000000000000ull },
    { "mixed case", "The Quick BROWN Fox", 3, 0xc50082144418224aull },
    { "lower case", "the quick brown fox", 3, 0xc50082144418224aull },
    { "digits", "2024-12-31 v1.2.3 7x 007", 3, 0x2421867feb9ff000ull },
    { "window 1", "the quick brown fox jumps over the lazy dog", 1, 0x8212868318d29267ull },
    { "window 3", "the quick brown fox jumps over the lazy dog", 3, 0x75a5b714549a617aull },
    { "window 5", "the quick brown fox jumps over the lazy dog", 5, 0xf830d5d2b1dec46eull },
    { "chinese", "我们今天去北京看长城，天气很好。", 3, 0x3285319348358d43ull },
    { "japanese", "東京は日本の首都です。カタカナとひらがなを使います。", 3, 0xd2e4801d182d3d40ull },
    { "korean", "한국어 텍스트 처리", 3, 0x661b58744c956564ull },
    { "russian", "Быстрая коричневая лиса прыгает через ленивую собаку", 3, 0xe69c5897964d1041ull },
    { "greek", "Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο", 3, 0x40e603af05430022ull },
    { "accents and dashes", "naïve café — résumé × ÷ «quoted»", 3, 0x990244488a402500ull },
    { "invalid utf-8", "ab\xff\xfe" "cd \xe4\xb8 x\xed\xa0\x80y \xc0\xafz \xf4\x90\x80\x80 e\xe4", 3, 0x62da2f84031551b0ull },
    { "long token", NULL, 3, 0x3926fb6739b0643aull },
    { "long text", NULL, 3, 0x10fa1b141579037eull },
};

/* The bytes of golden vector i (malloc'ed or static in *to_free) and their length. */
static const char *golden_input(size_t i, size_t *len, char **to_free)
{
    *to_free = NULL;
    if (goldens[i].text) {
        *len = strlen(goldens[i].text);
        return goldens[i].text;
    }
    if (!strcmp(goldens[i].name, "long token"))
        return *to_free = gen_long_token(len);
    *len = 100000;
    return *to_free = gen_words(*len, 42);
}

static void test_golden(void **state)
{
    (void)state;
    int print = getenv("FP_PRINT_GOLDEN") != NULL;
    for (size_t i = 0; i < sizeof goldens / sizeof goldens[0]; i++) {
        size_t len;
        char *to_free;
        const char *text = golden_input(i, &len, &to_free);
        uint64_t ref = ref_text(text, len, goldens[i].window);
        uint64_t got = fp_text(text, len, goldens[i].window);
        if (print)
            printf("    golden %-20s 0x%016llxull\n", goldens[i].name, (unsigned long long)got);
        if (got != ref)
            fail_msg("%s: fp_text %016llx, reference %016llx", goldens[i].name,
                     (unsigned long long)got, (unsigned long long)ref);
        if (!print && got != goldens[i].expect)
            fail_msg("%s: fp_text %016llx, pinned %016llx", goldens[i].name,
                     (unsigned long long)got, (unsigned long long)goldens[i].expect);
        free(to_free);
    }
}

static void test_golden_relations(void **state)
{
    (void)state;
    assert_int_equal(fp_text("", 0, 3), 0);
    assert_int_equal(fp_text(" ,.;!?\t\n", 8, 3), 0);
    assert_int_equal(fp_text("The Quick BROWN Fox", 19, 3), fp_text("the quick brown fox", 19, 3));
    /* one token, window 1: the fingerprint is the token hash itself */
    assert_int_equal(fp_text("hello", 5, 1), XXH3_64bits("hello", 5));
    assert_int_equal(fp_text("  HeLLo!", 8, 1), XXH3_64bits("hello", 5));
    /* window 0 means the default */
    const char *t = "one two three four five six";
    assert_int_equal(fp_text(t, strlen(t), 0), fp_text(t, strlen(t), FP_WINDOW_DEFAULT));
    /* fewer tokens than the window: one shingle of all of them */
    uint64_t w[2] = { fp_token_hash("a", 1), fp_token_hash("b", 1) };
    assert_int_equal(fp_text("a b", 3, 3), ref_words_hash(w, 2));
    assert_int_equal(fp_text("a b", 3, 2), ref_words_hash(w, 2));
    assert_int_equal(fp_text("a b", 3, 64), ref_words_hash(w, 2));
    /* the separators do not matter, the tokens do */
    assert_int_equal(fp_text("a, b; c", 7, 3), fp_text("a b c", 5, 3));
    assert_true(fp_text("a b c", 5, 3) != fp_text("a c b", 5, 3));
}

/* ---- Tokenizer ---- */

typedef struct tok_collect {
    char out[4096];
    size_t n, stop_after;
} tok_collect;

static int tok_collect_cb(const char *tok, size_t len, void *arg)
{
    tok_collect *c = arg;
    size_t used = strlen(c->out);
    assert_true(used + len + 2 < sizeof c->out);
    if (used)
        c->out[used++] = '|';
    memcpy(c->out + used, tok, len);
    c->out[used + len] = 0;
    return ++c->n == c->stop_after;
}

/* Tokens of s joined by '|'; also checks them against the reference tokenizer. */
static const char *tokens_of(const char *s)
{
    static tok_collect c;
    memset(&c, 0, sizeof c);
    size_t len = strlen(s);
    size_t n = fp_tokenize(s, len, tok_collect_cb, &c);
    assert_int_equal(n, c.n);
    ref_tokens r = ref_tokenize((const uint8_t *)s, len);
    assert_int_equal(r.n, n);
    free(r.start);
    free(r.len);
    return c.out;
}

static void test_tokenizer_boundaries(void **state)
{
    (void)state;
    static const struct { const char *in, *want; } cases[] = {
        /* ASCII: letters and digits are word characters, everything else separates */
        { "Hello, World! 42abc x_y a-b a.b a'b", "Hello|World|42abc|x|y|a|b|a|b|a|b" },
        { "\t\r\n\x01\x7f" "a\x1f" "b~c", "a|b|c" },
        { "", "" },
        { "...", "" },
        /* kana, Han, Hangul syllables: each character a token */
        { "日本語", "日|本|語" },
        { "abc中def", "abc|中|def" },
        { "ひらがなカタカナ", "ひ|ら|が|な|カ|タ|カ|ナ" },
        { "x\xe3\x81\x80y\xe3\x83\xbfz\xe4\xb8\x80w\xe9\xbf\xbfv", "x|\xe3\x81\x80|y|\xe3\x83\xbf|z|\xe4\xb8\x80|w|\xe9\xbf\xbf|v" }, /* U+3040, U+30FF, U+4E00, U+9FFF */
        { "a\xe3\x80\xbf" "b", "a|b" },                                         /* U+303F separator */
        { "x\xe3\x90\x80y\xe4\xb6\xbfz", "x|\xe3\x90\x80|y|\xe4\xb6\xbf|z" },     /* U+3400, U+4DBF */
        { "x\xef\xa4\x80y\xef\xab\xbfz", "x|\xef\xa4\x80|y|\xef\xab\xbf|z" },     /* U+F900, U+FAFF */
        { "x\xf0\xa0\x80\x80y\xf0\xaf\xbf\xbfz", "x|\xf0\xa0\x80\x80|y|\xf0\xaf\xbf\xbf|z" }, /* U+20000, U+2FFFF */
        { "한국어", "한|국|어" },
        { "x\xea\xb0\x80y\xed\x9e\xafz", "x|\xea\xb0\x80|y|\xed\x9e\xaf|z" },     /* U+AC00, U+D7AF */
        /* just outside the solo ranges: word characters */
        { "\xe3\x90\x80x\xe3\x8f\xbfy", "\xe3\x90\x80|x\xe3\x8f\xbfy" },         /* U+3400 solo, U+33FF word */
        { "a\xed\x9e\xb0" "b", "a\xed\x9e\xb0" "b" },                           /* U+D7B0 word */
        { "a\xe4\xb7\x80" "b", "a\xe4\xb7\x80" "b" },                           /* U+4DC0 word */
        { "a\xef\xac\x80" "b", "a\xef\xac\x80" "b" },                           /* U+FB00 word */
        { "a\xf0\xb0\x80\x80" "b", "a\xf0\xb0\x80\x80" "b" },                   /* U+30000 word */
        /* separators: U+0080-00BF, U+00D7, U+00F7, U+2000-206F, U+3000-303F,
         * full-width punctuation; full-width letters and digits are word characters */
        { "a\xc2\xa0" "b\xc2\xbf" "c\xc2\x80" "d", "a|b|c|d" },
        { "2\xc3\x97" "3\xc3\xb7" "4", "2|3|4" },
        { "a\xe2\x80\x94" "b\xe2\x81\xaf" "c\xe2\x80\x80" "d", "a|b|c|d" },
        { "中文。测试、好\xe3\x80\x80ok", "中|文|测|试|好|ok" },
        { "ａｂ！ｃｄ：１２［x］ｙ｛z｝\xef\xbd\xa5w", "ａｂ|ｃｄ|１２|x|ｙ|z|w" },
        { "\xef\xbc\x8f\xef\xbc\x90\xef\xbc\x99\xef\xbc\x9a", "\xef\xbc\x90\xef\xbc\x99" }, /* ／０９： */
        { "\xef\xbc\xa0\xef\xbc\xa1\xef\xbc\xba\xef\xbc\xbb", "\xef\xbc\xa1\xef\xbc\xba" }, /* ＠ＡＺ［ */
        { "\xef\xbd\x80\xef\xbd\x81\xef\xbd\x9a\xef\xbd\x9b", "\xef\xbd\x81\xef\xbd\x9a" }, /* ｀ａｚ｛ */
        { "a\xef\xbd\xa6" "b", "a\xef\xbd\xa6" "b" },                           /* U+FF66 halfwidth kana: word */
        /* other scripts are word characters, not case-folded */
        { "Привет, мир! Γειά σου", "Привет|мир|Γειά|σου" },
        { "naïve café ÀÉ", "naïve|café|ÀÉ" },
        { "a\xc3\x80" "b", "a\xc3\x80" "b" },                                   /* U+00C0 word */
        { "a\xdf\xbf" "b", "a\xdf\xbf" "b" },                                   /* U+07FF word */
        /* invalid UTF-8: each offending byte is a word character joining the word */
        { "a\xff" "b \xfe", "a\xff" "b|\xfe" },
        { "a\x80\xbf" "b", "a\x80\xbf" "b" },                                   /* lone continuations */
        { "\xc0\xaf \xc1\xbf", "\xc0\xaf|\xc1\xbf" },                           /* overlong 2-byte */
        { "\xe0\x80\xaf.", "\xe0\x80\xaf" },                                    /* overlong 3-byte */
        { "\xf0\x80\x80\xaf.", "\xf0\x80\x80\xaf" },                            /* overlong 4-byte */
        { "x\xed\xa0\x80y", "x\xed\xa0\x80y" },                                 /* surrogate */
        { "\xf4\x90\x80\x80", "\xf4\x90\x80\x80" },                             /* > U+10FFFF */
        { "\xf5\x80 \xf8", "\xf5\x80|\xf8" },                                   /* bad leads */
        { "\xe4\xb8 x", "\xe4\xb8|x" },                                         /* truncated Han */
        { "\xe4\xb8" "a", "\xe4\xb8" "a" },                                     /* truncated, then ASCII */
        { "\xe4\xb8\xe4\xb8\xad", "\xe4\xb8|\xe4\xb8\xad" },                    /* truncated, then 中 */
        { "ab\xe4", "ab\xe4" },                                                 /* truncated at the end */
        { "ab\xf0\x9f\x98", "ab\xf0\x9f\x98" },
        { "\xf0\x9f\x98\x80!", "\xf0\x9f\x98\x80" },                            /* emoji: word */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = tokens_of(cases[i].in);
        if (strcmp(got, cases[i].want))
            fail_msg("case %zu: got '%s', want '%s'", i, got, cases[i].want);
    }
    /* the callback can stop the scan */
    tok_collect c;
    memset(&c, 0, sizeof c);
    c.stop_after = 2;
    assert_int_equal(fp_tokenize("a b c d", 7, tok_collect_cb, &c), 2);
    assert_string_equal(c.out, "a|b");
    assert_int_equal(fp_tokenize("a b 中 d", strlen("a b 中 d"), NULL, NULL), 4);
    /* never reads past len: a buffer cut inside a sequence */
    char *cut = malloc(2);
    assert_non_null(cut);
    memcpy(cut, "\xe4\xb8", 2);
    memset(&c, 0, sizeof c);
    assert_int_equal(fp_tokenize(cut, 2, tok_collect_cb, &c), 1);
    assert_string_equal(c.out, "\xe4\xb8");
    assert_int_equal(fp_text(cut, 2, 3), ref_text(cut, 2, 3));
    free(cut);
}

static void test_token_hash(void **state)
{
    (void)state;
    assert_int_equal(fp_token_hash("HeLLo", 5), XXH3_64bits("hello", 5));
    assert_int_equal(fp_token_hash("", 0), XXH3_64bits("", 0));
    /* only ASCII is case-folded */
    assert_true(fp_token_hash("É", 2) != fp_token_hash("é", 2));
    assert_true(fp_token_hash("Привет", strlen("Привет")) != fp_token_hash("привет", strlen("привет")));
    /* long tokens: hashed whole, never truncated */
    size_t len;
    char *t = gen_long_token(&len);
    assert_int_equal(fp_token_hash(t, len), ref_token_hash((const uint8_t *)t, len));
    assert_int_equal(fp_text(t, len, 1), ref_token_hash((const uint8_t *)t, len));
    assert_int_equal(fp_tokenize(t, len, NULL, NULL), 1);
    char *t2 = malloc(len);
    assert_non_null(t2);
    memcpy(t2, t, len);
    t2[len - 1] ^= 1;                     /* the last byte of 5000 counts */
    assert_true(fp_token_hash(t2, len) != fp_token_hash(t, len));
    assert_true(fp_text(t2, len, 3) != fp_text(t, len, 3));
    for (size_t l = 250; l < 270; l++)    /* around the internal buffer size */
        assert_int_equal(fp_token_hash(t, l), ref_token_hash((const uint8_t *)t, l));
    free(t2);
    free(t);
}

/* ---- Vote ---- */

static void test_compute_semantics(void **state)
{
    (void)state;
    assert_int_equal(fp_compute(NULL, 0), 0);
    uint64_t one = 0x0123456789abcdefull;
    assert_int_equal(fp_compute(&one, 1), one);
    /* ties give 0 */
    uint64_t tie[2] = { one, ~one };
    assert_int_equal(fp_compute(tie, 2), 0);
    uint64_t same[2] = { one, one };
    assert_int_equal(fp_compute(same, 2), one);
    /* three hashes: bitwise majority */
    uint64_t a = 0xF0F0F0F0F0F0F0F0ull, b = 0xFF00FF00FF00FF00ull, c = 0xFFFF0000FFFF0000ull;
    uint64_t three[3] = { a, b, c };
    assert_int_equal(fp_compute(three, 3), (a & b) | (a & c) | (b & c));
    /* four with a 2:2 tie on some bits and 3:1 on others */
    uint64_t four[4] = { 1, 1, 3, 0 };
    assert_int_equal(fp_compute(four, 4), 1);
}

static void test_vote_random(void **state)
{
    (void)state;
    static const size_t sizes[] = { 0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 247, 248, 249, 254, 255, 256,
                                    257, 263, 264, 265, 509, 510, 511, 1000, 4097, 70001 };
    uint64_t *h = malloc(70001 * sizeof *h);
    assert_non_null(h);
    rng_state = 7;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        if (small_run && n > 5000)
            n = 5000;
        for (int kind = 0; kind < 5; kind++) {
            for (size_t i = 0; i < n; i++) {
                uint64_t r = rng_next();
                /* kind 1: bits mostly set; kind 2: pairs of complements (ties);
                 * kind 3: all bits set (byte counters must not wrap); kind 4: one
                 * hash repeated, with a rare bit cleared */
                h[i] = kind == 0 ? r : kind == 1 ? r | rng_next()
                     : kind == 2 ? (i & 1 ? ~h[i - 1] : r)
                     : kind == 3 ? UINT64_MAX
                     : 0xFF00FF00F0F0CCAAull & ~(r % 97 == 0 ? (uint64_t)1 << 63 : 0);
            }
            assert_int_equal(fp_compute(h, n), ref_vote(h, n));
            if (kind == 2 && n % 2 == 0)
                assert_int_equal(fp_compute(h, n), 0);
            if (kind == 3 && n > 0)
                assert_int_equal(fp_compute(h, n), UINT64_MAX);
        }
    }
    free(h);
}

static void test_weighted(void **state)
{
    (void)state;
    uint64_t h[3] = { 0xFFull, 0x0Full, 0xF0F0ull };
    int64_t w1[3] = { 1, 1, 1 };
    assert_int_equal(fp_compute_weighted(h, w1, 3), fp_compute(h, 3));
    /* one heavy hash wins alone */
    int64_t heavy[3] = { 1, 10, 1 };
    assert_int_equal(fp_compute_weighted(h, heavy, 3), 0x0Full);
    /* negative weights vote against their bits */
    int64_t neg[1] = { -5 };
    uint64_t x = 0x00FF;
    assert_int_equal(fp_compute_weighted(&x, neg, 1), ~x);
    /* a zero sum is not > 0 */
    int64_t bal[2] = { 3, 3 };
    uint64_t y[2] = { 1, 0 };
    assert_int_equal(fp_compute_weighted(y, bal, 2), 0);
    int64_t zero[1] = { 0 };
    assert_int_equal(fp_compute_weighted(&x, zero, 1), 0);
    assert_int_equal(fp_compute_weighted(NULL, NULL, 0), 0);
    /* extreme weights do not overflow */
    uint64_t big[3] = { 1, 1, 0 };
    int64_t bw[3] = { INT64_MAX, INT64_MAX, INT64_MAX };
    assert_int_equal(fp_compute_weighted(big, bw, 3), 1);
    int64_t mw[3] = { INT64_MIN, INT64_MIN, INT64_MIN };
    assert_int_equal(fp_compute_weighted(big, mw, 3), ~(uint64_t)1);
    /* random: against a plain per-bit sum */
    rng_state = 99;
    size_t n = small_run ? 300 : 3000;
    uint64_t *hs = malloc(n * sizeof *hs);
    int64_t *ws = malloc(n * sizeof *ws);
    assert_non_null(hs);
    assert_non_null(ws);
    for (size_t i = 0; i < n; i++) {
        hs[i] = rng_next();
        ws[i] = (int64_t)(rng_next() % 2001) - 1000;
    }
    uint64_t want = 0;
    for (unsigned bit = 0; bit < 64; bit++) {
        long long sum = 0;
        for (size_t i = 0; i < n; i++)
            sum += ((hs[i] >> bit) & 1) ? ws[i] : -ws[i];
        if (sum > 0)
            want |= (uint64_t)1 << bit;
    }
    assert_int_equal(fp_compute_weighted(hs, ws, n), want);
    free(hs);
    free(ws);
}

/* ---- Scripts ---- */

static void test_scripts_distinct(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "我们今天去北京看长城，天气很好，人也不多。",
        "我们明天去上海看外滩，天气不好，人非常多。",
        "東京は日本の首都です。カタカナとひらがなを使います。",
        "大阪は関西の中心です。たこ焼きとお好み焼きが有名です。",
        "Быстрая коричневая лиса прыгает через ленивую собаку.",
        "Москва является столицей России и крупнейшим городом.",
        "Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.",
        "Η Αθήνα είναι η πρωτεύουσα και η μεγαλύτερη πόλη της Ελλάδας.",
    };
    enum { N = sizeof texts / sizeof texts[0] };
    uint64_t fp[N];
    for (size_t i = 0; i < N; i++) {
        size_t len = strlen(texts[i]);
        fp[i] = fp_text(texts[i], len, 3);
        assert_int_equal(fp[i], ref_text(texts[i], len, 3));
        assert_true(fp[i] != 0 && fp[i] != UINT64_MAX);
        assert_true(fp_tokenize(texts[i], len, NULL, NULL) >= 5);
        for (size_t j = 0; j < i; j++)
            assert_true(fp[i] != fp[j]);
    }
}

static void test_cjk_small_edit(void **state)
{
    (void)state;
    size_t len, len2;
    char *t = gen_han(3000, 5, &len);
    char *other = gen_han(3000, 6, &len2);
    uint64_t a = fp_text(t, len, 3);
    /* replace one character in the middle by another Han character */
    size_t at = 3 * 1500;
    assert_true((uint8_t)t[at] >= 0xE4);
    t[at + 2] = (char)(0x80 | ((t[at + 2] + 1) & 0x3F));
    uint64_t b = fp_text(t, len, 3);
    assert_true(a != b);
    unsigned d = (unsigned)__builtin_popcountll(a ^ b);
    unsigned far = (unsigned)__builtin_popcountll(a ^ fp_text(other, len2, 3));
    if (d > 6 || far < 16)
        fail_msg("one-character edit moved %u bits, unrelated text %u bits", d, far);
    free(t);
    free(other);
}

/* ---- Streaming and equivalence on random bytes ---- */

/* Fingerprint of text fed in pieces whose lengths come from the current rng. */
static uint64_t stream_pieces(const char *text, size_t len, unsigned w, size_t maxpiece)
{
    fp_state *s = fp_state_new(w);
    assert_non_null(s);
    size_t off = 0;
    while (off < len) {
        size_t m = 1 + rng_next() % maxpiece;
        if (m > len - off)
            m = len - off;
        fp_state_update(s, text + off, m);
        if (rng_next() % 4 == 0)
            fp_state_update(s, text + off, 0);
        off += m;
    }
    uint64_t r = fp_state_final(s);
    /* the state is reset: the same text again gives the same fingerprint */
    fp_state_update(s, text, len);
    assert_int_equal(fp_state_final(s), r);
    fp_state_free(s);
    return r;
}

static void test_streaming(void **state)
{
    (void)state;
    assert_null(fp_state_new(FP_WINDOW_MAX + 1));
    fp_state *s = fp_state_new(0);
    assert_non_null(s);
    assert_int_equal(fp_state_final(s), 0);
    fp_state_free(s);
    for (size_t i = 0; i < sizeof goldens / sizeof goldens[0]; i++) {
        size_t len;
        char *to_free;
        const char *text = golden_input(i, &len, &to_free);
        uint64_t whole = fp_text(text, len, goldens[i].window);
        rng_state = 1000 + i;
        size_t pieces[] = { 1, 2, 3, 5, 64, 1000 };
        for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++) {
            if (pieces[k] == 1 && len > 20000 && small_run)
                continue;
            if (stream_pieces(text, len, goldens[i].window, pieces[k]) != whole)
                fail_msg("%s: pieces up to %zu bytes differ", goldens[i].name, pieces[k]);
        }
        free(to_free);
    }
}

/* Random byte strings over an alphabet rich in boundary cases: fast path, reference
 * and streaming all agree, for several windows. */
static void test_random_bytes(void **state)
{
    (void)state;
    static const uint8_t alpha[] = {
        'a', 'B', 'z', '0', ' ', '.', '\n', 0x00, 0x7f, 0x80, 0xbf, 0xa0, 0x9f, 0x8f, 0x90,
        0xc0, 0xc2, 0xc3, 0xd7, 0xdf, 0xe0, 0xe2, 0xe3, 0xe4, 0xea, 0xed, 0xef, 0xf0, 0xf4,
        0xf5, 0xff, 0xbc, 0xbd, 0x81, 0xa4, 0xab, 0xb0,
    };
    size_t rounds = small_run ? 150 : 1500;
    char buf[600];
    for (size_t r = 0; r < rounds; r++) {
        rng_state = 5000 + r;
        size_t len = rng_next() % sizeof buf;
        for (size_t i = 0; i < len; i++)
            buf[i] = (char)alpha[rng_next() % sizeof alpha];
        unsigned w = 1 + (unsigned)(r % 6);
        uint64_t got = fp_text(buf, len, w);
        uint64_t want = ref_text(buf, len, w);
        if (got != want)
            fail_msg("round %zu (len %zu, window %u): %016llx != reference %016llx", r, len, w,
                     (unsigned long long)got, (unsigned long long)want);
        ref_tokens t = ref_tokenize((const uint8_t *)buf, len);
        assert_int_equal(fp_tokenize(buf, len, NULL, NULL), t.n);
        free(t.start);
        free(t.len);
        assert_int_equal(stream_pieces(buf, len, w, 1 + r % 7), got);
    }
}

/* Mostly-ASCII random text (the vector fast path works on 32-byte ASCII blocks):
 * words of 1..40 bytes, sometimes 200..700 bytes, rare non-ASCII characters. */
static void test_random_ascii(void **state)
{
    (void)state;
    static const char word_chars[] = "abcXYZ0189";
    static const char seps[] = " .,\n_-@[`{/:\x7f";
    static const char *const high[] = { "é", "中", "\xe4\xb8", "\xff", "—", "П", "\xc2\xa0" };
    size_t rounds = small_run ? 60 : 600;
    size_t cap = 8000;
    char *buf = malloc(cap + 64);
    assert_non_null(buf);
    for (size_t r = 0; r < rounds; r++) {
        rng_state = 90000 + r;
        size_t target = rng_next() % cap, len = 0;
        while (len < target) {
            uint64_t k = rng_next() % 100;
            size_t wl = k < 3 ? 200 + rng_next() % 500 : 1 + rng_next() % (k < 50 ? 8 : 40);
            for (size_t i = 0; i < wl && len < cap; i++)
                buf[len++] = word_chars[rng_next() % (sizeof word_chars - 1)];
            if (k % 17 == 0 && len + 4 < cap) {
                const char *h = high[rng_next() % 7];
                memcpy(buf + len, h, strlen(h));
                len += strlen(h);
            }
            size_t ns = 1 + rng_next() % 3;
            for (size_t i = 0; i < ns && len < cap; i++)
                buf[len++] = seps[rng_next() % (sizeof seps - 1)];
        }
        unsigned w = 1 + (unsigned)(r % 4);
        uint64_t got = fp_text(buf, len, w);
        uint64_t want = ref_text(buf, len, w);
        if (got != want)
            fail_msg("round %zu (len %zu, window %u): %016llx != reference %016llx", r, len, w,
                     (unsigned long long)got, (unsigned long long)want);
        /* offsets other than 0 change the block boundaries */
        if (len > 1)
            assert_int_equal(fp_text(buf + 1, len - 1, w), ref_text(buf + 1, len - 1, w));
        assert_int_equal(stream_pieces(buf, len, w, 1 + r % 100), got);
    }
    free(buf);
}

int main(void)
{
    const char *v = getenv("VALGRIND");
    small_run = v && *v && strcmp(v, "0");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_golden_relations),
        cmocka_unit_test(test_tokenizer_boundaries),
        cmocka_unit_test(test_token_hash),
        cmocka_unit_test(test_compute_semantics),
        cmocka_unit_test(test_vote_random),
        cmocka_unit_test(test_weighted),
        cmocka_unit_test(test_scripts_distinct),
        cmocka_unit_test(test_cjk_small_edit),
        cmocka_unit_test(test_streaming),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_random_ascii),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
