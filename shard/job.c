/* job.c: the requests of simhash-shard that wait for Redis (see job.h). */
#include "job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "layout.h"
#include "log.h"
#include "rasync.h"

static void shard_job_free(shard_job *j)
{
    if (j->deadline)
        event_free(j->deadline);
    if (j->state && j->ops->free_state)
        j->ops->free_state(j->state);
    free(j->slots);
    free(j);
}

int shard_job_release(shard_job *j)
{
    if (j->req == NULL && j->pending == 0) {
        shard_job_free(j);
        return 1;
    }
    return 0;
}

void shard_job_fail(shard_job *j, rs_errcode code, unsigned long long *counter, const char *text)
{
    rs_req *req = j->req;
    if (req == NULL)
        return;
    j->req = NULL;
    evtimer_del(j->deadline);
    if (j->ops->failed && j->ops->failed(j, req))
        return;
    j->sc->st.errors++;
    if (counter)
        (*counter)++;
    rs_req_fail(req, code, "%s", text);
}

void shard_job_answer(shard_job *j)
{
    rs_req *req = j->req;
    if (req == NULL)
        return;
    j->req = NULL;
    evtimer_del(j->deadline);
    rs_req_finish(req);
}

rs_req *shard_job_handoff(shard_job *j)
{
    rs_req *req = j->req;
    SH_ASSERT(req != NULL);     /* handing on an answered request would answer it twice */
    j->req = NULL;
    j->state = NULL;
    evtimer_del(j->deadline);
    return req;
}

static void shard_job_on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    shard_job *j = arg;
    shard_ctx *sc = j->sc;
    char msg[96];
    snprintf(msg, sizeof msg, "timeout: redis did not answer within %u ms", sc->cfg.timeout_ms);
    shard_job_fail(j, RS_REDIS, &sc->st.timeouts, msg);
    if (shard_job_release(j))
        return;
    /* may call back (and free) j: it drops the connection when even a PING to
     * probe Redis cannot be queued */
    shard_redis_stall_check(sc->redis);
}

shard_job *shard_job_new(shard_ctx *sc, rs_req *req, const shard_job_ops *ops, void *state,
                         unsigned n)
{
    shard_job *j = calloc(1, sizeof *j);
    if (j == NULL)
        return NULL;
    j->sc = sc;
    j->req = req;
    j->ops = ops;
    j->nslots = n;
    j->slots = calloc(n ? n : 1, sizeof *j->slots);
    j->deadline = evtimer_new(sc->base, shard_job_on_deadline, j);
    if (!j->slots || !j->deadline) {
        if (j->deadline)
            event_free(j->deadline);
        free(j->slots);
        free(j);
        return NULL;
    }
    j->state = state;
    for (unsigned i = 0; i < n; i++) {
        j->slots[i].job = j;
        j->slots[i].idx = i;
    }
    struct timeval tv = ra_tv_ms(sc->cfg.timeout_ms);
    evtimer_add(j->deadline, &tv);
    return j;
}

/* The one place a slot is marked done: every command calls back here exactly once. */
static void shard_job_on_reply(void *priv, redisReply *reply, const char *err)
{
    shard_slot *s = priv;
    shard_job *j = s->job;
    shard_ctx *sc = j->sc;
    SH_ASSERT(j->pending > 0);
    j->pending--;
    if (j->req != NULL) {
        const char *why = NULL;
        if (s->dir != 0 && layout_dir_reply(&sc->lay, shard_dir_table(s->dir), shard_dir_shard(s->dir),
                                            reply)) {
            if (j->ops->stale)
                j->ops->stale(j, s);    /* that part alone is tried again */
            else
                j->stale = 1;   /* nothing was read or written: run it again */
        } else if (reply == NULL) {
            shard_job_fail(j, RS_REDIS, &sc->st.lost, err ? err : "connection lost");
        } else if (reply->type == REDIS_REPLY_ERROR) {
            char msg[256];
            snprintf(msg, sizeof msg, "%.*s", (int)reply->len, reply->str);
            shard_job_fail(j, RS_REDIS, &sc->st.redis_err, msg);
        } else if (j->ops->absorb(j, s, reply, &why) != 0) {
            shard_job_fail(j, RS_REDIS, &sc->st.redis_err, why);
        }
        if (j->req != NULL && j->pending == 0) {
            if (j->stale)
                shard_job_rerun(j, NULL, 0);
            else
                j->ops->done(j);
        }
    }
    shard_job_release(j);
}

int shard_job_send(shard_job *j, unsigned i, int argc, const char **argv, const size_t *argvlen)
{
    SH_ASSERT(i < j->nslots);
    if (j->req == NULL)
        return -1;
    if ((j->background ? shard_redis_command_background : shard_redis_command)(
            j->sc->redis, shard_job_on_reply, &j->slots[i], argc, argv, argvlen) != 0) {
        shard_job_fail(j, RS_REDIS, &j->sc->st.lost, "connection lost");
        return -1;
    }
    j->pending++;
    return 0;
}

/* One document id: bytes and length. */
typedef struct shard_id {
    const uint8_t *s;
    size_t len;
} shard_id;

/* Compares two ids as byte strings. */
static int shard_id_cmp(const void *a, const void *b)
{
    const shard_id *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->s, y->s, n) : 0;
    if (c != 0)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

