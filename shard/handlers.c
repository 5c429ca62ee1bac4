/* handlers.c: the SHARD.* commands of simhash-shard (docs/protocol.md) but QUERY
 * (query.c), INFO's text (info.c) and WAIT (wait.c): the Redis commands each request
 * sends through a job (job.h), what each kind of job does with the replies, and the
 * command table. Argument checks are in args.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "layout.h"
#include "log.h"
#include "parse.h"
#include "shard.h"

/* ---- Kinds of jobs ---- */

/* SUM: integer replies added up (ZADD / ZREM counts), answered as one integer. */
typedef struct shard_sum {
    long long sum;
    unsigned long long *stat;   /* counter the sum is added to */
} shard_sum;

static int shard_sum_absorb(shard_job *j, const shard_slot *s, redisReply *rep, const char **why)
{
    shard_sum *st = j->state;
    long long n;
    (void)s;
    if (layout_write_count(rep, &n) != 0) {
        *why = "unexpected reply to a table write";
        return -1;
    }
    st->sum += n;
    return 0;
}

static void shard_sum_done(shard_job *j)
{
    shard_sum *st = j->state;
    *st->stat += (unsigned long long)st->sum;
    resp_add_int(rs_req_out(j->req), st->sum);
    shard_job_answer(j);
}

static const shard_job_ops shard_sum_ops = {shard_sum_absorb, shard_sum_done, NULL, free, NULL};

/* BATCH: the table writes of one fingerprint as one command (the layout's entries), its
 * reply read by the layout's entries_reply; answered as SUM (the sum comes first). */
typedef struct shard_batch {
    shard_sum sum;
    unsigned n;
    unsigned tabs[LAYOUT_BATCH_MAX];
    uint64_t ps[LAYOUT_BATCH_MAX];
} shard_batch;

static int shard_batch_absorb(shard_job *j, const shard_slot *s, redisReply *rep,
                              const char **why)
{
    shard_batch *b = j->state;
    long long n = 0;
    (void)s;
    int rc = j->sc->lay.ops->entries_reply(&j->sc->lay, b->n, b->tabs, b->ps, rep, &n);
    if (rc < 0) {
        *why = "unexpected reply to a table write";
        return -1;
    }
    if (rc == 1)
        j->stale = 1;           /* nothing was written: the request runs again */
    else
        b->sum.sum += n;
    return 0;
}

static const shard_job_ops shard_batch_ops = {shard_batch_absorb, shard_sum_done, NULL, free, NULL};

/* INTS: one reply, an integer or an array of integers (the lock scripts), passed on. */
static int shard_ints_absorb(shard_job *j, const shard_slot *s, redisReply *rep,
                             const char **why)
{
    resp_buf *out = rs_req_out(j->req);
    (void)s;
    if (rep->type == REDIS_REPLY_INTEGER) {
        resp_add_int(out, rep->integer);
        return 0;
    }
    if (rep->type != REDIS_REPLY_ARRAY) {
        *why = "unexpected reply to EVAL";
        return -1;
    }
    for (size_t i = 0; i < rep->elements; i++)
        if (rep->element[i]->type != REDIS_REPLY_INTEGER) {
            *why = "unexpected element in a reply to EVAL";
            return -1;
        }
    resp_add_array(out, rep->elements);
    for (size_t i = 0; i < rep->elements; i++)
        resp_add_int(out, rep->element[i]->integer);
    return 0;
}

static const shard_job_ops shard_ints_ops = {shard_ints_absorb, shard_job_answer, NULL, NULL, NULL};

/* DOCS: the ids of each fingerprint (shard_ids), answered as an array of arrays. */
typedef struct shard_docs {
    shard_ids *ids;
    unsigned n;
} shard_docs;

static void shard_docs_free(void *p)
{
    shard_docs *d = p;
    for (unsigned i = 0; i < d->n; i++)
        shard_ids_free(&d->ids[i]);
    free(d->ids);
    free(d);
}

static int shard_docs_absorb(shard_job *j, const shard_slot *s, redisReply *rep, const char **why)
{
    shard_docs *d = j->state;
    return shard_ids_absorb(&d->ids[s->idx], s, rep, why);
}

