/* rserver.c: the RESP server framework (libevent 2.1): connections, ordered request
 * queues, backpressure and limits, built-in PING/AUTH/QUIT; the other built-in
 * commands (HELLO, CLIENT, INFO, COMMAND, ...) and the table of all of them are in
 * rs_redis.c, the counters and the slow log in rs_stats.c. See rserver.h. */
#include "rserver.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>


#include "log.h"
#include "rasync.h"
#include "rs_int.h"

static const char *const rs_err_strings[] = {
#define RS_ERR_STR_(e, s) s,
    RS_ERROR_CODES(RS_ERR_STR_)
#undef RS_ERR_STR_
};

const char *rs_errcode_str(rs_errcode code)
{
    return (unsigned)code < RS_ERR_COUNT_ ? rs_err_strings[code] : "ERR";
}

/* The parser limits of a client: the configured ones, or, before AUTH, Redis's
 * limits for unauthenticated clients. */
resp_limits rs_parser_limits(const rserver *s, int authed)
{
    resp_limits pl = {
        .max_arg_bytes = s->opt.limits.max_arg_bytes,
        .max_req_bytes = s->opt.limits.max_req_bytes,
        .max_args = s->opt.limits.max_args,
        .max_inline_bytes = s->opt.limits.max_inline_bytes,
    };
    if (!authed) {
        pl.unauth = 1;
        if (pl.max_args > RS_UNAUTH_MAX_ARGS)
            pl.max_args = RS_UNAUTH_MAX_ARGS;
        if (pl.max_arg_bytes > RS_UNAUTH_MAX_ARG_BYTES)
            pl.max_arg_bytes = RS_UNAUTH_MAX_ARG_BYTES;
        if (pl.max_inline_bytes > RS_UNAUTH_MAX_ARG_BYTES)
            pl.max_inline_bytes = RS_UNAUTH_MAX_ARG_BYTES;
        if (pl.max_req_bytes > RS_UNAUTH_MAX_ARGS * RS_UNAUTH_MAX_ARG_BYTES)
            pl.max_req_bytes = RS_UNAUTH_MAX_ARGS * RS_UNAUTH_MAX_ARG_BYTES;
    }
    return pl;
}

/* ---- Request accessors ---- */

size_t rs_req_argc(const rs_req *r)
{
    return r->rq.argc;
}

const char *rs_req_arg(const rs_req *r, size_t i, size_t *len)
{
    if (i >= r->rq.argc) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = r->rq.argvlen[i];
    return r->rq.argv[i];
}

resp_buf *rs_req_out(rs_req *r)
{
    return &r->out;
}

uint64_t rs_req_client_id(const rs_req *r)
{
    return r->c->id;
}

void *rs_req_ctx(const rs_req *r)
{
    return r->c->ctx;
}


/* ---- Client lifetime ---- */

static void rs_client_process(rs_client *c);
static int rs_req_can_start(const rs_client *c, const rs_req *r);
static void rs_req_start(rs_client *c, rs_req *r);

static void rs_req_free(rs_req *r)
{
    resp_request_free(&r->rq);
    resp_buf_free(&r->out);
    free(r);
}

static void rs_queue_unlink(rs_client *c, rs_req *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        c->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        c->tail = r->prev;
    r->prev = r->next = NULL;
}

/* Drop one reference; frees the client when none is left. */
static void rs_client_unref(rs_client *c)
{
    SH_ASSERT(c->refs > 0);
    if (--c->refs > 0)
        return;
    while (c->head) {
        rs_req *r = c->head;
        rs_queue_unlink(c, r);
        rs_req_free(r);
    }
    if (c->resume_ev)
        event_free(c->resume_ev);
    resp_parser_free(c->parser);
    free(c->name);
    free(c->lib_name);
    free(c->lib_ver);
    free(c);
}

/* Close the connection now. Unfinished requests keep the client struct alive; their
 * replies are dropped when they finish. */
