/* test_fp_span.c: recorded spans of features (common/core/fp_span.h, what html.c uses
 * to vote a page's kept blocks into its main-content tiers without tokenizing them
 * again): a state fed blocks separated by "\n" while recording each block's span
 * fingerprints the text as before, and replaying the spans of any subset of the
 * blocks into another state gives exactly the fingerprint of those blocks' text fed
 * to it, for random texts (ASCII, non-ASCII, CJK, long blocks past the vote's byte
 * counters, empty and separator-only blocks), mixed with text fed directly, for v2
 * and for v4 (blocks with sentences of its boilerplate table, so that table K-grams
 * end inside blocks, at their edges and across them); and the refusals (a token in
 * progress, a v1 state, a span of another algorithm). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fingerprint.h"
#include "fp_span.h"
#define TESTUTIL_SEED 0x5eed5ba115ULL
#include "testutil.h"

static const fp_params V2 = {FP_V2, 0}, V4 = {FP_V4, 0};

#define NBLK 24
#define BLKMAX 6000

/* Words of v4's boilerplate table: every 6 consecutive words here are a table K-gram
 * (test_fp_v4's sentences). */
#define BOILER "This program is free software; you can redistribute it and/or modify it " \
    "under the terms of the GNU General Public License as published by the Free " \
    "Software Foundation; either version 2 of the License, or (at your option) any " \
    "later version. "

/* Random words from a small vocabulary (so that features repeat), separators,
 * non-ASCII units and pieces of boilerplate. */
static size_t random_block(char *b, size_t cap)
{
    static const char *const units[] = {
        "the", "Quick", "fox", "über", "日本", "語", "ДОМ", "x", "12", " ", " ", "\n", ",",
        "\xc2\xad", "naïve", "IBM", "a", " ", " ", " ", BOILER, "the GNU General Public ",
        "License as published by the Free Software ", "either version 2 ",
    };
    size_t kind = rnd() % 8, n = 0;
    size_t want = kind == 0 ? 0 : kind == 1 ? 1 + rnd() % 4 : kind < 6 ? rnd() % 300
                                                             : rnd() % (cap - 16);
    while (n < want) {
        const char *u = units[rnd() % (sizeof units / sizeof units[0])];
        size_t l = strlen(u);
        if (n + l > cap)
            break;
        memcpy(b + n, u, l);
        n += l;
    }
    return n;
}

static void feed_block(fp_state *s, const char *b, size_t n)
{
    fp_state_update(s, b, n);
    fp_state_update(s, "\n", 1);
}

static void replay_matches_text(const fp_params *alg)
{
    static char blk[NBLK][BLKMAX];
    static fp_span spans[NBLK];
    size_t len[NBLK];
    fp_state *all = fp_state_new_p(alg), *rep = fp_state_new_p(alg), *txt = fp_state_new_p(alg);
    fp_state *one = fp_state_new_p(alg);
    assert_true(all && rep && txt && one);
    unsigned rounds = light() ? 40 : 400;
    for (unsigned r = 0; r < rounds; r++) {
        unsigned nb = 1 + (unsigned)(rnd() % NBLK);
        for (unsigned i = 0; i < nb; i++)
            len[i] = random_block(blk[i], BLKMAX);
        /* the recording state votes as a plain one */
        for (unsigned i = 0; i < nb; i++) {
            assert_int_equal(fpspan_begin(all, &spans[i]), 0);
            feed_block(all, blk[i], len[i]);
            assert_int_equal(fpspan_end(all), 0);
            feed_block(one, blk[i], len[i]);
        }
        assert_true(fp_state_final(all) == fp_state_final(one));
        /* any subset, replayed or (one block in four) fed as text */
        uint64_t keep = rnd(), astext = rnd();
        for (unsigned i = 0; i < nb; i++) {
            if (!(keep >> i & 1))
                continue;
            if ((astext >> (2 * i) & 3) == 0)
                feed_block(rep, blk[i], len[i]);
            else
                assert_int_equal(fpspan_replay(rep, &spans[i]), 0);
            feed_block(txt, blk[i], len[i]);
        }
        uint64_t a = fp_state_final(rep), b = fp_state_final(txt);
        if (a != b)
            fail_msg("round %u: replayed %016llx, text %016llx", r, (unsigned long long)a,
                     (unsigned long long)b);
    }
    fp_state_free(all);
    fp_state_free(rep);
    fp_state_free(txt);
    fp_state_free(one);
}

static void test_replay_matches_text(void **state)
{
    (void)state;
    replay_matches_text(&V2);
}

static void test_replay_matches_text_v4(void **state)
{
    (void)state;
    replay_matches_text(&V4);
}

static void test_refusals(void **state)
{
    (void)state;
    fp_span sp;
    fp_state *s = fp_state_new_p(&V2), *t = fp_state_new_p(&V2);
    fp_params v1 = {FP_V1, 3};
    fp_state *o = fp_state_new_p(&v1);
    assert_true(s && t && o);
    /* nothing recorded; v1 states neither record nor replay */
    assert_int_equal(fpspan_end(s), -1);
    assert_int_equal(fpspan_begin(o, &sp), -1);
    assert_int_equal(fpspan_begin(s, &sp), 0);
    feed_block(s, "one two", 7);
    assert_int_equal(fpspan_end(s), 0);
    assert_int_equal(fpspan_replay(o, &sp), -1);
    /* a token still open: the span is refused, a replay into it too */
    assert_int_equal(fpspan_begin(s, &sp), 0);
    fp_state_update(s, "three fo", 8);
    assert_int_equal(fpspan_end(s), -1);
    fp_state_update(t, "fo", 2);
    assert_int_equal(fpspan_replay(t, &sp), -1);
    assert_int_equal(fpspan_begin(t, &sp), -1);
    fp_state_update(t, "ur", 2);
    assert_true(fp_state_final(t) == fp_text_p("four", 4, &V2));
    /* fp_state_final ends an open span and still fingerprints the whole text */
    fp_state_update(s, "ur", 2);
    assert_int_equal(fpspan_begin(s, &sp), -1);   /* inside "four" */
    fp_state_update(s, " five", 5);
    assert_true(fp_state_final(s) == fp_text_p("one two\nthree four five", 23, &V2));
    fp_state_free(s);
    fp_state_free(t);
    fp_state_free(o);
    /* a v4 span replays into v4 states only, a v2 span into v2/v3 states only */
    fp_params v3 = {FP_V3, 0};
    fp_state *s4 = fp_state_new_p(&V4), *t3 = fp_state_new_p(&v3), *t4 = fp_state_new_p(&V4);
    assert_true(s4 && t3 && t4);
    assert_int_equal(fpspan_begin(s4, &sp), 0);
    feed_block(s4, BOILER BOILER, strlen(BOILER BOILER));
    assert_int_equal(fpspan_end(s4), 0);
    assert_int_equal(fpspan_replay(t3, &sp), -1);
    assert_int_equal(fpspan_replay(t4, &sp), 0);
    assert_true(fp_state_final(t4) == fp_text_p(BOILER BOILER "\n", strlen(BOILER) * 2 + 1, &V4));
    fp_state_free(s4);
    fp_state_free(t3);
    fp_state_free(t4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_matches_text),
        cmocka_unit_test(test_replay_matches_text_v4),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
