/* dist_load.c: load generator for the distributed-mode benchmark (bench/distributed/run.sh).
 *
 * Drives either Redis directly with the commands one operation needs in the storage
 * format (layout 4, the layout's own commands through layout_ops.h; the "raw" rate:
 * what Redis alone can do) or simhash-coordinator with the client commands (the
 * "system" rate), and prints machine-readable lines
 *   bench=<name> metric=<metric> value=<number>
 * Fingerprint i of a corpus is splitmix64(seed * 2^32 + i), so separate runs agree on
 * what was loaded. Every loop is bounded by --count and --seconds. A corpus of any
 * size as the system would hold it is made with `simhash load` (docs/capacity.md);
 * the raw modes here write a small one straight to Redis.
 *
 * Modes:
 *   preload     bulk-load fingerprints [offset, offset+count) into tables 1.., grouped
 *               by key (one ZADD of many members per bucket key); writes simhash:meta
 *               (layout_meta_field, as a worker does).
 *               Every (table, shard) is one bucket (a corpus before its first split;
 *               a shard reaching LAYOUT_SPLIT_LIMIT_MAX entries is refused), and
 *               raw-ingest writes plain ZADDs to those buckets, without the scripts
 *   predocs     one document id (30 bytes, dl_doc) to each of those fingerprints: its
 *               table-0 member with the id packed in (layout_put_id)
 *   raw-query   per query: the ZRANGEBYLEX calls of every table and the read of the
 *               query's ids (its table-0 member), pipelined
 *   raw-ingest  per fingerprint: one ZADD per table + the table-0 member with its id,
 *               pipelined
 *   raw-remove  undoes raw-ingest of the same fingerprints: ZREM per table and of the
 *               table-0 member, pipelined (so a raw rate can be measured in a live
 *               corpus and leave it as it was)
 *   sys-query   SIMHASH.QUERY fp, pipelined
 *   raw-locked  per fingerprint: the lock script (with the id), one ZADD per table,
 *               the unlock script: what the system sends for an ADD, pipelined
 *   sys-ingest  SIMHASH.ADD fp docid, pipelined
 *   sys-check   SIMHASH.CHECK fp docid of new fingerprints, pipelined (a crawler's
 *               query-then-add)
 *   paced       SIMHASH.QUERY at a fixed rate (open loop, hiredis async + libevent);
 *               latency counted from the scheduled send time; --trace FILE writes
 *               "<scheduled time s> <latency ms>" per query (where the tail comes from)
 *   paced-ingest SIMHASH.ADD of new fingerprints [offset, ...) at a fixed rate, latency
 *               as for paced (the ingest latency through the system)
 *   paced-raw   the same schedule, but each query is the Redis commands a worker sends
 *               for it (ZRANGEBYLEX per table + the read of its ids), straight
 *               to Redis: the latency baseline of the same work without our daemons
 *   check       SIMHASH.QUERY of corpus fingerprints must find each at distance 0
 * --dirs: before the run, read the directory of every (table, shard) from
 * Redis, so the raw modes use the live buckets of a corpus that has split (without it,
 * every shard is one bucket, as preload writes). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libevent.h>

#include "bucketdir.h"
#include "fingerprint.h"
#include "layout.h"
#include "layout_ops.h"
#include "parse.h"
#include "perm.h"
#include "resp.h"

#include "bench_util.h"
#include "dist_load/dl.h"

#define DL_MAX_CMDS 4096      /* Redis commands per operation, upper bound */
#define DL_ARGS_MAX 8

dl_opts opt = {
    .host = "127.0.0.1", .name = "dist", .port = 6379, .blocks = 6, .distance = 3,
    .layout = LAYOUT_VERSION,
    .seed = 1, .count = 100000, .offset = 0, .corpus = 0, .depth = 64,
    .seconds = 10.0, .rate = 1000.0,
};
perm_set ps;
layout_ctx lay;

/* ---- helpers ---- */

/* Fingerprint number i of the corpus. */
uint64_t dl_fp(uint64_t i)
{
    return bench_splitmix((opt.seed << 32) + i);
}

static uint64_t dl_rng_state = 88172645463325252ULL;

/* A uniform random index below n (xorshift64). */
static uint64_t dl_rand_below(uint64_t n)
{
    dl_rng_state ^= dl_rng_state << 13;
    dl_rng_state ^= dl_rng_state >> 7;
    dl_rng_state ^= dl_rng_state << 17;
    return n ? dl_rng_state % n : 0;
}

