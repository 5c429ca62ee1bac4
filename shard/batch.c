/* batch.c: the batched write commands of simhash-shard (docs/protocol.md, "Batched
 * writes"): SHARD.MLOCK, SHARD.MUNLOCK, SHARD.MADD and SHARD.MDEL carry many
 * fingerprints in one request, so that a coordinator's write round costs one request
 * per worker rather than one per fingerprint, and the worker sends Redis fewer calls:
 *   MLOCK        one lock script call per fingerprint, pipelined; each fingerprint
 *                keeps its own lock and gets its own reply. One whose table-0 bucket
 *                split under it (nothing written) answers [0, 0]: "busy, try again",
 *                and only it is sent again by the coordinator.
 *   MUNLOCK      one script call releasing every lock (one Redis); in a Redis Cluster
 *                one call per fingerprint (lock hashes of shards lie in other slots).
 *   MADD / MDEL  the table writes of every fingerprint: one plain ZADD / ZREM per
 *                entry, pipelined, and the split call of a bucket whose count (from
 *                the ZADD replies) reached the split limit. They are idempotent: a
 *                batch that met a tombstone (WRONGTYPE) runs again whole once the
 *                directory is read again (docs/protocol.md, "Plain table writes").
 * Every argument is checked before anything is sent: a malformed batch is answered
 * with an error and writes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "layout.h"
#include "log.h"
#include "parse.h"
#include "shard.h"

#define SHARD_MBATCH_MAX 4096   /* fingerprints in one batched request */
#define SHARD_TOKEN_MAX 64      /* as SHARD.LOCK's */

/* ---- Replies per fingerprint ---- */

/* MINTS: per fingerprint a short array of integers (a lock or unlock script's reply),
 * answered as an array of them in the request's order. */
typedef struct shard_mints {
    unsigned n;
    int whole;                  /* one reply holds every item's integer (MUNLOCK) */
    struct { uint8_t len; long long v[5]; } *r;
} shard_mints;

static void shard_mints_free(void *p)
{
    shard_mints *m = p;
    if (m) {
        free(m->r);
        free(m);
    }
}

static int shard_mints_absorb(shard_job *j, const shard_slot *s, redisReply *rep,
                              const char **why)
{
    shard_mints *m = j->state;
    if (m->whole) {
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != m->n)
            goto bad;
        for (unsigned i = 0; i < m->n; i++) {
            if (rep->element[i]->type != REDIS_REPLY_INTEGER)
                goto bad;
            m->r[i].len = 0;        /* an integer, not an array */
            m->r[i].v[0] = rep->element[i]->integer;
        }
        return 0;
    }
    SH_ASSERT(s->idx < m->n);
    if (rep->type == REDIS_REPLY_INTEGER) {
        m->r[s->idx].len = 0;
        m->r[s->idx].v[0] = rep->integer;
        return 0;
    }
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 || rep->elements > 5)
        goto bad;
    for (size_t i = 0; i < rep->elements; i++) {
        if (rep->element[i]->type != REDIS_REPLY_INTEGER)
            goto bad;
        m->r[s->idx].v[i] = rep->element[i]->integer;
    }
    m->r[s->idx].len = (uint8_t)rep->elements;
    return 0;
bad:
    *why = "unexpected reply to a lock script";
    return -1;
}

/* A lock whose table-0 bucket split under it wrote nothing: "busy, 0 ms left". */
static void shard_mints_stale(shard_job *j, const shard_slot *s)
{
    shard_mints *m = j->state;
    m->r[s->idx].len = 2;
    m->r[s->idx].v[0] = 0;
    m->r[s->idx].v[1] = 0;
}

static void shard_mints_done(shard_job *j)
{
    shard_mints *m = j->state;
    resp_buf *out = rs_req_out(j->req);
    resp_add_array(out, m->n);
    for (unsigned i = 0; i < m->n; i++) {
        if (m->r[i].len == 0) {
            resp_add_int(out, m->r[i].v[0]);
            continue;
        }
        resp_add_array(out, m->r[i].len);
        for (unsigned k = 0; k < m->r[i].len; k++)
            resp_add_int(out, m->r[i].v[k]);
    }
    shard_job_answer(j);
}

