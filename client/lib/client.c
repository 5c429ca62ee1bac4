/* client.c: libsimhashclient's commands over blocking hiredis: the single-item ones
 * (SIMHASH.ADD, DEL, QUERY, CHECK, FINGERPRINT, CHECKTEXT, INFO) and the pipelined
 * bulk forms. Connections and retries are in client_conn.c. */
#include "client_int.h"

#include "fingerprint.h"
#include "html.h"
#include "parse.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Argument helpers ---- */

/* Check a document id. Returns SHC_OK or SHC_ERR_ARG with text. */
static shc_status shci_check_docid(shc_client *c, const char *docid)
{
    size_t len;

    if (!docid)
        return shci_set_error(c, SHC_ERR_ARG, "no document id given");
    len = strnlen(docid, SHC_DOCID_MAX + 1);
    if (len == 0)
        return shci_set_error(c, SHC_ERR_ARG, "empty document id");
    if (len > SHC_DOCID_MAX)
        return shci_set_error(c, SHC_ERR_ARG, "document id longer than %d bytes",
                             SHC_DOCID_MAX);
    return SHC_OK;
}

/* Check a distance argument (-1 or 0..64). Returns SHC_OK or SHC_ERR_ARG. */
static shc_status shci_check_distance(shc_client *c, int distance)
{
    if (distance < -1 || distance > 64)
        return shci_set_error(c, SHC_ERR_ARG, "distance %d out of range (0..64, or -1 for "
                             "the corpus distance)", distance);
    return SHC_OK;
}

/* Expect an integer reply; returns SHC_OK with *v, or SHC_ERR_PROTOCOL. */
static shc_status shci_want_integer(shc_client *c, const redisReply *r, const char *cmd,
                                    long long *v)
{
    if (r->type != REDIS_REPLY_INTEGER)
        return shci_set_error(c, SHC_ERR_PROTOCOL, "%s: expected an integer reply (type %d)",
                             cmd, r->type);
    if (v)
        *v = r->integer;
    return SHC_OK;
}

/* ---- Commands ---- */

/* SIMHASH.ADD / SIMHASH.DEL of one fingerprint (docid optional for DEL only) with an
 * integer reply in *n. */
static shc_status shci_write_one(shc_client *c, const char *cmd, uint64_t fp, const char *docid,
                                 long long *n)
{
    char fps[24];
    redisReply *r;
    shc_status st;

    if (!c)
        return SHC_ERR_ARG;
    if (docid && (st = shci_check_docid(c, docid)) != SHC_OK)
        return st;
    snprintf(fps, sizeof(fps), "%" PRIu64, fp);
    const char *argv[3] = { cmd, fps, docid };
    size_t lens[3] = { strlen(cmd), strlen(fps), docid ? strlen(docid) : 0 };
    if ((st = shci_run(c, docid ? 3 : 2, argv, lens, &r)) != SHC_OK)
        return st;
    st = shci_want_integer(c, r, cmd, n);
    freeReplyObject(r);
    return st;
}

shc_status shc_add(shc_client *c, uint64_t fp, const char *docid, long long *added)
{
    if (c && !docid)
        return shci_check_docid(c, docid);
    return shci_write_one(c, "SIMHASH.ADD", fp, docid, added);
}

shc_status shc_del(shc_client *c, uint64_t fp, const char *docid, long long *removed)
{
    return shci_write_one(c, "SIMHASH.DEL", fp, docid, removed);
}

/* Build the arguments of SIMHASH.QUERY / CHECK in argv (room for 7) using the
 * caller's buffers; returns argc. */
static int shci_query_args(const char **argv, size_t *lens, const char *cmd, const char *fps,
                           const char *docid, int distance, size_t limit, char *dbuf, char *lbuf)
{
    int n = 0;

    argv[n++] = cmd;
    argv[n++] = fps;
    if (docid)
        argv[n++] = docid;
    if (distance >= 0) {
        snprintf(dbuf, 12, "%d", distance);
        argv[n++] = "DISTANCE";
        argv[n++] = dbuf;
    }
    if (limit > 0) {
        snprintf(lbuf, 24, "%zu", limit);
        argv[n++] = "LIMIT";
        argv[n++] = lbuf;
    }
    for (int i = 0; i < n; i++)
        lens[i] = strlen(argv[i]);
    return n;
}

