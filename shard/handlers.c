/* handlers.c: the SHARD.* commands of simhash-shard (docs/protocol.md): the Redis
 * commands each request fans out to on the async connection, the per-request
 * deadline, the merged reply, and the command table (argument checks in args.c, the
 * SHARD.INFO text in info.c, SHARD.WAIT in wait.c).
 *
 * A request that needs Redis becomes a job with one slot per Redis command. Every
 * slot is marked done by exactly one function (shard_on_reply), on every path:
 * reply, Redis error, connection lost, shutdown. The job answers its client once
 * (first error, deadline, or the last reply) and is freed when it has answered and
 * no command is outstanding, so a late reply never touches freed memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/event.h>

#include "hamming.h"
#include "layout.h"
#include "log.h"
#include "parse.h"
#include "rasync.h"
#include "shard.h"

/* ---- Jobs ---- */

typedef enum shard_job_kind {
    SHARD_JOB_QUERY,       /* ZRANGEBYLEX per bucket -> [fp, dist] pairs */
    SHARD_JOB_SUM,         /* integer replies added up */
    SHARD_JOB_DOCS,        /* SMEMBERS per fingerprint -> array of arrays */
    SHARD_JOB_INFO,        /* HMGET of the counter hash per shard -> SHARD.INFO text */
    SHARD_JOB_INTS,        /* one reply, an integer or an array of integers, passed on */
} shard_job_kind;

struct shard_job;

typedef struct shard_slot {
    struct shard_job *job;
    uint32_t idx;          /* DOCS: position in the reply */
    uint32_t table;        /* QUERY: table of the bucket */
    uint64_t bucket;       /* QUERY: bucket number scanned */
    uint8_t qdocs;         /* QUERY ... DOCS: the SMEMBERS of q's own document set */
} shard_slot;

typedef struct shard_match {
    uint64_t fp;
    unsigned dist;
    uint8_t own;           /* QUERY ... DOCS: document ids read (table 0's shard is ours) */
    uint8_t empty;         /* QUERY ... DOCS: its document set is empty (dropped) */
} shard_match;

typedef struct shard_job {
    shard_ctx *sc;
    rs_req *req;           /* NULL once answered */
    shard_job_kind kind;
    unsigned nslots;
    unsigned pending;      /* commands sent and not yet called back */
    shard_slot *slots;
    struct event *deadline;
    /* QUERY */
    uint64_t q;
    unsigned d;
    shard_match *m;
    size_t nm, capm;
    int withdocs;          /* SHARD.QUERY ... DOCS */
    int docphase;          /* 1: the scan is done, SMEMBERS of the matches are out */
    int q0shard;           /* shard of perm_0(q) when table 0 was asked for, else -1 */
    int qdocs_read;        /* q's document set was read with the scan (into qdocs) */
    int qdocs_empty;       /* ... and it is empty */
    resp_buf qdocs;
    /* SUM */
    long long sum;
    unsigned long long *sum_stat;  /* counter the sum is added to, or NULL */
    /* INTS: the reply, already in RESP */
    resp_buf ints;
    /* DOCS; QUERY ... DOCS (indexed by match) */
    resp_buf *parts;
    unsigned nparts;
    /* INFO */
    long long fps, docs;
} shard_job;

static void shard_job_free(shard_job *j)
{
    if (j->deadline)
        event_free(j->deadline);
    if (j->parts) {
        for (unsigned i = 0; i < j->nparts; i++)
            resp_buf_free(&j->parts[i]);
        free(j->parts);
    }
    resp_buf_free(&j->qdocs);
    resp_buf_free(&j->ints);
    free(j->m);
    free(j->slots);
    free(j);
}

/* Frees j when it has answered and nothing is outstanding; returns 1 if freed. */
static int shard_job_release(shard_job *j)
{
    if (j->req == NULL && j->pending == 0) {
        shard_job_free(j);
        return 1;
    }
    return 0;
}

/* Answers the client with an error (once); counts it. */
static void shard_job_fail(shard_job *j, rs_errcode code, unsigned long long *counter,
                           const char *text)
{
    if (j->req == NULL)
        return;
    if (j->kind == SHARD_JOB_INFO) {     /* INFO still answers, without the counts */
        evtimer_del(j->deadline);
        shard_info_reply(j->req, 0, 0, 0);
        j->req = NULL;
        return;
    }
    j->sc->st.errors++;
    if (counter)
        (*counter)++;
    evtimer_del(j->deadline);
    rs_req_fail(j->req, code, "%s", text);
    j->req = NULL;
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
    /* may call back (and free) j when it drops a stalled connection */
    shard_redis_stall_check(sc->redis);
}

