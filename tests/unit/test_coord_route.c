/* test_coord_route.c: the coordinator's routing with one Redis (coordinator/route.c,
 * coord_routing_update and coord_route), linked from simhash_coord: every first byte
 * goes to a worker whose range holds it and that is up, spread over the usable ones;
 * a draining worker only when no other serves the byte; a gap or a down worker makes
 * routing incomplete with the reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "coord.h"
#include "log.h"

/* A coordinator with no connections: n workers with the given ranges, all up. */
static void tr_setup(coord *co, coord_worker *w, size_t n, const unsigned (*range)[2])
{
    memset(co, 0, sizeof *co);
    memset(w, 0, n * sizeof *w);
    co->w = w;
    co->nw = n;
    for (size_t i = 0; i < n; i++) {
        snprintf(w[i].addr, sizeof w[i].addr, "127.0.0.1:%zu", 7000 + i);
        w[i].health = W_UP;
        w[i].have_range = 1;
        w[i].lo = range[i][0];
        w[i].hi = range[i][1];
    }
    log_set_level(LOGL_ERROR);
}

/* The worker index coord_route picks for first byte b (-1: none). */
static int tr_route(coord *co, unsigned b)
{
    coord_worker *w = coord_route(co, 3, (uint64_t)b << 56 | 0x1234);
    return w ? (int)(w - co->w) : -1;
}

/* Two workers splitting the range: each byte to its owner; complete. */
static void test_route_ranges(void **state)
{
    (void)state;
    coord co;
    coord_worker w[2];
    static const unsigned r[2][2] = {{0, 99}, {100, 255}};
    tr_setup(&co, w, 2, r);
    coord_routing_update(&co);
    assert_int_equal(co.routing_ok, 1);
    assert_int_equal(co.ever_ready, 1);
    for (unsigned b = 0; b < 256; b++)
        assert_int_equal(tr_route(&co, b), b < 100 ? 0 : 1);
}

/* Two workers serving the same range: bytes spread over both; one draining (left the
 * registry): every byte to the other; the other down: the draining one still serves,
 * and routing is incomplete (the down one is first to serve nothing). */
static void test_route_spread_and_drain(void **state)
{
    (void)state;
    coord co;
    coord_worker w[2];
    static const unsigned r[2][2] = {{0, 255}, {0, 255}};
    tr_setup(&co, w, 2, r);
    coord_routing_update(&co);
    unsigned n0 = 0;
    for (unsigned b = 0; b < 256; b++)
        n0 += tr_route(&co, b) == 0;
    assert_int_equal(n0, 128);
    w[1].left = 1;
    coord_routing_update(&co);
    assert_int_equal(co.routing_ok, 1);
    for (unsigned b = 0; b < 256; b++)
        assert_int_equal(tr_route(&co, b), 0);
    w[0].health = W_DOWN;
    coord_routing_update(&co);
    assert_int_equal(co.routing_ok, 1);     /* draining but up: still served */
    for (unsigned b = 0; b < 256; b++)
        assert_int_equal(tr_route(&co, b), 1);
}

/* A gap in the ranges: incomplete, the reason names the first byte unserved, and
 * that byte has no worker; a worker down: incomplete, naming it. */
static void test_route_incomplete(void **state)
{
    (void)state;
    coord co;
    coord_worker w[2];
    static const unsigned r[2][2] = {{0, 99}, {101, 255}};
    tr_setup(&co, w, 2, r);
    coord_routing_update(&co);
    assert_int_equal(co.routing_ok, 0);
    assert_non_null(strstr(co.routing_why, "first-byte shard 100"));
    assert_int_equal(tr_route(&co, 100), -1);
    assert_int_equal(tr_route(&co, 101), 1);
    w[1].lo = 100;
    coord_routing_update(&co);
    assert_int_equal(co.routing_ok, 1);
    assert_string_equal(co.routing_why, "");
    w[0].health = W_DOWN;
    snprintf(w[0].problem, sizeof w[0].problem, "connection refused");
    coord_routing_update(&co);
    assert_int_equal(co.routing_ok, 0);
    assert_non_null(strstr(co.routing_why, "127.0.0.1:7000"));
    assert_non_null(strstr(co.routing_why, "connection refused"));
    assert_int_equal(tr_route(&co, 5), 0);   /* its only server, though down */
    w[0].health = W_GONE;
    coord_routing_update(&co);
    assert_int_equal(tr_route(&co, 5), -1);  /* gone: no route at all */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_route_ranges),
        cmocka_unit_test(test_route_spread_and_drain),
        cmocka_unit_test(test_route_incomplete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