/* SIMHASH.QUERY (docid NULL) or SIMHASH.CHECK (docid given) of fp; matches in *out. */
/* A check sent again after a lost connection may find the pair its first try stored:
 * the document's own id under its own fingerprint is not a match of the check. */
static void shci_drop_own(shc_result *r, uint64_t fp, const char *docid)
{
    size_t dl = strlen(docid), k = 0;
    for (size_t i = 0; r && i < r->nmatches; i++) {
        shc_match *m = &r->matches[i];
        if (m->fp == fp) {
            size_t o = 0;
            for (size_t j = 0; j < m->ndocids; j++) {
                if (m->docid_lens[j] == dl && memcmp(m->docids[j], docid, dl) == 0) {
                    free(m->docids[j]);
                    continue;
                }
                m->docids[o] = m->docids[j];
                m->docid_lens[o++] = m->docid_lens[j];
            }
            m->ndocids = o;
            if (o == 0) {
                free(m->docids);
                free(m->docid_lens);
                continue;
            }
        }
        r->matches[k++] = *m;
    }
    if (r)
        r->nmatches = k;
}

static shc_status shci_query_one(shc_client *c, uint64_t fp, const char *docid, int distance,
                                 size_t limit, shc_result **out)
{
    char fps[24], dbuf[12], lbuf[24];
    const char *argv[7];
    size_t lens[7];
    redisReply *r;
    shc_status st;

    if (!out)
        return c ? shci_set_error(c, SHC_ERR_ARG, "no result pointer given") : SHC_ERR_ARG;
    *out = NULL;
    if (!c)
        return SHC_ERR_ARG;
    if (docid && (st = shci_check_docid(c, docid)) != SHC_OK)
        return st;
    if ((st = shci_check_distance(c, distance)) != SHC_OK)
        return st;
    snprintf(fps, sizeof(fps), "%" PRIu64, fp);
    int argc = shci_query_args(argv, lens, docid ? "SIMHASH.CHECK" : "SIMHASH.QUERY", fps,
                               docid, distance, limit, dbuf, lbuf);
    if ((st = shci_run(c, argc, argv, lens, &r)) != SHC_OK)
        return st;
    st = shci_parse_result(c, r, out);
    freeReplyObject(r);
    if (st == SHC_OK && docid && c->retried)
        shci_drop_own(*out, fp, docid);
    return st;
}

shc_status shc_query(shc_client *c, uint64_t fp, int distance, size_t limit,
                     shc_result **out)
{
    return shci_query_one(c, fp, NULL, distance, limit, out);
}

shc_status shc_check(shc_client *c, uint64_t fp, const char *docid, int distance,
                     shc_result **out)
{
    if (c && out && !docid) {
        *out = NULL;
        return shci_check_docid(c, docid);
    }
    return shci_query_one(c, fp, docid, distance, 0, out);
}

shc_status shc_check_text(shc_client *c, const char *docid, const char *text, size_t len,
                          uint64_t *fp, shc_result **out)
{
    return shc_check_text_as(c, docid, text, len, SHC_FORMAT_TEXT, -1, fp, out);
}

/* The FORMAT value of a SHC_FORMAT_* ("text", "html", "html-all"), NULL if unknown. */
static const char *shci_format_arg(int format)
{
    static const char *const names[] = { "text", "html", "html-all" };
    return format >= 0 && format < 3 ? names[format] : NULL;
}