/* Returns a new job with n slots and a deadline, or NULL (out of memory). */
static shard_job *shard_job_new(shard_ctx *sc, rs_req *req, shard_job_kind kind, unsigned n)
{
    shard_job *j = calloc(1, sizeof *j);
    if (j == NULL)
        return NULL;
    j->sc = sc;
    j->req = req;
    j->kind = kind;
    j->nslots = n;
    j->slots = calloc(n, sizeof *j->slots);
    j->deadline = evtimer_new(sc->base, shard_job_on_deadline, j);
    resp_buf_init(&j->qdocs, 0);
    resp_buf_init(&j->ints, 0);
    if (kind == SHARD_JOB_DOCS) {
        j->parts = calloc(n, sizeof *j->parts);
        j->nparts = j->parts ? n : 0;
    }
    if (!j->slots || !j->deadline || (kind == SHARD_JOB_DOCS && !j->parts)) {
        j->req = NULL;
        shard_job_free(j);
        return NULL;
    }
    for (unsigned i = 0; i < n; i++) {
        j->slots[i].job = j;
        j->slots[i].idx = i;
        if (j->parts)
            resp_buf_init(&j->parts[i], 0);
    }
    struct timeval tv = ra_tv_ms(sc->cfg.timeout_ms);
    evtimer_add(j->deadline, &tv);
    return j;
}

static void shard_on_reply(void *priv, redisReply *reply, const char *err);

/* Sends slot i's command. On failure the job answers -REDIS (commands already sent
 * still call back). Returns 0 or -1. */
static int shard_job_send(shard_job *j, unsigned i, int argc, const char **argv,
                          const size_t *argvlen)
{
    if (j->req == NULL)
        return -1;
    if (shard_redis_command(j->sc->redis, shard_on_reply, &j->slots[i], argc, argv,
                            argvlen) != 0) {
        shard_job_fail(j, RS_REDIS, &j->sc->st.lost, "connection lost");
        return -1;
    }
    j->pending++;
    return 0;
}

/* Orders matches by distance, then fingerprint. */
static int shard_match_cmp(const void *a, const void *b)
{
    const shard_match *x = a, *y = b;
    if (x->dist != y->dist)
        return x->dist < y->dist ? -1 : 1;
    return x->fp < y->fp ? -1 : x->fp > y->fp;
}

/* Match i is q itself and its ids came with the scan. */
static int shard_match_has_qdocs(const shard_job *j, size_t i)
{
    return j->qdocs_read && j->m[i].fp == j->q;
}

/* SHARD.QUERY ... DOCS once the scan is done (matches sorted, unique): the document
 * ids of every match whose table-0 shard this worker serves (in cluster mode: that
 * of q, when table 0 was asked for). Those of q itself were read with the scan
 * (qdocs); for the others it sends SMEMBERS. Returns 1 when the job goes on (or has
 * answered with an error), 0 when it answers at once: nothing left to read, or no
 * room for the reads (those matches then go without ids, which the coordinator
 * fetches with SHARD.DOCS). */