static const shard_job_ops shard_mints_ops = {shard_mints_absorb, shard_mints_done, NULL,
                                              shard_mints_free, shard_mints_stale};

static shard_mints *shard_mints_new(unsigned n)
{
    shard_mints *m = calloc(1, sizeof *m);
    if (m && (m->r = calloc(n ? n : 1, sizeof *m->r)) == NULL) {
        free(m);
        return NULL;
    }
    if (m)
        m->n = n;
    return m;
}

/* ---- Argument checks ---- */

/* Checks argument i as a lock token (1..SHARD_TOKEN_MAX bytes, no ':' nor NUL) and
 * copies it NUL-terminated into tok. Returns 0, or -1 answered. */
static int shard_arg_token(rs_req *req, size_t i, char tok[SHARD_TOKEN_MAX + 1])
{
    shard_ctx *sc = rs_req_ctx(req);
    size_t len;
    const char *t = rs_req_arg(req, i, &len);
    if (len == 0 || len > SHARD_TOKEN_MAX || memchr(t, ':', len) || memchr(t, '\0', len)) {
        shard_fail(req, RS_ERR, &sc->st.bad_args,
                   "lock token must be 1..%d bytes without ':' or NUL", SHARD_TOKEN_MAX);
        return -1;
    }
    memcpy(tok, t, len);
    tok[len] = '\0';
    return 0;
}

/* Argument i as a count of at most max. Returns 0, or -1 answered. */
static int shard_arg_count(rs_req *req, size_t i, unsigned long long max, size_t *n)
{
    shard_ctx *sc = rs_req_ctx(req);
    size_t len;
    const char *s = rs_req_arg(req, i, &len), *why;
    uint64_t v;
    if (parse_u64(s, len, &v, &why) != 0 || v > max) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "count must be an integer 0..%llu", max);
        return -1;
    }
    *n = (size_t)v;
    return 0;
}

/* 1 when req holds more fingerprints than a batch may (answered), else 0. */
static int shard_batch_too_many(rs_req *req, size_t n)
{
    shard_ctx *sc = rs_req_ctx(req);
    if (n <= SHARD_MBATCH_MAX)
        return 0;
    shard_fail(req, RS_ERR, &sc->st.bad_args, "more than %d fingerprints in one batch",
               SHARD_MBATCH_MAX);
    return 1;
}

/* ---- SHARD.MLOCK ---- */

typedef struct shard_mlock_item {
    uint64_t fp, p0;
    size_t tok, ids, nids;      /* argument indexes of the token and the ids */
    char op;
} shard_mlock_item;

/* Parses `lease fp token op nids [id ...] ...` into it[] (at most cap). Returns the
 * number of items, or -1 answered. */
