/* ops.c: fan-out operations of the coordinator.
 *
 * An operation answers one client request through one or more rounds of requests
 * to shard workers. It holds the child count of the current round, the done count,
 * one deadline timer for the whole request, and a failed flag. coord_child_done() is the
 * only place that marks a child done, on every path: a reply, an error reply, a lost
 * connection (hiredis calls back with NULL), the deadline, or a failure elsewhere.
 * The op is reference-counted: one reference while it runs plus one per hiredis
 * callback still to come, so a reply after the deadline or after the client left
 * finds the op alive and is dropped. Completion is decided by counting. */
#include "coord.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "log.h"

typedef struct coord_child {
    coord_op *op;
    coord_worker *w;
    coord_reply_fn fn;
    void *arg;
    uint64_t t0;
    int done;
    int in_round;           /* listed in op->kids: the op frees it */
    int cb_ran;             /* hiredis called back: nobody else will */
} coord_child;

struct coord_op {
    coord *co;
    coord_op *lprev, *lnext;    /* co->ops: not ended */
    rs_req *req;                /* NULL once answered */
    unsigned refs;
    int ended;                  /* answered (or failed): nothing more to do */
    struct event *timer;
    coord_child **kids;         /* children of the current round */
    size_t nkids, capkids;
    size_t ndone;
    coord_round_fn next;
    int waiting;                /* round_end called, next not yet run */
    struct event *later;        /* coord_op_later's timer; NULL when none */
    coord_round_fn later_fn;
    coord_note_fn note;         /* appends to error texts */
    coord_failed_fn failed;     /* told of a failure (an op answering requests itself) */
    int tolerant;               /* a child's failure or the deadline ends the child only */
    void *data;
    void (*cleanup)(void *);
};

static void coord_op_unref(coord_op *op)
{
    SH_ASSERT(op->refs > 0);
    if (--op->refs > 0)
        return;
    if (op->cleanup)
        op->cleanup(op->data);
    free(op->data);
    free(op->kids);
    free(op);
}

/* Forget the children of a finished round. A child is freed by whichever lets go
 * of it last: this list, or its hiredis callback. */
static void coord_op_clear_round(coord_op *op)
{
    for (size_t i = 0; i < op->nkids; i++) {
        coord_child *ch = op->kids[i];
        if (ch == NULL)
            continue;
        ch->in_round = 0;
        if (ch->cb_ran)
            free(ch);
        op->kids[i] = NULL;
    }
    op->nkids = 0;
    op->ndone = 0;
}

/* End the op: no more rounds; drop the running reference. */
static void coord_op_end(coord_op *op)
{
    if (op->ended)
        return;
    op->ended = 1;
    if (op->lprev)
        op->lprev->lnext = op->lnext;
    else
        op->co->ops = op->lnext;
    if (op->lnext)
        op->lnext->lprev = op->lprev;
    if (op->timer) {
        event_free(op->timer);
        op->timer = NULL;
    }
    if (op->later) {
        event_free(op->later);
        op->later = NULL;
    }
    /* children still outstanding are marked done so their replies are ignored */
    for (size_t i = 0; i < op->nkids; i++)
        if (op->kids[i])
            op->kids[i]->done = 1;
    coord_op_clear_round(op);
    coord_op_unref(op);
}

void coord_op_fail(coord_op *op, rs_errcode code, const char *fmt, ...)
{
    char text[400];
    va_list ap;

    if (op->ended)
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    char note[RESP_ERROR_TEXT_MAX - 512] = "";
    if (op->note)
        op->note(op, note, sizeof(note));
    switch (code) {
    case RS_TIMEOUT: op->co->st.err_timeout++; break;
    case RS_SHARDDOWN: op->co->st.err_sharddown++; break;
    case RS_BUSY: op->co->st.err_busy++; break;
    default: break;
    }
    if (op->failed)
        op->failed(op, code, text);
    rs_req *req = op->req;
    op->req = NULL;
    coord_op_end(op);
    if (req)
        rs_req_fail(req, code, "%s%s%s%s", text, note[0] ? " (" : "", note, note[0] ? ")" : "");
}

void coord_op_finish(coord_op *op)
{
    if (op->ended)
        return;
    rs_req *req = op->req;
    op->req = NULL;
    coord_op_end(op);
    if (req)
        rs_req_finish(req);
}

/* Deadline of the whole request. */
static void coord_child_done(coord_child *ch, redisReply *reply);