shc_status shc_check_text_as(shc_client *c, const char *docid, const char *text, size_t len,
                             int format, int distance, uint64_t *fp, shc_result **out)
{
    redisReply *r;
    shc_status st;
    uint64_t v = 0;

    if (!out)
        return c ? shci_set_error(c, SHC_ERR_ARG, "no result pointer given") : SHC_ERR_ARG;
    *out = NULL;
    if (!c)
        return SHC_ERR_ARG;
    if ((st = shci_check_docid(c, docid)) != SHC_OK)
        return st;
    if (!text && len > 0)
        return shci_set_error(c, SHC_ERR_ARG, "no text given");
    const char *fmt = shci_format_arg(format);
    if (fmt == NULL)
        return shci_set_error(c, SHC_ERR_ARG, "format must be SHC_FORMAT_TEXT, "
                              "SHC_FORMAT_HTML or SHC_FORMAT_HTML_ALL");
    if (distance > 64 || distance < -1)
        return shci_set_error(c, SHC_ERR_ARG, "distance %d out of range (-1..64)", distance);
    char dbuf[8];
    const char *argv[7] = { "SIMHASH.CHECKTEXT", docid, text ? text : "" };
    size_t lens[7] = { SHCI_LITLEN("SIMHASH.CHECKTEXT"), strlen(docid), len };
    int argc = 3;
    if (format != SHC_FORMAT_TEXT) {
        argv[argc] = "FORMAT";
        lens[argc++] = 6;
        argv[argc] = fmt;
        lens[argc++] = strlen(fmt);
    }
    if (distance >= 0) {
        snprintf(dbuf, sizeof dbuf, "%d", distance);
        argv[argc] = "DISTANCE";
        lens[argc++] = 8;
        argv[argc] = dbuf;
        lens[argc++] = strlen(dbuf);
    }
    if ((st = shci_run(c, argc, argv, lens, &r)) != SHC_OK)
        return st;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
        st = shci_set_error(c, SHC_ERR_PROTOCOL,
                           "SIMHASH.CHECKTEXT: expected an array of 2 (fingerprint, matches)");
    } else if ((st = shci_parse_fp_reply(c, r->element[0], "SIMHASH.CHECKTEXT", &v)) == SHC_OK &&
               (st = shci_parse_result(c, r->element[1], out)) == SHC_OK) {
        if (c->retried)
            shci_drop_own(*out, v, docid);
        if (fp)
            *fp = v;
    }
    freeReplyObject(r);
    return st;
}

shc_status shc_fingerprint(shc_client *c, const char *text, size_t len, uint64_t *fp)
{
    return shc_fingerprint_as(c, text, len, SHC_FORMAT_TEXT, fp);
}

shc_status shc_fingerprint_as(shc_client *c, const char *text, size_t len, int format,
                              uint64_t *fp)
{
    redisReply *r;
    shc_status st;
    uint64_t v = 0;

    if (!c)
        return SHC_ERR_ARG;
    if (!fp || (!text && len > 0))
        return shci_set_error(c, SHC_ERR_ARG, "no text or result pointer given");
    const char *fmt = shci_format_arg(format);
    if (fmt == NULL)
        return shci_set_error(c, SHC_ERR_ARG, "format must be SHC_FORMAT_TEXT, "
                              "SHC_FORMAT_HTML or SHC_FORMAT_HTML_ALL");
    const char *argv[4] = { "SIMHASH.FINGERPRINT", text ? text : "", "FORMAT", fmt };
    size_t lens[4] = { SHCI_LITLEN("SIMHASH.FINGERPRINT"), len, 6, strlen(fmt) };
    if ((st = shci_run(c, format != SHC_FORMAT_TEXT ? 4 : 2, argv, lens, &r)) != SHC_OK)
        return st;
    st = shci_parse_fp_reply(c, r, "SIMHASH.FINGERPRINT", &v);
    if (st == SHC_OK)
        *fp = v;
    freeReplyObject(r);
    return st;
}