static long shard_mlock_parse(rs_req *req, shard_mlock_item *it, size_t cap,
                              uint64_t *lease)
{
    shard_ctx *sc = rs_req_ctx(req);
    size_t argc = rs_req_argc(req), len, n = 0, i = 2;
    const char *ls = rs_req_arg(req, 1, &len), *why;
    char tok[SHARD_TOKEN_MAX + 1], dkey[LAYOUT_KEY_MAX];
    if (parse_u64(ls, len, lease, &why) != 0 || *lease < 1 || *lease > 3600000) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "lease must be 1..3600000 ms");
        return -1;
    }
    while (i < argc) {
        if (shard_batch_too_many(req, n + 1))
            return -1;
        SH_ASSERT(n < cap);         /* an item takes at least 4 arguments */
        shard_mlock_item *x = &it[n];
        if (i + 4 > argc) {
            shard_fail(req, RS_ERR, &sc->st.bad_args,
                       "expected SHARD.MLOCK lease-ms fp token op nids [docid ...] ...");
            return -1;
        }
        const char *op = rs_req_arg(req, i + 2, &len);
        if (shard_arg_fp(req, i, &x->fp) != 0 || shard_doc_key(req, x->fp, dkey) != 0 ||
            shard_arg_token(req, i + 1, tok) != 0 ||
            shard_arg_count(req, i + 3, argc - i - 4, &x->nids) != 0)
            return -1;
        int with_ids = len == 1 && (op[0] == 'A' || op[0] == 'R');
        int no_ids = len == 1 && (op[0] == 'X' || op[0] == 'F' || op[0] == 'S');
        if ((!with_ids && !no_ids) || (with_ids ? x->nids == 0 : x->nids != 0)) {
            shard_fail(req, RS_ERR, &sc->st.bad_args, "lock operation must be A or R with "
                       "document ids, or X, F or S without");
            return -1;
        }
        if (shard_check_docids(req, i + 4, x->nids) != 0)
            return -1;
        x->op = op[0];
        x->tok = i + 1;
        x->ids = i + 4;
        x->p0 = perm_apply(&sc->ps.tables[0], x->fp);
        i += 4 + x->nids;
        n++;
    }
    return (long)n;
}

/* Sends item k's lock script call on slot k. Returns 0, or -1 (the job answered). */
static int shard_mlock_send(shard_job *j, const shard_mlock_item *x, unsigned k, uint64_t lease)
{
    shard_ctx *sc = j->sc;
    rs_req *req = j->req;
    char tok[SHARD_TOKEN_MAX + 1], opz[2] = {x->op, '\0'};
    size_t tlen;
    const char *t = rs_req_arg(req, x->tok, &tlen);
    memcpy(tok, t, tlen);
    tok[tlen] = '\0';
    layout_cmd lc;
    sc->lay.ops->lock(&sc->lay, x->fp, x->p0, tok, lease, opz, &lc);
    size_t n = (size_t)lc.argc + x->nids;
    const char **argv = malloc(n * sizeof *argv);
    size_t *lens = malloc(n * sizeof *lens);
    int rc = -1;
    if (argv && lens) {
        memcpy(argv, lc.argv, (size_t)lc.argc * sizeof *argv);
        memcpy(lens, lc.argvlen, (size_t)lc.argc * sizeof *lens);
        for (size_t i = 0; i < x->nids; i++)
            argv[(size_t)lc.argc + i] = rs_req_arg(req, x->ids + i, &lens[(size_t)lc.argc + i]);
        j->slots[k].dir = shard_dir_id(0, layout_shard_of(x->p0));
        rc = shard_job_send(j, k, (int)n, argv, lens);
    } else {
        shard_job_fail(j, RS_OOM, NULL, "out of memory");
    }
    free(argv);
    free(lens);
    return rc;
}

/* SHARD.MLOCK lease-ms fp token op nids [docid ...] [fp token op nids [docid ...] ...]:
 * SHARD.LOCK of every fingerprint (this worker serves table 0's shard of each), one
 * lock script call each; answers an array holding each one's reply in order. */
void shard_cmd_mlock(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    sc->st.requests++;
    size_t cap = rs_req_argc(req) / 4 + 1;
    uint64_t lease;
    shard_mlock_item *it = malloc(cap * sizeof *it);
    uint32_t *dirs = malloc(cap * sizeof *dirs);
    shard_mints *m = NULL;
    shard_job *j = NULL;
    long n = it && dirs ? shard_mlock_parse(req, it, cap, &lease) : -2;
    if (n == -2)
        shard_oom(req);
    if (n <= 0) {
        if (n == 0)
            shard_fail(req, RS_ERR, &sc->st.bad_args, "no fingerprint");
        goto out;
    }
    for (long k = 0; k < n; k++)
        dirs[k] = shard_dir_id(0, layout_shard_of(it[k].p0));
    if (shard_dirs_ready(req, shard_cmd_mlock, dirs, (unsigned)n) != 1 ||
        shard_check_redis(req, (unsigned)n) != 0)
        goto out;
    m = shard_mints_new((unsigned)n);
    j = m ? shard_job_new(sc, req, &shard_mints_ops, m, (unsigned)n) : NULL;
    if (j == NULL) {
        shard_mints_free(m);
        shard_oom(req);
        goto out;
    }
    for (long k = 0; k < n && j->req; k++)
        if (shard_mlock_send(j, &it[k], (unsigned)k, lease) != 0)
            break;
    shard_job_release(j);
out:
    free(it);
    free(dirs);
}

