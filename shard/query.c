/* query.c: SHARD.QUERY fp d t [t ...] [DOCS] of simhash-shard (docs/protocol.md),
 * read top to bottom:
 *
 *   shard_cmd_query        checks the arguments, sends one ZRANGEBYLEX per bucket of
 *                          every table asked for (and, with DOCS, the read of q's own
 *                          ids behind them: its table-0 member): the scan job
 *   shard_query_absorb     keeps every member within distance d (reverted to its
 *                          fingerprint)
 *   shard_query_scanned    the scan is done: matches sorted and unique; with DOCS,
 *                          the document ids of the matches whose table-0 shard this
 *                          worker serves are read by a second job (the docs job)
 *   shard_query_docs_absorb   the reads of ids per match (layout_ops ids_read)
 *   shard_query_answer     [fp, dist] or [fp, dist, [docid ...]] per match, those whose
 *                          document set turned out empty left out */
#include <stdlib.h>
#include <string.h>

#include "hamming.h"
#include "job.h"
#include "layout.h"
#include "log.h"
#include "parse.h"

typedef struct shard_match {
    uint64_t fp;
    unsigned dist;
    uint8_t own;           /* DOCS: document ids read (table 0's shard is ours) */
    uint8_t empty;         /* DOCS: its document set is empty (dropped) */
} shard_match;

typedef struct shard_query {
    uint64_t q;
    unsigned d;
    shard_match *m;
    size_t nm, capm;
    int withdocs;          /* SHARD.QUERY ... DOCS */
    int q0shard;           /* shard of perm_0(q) when table 0 was asked for, else -1 */
    int qdocs_read;        /* q's document set was read with the scan (into qdocs) */
    int qdocs_empty;       /* ... and it is empty */
    resp_buf qdocs;
    resp_buf *parts;       /* DOCS: the ids of match i, as RESP */
    size_t nparts;
    shard_ids *ids;        /* the docs job: what its reads of match i gave */
} shard_query;

static void shard_query_free(void *p)
{
    shard_query *qs = p;
    for (size_t i = 0; i < qs->nparts; i++) {
        resp_buf_free(&qs->parts[i]);
        if (qs->ids)
            shard_ids_free(&qs->ids[i]);
    }
    free(qs->parts);
    free(qs->ids);
    resp_buf_free(&qs->qdocs);
    free(qs->m);
    free(qs);
}

static int shard_query_absorb(shard_job *j, const shard_slot *s, redisReply *rep,
                              const char **why);
static void shard_query_scanned(shard_job *j);
static int shard_query_docs_absorb(shard_job *j, const shard_slot *s, redisReply *rep,
                                   const char **why);
static void shard_query_answer(shard_job *j);

static const shard_job_ops shard_query_scan_ops = {
    shard_query_absorb, shard_query_scanned, NULL, shard_query_free, NULL,
};
static void shard_query_docs_done(shard_job *j);
static const shard_job_ops shard_query_docs_ops = {
    shard_query_docs_absorb, shard_query_docs_done, NULL, shard_query_free, NULL,
};

/* ---- The scan ---- */

