/* scan.c: SHARD.SCAN, the walk over a corpus's fingerprints that `simhash export` and
 * `simhash migrate` use (through the coordinator's SIMHASH.SCAN). The walk goes up
 * table 0's permuted values p: the buckets of p's first-byte shard are the ones its
 * directory lists (docs/elastic-buckets.md), each holding a range of values in member
 * (= numeric) order, so "every value from p on" is a ZRANGEBYLEX of p's bucket from
 * p's member, then of the next buckets from their start (the layout's walk). One call
 * reads at most `count` buckets of p's shard, and at most about `limit` values (each
 * bucket's read is capped; a bucket that fills its cap ends the call, and the next
 * call continues after its last value). Continuing after a value, not at an offset,
 * is what makes the walk exact under concurrent writes: every value stored for the
 * whole walk is returned exactly once; one added or removed meanwhile may or may not
 * be (docs/protocol.md). A directory names only the buckets that exist, so the cost
 * of a walk follows the data, not the key space. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "layout.h"
#include "parse.h"
#include "shard.h"

#define SHARD_SCAN_MAX_BUCKETS 1024     /* buckets one SHARD.SCAN reads at most */
#define SHARD_SCAN_MAX_LIMIT 65536      /* values one SHARD.SCAN returns at most (about) */

typedef struct shard_scan {
    uint64_t from;              /* the value asked for */
    unsigned count, limit;
    unsigned n;                 /* buckets read */
    uint64_t *first;            /* per bucket read: the first value it can hold */
    unsigned cap;               /* values read per bucket at most */
    uint64_t **ps;              /* per bucket: its permuted values, ascending */
    size_t *nps;
    unsigned char *full;        /* per bucket: its read filled the cap (more may follow) */
    uint64_t after;             /* the value to continue at when none is full: the
                                 * first of the bucket past the window, or of the next
                                 * shard (0 past the last) */
} shard_scan;

static void shard_scan_reads_free(shard_scan *s)
{
    for (unsigned i = 0; s->ps && i < s->n; i++)
        free(s->ps[i]);
    free(s->ps);
    free(s->nps);
    free(s->full);
    free(s->first);
    s->ps = NULL;
    s->nps = NULL;
    s->full = NULL;
    s->first = NULL;
    s->n = 0;
}

static void shard_scan_free(void *p)
{
    shard_scan *s = p;
    shard_scan_reads_free(s);
    free(s);
}

/* Room for reads of n buckets with `limit` values in all. Returns 0, or -1. */
static int shard_scan_reads_alloc(shard_scan *s, unsigned n)
{
    s->ps = calloc(n, sizeof *s->ps);
    s->nps = calloc(n, sizeof *s->nps);
    s->full = calloc(n, 1);
    s->first = calloc(n, sizeof *s->first);
    s->n = n;
    s->cap = (s->limit + n - 1) / n;
    return s->ps && s->nps && s->full && s->first ? 0 : -1;
}

static int shard_scan_absorb(shard_job *j, const shard_slot *sl, redisReply *rep,
                             const char **why)
{
    shard_scan *s = j->state;
    const shard_ctx *sc = j->sc;
    if (rep->type != REDIS_REPLY_ARRAY) {
        *why = "unexpected reply to ZRANGEBYLEX";
        return -1;
    }
    if (rep->elements == 0)
        return 0;
    uint64_t *v = malloc(rep->elements * sizeof *v);
    if (v == NULL) {
        *why = "out of memory";
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < rep->elements; i++) {
        const redisReply *e = rep->element[i];
        uint64_t p;
        if (e->type == REDIS_REPLY_STRING &&
            sc->lay.ops->member_decode(&sc->lay, sl->bucket, e->str, e->len, &p) == 0)
            v[k++] = p;     /* else foreign data in the key: fsck reports it */
    }
    s->ps[sl->idx] = v;
    s->nps[sl->idx] = k;
    /* a full read ends the call at its last value, even when foreign members made
     * fewer values out of it */
    s->full[sl->idx] = rep->elements == s->cap;
    return 0;
}

