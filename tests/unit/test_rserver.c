/* test_rserver.c: the request server (common/net/rserver.c) driven over a loopback
 * connection with a real libevent loop: dispatch (unknown command, arity, a handler's
 * reply), ordering (replies leave in request order; a write starts only after the
 * client's earlier requests finished, later ones only after it) and limits (arguments
 * per request, requests running at once per client). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <event2/event.h>

#include "rserver.h"
#include "rsloop.h"

/* ---- Commands of the test server ---- */

#define TR_MAXHELD 8

/* Requests a handler kept to finish later, and how many handlers ran. */
static rs_req *tr_held[TR_MAXHELD];
static unsigned tr_nheld, tr_hold_runs, tr_write_runs, tr_echo_runs;

/* ECHO1 x: answers x at once. */
static void tr_cmd_echo(rs_req *r)
{
    size_t len;
    const char *s = rs_req_arg(r, 1, &len);
    tr_echo_runs++;
    resp_add_bulk(rs_req_out(r), s, len);
    rs_req_finish(r);
}

/* HOLD x: answers x when the test finishes it (tr_release). */
static void tr_cmd_hold(rs_req *r)
{
    size_t len;
    const char *s = rs_req_arg(r, 1, &len);
    tr_hold_runs++;
    resp_add_bulk(rs_req_out(r), s, len);
    assert_true(tr_nheld < TR_MAXHELD);
    tr_held[tr_nheld++] = r;
}

/* WR: a write, answers +OK at once. */
static void tr_cmd_write(rs_req *r)
{
    tr_write_runs++;
    resp_add_simple(rs_req_out(r), "OK");
    rs_req_finish(r);
}

static const rs_command tr_commands[] = {
    {"ECHO1", 2, 0, tr_cmd_echo, "echo", NULL},
    {"HOLD", 2, 0, tr_cmd_hold, "answer later", NULL},
    {"WR", 1, RS_CMD_WRITE, tr_cmd_write, "a write", NULL},
};

/* ---- A server and one client on loopback ---- */

typedef struct tr_fix {
    struct event_base *base;
    rserver *s;
    rl_client c;
} tr_fix;

static void tr_start(tr_fix *f, const rs_limits *lim)
{
    char err[256];
    rs_options o = {0};
    o.name = "test-rserver";
    rs_limits_default(&o.limits);
    if (lim)
        o.limits = *lim;
    o.commands = tr_commands;
    o.ncommands = sizeof tr_commands / sizeof tr_commands[0];
    f->base = event_base_new();
    assert_non_null(f->base);
    f->s = rs_new(f->base, &o, err, sizeof err);
    if (f->s == NULL)
        fail_msg("rs_new: %s", err);
    rl_connect(&f->c, f->base, rs_port(f->s));
    tr_nheld = tr_hold_runs = tr_write_runs = tr_echo_runs = 0;
}

static void tr_stop(tr_fix *f)
{
    rl_close(&f->c);
    rs_free(f->s);
    event_base_free(f->base);
}

/* Runs the loop until *n reaches want. */
static void tr_wait_runs(tr_fix *f, const unsigned *n, unsigned want)
{
    for (int i = 0; i < RL_SPINS && *n < want; i++)
        rl_spin(f->base);
}

/* Finishes the request held i-th. */
static void tr_release(unsigned i)
{
    assert_true(i < tr_nheld && tr_held[i] != NULL);
    rs_req_finish(tr_held[i]);
    tr_held[i] = NULL;
}

/* ---- Tests ---- */

/* A known command runs its handler; an unknown one and a wrong arity are refused
 * without running anything, and the connection goes on. */
static void test_dispatch(void **state)
{
    (void)state;
    tr_fix f;
    tr_start(&f, NULL);
    rl_send(&f.c, "*2\r\n$5\r\nECHO1\r\n$2\r\nhi\r\n");
    rl_expect(&f.c, "$2\r\nhi\r\n");
    rl_send(&f.c, "*1\r\n$4\r\nNOPE\r\n");
    rl_expect(&f.c, "-ERR unknown command 'NOPE'\r\n");
    rl_send(&f.c, "*3\r\n$5\r\necho1\r\n$1\r\na\r\n$1\r\nb\r\n");
    rl_expect(&f.c, "-ERR wrong number of arguments for 'echo1' command\r\n");
    assert_int_equal(tr_echo_runs, 1);
    rl_send(&f.c, "*2\r\n$5\r\nEcho1\r\n$2\r\nok\r\n");   /* names match in any case */
    rl_expect(&f.c, "$2\r\nok\r\n");
    tr_stop(&f);
}