/* SHARD.QUERY fp d t [t ...] [DOCS] */
void shard_cmd_query(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    sc->st.requests++;
    sc->st.queries++;
    uint64_t q, dv;
    size_t argc = rs_req_argc(req), len;
    const char *last = rs_req_arg(req, argc - 1, &len);
    int withdocs = resp_word_is(last, len, "DOCS");
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
    layout_plan *rg = malloc(ntab * sizeof *rg);
    uint32_t *dirs = malloc((ntab + 1) * sizeof *dirs);
    shard_query *qs = calloc(1, sizeof *qs);
    if (!tabs || !rg || !dirs || !qs) {
        free(tabs);
        free(rg);
        free(dirs);
        free(qs);
        shard_oom(req);
        return;
    }
    resp_buf_init(&qs->qdocs, 0);
    unsigned long long ncmd = 0;
    for (unsigned i = 0; i < ntab; i++) {
        if (shard_arg_table(req, 3 + i, &tabs[i]) != 0)
            goto out;
        const perm_table *t = &sc->ps.tables[tabs[i]];
        uint64_t p = perm_apply(t, q);
        if (shard_check_owner(req, tabs[i], p) != 0)
            goto out;
        dirs[i] = shard_dir_id(tabs[i], layout_shard_of(p));
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
    dirs[ntab] = qdocs ? shard_dir_id(0, sh0) : 0;
    if (shard_dirs_ready(req, shard_cmd_query, dirs, ntab + 1) != 1)
        goto out;
    for (unsigned i = 0; i < ntab; i++) {
        const perm_table *t = &sc->ps.tables[tabs[i]];
        sc->lay.ops->plan(&sc->lay, tabs[i], perm_apply(t, q), t->prefix_bits, &rg[i]);
        ncmd += rg[i].nreads;
    }
    ncmd += (unsigned)qdocs;
    if (ncmd > UINT32_MAX)
        ncmd = UINT32_MAX;
    if (shard_check_redis(req, (unsigned)ncmd) != 0)
        goto out;
    qs->q = q;
    qs->d = (unsigned)dv;
    qs->withdocs = withdocs;
    qs->q0shard = q0shard;
    shard_job *j = shard_job_new(sc, req, &shard_query_scan_ops, qs, (unsigned)ncmd);
    if (j == NULL) {
        shard_oom(req);
        goto out;
    }
    qs = NULL;                  /* the job's now */
    j->rerun = shard_cmd_query;
    unsigned slot = 0;
    for (unsigned i = 0; i < ntab && j->req; i++) {
        for (uint64_t b = 0; b < rg[i].nreads && j->req; b++, slot++) {
            layout_read rd;
            sc->lay.ops->plan_read(&sc->lay, &rg[i], b, &rd);
            const char *argv[4] = {"ZRANGEBYLEX", rd.key, (const char *)rd.lo,
                                   (const char *)rd.hi};
            size_t argvlen[4] = {strlen(argv[0]), rd.klen, rd.lo_len, rd.hi_len};
            j->slots[slot].table = tabs[i];
            j->slots[slot].bucket = rd.tag;
            j->slots[slot].dir = shard_dir_id(tabs[i], rg[i].shard);
            shard_job_send(j, slot, 4, argv, argvlen);
        }
    }
    if (qdocs && j->req) {      /* after the scans, as the separate read would be */
        layout_cmd dc;     /* the layout's first read of ids (the table-0 member; ids in
                            * an overflow set go to the docs job) */
        layout_ids_kind kind;
        sc->lay.ops->ids_read(&sc->lay, 0, q, p0, &dc, &kind);
        j->slots[slot].qdocs = 1;
        j->slots[slot].part = (uint8_t)kind;
        j->slots[slot].dir = shard_dir_id(0, sh0);
        shard_job_send(j, slot, dc.argc, dc.argv, dc.argvlen);
    }
    shard_job_release(j);
out:
    if (qs)
        shard_query_free(qs);
    free(tabs);
    free(rg);
    free(dirs);
}

/* One reply of the scan: a ZRANGEBYLEX (members within distance d kept) or the
 * SMEMBERS of q's own document set. */
static int shard_query_absorb(shard_job *j, const shard_slot *s, redisReply *rep,
                              const char **why)
{
    shard_ctx *sc = j->sc;
    shard_query *qs = j->state;
    if (s->qdocs) {
        redisReply tmp;
        const redisReply *r = shard_ids_as_packed(s->part, rep, &tmp);
        if (r == NULL) {
            *why = "unexpected reply to a read of a table-0 member";
            return -1;
        }
        if (r->type == REDIS_REPLY_STRING && r->len == 0)
            return 0;   /* q's ids are in its overflow set; read like a match's */
        qs->qdocs_read = 1;
        qs->qdocs_empty = shard_reply_docs_empty(r);
        return shard_reply_docs(&qs->qdocs, r, why);
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
            sc->lay.ops->member_decode(&sc->lay, s->bucket, e->str, e->len, &p) != 0) {
            log_warn_rl("foreign member of length %zu in a bucket of table %u; ignored",
                        e->type == REDIS_REPLY_STRING ? e->len : 0, s->table);
            continue;
        }
        uint64_t fp = perm_revert(t, p);
        unsigned dist = ham_dist(fp, qs->q);
        if (dist > qs->d)
            continue;
        if (qs->nm == qs->capm) {
            size_t cap = qs->capm ? qs->capm * 2 : 16;
            shard_match *nm = realloc(qs->m, cap * sizeof *nm);
            if (nm == NULL) {
                *why = "out of memory";
                return -1;
            }
            qs->m = nm;
            qs->capm = cap;
        }
        qs->m[qs->nm++] = (shard_match){fp, dist, 0, 0};
    }
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
static int shard_match_has_qdocs(const shard_query *qs, size_t i)
{
    return qs->qdocs_read && qs->m[i].fp == qs->q;
}

/* ---- The document ids (DOCS) ---- */

/* Marks the matches whose ids this worker reads: those whose table-0 shard it serves
 * (in cluster mode: that of q, when table 0 was asked for; other keys would cost a
 * -MOVED hop each). Returns how many of them need an SMEMBERS (q's own came with the
 * scan), or 0 with none marked when the parts cannot be allocated. */
static unsigned shard_query_own(shard_ctx *sc, shard_query *qs)
{
    unsigned n = 0;
    int cl = shard_redis_cluster_mode(sc->redis);
    qs->parts = calloc(qs->nm ? qs->nm : 1, sizeof *qs->parts);
    qs->ids = calloc(qs->nm ? qs->nm : 1, sizeof *qs->ids);
    if (qs->parts == NULL || qs->ids == NULL) {
        free(qs->parts);
        free(qs->ids);
        qs->parts = NULL;
        qs->ids = NULL;
        return 0;
    }
    qs->nparts = qs->nm;
    for (size_t i = 0; i < qs->nm; i++) {
        unsigned sh = layout_shard_of(perm_apply(&sc->ps.tables[0], qs->m[i].fp));
        resp_buf_init(&qs->parts[i], 0);
        shard_ids_init(&qs->ids[i]);
        qs->m[i].own = cl ? qs->q0shard >= 0 && sh == (unsigned)qs->q0shard
                          : sh >= sc->cfg.lo && sh <= sc->cfg.hi;
        if (qs->m[i].own && shard_match_has_qdocs(qs, i)) {
            qs->parts[i] = qs->qdocs;   /* moved: freed with the parts */
            resp_buf_init(&qs->qdocs, 0);
            qs->m[i].empty = qs->qdocs_empty;
        } else if (qs->m[i].own) {
            n++;
        }
    }
    return n;
}

/* The ids of the matches are read through the directories of their table-0 shards:
 * when one of them needs reading, the query runs again after it is read, and 1 is
 * returned (j ended). 0: go on. */
static int shard_query_dirs_stale(shard_job *j)
{
    shard_ctx *sc = j->sc;
    shard_query *qs = j->state;
    int need = 0;
    for (size_t i = 0; i < qs->nm && !need; i++) {
        unsigned sh = layout_shard_of(perm_apply(&sc->ps.tables[0], qs->m[i].fp));
        need = qs->m[i].own && layout_dir_need(&sc->lay, 0, sh);
    }
    if (!need)
        return 0;
    uint32_t *ids = malloc(qs->nm * sizeof *ids);
    if (ids == NULL) {
        shard_job_fail(j, RS_OOM, NULL, "out of memory");
        return 1;
    }
    for (size_t i = 0; i < qs->nm; i++)
        ids[i] = qs->m[i].own ? shard_dir_id(0, layout_shard_of(perm_apply(&sc->ps.tables[0],
                                                                            qs->m[i].fp)))
                              : 0;
    j->rerun = shard_cmd_query;
    shard_job_rerun(j, ids, (unsigned)qs->nm);
    free(ids);
    return 1;
}

/* The scan is done: matches sorted by distance and fingerprint, each once. Without
 * DOCS (or nothing of ours to read) the answer; else the docs job reads the ids of
 * the matches this worker serves. With no room in Redis for those reads the matches
 * go without ids, which the coordinator then fetches with SHARD.DOCS. */
static void shard_query_scanned(shard_job *j)
{
    shard_ctx *sc = j->sc;
    shard_query *qs = j->state;
    if (qs->nm > 1)
        qsort(qs->m, qs->nm, sizeof *qs->m, shard_match_cmp);
    size_t n = 0;
    for (size_t i = 0; i < qs->nm; i++)
        if (n == 0 || qs->m[i].fp != qs->m[n - 1].fp)
            qs->m[n++] = qs->m[i];
    qs->nm = n;
    unsigned nread = qs->withdocs ? shard_query_own(sc, qs) : 0;
    if (nread == 0) {
        shard_query_answer(j);
        return;
    }
    unsigned per = LAYOUT_IDS_READS;
    if (nread > sc->cfg.max_inflight_redis / per || !shard_redis_room(sc->redis, nread * per) ||
        shard_redis_get_state(sc->redis) != SHARD_REDIS_READY) {
        for (size_t i = 0; i < qs->nm; i++)
            if (qs->m[i].own && !shard_match_has_qdocs(qs, i))
                qs->m[i].own = 0;
        shard_query_answer(j);
        return;
    }
    if (shard_query_dirs_stale(j))
        return;
    shard_job *dj = shard_job_new(sc, j->req, &shard_query_docs_ops, qs, nread * per);
    if (dj == NULL) {
        shard_job_fail(j, RS_OOM, NULL, "out of memory");
        return;
    }
    shard_job_handoff(j);       /* the request and qs go on with dj */
    dj->rerun = shard_cmd_query;
    unsigned k = 0;
    for (size_t i = 0; i < qs->nm && dj->req; i++) {
        if (!qs->m[i].own || shard_match_has_qdocs(qs, i))
            continue;
        shard_ids_send(dj, &k, (uint32_t)i, qs->m[i].fp);
    }
    shard_job_release(dj);
}

/* One reply of the docs job, about match s->idx (shard_ids). */
static int shard_query_docs_absorb(shard_job *j, const shard_slot *s, redisReply *rep,
                                   const char **why)
{
    shard_query *qs = j->state;
    return shard_ids_absorb(&qs->ids[s->idx], s, rep, why);
}

/* Every read of the docs job answered: the ids of each match read go to its part. */
static void shard_query_docs_done(shard_job *j)
{
    shard_query *qs = j->state;
    for (size_t i = 0; i < qs->nm; i++) {
        if (!qs->m[i].own || shard_match_has_qdocs(qs, i))
            continue;
        int empty;
        shard_ids_take(&qs->ids[i], &qs->parts[i], &empty);
        qs->m[i].empty = (uint8_t)empty;
    }
    shard_query_answer(j);
}

/* ---- The answer ---- */

/* [fp, dist] per match, [fp, dist, [docid ...]] for those whose ids were read; a
 * match whose document set is empty (a DEL under way) is left out. */
static void shard_query_answer(shard_job *j)
{
    shard_query *qs = j->state;
    resp_buf *out = rs_req_out(j->req);
    size_t n = 0;
    for (size_t i = 0; i < qs->nm; i++)
        n += !qs->m[i].empty;
    j->sc->st.matches += n;
    resp_add_array(out, n);
    for (size_t i = 0; i < qs->nm; i++) {
        if (qs->m[i].empty)
            continue;
        resp_add_array(out, qs->m[i].own ? 3 : 2);
        resp_add_bulk_u64(out, qs->m[i].fp);
        resp_add_int(out, qs->m[i].dist);
        if (qs->m[i].own)
            resp_buf_append(out, qs->parts[i].data, qs->parts[i].len);
    }
    shard_job_answer(j);
}
