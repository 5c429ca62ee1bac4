/* query.c: the query state machine of simhash-coordinator, for SIMHASH.QUERY, CHECK
 * and CHECKTEXT: one round of SHARD.QUERY ... DOCS to the workers of q's tables
 * (coord_send_per_table), the replies folded into the matches (coord_on_query_reply),
 * then the merge (coord_query_merge): matches that came back without ids are fetched
 * with SHARD.DOCS from their owners (coord_on_docs_reply), and the answer is sorted
 * and handed to the query's done function: coord_query_reply answers it, and
 * write.c's coord_check_write keeps it for CHECK / CHECKTEXT and adds the document.
 * The commands and their arguments are in commands.c. */
#include "coord.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hamming.h"
#include "parse.h"

/* ---- Operation state ---- */

static void coord_qstate_cleanup(void *p)
{
    coord_qstate *s = p;
    for (size_t i = 0; i < s->n; i++)
        free(s->m[i].docs);
    free(s->m);
    free(s->groups);
    free(s->fetch);
    free(s->pairs);
}

/* A new operation answering r, with its query state (*sp) for q within d, ending
 * with done. NULL when out of memory (r answered). */
coord_op *coord_query_op_new(coord *co, rs_req *r, coord_query_done_fn done, uint64_t q,
                             unsigned d, coord_qstate **sp)
{
    coord_op *op = coord_op_new(co, r);
    if (op == NULL)
        return NULL;
    coord_qstate *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        coord_op_fail(op, RS_OOM, "out of memory");
        return NULL;
    }
    s->done = done;
    s->q = q;
    s->d = d;
    coord_op_set_data(op, s, coord_qstate_cleanup);
    *sp = s;
    return op;
}

/* Decimal text of table number t (0 <= t < PERM_MAX_TABLES), built once. Returns it
 * and its length in *len. */
static const char *coord_table_str(unsigned t, size_t *len)
{
    static char txt[PERM_MAX_TABLES][4];
    static unsigned char tlen[PERM_MAX_TABLES];
    static int ready;
    if (!ready) {
        for (unsigned i = 0; i < PERM_MAX_TABLES; i++)
            tlen[i] = (unsigned char)snprintf(txt[i], sizeof(txt[i]), "%u", i);
        ready = 1;
    }
    *len = tlen[t];
    return txt[t];
}

/* Decimal text of fp into buf (at least 21 bytes). Returns its length. */
static size_t coord_fp_str(uint64_t fp, char *buf)
{
    size_t n = resp_u64_dec(buf, fp);
    buf[n] = '\0';
    return n;
}

/* Send `cmd fp d t... tail` to every worker for the tables whose shard of fp it
 * owns. Returns 0, or -1 when the op failed. */
static int coord_send_per_table(coord_op *op, const char *cmd, uint64_t fp, const char *dstr,
                          const char *tail, coord_reply_fn fn)
{
    coord *co = coord_op_coord(op);
    const char *argv[4 + PERM_MAX_TABLES];
    size_t lens[4 + PERM_MAX_TABLES];
    short owner[PERM_MAX_TABLES];
    char fps[24];
    size_t fplen = coord_fp_str(fp, fps);
    for (unsigned t = 0; t < co->ps.ntables; t++) {
        coord_worker *w = coord_route(co, t, perm_apply(&co->ps.tables[t], fp));
        owner[t] = w ? (short)w->idx : -1;
        if (w == NULL)      /* routing incomplete: coord_op_send fails the op */
            return coord_op_send(op, NULL, 0, NULL, NULL, fn, NULL);
    }
    for (size_t wi = 0; wi < co->nw; wi++) {
        int argc = 0;
        argv[argc] = cmd;
        lens[argc++] = strlen(cmd);
        argv[argc] = fps;
        lens[argc++] = fplen;
        if (dstr) {
            argv[argc] = dstr;
            lens[argc++] = strlen(dstr);
        }
        int first = argc;
        for (unsigned t = 0; t < co->ps.ntables; t++)
            if (owner[t] == (short)wi) {
                argv[argc] = coord_table_str(t, &lens[argc]);
                argc++;
            }
        if (argc == first)
            continue;
        if (tail) {
            argv[argc] = tail;
            lens[argc++] = strlen(tail);
        }
        if (coord_op_send(op, &co->w[wi], argc, argv, lens, fn, NULL) != 0)
            return -1;
    }
    return 0;
}

