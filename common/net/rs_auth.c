/* rs_auth.c: AUTH and HELLO's AUTH of the RESP server framework: the password check
 * (constant time), the wait for the wrong-password budget of the client's address and
 * of the server (rs_guard.c), the delayed -WRONGPASS, and the close after
 * RS_AUTH_MAX_FAILURES failures on one connection. See rserver.h. */
#include "rs_int.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "log.h"
#include "rasync.h"

/* A delayed -WRONGPASS (see rs_auth_failed). */
typedef struct rs_auth_delay {
    rs_req *r;
    struct event *ev;
    int close;
} rs_auth_delay;

static void rs_auth_on_delay(evutil_socket_t fd, short what, void *arg)
{
    rs_auth_delay *d = arg;
    (void)fd;
    (void)what;
    if (d->close)
        d->r->c->closing = 1;       /* closes once this reply is sent */
    rs_req_fail(d->r, RS_WRONGPASS, "invalid username-password pair or user is disabled.");
    event_free(d->ev);
    free(d);
}

/* A wrong password: counted, answered after auth_fail_delay_ms (a timer; other
 * clients go on being served), and the connection closed after the reply of the
 * RS_AUTH_MAX_FAILURES-th failure. So one connection tries at most a few passwords a
 * second, and reconnecting costs a round trip each time. */
static void rs_auth_failed(rs_req *r)
{
    rs_client *c = r->c;
    if (c->authed && c->s->password) {     /* logged out again: the small limits again */
        resp_limits pl = rs_parser_limits(c->s, 0);
        resp_parser_set_limits(c->parser, &pl);
    }
    if (c->authed && c->s->password)
        c->s->nauthed--;
    c->authed = c->s->password == NULL;
    c->auth_failures++;
    rs_guard_auth_failed(c->s, c->addr);
    int close = c->auth_failures >= RS_AUTH_MAX_FAILURES;
    if (close)
        c->s->st.closed_auth_failures++;
    log_warn_rl("client %llu: wrong password (%u on this connection)%s",
                (unsigned long long)c->id, c->auth_failures, close ? "; closing it" : "");
    unsigned ms = c->s->opt.limits.auth_fail_delay_ms;
    rs_auth_delay *d = ms ? calloc(1, sizeof(*d)) : NULL;
    struct timeval tv = ra_tv_ms(ms);
    if (d == NULL || (d->ev = evtimer_new(c->s->base, rs_auth_on_delay, d)) == NULL ||
        evtimer_add(d->ev, &tv) != 0) {
        if (d && d->ev)
            event_free(d->ev);
        free(d);
        if (close)
            c->closing = 1;
        rs_req_fail(r, RS_WRONGPASS, "invalid username-password pair or user is disabled.");
        return;
    }
    d->r = r;
    d->close = close;
}

/* A try that waited for its address's (or the server's) wrong-password budget: run
 * its command again from the start. */
static void rs_auth_on_wait(evutil_socket_t fd, short what, void *arg)
{
    rs_auth_delay *d = arg;
    (void)fd;
    (void)what;
    event_free(d->ev);
    rs_req *r = d->r;
    free(d);
    if (r->c->s == NULL)
        rs_req_fail(r, RS_ERR, "the server is shutting down");
    else
        r->cmd->fn(r);
}

/* 1 when r's AUTH try may be checked now; else 0, and r runs again once its address and
 * the server have a wrong-password token (rs_guard.c). */
static int rs_auth_turn(rs_req *r)
{
    unsigned ms = rs_guard_auth_wait_ms(r->c->s, r->c->addr);
    if (ms == 0)
        return 1;
    rs_auth_delay *d = calloc(1, sizeof(*d));
    struct timeval tv = ra_tv_ms(ms);
    if (d == NULL || (d->ev = evtimer_new(r->c->s->base, rs_auth_on_wait, d)) == NULL ||
        evtimer_add(d->ev, &tv) != 0) {
        if (d && d->ev)
            event_free(d->ev);
        free(d);
        rs_req_fail(r, RS_BUSY, "too many wrong passwords; retry later");
        return 0;
    }
    d->r = r;
    return 0;
}

int rs_auth_check(rs_req *r, const char *user, size_t ulen, const char *pass, size_t plen)
{
    rs_client *c = r->c;
    if (c->s == NULL || c->s->password == NULL) {
        rs_req_fail(r, RS_ERR, "AUTH called without any password configured");
        return 0;
    }
    if (!rs_auth_turn(r))
        return 0;
    if ((user && (ulen != 7 || memcmp(user, "default", 7) != 0)) ||
        !rs_secret_equal(pass, plen, c->s->password)) {
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