shc_status shc_add_pairs(shc_client *c, const uint64_t *fps, const char *const *docids,
                         const size_t *lens, size_t n, long long *added)
{
    redisReply *r;
    shc_status st;

    if (!c)
        return SHC_ERR_ARG;
    if (added)
        *added = 0;
    if (n == 0)
        return shci_set_ok(c);
    if (!fps || !docids)
        return shci_set_error(c, SHC_ERR_ARG, "no pairs given");
    if (n > 32767)
        return shci_set_error(c, SHC_ERR_ARG, "%zu pairs: at most 32767 per call", n);
    const char **argv = malloc((2 * n + 1) * sizeof *argv);
    size_t *alen = malloc((2 * n + 1) * sizeof *alen);
    char (*num)[24] = malloc(n * sizeof *num);
    if (!argv || !alen || !num) {
        free(argv);
        free(alen);
        free(num);
        return shci_set_error(c, SHC_ERR_NOMEM, "out of memory");
    }
    argv[0] = "SIMHASH.ADD";
    alen[0] = SHCI_LITLEN("SIMHASH.ADD");
    st = SHC_OK;
    for (size_t i = 0; i < n && st == SHC_OK; i++) {
        size_t l = lens ? lens[i] : (docids[i] ? strlen(docids[i]) : 0);
        if (!docids[i] || l == 0 || l > SHC_DOCID_MAX)
            st = shci_set_error(c, SHC_ERR_ARG, "pair %zu: document id empty or longer than "
                                "%d bytes", i, SHC_DOCID_MAX);
        argv[1 + 2 * i] = num[i];
        alen[1 + 2 * i] = (size_t)snprintf(num[i], sizeof num[i], "%llu",
                                           (unsigned long long)fps[i]);
        argv[2 + 2 * i] = docids[i];
        alen[2 + 2 * i] = l;
    }
    if (st == SHC_OK && (st = shci_run(c, (int)(2 * n + 1), argv, alen, &r)) == SHC_OK) {
        if (r->type != REDIS_REPLY_INTEGER)
            st = shci_set_error(c, SHC_ERR_PROTOCOL, "SIMHASH.ADD: expected an integer");
        else if (added)
            *added = r->integer;
        freeReplyObject(r);
    }
    free(argv);
    free(alen);
    free(num);
    return st == SHC_OK ? shci_set_ok(c) : st;
}

shc_status shc_scan(shc_client *c, uint64_t cursor, unsigned count, uint64_t *next,
                    shc_result **out)
{
    redisReply *r;
    shc_status st;
    char cur[24], cnt[16];

    if (!c)
        return SHC_ERR_ARG;
    if (!next || !out)
        return shci_set_error(c, SHC_ERR_ARG, "no result pointer given");
    *out = NULL;
    if (count > 1024)
        return shci_set_error(c, SHC_ERR_ARG, "count %u: at most 1024 buckets per step", count);
    const char *argv[4] = { "SIMHASH.SCAN", cur, "COUNT", cnt };
    size_t lens[4] = { SHCI_LITLEN("SIMHASH.SCAN"),
                       (size_t)snprintf(cur, sizeof cur, "%llu", (unsigned long long)cursor),
                       5, (size_t)snprintf(cnt, sizeof cnt, "%u", count) };
    if ((st = shci_run(c, count ? 4 : 2, argv, lens, &r)) != SHC_OK)
        return st;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[1]->type != REDIS_REPLY_ARRAY) {
        st = shci_set_error(c, SHC_ERR_PROTOCOL, "SIMHASH.SCAN: expected [cursor, [entries]]");
    } else if (shci_parse_fp_reply(c, r->element[0], "SIMHASH.SCAN cursor", next) == SHC_OK) {
        st = shci_parse_matches(c, r->element[1], 1, out);
    } else {
        st = SHC_ERR_PROTOCOL;
    }
    freeReplyObject(r);
    return st == SHC_OK ? shci_set_ok(c) : st;
}

shc_status shc_info(shc_client *c, char **text, size_t *len)
{
    redisReply *r;
    shc_status st;

    if (!c)
        return SHC_ERR_ARG;
    if (!text)
        return shci_set_error(c, SHC_ERR_ARG, "no result pointer given");
    *text = NULL;
    if (len)
        *len = 0;
    const char *argv[1] = { "SIMHASH.INFO" };
    size_t lens[1] = { SHCI_LITLEN("SIMHASH.INFO") };
    if ((st = shci_run(c, 1, argv, lens, &r)) != SHC_OK)
        return st;
    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
        st = shci_set_error(c, SHC_ERR_PROTOCOL, "SIMHASH.INFO: expected a bulk string (type %d)",
                           r->type);
    } else if (!(*text = malloc(r->len + 1))) {
        st = shci_set_error(c, SHC_ERR_NOMEM, "out of memory");
    } else {
        memcpy(*text, r->str, r->len);
        (*text)[r->len] = '\0';
        if (len)
            *len = r->len;
    }
    freeReplyObject(r);
    return st;
}

uint64_t shc_fingerprint_local(const char *text, size_t len)
{
    if (!text)
        return 0;
    return fp_text_p(text, len, NULL);
}