void dl_metric(const char *metric, double v)
{
    printf("bench=%s metric=%s value=%.10g\n", opt.name, metric, v);
    fflush(stdout);
}

void die(const char *what, const char *why)
{
    fprintf(stderr, "bench-dist_load: %s: %s\n", what, why);
    exit(1);
}

redisContext *dl_connect(void)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout(opt.host, opt.port, tv);
    if (c == NULL || c->err)
        die("connect", c ? c->errstr : "out of memory");
    return c;
}

int dl_doc(char *buf, uint64_t id)
{
    return snprintf(buf, 32, "https://ex.org/doc/%011" PRIu64, id % UINT64_C(100000000000));
}

/* ---- building commands ---- */

/* The write of fp's one id straight to Redis (layout_put_id: its table-0 member with
 * the id packed in). Returns 1 (commands appended). */
static unsigned dl_append_doc(redisContext *c, uint64_t fp, uint64_t id)
{
    char doc[32];
    uint8_t scratch[LAYOUT_PUT_ID_SCRATCH(32)];
    int dlen = dl_doc(doc, id);
    layout_cmd pc;
    layout_put_id(&lay, fp, perm_apply(&ps.tables[0], fp), doc, (size_t)dlen, scratch, &pc);
    redisAppendCommandArgv(c, pc.argc, pc.argv, pc.argvlen);
    return 1;
}

/* The read of fp's ids a worker needs at least: the layout's first read (the
 * table-0 member). */
static void dl_doc_read(uint64_t fp, layout_cmd *rc)
{
    layout_ids_kind kind;
    lay.ops->ids_read(&lay, 0, fp, perm_apply(&ps.tables[0], fp), rc, &kind);
}

/* The reads of fp's query in table t (the layout's plan). */
static void dl_plan(unsigned t, uint64_t fp, layout_plan *pl)
{
    if (lay.ops->plan(&lay, t, perm_apply(&ps.tables[t], fp), ps.tables[t].prefix_bits, pl) != 0)
        die("layout", "table prefix shorter than 8 bits");
}

/* One operation's Redis commands, as argv arrays appended to the context.
 * Returns the number of commands appended. */
static unsigned dl_append_raw_query(redisContext *c, uint64_t fp)
{
    unsigned n = 0;
    for (unsigned t = 0; t < ps.ntables; t++) {
        layout_plan pl;
        dl_plan(t, fp, &pl);
        for (uint64_t b = 0; b < pl.nreads && n < DL_MAX_CMDS; b++) {
            layout_read rd;
            lay.ops->plan_read(&lay, &pl, b, &rd);
            const char *argv[4] = {"ZRANGEBYLEX", rd.key, (const char *)rd.lo, (const char *)rd.hi};
            size_t lens[4] = {RESP_LITLEN("ZRANGEBYLEX"), rd.klen, rd.lo_len, rd.hi_len};
            redisAppendCommandArgv(c, 4, argv, lens);
            n++;
        }
    }
    layout_cmd rc;
    dl_doc_read(fp, &rc);
    redisAppendCommandArgv(c, rc.argc, rc.argv, rc.argvlen);
    return n + 1;
}

/* `ZADD key 0 member` of p's entry in table t as a plain command (the layout's ZADD is
 * its bucket script), built from its ZSCORE's key and member: the bucket of a corpus
 * before its first split. */
static void dl_entry_zadd(unsigned t, uint64_t p, layout_cmd *ec)
{
    lay.ops->entry(&lay, t, p, "ZSCORE", ec);
    if (ec->argc != 3)
        die("layout", "unexpected entry command");
    ec->argv[3] = ec->argv[2];
    ec->argvlen[3] = ec->argvlen[2];
    ec->argv[2] = "0";
    ec->argvlen[2] = 1;
    ec->argv[0] = "ZADD";
    ec->argvlen[0] = RESP_LITLEN("ZADD");
    ec->argc = 4;
}

/* One ZADD per table of fp's entries. Returns the number of commands. */
static unsigned dl_append_zadds(redisContext *c, uint64_t fp)
{
    for (unsigned t = lay.ops->entry_from; t < ps.ntables; t++) {
        layout_cmd ec;
        dl_entry_zadd(t, perm_apply(&ps.tables[t], fp), &ec);
        redisAppendCommandArgv(c, ec.argc, ec.argv, ec.argvlen);
    }
    return ps.ntables - lay.ops->entry_from;   /* table 0's is layout_put_id's */
}