/* ---- SHARD.MUNLOCK ---- */

/* SHARD.MUNLOCK fp token [fp token ...]: releases each fingerprint's lock when its
 * token holds it; answers an array of 1 (released) or 0 (lost), in order. */
void shard_cmd_munlock(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    sc->st.requests++;
    size_t argc = rs_req_argc(req), n = (argc - 1) / 2;
    if (argc % 2 == 0) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "expected SHARD.MUNLOCK fp token [fp token ...]");
        return;
    }
    if (shard_batch_too_many(req, n))
        return;
    int cluster = shard_redis_cluster_mode(sc->redis);
    char (*keys)[LAYOUT_KEY_MAX] = malloc(n * sizeof *keys);
    char (*fields)[17] = malloc(n * sizeof *fields);
    const char **argv = malloc((3 + 3 * n) * sizeof *argv);
    size_t *lens = malloc((3 + 3 * n) * sizeof *lens);
    shard_mints *m = keys && fields && argv && lens ? shard_mints_new((unsigned)n) : NULL;
    if (m == NULL) {
        shard_oom(req);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t fp;
        char tok[SHARD_TOKEN_MAX + 1], dkey[LAYOUT_KEY_MAX];
        if (shard_arg_fp(req, 1 + 2 * i, &fp) != 0 || shard_doc_key(req, fp, dkey) != 0 ||
            shard_arg_token(req, 2 + 2 * i, tok) != 0)
            goto out;
        layout_lock_key(keys[i], LAYOUT_KEY_MAX,
                        layout_shard_of(perm_apply(&sc->ps.tables[0], fp)));
        layout_lock_field(fields[i], fp);
    }
    if (shard_check_redis(req, cluster ? (unsigned)n : 1) != 0)
        goto out;
    m->whole = !cluster;
    shard_job *j = shard_job_new(sc, req, &shard_mints_ops, m, cluster ? (unsigned)n : 1);
    if (j == NULL) {
        shard_oom(req);
        goto out;
    }
    m = NULL;                   /* the job's now */
    const char *script = cluster ? LAYOUT_UNLOCK_LUA : LAYOUT_UNLOCKS_LUA;
    size_t per = cluster ? 1 : n, nk;
    char nkeys[24];
    for (size_t at = 0; at < n && j->req; at += per) {
        nk = (size_t)snprintf(nkeys, sizeof nkeys, "%zu", per);
        size_t a = 0;
        argv[a] = "EVAL", lens[a++] = 4;
        argv[a] = script, lens[a++] = strlen(script);
        argv[a] = nkeys, lens[a++] = nk;
        for (size_t i = at; i < at + per; i++)
            argv[a] = keys[i], lens[a++] = strlen(keys[i]);
        for (size_t i = at; i < at + per; i++) {
            argv[a] = fields[i], lens[a++] = 16;
            argv[a] = rs_req_arg(req, 2 + 2 * i, &lens[a]);
            a++;
        }
        j->slots[at / per].idx = (uint32_t)(at / per);
        shard_job_send(j, (unsigned)(at / per), (int)a, argv, lens);
    }
    shard_job_release(j);
out:
    shard_mints_free(m);
    free(keys);
    free(fields);
    free(argv);
    free(lens);
}

/* ---- SHARD.MADD / SHARD.MDEL ---- */