void rs_client_close(rs_client *c)
{
    if (c->bev == NULL)
        return;
    rs_budget_detach(c);
    bufferevent_free(c->bev);
    c->bev = NULL;
    event_del(c->resume_ev);
    rserver *s = c->s;
    if (s) {
        if (c->prev)
            c->prev->next = c->next;
        else
            s->clients = c->next;
        if (c->next)
            c->next->prev = c->prev;
        s->st.clients--;
        if (c->admitted)
            rs_guard_release(s, c->addr);
        if (rs_auth_on(s) && c->authed)
            s->nauthed--;
    }
    c->prev = c->next = NULL;
    /* finished replies waiting behind an unfinished one are of no use now */
    rs_req *r = c->head;
    while (r) {
        rs_req *nx = r->next;
        if (r->finished) {
            rs_queue_unlink(c, r);
            rs_req_free(r);
        }
        r = nx;
    }
    rs_client_unref(c);
}

static size_t rs_client_outlen(rs_client *c)
{
    return evbuffer_get_length(bufferevent_get_output(c->bev));
}

/* Reading stops while too many requests are pending, they hold too many bytes, or
 * the client does not read its replies. Returns 1 when a limit holds. */
static int rs_client_over_limits(rs_client *c)
{
    const rs_limits *l = &c->s->opt.limits;
    return c->npending >= l->max_pending || c->pending_bytes >= l->max_req_bytes ||
           rs_client_outlen(c) > l->out_high_watermark;
}

static void rs_client_pause(rs_client *c)
{
    if (c->paused)
        return;
    c->paused = 1;
    c->s->st.read_pauses++;
    bufferevent_disable(c->bev, EV_READ);
}

/* Resume reading when no limit holds (or nothing else is expected). */
static void rs_client_maybe_resume(rs_client *c)
{
    if (c->bev == NULL || c->s == NULL || c->closing)
        return;
    if (c->paused && !rs_client_over_limits(c)) {
        c->paused = 0;
        if (!c->eof)
            bufferevent_enable(c->bev, EV_READ);
        event_active(c->resume_ev, EV_TIMEOUT, 0);
    }
}

/* Move finished replies at the head of the queue to the socket, in order. */
static void rs_client_flush(rs_client *c)
{
    while (c->head && c->head->finished) {
        rs_req *r = c->head;
        rs_queue_unlink(c, r);
        if (c->bev) {
            if (r->out.overflow) {
                resp_buf_clear(&r->out);
                r->out.max = 0;
                resp_add_error(&r->out, "OOM", "reply larger than max-reply-bytes (%zu)",
                               c->s ? c->s->opt.limits.max_reply_bytes : (size_t)0);
            }
            if (r->out.len > 0)
                evbuffer_add(bufferevent_get_output(c->bev), r->out.data, r->out.len);
        }
        rs_req_free(r);
    }
    if (c->bev == NULL)
        return;
    if (c->s && c->s->opt.limits.max_output_bytes &&
        rs_client_outlen(c) > c->s->opt.limits.max_output_bytes) {
        c->s->st.closed_output++;
        log_warn_rl("client %llu: %zu bytes of replies unread, more than max-output-bytes "
                    "(%zu); closing the connection", (unsigned long long)c->id,
                    rs_client_outlen(c), c->s->opt.limits.max_output_bytes);
        rs_client_close(c);
        return;
    }
    /* QUIT / protocol error: close once everything queued is sent; end of input:
     * close once every complete request was answered and sent */
    if ((c->closing || c->eof) && c->head == NULL && rs_client_outlen(c) == 0 &&
        (c->closing || evbuffer_get_length(bufferevent_get_input(c->bev)) == 0))
        rs_client_close(c);
}