static unsigned dl_append_raw_ingest(redisContext *c, uint64_t fp, uint64_t id)
{
    unsigned n = dl_append_zadds(c, fp);
    return n + dl_append_doc(c, fp, id);
}

/* What dl_append_raw_ingest wrote for fp, removed: ZREM per table, then of its
 * table-0 member. Returns the number of commands. */
static unsigned dl_append_raw_remove(redisContext *c, uint64_t fp, uint64_t id)
{
    for (unsigned t = lay.ops->entry_from; t < ps.ntables; t++) {
        layout_cmd ec;
        dl_entry_zadd(t, perm_apply(&ps.tables[t], fp), &ec);
        const char *argv[3] = {"ZREM", ec.argv[1], ec.argv[3]};
        size_t lens[3] = {RESP_LITLEN("ZREM"), ec.argvlen[1], ec.argvlen[3]};
        redisAppendCommandArgv(c, 3, argv, lens);
    }
    char doc[32];
    uint8_t scratch[LAYOUT_PUT_ID_SCRATCH(32)];
    int dlen = dl_doc(doc, id);
    layout_cmd pc;
    layout_put_id(&lay, fp, perm_apply(&ps.tables[0], fp), doc, (size_t)dlen, scratch, &pc);
    if (pc.argc != 4 || strcmp(pc.argv[0], "ZADD") != 0)
        die("raw-remove", "unexpected id write command");
    const char *argv[3] = {"ZREM", pc.argv[1], pc.argv[3]};
    size_t lens[3] = {4, pc.argvlen[1], pc.argvlen[3]};
    redisAppendCommandArgv(c, 3, argv, lens);
    return ps.ntables - lay.ops->entry_from + 1;
}

/* The Redis commands a worker sends for one SIMHASH.ADD of a new fingerprint: the
 * lock script (takes fp's lock, SADDs the id), one ZADD per table, the unlock script. */
static unsigned dl_append_raw_locked(redisContext *c, uint64_t fp, uint64_t id)
{
    char wkey[LAYOUT_KEY_MAX], field[17], doc[32];
    char tok[24];
    uint64_t p0 = perm_apply(&ps.tables[0], fp);
    layout_lock_key(wkey, sizeof wkey, layout_shard_of(p0));
    layout_lock_field(field, fp);
    int dlen = dl_doc(doc, id);
    snprintf(tok, sizeof tok, "b%" PRIx64, id);
    layout_cmd lc;
    lay.ops->lock(&lay, fp, p0, tok, 4000, LAYOUT_LOCK_OP_ADD, &lc);
    lc.argv[lc.argc] = doc;
    lc.argvlen[lc.argc] = (size_t)dlen;
    redisAppendCommandArgv(c, lc.argc + 1, lc.argv, lc.argvlen);
    unsigned n = dl_append_zadds(c, fp);
    const char *ua[6] = {"EVAL", LAYOUT_UNLOCK_LUA, "1", wkey, field, tok};
    redisAppendCommandArgv(c, 6, ua, NULL);
    return n + 2;
}

/* cmd: SIMHASH.QUERY fp, or SIMHASH.ADD / SIMHASH.CHECK fp docid */
static unsigned dl_append_sys(redisContext *c, const char *cmd, uint64_t fp, uint64_t id)
{
    char fps[24], doc[32];
    int flen = snprintf(fps, sizeof fps, "%" PRIu64, fp);
    int dlen = dl_doc(doc, id);
    const char *argv[3] = {cmd, fps, doc};
    size_t lens[3] = {strlen(argv[0]), (size_t)flen, (size_t)dlen};
    redisAppendCommandArgv(c, strcmp(cmd, "SIMHASH.QUERY") ? 3 : 2, argv, lens);
    return 1;
}

/* ---- closed-loop pipelined runs ---- */

/* Reads one reply; counts errors and array rows. Dies on a connection error. */
static void dl_read_one(redisContext *c, dl_stats *st)
{
    redisReply *r = NULL;
    if (redisGetReply(c, (void **)&r) != REDIS_OK || r == NULL)
        die("reply", c->errstr[0] ? c->errstr : "connection lost");
    if (r->type == REDIS_REPLY_ERROR) {
        if (st->errors++ == 0)
            snprintf(st->first_error, sizeof st->first_error, "%.*s", (int)r->len, r->str);
    } else if (r->type == REDIS_REPLY_ARRAY) {
        st->rows += r->elements;
    }
    st->cmds++;
    freeReplyObject(r);
}