/* The entries of a batched table write: (table, permuted value) of every item, each
 * one plain command (layout_ops.h, plain: ZADD or ZREM on its bucket), all sent at
 * once. A ZADD's reply counts into its bucket's count (plain_count); when that asks
 * for it, the bucket's split call goes on the entry's second slot (n + i), after the
 * ZADDs already sent, so its size includes them. A command that met a bucket split
 * since its directory was read (WRONGTYPE: the key is a tombstone) makes the request
 * run again whole once the directory is read again: ZADD and ZREM are idempotent, and
 * the caller holds every fingerprint's lock. */
typedef struct shard_madd {
    long long sum;
    unsigned long long *stat;
    size_t n;                   /* entries; slots n..2n-1 are their split calls */
    int add;                    /* MADD (else MDEL) */
    unsigned *tabs;
    uint64_t *ps;
} shard_madd;

static void shard_madd_free(void *p)
{
    shard_madd *a = p;
    if (a) {
        free(a->tabs);
        free(a->ps);
        free(a);
    }
}

/* Sends entry i's split call on slot n + i. */
static void shard_madd_split(shard_job *j, shard_madd *a, size_t i)
{
    layout_cmd sc;
    j->sc->lay.ops->split(&j->sc->lay, a->tabs[i], a->ps[i], &sc);
    j->sc->st.split_calls++;
    shard_job_send(j, (unsigned)(a->n + i), sc.argc, sc.argv, sc.argvlen);
}

static int shard_madd_absorb(shard_job *j, const shard_slot *s, redisReply *rep,
                             const char **why)
{
    shard_madd *a = j->state;
    const layout_ops *ops = j->sc->lay.ops;
    if (s->idx >= a->n) {       /* a split call: its points are learnt, now its size */
        size_t i = s->idx - a->n;
        if (ops->split_reply(&j->sc->lay, a->tabs[i], a->ps[i], rep) != 0)
            goto bad;
        return 0;
    }
    long long n = 0;
    if (layout_write_count(rep, &n) != 0)
        goto bad;
    a->sum += n;
    if (a->add && ops->plain_count(&j->sc->lay, a->tabs[s->idx], a->ps[s->idx], n))
        shard_madd_split(j, a, s->idx);
    return 0;
bad:
    *why = "unexpected reply to a table write";
    return -1;
}

/* A command that met a bucket split since its directory was read wrote nothing: the
 * directory is marked for reading, and the request runs again whole after it (a split
 * call that met one leaves its bucket without a count: the next write asks again). */
static void shard_madd_stale(shard_job *j, const shard_slot *s)
{
    shard_madd *a = j->state;
    if (s->idx >= a->n) {
        size_t i = s->idx - a->n;
        j->sc->lay.ops->split_reply(&j->sc->lay, a->tabs[i], a->ps[i], NULL);
        return;
    }
    j->stale = 1;
}

static void shard_madd_done(shard_job *j)
{
    shard_madd *a = j->state;
    *a->stat += (unsigned long long)a->sum;
    resp_add_int(rs_req_out(j->req), a->sum);
    shard_job_answer(j);
}

static const shard_job_ops shard_madd_ops = {shard_madd_absorb, shard_madd_done, NULL,
                                             shard_madd_free, shard_madd_stale};

/* Parses `fp ntables t [t ...] ...` into a's entries (dirs: their directories).
 * Returns 0, or -1 answered. */
