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
 * may not be (docs/protocol.md).
 *
 * Which buckets a call reads (the cost of a walk follows the data, not the key space):
 *   window  the `count` buckets from p's on, in one pipeline with DBSIZE;
 *   listed  when the window held nothing, more of the shard is left, and the node holds
 *           fewer keys than SHARD_SCAN_LIST_RATIO times the buckets left (a sparse
 *           corpus: a large bucket_bits, or one just begun), the worker lists the
 *           table-0 bucket keys of the shard that exist (SCAN MATCH of the layout's
 *           walk_pattern, to the end of Redis's cursor) and reads the first `count`
 *           of them past the window; the next call starts at the next listed bucket,
 *           or at the next shard when none is left. The listing is made during the
 *           call, after the walk began, so a bucket not in it did not exist throughout
 *           the walk: skipping it keeps the walk exact.
 * In a Redis Cluster the keys of the shard's table 0 share one slot ({0:xx}), on the
 * worker's node: the size is CLUSTER COUNTKEYSINSLOT and the listing one CLUSTER
 * GETKEYSINSLOT between two CLUSTER NODES. A slot being migrated has keys on two
 * nodes, so when either CLUSTER NODES shows the slot migrating (or not this node's),
 * or the listing may be cut short, the call answers its window as without listing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "job.h"
#include "layout.h"
#include "parse.h"
#include "shard.h"

#define SHARD_SCAN_MAX_BUCKETS 1024     /* buckets one SHARD.SCAN reads at most */
#define SHARD_SCAN_MAX_LIMIT 65536      /* values one SHARD.SCAN returns at most (about) */
/* List the existing buckets when the node holds fewer keys than this many times the
 * buckets left to read: SCAN visits a key server-side for a fraction of what the
 * round of an empty bucket's ZRANGEBYLEX costs. */
#define SHARD_SCAN_LIST_RATIO 4
#define SHARD_SCAN_LIST_COUNT "1000"    /* SCAN's COUNT hint */

typedef struct shard_scan {
    uint64_t from;              /* the value asked for */
    uint64_t shard_end;         /* the first bucket past from's shard */
    unsigned count, limit;
    unsigned n;                 /* buckets read */
    uint64_t *bucket;           /* per bucket read: its number, ascending */
    unsigned cap;               /* values read per bucket at most */
    uint64_t **ps;              /* per bucket: its permuted values, ascending */
    size_t *nps;
    unsigned char *full;        /* per bucket: its read filled the cap (more may follow) */
    uint64_t after;             /* the bucket to continue at when none is full */
    long long dbsize;           /* window: the node's (slot's) keys; -1 when not asked */
    /* listed: the buckets past the window that exist, and Redis's SCAN cursor */
    uint64_t *listed;
    size_t nlisted, caplisted;
    char cursor[24];
    /* cluster: the slot of the shard's table 0, CLUSTER NODES before and after the
     * listing saying the node serves it stably, the keys asked for and got */
    unsigned slot;
    int stable[2];
    size_t keys_asked, keys_got;
} shard_scan;

static void shard_scan_reads_free(shard_scan *s)
{
    for (unsigned i = 0; s->ps && i < s->n; i++)
        free(s->ps[i]);
    free(s->ps);
    free(s->nps);
    free(s->full);
    free(s->bucket);
    s->ps = NULL;
    s->nps = NULL;
    s->full = NULL;
    s->bucket = NULL;
    s->n = 0;
}

static void shard_scan_free(void *p)
{
    shard_scan *s = p;
    shard_scan_reads_free(s);
    free(s->listed);
    free(s);
}

/* Room for reads of n buckets with `limit` values in all. Returns 0, or -1. */
static int shard_scan_reads_alloc(shard_scan *s, unsigned n)
{
    s->ps = calloc(n, sizeof *s->ps);
    s->nps = calloc(n, sizeof *s->nps);
    s->full = calloc(n, 1);
    s->bucket = calloc(n, sizeof *s->bucket);
    s->n = n;
    s->cap = (s->limit + n - 1) / n;
    return s->ps && s->nps && s->full && s->bucket ? 0 : -1;
}

/* The first value of bucket b, or of the next shard (0 past the last) when b is the
 * shard's end. */
static uint64_t shard_scan_start(const shard_ctx *sc, uint64_t b)
{
    return sc->lay.ops->walk_first_value(&sc->lay, b);
}

static int shard_scan_absorb(shard_job *j, const shard_slot *sl, redisReply *rep,
                             const char **why)
{
    shard_scan *s = j->state;
    const shard_ctx *sc = j->sc;
    if (sl->idx == s->n) {      /* DBSIZE, CLUSTER COUNTKEYSINSLOT */
        s->dbsize = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
        return 0;
    }
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
        uint64_t last = k ? s->ps[upto - 1][k - 1]
                          : sc->lay.ops->walk_first_value(&sc->lay, s->bucket[upto - 1]);
        next = last + 1;    /* 0 after the very last value: the walk is over */
    } else {
        next = shard_scan_start(sc, s->after);
    }
    resp_add_array(out, 1 + total);
    resp_add_bulk_u64(out, next);
    for (unsigned i = 0; i < upto; i++)
        for (size_t k = 0; k < s->nps[i]; k++)
            resp_add_bulk_u64(out, perm_revert(&sc->ps.tables[0], s->ps[i][k]));
    shard_job_answer(j);
}

static void shard_scan_window_done(shard_job *j);
static void shard_scan_listed_done(shard_job *j);
static int shard_scan_list_absorb(shard_job *j, const shard_slot *sl, redisReply *rep,
                                  const char **why);
static void shard_scan_list_done(shard_job *j);
static int shard_scan_slot_absorb(shard_job *j, const shard_slot *sl, redisReply *rep,
                                  const char **why);
static void shard_scan_slot_done(shard_job *j);
static void shard_scan_slot_send(shard_job *j);

static const shard_job_ops shard_scan_window_ops = {shard_scan_absorb, shard_scan_window_done,
                                                    NULL, shard_scan_free, NULL};
static const shard_job_ops shard_scan_list_ops = {shard_scan_list_absorb, shard_scan_list_done,
                                                  NULL, shard_scan_free, NULL};
static const shard_job_ops shard_scan_listed_ops = {shard_scan_absorb, shard_scan_listed_done,
                                                    NULL, shard_scan_free, NULL};
static const shard_job_ops shard_scan_slot_ops = {shard_scan_slot_absorb, shard_scan_slot_done,
                                                  NULL, shard_scan_free, NULL};

/* Sends the reads of s->bucket[0..n) (the first from s->from's value on) on j's slots;
 * with_size: the count of the keys a listing would visit on slot n (DBSIZE, or in a
 * cluster CLUSTER COUNTKEYSINSLOT). */
static void shard_scan_send_reads(shard_job *j, int with_size)
{
    shard_scan *s = j->state;
    shard_ctx *sc = j->sc;
    char capstr[16];
    snprintf(capstr, sizeof capstr, "%u", s->cap);
    for (unsigned i = 0; i < s->n && j->req; i++) {
        layout_read rd;
        sc->lay.ops->walk_read(&sc->lay, s->bucket[i], s->from, &rd);
        const char *argv[7] = {"ZRANGEBYLEX", rd.key, (const char *)rd.lo, (const char *)rd.hi,
                               "LIMIT", "0", capstr};
        size_t lens[7] = {11, rd.klen, rd.lo_len, rd.hi_len, 5, 1, strlen(capstr)};
        j->slots[i].idx = i;
        j->slots[i].bucket = s->bucket[i];
        j->slots[i].dir = shard_dir_id(0, layout_shard_of(s->from));
        shard_job_send(j, i, 7, argv, lens);
    }
    if (with_size && j->req) {
        char slot[16];
        snprintf(slot, sizeof slot, "%u", s->slot);
        const char *dbsize[1] = {"DBSIZE"}, *count[3] = {"CLUSTER", "COUNTKEYSINSLOT", slot};
        int cl = shard_redis_cluster_mode(sc->redis);
        j->slots[s->n].idx = s->n;
        shard_job_send(j, s->n, cl ? 3 : 1, cl ? count : dbsize, NULL);
    }
}

/* Hands j's request and state on to a new job of n slots and kind ops. NULL (j
 * failed) when out of memory. */
static shard_job *shard_scan_next_job(shard_job *j, const shard_job_ops *ops, unsigned n)
{
    shard_job *nj = shard_job_new(j->sc, j->req, ops, j->state, n);
    if (nj == NULL) {
        shard_job_fail(j, RS_OOM, NULL, "out of memory");
        return NULL;
    }
    shard_job_handoff(j);
    return nj;
}

/* Sends the next SCAN of the listing on a new job. */
static void shard_scan_list_send(shard_job *j)
{
    shard_scan *s = j->state;
    shard_ctx *sc = j->sc;
    char pat[LAYOUT_KEY_MAX];
    size_t plen = sc->lay.ops->walk_pattern(&sc->lay, layout_shard_of(s->from), pat, sizeof pat);
    shard_job *lj = shard_scan_next_job(j, &shard_scan_list_ops, 1);
    if (lj == NULL)
        return;
    const char *argv[6] = {"SCAN", s->cursor, "MATCH", pat, "COUNT", SHARD_SCAN_LIST_COUNT};
    size_t lens[6] = {4, strlen(s->cursor), 5, plen, 5, strlen(SHARD_SCAN_LIST_COUNT)};
    shard_job_send(lj, 0, 6, argv, lens);
    shard_job_release(lj);
}

/* The window is read: answer, or list the buckets that exist past it. */
static void shard_scan_window_done(shard_job *j)
{
    shard_scan *s = j->state;
    uint64_t left = s->shard_end - s->after;        /* buckets past the window */
    int empty = 1;
    for (unsigned i = 0; i < s->n; i++)
        empty &= s->nps[i] == 0 && !s->full[i];
    if (!empty || s->dbsize < 0 || left == 0 ||
        (uint64_t)s->dbsize >= left * SHARD_SCAN_LIST_RATIO) {
        shard_scan_answer(j);
        return;
    }
    j->sc->st.scan_listings++;
    if (shard_redis_cluster_mode(j->sc->redis)) {
        shard_scan_slot_send(j);
        return;
    }
    snprintf(s->cursor, sizeof s->cursor, "0");
    shard_scan_list_send(j);
}

static int shard_scan_collect(shard_scan *s, const shard_ctx *sc, const redisReply *keys,
                              const char **why);

static int shard_scan_list_absorb(shard_job *j, const shard_slot *sl, redisReply *rep,
                                  const char **why)
{
    shard_scan *s = j->state;
    const shard_ctx *sc = j->sc;
    (void)sl;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
        rep->element[0]->type != REDIS_REPLY_STRING || rep->element[0]->len >= sizeof s->cursor ||
        rep->element[1]->type != REDIS_REPLY_ARRAY) {
        *why = "unexpected reply to SCAN";
        return -1;
    }
    memcpy(s->cursor, rep->element[0]->str, rep->element[0]->len);
    s->cursor[rep->element[0]->len] = '\0';
    return shard_scan_collect(s, sc, rep->element[1], why);
}