static void shard_docs_done(shard_job *j)
{
    shard_docs *d = j->state;
    resp_buf *out = rs_req_out(j->req);
    resp_add_array(out, d->n);
    for (unsigned i = 0; i < d->n; i++) {
        resp_buf part;
        int empty;
        resp_buf_init(&part, 0);
        shard_ids_take(&d->ids[i], &part, &empty);
        resp_buf_append(out, part.data, part.len);
        resp_buf_free(&part);
    }
    shard_job_answer(j);
}

static const shard_job_ops shard_docs_ops = {shard_docs_absorb, shard_docs_done, NULL,
                                             shard_docs_free, NULL};

/* INFO: HMGET of the counter hash per shard, summed; answered with the SHARD.INFO
 * text, which goes out without the counts when Redis fails. */
typedef struct shard_counts {
    long long fps, docs;
} shard_counts;

static int shard_counts_absorb(shard_job *j, const shard_slot *s, redisReply *rep,
                               const char **why)
{
    shard_counts *c = j->state;
    (void)s;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
        *why = "unexpected reply to HMGET";
        return -1;
    }
    long long *dst[2] = {&c->fps, &c->docs};
    for (int i = 0; i < 2; i++) {
        const redisReply *e = rep->element[i];
        if (e->type == REDIS_REPLY_STRING && e->len > 0 && e->len < 20)
            *dst[i] += strtoll(e->str, NULL, 10);
    }
    return 0;
}

static void shard_counts_done(shard_job *j)
{
    shard_counts *c = j->state;
    rs_req *req = shard_job_handoff(j);
    shard_info_reply(req, 1, c->fps, c->docs);
    free(c);
}

static int shard_counts_failed(shard_job *j, rs_req *req)
{
    (void)j;
    shard_info_reply(req, 0, 0, 0);
    return 1;
}

static const shard_job_ops shard_counts_ops = {shard_counts_absorb, shard_counts_done,
                                               shard_counts_failed, free, NULL};

/* ---- Commands ---- */

/* SHARD.HELLO: the settings a coordinator checks before using this worker. */
static void shard_cmd_hello(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    resp_buf *out = rs_req_out(req);
    int cl = shard_redis_cluster_mode(sc->redis);   /* cluster: 1, node (docs/cluster.md) */
    resp_add_array(out, 11);
    resp_add_int(out, sc->cfg.blocks);
    resp_add_int(out, sc->cfg.distance);
    resp_add_int(out, sc->cfg.layout);
    resp_add_int(out, LAYOUT_SHARD_BITS);
    resp_add_int(out, sc->cfg.lo);
    resp_add_int(out, sc->cfg.hi);
    resp_add_int(out, cl);
    resp_add_bulk_str(out, cl ? shard_redis_node(sc->redis) : "");
    resp_add_bulk_str(out, sc->cfg.fp_spec);
    resp_add_bulk_str(out, layout_corpus());
    resp_add_int(out, LAYOUT_WORKER_PROTOCOL);
    rs_req_finish(req);
}

/* The writes of SHARD.ADD / DEL as one command, in a layout that offers it (entries)
 * on one Redis: one script call instead of one per table. */
static void shard_add_del_batched(rs_req *req, int add, unsigned ntab, const unsigned *tabs,
                                  const uint64_t *ps)
{
    shard_ctx *sc = rs_req_ctx(req);
    shard_batch *b = calloc(1, sizeof *b);
    layout_batch *cmd = b ? malloc(sizeof *cmd) : NULL;
    shard_job *j = cmd ? shard_job_new(sc, req, &shard_batch_ops, b, 1) : NULL;
    if (j == NULL) {
        free(cmd);
        free(b);
        shard_oom(req);
        return;
    }
    b->sum.stat = add ? &sc->st.added : &sc->st.removed;
    b->n = ntab;
    memcpy(b->tabs, tabs, ntab * sizeof *tabs);
    memcpy(b->ps, ps, ntab * sizeof *ps);
    j->rerun = add ? shard_cmd_add : shard_cmd_del;
    sc->lay.ops->entries(&sc->lay, ntab, tabs, ps, add, cmd);
    shard_job_send(j, 0, cmd->argc, cmd->argv, cmd->argvlen);  /* slot dir 0: see job.h */
    free(cmd);
    shard_job_release(j);
}

