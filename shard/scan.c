/* scan.c: SHARD.SCAN, the walk over a corpus's fingerprints that `simhash export` and
 * `simhash migrate` use (through the coordinator's SIMHASH.SCAN). The walk goes up
 * table 0's permuted values p: a bucket holds the values with its top bucket_bits
 * bits, in member (= numeric) order, so "every value from p on" is a ZRANGEBYLEX of
 * p's bucket from p's member, then of the next buckets from their start. One call
 * reads at most `count` buckets of p's first-byte shard, and at most about `limit`
 * values (each bucket's read is capped; a bucket that fills its cap ends the call, and
 * the next call continues after its last value). Continuing after a value, not at an
 * offset, is what makes the walk exact under concurrent writes: every value stored
 * for the whole walk is returned exactly once; one added or removed meanwhile may or
 * may not be (docs/protocol.md). */
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
    unsigned n;                 /* buckets read */
    uint64_t first;             /* the first bucket's number */
    unsigned cap;               /* values read per bucket at most */
    uint64_t **ps;              /* per bucket: its permuted values, ascending */
    size_t *nps;
    unsigned char *full;        /* per bucket: its read filled the cap (more may follow) */
} shard_scan;

static void shard_scan_free(void *p)
{
    shard_scan *s = p;
    for (unsigned i = 0; s->ps && i < s->n; i++)
        free(s->ps[i]);
    free(s->ps);
    free(s->nps);
    free(s->full);
    free(s);
}

static int shard_scan_absorb(shard_job *j, const shard_slot *sl, redisReply *rep,
                             const char **why)
{
    shard_scan *s = j->state;
    const shard_config *c = &j->sc->cfg;
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
            layout_member_decode(e->str, e->len, sl->bucket, c->bucket_bits, &p) == 0)
            v[k++] = p;     /* else foreign data in the key: fsck reports it */
    }
    s->ps[sl->idx] = v;
    s->nps[sl->idx] = k;
    /* a full read ends the call at its last value, even when foreign members made
     * fewer values out of it */
    s->full[sl->idx] = rep->elements == s->cap;
    return 0;
}

static void shard_scan_done(shard_job *j)
{
    shard_scan *s = j->state;
    const unsigned bb = j->sc->cfg.bucket_bits;
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
        uint64_t last = k ? s->ps[upto - 1][k - 1]
                          : ((s->first + upto - 1) << (64 - bb));   /* all foreign */
        next = last + 1;    /* 0 after the very last value: the walk is over */
    } else {
        uint64_t nb = s->first + s->n;
        next = (bb == 64 || nb < ((uint64_t)1 << bb)) ? nb << (64 - bb) : 0;
    }
    resp_add_array(out, 1 + total);
    resp_add_bulk_u64(out, next);
    for (unsigned i = 0; i < upto; i++)
        for (size_t k = 0; k < s->nps[i]; k++)
            resp_add_bulk_u64(out, perm_revert(&j->sc->ps.tables[0], s->ps[i][k]));
    shard_job_answer(j);
}

static const shard_job_ops shard_scan_ops = {shard_scan_absorb, shard_scan_done, NULL,
                                             shard_scan_free};

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
    const unsigned bb = sc->cfg.bucket_bits;
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
    if (shard_check_owner(req, 0, from) != 0)
        return;
    uint64_t first = layout_bucket_of(from, bb);
    uint64_t shard_end = ((from >> 56) + 1) << (bb - 8);    /* first bucket past the shard */
    unsigned n = (unsigned)(count < shard_end - first ? count : shard_end - first);
    if (shard_check_redis(req, n) != 0)
        return;
    shard_scan *s = calloc(1, sizeof *s);
    if (s) {
        s->ps = calloc(n, sizeof *s->ps);
        s->nps = calloc(n, sizeof *s->nps);
        s->full = calloc(n, 1);
        s->n = n;
        s->first = first;
        s->cap = (unsigned)((limit + n - 1) / n);
    }
    shard_job *j = s && s->ps && s->nps && s->full ? shard_job_new(sc, req, &shard_scan_ops, s, n) : NULL;
    if (j == NULL) {
        if (s)
            shard_scan_free(s);
        shard_oom(req);
        return;
    }
    char capstr[16];
    snprintf(capstr, sizeof capstr, "%u", s->cap);
    for (unsigned i = 0; i < n && j->req; i++) {
        char key[LAYOUT_KEY_MAX];
        uint8_t lo[LAYOUT_RANGE_ARG_MAX];
        size_t lens[7];
        const char *argv[7];
        uint64_t bucket = first + i;
        j->slots[i].idx = i;
        j->slots[i].bucket = bucket;
        argv[0] = "ZRANGEBYLEX";
        argv[1] = key;
        lens[0] = 11;
        lens[1] = layout_bucket_key(key, sizeof key, 0, bucket, bb);
        if (i == 0) {       /* from from's member on */
            lo[0] = '[';
            lens[2] = 1 + layout_member(lo + 1, from, bb);
            argv[2] = (const char *)lo;
        } else {
            argv[2] = "-";
            lens[2] = 1;
        }
        argv[3] = "+";
        lens[3] = 1;
        argv[4] = "LIMIT";
        lens[4] = 5;
        argv[5] = "0";
        lens[5] = 1;
        argv[6] = capstr;
        lens[6] = strlen(capstr);
        shard_job_send(j, i, 7, argv, lens);
    }
    shard_job_release(j);
}