static int shard_query_docs_start(shard_job *j)
{
    shard_ctx *sc = j->sc;
    unsigned n = 0, nown = 0;
    int cl = shard_redis_cluster_mode(sc->redis);
    for (size_t i = 0; i < j->nm; i++) {
        unsigned sh = layout_shard_of(perm_apply(&sc->ps.tables[0], j->m[i].fp));
        /* cluster: the slot of {0:xx} is known to be on our node only when the
         * coordinator sent table 0 of q here and fp shares q's table-0 shard (other
         * keys would cost a -MOVED hop each) */
        if (cl)
            j->m[i].own = j->q0shard >= 0 && sh == (unsigned)j->q0shard;
        else
            j->m[i].own = sh >= sc->cfg.lo && sh <= sc->cfg.hi;
        j->m[i].empty = 0;
        nown += j->m[i].own;
        n += j->m[i].own && !shard_match_has_qdocs(j, i);
    }
    if (nown == 0)
        return 0;
    shard_slot *slots = NULL;
    resp_buf *parts = calloc(j->nm, sizeof *parts);
    if (parts != NULL && n > 0 && n <= sc->cfg.max_inflight_redis &&
        shard_redis_get_state(sc->redis) == SHARD_REDIS_READY &&
        shard_redis_room(sc->redis, n))
        slots = calloc(n, sizeof *slots);
    if (parts == NULL) {
        for (size_t i = 0; i < j->nm; i++)
            j->m[i].own = 0;
        return 0;
    }
    j->parts = parts;
    j->nparts = (unsigned)j->nm;
    for (size_t i = 0; i < j->nm; i++) {
        resp_buf_init(&parts[i], 0);
        if (j->m[i].own && shard_match_has_qdocs(j, i)) {
            parts[i] = j->qdocs;        /* moved: the job frees it with the parts */
            resp_buf_init(&j->qdocs, 0);
            j->m[i].empty = j->qdocs_empty;
        } else if (j->m[i].own && slots == NULL) {
            j->m[i].own = 0;
        }
    }
    if (slots == NULL)
        return 0;
    /* nothing is outstanding (the scan's last reply is being handled): the old
     * slots are no longer referenced */
    free(j->slots);
    j->slots = slots;
    j->nslots = n;
    j->docphase = 1;
    unsigned k = 0;
    for (size_t i = 0; i < j->nm && j->req; i++) {
        if (!j->m[i].own || shard_match_has_qdocs(j, i))
            continue;
        char key[LAYOUT_KEY_MAX];
        uint64_t p0 = perm_apply(&sc->ps.tables[0], j->m[i].fp);
        size_t klen = layout_doc_key(key, sizeof key, j->m[i].fp, p0);
        const char *argv[2] = {"SMEMBERS", key};
        size_t argvlen[2] = {8, klen};
        j->slots[k].job = j;
        j->slots[k].idx = (uint32_t)i;
        shard_job_send(j, k, 2, argv, argvlen);
        k++;
    }
    return 1;
}

/* Writes the job's reply and finishes the request. */
static void shard_job_complete(shard_job *j)
{
    resp_buf *out = rs_req_out(j->req);
    switch (j->kind) {
    case SHARD_JOB_QUERY: {
        if (!j->docphase) {
            if (j->nm > 1)
                qsort(j->m, j->nm, sizeof *j->m, shard_match_cmp);
            size_t n = 0;
            for (size_t i = 0; i < j->nm; i++)
                if (n == 0 || j->m[i].fp != j->m[n - 1].fp)
                    j->m[n++] = j->m[i];
            j->nm = n;
            if (j->withdocs && shard_query_docs_start(j))
                return;
        }
        size_t n = 0;
        for (size_t i = 0; i < j->nm; i++)
            n += !j->m[i].empty;
        j->sc->st.matches += n;
        resp_add_array(out, n);
        for (size_t i = 0; i < j->nm; i++) {
            if (j->m[i].empty)
                continue;
            resp_add_array(out, j->m[i].own ? 3 : 2);
            resp_add_bulk_u64(out, j->m[i].fp);
            resp_add_int(out, j->m[i].dist);
            if (j->m[i].own)
                resp_buf_append(out, j->parts[i].data, j->parts[i].len);
        }
        break;
    }
    case SHARD_JOB_SUM:
        if (j->sum_stat)
            *j->sum_stat += (unsigned long long)j->sum;
        resp_add_int(out, j->sum);
        break;
    case SHARD_JOB_INTS:
        resp_buf_append(out, j->ints.data, j->ints.len);
        break;
    case SHARD_JOB_DOCS:
        resp_add_array(out, j->nslots);
        for (unsigned i = 0; i < j->nslots; i++)
            resp_buf_append(out, j->parts[i].data, j->parts[i].len);
        break;
    case SHARD_JOB_INFO:
        evtimer_del(j->deadline);
        shard_info_reply(j->req, 1, j->fps, j->docs);
        j->req = NULL;
        return;
    }
    evtimer_del(j->deadline);
    rs_req_finish(j->req);
    j->req = NULL;
}

/* Compares two Redis string replies as byte strings (for sorting document ids). */
static int shard_reply_cmp(const void *a, const void *b)
{
    const redisReply *x = *(redisReply *const *)a, *y = *(redisReply *const *)b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->str, y->str, n);
    if (c != 0)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

/* Writes an SMEMBERS reply (an array) to b as an array of ids sorted bytewise.
 * Returns 0, or -1 with why set. */
