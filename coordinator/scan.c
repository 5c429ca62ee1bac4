/* scan.c: SIMHASH.SCAN cursor [COUNT n] [LIMIT m], the walk over the whole corpus that
 * `simhash export` and `simhash migrate` make. The cursor is a table-0 permuted value:
 * the walk goes up table 0 from it. One call asks the worker serving the cursor's
 * table-0 shard for the fingerprints of at most n buckets and about m values from the
 * cursor on (SHARD.SCAN), then for their document ids (SHARD.DOCS to the same worker,
 * which holds their document sets, in pieces of COORD_SCAN_DOCS_PIECE), and answers
 * [next cursor, [[fp, [docid ...]] ...]]; cursor 0 starts the walk and a next cursor
 * of 0 ends it. Every fingerprint stored for the whole walk comes exactly once; one
 * added or removed meanwhile may or may not (docs/protocol.md). */
#include "coord.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

#define COORD_SCAN_COUNT_DEFAULT 16
#define COORD_SCAN_COUNT_MAX 1024
#define COORD_SCAN_LIMIT_DEFAULT 4096
#define COORD_SCAN_LIMIT_MAX 65536
#define COORD_SCAN_DOCS_PIECE 1024      /* fingerprints per SHARD.DOCS */

typedef struct coord_scan {
    uint64_t from, next;        /* the cursor asked for, and answered */
    unsigned count, limit;
    coord_worker *w;
    uint64_t *fps;
    size_t nfps;
    char **docs;                /* per fingerprint: its ids as a RESP array */
    size_t *docslen;
} coord_scan;

static void coord_scan_free(void *p)
{
    coord_scan *s = p;
    for (size_t i = 0; s->docs && i < s->nfps; i++)
        free(s->docs[i]);
    free(s->docs);
    free(s->docslen);
    free(s->fps);
}

static void coord_scan_answer(coord_op *op)
{
    coord_scan *s = coord_op_data(op);
    resp_buf *out = rs_req_out(coord_op_req(op));
    size_t live = 0;
    for (size_t i = 0; i < s->nfps; i++)
        live += s->docs && s->docs[i] != NULL;
    resp_add_array(out, 2);
    resp_add_bulk_u64(out, s->next);
    resp_add_array(out, live);
    for (size_t i = 0; i < s->nfps; i++) {
        if (!s->docs || !s->docs[i])
            continue;       /* no document: an ADD under way or undone */
        resp_add_array(out, 2);
        resp_add_bulk_u64(out, s->fps[i]);
        resp_buf_append(out, s->docs[i], s->docslen[i]);
    }
    coord_op_finish(op);
}

static int coord_scan_on_docs(coord_op *op, coord_worker *w, redisReply *r, void *arg)
{
    coord_scan *s = coord_op_data(op);
    size_t from = (size_t)(uintptr_t)arg;
    size_t n = s->nfps - from < COORD_SCAN_DOCS_PIECE ? s->nfps - from : COORD_SCAN_DOCS_PIECE;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != n)
        goto bad;
    for (size_t i = from; i < from + n; i++) {
        const redisReply *e = r->element[i - from];
        if (e->type == REDIS_REPLY_ARRAY && e->elements == 0)
            continue;       /* no document: left out of the answer */
        coord_status rc = coord_docs_copy(e, &s->docs[i], &s->docslen[i]);
        if (rc == COORD_BAD_REPLY)
            goto bad;
        if (rc == COORD_NOMEM) {
            coord_op_fail(op, RS_OOM, "out of memory");
            return -1;
        }
    }
    return 0;
bad:
    coord_op_coord(op)->st.err_worker++;
    coord_op_fail(op, RS_ERR, "shard worker %s: malformed SHARD.DOCS reply", w->addr);
    return -1;
}

/* Round 2: the document ids of the fingerprints found, in pieces (a worker's
 * argument limit; each piece's reply stays small). */
static void coord_scan_docs_round(coord_op *op)
{
    coord_scan *s = coord_op_data(op);
    if (s->nfps == 0) {
        coord_scan_answer(op);
        return;
    }
    s->docs = calloc(s->nfps, sizeof *s->docs);
    s->docslen = calloc(s->nfps, sizeof *s->docslen);
    const char **argv = malloc((COORD_SCAN_DOCS_PIECE + 1) * sizeof *argv);
    size_t *lens = malloc((COORD_SCAN_DOCS_PIECE + 1) * sizeof *lens);
    char (*fps)[24] = malloc(COORD_SCAN_DOCS_PIECE * sizeof *fps);
    int rc = 0;
    if (!s->docs || !s->docslen || !argv || !lens || !fps) {
        coord_op_fail(op, RS_OOM, "out of memory");
        rc = -1;
    }
    for (size_t from = 0; rc == 0 && from < s->nfps; from += COORD_SCAN_DOCS_PIECE) {
        size_t n = s->nfps - from < COORD_SCAN_DOCS_PIECE ? s->nfps - from : COORD_SCAN_DOCS_PIECE;
        argv[0] = "SHARD.DOCS";
        lens[0] = RESP_LITLEN("SHARD.DOCS");
        for (size_t i = 0; i < n; i++) {
            lens[i + 1] = (size_t)snprintf(fps[i], sizeof fps[i], "%llu",
                                           (unsigned long long)s->fps[from + i]);
            argv[i + 1] = fps[i];
        }
        rc = coord_op_send(op, s->w, (int)(n + 1), argv, lens, coord_scan_on_docs,
                           (void *)(uintptr_t)from);
    }
    free(argv);
    free(lens);
    free(fps);
    if (rc == 0)
        coord_op_round_end(op, coord_scan_answer);
}