/* Counts the ids of a packed string (layout_ids_next); -1 when malformed. */
static long long shard_ids_count(const redisReply *rep)
{
    size_t off = 0, len;
    const uint8_t *id;
    long long n = 0;
    int rc;
    while ((rc = layout_ids_next(rep->str, rep->len, &off, &id, &len)) == 1)
        n++;
    return rc < 0 ? -1 : n;
}

int shard_reply_docs(resp_buf *b, const redisReply *rep, const char **why)
{
    long long n;
    if (rep->type == REDIS_REPLY_NIL) {
        n = 0;
    } else if (rep->type == REDIS_REPLY_ARRAY) {
        n = (long long)rep->elements;
        for (size_t i = 0; i < rep->elements; i++)
            if (rep->element[i]->type != REDIS_REPLY_STRING) {
                *why = "unexpected member in a reply to SMEMBERS";
                return -1;
            }
    } else if (rep->type == REDIS_REPLY_STRING) {
        if ((n = shard_ids_count(rep)) < 0) {
            *why = "malformed packed document ids in a bucket hash";
            return -1;
        }
    } else {
        *why = "unexpected reply to a read of document ids";
        return -1;
    }
    shard_id *v = NULL;
    if (n > 0) {
        v = malloc((size_t)n * sizeof *v);
        if (v == NULL) {
            *why = "out of memory";
            return -1;
        }
        if (rep->type == REDIS_REPLY_ARRAY) {
            for (size_t i = 0; i < rep->elements; i++)
                v[i] = (shard_id){(const uint8_t *)rep->element[i]->str, rep->element[i]->len};
        } else {
            size_t off = 0;
            for (long long i = 0; i < n; i++)
                layout_ids_next(rep->str, rep->len, &off, &v[i].s, &v[i].len);
        }
        if (n > 1)
            qsort(v, (size_t)n, sizeof *v, shard_id_cmp);
    }
    resp_add_array(b, (size_t)n);
    for (long long i = 0; i < n; i++)
        resp_add_bulk(b, (const char *)v[i].s, v[i].len);
    free(v);
    return 0;
}

int shard_reply_docs_empty(const redisReply *rep)
{
    return rep->type == REDIS_REPLY_NIL ||
           (rep->type == REDIS_REPLY_ARRAY && rep->elements == 0) ||
           (rep->type == REDIS_REPLY_STRING && rep->len == 0);
}

const redisReply *shard_ids_as_packed(unsigned kind, const redisReply *rep, redisReply *tmp)
{
    const char *v = NULL;
    size_t len = 0;
    if (kind != LAYOUT_IDS_MEMBER)
        return rep;
    int rc = layout_ids_reply(LAYOUT_IDS_MEMBER, rep, &v, &len);
    if (rc < 0)
        return NULL;
    memset(tmp, 0, sizeof *tmp);
    tmp->type = rc ? REDIS_REPLY_STRING : REDIS_REPLY_NIL;
    tmp->str = (char *)v;
    tmp->len = len;
    return tmp;
}

void shard_ids_send(shard_job *j, unsigned *slot, uint32_t idx, uint64_t fp)
{
    shard_ctx *sc = j->sc;
    uint64_t p0 = perm_apply(&sc->ps.tables[0], fp);
    for (unsigned i = 0; i < LAYOUT_IDS_READS && j->req; i++) {
        layout_cmd c;
        layout_ids_kind kind;
        sc->lay.ops->ids_read(&sc->lay, i, fp, p0, &c, &kind);
        j->slots[*slot].idx = idx;
        j->slots[*slot].part = (uint8_t)kind;
        j->slots[*slot].dir = shard_dir_id(0, layout_shard_of(p0));
        shard_job_send(j, (*slot)++, c.argc, c.argv, c.argvlen);
    }
}

void shard_ids_init(shard_ids *x)
{
    memset(x, 0, sizeof *x);
    resp_buf_init(&x->field, 0);
    resp_buf_init(&x->set, 0);
}

void shard_ids_free(shard_ids *x)
{
    resp_buf_free(&x->field);
    resp_buf_free(&x->set);
}

int shard_ids_absorb(shard_ids *x, const shard_slot *s, redisReply *reply, const char **why)
{
    redisReply tmp;
    const redisReply *rep = shard_ids_as_packed(s->part, reply, &tmp);
    if (rep == NULL) {
        *why = "unexpected reply to a read of a table-0 member";
        return -1;
    }
    if (s->part == LAYOUT_IDS_SET) {
        if (rep->type != REDIS_REPLY_ARRAY) {
            *why = "unexpected reply to SMEMBERS";
            return -1;
        }
        x->set_empty = rep->elements == 0;
        return shard_reply_docs(&x->set, rep, why);
    }
    x->packed = 1;
    if (rep->type == REDIS_REPLY_STRING && rep->len == 0) {
        x->overflow = 1;
        return 0;
    }
    if (rep->type != REDIS_REPLY_STRING && rep->type != REDIS_REPLY_NIL) {
        *why = "unexpected reply to HGET";
        return -1;
    }
    x->field_empty = shard_reply_docs_empty(rep);
    return shard_reply_docs(&x->field, rep, why);
}

void shard_ids_take(shard_ids *x, resp_buf *out, int *empty)
{
    int use_set = !x->packed || x->overflow;
    resp_buf *from = use_set ? &x->set : &x->field;
    *empty = use_set ? x->set_empty : x->field_empty;
    resp_buf_free(out);
    *out = *from;
    resp_buf_init(from, 0);
}