static void coord_op_on_deadline(evutil_socket_t fd, short what, void *arg)
{
    coord_op *op = arg;
    coord_worker *late = NULL;
    (void)fd;
    (void)what;
    if (op->tolerant) {
        /* the children still out are given up; the round goes on without them */
        op->refs++;
        for (size_t i = 0; i < op->nkids && !op->ended; i++)
            if (op->kids[i] && !op->kids[i]->done)
                coord_child_done(op->kids[i], NULL);
        coord_op_unref(op);
        return;
    }
    for (size_t i = 0; i < op->nkids; i++)
        if (op->kids[i] && !op->kids[i]->done) {
            late = op->kids[i]->w;
            late->timeouts++;
            late->errors++;
        }
    if (late) {
        snprintf(late->problem, sizeof(late->problem), "no answer within %u ms",
                 op->co->cfg.timeout_ms);
        log_warn_rl("shard worker %s did not answer within %u ms", late->addr,
                    op->co->cfg.timeout_ms);
        coord_op_fail(op, RS_TIMEOUT, "shard worker %s did not answer within %u ms", late->addr,
                      op->co->cfg.timeout_ms);
    } else {
        coord_op_fail(op, RS_TIMEOUT, "request did not complete within %u ms",
                      op->co->cfg.timeout_ms);
    }
}

/* coord_op_later's timer: run the next step with the op held. */
static void coord_op_on_later(evutil_socket_t fd, short what, void *arg)
{
    coord_op *op = arg;
    (void)fd;
    (void)what;
    coord_round_fn next = op->later_fn;
    op->later_fn = NULL;
    if (op->ended || next == NULL)
        return;
    op->refs++;
    next(op);
    coord_op_unref(op);
}

void coord_op_later(coord_op *op, unsigned ms, coord_round_fn next)
{
    if (op->ended)
        return;
    struct timeval tv = ra_tv_ms(ms);
    if (op->later == NULL)
        op->later = evtimer_new(op->co->base, coord_op_on_later, op);
    if (op->later == NULL || evtimer_add(op->later, &tv) != 0) {
        coord_op_fail(op, RS_OOM, "out of memory");
        return;
    }
    op->later_fn = next;
}

void coord_op_rearm(coord_op *op)
{
    struct timeval tv = ra_tv_ms(op->co->cfg.timeout_ms);
    if (!op->ended && op->timer)
        evtimer_add(op->timer, &tv);
}

void coord_op_set_note(coord_op *op, coord_note_fn fn)
{
    op->note = fn;
}

void coord_op_set_failed(coord_op *op, coord_failed_fn fn)
{
    op->failed = fn;
}

coord_op *coord_op_new(coord *co, rs_req *req)
{
    coord_op *op = calloc(1, sizeof(*op));
    struct timeval tv = ra_tv_ms(co->cfg.timeout_ms);

    if (op == NULL) {
        if (req)
            rs_req_fail(req, RS_OOM, "out of memory");
        return NULL;
    }
    op->co = co;
    op->req = req;
    op->refs = 1;
    op->timer = evtimer_new(co->base, coord_op_on_deadline, op);
    if (op->timer == NULL || evtimer_add(op->timer, &tv) != 0) {
        if (op->timer)
            event_free(op->timer);
        free(op);
        if (req)
            rs_req_fail(req, RS_OOM, "out of memory");
        return NULL;
    }
    op->lnext = co->ops;
    if (co->ops)
        co->ops->lprev = op;
    co->ops = op;
    return op;
}

void coord_ops_stop(coord *co)
{
    while (co->ops)
        coord_op_fail(co->ops, RS_SHARDDOWN, "simhash-coordinator is shutting down");
}

rs_req *coord_op_req(coord_op *op)
{
    return op->req;
}

void coord_op_give_req(coord_op *op)
{
    op->req = NULL;
}

coord *coord_op_coord(coord_op *op)
{
    return op->co;
}

void coord_op_set_data(coord_op *op, void *data, void (*cleanup)(void *data))
{
    op->data = data;
    op->cleanup = cleanup;
}

void coord_op_swap_data(coord_op *op, void *data, void (*cleanup)(void *data))
{
    if (op->cleanup)
        op->cleanup(op->data);
    free(op->data);
    op->data = data;
    op->cleanup = cleanup;
}

void *coord_op_data(coord_op *op)
{
    return op->data;
}

/* Run the next round when every child of this one is done. */
static void coord_op_maybe_advance(coord_op *op)
{
    if (op->ended || !op->waiting || op->ndone < op->nkids)
        return;
    op->waiting = 0;
    coord_round_fn next = op->next;
    op->next = NULL;
    coord_op_clear_round(op);
    /* a client that left still gets its writes completed (the reply is dropped):
     * stopping between the lock and the unlock would leave a lock to go stale */
    op->refs++;             /* next() may end the op */
    next(op);
    coord_op_unref(op);
}

/* The one place a child becomes done. reply is NULL when the connection was lost
 * or the child is abandoned. Returns nothing; may end the op. */
