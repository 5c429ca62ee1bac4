/* commands.c: the client commands of simhash-coordinator (see docs/protocol.md):
 * argument checks, the options of QUERY / CHECK / CHECKTEXT, and the starts of QUERY /
 * ADD / DEL / CHECK / CHECKTEXT. The command table is cmdtable.c; the query state
 * machine (fan-out, merge, answer) query.c; the write rounds, and CHECK's hand-over
 * from its query to its add, write.c; FINGERPRINT, EXTRACT and INFO info.c; SCAN scan.c. */
#include "coord.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

/* ---- Argument helpers ---- */

/* Fingerprint in argument i. Returns 0, or -1 after answering an error. */
static int coord_arg_fp(rs_req *r, size_t i, uint64_t *fp)
{
    size_t n;
    const char *s = rs_req_arg(r, i, &n), *why;
    char b[64];
    if (parse_u64(s, n, fp, &why) != 0) {
        rs_req_fail(r, RS_ERR, "invalid fingerprint '%s' (argument %zu): %s; fingerprints are "
                    "unsigned 64-bit decimal numbers",
                    rs_printable(b, sizeof(b), s, n, 40), i, why);
        return -1;
    }
    return 0;
}

/* The one document-id rule: 1..COORD_DOCID_MAX bytes, no NUL byte, as the client
 * library, the CLI (load, export --escape, migrate) and Python carry them. */
static int coord_arg_docid(rs_req *r, size_t i)
{
    size_t n;
    const char *id = rs_req_arg(r, i, &n);
    if (n == 0) {
        rs_req_fail(r, RS_ERR, "empty document id (argument %zu)", i);
        return -1;
    }
    if (n > COORD_DOCID_MAX || memchr(id, '\0', n)) {
        rs_req_fail(r, RS_ERR, "document id %s (argument %zu): ids are 1..%d bytes without "
                    "a NUL byte", n > COORD_DOCID_MAX ? "too long" : "with a NUL byte", i,
                    COORD_DOCID_MAX);
        return -1;
    }
    return 0;
}

/* Answer -SHARDDOWN when routing is not complete. Returns 0 when it is. */
static int coord_need_routing(coord *co, rs_req *r)
{
    if (co->routing_ok)
        return 0;
    co->st.err_sharddown++;
    for (size_t i = 0; i < co->nw; i++)
        if (co->w[i].health == W_MISMATCH) {
            rs_req_fail(r, RS_MISMATCH, "shard worker %s unavailable: %s", co->w[i].addr,
                        co->w[i].problem);
            return -1;
        }
    rs_req_fail(r, RS_SHARDDOWN, "%s", co->routing_why[0] ? co->routing_why :
                "shard workers do not cover every shard (see SIMHASH.INFO)");
    return -1;
}


static const char *coord_req_arg(void *r, size_t i, size_t *len)
{
    return rs_req_arg(r, i, len);
}

int coord_query_options(coord *co, rs_req *r, size_t from, unsigned allow, coord_qopts *o)
{
    char err[256];
    if (coord_qopts_parse(co->cfg.distance, coord_req_arg, r, rs_req_argc(r), from, allow, o,
                          err, sizeof(err)) == 0)
        return 0;
    rs_req_fail(r, RS_ERR, "%s", err);
    return -1;
}

void coord_cmd_query(rs_req *r)
{
    coord *co = rs_req_ctx(r);
    uint64_t q;
    coord_qopts qo;
    if (coord_arg_fp(r, 1, &q) != 0 ||
        coord_query_options(co, r, 2, COORD_OPT_DISTANCE | COORD_OPT_LIMIT, &qo) != 0 ||
        coord_need_routing(co, r) != 0)
        return;
    co->st.queries++;
    coord_qstate *s;
    coord_op *op = coord_query_op_new(co, r, coord_query_reply, q, qo.d, &s);
    if (op == NULL)
        return;
    s->limit = qo.limit;
    coord_query_start(op);
}

/* CHECK / CHECKTEXT: docid at argument di; fingerprint q. */
static void coord_check_start(coord *co, rs_req *r, coord_write_kind kind, uint64_t q, size_t di,
                              unsigned d)
{
    size_t n;
    const char *docid = rs_req_arg(r, di, &n);
    co->st.checks++;
    coord_qstate *s;
    coord_op *op = coord_query_op_new(co, r, coord_check_write, q, d, &s);
    if (op == NULL)
        return;
    s->check_kind = kind;
    s->pairs = malloc(sizeof(*s->pairs));
    if (s->pairs == NULL) {
        coord_op_fail(op, RS_OOM, "out of memory");
        return;
    }
    s->pairs[0].fp = q;
    s->pairs[0].docid = docid;
    s->pairs[0].len = n;
    coord_query_start(op);
}

