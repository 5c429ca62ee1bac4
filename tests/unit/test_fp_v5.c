/* test_fp_v5.c: fingerprint algorithm v5's text path (common/core/fingerprint.c,
 * fp_bp.c; the same values as the former v4's): golden vectors, the checked-in
 * boilerplate table (what it holds), a slow reference written from the definition in
 * docs/fingerprint.md "Algorithm v5: text" on random ASCII text with planted table
 * K-grams, streaming in pieces = whole, copies of a state mid-text, a text made only of
 * boilerplate (not 0: the unweighted vote), text without boilerplate (the unweighted
 * vote), HTML (the article voted as text) and the settings text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define TESTUTIL_SEED 0x5eed0f4b01e4a7e1ULL
#include "fingerprint.h"
#include "fp_bp.h"
#include "html.h"
#include "testutil.h"

static const fp_params V5 = {FP_V5, 0};

static uint64_t v5(const char *s, size_t n)
{
    return fp_text_p(s, n, &V5);
}

/* Sentences of Debian copyright files and licenses: every K-gram of each is in the
 * table (test_table checks it), so their words are boilerplate. */
static const char *const boiler[] = {
    "On Debian systems, the complete text of the GNU General Public License version 2 "
    "can be found in /usr/share/common-licenses/GPL-2.",
    "This program is free software; you can redistribute it and/or modify it under the "
    "terms of the GNU General Public License as published by the Free Software "
    "Foundation; either version 2 of the License, or (at your option) any later version.",
    "THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS \"AS IS\" AND "
    "ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE IMPLIED "
    "WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE DISCLAIMED.",
};
#define NBOILER (sizeof boiler / sizeof boiler[0])

/* Pinned: a change of any of these is a change of the stored format (the table's and
 * the weights too). */
static const struct {
    const char *text;
    uint64_t fp;
} goldens[] = {
    { "", 0x0000000000000000ull },
    { "hello", 0x9555e8555c62dcfdull },
    { "the quick brown fox jumps over the lazy dog", 0x83d5978398a89363ull },
    { "My cat eats fish on Tuesday and sleeps all afternoon long. On Debian systems, the "
      "complete text of the GNU General Public License version 2 can be found in "
      "/usr/share/common-licenses/GPL-2.", 0x9716860f2dd9bfe7ull },
    { "Copyright 2019 Jane Roe. Licensed under the Apache License, Version 2.0 (the "
      "\"License\"); you may not use this file except in compliance with the License. "
      "Our widget parser reads gears.", 0xc282830289eb20d5ull },
};

static uint64_t ref_v5(const char *s, size_t n, int weighted);

static void test_golden(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof goldens / sizeof goldens[0]; i++) {
        uint64_t got = v5(goldens[i].text, strlen(goldens[i].text));
        assert_true(ref_v5(goldens[i].text, strlen(goldens[i].text), 1) == goldens[i].fp);
        if (got != goldens[i].fp)
            fail_msg("golden %zu: got 0x%016llx, want 0x%016llx", i,
                     (unsigned long long)got, (unsigned long long)goldens[i].fp);
    }
}

typedef struct kg_count {
    size_t n, hit;
} kg_count;

static void kg_tally(uint64_t h, void *arg)
{
    kg_count *c = arg;
    c->n++;
    c->hit += fpbp_has(h) != 0;
}

/* The table: version 1, its size, every entry found (through the filter and the
 * bucket index bptable.py writes beside it) and its neighbours not, the sentences
 * above are in it, ordinary prose is not. */
static void test_table(void **state)
{
    (void)state;
    assert_int_equal(fpbp_table_version(), 1);
    assert_int_equal(fpbp_table_size(), 39619);
    size_t missed = 0, extra = 0;
    for (size_t i = 0; i < fpbp_table_size(); i++) {
        uint64_t h = fpbp_table_at(i);
        if (i > 0)
            assert_true(fpbp_table_at(i - 1) < h);
        missed += !fpbp_has(h);
        extra += (h + 1 != fpbp_table_at(i + 1) && fpbp_has(h + 1)) +
                 (i > 0 && h - 1 != fpbp_table_at(i - 1) && fpbp_has(h - 1));
    }
    if (missed || extra)
        fail_msg("%zu entries not found, %zu neighbours found", missed, extra);
    for (size_t i = 0; i < NBOILER; i++) {
        kg_count c = {0, 0};
        fpbp_kgrams(boiler[i], strlen(boiler[i]), kg_tally, &c);
        assert_true(c.n > 10);
        if (c.hit != c.n)
            fail_msg("sentence %zu: %zu of %zu K-grams in the table", i, c.hit, c.n);
    }
    const char *prose = "the quick brown fox jumps over the lazy dog while my cat eats "
                        "fish on a rainy Tuesday afternoon in the old harbour town";
    kg_count c = {0, 0};
    fpbp_kgrams(prose, strlen(prose), kg_tally, &c);
    assert_int_equal(c.n, 19);
    assert_int_equal(c.hit, 0);
}

/* ---- Slow reference from the definition (ASCII text) ---- */