/* SHARD.ADD fp t [t ...] / SHARD.DEL fp t [t ...]: ZADD key 0 member / ZREM key
 * member per table (on one Redis: one script call for all of them); the reply
 * is the number of entries added / removed. The caller holds fp's write lock
 * (SHARD.LOCK), so entries and document set change together. */
static void shard_cmd_add_del(rs_req *req, int add)
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
    uint32_t dirs[PERM_MAX_TABLES];
    if (ntab > sc->ps.ntables) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "%u tables given; the corpus has %zu",
                   ntab, (size_t)sc->ps.ntables);
        return;
    }
    unsigned n = 0;
    for (unsigned i = 0; i < ntab; i++) {
        if (shard_arg_table(req, 2 + i, &tabs[n]) != 0)
            return;
        ps[n] = perm_apply(&sc->ps.tables[tabs[n]], fp);
        if (shard_check_owner(req, tabs[n], ps[n]) != 0)
            return;
        if (tabs[n] < sc->lay.ops->entry_from)
            continue;           /* the lock script wrote it (layout_ops.h) */
        dirs[n] = shard_dir_id(tabs[n], layout_shard_of(ps[n]));
        n++;
    }
    ntab = n;
    if (ntab == 0) {
        resp_add_int(rs_req_out(req), 0);
        rs_req_finish(req);
        return;
    }
    rs_cmd_fn self = add ? shard_cmd_add : shard_cmd_del;
    if (shard_dirs_ready(req, self, dirs, ntab) != 1 || shard_check_redis(req, ntab) != 0)
        return;
    if (ntab >= 1 && ntab <= LAYOUT_BATCH_MAX &&
        !shard_redis_cluster_mode(sc->redis)) {
        shard_add_del_batched(req, add, ntab, tabs, ps);
        return;
    }
    shard_sum *st = calloc(1, sizeof *st);
    shard_job *j = st ? shard_job_new(sc, req, &shard_sum_ops, st, ntab) : NULL;
    if (j == NULL) {
        free(st);
        shard_oom(req);
        return;
    }
    st->stat = add ? &sc->st.added : &sc->st.removed;
    j->rerun = self;
    for (unsigned i = 0; i < ntab && j->req; i++) {
        layout_cmd ec;
        sc->lay.ops->entry(&sc->lay, tabs[i], ps[i], add ? "ZADD" : "ZREM", &ec);
        j->slots[i].dir = shard_dir_id(tabs[i], layout_shard_of(ps[i]));
        shard_job_send(j, i, ec.argc, ec.argv, ec.argvlen);
    }
    shard_job_release(j);
}

void shard_cmd_add(rs_req *req)
{
    shard_cmd_add_del(req, 1);
}

void shard_cmd_del(rs_req *req)
{
    shard_cmd_add_del(req, 0);
}

/* Longest lock token accepted. */
#define SHARD_TOKEN_MAX 64

/* SHARD.LOCK fp token lease-ms op [docid ...]: one EVAL of the layout's lock script on fp's
 * document set (this worker must serve table 0's shard of fp): takes fp's write lock
 * and changes the set (op A: add the ids, R: remove them, X: remove all, F: none,
 * S: none, only a stale lock is taken). Answers the script's reply: [1, ids before,
 * ids after, stale, ids changed] or [0, ms left]. */