void rs_req_finish(rs_req *r)
{
    rs_client *c = r->c;

    if (r->finished)
        return;
    r->finished = 1;
    SH_ASSERT(c->npending > 0);
    if (r->started && c->s) {
        rs_cmdstat *st = rs_cmdstat_of(c->s, r->cmd);
        uint64_t us = ra_now_us() - r->start_us;
        if (st)
            rs_cmdstat_add(st, us, r->out.len > 0 && r->out.data[0] == '-');
        rs_slowlog_note(c->s, r, us);
    }
    if (r->started) {
        SH_ASSERT(c->nstarted > 0);
        c->nstarted--;
        if (r->cmd && (r->cmd->flags & RS_CMD_WRITE)) {
            SH_ASSERT(c->nwrites > 0);
            c->nwrites--;
        }
        if (r->cmd && (r->cmd->flags & RS_CMD_ORDERED)) {
            SH_ASSERT(c->nordered > 0);
            c->nordered--;
        }
    }
    c->npending--;
    c->pending_bytes -= r->rq.bytes;
    c->active_ms = ra_now_ms();
    if (c->s)
        c->s->st.inflight--;
    /* arguments are not needed once the handler is done */
    resp_request_free(&r->rq);
    if (c->bev == NULL) {
        rs_queue_unlink(c, r);
        rs_req_free(r);
        if (c->waiting && rs_req_can_start(c, c->waiting)) {
            rs_req *w = c->waiting;
            c->waiting = NULL;
            if (c->s)
                rs_req_start(c, w);    /* its reply is dropped, but a write completes */
            else
                rs_req_finish(w);   /* the server is gone: drop it unstarted */
        }
    } else {
        if (c->waiting && rs_req_can_start(c, c->waiting)) {
            rs_req *w = c->waiting;
            c->waiting = NULL;
            c->refs++;
            rs_req_start(c, w);
            if (c->bev)
                event_active(c->resume_ev, EV_TIMEOUT, 0);
            rs_client_unref(c);
        }
        rs_client_flush(c);
        if (c->bev && c->s) {
            if (rs_client_outlen(c) > c->s->opt.limits.out_high_watermark)
                rs_client_pause(c);
            else
                rs_client_maybe_resume(c);
        }
    }
    rs_client_unref(c);
}