/* Runs `count` operations (bounded by opt.seconds) with opt.depth in flight.
 * kind: 0 raw-query, 1 raw-ingest, 2 sys-query, 3 sys-ingest, 4 raw-locked,
 * 5 raw-remove, 6 sys-check. */
static dl_stats dl_run(int kind)
{
    redisContext *c = dl_connect();
    uint64_t depth = opt.depth ? opt.depth : 1;
    unsigned *ring = calloc(depth, sizeof *ring);
    uint64_t head = 0, tail = 0, issued = 0;
    dl_stats st = {0};
    if (ring == NULL)
        die("memory", "ring");
    double t0 = bench_now(), end = t0 + opt.seconds;
    int stop = 0;
    while (!stop || tail < head) {
        while (!stop && head - tail < depth && issued < opt.count) {
            uint64_t idx;
            unsigned n;
            if (kind == 0 || kind == 2) {
                idx = dl_rand_below(opt.corpus);
                uint64_t fp = dl_fp(idx);
                n = kind == 0 ? dl_append_raw_query(c, fp)
                              : dl_append_sys(c, "SIMHASH.QUERY", fp, 0);
            } else {
                idx = opt.offset + issued;
                uint64_t fp = dl_fp(idx);
                n = kind == 1 ? dl_append_raw_ingest(c, fp, idx)
                  : kind == 4 ? dl_append_raw_locked(c, fp, idx)
                  : kind == 5 ? dl_append_raw_remove(c, fp, idx)
                  : dl_append_sys(c, kind == 6 ? "SIMHASH.CHECK" : "SIMHASH.ADD", fp, idx);
            }
            ring[head++ % depth] = n;
            issued++;
        }
        if (tail == head)
            break;
        unsigned n = ring[tail++ % depth];
        for (unsigned i = 0; i < n; i++)
            dl_read_one(c, &st);
        st.ops++;
        if ((st.ops & 63) == 0 && bench_now() >= end)
            stop = 1;
        if (issued >= opt.count)
            stop = 1;
    }
    st.secs = bench_now() - t0;
    free(ring);
    redisFree(c);
    return st;
}

int dl_report(const dl_stats *st, const char *what)
{
    char m[64];
    snprintf(m, sizeof m, "%s_per_sec", what);
    dl_metric(m, (double)st->ops / st->secs);
    dl_metric("ops", (double)st->ops);
    dl_metric("redis_cmds_per_sec", (double)st->cmds / st->secs);
    dl_metric("rows_per_op", st->ops ? (double)st->rows / (double)st->ops : 0);
    dl_metric("errors", (double)st->errors);
    if (st->errors) {
        fprintf(stderr, "bench-dist_load: %" PRIu64 " error replies, first: %s\n",
                st->errors, st->first_error);
        return 1;
    }
    return 0;
}

/* ---- bulk preload ---- */

typedef struct dl_entry {
    uint64_t bucket;
    uint64_t p;
} dl_entry;

static int dl_entry_cmp(const void *a, const void *b)
{
    const dl_entry *x = a, *y = b;
    return x->p < y->p ? -1 : x->p > y->p;
}

void dl_drain(redisContext *c, uint64_t *pending, uint64_t keep, dl_stats *st)
{
    while (*pending > keep) {
        dl_read_one(c, st);
        (*pending)--;
    }
}

/* Creates the corpus's meta hash as a worker would (layout_meta_field), with the
 * default fingerprint algorithm; dies on a Redis error. */
static void dl_meta(redisContext *c)
{
    char key[LAYOUT_KEY_MAX], fps[16], val[16];
    fp_params d = {FP_VERSION_DEFAULT, 0};
    fp_params_format(&d, fps, sizeof fps);
    if (layout_meta_key(key, sizeof key) == 0)
        die("meta", "key too long");
    layout_meta m = {key, fps, lay.tombstone_s, opt.blocks, opt.distance};
    const char *argv[LAYOUT_META_ARGV];
    for (int i = 0; i < LAYOUT_META_FIELDS; i++) {
        int na = layout_meta_field(&m, i, argv, val);
        redisReply *r = redisCommandArgv(c, na, argv, NULL);
        if (r == NULL || r->type == REDIS_REPLY_ERROR)
            die("meta", r ? r->str : c->errstr);
        freeReplyObject(r);
    }
}