void shard_cmd_lock(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    sc->st.requests++;
    uint64_t fp, lease;
    size_t argc = rs_req_argc(req), tlen, llen, olen;
    const char *token = rs_req_arg(req, 2, &tlen);
    const char *ls = rs_req_arg(req, 3, &llen), *why;
    const char *op = rs_req_arg(req, 4, &olen);
    char dkey[LAYOUT_KEY_MAX], tok[SHARD_TOKEN_MAX + 1], opz[2];
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
    uint64_t p0 = perm_apply(&sc->ps.tables[0], fp);
    uint32_t dir = shard_dir_id(0, layout_shard_of(p0));
    if (shard_check_docids(req, 5, argc - 5) != 0 || shard_doc_key(req, fp, dkey) != 0 ||
        shard_dirs_ready(req, shard_cmd_lock, &dir, 1) != 1 || shard_check_redis(req, 1) != 0)
        return;
    /* token and op are NUL-free here (no ':' checked above; op is one letter) */
    if (memchr(token, '\0', tlen) != NULL) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "lock token must not hold a NUL byte");
        return;
    }
    memcpy(tok, token, tlen);
    tok[tlen] = '\0';
    opz[0] = op[0];
    opz[1] = '\0';
    layout_cmd lc;
    sc->lay.ops->lock(&sc->lay, fp, p0, tok, lease, opz, &lc);
    size_t nids = argc - 5;
    size_t n = (size_t)lc.argc + nids;
    const char **argv = malloc(n * sizeof *argv);
    size_t *argvlen = malloc(n * sizeof *argvlen);
    shard_job *j = argv && argvlen ? shard_job_new(sc, req, &shard_ints_ops, NULL, 1) : NULL;
    if (j == NULL) {
        free(argv);
        free(argvlen);
        shard_oom(req);
        return;
    }
    j->rerun = shard_cmd_lock;
    j->slots[0].dir = shard_dir_id(0, layout_shard_of(p0));
    memcpy(argv, lc.argv, (size_t)lc.argc * sizeof *argv);
    memcpy(argvlen, lc.argvlen, (size_t)lc.argc * sizeof *argvlen);
    for (size_t i = 0; i < nids; i++)
        argv[(size_t)lc.argc + i] = rs_req_arg(req, 5 + i, &argvlen[(size_t)lc.argc + i]);
    shard_job_send(j, 0, (int)n, argv, argvlen);
    free(argv);
    free(argvlen);
    shard_job_release(j);
}

/* SHARD.UNLOCK fp token [ABANDON]: releases fp's write lock when token holds it
 * (ABANDON: makes it stale instead, for a writer that failed half-way); answers 1,
 * or 0 when the lock was lost (its lease ran out and another writer took it over). */
static void shard_cmd_unlock(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    sc->st.requests++;
    uint64_t fp;
    size_t tlen;
    const char *token = rs_req_arg(req, 2, &tlen);
    char dkey[LAYOUT_KEY_MAX], wkey[LAYOUT_KEY_MAX], field[17];
    size_t alen = 0;
    const char *ab = rs_req_argc(req) > 3 ? rs_req_arg(req, 3, &alen) : NULL;
    if (rs_req_argc(req) > 4 || (ab && !resp_word_is(ab, alen, "ABANDON"))) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "expected SHARD.UNLOCK fp token [ABANDON]");
        return;
    }
    if (shard_arg_fp(req, 1, &fp) != 0 || shard_doc_key(req, fp, dkey) != 0 ||
        shard_check_redis(req, 1) != 0)
        return;
    layout_lock_key(wkey, sizeof wkey, layout_shard_of(perm_apply(&sc->ps.tables[0], fp)));
    layout_lock_field(field, fp);
    shard_job *j = shard_job_new(sc, req, &shard_ints_ops, NULL, 1);
    if (j == NULL) {
        shard_oom(req);
        return;
    }
    const char *argv[7] = {"EVAL", LAYOUT_UNLOCK_LUA, "1", wkey, field, token, "abandon"};
    size_t argvlen[7] = {RESP_LITLEN("EVAL"), strlen(LAYOUT_UNLOCK_LUA), RESP_LITLEN("1"),
                           strlen(wkey), 16, tlen, RESP_LITLEN("abandon")};
    shard_job_send(j, 0, ab ? 7 : 6, argv, argvlen);
    shard_job_release(j);
}

/* SHARD.DOCS fp [fp ...]: the ids of each fingerprint (layout_ops ids_read), sorted
 * bytewise. */