/* Keeps the table-0 buckets of the shard past the window among keys (an array of
 * key names). Returns 0, or -1 with why set. */
static int shard_scan_collect(shard_scan *s, const shard_ctx *sc, const redisReply *keys,
                              const char **why)
{
    for (size_t i = 0; i < keys->elements; i++) {
        const redisReply *k = keys->element[i];
        layout_key lk;
        if (k->type != REDIS_REPLY_STRING ||
            layout_key_parse(&sc->lay, &sc->ps, k->str, k->len, &lk) != 0 ||
            lk.kind != LAYOUT_KEY_BUCKET || lk.table != 0 || lk.bucket < s->after ||
            lk.bucket >= s->shard_end)
            continue;
        if (s->nlisted == s->caplisted) {
            size_t nc = s->caplisted ? s->caplisted * 2 : 64;
            uint64_t *nv = realloc(s->listed, nc * sizeof *nv);
            if (nv == NULL) {
                *why = "out of memory";
                return -1;
            }
            s->listed = nv;
            s->caplisted = nc;
        }
        s->listed[s->nlisted++] = lk.bucket;
    }
    return 0;
}

static int shard_scan_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void shard_scan_read_listed(shard_job *j);

/* One SCAN answered: the next, or the reads of the first listed buckets. */
static void shard_scan_list_done(shard_job *j)
{
    shard_scan *s = j->state;
    if (strcmp(s->cursor, "0") != 0) {
        shard_scan_list_send(j);
        return;
    }
    shard_scan_read_listed(j);
}