void coord_cmd_check(rs_req *r)
{
    coord *co = rs_req_ctx(r);
    uint64_t q;
    coord_qopts qo;
    if (coord_arg_fp(r, 1, &q) != 0 || coord_arg_docid(r, 2) != 0 ||
        coord_query_options(co, r, 3, COORD_OPT_DISTANCE, &qo) != 0 ||
        coord_need_routing(co, r) != 0)
        return;
    coord_check_start(co, r, CW_CHECK, q, 2, qo.d);
}

/* CHECKTEXT once its text is fingerprinted (textfp.c); d: the DISTANCE. */
static void coord_checktext_then(rs_req *r, uint64_t fp, unsigned d)
{
    coord_check_start(rs_req_ctx(r), r, CW_CHECKTEXT, fp, 1, d);
}

void coord_cmd_checktext(rs_req *r)
{
    coord *co = rs_req_ctx(r);
    coord_qopts qo;
    if (coord_arg_docid(r, 1) != 0 ||
        coord_query_options(co, r, 3, COORD_OPT_DISTANCE | COORD_OPT_FORMAT, &qo) != 0 ||
        coord_need_routing(co, r) != 0)
        return;
    coord_textfp(co, r, 2, qo.html, coord_checktext_then, qo.d);
}

/* ---- ADD, DEL (write.c runs them) ---- */

void coord_cmd_add(rs_req *r)
{
    coord *co = rs_req_ctx(r);
    size_t argc = rs_req_argc(r);
    if (argc % 2 != 1) {
        rs_req_fail(r, RS_ERR, "wrong number of arguments for 'simhash.add' command "
                    "(expected fp docid [fp docid ...])");
        return;
    }
    size_t np = (argc - 1) / 2;
    coord_pair *pairs = malloc(np * sizeof(*pairs));
    if (pairs == NULL) {
        rs_req_fail(r, RS_OOM, "out of memory");
        return;
    }
    for (size_t i = 0; i < np; i++) {
        if (coord_arg_fp(r, 1 + 2 * i, &pairs[i].fp) != 0 || coord_arg_docid(r, 2 + 2 * i) != 0) {
            free(pairs);
            return;
        }
        pairs[i].docid = rs_req_arg(r, 2 + 2 * i, &pairs[i].len);
    }
    if (coord_need_routing(co, r) != 0) {
        free(pairs);
        return;
    }
    co->st.adds++;
    coord_waiter w = { .req = r, .kind = CW_ADD };
    resp_buf_init(&w.saved, 0);
    if (np == 1 && coord_merge_add(co, &w, &pairs[0]) == 0) {
        free(pairs);
        return;
    }
    coord_op *op = coord_op_new(co, r);
    if (op == NULL) {
        free(pairs);
        return;
    }
    if (coord_write_new(op, CW_ADD, pairs, np) != NULL)
        coord_write_start(op);
}

void coord_cmd_del(rs_req *r)
{
    coord *co = rs_req_ctx(r);
    size_t argc = rs_req_argc(r);
    coord_pair *p;
    if (argc > 3) {
        rs_req_fail(r, RS_ERR, "wrong number of arguments for 'simhash.del' command "
                    "(expected fp [docid])");
        return;
    }
    if ((p = malloc(sizeof(*p))) == NULL) {
        rs_req_fail(r, RS_OOM, "out of memory");
        return;
    }
    p->docid = NULL;
    p->len = 0;
    if (coord_arg_fp(r, 1, &p->fp) != 0 || (argc == 3 && coord_arg_docid(r, 2) != 0) ||
        coord_need_routing(co, r) != 0) {
        free(p);
        return;
    }
    if (argc == 3)
        p->docid = rs_req_arg(r, 2, &p->len);
    co->st.dels++;
    coord_op *op = coord_op_new(co, r);
    if (op == NULL) {
        free(p);
        return;
    }
    coord_write *wr = coord_write_new(op, CW_DEL, p, 1);
    if (wr == NULL)
        return;
    coord_write_set_del(wr, argc == 2);
    coord_write_start(op);
}