int shc_fingerprint_local_as(const char *text, size_t len, const char *algorithm, int format,
                             uint64_t *fp)
{
    fp_params p = {FP_VERSION_DEFAULT, 0};
    char err[160];
    if (!fp || (!text && len > 0) || shci_format_arg(format) == NULL)
        return -1;
    if (algorithm && fp_params_parse(algorithm, &p, err, sizeof err) != 0)
        return -1;
    if (format == SHC_FORMAT_TEXT) {
        *fp = fp_text_p(text ? text : "", len, &p);
        return 0;
    }
    return fp_html_text(text ? text : "", len, &p,
                        format == SHC_FORMAT_HTML_ALL ? FP_HTML_ALL_TEXT : 0, fp, err, sizeof err);
}

/* ---- Pipelined bulk forms ---- */

/* What a bulk call does per item: fill argv/lens (room for 7) for item i and return
 * argc, or handle the reply of item i. */
typedef struct bulk_ops {
    int (*build)(void *ctx, size_t i, const char **argv, size_t *lens, char *b1,
                 char *b2, char *b3);
    shc_status (*reply)(void *ctx, shc_client *c, size_t i, const redisReply *r);
    void *ctx;
} bulk_ops;

/* Send n commands in batches of SHC_BATCH, pipelined, and hand every reply to ops.
 * Error replies and bad shapes are per-item failures; I/O errors stop the call and
 * mark the remaining items, unless another address takes over: with several, the
 * items from the first one without a reply are sent again there (bulk calls are adds
 * and queries, safe to repeat), each address at most once per call. Returns the
 * overall status described in client.h. */
static shc_status shci_run_bulk(shc_client *c, size_t n, const bulk_ops *ops,
                                shc_status *item_status, shc_bulk_report *rep)
{
    char first_err[SHC_ERRSTR_MAX] = "";
    shc_status first_st = SHC_OK;
    shc_status st;
    size_t start;

    uint64_t tried = c->naddr ? 1ull << c->cur : 0;
    memset(rep, 0, sizeof(*rep));
    c->retried = 0;
    for (start = 0; start < n;) {
        size_t end = n - start > SHC_BATCH ? start + SHC_BATCH : n;

        if ((st = shci_ensure_connected(c)) != SHC_OK)
            goto fatal_from_start;
        for (size_t i = start; i < end; i++) {
            char b1[24], b2[24], b3[24];
            const char *argv[7];
            size_t lens[7];
            int argc = ops->build(ops->ctx, i, argv, lens, b1, b2, b3);
            if (redisAppendCommandArgv(c->rc, argc, argv, lens) != REDIS_OK) {
                st = shci_set_error(c, SHC_ERR_NOMEM, "out of memory queueing item %zu", i);
                redisFree(c->rc);
                c->rc = NULL;
                goto fatal_from_start;
            }
        }
        for (size_t i = start; i < end; i++) {
            redisReply *r = NULL;
            errno = 0;
            if (redisGetReply(c->rc, (void **)&r) != REDIS_OK || !r) {
                st = shci_conn_failed(c, "lost connection to", errno);
                start = i;
                if (c->naddr > 1 && (st == SHC_ERR_IO || st == SHC_ERR_TIMEOUT)) {
                    char first[SHC_ERRSTR_MAX];
                    memcpy(first, c->errstr, sizeof first);
                    if (shci_failover(c, &tried) == SHC_OK) {
                        c->retried = 1;
                        goto next_batch;      /* items i.. again, on the next address */
                    }
                    memcpy(c->errstr, first, sizeof first);
                    c->last = st;
                }
                goto fatal_from_start;
            }
            if (r->type == REDIS_REPLY_ERROR) {
                char prefix[48];
                snprintf(prefix, sizeof(prefix), "item %zu: ", i);
                st = shci_reply_error(c, r, prefix);
            } else {
                st = ops->reply(ops->ctx, c, i, r);
                if (st != SHC_OK) {
                    char prefix[48];
                    snprintf(prefix, sizeof(prefix), "item %zu: ", i);
                    shci_errstr_prefix(c, prefix);
                }
            }
            freeReplyObject(r);
            if (item_status)
                item_status[i] = st;
            if (st == SHC_OK) {
                rep->ok++;
            } else {
                if (rep->failed++ == 0) {
                    rep->first_failed = i;
                    first_st = st;
                    memcpy(first_err, c->errstr, sizeof(first_err));
                }
            }
        }
        start = end;
next_batch:;
    }
    if (rep->failed == 0)
        return shci_set_ok(c);
    c->last = first_st;
    memcpy(c->errstr, first_err, sizeof(first_err));
    return first_st;

fatal_from_start:
    /* Items from start on have no reply: they count as failed with st. */
    if (rep->failed == 0 && start < n)
        rep->first_failed = start;
    for (size_t i = start; i < n; i++) {
        if (item_status)
            item_status[i] = st;
        rep->failed++;
    }
    return st;
}