/* Writes [next, fp ...] of the buckets read and answers. */
static void shard_scan_answer(shard_job *j)
{
    shard_scan *s = j->state;
    const shard_ctx *sc = j->sc;
    resp_buf *out = rs_req_out(j->req);
    size_t total = 0;
    unsigned upto = s->n;           /* buckets whose values are answered */
    uint64_t next;
    for (unsigned i = 0; i < s->n; i++) {
        total += s->nps[i];
        if (s->full[i]) {
            upto = i + 1;
            break;
        }
    }
    if (s->n > 0 && s->full[upto - 1]) {
        /* continue after the last value read of the full bucket */
        size_t k = s->nps[upto - 1];
        uint64_t last = k ? s->ps[upto - 1][k - 1] : s->first[upto - 1];
        next = last + 1;    /* 0 after the very last value: the walk is over */
    } else {
        next = s->after;
    }
    resp_add_array(out, 1 + total);
    resp_add_bulk_u64(out, next);
    for (unsigned i = 0; i < upto; i++)
        for (size_t k = 0; k < s->nps[i]; k++)
            resp_add_bulk_u64(out, perm_revert(&sc->ps.tables[0], s->ps[i][k]));
    shard_job_answer(j);
}

static const shard_job_ops shard_scan_window_ops = {shard_scan_absorb, shard_scan_answer,
                                                    NULL, shard_scan_free, NULL};

/* Sends the reads of the walk's buckets 0..n (the first from s->from's value on) on
 * j's slots. */
static void shard_scan_send_reads(shard_job *j)
{
    shard_scan *s = j->state;
    shard_ctx *sc = j->sc;
    char capstr[16];
    snprintf(capstr, sizeof capstr, "%u", s->cap);
    for (unsigned i = 0; i < s->n && j->req; i++) {
        layout_walk w;
        sc->lay.ops->walk(&sc->lay, s->from, i, &w);
        const layout_read *rd = &w.read;
        const char *argv[7] = {"ZRANGEBYLEX", rd->key, (const char *)rd->lo,
                               (const char *)rd->hi, "LIMIT", "0", capstr};
        size_t lens[7] = {11, rd->klen, rd->lo_len, rd->hi_len, 5, 1, strlen(capstr)};
        s->first[i] = w.first;
        j->slots[i].idx = i;
        j->slots[i].bucket = rd->tag;
        j->slots[i].dir = shard_dir_id(0, layout_shard_of(s->from));
        shard_job_send(j, i, 7, argv, lens);
    }
}

/* SHARD.SCAN from count limit: the fingerprints whose table-0 value is from or more,
 * in at most count buckets of from's first-byte shard and about limit values;
 * answers [next from (bulk string; 0: the walk is over), fp ...]. */
void shard_cmd_scan(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    sc->st.requests++;
    uint64_t from, count, limit;
    const char *why;
    size_t len;
    const char *a;
    a = rs_req_arg(req, 1, &len);
    if (parse_u64(a, len, &from, &why) != 0) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "from: %s", why);
        return;
    }
    a = rs_req_arg(req, 2, &len);
    if (parse_uint_range(a, len, 1, SHARD_SCAN_MAX_BUCKETS, &count, &why) != 0) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "count: %s", why);
        return;
    }
    a = rs_req_arg(req, 3, &len);
    if (parse_uint_range(a, len, 1, SHARD_SCAN_MAX_LIMIT, &limit, &why) != 0) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "limit: %s", why);
        return;
    }
    uint32_t dir = shard_dir_id(0, layout_shard_of(from));
    if (shard_check_owner(req, 0, from) != 0 || shard_dirs_ready(req, shard_cmd_scan, &dir, 1) != 1)
        return;
    layout_walk w;              /* the buckets of from's shard from from's on */
    unsigned n = 0;
    while (n < count && sc->lay.ops->walk(&sc->lay, from, n, &w))
        n++;
    sc->lay.ops->walk(&sc->lay, from, n, &w);  /* the bucket past the window */
    if (shard_check_redis(req, n) != 0)
        return;
    shard_scan *s = calloc(1, sizeof *s);
    shard_job *j = NULL;
    if (s) {
        s->from = from;
        s->count = (unsigned)count;
        s->limit = (unsigned)limit;
        s->after = w.first;
        if (shard_scan_reads_alloc(s, n) == 0)
            j = shard_job_new(sc, req, &shard_scan_window_ops, s, n);
    }
    if (j == NULL) {
        if (s)
            shard_scan_free(s);
        shard_oom(req);
        return;
    }
    j->rerun = shard_cmd_scan;
    shard_scan_send_reads(j);
    shard_job_release(j);
}