void rs_req_fail(rs_req *r, rs_errcode code, const char *fmt, ...)
{
    char text[RESP_ERROR_TEXT_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    resp_buf_clear(&r->out);
    r->out.max = 0;           /* an error always fits */
    resp_add_error(&r->out, rs_errcode_str(code), "%s", text);
    rs_req_finish(r);
}

/* ---- Built-in commands ---- */

void rs_cmd_ping(rs_req *r)
{
    size_t n;
    const char *m = rs_req_arg(r, 1, &n);
    if (rs_req_argc(r) > 2) {
        rs_req_fail(r, RS_ERR, "wrong number of arguments for 'ping' command");
        return;
    }
    if (m)
        resp_add_bulk(rs_req_out(r), m, n);
    else
        resp_add_simple(rs_req_out(r), "PONG");
    rs_req_finish(r);
}

void rs_cmd_quit(rs_req *r)
{
    r->c->closing = 1;
    resp_add_simple(rs_req_out(r), "OK");
    rs_req_finish(r);
}

/* ---- Dispatch ---- */

const rs_command *rs_find_command(const rserver *s, const char *name, size_t len)
{
    for (size_t i = 0; i < s->opt.ncommands; i++) {
        const rs_command *c = &s->opt.commands[i];
        if (resp_word_is(name, len, c->name))
            return c;
    }
    for (size_t i = 0; i < rs_nbuiltin; i++) {
        const rs_command *c = &rs_builtin[i];
        if (resp_word_is(name, len, c->name))
            return c;
    }
    return NULL;
}

const char *rs_printable(char *dst, size_t cap, const char *src, size_t len, size_t max)
{
    size_t j = 0;
    for (size_t i = 0; i < len && j + 4 < cap && i < max; i++) {
        unsigned char ch = (unsigned char)src[i];
        dst[j++] = (ch >= 32 && ch < 127 && ch != '\'') ? (char)ch : '?';
    }
    if (len > max && j + 4 < cap) {
        memcpy(dst + j, "...", 3);
        j += 3;
    }
    dst[j] = '\0';
    return dst;
}

static void rs_client_dispatch(rs_client *c, rs_req *r)
{
    rserver *s = c->s;
    size_t nlen;
    const char *name = rs_req_arg(r, 0, &nlen);
    const rs_command *cmd = rs_find_command(s, name, nlen);
    char shown[80];

    s->st.commands++;
    if (cmd == NULL) {
        rs_printable(shown, sizeof(shown), name, nlen, 64);
        rs_req_fail(r, RS_ERR, "unknown command '%s'", shown);
        return;
    }
    if (rs_auth_on(s) && !c->authed && !(cmd->flags & RS_CMD_NOAUTH)) {
        rs_cmdstat *st = rs_cmdstat_of(s, cmd);
        if (st)
            st->rejected++;
        rs_req_fail(r, RS_NOAUTH, "Authentication required.");
        return;
    }
    size_t argc = rs_req_argc(r);
    if ((cmd->arity > 0 && argc != (size_t)cmd->arity) ||
        (cmd->arity < 0 && argc < (size_t)(-cmd->arity))) {
        char lower[64];
        size_t i;
        for (i = 0; cmd->name[i] && i + 1 < sizeof(lower); i++)
            lower[i] = (char)((cmd->name[i] >= 'A' && cmd->name[i] <= 'Z') ? cmd->name[i] + 32
                                                                            : cmd->name[i]);
        lower[i] = '\0';
        rs_cmdstat *st = rs_cmdstat_of(s, cmd);
        if (st)
            st->rejected++;
        rs_req_fail(r, RS_ERR, "wrong number of arguments for '%s' command", lower);
        return;
    }
    if (s->acl && c->authed && !rs_users_permit(r, cmd))
        return;
    if (c->in_multi && cmd->fn != rs_cmd_notx && cmd->fn != rs_cmd_quit) {
        rs_cmdstat *st = rs_cmdstat_of(s, cmd);
        if (st)
            st->rejected++;
        rs_req_fail(r, RS_ERR, "command not run: it follows a MULTI, and transactions are "
                    "not supported here (EXEC will abort; send commands without MULTI)");
        return;
    }
    r->cmd = cmd;
    if (!rs_req_can_start(c, r)) {
        c->waiting = r;         /* parsing stops until it starts */
        return;
    }
    rs_req_start(c, r);
}

/* 1 when r may start now: no write of this client runs; a write starts when nothing
 * of this client runs, an ordered write when no write runs, anything else when no
 * ordered write runs either. */
static int rs_req_can_start(const rs_client *c, const rs_req *r)
{
    if (c->nwrites > 0)
        return 0;
    if (c->s && c->nstarted >= c->s->opt.limits.max_inflight_client)
        return 0;
    if (r->cmd->flags & RS_CMD_WRITE)
        return c->nstarted == 0;
    return (r->cmd->flags & RS_CMD_ORDERED) || c->nordered == 0;
}

static void rs_req_start(rs_client *c, rs_req *r)
{
    r->started = 1;
    r->start_us = ra_now_us();
    r->out.resp3 = c->resp3;
    c->last_cmd = r->cmd->name;
    c->nstarted++;
    if (r->cmd->flags & RS_CMD_WRITE)
        c->nwrites++;
    if (r->cmd->flags & RS_CMD_ORDERED)
        c->nordered++;
    r->cmd->fn(r);
}

/* Queue a new request (finished or not). Takes a reference for it. */
static rs_req *rs_client_enqueue(rs_client *c, resp_request *rq)
{
    rs_req *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    r->c = c;
    if (rq)
        r->rq = *rq;
    resp_buf_init(&r->out, c->s->opt.limits.max_reply_bytes);
    r->prev = c->tail;
    if (c->tail)
        c->tail->next = r;
    else
        c->head = r;
    c->tail = r;
    c->npending++;
    c->pending_bytes += r->rq.bytes;
    c->refs++;
    c->s->st.inflight++;
    return r;
}

/* Parse and start requests from the buffered input, at most max_per_event of them. */
static void rs_client_process(rs_client *c)
{
    if (c->bev == NULL || c->s == NULL || c->closing)
        return;
    rserver *s = c->s;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    unsigned started = 0;

    c->refs++;              /* handlers may close the connection under us */
    while (c->bev && !c->closing && !c->waiting && evbuffer_get_length(in) > 0) {
        if (rs_client_over_limits(c)) {
            rs_client_pause(c);
            break;
        }
        if (started >= s->opt.limits.max_per_event) {
            event_active(c->resume_ev, EV_TIMEOUT, 0);
            break;
        }
        struct evbuffer_iovec v;
        if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
            break;
        size_t used = 0;
        int rc = resp_parser_feed(c->parser, v.iov_base, v.iov_len, &used);
        evbuffer_drain(in, used);
        if (rc == 0)
            continue;
        if (rc < 0) {
            s->st.proto_errors++;
            log_warn_rl("client %llu: %s; closing", (unsigned long long)c->id,
                        resp_parser_error(c->parser));
            rs_req *r = rs_client_enqueue(c, NULL);
            c->closing = 1;
            bufferevent_disable(c->bev, EV_READ);
            bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
            if (r)
                rs_req_fail(r, RS_ERR, "%s", resp_parser_error(c->parser));
            else
                rs_client_close(c);
            break;
        }
        resp_request rq;
        resp_parser_take(c->parser, &rq);
        c->recv_start_ms = ra_now_ms();     /* the next request's clock, if bytes follow */
        rs_req *r = rs_client_enqueue(c, &rq);
        if (r == NULL) {
            resp_request_free(&rq);
            rs_client_close(c);
            break;
        }
        started++;
        rs_client_dispatch(c, r);
    }
    if (c->bev && resp_parser_pending_bytes(c->parser) == 0 && evbuffer_get_length(in) == 0)
        c->recv_start_ms = 0;
    if (c->bev)
        rs_budget_unauth_note(c);
    if (c->bev && c->eof)
        rs_client_flush(c);
    rs_client_unref(c);
}

/* ---- libevent callbacks ---- */

static void rs_on_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rs_client_process(arg);
}

