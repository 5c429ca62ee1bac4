/* test_fp_v5_unicode.c: the tokens and features of fingerprint algorithm v5 on text
 * without known boilerplate (common/core/fingerprint.c; where every feature weighs the
 * same, test_fp_v5.c has the weights): golden vectors of Unicode text, Unicode folding
 * relations, a slow reference on ASCII text (unigrams + bigrams by the definition in
 * docs/fingerprint.md "Algorithm v5: text"), streaming in pieces of every size, copies
 * of a state taken mid-text (fp_state_copy), and the settings text (fp_params_parse /
 * _format / _check, the removed algorithms v2..v4 included). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "fingerprint.h"
#include "testutil.h"

static const fp_params V5 = {FP_V5, 0};

static uint64_t v5(const char *s)
{
    return fp_text_p(s, strlen(s), &V5);
}

typedef struct golden2 {
    const char *text;
    uint64_t fp;
} golden2;

/* Pinned: a change of any of these is a change of the stored format. */
static const golden2 goldens[] = {
    { "", 0x0000000000000000ull },
    { "hello", 0x9555e8555c62dcfdull },
    { "the quick brown fox", 0x0bc7d683bce9936bull },
    { "the quick brown fox jumps over the lazy dog", 0x83d5978398a89363ull },
    { "我们今天去北京看长城，天气很好。", 0x5e5c33b85ed9a8a1ull },
    { "Быстрая коричневая лиса прыгает через ленивую собаку", 0x8130b9e9b8baaa37ull },
    { "naïve café — résumé × ÷ «quoted»", 0xb31684e109263265ull },
    { "find the file", 0x3b1a6d574cf01376ull },
    { "abc def 123", 0x18e26fbe390fb958ull },
    { "Version control", 0x28340c077dbea8d6ull },
    { "STRASSE", 0x6a5260406c46e30cull },
    { "2024-12-31 v1.2.3 7x 007", 0x6b9cfe344edcf446ull },
    { "ab \xff\xfe cd \xe4\xb8 x", 0xe0de44c690d0752dull },
};

static void test_golden(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof goldens / sizeof goldens[0]; i++)
        if (v5(goldens[i].text) != goldens[i].fp)
            fail_msg("golden %zu '%s': got 0x%016llx, want 0x%016llx", i, goldens[i].text,
                     (unsigned long long)v5(goldens[i].text), (unsigned long long)goldens[i].fp);
    /* the default algorithm is v5 */
    assert_true(fp_text_p("hello", 5, NULL) == v5("hello"));
    /* v1 is unchanged */
    fp_params v1 = {FP_V1, 3};
    assert_true(fp_text_p("hello", 5, &v1) == 0xb475014e03674818ull);
    assert_true(fp_text_p("hello", 5, &v1) == fp_text("hello", 5, 3));
}

/* Texts that differ only in case, composition, compatibility forms or format
 * characters fingerprint alike in v5 (and apart where they should). */