static int coord_scan_on_scan(coord_op *op, coord_worker *w, redisReply *r, void *arg)
{
    coord_scan *s = coord_op_data(op);
    uint64_t fp;
    const char *why;
    (void)arg;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        parse_u64(r->element[0]->str, r->element[0]->len, &s->next, &why) != 0 ||
        (s->next != 0 && s->next <= s->from))
        goto bad;           /* the walk only goes up (0: over) */
    s->nfps = r->elements - 1;
    s->fps = malloc((s->nfps ? s->nfps : 1) * sizeof *s->fps);
    if (s->fps == NULL) {
        coord_op_fail(op, RS_OOM, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < s->nfps; i++) {
        const redisReply *e = r->element[i + 1];
        if (e->type != REDIS_REPLY_STRING || parse_u64(e->str, e->len, &fp, &why) != 0)
            goto bad;
        s->fps[i] = fp;
    }
    return 0;
bad:
    coord_op_coord(op)->st.err_worker++;
    coord_op_fail(op, RS_ERR, "shard worker %s: malformed SHARD.SCAN reply", w->addr);
    return -1;
}

/* SIMHASH.SCAN cursor [COUNT n] [LIMIT m]: n buckets (default 16, at most 1024) and
 * about m fingerprints (default 4096, at most 65536) of the walk. */
void coord_cmd_scan(rs_req *r)
{
    coord *co = rs_req_ctx(r);
    size_t argc = rs_req_argc(r), len;
    const char *a = rs_req_arg(r, 1, &len);
    uint64_t cursor, count = COORD_SCAN_COUNT_DEFAULT, limit = COORD_SCAN_LIMIT_DEFAULT;
    const char *why;
    if (parse_u64(a, len, &cursor, &why) != 0) {
        rs_req_fail(r, RS_ERR, "invalid cursor");
        return;
    }
    for (size_t i = 2; i < argc; i += 2) {
        a = rs_req_arg(r, i, &len);
        int is_count = resp_word_is(a, len, "COUNT");
        int is_limit = resp_word_is(a, len, "LIMIT");
        if ((!is_count && !is_limit) || i + 1 >= argc) {
            rs_req_fail(r, RS_ERR, "syntax error (SIMHASH.SCAN cursor [COUNT n] [LIMIT m])");
            return;
        }
        a = rs_req_arg(r, i + 1, &len);
        if (parse_uint_range(a, len, 1, is_count ? COORD_SCAN_COUNT_MAX : COORD_SCAN_LIMIT_MAX,
                             is_count ? &count : &limit, &why) != 0) {
            rs_req_fail(r, RS_ERR, "%s: %s", is_count ? "COUNT" : "LIMIT", why);
            return;
        }
    }
    coord_scan *s = calloc(1, sizeof *s);
    if (s == NULL) {
        rs_req_fail(r, RS_OOM, "out of memory");
        return;
    }
    s->from = cursor;
    s->count = (unsigned)count;
    s->limit = (unsigned)limit;
    coord_op *op = coord_op_new(co, r);
    if (op == NULL) {
        free(s);
        return;
    }
    coord_op_set_data(op, s, coord_scan_free);
    s->w = coord_route(co, 0, cursor);
    char xs[24], cs[16], ls[16];
    const char *argv[4] = {"SHARD.SCAN", xs, cs, ls};
    size_t lens[4] = {RESP_LITLEN("SHARD.SCAN"),
                      (size_t)snprintf(xs, sizeof xs, "%llu", (unsigned long long)s->from),
                      (size_t)snprintf(cs, sizeof cs, "%u", s->count),
                      (size_t)snprintf(ls, sizeof ls, "%u", s->limit)};
    /* a NULL worker (routing incomplete) fails the op with the reason */
    if (coord_op_send(op, s->w, 4, argv, lens, coord_scan_on_scan, NULL) != 0)
        return;
    coord_op_round_end(op, coord_scan_docs_round);
}