static void rs_on_read(struct bufferevent *bev, void *arg)
{
    rs_client *c = arg;
    (void)bev;
    c->active_ms = ra_now_ms();
    if (c->recv_start_ms == 0)
        c->recv_start_ms = c->active_ms;
    rs_client_process(c);
}

static void rs_on_write(struct bufferevent *bev, void *arg)
{
    rs_client *c = arg;
    (void)bev;
    if (c->closing || c->eof) {
        rs_client_flush(c);        /* closes when everything is sent */
        return;
    }
    rs_client_maybe_resume(c);
}

static void rs_on_event(struct bufferevent *bev, short what, void *arg)
{
    rs_client *c = arg;
    (void)bev;
    if (what & BEV_EVENT_CONNECTED) {
        /* the TLS handshake is done: requests may come (their own clock) */
        c->handshaking = 0;
        c->active_ms = ra_now_ms();
        c->recv_start_ms = 0;
        if (c->s)
            c->s->st.tls_connections++;
        return;
    }
    if (c->handshaking && (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF))) {
        rs_tls_handshake_failed(c);
        rs_client_close(c);
        return;
    }
    if (what & BEV_EVENT_ERROR) {
        log_debug("client %llu: %s", (unsigned long long)c->id, strerror(EVUTIL_SOCKET_ERROR()));
        rs_client_close(c);
        return;
    }
    if (what & BEV_EVENT_EOF) {
        if (what & BEV_EVENT_WRITING) {
            rs_client_close(c);
            return;
        }
        /* the peer will send nothing more: answer what it sent, then close */
        c->eof = 1;
        bufferevent_disable(c->bev, EV_READ);
        bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
        c->refs++;
        rs_client_process(c);
        if (c->bev)
            rs_client_flush(c);
        rs_client_unref(c);
    }
}

/* A client on bev (a connected socket, or one end of a pair in the fuzz harness):
 * parser, resume event, server list, callbacks. Returns it, or NULL (out of memory;
 * bev is left to the caller). */