static void coord_query_sort_answer_fn(coord_op *op);

coord_status coord_docs_copy(const redisReply *e, char **docs, size_t *docslen)
{
    resp_buf b;
    if (e->type != REDIS_REPLY_ARRAY)
        return COORD_BAD_REPLY;
    resp_buf_init(&b, 0);
    resp_add_array(&b, e->elements);
    for (size_t j = 0; j < e->elements; j++) {
        if (e->element[j]->type != REDIS_REPLY_STRING) {
            resp_buf_free(&b);
            return COORD_BAD_REPLY;
        }
        resp_add_bulk(&b, e->element[j]->str, e->element[j]->len);
    }
    if (b.overflow) {
        resp_buf_free(&b);
        return COORD_NOMEM;
    }
    *docs = b.data;
    *docslen = b.len;
    return COORD_OK;
}

static int coord_match_push(coord_qstate *s, uint64_t fp, unsigned dist)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        qmatch *m = realloc(s->m, cap * sizeof(*m));
        if (m == NULL)
            return -1;
        s->m = m;
        s->cap = cap;
    }
    s->m[s->n].fp = fp;
    s->m[s->n].dist = dist;
    s->m[s->n].gone = 0;
    s->m[s->n].docs = NULL;
    s->m[s->n].docslen = 0;
    s->n++;
    return 0;
}

/* SHARD.QUERY ... DOCS reply: array of [fp, dist, [docid ...]] (the worker read the
 * ids: it serves table 0's shard of fp) or [fp, dist] (ids still to be fetched). */
static int coord_on_query_reply(coord_op *op, coord_worker *w, redisReply *r, void *arg)
{
    coord_qstate *s = coord_op_data(op);
    (void)arg;
    if (r->type != REDIS_REPLY_ARRAY)
        goto bad;
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *e = r->element[i];
        uint64_t fp;
        const char *why;
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 1)
            goto bad;
        redisReply *f = e->element[0];
        if (f->type == REDIS_REPLY_STRING) {
            if (parse_u64(f->str, f->len, &fp, &why) != 0)
                goto bad;
        } else if (f->type == REDIS_REPLY_INTEGER && f->integer >= 0) {
            fp = (uint64_t)f->integer;
        } else {
            goto bad;
        }
        unsigned dist = ham_dist(fp, s->q);
        if (dist > s->d)
            continue;       /* a worker answering more than asked: keep the contract */
        if (coord_match_push(s, fp, dist) != 0) {
            coord_op_fail(op, RS_OOM, "out of memory");
            return -1;
        }
        if (e->elements >= 3) {
            qmatch *m = &s->m[s->n - 1];
            coord_status rc = coord_docs_copy(e->element[2], &m->docs, &m->docslen);
            if (rc == COORD_BAD_REPLY)
                goto bad;
            if (rc == COORD_NOMEM) {
                coord_op_fail(op, RS_OOM, "out of memory");
                return -1;
            }
            m->gone = e->element[2]->elements == 0;
        }
    }
    return 0;
bad:
    coord_op_coord(op)->st.err_worker++;
    coord_op_fail(op, RS_ERR, "shard worker %s: malformed SHARD.QUERY reply", w->addr);
    return -1;
}

/* SHARD.DOCS reply: one array of ids per fingerprint of the group. */
static int coord_on_docs_reply(coord_op *op, coord_worker *w, redisReply *r, void *arg)
{
    coord_qstate *s = coord_op_data(op);
    grp *g = arg;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != g->n)
        goto bad;
    for (size_t i = 0; i < g->n; i++) {
        redisReply *e = r->element[i];
        char *docs;
        size_t docslen;
        coord_status rc = coord_docs_copy(e, &docs, &docslen);
        if (rc == COORD_BAD_REPLY)
            goto bad;
        if (rc == COORD_NOMEM) {
            coord_op_fail(op, RS_OOM, "out of memory");
            return -1;
        }
        qmatch *m = &s->m[s->fetch[g->start + i]];
        free(m->docs);
        m->docs = docs;
        m->docslen = docslen;
        /* a fingerprint exists only with a document: an ADD still under way or one
         * that failed half-way left table entries without one */
        m->gone = e->elements == 0;
    }
    return 0;
bad:
    coord_op_coord(op)->st.err_worker++;
    coord_op_fail(op, RS_ERR, "shard worker %s: malformed SHARD.DOCS reply", w->addr);
    return -1;
}