/* The items idx[0..m) of a bulk call as a bulk call of their own. */
typedef struct sub_ctx {
    const bulk_ops *ops;
    const size_t *idx;
} sub_ctx;

static int shci_sub_build(void *ctx, size_t j, const char **argv, size_t *lens, char *b1,
                          char *b2, char *b3)
{
    sub_ctx *s = ctx;
    return s->ops->build(s->ops->ctx, s->idx[j], argv, lens, b1, b2, b3);
}

static shc_status shci_sub_reply(void *ctx, shc_client *c, size_t j, const redisReply *r)
{
    sub_ctx *s = ctx;
    return s->ops->reply(s->ops->ctx, c, s->idx[j], r);
}

void shc_set_bulk_retry(shc_client *c, unsigned budget_ms)
{
    if (c)
        c->bulk_retry_ms = budget_ms;
}

/* Whether a bulk item answered st is sent again (see shc_set_bulk_retry). */
static int shci_bulk_retryable(const shc_client *c, shc_status st)
{
    return st == SHC_ERR_TIMEOUT || (c->bulk_retry_ms > 0 && st == SHC_ERR_SERVER);
}

/* shci_run_bulk, then the items answered -TIMEOUT (with several addresses), or a server
 * error or a timeout (with a bulk retry budget), sent again (pauses of 50 ms doubling to
 * 400 ms) until they succeed or the budget (the handle's timeout, or
 * shc_set_bulk_retry's) has passed; see shci_run's note on -TIMEOUT. */
static shc_status shci_run_bulk_retry(shc_client *c, size_t n, const bulk_ops *ops,
                                      shc_status *item_status, shc_bulk_report *rep)
{
    int retry = c->naddr > 1 || c->bulk_retry_ms > 0;
    shc_status *own = NULL, *status = item_status;
    if (retry && !status && n > 0) {
        own = malloc(n * sizeof(*own));
        if (!own)
            return shci_set_error(c, SHC_ERR_NOMEM, "out of memory");
        status = own;
    }
    shc_status st = shci_run_bulk(c, n, ops, status, rep);
    if (!retry || rep->failed == 0) {
        free(own);
        return st;
    }
    size_t first0 = rep->first_failed;
    char err0[SHC_ERRSTR_MAX];
    memcpy(err0, c->errstr, sizeof err0);
    size_t *idx = malloc(rep->failed * sizeof(*idx));
    shc_status *sst = malloc(rep->failed * sizeof(*sst));
    long long until = shci_now_ms() +
                      (c->bulk_retry_ms > 0 ? (long long)c->bulk_retry_ms : shci_retry_budget(c));
    unsigned pause = 50;
    while (idx && sst && rep->failed > 0 && shci_now_ms() + pause < until) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (shci_bulk_retryable(c, status[i]))
                idx[m++] = i;
        if (m == 0)
            break;
        shci_backoff(&pause);
        sub_ctx sc = { ops, idx };
        bulk_ops sub = { shci_sub_build, shci_sub_reply, &sc };
        shc_bulk_report srep;
        shci_run_bulk(c, m, &sub, sst, &srep);
        for (size_t j = 0; j < m; j++) {
            status[idx[j]] = sst[j];
            if (sst[j] == SHC_OK) {
                rep->ok++;
                rep->failed--;
            }
        }
        c->retried = 1;
    }
    free(idx);
    free(sst);
    if (rep->failed == 0) {
        free(own);
        return shci_set_ok(c);
    }
    size_t f = 0;
    while (f < n && status[f] == SHC_OK)
        f++;
    rep->first_failed = f;
    if (f == first0) {
        memcpy(c->errstr, err0, sizeof err0);
    } else {
        shci_set_error(c, status[f], "item %zu: %s (after retries)", f,
                       shc_status_name(status[f]));
    }
    st = c->last = status[f];
    free(own);
    return st;
}