static rs_client *rs_client_new(rserver *s, struct bufferevent *bev)
{
    rs_client *c = calloc(1, sizeof(*c));
    resp_limits pl = rs_parser_limits(s, !rs_auth_on(s));
    if (c == NULL || (c->parser = resp_parser_new(&pl)) == NULL ||
        (c->resume_ev = event_new(s->base, -1, 0, rs_on_resume, c)) == NULL) {
        if (c != NULL)
            resp_parser_free(c->parser);
        free(c);
        return NULL;
    }
    c->bev = bev;
    c->s = s;
    c->ctx = s->opt.ctx;
    c->id = ++s->next_id;
    c->refs = 1;
    c->authed = !rs_auth_on(s);
    c->user = -1;
    memcpy(c->user_name, "default", sizeof("default"));
    c->connected_ms = c->active_ms = ra_now_ms();
    rs_sock_addr(bufferevent_getfd(bev), 1, c->addr, sizeof(c->addr));
    rs_sock_addr(bufferevent_getfd(bev), 0, c->laddr, sizeof(c->laddr));
    c->next = s->clients;
    if (s->clients)
        s->clients->prev = c;
    s->clients = c;
    s->st.clients++;
    s->st.connections++;
    bufferevent_setcb(c->bev, rs_on_read, rs_on_write, rs_on_event, c);
    bufferevent_setwatermark(c->bev, EV_READ, 0, RS_READ_HIGH_WATERMARK);
    bufferevent_setwatermark(c->bev, EV_WRITE, s->opt.limits.out_high_watermark / 2, 0);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    rs_budget_attach(c);
    return c;
}

/* With a password, unauthenticated clients take at most max_clients minus
 * reserved_auth_clients slots (a quarter of max_clients at most): at that cap the oldest unauthenticated client (it had the
 * longest time to AUTH) is closed to make room for the new connection. */
static void rs_unauth_make_room(rserver *s)
{
    const rs_limits *l = &s->opt.limits;
    unsigned res = l->reserved_auth_clients < l->max_clients / 4 ? l->reserved_auth_clients
                                                                 : l->max_clients / 4;
    unsigned cap = l->max_clients - res;       /* a quarter of the slots reserved at most */
    if (!rs_auth_on(s) || s->st.clients - s->nauthed < cap)
        return;
    rs_client *oldest = NULL;
    for (rs_client *c = s->clients; c; c = c->next)     /* newest first */
        if (!c->authed)
            oldest = c;
    if (oldest) {
        s->st.rejected_unauth++;
        log_warn_rl("client %llu (%s): closed unauthenticated to make room (max-clients %u, "
                    "%u reserved for authenticated clients)", (unsigned long long)oldest->id,
                    oldest->addr, l->max_clients, l->reserved_auth_clients);
        rs_client_close(oldest);
    }
}

/* A connection on fd from the plain (tls 0) or the TLS port: the limits, then a
 * client on a plain or an accepting TLS bufferevent. */