#define REF_MAX 4096

/* v5 of ASCII text: tokens are runs of letters and digits, lower-cased, hashed with
 * XXH3-64; a K-gram's hash is XXH3-64 of its K token hashes (little-endian); a token
 * is boilerplate when a K-gram covering it is in the table; its unigram, and its
 * bigram with the token before when both are boilerplate, weigh FP_V5_W_BP, every
 * other feature FP_V5_W_TEXT; bit i is set when the weighted sum is > 0. With weighted
 * 0, every feature weighs the same (the vote without boilerplate weights). */
static uint64_t ref_v5(const char *s, size_t n, int weighted)
{
    static uint64_t th[REF_MAX];
    static unsigned char bp[REF_MAX];
    size_t nt = 0;
    for (size_t i = 0; i < n;) {
        char buf[256];
        size_t l = 0;
        while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                         (s[i] >= '0' && s[i] <= '9'))) {
            assert_true(l < sizeof buf);
            buf[l++] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
            i++;
        }
        if (l) {
            assert_true(nt < REF_MAX);
            th[nt++] = XXH3_64bits(buf, l);
        } else {
            i++;
        }
    }
    memset(bp, 0, nt);
    for (size_t e = FPBP_K; e <= nt; e++) {
        uint8_t kb[8 * FPBP_K];
        for (size_t k = 0; k < FPBP_K; k++)
            for (unsigned b = 0; b < 8; b++)
                kb[8 * k + b] = (uint8_t)(th[e - FPBP_K + k] >> (8 * b));
        if (fpbp_has(XXH3_64bits(kb, sizeof kb)))
            memset(bp + e - FPBP_K, 1, FPBP_K);
    }
    int64_t sum[64] = {0};
    for (size_t j = 0; j < nt; j++) {
        uint64_t f[2];
        int64_t w[2];
        size_t nf = 0;
        f[nf] = th[j];
        w[nf++] = bp[j] && weighted ? FP_V5_W_BP : FP_V5_W_TEXT;
        if (j > 0) {
            uint8_t bb[16];
            for (unsigned b = 0; b < 8; b++) {
                bb[b] = (uint8_t)(th[j - 1] >> (8 * b));
                bb[8 + b] = (uint8_t)(th[j] >> (8 * b));
            }
            f[nf] = XXH3_64bits(bb, 16);
            w[nf++] = bp[j] && bp[j - 1] && weighted ? FP_V5_W_BP : FP_V5_W_TEXT;
        }
        for (size_t k = 0; k < nf; k++)
            for (unsigned i = 0; i < 64; i++)
                sum[i] += (f[k] >> i) & 1 ? w[k] : -w[k];
    }
    uint64_t r = 0;
    for (unsigned i = 0; i < 64; i++)
        if (sum[i] > 0)
            r |= (uint64_t)1 << i;
    return r;
}

static const char *const words[] = {
    "the", "of", "software", "license", "gear", "widget", "river", "apple", "General",
    "Public", "and", "or", "x86", "2", "copyright", "holder", "maps", "parser", "tea",
};

/* Random ASCII text into buf (< cap bytes): random words and separators, with
 * planted boilerplate sentences (whole, or cut to a few words). Returns its length. */
static size_t random_text(char *buf, size_t cap)
{
    size_t n = 0;
    size_t parts = 1 + rnd() % 12;
    for (size_t p = 0; p < parts; p++) {
        char piece[1024];
        size_t m;
        if (rnd() % 3 == 0) {
            const char *b = boiler[rnd() % NBOILER];
            size_t bl = strlen(b), from = rnd() % 4 == 0 ? rnd() % bl : 0;
            size_t len = rnd() % 3 == 0 ? rnd() % (bl - from + 1) : bl - from;
            m = len < sizeof piece ? len : sizeof piece - 1;
            memcpy(piece, b + from, m);
        } else {
            m = 0;
            for (size_t w = rnd() % 20; w > 0; w--) {
                const char *x = words[rnd() % (sizeof words / sizeof words[0])];
                m += (size_t)snprintf(piece + m, sizeof piece - m, "%s%s", x,
                                      rnd() % 5 ? " " : ", ");
            }
        }
        if (n + m + 2 >= cap)
            break;
        memcpy(buf + n, piece, m);
        n += m;
        buf[n++] = rnd() % 2 ? ' ' : '\n';
    }
    return n;
}

static void test_reference(void **state)
{
    (void)state;
    static char buf[8192];
    size_t rounds = light() ? 200 : 3000, differ_flat = 0;
    for (size_t r = 0; r < rounds; r++) {
        size_t n = random_text(buf, sizeof buf);
        uint64_t want = ref_v5(buf, n, 1), got = v5(buf, n);
        if (got != want)
            fail_msg("round %zu: v5 0x%016llx, reference 0x%016llx: '%.*s'", r,
                     (unsigned long long)got, (unsigned long long)want, (int)n, buf);
        differ_flat += got != ref_v5(buf, n, 0);
    }
    /* the planted boilerplate changes the fingerprint of a good share of the texts */
    assert_true(differ_flat > rounds / 10);
}