static int dl_preload(void)
{
    redisContext *c = dl_connect();
    dl_stats st = {0};
    uint64_t n = opt.count, pending = 0;
    dl_entry *e = malloc(n * sizeof *e);
    if (e == NULL)
        die("memory", "preload entries");
    dl_meta(c);
    double t0 = bench_now();
    enum { GROUP = 256 };
    const char *argv[2 + 2 * GROUP];
    size_t lens[2 + 2 * GROUP];
    uint8_t mem[GROUP][LAYOUT_MEMBER_MAX];
    char key[LAYOUT_KEY_MAX];
    for (unsigned t = lay.ops->entry_from; t < ps.ntables; t++) {   /* 0 is predocs' */
        for (uint64_t i = 0; i < n; i++) {
            e[i].p = perm_apply(&ps.tables[t], dl_fp(opt.offset + i));
            e[i].bucket = layout_shard_of(e[i].p);      /* unsplit: a key a shard */
        }
        qsort(e, n, sizeof *e, dl_entry_cmp);
        for (uint64_t i = 0, run = 0; i < n;) {
            uint64_t j = i;
            int argc = 2;
            layout_cmd ec;
            run = i > 0 && e[i - 1].bucket == e[i].bucket ? run : 0;
            dl_entry_zadd(t, e[i].p, &ec);      /* its key */
            size_t klen = ec.argvlen[1];
            memcpy(key, ec.argv[1], klen);
            argv[0] = "ZADD";
            lens[0] = RESP_LITLEN("ZADD");
            argv[1] = key;
            lens[1] = klen;
            while (j < n && e[j].bucket == e[i].bucket && j - i < GROUP) {
                dl_entry_zadd(t, e[j].p, &ec);
                size_t ml = ec.argvlen[3];
                memcpy(mem[j - i], ec.argv[3], ml);
                argv[argc] = "0";
                lens[argc++] = 1;
                argv[argc] = (const char *)mem[j - i];
                lens[argc++] = ml;
                j++;
            }
            run += j - i;
            if (run >= LAYOUT_SPLIT_LIMIT_MAX)
                die("preload", "a shard would hold the split limit of entries; "
                    "use a smaller --count (a raw corpus here has no splits)");
            redisAppendCommandArgv(c, argc, argv, lens);
            pending++;
            dl_drain(c, &pending, 512, &st);
            i = j;
        }
    }
    dl_drain(c, &pending, 0, &st);
    double secs = bench_now() - t0;
    dl_metric("preload_entries_per_sec", (double)n * ps.ntables / secs);
    free(e);
    redisFree(c);
    st.ops = n;
    st.secs = secs;
    return dl_report(&st, "preload_fp");
}

static int dl_predocs(void)
{
    redisContext *c = dl_connect();
    dl_stats st = {0};
    uint64_t pending = 0;
    double t0 = bench_now();
    for (uint64_t i = 0; i < opt.count; i++) {
        uint64_t id = opt.offset + i, fp = dl_fp(id);
        dl_append_doc(c, fp, id);
        pending++;
        dl_drain(c, &pending, 1024, &st);
    }
    dl_drain(c, &pending, 0, &st);
    st.ops = opt.count;
    st.secs = bench_now() - t0;
    redisFree(c);
    return dl_report(&st, "predocs_fp");
}

/* Every fingerprint asked for must come back at distance 0 (checks that the layout
 * written by preload is the one the shard workers read). */
static int dl_check(void)
{
    redisContext *c = dl_connect();
    uint64_t bad = 0, n = opt.count;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t fp = dl_fp(dl_rand_below(opt.corpus));
        redisReply *r = redisCommand(c, "SIMHASH.QUERY %" PRIu64 " DISTANCE 0", fp);
        if (r == NULL)
            die("check", c->errstr);
        char want[24];
        snprintf(want, sizeof want, "%" PRIu64, fp);
        int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
                 r->element[0]->type == REDIS_REPLY_ARRAY && r->element[0]->elements == 3 &&
                 r->element[0]->element[0]->type == REDIS_REPLY_STRING &&
                 strcmp(r->element[0]->element[0]->str, want) == 0;
        if (!ok && bad++ < 3)
            fprintf(stderr, "bench-dist_load: check: fingerprint %s not found (reply type %d, %s)\n",
                    want, r->type, r->type == REDIS_REPLY_ERROR ? r->str : "");
        freeReplyObject(r);
    }
    redisFree(c);
    dl_metric("check_missing", (double)bad);
    return bad != 0;
}

