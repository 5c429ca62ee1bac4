/* merge.c: one-pair writes of any clients written together: SIMHASH.ADD requests of
 * one pair, and the add of SIMHASH.CHECK / CHECKTEXT once their query is answered.
 *
 * Crawlers send one page at a time, so most ADDs hold one pair, and every CHECK
 * writes one; written alone, each pays its own lock, table-write and unlock requests
 * to the workers and their own Redis calls (docs/protocol.md, "Batched writes").
 * With merge-adds (the default), such a pair is queued, and once the event loop has
 * read everything that arrived with it (requests, or the worker replies that ended
 * CHECKs' queries), the queue is written as batches of up to 256 pairs: one write of
 * write.c each (one SHARD.MLOCK, MADD and MUNLOCK per worker), whose pairs answer
 * their own requests (coord_write_set_waiters). A batch holds distinct fingerprints,
 * so each pair's count of ids added is its fingerprint's; a fingerprint sent twice
 * goes into the next batch, and the two writes meet at its write lock as any two
 * writers do. A lone pair (nothing else arrived with it) is written alone, as
 * without merging. */
#include "coord.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "log.h"

#define CM_BATCH 256            /* pairs of one merged write (write.c's window) */

typedef struct cm_entry {
    coord_waiter w;
    coord_pair pair;
} cm_entry;

struct coord_merge {
    struct event *flush;        /* activated when the queue gets its first entry */
    cm_entry *q;
    size_t n, cap;
};

/* Fails the requests of e[0..n) and frees what they own. */
static void cm_fail(cm_entry *e, size_t n, rs_errcode code, const char *text)
{
    for (size_t i = 0; i < n; i++) {
        rs_req_fail(e[i].w.req, code, "%s", text);
        resp_buf_free(&e[i].w.saved);
    }
}

/* Writes one request's pair alone, as without merging. */
static void cm_write_one(coord *co, cm_entry *e)
{
    coord_pair *p = malloc(sizeof *p);
    if (p == NULL) {
        cm_fail(e, 1, RS_OOM, "out of memory");
        return;
    }
    coord_op *op = coord_op_new(co, e->w.req);
    if (op == NULL) {               /* answered */
        free(p);
        resp_buf_free(&e->w.saved);
        return;
    }
    *p = e->pair;
    coord_write_one(op, &e->w, p);
}

/* Writes entries e[0..n) (distinct fingerprints) as one batch answering each request. */
static void cm_write_batch(coord *co, cm_entry *e, size_t n)
{
    if (n == 1) {
        cm_write_one(co, e);
        return;
    }
    coord_pair *pairs = malloc(n * sizeof *pairs);
    coord_waiter *ws = malloc(n * sizeof *ws);
    coord_op *op = pairs && ws ? coord_op_new(co, NULL) : NULL;
    if (op == NULL) {
        free(pairs);
        free(ws);
        cm_fail(e, n, RS_OOM, "out of memory");
        return;
    }
    coord_write *wr = coord_write_new(op, CW_ADD, pairs, n);
    if (wr == NULL) {               /* the op failed, answering no one */
        free(ws);
        cm_fail(e, n, RS_OOM, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        pairs[i] = e[i].pair;
        ws[i] = e[i].w;
        if (ws[i].kind == CW_ADD)
            co->st.adds_merged++;
        else
            co->st.checks_merged++;
    }
    coord_write_set_waiters(wr, ws);
    co->st.write_merges++;
    coord_write_start(op);
}

/* 1 when fp is the fingerprint of one of e[0..n). */
static int cm_has(const cm_entry *e, size_t n, uint64_t fp)
{
    for (size_t i = 0; i < n; i++)
        if (e[i].pair.fp == fp)
            return 1;
    return 0;
}

/* The queue, written: batches of distinct fingerprints in arrival order. */
static void cm_on_flush(evutil_socket_t fd, short what, void *arg)
{
    coord *co = arg;
    coord_merge *m = co->merge;
    (void)fd;
    (void)what;
    cm_entry *q = m->q;
    size_t n = m->n;
    m->q = NULL;
    m->n = m->cap = 0;
    cm_entry *batch = malloc((n < CM_BATCH ? n : CM_BATCH) * sizeof *batch);
    size_t nb = 0, rest = 0;
    if (batch == NULL) {
        for (size_t i = 0; i < n; i++)
            cm_write_one(co, &q[i]);
        free(q);
        return;
    }
    /* each pass takes the entries whose fingerprint the batch does not hold yet;
     * the others stay, in order, for the next batch */
    while (n > 0) {
        for (size_t i = 0; i < n; i++) {
            if (nb < CM_BATCH && !cm_has(batch, nb, q[i].pair.fp))
                batch[nb++] = q[i];
            else
                q[rest++] = q[i];
        }
        cm_write_batch(co, batch, nb);
        n = rest;
        nb = rest = 0;
    }
    free(batch);
    free(q);
}

int coord_merge_start(coord *co, char *err, size_t errlen)
{
    if (!co->cfg.merge_adds)
        return 0;
    co->merge = calloc(1, sizeof *co->merge);
    if (co->merge == NULL || (co->merge->flush = event_new(co->base, -1, 0, cm_on_flush, co)) == NULL) {
        free(co->merge);
        co->merge = NULL;
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void coord_merge_stop(coord *co)
{
    coord_merge *m = co->merge;
    if (m == NULL)
        return;
    cm_fail(m->q, m->n, RS_SHARDDOWN, "simhash-coordinator is shutting down");
    event_free(m->flush);
    free(m->q);
    free(m);
    co->merge = NULL;
}

int coord_merge_add(coord *co, coord_waiter *w, const coord_pair *pair)
{
    coord_merge *m = co->merge;
    if (m == NULL)
        return -1;
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        cm_entry *q = realloc(m->q, cap * sizeof *q);
        if (q == NULL)
            return -1;
        m->q = q;
        m->cap = cap;
    }
    m->q[m->n].w = *w;
    resp_buf_init(&w->saved, 0);    /* taken */
    m->q[m->n++].pair = *pair;
    if (m->n == 1)
        event_active(m->flush, EV_TIMEOUT, 0);
    return 0;
}