static int shard_madd_parse(rs_req *req, shard_madd *a, uint32_t *dirs, size_t cap)
{
    shard_ctx *sc = rs_req_ctx(req);
    size_t argc = rs_req_argc(req), i = 1, nfp = 0;
    while (i < argc) {
        uint64_t fp;
        size_t nt;
        if (shard_batch_too_many(req, ++nfp))
            return -1;
        if (i + 2 > argc) {
            shard_fail(req, RS_ERR, &sc->st.bad_args,
                       "expected SHARD.MADD fp ntables table [table ...] ...");
            return -1;
        }
        if (shard_arg_fp(req, i, &fp) != 0 ||
            shard_arg_count(req, i + 1, sc->ps.ntables, &nt) != 0)
            return -1;
        if (nt == 0 || i + 2 + nt > argc) {
            shard_fail(req, RS_ERR, &sc->st.bad_args, "fingerprint %zu: ntables must be "
                       "1..%u and the tables must follow", nfp, (unsigned)sc->ps.ntables);
            return -1;
        }
        SH_ASSERT(a->n + nt <= cap);    /* a table takes one argument */
        for (size_t k = 0; k < nt; k++) {
            unsigned t;
            if (shard_arg_table(req, i + 2 + k, &t) != 0)
                return -1;
            uint64_t p = perm_apply(&sc->ps.tables[t], fp);
            if (shard_check_owner(req, t, p) != 0)
                return -1;
            if (t < sc->lay.ops->entry_from)
                continue;       /* the lock script wrote it (layout_ops.h) */
            dirs[a->n] = shard_dir_id(t, layout_shard_of(p));
            a->tabs[a->n] = t;
            a->ps[a->n++] = p;
        }
        i += 2 + nt;
    }
    return 0;
}

/* Sends a's entries, one plain command each, pipelined. */
static void shard_madd_send(shard_job *j, shard_madd *a, int add, uint32_t *dirs)
{
    shard_ctx *sc = j->sc;
    for (size_t k = 0; k < a->n && j->req; k++) {
        j->slots[k].idx = (uint32_t)k;
        j->slots[k].dir = dirs[k];      /* a tombstone's WRONGTYPE marks it (job.h) */
        j->slots[a->n + k].idx = (uint32_t)(a->n + k);
        j->slots[a->n + k].dir = dirs[k];
        layout_cmd ec;
        sc->lay.ops->plain(&sc->lay, a->tabs[k], a->ps[k], add, &ec);
        shard_job_send(j, (unsigned)k, ec.argc, ec.argv, ec.argvlen);
    }
}

/* SHARD.MADD / MDEL fp ntables table [table ...] [fp ntables table ...]: SHARD.ADD /
 * DEL of every fingerprint (the caller holds each one's lock); answers the number of
 * entries added / removed. */
static void shard_cmd_madd_mdel(rs_req *req, int add)
{
    shard_ctx *sc = rs_req_ctx(req);
    sc->st.requests++;
    size_t cap = rs_req_argc(req);
    shard_madd *a = calloc(1, sizeof *a);
    uint32_t *dirs = malloc(cap * sizeof *dirs);
    if (a)
        a->tabs = malloc(cap * sizeof *a->tabs), a->ps = malloc(cap * sizeof *a->ps);
    if (a == NULL || dirs == NULL || a->tabs == NULL || a->ps == NULL) {
        shard_oom(req);
        goto out;
    }
    rs_cmd_fn self = add ? shard_cmd_madd : shard_cmd_mdel;
    if (shard_madd_parse(req, a, dirs, cap) != 0)
        goto out;
    if (a->n == 0) {            /* only entries the lock script writes */
        resp_add_int(rs_req_out(req), 0);
        rs_req_finish(req);
        goto out;
    }
    if (shard_dirs_ready(req, self, dirs, (unsigned)a->n) != 1 ||
        shard_check_redis(req, (unsigned)a->n) != 0)
        goto out;
    a->add = add;
    a->stat = add ? &sc->st.added : &sc->st.removed;
    /* a slot per entry and one for its split call */
    shard_job *j = shard_job_new(sc, req, &shard_madd_ops, a, (unsigned)(2 * a->n));
    if (j == NULL) {
        shard_oom(req);
        goto out;
    }
    a = NULL;                   /* the job's now */
    j->rerun = self;
    shard_madd_send(j, j->state, add, dirs);
    shard_job_release(j);
out:
    shard_madd_free(a);
    free(dirs);
}

void shard_cmd_madd(rs_req *req)
{
    shard_cmd_madd_mdel(req, 1);
}

void shard_cmd_mdel(rs_req *req)
{
    shard_cmd_madd_mdel(req, 0);
}