static int shard_docs_absorb(resp_buf *b, const redisReply *rep, const char **why)
{
    redisReply **v = NULL;
    if (rep->elements) {
        v = malloc(rep->elements * sizeof *v);
        if (v == NULL) {
            *why = "out of memory";
            return -1;
        }
        memcpy(v, rep->element, rep->elements * sizeof *v);
        if (rep->elements > 1)
            qsort(v, rep->elements, sizeof *v, shard_reply_cmp);
    }
    resp_add_array(b, rep->elements);
    for (size_t i = 0; i < rep->elements; i++) {
        if (v[i]->type != REDIS_REPLY_STRING) {
            free(v);
            *why = "unexpected member in a reply to SMEMBERS";
            return -1;
        }
        resp_add_bulk(b, v[i]->str, v[i]->len);
    }
    free(v);
    return 0;
}

/* Folds one Redis reply into the job. Returns 0, or -1 with why set. */
static int shard_job_absorb(shard_job *j, const shard_slot *s, redisReply *rep, const char **why)
{
    shard_ctx *sc = j->sc;
    if (j->kind == SHARD_JOB_QUERY && j->docphase) {
        if (rep->type != REDIS_REPLY_ARRAY) {
            *why = "unexpected reply to SMEMBERS";
            return -1;
        }
        j->m[s->idx].empty = rep->elements == 0;
        return shard_docs_absorb(&j->parts[s->idx], rep, why);
    }
    switch (j->kind) {
    case SHARD_JOB_QUERY: {
        if (s->qdocs) {
            if (rep->type != REDIS_REPLY_ARRAY) {
                *why = "unexpected reply to SMEMBERS";
                return -1;
            }
            j->qdocs_read = 1;
            j->qdocs_empty = rep->elements == 0;
            return shard_docs_absorb(&j->qdocs, rep, why);
        }
        if (rep->type != REDIS_REPLY_ARRAY) {
            *why = "unexpected reply to ZRANGEBYLEX";
            return -1;
        }
        const perm_table *t = &sc->ps.tables[s->table];
        sc->st.candidates += rep->elements;
        for (size_t i = 0; i < rep->elements; i++) {
            const redisReply *e = rep->element[i];
            uint64_t p;
            if (e->type != REDIS_REPLY_STRING ||
                layout_member_decode(e->str, e->len, s->bucket, sc->cfg.bucket_bits, &p) != 0) {
                log_warn_rl("foreign member of length %zu in a bucket of table %u; ignored",
                            e->type == REDIS_REPLY_STRING ? e->len : 0, s->table);
                continue;
            }
            uint64_t fp = perm_revert(t, p);
            unsigned dist = ham_dist(fp, j->q);
            if (dist > j->d)
                continue;
            if (j->nm == j->capm) {
                size_t cap = j->capm ? j->capm * 2 : 16;
                shard_match *nm = realloc(j->m, cap * sizeof *nm);
                if (nm == NULL) {
                    *why = "out of memory";
                    return -1;
                }
                j->m = nm;
                j->capm = cap;
            }
            j->m[j->nm].fp = fp;
            j->m[j->nm].dist = dist;
            j->m[j->nm].own = 0;
            j->m[j->nm].empty = 0;
            j->nm++;
        }
        return 0;
    }
    case SHARD_JOB_SUM:
        if (rep->type != REDIS_REPLY_INTEGER) {
            *why = "unexpected reply (not an integer)";
            return -1;
        }
        j->sum += rep->integer;
        return 0;
    case SHARD_JOB_INTS:
        if (rep->type == REDIS_REPLY_INTEGER) {
            resp_add_int(&j->ints, rep->integer);
            return 0;
        }
        if (rep->type != REDIS_REPLY_ARRAY) {
            *why = "unexpected reply to EVAL";
            return -1;
        }
        resp_add_array(&j->ints, rep->elements);
        for (size_t i = 0; i < rep->elements; i++) {
            if (rep->element[i]->type != REDIS_REPLY_INTEGER) {
                *why = "unexpected element in a reply to EVAL";
                return -1;
            }
            resp_add_int(&j->ints, rep->element[i]->integer);
        }
        return 0;
    case SHARD_JOB_DOCS: {
        if (rep->type != REDIS_REPLY_ARRAY) {
            *why = "unexpected reply to SMEMBERS";
            return -1;
        }
        return shard_docs_absorb(&j->parts[s->idx], rep, why);
    }
    case SHARD_JOB_INFO: {
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
            *why = "unexpected reply to HMGET";
            return -1;
        }
        long long *dst[2] = {&j->fps, &j->docs};
        for (int i = 0; i < 2; i++) {
            const redisReply *e = rep->element[i];
            if (e->type == REDIS_REPLY_STRING && e->len > 0 && e->len < 20)
                *dst[i] += strtoll(e->str, NULL, 10);
        }
        return 0;
    }
    }
    return 0;
}