void shard_cmd_docs(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    sc->st.requests++;
    unsigned n = (unsigned)(rs_req_argc(req) - 1);
    uint64_t *fps = malloc(n * sizeof *fps);
    uint32_t *dirs = malloc(n * sizeof *dirs);
    if (fps == NULL || dirs == NULL) {
        free(fps);
        free(dirs);
        shard_oom(req);
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        char key[LAYOUT_KEY_MAX];
        if (shard_arg_fp(req, 1 + i, &fps[i]) != 0 || shard_doc_key(req, fps[i], key) != 0)
            goto out;
        dirs[i] = shard_dir_id(0, layout_shard_of(perm_apply(&sc->ps.tables[0], fps[i])));
    }
    unsigned per = LAYOUT_IDS_READS;
    if (shard_dirs_ready(req, shard_cmd_docs, dirs, n) != 1 || shard_check_redis(req, n * per) != 0)
        goto out;
    shard_docs *d = calloc(1, sizeof *d);
    if (d && (d->ids = calloc(n, sizeof *d->ids)) != NULL) {
        d->n = n;
        for (unsigned i = 0; i < n; i++)
            shard_ids_init(&d->ids[i]);
    }
    shard_job *j = d && d->ids ? shard_job_new(sc, req, &shard_docs_ops, d, n * per) : NULL;
    if (j == NULL) {
        if (d)
            shard_docs_free(d);
        shard_oom(req);
        goto out;
    }
    j->rerun = shard_cmd_docs;
    unsigned slot = 0;
    for (unsigned i = 0; i < n && j->req; i++)
        shard_ids_send(j, &slot, i, fps[i]);
    shard_job_release(j);
out:
    free(fps);
    free(dirs);
}

/* SHARD.INFO: reads the Redis node's INFO (memory, role) and the counter hash of
 * every shard served (HMGET c:{0:xx}), then answers; without Redis it answers at
 * once, the counts and memory "unknown". The INFO goes first on the connection, so
 * its reply is kept before the counts complete the answer. */