static void rs_accept_fd(rserver *s, evutil_socket_t fd, int tls)
{
    if (s->st.clients >= s->opt.limits.max_clients) {
        static const char msg[] = "-ERR max number of clients reached\r\n";
        s->st.rejected++;
        log_warn_rl("refusing a connection: max-clients (%u) reached", s->opt.limits.max_clients);
        if (write(fd, msg, sizeof(msg) - 1) < 0) {
            /* best effort */
        }
        evutil_closesocket(fd);
        return;
    }
    char addr[64];
    rs_sock_addr(fd, 1, addr, sizeof addr);
    if (rs_guard_admit(s, addr) != 0) {
        static const char msg[] = "-ERR max number of clients from this address reached\r\n";
        if (write(fd, msg, sizeof(msg) - 1) < 0) {
            /* best effort */
        }
        evutil_closesocket(fd);
        return;
    }
    rs_unauth_make_room(s);
    struct bufferevent *bev = tls ? rs_tls_bev(s, fd)
                                  : bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    rs_client *c = bev ? rs_client_new(s, bev) : NULL;
    if (c == NULL) {
        rs_guard_release(s, addr);
        if (bev)
            bufferevent_free(bev);      /* closes fd */
        else
            evutil_closesocket(fd);
        return;
    }
    c->admitted = 1;
    if (tls) {
        /* the handshake is bounded like a request that arrives: request-timeout (and
         * auth-timeout, timeout) close a peer that does not finish it */
        c->tls = c->handshaking = 1;
        c->recv_start_ms = c->connected_ms;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void rs_on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
                         int salen, void *arg)
{
    (void)lis;
    (void)sa;
    (void)salen;
    rs_accept_fd(arg, fd, 0);
}

static void rs_on_tls_accept(struct evconnlistener *lis, evutil_socket_t fd,
                             struct sockaddr *sa, int salen, void *arg)
{
    (void)lis;
    (void)sa;
    (void)salen;
    rs_accept_fd(arg, fd, 1);
}

static void rs_on_accept_retry(evutil_socket_t fd, short what, void *arg)
{
    rserver *s = arg;
    (void)fd;
    (void)what;
    if (s->lis)
        evconnlistener_enable(s->lis);
}

static void rs_on_tls_accept_retry(evutil_socket_t fd, short what, void *arg)
{
    rserver *s = arg;
    (void)fd;
    (void)what;
    evconnlistener_enable(s->tls_lis);
}

static void rs_on_accept_error(struct evconnlistener *lis, void *arg)
{
    rserver *s = arg;
    if (lis == s->tls_lis)
        rs_accept_pause(lis, s->tls_accept_retry, s->opt.name);
    else
        rs_accept_pause(lis, s->accept_retry, s->opt.name);
}

/* ---- Server ---- */

/* Once a second: close clients that did not authenticate within auth_timeout_s, and
 * clients idle (nothing running, nothing received) for idle_timeout_s. */
static void rs_on_sweep(evutil_socket_t fd, short what, void *arg)
{
    rserver *s = arg;
    const rs_limits *l = &s->opt.limits;
    uint64_t now = ra_now_ms();
    (void)fd;
    (void)what;
    s->ops_per_sec = s->st.commands - s->ops_sample;
    s->ops_sample = s->st.commands;
    rs_guard_sweep(s);
    for (rs_client *c = s->clients, *next; c; c = next) {
        next = c->next;
        if (rs_auth_on(s) && !c->authed && l->auth_timeout_s &&
            now - c->connected_ms >= (uint64_t)l->auth_timeout_s * 1000u) {
            s->st.closed_auth_timeout++;
            LOG_AT_RL(LOGL_INFO, "client %llu: not authenticated within %u s (auth-timeout); "
                      "closing", (unsigned long long)c->id, l->auth_timeout_s);
            rs_client_close(c);
        } else if (c->handshaking && l->request_timeout_s &&
                   now - c->connected_ms >= (uint64_t)l->request_timeout_s * 1000u) {
            s->st.tls_handshake_timeouts++;
            log_warn_rl("client %llu (%s): TLS handshake not done after %u s "
                        "(request-timeout); closing", (unsigned long long)c->id, c->addr,
                        l->request_timeout_s);
            rs_client_close(c);
        } else if (l->request_timeout_s && c->recv_start_ms && !c->paused && !c->waiting &&
                   now - c->recv_start_ms >= (uint64_t)l->request_timeout_s * 1000u) {
            s->st.closed_request_timeout++;
            log_warn_rl("client %llu (%s): a request still arriving after %u s "
                        "(request-timeout); closing", (unsigned long long)c->id, c->addr,
                        l->request_timeout_s);
            rs_client_close(c);
        } else if (l->idle_timeout_s && c->npending == 0 && c->bev &&
                   evbuffer_get_length(bufferevent_get_input(c->bev)) == 0 &&
                   now - c->active_ms >= (uint64_t)l->idle_timeout_s * 1000u) {
            s->st.closed_idle++;
            log_debug("client %llu: idle for %u s (timeout); closing", (unsigned long long)c->id,
                      l->idle_timeout_s);
            rs_client_close(c);
        }
    }
}

/* The listeners of s, plain and TLS, and the TLS context (whichever exist). */
static void rs_listeners_free(rserver *s)
{
    if (s->lis)
        evconnlistener_free(s->lis);
    if (s->tls_lis)
        evconnlistener_free(s->tls_lis);
    if (s->tls_accept_retry)
        event_free(s->tls_accept_retry);
    rs_tls_free(s->tls);
    s->lis = s->tls_lis = NULL;
    s->tls_accept_retry = NULL;
    s->tls = NULL;
}

rserver *rs_new(struct event_base *base, const rs_options *opt, char *err, size_t errlen)
{
    rserver *s = calloc(1, sizeof(*s));

    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->base = base;
    s->opt = *opt;
    if (s->opt.name == NULL)
        s->opt.name = "simhash";
    s->bind = strdup(opt->bind && opt->bind[0] ? opt->bind : "127.0.0.1");
    if (opt->password && opt->password[0])
        s->password = strdup(opt->password);
    if (s->opt.limits.max_pending == 0)
        s->opt.limits.max_pending = 1;
    if (s->opt.limits.max_per_event == 0)
        s->opt.limits.max_per_event = 1;
    s->accept_retry = evtimer_new(base, rs_on_accept_retry, s);
    s->budget_ev = event_new(base, -1, 0, rs_budget_enforce, s);
    if (s->bind == NULL || s->accept_retry == NULL || s->budget_ev == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (rs_users_init(s, opt->limits.aclfile, err, errlen) != 0)
        goto fail;
    if (opt->limits.tls.port) {
        s->tls_accept_retry = evtimer_new(base, rs_on_tls_accept_retry, s);
        if (s->tls_accept_retry == NULL) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        if ((s->tls = rs_tls_new(&opt->limits.tls, err, errlen)) == NULL)
            goto fail;
        s->tls_lis = rs_listen(base, s->bind, opt->limits.tls.port, rs_on_tls_accept, s,
                               &s->tls_port, err, errlen);
        if (s->tls_lis == NULL)
            goto fail;
        evconnlistener_set_error_cb(s->tls_lis, rs_on_accept_error);
    }
    /* port 0 beside a tls-port: TLS only */
    if (opt->port || !opt->limits.tls.port) {
        s->lis = rs_listen(base, s->bind, opt->port, rs_on_accept, s, &s->port, err, errlen);
        if (s->lis == NULL)
            goto fail;
        evconnlistener_set_error_cb(s->lis, rs_on_accept_error);
    }
    /* the option strings are the configuration's: not kept past here */
    memset(&s->opt.limits.tls, 0, sizeof(s->opt.limits.tls));
    s->opt.limits.tls.port = s->tls_port;
    s->opt.limits.tls.metrics = opt->limits.tls.metrics && s->tls;
    s->opt.limits.aclfile = NULL;
    s->start_ms = ra_now_ms();
    s->ncstat = s->opt.ncommands + rs_nbuiltin;
    s->cstat = calloc(s->ncstat, sizeof(*s->cstat));
    if (s->cstat == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    {
        struct timeval tv = ra_tv_ms(1000);
        s->sweep_ev = event_new(base, -1, EV_PERSIST, rs_on_sweep, s);
        if (s->sweep_ev == NULL || event_add(s->sweep_ev, &tv) != 0) {
            snprintf(err, errlen, "out of memory");
            if (s->sweep_ev)
                event_free(s->sweep_ev);
            goto fail;
        }
    }
    return s;
fail:
    rs_listeners_free(s);
    if (s->accept_retry)
        event_free(s->accept_retry);
    if (s->budget_ev)
        event_free(s->budget_ev);
    free(s->cstat);
    free(s->bind);
    free(s->password);
    rs_acl_free(s->acl);
    free(s);
    return NULL;
}

void rs_free(rserver *s)
{
    if (s == NULL)
        return;
    rs_auth_cancel_all(s);
    while (s->clients) {
        rs_client *c = s->clients;
        c->refs++;
        rs_client_close(c);        /* unlinks c */
        c->s = NULL;            /* kept alive by unfinished requests: must not touch s */
        rs_client_unref(c);
    }
    rs_listeners_free(s);
    if (s->sweep_ev)
        event_free(s->sweep_ev);
    event_free(s->accept_retry);
    event_free(s->budget_ev);
    rs_guard_free(s);
    rs_slowlog_free(s);
    free(s->cstat);
    free(s->bind);
    free(s->password);
    rs_acl_free(s->acl);
    free(s);
}

unsigned rs_port(const rserver *s)
{
    return s->port;
}

unsigned rs_tls_port(const rserver *s)
{
    return s->tls_port;
}