static void test_unicode_relations(void **state)
{
    (void)state;
    static const char *same[][2] = {
        { "Быстрая коричневая лиса", "БЫСТРАЯ КОРИЧНЕВАЯ ЛИСА" },       /* Cyrillic case */
        { "Η γρήγορη καφέ αλεπού", "Η ΓΡΉΓΟΡΗ ΚΑΦΈ ΑΛΕΠΟΎ" },           /* Greek case */
        { "caf\xc3\xa9 cr\xc3\xa8me", "cafe\xcc\x81 cre\xcc\x80me" },   /* NFC vs NFD */
        { "\xef\xac\x81nd the \xef\xac\x81le", "find the file" },       /* ligature fi */
        { "\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\xa3 \xef\xbc\x91\xef\xbc\x92", "abc 12" }, /* full width */
        { "Ver\xc2\xadsion con\xe2\x80\x8btrol", "Version control" },    /* soft hyphen, ZWSP */
        { "Stra\xc3\x9f" "e", "STRASSE" },                              /* ß folds to ss */
        { "x\xc2\xb2 + y\xc2\xb2", "x2 y2" },                           /* superscripts, symbols */
        { "one\xe2\x80\x94two \xc2\xabthree\xc2\xbb", "one two three" }, /* punctuation separates */
        { "\xef\xa4\x80", "\xe8\xb1\x88" },                             /* CJK compatibility ideograph */
        { "ジョン・スミス と 田中", "ジョン スミス と 田中" },     /* kana middle dot separates */
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        if (v5(same[i][0]) != v5(same[i][1]))
            fail_msg("pair %zu should fingerprint alike: '%s' / '%s'", i, same[i][0], same[i][1]);
    /* ... and v1 tells most of them apart (ASCII-only folding) */
    assert_true(fp_text(same[0][0], strlen(same[0][0]), 3) !=
                fp_text(same[0][1], strlen(same[0][1]), 3));
    static const char *differ[][2] = {
        { "résumé", "resume" },       /* accents are kept (marks are letters' parts) */
        { "中文", "文中" },
        { "abc def", "abcdef" },
    };
    for (size_t i = 0; i < sizeof differ / sizeof differ[0]; i++)
        if (v5(differ[i][0]) == v5(differ[i][1]))
            fail_msg("pair %zu should differ: '%s' / '%s'", i, differ[i][0], differ[i][1]);
}

/* The definition on ASCII text: tokens (fp_tokenize), token hashes (fp_token_hash),
 * features th[i] and XXH3(LE64 th[i-1], LE64 th[i]), per-bit majority. */
typedef struct refctx {
    uint64_t *th;
    size_t n, cap;
} refctx;

static int ref_tok(const char *tok, size_t len, void *arg)
{
    refctx *r = arg;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->th = realloc(r->th, r->cap * sizeof *r->th);
        assert_non_null(r->th);
    }
    r->th[r->n++] = fp_token_hash(tok, len);
    return 0;
}

static uint64_t ref_v5(const char *text, size_t len)
{
    refctx r = {NULL, 0, 0};
    fp_tokenize(text, len, ref_tok, &r);
    uint64_t *f = malloc((2 * r.n + 1) * sizeof *f);
    assert_non_null(f);
    size_t nf = 0;
    for (size_t i = 0; i < r.n; i++) {
        f[nf++] = r.th[i];
        if (i > 0) {
            uint8_t b[16];
            for (int k = 0; k < 8; k++) {
                b[k] = (uint8_t)(r.th[i - 1] >> (8 * k));
                b[8 + k] = (uint8_t)(r.th[i] >> (8 * k));
            }
            f[nf++] = XXH3_64bits(b, 16);
        }
    }
    uint64_t out = 0;
    for (int bit = 0; bit < 64; bit++) {
        size_t c = 0;
        for (size_t j = 0; j < nf; j++)
            c += (f[j] >> bit) & 1;
        if (2 * c > nf)
            out |= 1ull << bit;
    }
    free(f);
    free(r.th);
    return out;
}

static void test_reference_ascii(void **state)
{
    (void)state;
    static const char alpha[] = "abcXYZ019 ,.-_\n\t";
    char buf[700];
    size_t rounds = light() ? 100 : 1000;
    for (size_t r = 0; r < rounds; r++) {
        size_t len = rnd() % sizeof buf;
        for (size_t i = 0; i < len; i++)
            buf[i] = alpha[rnd() % (sizeof alpha - 1)];
        uint64_t want = ref_v5(buf, len);
        if (fp_text_p(buf, len, &V5) != want)
            fail_msg("round %zu: v5 differs from the reference", r);
    }
}