/* Fed in pieces of every size, or split at every byte, v5 gives the whole's value; a
 * copy taken mid-text goes on alone. */
static void test_streaming(void **state)
{
    (void)state;
    static char buf[8192];
    fp_state *s = fp_state_new_p(&V5), *c = fp_state_new_p(&V5);
    assert_non_null(s);
    assert_non_null(c);
    for (size_t r = 0; r < (light() ? 10 : 60); r++) {
        size_t n = random_text(buf, sizeof buf);
        uint64_t whole = v5(buf, n);
        for (size_t piece = 1; piece <= 17; piece += 4) {
            for (size_t o = 0; o < n; o += piece)
                fp_state_update(s, buf + o, n - o < piece ? n - o : piece);
            assert_true(fp_state_final(s) == whole);
        }
        for (size_t cut = 0; cut <= n; cut += 1 + n / 50) {
            fp_state_update(s, buf, cut);
            fp_state_copy(c, s);
            fp_state_update(c, buf + cut, n - cut);
            fp_state_update(s, buf + cut, n - cut);
            assert_true(fp_state_final(c) == whole);
            assert_true(fp_state_final(s) == whole);
        }
    }
    fp_state_free(s);
    fp_state_free(c);
}

/* Only boilerplate: every feature weighs the same, so v5 is the unweighted vote (not
 * 0). Without any table K-gram v5 is the unweighted vote as well. */
static void test_all_boilerplate(void **state)
{
    (void)state;
    for (size_t i = 0; i < NBOILER; i++) {
        uint64_t f = v5(boiler[i], strlen(boiler[i]));
        assert_true(f != 0);
        assert_true(f == ref_v5(boiler[i], strlen(boiler[i]), 0));
    }
    const char *t = "widget parser maps gears of the river apple tea copyright holder";
    assert_true(v5(t, strlen(t)) == ref_v5(t, strlen(t), 0));
    /* a boilerplate sentence beside other text weighs less than the other text */
    char mix[1024];
    int n = snprintf(mix, sizeof mix, "%s %s", t, boiler[1]);
    assert_true(v5(mix, (size_t)n) != ref_v5(mix, (size_t)n, 0));
}

static uint64_t html_fp(const char *page, const fp_params *p, unsigned flags)
{
    uint64_t fp = 1;
    char err[128];
    assert_int_equal(fp_html_text(page, strlen(page), p, flags, &fp, err, sizeof err), 0);
    return fp;
}

/* HTML: v5 votes the text it read from the page (its article, or all visible text
 * with FP_HTML_ALL_TEXT) as it votes text. */
static void test_html(void **state)
{
    (void)state;
    char page[4096], article[2048];
    snprintf(article, sizeof article, "Our widget parser maps the gears of the river. %s",
             boiler[0]);
    snprintf(page, sizeof page,
             "<html><body><nav><ul><li><a href=/a>Home</a></li><li><a href=/b>News</a>"
             "</li><li><a href=/c>About us</a></li></ul></nav><main><h1>Widgets</h1>"
             "<p>%s</p></main><footer>Copyright the site, all rights reserved</footer>"
             "</body></html>", article);
    fp_extraction x;
    char err[128];
    assert_int_equal(fp_html_extract(page, strlen(page), &V5, 0, &x, err, sizeof err), 0);
    assert_non_null(strstr(x.text, article));
    assert_null(strstr(x.text, "About us"));
    assert_true(html_fp(page, &V5, 0) == v5(x.text, x.len));
    fp_extraction_free(&x);
    const char *all = "Home\nNews\nAbout us\nWidgets\n";
    char text[2200];
    snprintf(text, sizeof text, "%s%s\nCopyright the site, all rights reserved", all, article);
    assert_true(html_fp(page, &V5, FP_HTML_ALL_TEXT) == v5(text, strlen(text)));
}

static void test_params(void **state)
{
    (void)state;
    fp_params p;
    char err[160], buf[16];
    assert_int_equal(fp_params_parse("v5", &p, err, sizeof err), 0);
    assert_int_equal(p.version, FP_V5);
    fp_params_format(&p, buf, sizeof buf);
    assert_string_equal(buf, "v5");
    fp_params bad = {FP_V5, 3};
    assert_int_equal(fp_params_check(&bad, err, sizeof err), -1);
    assert_int_not_equal(fp_params_parse("v5:3", &p, err, sizeof err), 0);
    /* the former v4, whose text fingerprints v5's are: refused, v5 named */
    assert_int_equal(fp_params_parse("v4", &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "v4 was removed"));
    assert_non_null(strstr(err, "v5"));
    assert_int_not_equal(fp_params_parse("v6", &p, err, sizeof err), 0);
    fp_params v6 = {6, 0};
    assert_int_equal(fp_params_check(&v6, err, sizeof err), -1);
    assert_non_null(strstr(err, "v5"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_reference),
        cmocka_unit_test(test_streaming),
        cmocka_unit_test(test_all_boilerplate),
        cmocka_unit_test(test_html),
        cmocka_unit_test(test_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