void coord_query_answer(const coord_qstate *s, resp_buf *b)
{
    resp_add_array(b, s->n);
    for (size_t i = 0; i < s->n; i++) {
        resp_add_array(b, 3);
        resp_add_bulk_u64(b, s->m[i].fp);
        resp_add_int(b, s->m[i].dist);
        if (s->m[i].docs)
            resp_buf_append(b, s->m[i].docs, s->m[i].docslen);
        else
            resp_add_array(b, 0);
    }
}

/* QUERY: answer the matches. */
void coord_query_reply(coord_op *op, coord_qstate *s)
{
    coord_query_answer(s, rs_req_out(coord_op_req(op)));
    coord_op_finish(op);
}

/* After the query round: merge, sort, LIMIT, then fetch document ids. */
static void coord_query_merge(coord_op *op)
{
    coord_qstate *s = coord_op_data(op);
    coord *co = coord_op_coord(op);

    s->n = coord_matches_merge(s->m, s->n, s->limit);
    /* matches the workers returned without ids (table 0's shard of fp is another
     * worker's): fetch them from that worker with SHARD.DOCS, grouped by worker */
    size_t nfetch = 0;
    for (size_t i = 0; i < s->n; i++)
        nfetch += s->m[i].docs == NULL;
    if (nfetch == 0) {
        coord_query_sort_answer_fn(op);
        return;
    }
    s->groups = calloc(co->nw, sizeof(*s->groups));
    s->fetch = malloc(nfetch * sizeof(*s->fetch));
    if (s->groups == NULL || s->fetch == NULL) {
        coord_op_fail(op, RS_OOM, "out of memory");
        return;
    }
    size_t pos = 0;
    for (size_t wi = 0; wi < co->nw; wi++) {
        s->groups[wi].start = pos;
        for (size_t i = 0; i < s->n; i++)
            if (s->m[i].docs == NULL &&
                coord_route(co, 0, perm_apply(&co->ps.tables[0], s->m[i].fp)) == &co->w[wi])
                s->fetch[pos++] = i;
        s->groups[wi].n = pos - s->groups[wi].start;
    }
    if (pos != nfetch) {
        coord_op_fail(op, RS_SHARDDOWN, "routing changed during the request; retry");
        return;
    }
    for (size_t wi = 0; wi < co->nw; wi++) {
        grp *g = &s->groups[wi];
        if (g->n == 0)
            continue;
        const char **argv = malloc((g->n + 1) * sizeof(*argv));
        size_t *lens = malloc((g->n + 1) * sizeof(*lens));
        char (*fps)[24] = malloc(g->n * sizeof(*fps));
        if (argv == NULL || lens == NULL || fps == NULL) {
            free(argv);
            free(lens);
            free(fps);
            coord_op_fail(op, RS_OOM, "out of memory");
            return;
        }
        argv[0] = "SHARD.DOCS";
        lens[0] = RESP_LITLEN("SHARD.DOCS");
        for (size_t i = 0; i < g->n; i++) {
            lens[i + 1] = coord_fp_str(s->m[s->fetch[g->start + i]].fp, fps[i]);
            argv[i + 1] = fps[i];
        }
        int rc = coord_op_send(op, &co->w[wi], (int)(g->n + 1), argv, lens, coord_on_docs_reply, g);
        free(argv);
        free(lens);
        free(fps);
        if (rc != 0)
            return;
    }
    coord_op_round_end(op, coord_query_sort_answer_fn);
}

static void coord_query_sort_answer_fn(coord_op *op)
{
    coord_qstate *s = coord_op_data(op);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->m[i].gone) {
            free(s->m[i].docs);
            continue;
        }
        s->m[k++] = s->m[i];
    }
    s->n = k;
    if (s->n > 1)
        qsort(s->m, s->n, sizeof(*s->m), coord_cmp_dist_fp);
    coord_op_coord(op)->st.matches += s->n;
    s->done(op, s);
}

/* Start the query round for s->q within s->d. */
void coord_query_start(coord_op *op)
{
    coord_qstate *s = coord_op_data(op);
    char dstr[8];
    snprintf(dstr, sizeof(dstr), "%u", s->d);
    if (coord_send_per_table(op, "SHARD.QUERY", s->q, dstr, "DOCS", coord_on_query_reply) != 0)
        return;
    coord_op_round_end(op, coord_query_merge);
}