static void coord_child_done(coord_child *ch, redisReply *reply)
{
    coord_op *op = ch->op;
    coord_worker *w = ch->w;

    if (ch->done)
        return;
    ch->done = 1;
    op->ndone++;
    SH_ASSERT(op->ndone <= op->nkids || !ch->in_round);
    if (op->ended)
        return;
    if (op->tolerant && (reply == NULL || reply->type == REDIS_REPLY_ERROR)) {
        coord_op_maybe_advance(op);
        return;
    }
    if (reply == NULL) {
        w->errors++;
        coord_op_fail(op, RS_SHARDDOWN, "shard worker %s unavailable (connection lost)",
                      w->addr);
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        w->errors++;
        op->co->st.err_worker++;
        snprintf(w->problem, sizeof(w->problem), "%.*s", (int)(reply->len > 200 ? 200 : reply->len),
                 reply->str);
        /* pass the worker's error code on (-REDIS, -BUSY, ...), naming the worker */
        const char *sp = memchr(reply->str, ' ', reply->len);
        size_t clen = sp ? (size_t)(sp - reply->str) : reply->len;
        rs_errcode code = RS_ERR;
        for (int c = 0; c < RS_ERR_COUNT_; c++) {
            const char *s = rs_errcode_str((rs_errcode)c);
            if (strlen(s) == clen && memcmp(s, reply->str, clen) == 0)
                code = (rs_errcode)c;
        }
        const char *rest = sp ? sp + 1 : "";
        coord_op_fail(op, code, "shard worker %s: %.*s", w->addr,
                      (int)(reply->len - (size_t)(rest - reply->str) > 300
                                ? 300 : reply->len - (size_t)(rest - reply->str)),
                      rest);
        return;
    }
    if (ch->fn(op, w, reply, ch->arg) != 0)
        return;             /* the callback failed the op */
    coord_op_maybe_advance(op);
}

/* hiredis callback of every child request. */
static void coord_child_on_reply(redisAsyncContext *ac, void *r, void *priv)
{
    coord_child *ch = priv;
    coord_worker *w = ch->w;
    coord_op *op = ch->op;
    (void)ac;

    if (w->inflight > 0)
        w->inflight--;
    if (r != NULL) {
        double us = (double)(ra_now_us() - ch->t0);
        w->latency_us = w->latency_us == 0 ? us : 0.8 * w->latency_us + 0.2 * us;
    }
    coord_child_done(ch, r);
    ch->cb_ran = 1;
    if (!ch->in_round)
        free(ch);
    coord_op_unref(op);
}

int coord_op_send(coord_op *op, coord_worker *w, int argc, const char **argv,
                  const size_t *argvlen, coord_reply_fn fn, void *arg)
{
    if (op->ended)
        return -1;
    if (w == NULL) {
        coord_op_fail(op, RS_SHARDDOWN, "shard workers not all up yet (routing incomplete)");
        return -1;
    }
    if (w->health != W_UP || w->ac == NULL) {
        coord_op_fail(op, w->health == W_MISMATCH ? RS_MISMATCH : RS_SHARDDOWN,
                      "shard worker %s unavailable%s%s", w->addr, w->problem[0] ? ": " : "",
                      w->problem);
        return -1;
    }
    if (w->inflight >= op->co->cfg.max_inflight_worker) {
        coord_op_fail(op, RS_BUSY, "shard worker %s has %u requests in flight (max-inflight-worker)",
                      w->addr, w->inflight);
        return -1;
    }
    if (op->nkids == op->capkids) {
        size_t cap = op->capkids ? op->capkids * 2 : 8;
        coord_child **k = realloc(op->kids, cap * sizeof(*k));
        if (k == NULL) {
            coord_op_fail(op, RS_OOM, "out of memory");
            return -1;
        }
        op->kids = k;
        op->capkids = cap;
    }
    coord_child *ch = calloc(1, sizeof(*ch));
    if (ch == NULL) {
        coord_op_fail(op, RS_OOM, "out of memory");
        return -1;
    }
    ch->op = op;
    ch->w = w;
    ch->fn = fn;
    ch->arg = arg;
    ch->t0 = ra_now_us();
    /* the usual request is formatted on the stack, without hiredis's printf-style
     * formatter; a large one (ADD of many fingerprints) by hiredis */
    char small[1024];
    size_t len = resp_format_command(small, sizeof small, argc, argv, argvlen);
    if ((len > 0 ? redisAsyncFormattedCommand(w->ac, coord_child_on_reply, ch, small, len)
                 : redisAsyncCommandArgv(w->ac, coord_child_on_reply, ch, argc, argv, argvlen))
        != REDIS_OK) {
        free(ch);
        coord_op_fail(op, RS_SHARDDOWN, "shard worker %s unavailable (disconnecting)", w->addr);
        return -1;
    }
    ch->in_round = 1;
    op->kids[op->nkids++] = ch;
    op->refs++;
    w->inflight++;
    w->requests++;
    return 0;
}

void coord_op_set_tolerant(coord_op *op)
{
    op->tolerant = 1;
}

void coord_op_round_end(coord_op *op, coord_round_fn next)
{
    if (op->ended)
        return;
    op->next = next;
    op->waiting = 1;
    coord_op_maybe_advance(op);
}
