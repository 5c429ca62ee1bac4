/* scan.c: SHARD.SCAN, the walk over a corpus's fingerprints that `simhash export` and
 * `simhash migrate` use (through the coordinator's SIMHASH.SCAN): the fingerprints of
 * table 0's first-byte shard xx, bucket by bucket, read with one ZRANGE per bucket
 * and turned back into fingerprints (perm_revert of table 0). A fingerprint's table-0
 * bucket never changes, so a walk from bucket 0 to the last returns every fingerprint
 * present for the whole walk exactly once; ones added or removed meanwhile may or may
 * not appear (docs/protocol.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "layout.h"
#include "parse.h"
#include "shard.h"

#define SHARD_SCAN_MAX_BUCKETS 1024     /* buckets one SHARD.SCAN reads at most */

typedef struct shard_scan {
    unsigned shard, next;       /* xx; the cursor answered */
    unsigned n;                 /* buckets read */
    uint64_t **fps;             /* per bucket: its fingerprints */
    size_t *nfps;
} shard_scan;

static void shard_scan_free(void *p)
{
    shard_scan *s = p;
    for (unsigned i = 0; i < s->n; i++)
        free(s->fps[i]);
    free(s->fps);
    free(s->nfps);
    free(s);
}

static int shard_scan_absorb(shard_job *j, const shard_slot *sl, redisReply *rep,
                             const char **why)
{
    shard_scan *s = j->state;
    const shard_config *c = &j->sc->cfg;
    if (rep->type != REDIS_REPLY_ARRAY) {
        *why = "unexpected reply to ZRANGE";
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
        if (e->type != REDIS_REPLY_STRING ||
            layout_member_decode(e->str, e->len, sl->bucket, c->bucket_bits, &p) != 0)
            continue;       /* not ours (foreign data in the key): fsck reports it */
        v[k++] = perm_revert(&j->sc->ps.tables[0], p);
    }
    s->fps[sl->idx] = v;
    s->nfps[sl->idx] = k;
    return 0;
}

static void shard_scan_done(shard_job *j)
{
    shard_scan *s = j->state;
    resp_buf *out = rs_req_out(j->req);
    size_t total = 0;
    for (unsigned i = 0; i < s->n; i++)
        total += s->nfps[i];
    resp_add_array(out, 1 + total);
    resp_add_int(out, s->next);
    for (unsigned i = 0; i < s->n; i++)
        for (size_t k = 0; k < s->nfps[i]; k++)
            resp_add_bulk_u64(out, s->fps[i][k]);
    shard_job_answer(j);
}

static const shard_job_ops shard_scan_ops = {shard_scan_absorb, shard_scan_done, NULL,
                                             shard_scan_free};

/* SHARD.SCAN xx cursor count: the fingerprints of table 0's shard xx in buckets
 * cursor .. cursor+count-1 of that shard; answers [next cursor (0: the shard is
 * done), fp ...]. */
void shard_cmd_scan(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    sc->st.requests++;
    uint64_t xx, cursor, count;
    const char *why;
    size_t len;
    const char *a;
    unsigned nb = 1u << (sc->cfg.bucket_bits - 8);      /* buckets per shard */
    a = rs_req_arg(req, 1, &len);
    if (parse_uint_range(a, len, 0, 255, &xx, &why) != 0) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "shard: %s", why);
        return;
    }
    a = rs_req_arg(req, 2, &len);
    if (parse_uint_range(a, len, 0, nb - 1, &cursor, &why) != 0) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "cursor: %s", why);
        return;
    }
    a = rs_req_arg(req, 3, &len);
    if (parse_uint_range(a, len, 1, SHARD_SCAN_MAX_BUCKETS, &count, &why) != 0) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "count: %s", why);
        return;
    }
    if (shard_check_owner(req, 0, xx << 56) != 0)
        return;
    unsigned n = (unsigned)(count < nb - cursor ? count : nb - cursor);
    if (shard_check_redis(req, n) != 0)
        return;
    shard_scan *s = calloc(1, sizeof *s);
    if (s) {
        s->fps = calloc(n, sizeof *s->fps);
        s->nfps = calloc(n, sizeof *s->nfps);
        s->n = n;
        s->shard = (unsigned)xx;
        s->next = (unsigned)cursor + n >= nb ? 0 : (unsigned)cursor + n;
    }
    shard_job *j = s && s->fps && s->nfps ? shard_job_new(sc, req, &shard_scan_ops, s, n) : NULL;
    if (j == NULL) {
        if (s)
            shard_scan_free(s);
        shard_oom(req);
        return;
    }
    for (unsigned i = 0; i < n && j->req; i++) {
        char key[LAYOUT_KEY_MAX];
        uint64_t bucket = (xx << (sc->cfg.bucket_bits - 8)) | (cursor + i);
        j->slots[i].idx = i;
        j->slots[i].bucket = bucket;
        layout_bucket_key(key, sizeof key, 0, bucket, sc->cfg.bucket_bits);
        const char *argv[4] = {"ZRANGE", key, "0", "-1"};
        shard_job_send(j, i, 4, argv, NULL);
    }
    shard_job_release(j);
}