typedef struct add_ctx {
    const uint64_t *fps;
    const char *const *docids;
    shc_bulk_report *rep;
} add_ctx;

static int shci_add_build(void *ctx, size_t i, const char **argv, size_t *lens, char *b1,
                          char *b2, char *b3)
{
    add_ctx *a = ctx;
    (void)b2;
    (void)b3;
    snprintf(b1, 24, "%" PRIu64, a->fps[i]);
    argv[0] = "SIMHASH.ADD";
    argv[1] = b1;
    argv[2] = a->docids[i];
    lens[0] = SHCI_LITLEN("SIMHASH.ADD");
    lens[1] = strlen(b1);
    lens[2] = strlen(a->docids[i]);
    return 3;
}

static shc_status shci_add_reply(void *ctx, shc_client *c, size_t i, const redisReply *r)
{
    add_ctx *a = ctx;
    long long v = 0;
    shc_status st = shci_want_integer(c, r, "SIMHASH.ADD", &v);
    (void)i;
    if (st == SHC_OK)
        a->rep->added += v;
    return st;
}

shc_status shc_add_many(shc_client *c, const uint64_t *fps, const char *const *docids,
                        size_t n, shc_status *item_status, shc_bulk_report *report)
{
    shc_bulk_report local;
    shc_bulk_report *rep = report ? report : &local;
    shc_status st;

    memset(rep, 0, sizeof(*rep));
    if (!c)
        return SHC_ERR_ARG;
    if (n > 0 && (!fps || !docids))
        return shci_set_error(c, SHC_ERR_ARG, "no fingerprints or document ids given");
    for (size_t i = 0; i < n; i++) {
        if ((st = shci_check_docid(c, docids[i])) != SHC_OK) {
            char prefix[64];
            snprintf(prefix, sizeof(prefix), "nothing sent: item %zu: ", i);
            shci_errstr_prefix(c, prefix);
            return st;
        }
    }
    add_ctx a = { fps, docids, rep };
    bulk_ops ops = { shci_add_build, shci_add_reply, &a };
    shc_bulk_report got;
    st = shci_run_bulk_retry(c, n, &ops, item_status, &got);
    got.added = rep->added;
    *rep = got;
    return st;
}

typedef struct query_ctx {
    const uint64_t *fps;
    int distance;
    size_t limit;
    shc_result **results;
} query_ctx;

static int shci_query_build(void *ctx, size_t i, const char **argv, size_t *lens, char *b1,
                            char *b2, char *b3)
{
    query_ctx *q = ctx;
    snprintf(b1, 24, "%" PRIu64, q->fps[i]);
    return shci_query_args(argv, lens, "SIMHASH.QUERY", b1, NULL, q->distance, q->limit, b2, b3);
}

static shc_status shci_query_reply(void *ctx, shc_client *c, size_t i, const redisReply *r)
{
    query_ctx *q = ctx;
    return shci_parse_result(c, r, &q->results[i]);
}

shc_status shc_query_many(shc_client *c, const uint64_t *fps, size_t n, int distance,
                          size_t limit, shc_result **results, shc_status *item_status,
                          shc_bulk_report *report)
{
    shc_bulk_report local;
    shc_bulk_report *rep = report ? report : &local;
    shc_status st;

    memset(rep, 0, sizeof(*rep));
    if (!c)
        return SHC_ERR_ARG;
    if (n > 0 && (!fps || !results))
        return shci_set_error(c, SHC_ERR_ARG, "no fingerprints or result array given");
    for (size_t i = 0; i < n; i++)
        results[i] = NULL;
    if ((st = shci_check_distance(c, distance)) != SHC_OK)
        return st;
    query_ctx q = { fps, distance, limit, results };
    bulk_ops ops = { shci_query_build, shci_query_reply, &q };
    return shci_run_bulk_retry(c, n, &ops, item_status, rep);
}