/* The one place a slot is marked done: every command calls back here exactly once. */
static void shard_on_reply(void *priv, redisReply *reply, const char *err)
{
    shard_slot *s = priv;
    shard_job *j = s->job;
    shard_ctx *sc = j->sc;
    j->pending--;
    if (j->req != NULL) {
        const char *why = NULL;
        if (reply == NULL) {
            shard_job_fail(j, RS_REDIS, &sc->st.lost, err ? err : "connection lost");
        } else if (reply->type == REDIS_REPLY_ERROR) {
            char msg[256];
            snprintf(msg, sizeof msg, "%.*s", (int)reply->len, reply->str);
            shard_job_fail(j, RS_REDIS, &sc->st.redis_err, msg);
        } else if (shard_job_absorb(j, s, reply, &why) != 0) {
            shard_job_fail(j, RS_REDIS, &sc->st.redis_err, why);
        } else if (j->pending == 0) {
            shard_job_complete(j);
        }
    }
    shard_job_release(j);
}

/* ---- Commands ---- */

/* SHARD.HELLO: the settings a coordinator checks before using this worker. */
static void cmd_hello(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    resp_buf *out = rs_req_out(req);
    int cl = shard_redis_cluster_mode(sc->redis);   /* cluster: + 1, node (docs/cluster.md) */
    resp_add_array(out, cl ? 8 : 6);
    resp_add_int(out, sc->cfg.blocks);
    resp_add_int(out, sc->cfg.distance);
    resp_add_int(out, LAYOUT_VERSION);
    resp_add_int(out, sc->cfg.bucket_bits);
    resp_add_int(out, sc->cfg.lo);
    resp_add_int(out, sc->cfg.hi);
    if (cl) {
        resp_add_int(out, 1);
        resp_add_bulk_str(out, shard_redis_node(sc->redis));
    }
    rs_req_finish(req);
}

/* SHARD.QUERY fp d t [t ...] [DOCS] */
static void cmd_query(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    sc->st.requests++;
    sc->st.queries++;
    uint64_t q, dv;
    size_t argc = rs_req_argc(req), len;
    const char *last = rs_req_arg(req, argc - 1, &len);
    int withdocs = len == 4 && strncasecmp(last, "DOCS", 4) == 0;
    if (withdocs && --argc < 4) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "no table given");
        return;
    }
    if (shard_arg_fp(req, 1, &q) != 0)
        return;
    const char *s = rs_req_arg(req, 2, &len);
    const char *why;
    if (parse_uint_range(s, len, 0, sc->cfg.distance, &dv, &why) != 0) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "distance '%.40s': %s", s, why);
        return;
    }
    unsigned ntab = (unsigned)(argc - 3);
    unsigned *tabs = malloc(ntab * sizeof *tabs);
    layout_range *rg = malloc(ntab * sizeof *rg);
    if (!tabs || !rg) {
        free(tabs);
        free(rg);
        shard_oom(req);
        return;
    }
    unsigned long long ncmd = 0;
    for (unsigned i = 0; i < ntab; i++) {
        if (shard_arg_table(req, 3 + i, &tabs[i]) != 0)
            goto out;
        const perm_table *t = &sc->ps.tables[tabs[i]];
        uint64_t p = perm_apply(t, q);
        if (shard_check_owner(req, tabs[i], p) != 0)
            goto out;
        layout_range_init(&rg[i], p, t->prefix_bits, sc->cfg.bucket_bits);
        ncmd += rg[i].nbuckets;
    }
    /* the shard of perm_0(q) when table 0 was asked for: in cluster mode the only
     * table-0 shard known to be on our node */
    uint64_t p0 = perm_apply(&sc->ps.tables[0], q);
    unsigned sh0 = layout_shard_of(p0);
    int q0shard = -1;
    for (unsigned i = 0; i < ntab; i++)
        if (tabs[i] == 0)
            q0shard = (int)sh0;
    /* DOCS: q's own document set is read with the scan when its table-0 shard is
     * ours (q is the usual match: an exact duplicate), saving a round to Redis */
    int qdocs = withdocs && (shard_redis_cluster_mode(sc->redis)
                                 ? q0shard >= 0
                                 : sh0 >= sc->cfg.lo && sh0 <= sc->cfg.hi);
    ncmd += (unsigned)qdocs;
    if (ncmd > UINT32_MAX)
        ncmd = UINT32_MAX;
    if (shard_check_redis(req, (unsigned)ncmd) != 0)
        goto out;
    shard_job *j = shard_job_new(sc, req, SHARD_JOB_QUERY, (unsigned)ncmd);
    if (j == NULL) {
        shard_oom(req);
        goto out;
    }
    j->q = q;
    j->d = (unsigned)dv;
    j->withdocs = withdocs;
    j->q0shard = q0shard;
    unsigned slot = 0;
    for (unsigned i = 0; i < ntab && j->req; i++) {
        for (uint64_t b = 0; b < rg[i].nbuckets && j->req; b++, slot++) {
            char key[LAYOUT_KEY_MAX];
            size_t klen = layout_bucket_key(key, sizeof key, tabs[i], rg[i].first_bucket + b,
                                            sc->cfg.bucket_bits);
            const char *argv[4] = {"ZRANGEBYLEX", key, (const char *)rg[i].lo,
                                   (const char *)rg[i].hi};
            size_t argvlen[4] = {11, klen, rg[i].lo_len, rg[i].hi_len};
            j->slots[slot].table = tabs[i];
            j->slots[slot].bucket = rg[i].first_bucket + b;
            shard_job_send(j, slot, 4, argv, argvlen);
        }
    }
    if (qdocs && j->req) {      /* after the scans, as the separate read would be */
        char key[LAYOUT_KEY_MAX];
        size_t klen = layout_doc_key(key, sizeof key, q, p0);
        const char *argv[2] = {"SMEMBERS", key};
        size_t argvlen[2] = {8, klen};
        j->slots[slot].qdocs = 1;
        shard_job_send(j, slot, 2, argv, argvlen);
    }
    shard_job_release(j);