/* Streaming in pieces equals the whole, for every piece size, mixed scripts. */
static void test_streaming(void **state)
{
    (void)state;
    const char *text = "Le café — ＡＢＣ ﬁne Stra\xc3\x9f" "e 我们今天 Быстрая \xff\xe4\xb8 ok "
                       "Ver\xc2\xadsion a b c d e f g h";
    size_t len = strlen(text);
    uint64_t whole = v5(text);
    fp_state *s = fp_state_new_p(&V5);
    assert_non_null(s);
    for (size_t piece = 1; piece <= len; piece++) {
        for (size_t o = 0; o < len; o += piece)
            fp_state_update(s, text + o, len - o < piece ? len - o : piece);
        if (fp_state_final(s) != whole)
            fail_msg("pieces of %zu bytes differ", piece);
    }
    /* a long token (past the 256-byte buffer) of non-ASCII letters */
    char big[3000];
    size_t bl = 0;
    while (bl + 2 < sizeof big) {
        memcpy(big + bl, "\xc3\x89", 2);   /* É */
        bl += 2;
    }
    uint64_t wb = fp_text_p(big, bl, &V5);
    for (size_t piece = 1; piece < 600; piece += 37) {
        for (size_t o = 0; o < bl; o += piece)
            fp_state_update(s, big + o, bl - o < piece ? bl - o : piece);
        assert_true(fp_state_final(s) == wb);
    }
    /* a copy taken at any point (inside a token, a UTF-8 sequence or the long token's
     * spill) goes on as the original would, and the original is untouched */
    fp_state *c = fp_state_new_p(&V5);
    assert_non_null(c);
    for (size_t cut = 0; cut <= len; cut += 3) {
        fp_state_update(s, text, cut);
        fp_state_copy(c, s);
        fp_state_update(c, text + cut, len - cut);
        assert_true(fp_state_final(c) == whole);
        fp_state_update(s, text + cut, len - cut);
        assert_true(fp_state_final(s) == whole);
    }
    fp_state_update(s, big, 700);
    fp_state_copy(c, s);
    fp_state_update(c, big + 700, bl - 700);
    fp_state_update(s, big + 700, bl - 700);
    assert_true(fp_state_final(c) == wb && fp_state_final(s) == wb);
    fp_state_free(c);
    fp_state_free(s);
}

static void test_params(void **state)
{
    (void)state;
    fp_params p;
    char err[160], buf[16];
    assert_int_equal(fp_params_parse("v5", &p, err, sizeof err), 0);
    assert_int_equal(p.version, FP_V5);
    assert_int_equal(p.window, 0);
    fp_params_format(&p, buf, sizeof buf);
    assert_string_equal(buf, "v5");
    assert_int_equal(fp_params_parse("V5", &p, err, sizeof err), 0);
    assert_int_equal(p.version, FP_V5);
    assert_int_equal(fp_params_parse("v1", &p, err, sizeof err), 0);
    fp_params_format(&p, buf, sizeof buf);
    assert_string_equal(buf, "v1:3");
    assert_int_equal(fp_params_parse("v1:64", &p, err, sizeof err), 0);
    assert_int_equal(p.window, 64);
    static const char *bad[] = { "", "v", "v6", "v5:1", "v4:1", "v3:1", "v1:", "v1:0", "v1:65", "v1:x",
                                 "v2:3", "v1:3x", "v0", "v9",
                                 "v11", "v1:99999999999999999999" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (fp_params_parse(bad[i], &p, err, sizeof err) == 0)
            fail_msg("'%s' accepted", bad[i]);
        assert_non_null(strstr(err, "fingerprint algorithm"));
    }
    /* v2..v4 were removed: named, with v5 as their successor */
    static const char *removed[] = { "v2", "v3", "v4", "V4" };
    for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++) {
        err[0] = '\0';
        if (fp_params_parse(removed[i], &p, err, sizeof err) == 0)
            fail_msg("'%s' accepted", removed[i]);
        assert_non_null(strstr(err, "was removed"));
        assert_non_null(strstr(err, "v5"));
        assert_non_null(strstr(err, removed[i] + 1));
        fp_params old = {(unsigned)(removed[i][1] - '0'), 0};
        assert_int_equal(fp_params_check(&old, err, sizeof err), -1);
        assert_non_null(strstr(err, "was removed"));
        assert_null(fp_state_new_p(&old));
        char cbuf[64];
        assert_int_equal(fp_params_option(removed[i], &p, cbuf, sizeof cbuf, err, sizeof err), -1);
        assert_non_null(strstr(err, "fingerprint-algorithm: fingerprint algorithm v"));
    }
    fp_params q = {FP_V5, 3};
    assert_int_equal(fp_params_check(&q, err, sizeof err), -1);
    assert_null(fp_state_new_p(&q));
    fp_params r = {7, 0};
    assert_int_equal(fp_params_check(&r, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_unicode_relations),
        cmocka_unit_test(test_reference_ascii),
        cmocka_unit_test(test_streaming),
        cmocka_unit_test(test_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