/* ---- open-loop paced queries ---- */

typedef struct dl_paced {
    int raw;                /* paced-raw: the query's Redis commands, straight to Redis */
    int ingest;             /* paced-ingest: SIMHASH.ADD of new fingerprints */
    struct event_base *base;
    redisAsyncContext *ac;
    struct event *tick;
    double start, *lat;
    uint64_t total, sent, received, errors;
    int failed;
    char first_error[160];  /* the first error reply, printed with the counts */
} dl_paced;

static void dl_paced_reply(redisAsyncContext *ac, void *reply, void *priv)
{
    dl_paced *pc = ac->data;
    uint64_t idx = (uint64_t)(uintptr_t)priv;
    redisReply *r = reply;
    if (r == NULL) {
        pc->failed = 1;
        event_base_loopbreak(pc->base);
        return;
    }
    if (r->type == REDIS_REPLY_ERROR && pc->errors++ == 0)
        snprintf(pc->first_error, sizeof pc->first_error, "%.*s", (int)r->len, r->str);
    pc->lat[idx] = bench_now() - (pc->start + (double)idx / opt.rate);
    if (++pc->received == pc->total)
        event_base_loopbreak(pc->base);
}

/* paced-raw: what a worker sends Redis for one query (one ZRANGEBYLEX per table, then
 * SMEMBERS of the query's document set), pipelined; only the last reply is waited
 * for (replies come in order). */
static void dl_async_raw_query(redisAsyncContext *ac, uint64_t fp, void *priv)
{
    for (unsigned t = 0; t < ps.ntables; t++) {
        layout_plan pl;
        dl_plan(t, fp, &pl);
        for (uint64_t b = 0; b < pl.nreads; b++) {
            layout_read rd;
            lay.ops->plan_read(&lay, &pl, b, &rd);
            const char *argv[4] = {"ZRANGEBYLEX", rd.key, (const char *)rd.lo, (const char *)rd.hi};
            size_t lens[4] = {RESP_LITLEN("ZRANGEBYLEX"), rd.klen, rd.lo_len, rd.hi_len};
            redisAsyncCommandArgv(ac, NULL, NULL, 4, argv, lens);
        }
    }
    layout_cmd rc;
    dl_doc_read(fp, &rc);
    redisAsyncCommandArgv(ac, dl_paced_reply, priv, rc.argc, rc.argv, rc.argvlen);
}

static void dl_paced_tick(evutil_socket_t fd, short what, void *arg)
{
    dl_paced *pc = arg;
    (void)fd;
    (void)what;
    double el = bench_now() - pc->start;
    uint64_t due = (uint64_t)(el * opt.rate) + 1;
    if (due > pc->total)
        due = pc->total;
    while (pc->sent < due) {
        char fps[24];
        uint64_t fp = dl_fp(dl_rand_below(opt.corpus));
        if (pc->ingest) {
            char doc[32];
            snprintf(fps, sizeof fps, "%" PRIu64, dl_fp(opt.offset + pc->sent));
            snprintf(doc, sizeof doc, "d%" PRIu64, opt.offset + pc->sent);
            redisAsyncCommand(pc->ac, dl_paced_reply, (void *)(uintptr_t)pc->sent,
                              "SIMHASH.ADD %s %s", fps, doc);
        } else if (pc->raw) {
            dl_async_raw_query(pc->ac, fp, (void *)(uintptr_t)pc->sent);
        } else {
            snprintf(fps, sizeof fps, "%" PRIu64, fp);
            redisAsyncCommand(pc->ac, dl_paced_reply, (void *)(uintptr_t)pc->sent,
                              "SIMHASH.QUERY %s", fps);
        }
        pc->sent++;
    }
    if (el > opt.seconds + 5.0) {   /* replies overdue: give up */
        pc->failed = 1;
        event_base_loopbreak(pc->base);
    }
}