static void shard_cmd_info(rs_req *req)
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
    shard_counts *c = calloc(1, sizeof *c);
    shard_job *j = c ? shard_job_new(sc, req, &shard_counts_ops, c, n) : NULL;
    if (j == NULL) {
        free(c);
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

#define SHARD_ARGS_END { NULL, NULL, NULL, 0, NULL }
static const rs_arg shard_args_fp_tables[] = {
    { "fingerprint", "integer", NULL, 0, NULL },
    { "table", "integer", NULL, RS_ARG_MULTIPLE, NULL },
    SHARD_ARGS_END };
static const rs_arg shard_args_query[] = {
    { "fingerprint", "integer", NULL, 0, NULL },
    { "distance", "integer", NULL, 0, NULL },
    { "table", "integer", NULL, RS_ARG_MULTIPLE, NULL },
    { "docs", "pure-token", "DOCS", RS_ARG_OPTIONAL, NULL },
    SHARD_ARGS_END };
static const rs_arg shard_args_lock[] = {
    { "fingerprint", "integer", NULL, 0, NULL },
    { "token", "string", NULL, 0, NULL },
    { "lease-ms", "integer", NULL, 0, NULL },
    { "op", "string", NULL, 0, NULL },
    { "docid", "string", NULL, RS_ARG_OPTIONAL | RS_ARG_MULTIPLE, NULL },
    SHARD_ARGS_END };
static const rs_arg shard_args_unlock[] = {
    { "fingerprint", "integer", NULL, 0, NULL },
    { "token", "string", NULL, 0, NULL },
    { "abandon", "pure-token", "ABANDON", RS_ARG_OPTIONAL, NULL },
    SHARD_ARGS_END };
static const rs_arg shard_args_mlock_item[] = {
    { "fingerprint", "integer", NULL, 0, NULL },
    { "token", "string", NULL, 0, NULL },
    { "op", "string", NULL, 0, NULL },
    { "ndocids", "integer", NULL, 0, NULL },
    { "docid", "string", NULL, RS_ARG_OPTIONAL | RS_ARG_MULTIPLE, NULL },
    SHARD_ARGS_END };
static const rs_arg shard_args_mlock[] = {
    { "lease-ms", "integer", NULL, 0, NULL },
    { "lock", "block", NULL, RS_ARG_MULTIPLE, shard_args_mlock_item },
    SHARD_ARGS_END };
static const rs_arg shard_args_munlock_item[] = {
    { "fingerprint", "integer", NULL, 0, NULL },
    { "token", "string", NULL, 0, NULL },
    SHARD_ARGS_END };
static const rs_arg shard_args_munlock[] = {
    { "unlock", "block", NULL, RS_ARG_MULTIPLE, shard_args_munlock_item },
    SHARD_ARGS_END };
static const rs_arg shard_args_madd_item[] = {
    { "fingerprint", "integer", NULL, 0, NULL },
    { "ntables", "integer", NULL, 0, NULL },
    { "table", "integer", NULL, RS_ARG_MULTIPLE, NULL },
    SHARD_ARGS_END };
static const rs_arg shard_args_madd[] = {
    { "write", "block", NULL, RS_ARG_MULTIPLE, shard_args_madd_item },
    SHARD_ARGS_END };
static const rs_arg shard_args_docs[] = {
    { "fingerprint", "integer", NULL, RS_ARG_MULTIPLE, NULL },
    SHARD_ARGS_END };

const rs_command shard_commands[] = {
    {"SHARD.HELLO", 1, RS_CMD_READONLY | RS_CMD_CAT_SHARD, shard_cmd_hello,
     "The worker's settings: blocks, distance, layout, shard bits, shard range, cluster, node, fingerprint algorithm.", NULL},
    {"SHARD.QUERY", -4, RS_CMD_READONLY | RS_CMD_CAT_SHARD, shard_cmd_query,
     "Matches of a fingerprint in the listed tables (DOCS: with their document ids).",
     shard_args_query},
    {"SHARD.ADD", -3, RS_CMD_CHANGES | RS_CMD_CAT_SHARD, shard_cmd_add,
     "Adds a fingerprint to the listed tables (the caller holds its write lock).",
     shard_args_fp_tables},
    {"SHARD.DEL", -3, RS_CMD_CHANGES | RS_CMD_CAT_SHARD, shard_cmd_del,
     "Removes a fingerprint from the listed tables (the caller holds its write lock).",
     shard_args_fp_tables},
    {"SHARD.LOCK", -5, RS_CMD_CHANGES | RS_CMD_CAT_SHARD, shard_cmd_lock,
     "Takes a fingerprint's write lock and changes its document set (op A, R, X, F, S).",
     shard_args_lock},
    {"SHARD.UNLOCK", -3, RS_CMD_CHANGES | RS_CMD_CAT_SHARD, shard_cmd_unlock,
     "Releases (or abandons) a fingerprint's write lock.", shard_args_unlock},
    {"SHARD.MLOCK", -6, RS_CMD_CHANGES | RS_CMD_CAT_SHARD, shard_cmd_mlock,
     "SHARD.LOCK of many fingerprints (each its own lock and reply).", shard_args_mlock},
    {"SHARD.MUNLOCK", -3, RS_CMD_CHANGES | RS_CMD_CAT_SHARD, shard_cmd_munlock,
     "SHARD.UNLOCK of many fingerprints (one reply each).", shard_args_munlock},
    {"SHARD.MADD", -4, RS_CMD_CHANGES | RS_CMD_CAT_SHARD, shard_cmd_madd,
     "SHARD.ADD of many fingerprints (the caller holds their locks).", shard_args_madd},
    {"SHARD.MDEL", -4, RS_CMD_CHANGES | RS_CMD_CAT_SHARD, shard_cmd_mdel,
     "SHARD.DEL of many fingerprints (the caller holds their locks).", shard_args_madd},
    {"SHARD.DOCS", -2, RS_CMD_READONLY | RS_CMD_CAT_SHARD, shard_cmd_docs,
     "The document ids of each fingerprint.", shard_args_docs},
    {"SHARD.INFO", 1, RS_CMD_READONLY | RS_CMD_CAT_READ, shard_cmd_info,
     "The worker's state, counters and Redis connection.", NULL},
    {"SHARD.SCAN", 4, RS_CMD_READONLY | RS_CMD_CAT_SHARD, shard_cmd_scan,
     "The fingerprints whose table-0 value is from or more, a few buckets (export, migrate).",
     NULL},
    {"SHARD.WORKERS", 1, RS_CMD_READONLY | RS_CMD_CAT_SHARD, shard_cmd_workers,
     "The addresses in the corpus's worker registry whose entry has not expired.", NULL},
    {"SHARD.WAIT", 1, RS_CMD_CAT_SHARD, shard_cmd_wait,
     "Answers once every earlier write of the worker is durable.", NULL},
};
#undef SHARD_ARGS_END
const size_t shard_ncommands = sizeof shard_commands / sizeof shard_commands[0];
