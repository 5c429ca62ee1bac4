/* scan.c: SIMHASH.SCAN cursor [COUNT n], the walk over the whole corpus that `simhash
 * export` and `simhash migrate` make. The cursor names a table-0 first-byte shard xx
 * (its top bits) and a bucket of that shard (the low 24 bits); one call asks the
 * worker serving shard xx of table 0 for the fingerprints of n buckets (SHARD.SCAN),
 * then for their document ids (SHARD.DOCS, the same worker: it holds their document
 * sets), and answers [next cursor, [[fp, [docid ...]] ...]]; cursor 0 starts the walk
 * and a next cursor of 0 ends it. Every fingerprint stored for the whole walk comes
 * exactly once (its table-0 bucket never changes); one added or removed meanwhile may
 * or may not (docs/protocol.md). */
#include "coord.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parse.h"

#define COORD_SCAN_SHARD_SHIFT 24
#define COORD_SCAN_COUNT_DEFAULT 16
#define COORD_SCAN_COUNT_MAX 1024

typedef struct coord_scan {
    unsigned shard, bucket, count;
    uint64_t next;              /* the cursor answered */
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
    (void)arg;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != s->nfps)
        goto bad;
    s->docs = calloc(s->nfps, sizeof *s->docs);
    s->docslen = calloc(s->nfps, sizeof *s->docslen);
    if (!s->docs || !s->docslen) {
        coord_op_fail(op, RS_OOM, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < s->nfps; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY)
            goto bad;
        if (e->elements == 0)
            continue;
        resp_buf b;
        resp_buf_init(&b, 0);
        resp_add_array(&b, e->elements);
        for (size_t j = 0; j < e->elements; j++) {
            if (e->element[j]->type != REDIS_REPLY_STRING) {
                resp_buf_free(&b);
                goto bad;
            }
            resp_add_bulk(&b, e->element[j]->str, e->element[j]->len);
        }
        if (b.overflow) {
            resp_buf_free(&b);
            coord_op_fail(op, RS_OOM, "out of memory");
            return -1;
        }
        s->docs[i] = b.data;
        s->docslen[i] = b.len;
    }
    return 0;
bad:
    coord_op_coord(op)->st.err_worker++;
    coord_op_fail(op, RS_ERR, "shard worker %s: malformed SHARD.DOCS reply", w->addr);
    return -1;
}

/* Round 2: the document ids of the fingerprints found. */
static void coord_scan_docs_round(coord_op *op)
{
    coord_scan *s = coord_op_data(op);
    if (s->nfps == 0) {
        coord_scan_answer(op);
        return;
    }
    const char **argv = malloc((s->nfps + 1) * sizeof *argv);
    size_t *lens = malloc((s->nfps + 1) * sizeof *lens);
    char (*fps)[24] = malloc(s->nfps * sizeof *fps);
    if (!argv || !lens || !fps) {
        free(argv);
        free(lens);
        free(fps);
        coord_op_fail(op, RS_OOM, "out of memory");
        return;
    }
    argv[0] = "SHARD.DOCS";
    lens[0] = RESP_LITLEN("SHARD.DOCS");
    for (size_t i = 0; i < s->nfps; i++) {
        lens[i + 1] = (size_t)snprintf(fps[i], sizeof fps[i], "%llu",
                                       (unsigned long long)s->fps[i]);
        argv[i + 1] = fps[i];
    }
    int rc = coord_op_send(op, s->w, (int)(s->nfps + 1), argv, lens, coord_scan_on_docs, NULL);
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
        r->element[0]->type != REDIS_REPLY_INTEGER || r->element[0]->integer < 0)
        goto bad;
    long long next = r->element[0]->integer;
    if (next == 0)      /* shard done: the next one, or the end of the walk */
        s->next = s->shard == 255 ? 0 : (uint64_t)(s->shard + 1) << COORD_SCAN_SHARD_SHIFT;
    else
        s->next = ((uint64_t)s->shard << COORD_SCAN_SHARD_SHIFT) | (uint64_t)next;
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

/* SIMHASH.SCAN cursor [COUNT n]: n buckets (default 16, at most 1024) of the walk. */
void coord_cmd_scan(rs_req *r)
{
    coord *co = rs_req_ctx(r);
    size_t argc = rs_req_argc(r), len;
    const char *a = rs_req_arg(r, 1, &len);
    uint64_t cursor, count = COORD_SCAN_COUNT_DEFAULT;
    const char *why;
    if (parse_u64(a, len, &cursor, &why) != 0 ||
        (cursor >> COORD_SCAN_SHARD_SHIFT) > 255) {
        rs_req_fail(r, RS_ERR, "invalid cursor");
        return;
    }
    if (argc != 2 && argc != 4) {
        rs_req_fail(r, RS_ERR, "syntax error (SIMHASH.SCAN cursor [COUNT n])");
        return;
    }
    if (argc == 4) {
        a = rs_req_arg(r, 2, &len);
        if (len != 5 || strncasecmp(a, "COUNT", 5) != 0) {
            rs_req_fail(r, RS_ERR, "syntax error (SIMHASH.SCAN cursor [COUNT n])");
            return;
        }
        a = rs_req_arg(r, 3, &len);
        if (parse_uint_range(a, len, 1, COORD_SCAN_COUNT_MAX, &count, &why) != 0) {
            rs_req_fail(r, RS_ERR, "COUNT: %s", why);
            return;
        }
    }
    coord_scan *s = calloc(1, sizeof *s);
    if (s == NULL) {
        rs_req_fail(r, RS_OOM, "out of memory");
        return;
    }
    s->shard = (unsigned)(cursor >> COORD_SCAN_SHARD_SHIFT);
    s->bucket = (unsigned)(cursor & ((1u << COORD_SCAN_SHARD_SHIFT) - 1));
    s->count = (unsigned)count;
    coord_op *op = coord_op_new(co, r);
    if (op == NULL) {
        free(s);
        return;
    }
    coord_op_set_data(op, s, coord_scan_free);
    s->w = coord_route(co, 0, (uint64_t)s->shard << 56);
    char xs[8], bs[16], cs[16];
    const char *argv[4] = {"SHARD.SCAN", xs, bs, cs};
    size_t lens[4] = {RESP_LITLEN("SHARD.SCAN"),
                      (size_t)snprintf(xs, sizeof xs, "%u", s->shard),
                      (size_t)snprintf(bs, sizeof bs, "%u", s->bucket),
                      (size_t)snprintf(cs, sizeof cs, "%u", s->count)};
    /* a NULL worker (routing incomplete) fails the op with the reason */
    if (coord_op_send(op, s->w, 4, argv, lens, coord_scan_on_scan, NULL) != 0)
        return;
    coord_op_round_end(op, coord_scan_docs_round);
}