static int dl_paced_run(int raw, int ingest)
{
    dl_paced pc = {0};
    pc.raw = raw;
    pc.ingest = ingest;
    pc.total = (uint64_t)(opt.rate * opt.seconds);
    if (pc.total > opt.count)
        pc.total = opt.count;
    if (pc.total == 0)
        die("paced", "nothing to send (rate * seconds < 1)");
    pc.lat = calloc(pc.total, sizeof *pc.lat);
    /* epoll timeouts are whole milliseconds; a precise (timerfd) timer keeps the
     * sends on schedule instead of adding up to a millisecond of client lag */
    struct event_config *cfg = event_config_new();
    if (cfg != NULL) {
        event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
        pc.base = event_base_new_with_config(cfg);
        event_config_free(cfg);
    }
    if (pc.lat == NULL || pc.base == NULL)
        die("paced", "out of memory");
    pc.ac = redisAsyncConnect(opt.host, opt.port);
    if (pc.ac == NULL || pc.ac->err)
        die("connect", pc.ac ? pc.ac->errstr : "out of memory");
    pc.ac->data = &pc;
    redisLibeventAttach(pc.ac, pc.base);
    pc.tick = event_new(pc.base, -1, EV_PERSIST, dl_paced_tick, &pc);
    struct timeval iv = {0, 200};   /* 0.2 ms: sends stay within 0.2 ms of schedule */
    event_add(pc.tick, &iv);
    pc.start = bench_now();
    event_base_dispatch(pc.base);
    double secs = bench_now() - pc.start;
    event_free(pc.tick);
    redisAsyncFree(pc.ac);
    event_base_free(pc.base);
    if (pc.failed && pc.received < pc.total)
        fprintf(stderr, "bench-dist_load: paced: only %" PRIu64 " of %" PRIu64 " replies\n",
                pc.received, pc.total);
    if (opt.trace != NULL && pc.received == pc.total) {
        /* one line per query: scheduled send time (s from start), latency (ms) */
        FILE *f = fopen(opt.trace, "w");
        if (f == NULL)
            die("--trace", strerror(errno));
        for (uint64_t i = 0; i < pc.total; i++)
            fprintf(f, "%.6f %.3f\n", (double)i / opt.rate, pc.lat[i] * 1e3);
        if (fclose(f) != 0)
            die("--trace", strerror(errno));
    }
    qsort(pc.lat, pc.received == pc.total ? pc.total : 0, sizeof *pc.lat, bench_cmp_double);
    dl_metric("target_rate", opt.rate);
    dl_metric("achieved_rate", (double)pc.received / secs);
    dl_metric("replies", (double)pc.received);
    dl_metric("errors", (double)pc.errors);
    if (pc.errors != 0)
        fprintf(stderr, "bench-dist_load: paced: %" PRIu64 " error replies, the first: %s\n",
                pc.errors, pc.first_error);
    if (pc.received == pc.total) {
        dl_metric("p50_ms", pc.lat[pc.total / 2] * 1e3);
        dl_metric("p90_ms", pc.lat[pc.total * 90 / 100] * 1e3);
        dl_metric("p99_ms", pc.lat[pc.total * 99 / 100] * 1e3);
        dl_metric("p999_ms", pc.lat[pc.total * 999 / 1000] * 1e3);
        dl_metric("max_ms", pc.lat[pc.total - 1] * 1e3);
    }
    free(pc.lat);
    return pc.received != pc.total || pc.errors != 0;
}

/* ---- the directories ---- */

/* --dirs: reads the directory of every (table, shard) (one pipelined ZRANGE each) into
 * lay, so the raw modes route through the live buckets; prints how many there are. */
static void dl_load_dirs(void)
{
    redisContext *c = dl_connect();
    unsigned n = ps.ntables * 256u;
    uint64_t sent = layout_dir_clock();
    for (unsigned i = 0; i < n; i++) {
        layout_cmd rc;
        layout_dir_read(&lay, i / 256u, i % 256u, &rc);
        redisAppendCommandArgv(c, rc.argc, rc.argv, rc.argvlen);
    }
    double buckets = 0;
    for (unsigned i = 0; i < n; i++) {
        redisReply *r = NULL;
        if (redisGetReply(c, (void **)&r) != REDIS_OK || r == NULL)
            die("--dirs", c->errstr[0] ? c->errstr : "connection lost");
        if (r->type == REDIS_REPLY_ERROR || layout_dir_load(&lay, i / 256u, i % 256u, r, sent) != 0)
            die("--dirs", r->type == REDIS_REPLY_ERROR ? r->str : "malformed directory");
        buckets += r->elements ? (double)r->elements : 1.0;
        freeReplyObject(r);
    }
    redisFree(c);
    dl_metric("dirs_buckets", buckets);
}

/* ---- command line ---- */