out:
    free(tabs);
    free(rg);
}

/* SHARD.ADD fp t [t ...] / SHARD.DEL fp t [t ...]: ZADD key 0 member / ZREM key
 * member per table; the reply is the number of entries added / removed. The caller
 * holds fp's write lock (SHARD.LOCK), so entries and document set change together. */
static void cmd_add_del(rs_req *req, int add)
{
    shard_ctx *sc = rs_req_ctx(req);
    sc->st.requests++;
    uint64_t fp;
    size_t argc = rs_req_argc(req);
    if (shard_arg_fp(req, 1, &fp) != 0)
        return;
    unsigned ntab = (unsigned)(argc - 2);
    uint64_t ps[PERM_MAX_TABLES];
    unsigned tabs[PERM_MAX_TABLES];
    if (ntab > sc->ps.ntables) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "%u tables given; the corpus has %zu",
                   ntab, (size_t)sc->ps.ntables);
        return;
    }
    for (unsigned i = 0; i < ntab; i++) {
        if (shard_arg_table(req, 2 + i, &tabs[i]) != 0)
            return;
        ps[i] = perm_apply(&sc->ps.tables[tabs[i]], fp);
        if (shard_check_owner(req, tabs[i], ps[i]) != 0)
            return;
    }
    if (shard_check_redis(req, ntab) != 0)
        return;
    shard_job *j = shard_job_new(sc, req, SHARD_JOB_SUM, ntab);
    if (j == NULL) {
        shard_oom(req);
        return;
    }
    j->sum_stat = add ? &sc->st.added : &sc->st.removed;
    for (unsigned i = 0; i < ntab && j->req; i++) {
        char key[LAYOUT_KEY_MAX];
        uint8_t member[LAYOUT_MEMBER_MAX];
        size_t klen = layout_key_of(key, sizeof key, tabs[i], ps[i], sc->cfg.bucket_bits);
        size_t mlen = layout_member(member, ps[i], sc->cfg.bucket_bits);
        if (add) {
            const char *argv[4] = {"ZADD", key, "0", (const char *)member};
            size_t argvlen[4] = {4, klen, 1, mlen};
            shard_job_send(j, i, 4, argv, argvlen);
        } else {
            const char *argv[3] = {"ZREM", key, (const char *)member};
            size_t argvlen[3] = {4, klen, mlen};
            shard_job_send(j, i, 3, argv, argvlen);
        }
    }
    shard_job_release(j);
}

