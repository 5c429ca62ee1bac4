/* rs_auth.c: AUTH and HELLO's AUTH of the RESP server framework: the password check
 * (constant time; a named user's in rs_users.c), the wait for the wrong-password budget of the client's address and
 * of the server (rs_guard.c), the delayed -WRONGPASS, and the close after
 * RS_AUTH_MAX_FAILURES failures on one connection. See rserver.h. */
#include "rs_int.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "log.h"
#include "rasync.h"

/* A request waiting on a timer: a delayed -WRONGPASS (rs_auth_failed), or a try
 * waiting for a wrong-password token (rs_auth_turn). Every one is on its server's list,
 * so rs_free answers them at once (rs_auth_cancel_all) instead of leaving them to a
 * loop that has stopped. */
typedef struct rs_auth_delay {
    rserver *s;
    rs_req *r;
    struct event *ev;
    int retry;                  /* 1: run the command again; 0: answer -WRONGPASS */
    int close;                  /* with -WRONGPASS: close the connection after it */
    struct rs_auth_delay *prev, *next;
} rs_auth_delay;

/* Unlinks and frees d, then answers (or re-runs) its request. */
static void rs_auth_delay_fire(rs_auth_delay *d)
{
    rserver *s = d->s;
    rs_req *r = d->r;
    int retry = d->retry, close = d->close;
    if (d->prev)
        d->prev->next = d->next;
    else
        s->auth_delays = d->next;
    if (d->next)
        d->next->prev = d->prev;
    event_free(d->ev);
    free(d);
    if (retry && r->c->s != NULL && !s->stopping) {
        r->cmd->fn(r);
        return;
    }
    if (retry) {
        rs_req_fail(r, RS_ERR, "the server is shutting down");
        return;
    }
    if (close)
        r->c->closing = 1;          /* closes once this reply is sent */
    rs_req_fail(r, RS_WRONGPASS, "invalid username-password pair or user is disabled.");
}

static void rs_auth_on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rs_auth_delay_fire(arg);
}

/* Answers (or re-runs) r after ms on s's timer list. Returns 0, or -1 when no timer
 * could be made (nothing done). */
static int rs_auth_later(rserver *s, rs_req *r, unsigned ms, int retry, int close)
{
    rs_auth_delay *d = calloc(1, sizeof(*d));
    struct timeval tv = ra_tv_ms(ms);
    if (d == NULL || (d->ev = evtimer_new(s->base, rs_auth_on_timer, d)) == NULL ||
        evtimer_add(d->ev, &tv) != 0) {
        if (d && d->ev)
            event_free(d->ev);
        free(d);
        return -1;
    }
    *d = (rs_auth_delay){ .s = s, .r = r, .ev = d->ev, .retry = retry, .close = close,
                          .next = s->auth_delays };
    if (s->auth_delays)
        s->auth_delays->prev = d;
    s->auth_delays = d;
    return 0;
}

void rs_auth_cancel_all(rserver *s)
{
    s->stopping = 1;
    while (s->auth_delays)
        rs_auth_delay_fire(s->auth_delays);
}

/* A wrong password: counted, answered after auth_fail_delay_ms (a timer; other
 * clients go on being served), and the connection closed after the reply of the
 * RS_AUTH_MAX_FAILURES-th failure. So one connection tries at most a few passwords a
 * second, and reconnecting costs a round trip each time. */
static void rs_auth_failed(rs_req *r)
{
    rs_client *c = r->c;
    if (c->authed && rs_auth_on(c->s)) {   /* logged out again: the small limits again */
        resp_limits pl = rs_parser_limits(c->s, 0);
        resp_parser_set_limits(c->parser, &pl);
    }
    if (c->authed && rs_auth_on(c->s))
        c->s->nauthed--;
    c->authed = !rs_auth_on(c->s);
    c->auth_failures++;
    rs_guard_auth_failed(c->s, c->addr);
    int close = c->auth_failures >= RS_AUTH_MAX_FAILURES;
    if (close)
        c->s->st.closed_auth_failures++;
    log_warn_rl("client %llu: wrong password (%u on this connection)%s",
                (unsigned long long)c->id, c->auth_failures, close ? "; closing it" : "");
    unsigned ms = c->s->opt.limits.auth_fail_delay_ms;
    if (ms == 0 || rs_auth_later(c->s, r, ms, 0, close) != 0) {
        if (close)
            c->closing = 1;
        rs_req_fail(r, RS_WRONGPASS, "invalid username-password pair or user is disabled.");
    }
}

/* 1 when r's AUTH try may be checked now; else 0, and r runs again once its address and
 * the server have a wrong-password token (rs_guard.c). */
static int rs_auth_turn(rs_req *r)
{
    unsigned ms = rs_guard_auth_wait_ms(r->c->s, r->c->addr);
    if (ms == 0)
        return 1;
    if (rs_auth_later(r->c->s, r, ms, 1, 0) != 0)
        rs_req_fail(r, RS_BUSY, "too many wrong passwords; retry later");
    return 0;
}

int rs_auth_check(rs_req *r, const char *user, size_t ulen, const char *pass, size_t plen)
{
    rs_client *c = r->c;
    if (c->s == NULL || !rs_auth_on(c->s)) {
        rs_req_fail(r, RS_ERR, "AUTH called without any password configured");
        return 0;
    }
    if (!rs_auth_turn(r))
        return 0;
    if (!rs_users_auth(c, user, ulen, pass, plen)) {
        rs_auth_failed(r);
        return 0;
    }
    if (!c->authed) {
        resp_limits pl = rs_parser_limits(c->s, 1);
        resp_parser_set_limits(c->parser, &pl);
        c->s->nauthed++;
    }
    c->authed = 1;
    rs_budget_unauth_note(c);       /* its input no longer counts as unauthenticated */
    c->auth_failures = 0;
    return 1;
}

void rs_cmd_auth(rs_req *r)
{
    size_t argc = rs_req_argc(r), plen, ulen = 0;

    if (argc < 2 || argc > 3) {
        rs_req_fail(r, RS_ERR, "wrong number of arguments for 'auth' command");
        return;
    }
    const char *pass = rs_req_arg(r, argc - 1, &plen);
    const char *user = argc == 3 ? rs_req_arg(r, 1, &ulen) : NULL;
    if (!rs_auth_check(r, user, ulen, pass, plen))
        return;
    resp_add_simple(rs_req_out(r), "OK");
    rs_req_finish(r);
}