/* Cluster: CLUSTER NODES, CLUSTER GETKEYSINSLOT slot keys_asked, CLUSTER NODES, in one
 * pipeline to the worker's node (keyless commands go there). */
static void shard_scan_slot_send(shard_job *j)
{
    shard_scan *s = j->state;
    char slot[16], nkeys[24];
    /* room for the keys counted plus those added since: a listing that fills it may
     * be cut short and is not used */
    s->keys_asked = (size_t)s->dbsize * 2 + 1024;
    snprintf(slot, sizeof slot, "%u", s->slot);
    snprintf(nkeys, sizeof nkeys, "%zu", s->keys_asked);
    shard_job *lj = shard_scan_next_job(j, &shard_scan_slot_ops, 3);
    if (lj == NULL)
        return;
    const char *nodes[2] = {"CLUSTER", "NODES"}, *keys[4] = {"CLUSTER", "GETKEYSINSLOT", slot, nkeys};
    for (unsigned i = 0; i < 3 && lj->req; i++) {
        lj->slots[i].idx = i;
        shard_job_send(lj, i, i == 1 ? 4 : 2, i == 1 ? keys : nodes, NULL);
    }
    shard_job_release(lj);
}

static int shard_scan_slot_absorb(shard_job *j, const shard_slot *sl, redisReply *rep,
                                  const char **why)
{
    shard_scan *s = j->state;
    if (sl->idx == 1) {
        if (rep->type != REDIS_REPLY_ARRAY) {
            *why = "unexpected reply to CLUSTER GETKEYSINSLOT";
            return -1;
        }
        s->keys_got = rep->elements;
        return shard_scan_collect(s, j->sc, rep, why);
    }
    s->stable[sl->idx / 2] = rep->type == REDIS_REPLY_STRING &&
                             cluster_nodes_serves(rep->str, rep->len, s->slot);
    return 0;
}