/* Requests of one client run concurrently but their replies leave in order. */
static void test_reply_order(void **state)
{
    (void)state;
    tr_fix f;
    tr_start(&f, NULL);
    rl_send(&f.c, "*2\r\n$4\r\nHOLD\r\n$1\r\na\r\n*2\r\n$4\r\nHOLD\r\n$1\r\nb\r\n"
                "*2\r\n$5\r\nECHO1\r\n$1\r\nc\r\n");
    tr_wait_runs(&f, &tr_echo_runs, 1);
    assert_int_equal(tr_hold_runs, 2);
    assert_int_equal(tr_echo_runs, 1);       /* ran at once ... */
    rl_expect_nothing(&f.c);                   /* ... but waits behind the held ones */
    tr_release(1);
    rl_expect_nothing(&f.c);                   /* b is done, a is not */
    tr_release(0);
    rl_expect(&f.c, "$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n");
    tr_stop(&f);
}

/* A write starts only after the client's earlier requests finished; later requests
 * start only after it. */
static void test_write_ordering(void **state)
{
    (void)state;
    tr_fix f;
    tr_start(&f, NULL);
    rl_send(&f.c, "*2\r\n$4\r\nHOLD\r\n$1\r\na\r\n*1\r\n$2\r\nWR\r\n"
                "*2\r\n$5\r\nECHO1\r\n$1\r\nc\r\n");
    tr_wait_runs(&f, &tr_hold_runs, 1);
    rl_expect_nothing(&f.c);
    assert_int_equal(tr_hold_runs, 1);
    assert_int_equal(tr_write_runs, 0);      /* waits for HOLD */
    assert_int_equal(tr_echo_runs, 0);       /* waits for WR */
    tr_release(0);
    rl_expect(&f.c, "$1\r\na\r\n+OK\r\n$1\r\nc\r\n");
    assert_int_equal(tr_write_runs, 1);
    assert_int_equal(tr_echo_runs, 1);
    tr_stop(&f);
}

/* max-inflight-client: past it, a request waits until an earlier one finished. */
static void test_inflight_limit(void **state)
{
    (void)state;
    rs_limits lim;
    rs_limits_default(&lim);
    lim.max_inflight_client = 2;
    tr_fix f;
    tr_start(&f, &lim);
    rl_send(&f.c, "*2\r\n$4\r\nHOLD\r\n$1\r\na\r\n*2\r\n$4\r\nHOLD\r\n$1\r\nb\r\n"
                "*2\r\n$4\r\nHOLD\r\n$1\r\nc\r\n");
    tr_wait_runs(&f, &tr_hold_runs, 2);
    rl_expect_nothing(&f.c);
    assert_int_equal(tr_hold_runs, 2);       /* the third waits */
    tr_release(0);
    tr_wait_runs(&f, &tr_hold_runs, 3);
    assert_int_equal(tr_hold_runs, 3);
    tr_release(1);
    tr_release(2);
    rl_expect(&f.c, "$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n");
    tr_stop(&f);
}

/* max-args: a request with more arguments is a protocol error: answered with -ERR,
 * then the connection is closed, and no handler ran. */
static void test_max_args(void **state)
{
    (void)state;
    rs_limits lim;
    rs_limits_default(&lim);
    lim.max_args = 2;
    tr_fix f;
    tr_start(&f, &lim);
    rl_send(&f.c, "*2\r\n$5\r\nECHO1\r\n$1\r\nx\r\n");
    rl_expect(&f.c, "$1\r\nx\r\n");
    rl_send(&f.c, "*3\r\n$5\r\nECHO1\r\n$1\r\nx\r\n$1\r\ny\r\n");
    rl_expect(&f.c, "-ERR");
    rl_expect_closed(&f.c);
    assert_int_equal(tr_echo_runs, 1);
    tr_stop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch),
        cmocka_unit_test(test_reply_order),
        cmocka_unit_test(test_write_ordering),
        cmocka_unit_test(test_inflight_limit),
        cmocka_unit_test(test_max_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