static void cmd_add(rs_req *req)
{
    cmd_add_del(req, 1);
}

static void cmd_del(rs_req *req)
{
    cmd_add_del(req, 0);
}

/* Longest lock token accepted. */
#define SHARD_TOKEN_MAX 64

/* SHARD.LOCK fp token lease-ms op [docid ...]: one EVAL of LAYOUT_LOCK_LUA on fp's
 * document set (this worker must serve table 0's shard of fp): takes fp's write lock
 * and changes the set (op A: add the ids, R: remove them, X: remove all, F: none,
 * S: none, only a stale lock is taken). Answers the script's reply: [1, ids before,
 * ids after, stale, ids changed] or [0, ms left]. */
static void cmd_lock(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    sc->st.requests++;
    uint64_t fp, lease;
    size_t argc = rs_req_argc(req), tlen, llen, olen;
    const char *token = rs_req_arg(req, 2, &tlen);
    const char *ls = rs_req_arg(req, 3, &llen), *why;
    const char *op = rs_req_arg(req, 4, &olen);
    char dkey[LAYOUT_KEY_MAX], wkey[LAYOUT_KEY_MAX], ckey[LAYOUT_KEY_MAX], field[17];
    if (shard_arg_fp(req, 1, &fp) != 0)
        return;
    if (tlen == 0 || tlen > SHARD_TOKEN_MAX || memchr(token, ':', tlen) != NULL) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "lock token must be 1..%d bytes without ':'",
                   SHARD_TOKEN_MAX);
        return;
    }
    if (parse_u64(ls, llen, &lease, &why) != 0 || lease < 1 || lease > 3600000) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "lease must be 1..3600000 ms");
        return;
    }
    int with_ids = olen == 1 && (op[0] == 'A' || op[0] == 'R');
    int no_ids = olen == 1 && (op[0] == 'X' || op[0] == 'F' || op[0] == 'S');
    if (!with_ids && !no_ids) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "lock operation must be A, R, X, F or S");
        return;
    }
    if (with_ids ? argc < 6 : argc != 5) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "operation %c %s", op[0],
                   with_ids ? "needs at least one document id" : "takes no document id");
        return;
    }
    if (shard_check_docids(req, 5, argc - 5) != 0 || shard_doc_key(req, fp, dkey) != 0 ||
        shard_check_redis(req, 1) != 0)
        return;
    unsigned xx = layout_shard_of(perm_apply(&sc->ps.tables[0], fp));
    layout_lock_key(wkey, sizeof wkey, xx);
    layout_count_key(ckey, sizeof ckey, xx);
    layout_lock_field(field, fp);
    size_t n = argc + 5;     /* EVAL script 3 (3 keys) field token lease op ids... */
    const char **argv = malloc(n * sizeof *argv);
    size_t *argvlen = malloc(n * sizeof *argvlen);
    shard_job *j = argv && argvlen ? shard_job_new(sc, req, SHARD_JOB_INTS, 1) : NULL;
    if (j == NULL) {
        free(argv);
        free(argvlen);
        shard_oom(req);
        return;
    }
    argv[0] = "EVAL";
    argv[1] = LAYOUT_LOCK_LUA;
    argv[2] = "3";
    argv[3] = dkey;
    argv[4] = wkey;
    argv[5] = ckey;
    argv[6] = field;
    for (size_t i = 0; i < 7; i++)
        argvlen[i] = strlen(argv[i]);
    for (size_t i = 2; i < argc; i++)
        argv[5 + i] = rs_req_arg(req, i, &argvlen[5 + i]);
    shard_job_send(j, 0, (int)n, argv, argvlen);
    free(argv);
    free(argvlen);
    shard_job_release(j);
}

/* SHARD.UNLOCK fp token [ABANDON]: releases fp's write lock when token holds it
 * (ABANDON: makes it stale instead, for a writer that failed half-way); answers 1,
 * or 0 when the lock was lost (its lease ran out and another writer took it over). */