/* The slot listed: read from it when the node served the slot whole throughout, else
 * answer the window. */
static void shard_scan_slot_done(shard_job *j)
{
    shard_scan *s = j->state;
    if (!s->stable[0] || !s->stable[1] || s->keys_got >= s->keys_asked) {
        shard_scan_answer(j);
        return;
    }
    shard_scan_read_listed(j);
}

/* The listing is complete: the reads of the first listed buckets, or the answer when
 * none is left in the shard. */
static void shard_scan_read_listed(shard_job *j)
{
    shard_scan *s = j->state;
    /* SCAN may give a key twice */
    if (s->nlisted > 1)
        qsort(s->listed, s->nlisted, sizeof *s->listed, shard_scan_u64_cmp);
    size_t m = 0;
    for (size_t i = 0; i < s->nlisted; i++)
        if (m == 0 || s->listed[i] != s->listed[m - 1])
            s->listed[m++] = s->listed[i];
    s->nlisted = m;
    if (m == 0) {               /* nothing left in the shard: on to the next one */
        shard_scan_reads_free(s);
        s->after = s->shard_end;
        shard_scan_answer(j);
        return;
    }
    unsigned n = (unsigned)(m < s->count ? m : s->count);
    shard_scan_reads_free(s);
    if (shard_scan_reads_alloc(s, n) != 0) {
        shard_job_fail(j, RS_OOM, NULL, "out of memory");
        return;
    }
    memcpy(s->bucket, s->listed, n * sizeof *s->bucket);
    s->after = n < m ? s->listed[n] : s->shard_end;
    if (!shard_redis_room(j->sc->redis, n)) {
        shard_job_fail(j, RS_BUSY, &j->sc->st.busy, "max-inflight-redis reached; retry later");
        return;
    }
    shard_job *rj = shard_scan_next_job(j, &shard_scan_listed_ops, n);
    if (rj == NULL)
        return;
    shard_scan_send_reads(rj, 0);
    shard_job_release(rj);
}

static void shard_scan_listed_done(shard_job *j)
{
    shard_scan_answer(j);
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
    uint64_t first = sc->lay.ops->walk_tag_of(&sc->lay, from);
    uint64_t shard_end = sc->lay.ops->walk_tag_end(&sc->lay, layout_shard_of(from));
    unsigned n = (unsigned)(count < shard_end - first ? count : shard_end - first);
    /* no listing of keys: a directory holds only the buckets that exist */
    int with_size = 0;
    if (shard_check_redis(req, n + (unsigned)with_size) != 0)
        return;
    shard_scan *s = calloc(1, sizeof *s);
    shard_job *j = NULL;
    if (s) {
        s->from = from;
        s->shard_end = shard_end;
        s->count = (unsigned)count;
        s->limit = (unsigned)limit;
        s->after = first + n;
        s->dbsize = -1;
        if (shard_scan_reads_alloc(s, n) == 0)
            j = shard_job_new(sc, req, &shard_scan_window_ops, s, n + (unsigned)with_size);
    }
    if (j == NULL) {
        if (s)
            shard_scan_free(s);
        shard_oom(req);
        return;
    }
    for (unsigned i = 0; i < n; i++)
        s->bucket[i] = first + i;
    j->rerun = shard_cmd_scan;
    layout_read rd;
    sc->lay.ops->walk_read(&sc->lay, first, from, &rd);
    s->slot = cluster_keyslot(rd.key, rd.klen);
    shard_scan_send_reads(j, with_size);
    shard_job_release(j);
}