static void usage(void)
{
    fprintf(stderr,
            "usage: bench-dist_load MODE [--host H] [--port P] [--name N] [--blocks M]\n"
            "         [--distance K] [--layout 4] [--seed S] [--count N] [--offset O]\n"
            "         [--corpus N] [--depth D] [--seconds S] [--rate R] [--trace FILE] [--dirs]\n"
            "MODE: preload predocs raw-query raw-ingest raw-remove raw-locked sys-query sys-ingest sys-check\n"
            "      paced paced-ingest paced-raw check\n");
    exit(2);
}

static uint64_t dl_num(const char *name, const char *s, uint64_t min, uint64_t max)
{
    uint64_t v;
    const char *why;
    if (parse_uint_range(s, strlen(s), min, max, &v, &why) != 0) {
        fprintf(stderr, "bench-dist_load: --%s %s: %s\n", name, s, why);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    opt.mode = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--dirs")) {
            opt.dirs = 1;
            continue;
        }
        if (i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (!strcmp(a, "--host")) opt.host = v;
        else if (!strcmp(a, "--name")) opt.name = v;
        else if (!strcmp(a, "--trace")) opt.trace = v;
        else if (!strcmp(a, "--port")) opt.port = (int)dl_num("port", v, 1, 65535);
        else if (!strcmp(a, "--blocks")) opt.blocks = (unsigned)dl_num("blocks", v, 1, 64);
        else if (!strcmp(a, "--distance")) opt.distance = (unsigned)dl_num("distance", v, 0, 63);
        else if (!strcmp(a, "--layout")) opt.layout = (unsigned)dl_num("layout", v, LAYOUT_VERSION, LAYOUT_VERSION);
        else if (!strcmp(a, "--seed")) opt.seed = dl_num("seed", v, 0, UINT32_MAX);
        else if (!strcmp(a, "--count")) opt.count = dl_num("count", v, 1, 100000000);
        else if (!strcmp(a, "--offset")) opt.offset = dl_num("offset", v, 0, UINT32_MAX);
        else if (!strcmp(a, "--corpus")) opt.corpus = dl_num("corpus", v, 1, UINT32_MAX);
        else if (!strcmp(a, "--depth")) opt.depth = dl_num("depth", v, 1, 100000);
        else if (!strcmp(a, "--seconds")) opt.seconds = (double)dl_num("seconds", v, 1, 3600);
        else if (!strcmp(a, "--rate")) opt.rate = (double)dl_num("rate", v, 1, 10000000);
        else usage();
    }
    if (layout_ctx_init(&lay) != 0)
        die("layout", "out of memory");
    char err[256];
    if (perm_set_init(&ps, opt.blocks, opt.distance, err, sizeof err) != 0)
        die("tables", err);
    if (opt.corpus == 0)
        opt.corpus = opt.count;
    if (opt.dirs)
        dl_load_dirs();
    int rc = 2;    /* usage() exits */
    if (!strcmp(opt.mode, "preload")) rc = dl_preload();
    else if (!strcmp(opt.mode, "predocs")) rc = dl_predocs();
    else if (!strcmp(opt.mode, "raw-query")) rc = dl_report((dl_stats[]){dl_run(0)}, "queries");
    else if (!strcmp(opt.mode, "raw-ingest")) rc = dl_report((dl_stats[]){dl_run(1)}, "ingests");
    else if (!strcmp(opt.mode, "sys-query")) rc = dl_report((dl_stats[]){dl_run(2)}, "queries");
    else if (!strcmp(opt.mode, "raw-remove")) rc = dl_report((dl_stats[]){dl_run(5)}, "removes");
    else if (!strcmp(opt.mode, "raw-locked")) rc = dl_report((dl_stats[]){dl_run(4)}, "ingests");
    else if (!strcmp(opt.mode, "sys-ingest")) rc = dl_report((dl_stats[]){dl_run(3)}, "ingests");
    else if (!strcmp(opt.mode, "sys-check")) rc = dl_report((dl_stats[]){dl_run(6)}, "ingests");
    else if (!strcmp(opt.mode, "paced")) rc = dl_paced_run(0, 0);
    else if (!strcmp(opt.mode, "paced-ingest")) rc = dl_paced_run(0, 1);
    else if (!strcmp(opt.mode, "paced-raw")) rc = dl_paced_run(1, 0);
    else if (!strcmp(opt.mode, "check")) rc = dl_check();
    else usage();
    perm_set_free(&ps);
    return rc;
}