static void cmd_unlock(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    sc->st.requests++;
    uint64_t fp;
    size_t tlen;
    const char *token = rs_req_arg(req, 2, &tlen);
    char dkey[LAYOUT_KEY_MAX], wkey[LAYOUT_KEY_MAX], field[17];
    size_t alen = 0;
    const char *ab = rs_req_argc(req) > 3 ? rs_req_arg(req, 3, &alen) : NULL;
    if (rs_req_argc(req) > 4 || (ab && (alen != 7 || strncasecmp(ab, "ABANDON", 7) != 0))) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "expected SHARD.UNLOCK fp token [ABANDON]");
        return;
    }
    if (shard_arg_fp(req, 1, &fp) != 0 || shard_doc_key(req, fp, dkey) != 0 ||
        shard_check_redis(req, 1) != 0)
        return;
    layout_lock_key(wkey, sizeof wkey, layout_shard_of(perm_apply(&sc->ps.tables[0], fp)));
    layout_lock_field(field, fp);
    shard_job *j = shard_job_new(sc, req, SHARD_JOB_INTS, 1);
    if (j == NULL) {
        shard_oom(req);
        return;
    }
    const char *argv[7] = {"EVAL", LAYOUT_UNLOCK_LUA, "1", wkey, field, token, "abandon"};
    size_t argvlen[7] = {4, strlen(LAYOUT_UNLOCK_LUA), 1, strlen(wkey), 16, tlen, 7};
    shard_job_send(j, 0, ab ? 7 : 6, argv, argvlen);
    shard_job_release(j);
}

/* SHARD.DOCS fp [fp ...]: SMEMBERS per fingerprint, ids sorted bytewise. */
static void cmd_docs(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    sc->st.requests++;
    unsigned n = (unsigned)(rs_req_argc(req) - 1);
    char (*keys)[LAYOUT_KEY_MAX] = malloc(n * sizeof *keys);
    if (keys == NULL) {
        shard_oom(req);
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        uint64_t fp;
        if (shard_arg_fp(req, 1 + i, &fp) != 0 || shard_doc_key(req, fp, keys[i]) != 0)
            goto out;
    }
    if (shard_check_redis(req, n) != 0)
        goto out;
    shard_job *j = shard_job_new(sc, req, SHARD_JOB_DOCS, n);
    if (j == NULL) {
        shard_oom(req);
        goto out;
    }
    for (unsigned i = 0; i < n && j->req; i++) {
        const char *argv[2] = {"SMEMBERS", keys[i]};
        shard_job_send(j, i, 2, argv, NULL);
    }
    shard_job_release(j);
out:
    free(keys);
}

/* SHARD.INFO: reads the Redis node's INFO (memory, role) and the counter hash of
 * every shard served (HMGET c:{0:xx}), then answers; without Redis it answers at
 * once, the counts and memory "unknown". The INFO goes first on the connection, so
 * its reply is kept before the counts complete the answer. */
static void cmd_info(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    unsigned n = sc->cfg.hi - sc->cfg.lo + 1;
    if (shard_redis_get_state(sc->redis) != SHARD_REDIS_READY ||
        !shard_redis_room(sc->redis, n + 1)) {
        if (shard_redis_get_state(sc->redis) != SHARD_REDIS_READY)
            sc->redis_used_memory = sc->redis_role = -1;
        shard_info_reply(req, 0, 0, 0);
        return;
    }
    const char *iargv[1] = {"INFO"};
    if (shard_redis_command(sc->redis, shard_on_redis_info, sc, 1, iargv, NULL) != 0)
        sc->redis_used_memory = sc->redis_role = -1;
    shard_job *j = shard_job_new(sc, req, SHARD_JOB_INFO, n);
    if (j == NULL) {
        shard_oom(req);
        return;
    }
    for (unsigned i = 0; i < n && j->req; i++) {
        char ckey[LAYOUT_KEY_MAX];
        layout_count_key(ckey, sizeof ckey, sc->cfg.lo + i);
        const char *argv[4] = {"HMGET", ckey, "fingerprints", "documents"};
        shard_job_send(j, i, 4, argv, NULL);
    }
    shard_job_release(j);
}

const rs_command shard_commands[] = {
    {"SHARD.HELLO", 1, 0, cmd_hello},
    {"SHARD.QUERY", -4, 0, cmd_query},
    {"SHARD.ADD", -3, 0, cmd_add},
    {"SHARD.DEL", -3, 0, cmd_del},
    {"SHARD.LOCK", -5, 0, cmd_lock},
    {"SHARD.UNLOCK", -3, 0, cmd_unlock},
    {"SHARD.DOCS", -2, 0, cmd_docs},
    {"SHARD.INFO", 1, 0, cmd_info},
    {"SHARD.WAIT", 1, 0, shard_cmd_wait},
};
const size_t shard_ncommands = sizeof shard_commands / sizeof shard_commands[0];
