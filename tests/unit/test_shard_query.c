/* test_shard_query.c: the worker's SHARD.QUERY (shard/query.c: the scan job's
 * absorb of every ZRANGEBYLEX reply, the sorted unique matches) and its job completion
 * (shard/job.c: the answer only after the last reply) on the worker's own objects
 * (simhash_shard_lib), against a real redis-server the test starts on a free loopback
 * port: fingerprints written with SHARD.LOCK, SHARD.ADD and SHARD.UNLOCK, planted near-duplicates of each query at
 * every distance up to d + 1, and every answer compared with brute force, with the
 * default split limit and with one so small that buckets split under the writes; a
 * Redis error reply to one of the reads answered once. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "hamming.h"
#include "log.h"
#include "rsloop.h"
#include "shard.h"
#include "testutil.h"

#define TQ_BLOCKS 6
#define TQ_DISTANCE 3
#define TQ_QUERIES 6

/* ---- A redis-server of the test's own ---- */

static pid_t tq_redis_pid;
static unsigned tq_redis_port;
static char tq_dir[] = "/tmp/test_shard_query.XXXXXX";

/* A port free on loopback now (the kernel's choice). */
static unsigned tq_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t n = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &n), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* 1 when something accepts connections on the port. */
static int tq_port_open(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

static int tq_redis_start(void **state)
{
    (void)state;
    if (mkdtemp(tq_dir) == NULL)
        return -1;
    tq_redis_port = tq_free_port();
    char port[16];
    snprintf(port, sizeof port, "%u", tq_redis_port);
    tq_redis_pid = fork();
    if (tq_redis_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);   /* the test crashed: Redis goes too */
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
            dup2(null, STDOUT_FILENO);
        }
        execlp("redis-server", "redis-server", "--bind", "127.0.0.1", "--port", port, "--dir",
               tq_dir, "--save", "", "--appendonly", "no", "--databases", "4", "--loglevel",
               "warning", "--logfile", "redis.log", (char *)NULL);
        _exit(127);
    }
    if (tq_redis_pid < 0)
        return -1;
    for (int i = 0; i < 2000; i++) {
        if (tq_port_open(tq_redis_port))
            return 0;
        usleep(10000);
    }
    return -1;
}

static int tq_redis_stop(void **state)
{
    (void)state;
    if (tq_redis_pid > 0) {
        kill(tq_redis_pid, SIGTERM);
        waitpid(tq_redis_pid, NULL, 0);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tq_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- A worker serving every shard, on the test's event loop ---- */

typedef struct tq_fix {
    shard_ctx sc;
    rl_client c;
} tq_fix;

/* Starts the worker on database db of the test's Redis with a new corpus of the
 * given layout. */
static void tq_start(tq_fix *f, unsigned split_limit, unsigned db)
{
    char err[512];
    shard_ctx *sc = &f->sc;
    memset(f, 0, sizeof *f);
    log_set_level(LOGL_ERROR);
    sc->redis_used_memory = -1;
    sc->redis_role = -1;
    shard_config *c = &sc->cfg;
    c->blocks = TQ_BLOCKS;
    c->distance = TQ_DISTANCE;
    c->lo = 0;
    c->hi = 255;
    c->timeout_ms = 20000;
    c->max_inflight_redis = 10000;
    rs_limits_default(&c->limits);
    snprintf(c->fp_spec, sizeof c->fp_spec, "v5");
    if (perm_set_init(&sc->ps, c->blocks, c->distance, err, sizeof err) != 0)
        fail_msg("perm_set_init: %s", err);
    shard_redis_opts ro = {
        .host = "127.0.0.1", .port = (int)tq_redis_port, .db = db, .blocks = c->blocks,
        .distance = c->distance, .max_inflight = c->max_inflight_redis,
        .fingerprint = "v5", .timeout_ms = c->timeout_ms,
    };
    if (shard_redis_check_meta_sync(&ro, err, sizeof err) != SHARD_META_OK)
        fail_msg("meta: %s", err);
    c->layout = ro.layout;
    c->tombstone_s = ro.tombstone_s;
    assert_int_equal(layout_ctx_init(&sc->lay), 0);
    sc->lay.tombstone_s = c->tombstone_s;
    sc->lay.by_sha = 1;
    ro.scripts = &sc->lay;
    if (ro.split_limit)
        sc->lay.split_limit = ro.split_limit;
    if (split_limit)
        sc->lay.split_limit = split_limit;
    sc->base = event_base_new();
    assert_non_null(sc->base);
    sc->redis = shard_redis_new(sc->base, &ro);
    assert_non_null(sc->redis);
    for (int i = 0; i < RL_SPINS && shard_redis_get_state(sc->redis) != SHARD_REDIS_READY; i++)
        rl_spin(sc->base);
    assert_int_equal(shard_redis_get_state(sc->redis), SHARD_REDIS_READY);
    rs_options so = {
        .name = "test-shard", .limits = c->limits, .commands = shard_commands,
        .ncommands = shard_ncommands, .ctx = sc, .group = "shard",
    };
    sc->srv = rs_new(sc->base, &so, err, sizeof err);
    if (sc->srv == NULL)
        fail_msg("rs_new: %s", err);
    rl_connect(&f->c, sc->base, rs_port(sc->srv));
}

static void tq_stop(tq_fix *f)
{
    shard_ctx *sc = &f->sc;
    rl_close(&f->c);
    rs_free(sc->srv);
    shard_redis_free(sc->redis);
    event_base_free(sc->base);
    layout_ctx_free(&sc->lay);
    perm_set_free(&sc->ps);
}

/* Sends "NAME fp [a] t0 .. t(T-1) [tail]" and returns the reply. */
static redisReply *tq_cmd(tq_fix *f, const char *name, uint64_t fp, const char *a,
                          const char *tail)
{
    char buf[4096], arg[32];
    unsigned nt = f->sc.ps.ntables;
    size_t n = 0;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "*%u\r\n$%zu\r\n%s\r\n",
                          2 + nt + (a != NULL) + (tail != NULL), strlen(name), name);
    snprintf(arg, sizeof arg, "%llu", (unsigned long long)fp);
    n += (size_t)snprintf(buf + n, sizeof buf - n, "$%zu\r\n%s\r\n", strlen(arg), arg);
    if (a)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "$%zu\r\n%s\r\n", strlen(a), a);
    for (unsigned t = 0; t < nt; t++) {
        snprintf(arg, sizeof arg, "%u", t);
        n += (size_t)snprintf(buf + n, sizeof buf - n, "$%zu\r\n%s\r\n", strlen(arg), arg);
    }
    if (tail)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "$%zu\r\n%s\r\n", strlen(tail), tail);
    assert_true(n < sizeof buf);
    rl_send_bytes(&f->c, buf, n);
    return rl_reply(&f->c);
}

/* Sends `argv[0..argc)` to the worker and returns its reply. */
static redisReply *tq_plain(tq_fix *f, int argc, const char **argv)
{
    char buf[1024];
    size_t n = (size_t)snprintf(buf, sizeof buf, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "$%zu\r\n%s\r\n", strlen(argv[i]),
                              argv[i]);
    assert_true(n < sizeof buf);
    rl_send_bytes(&f->c, buf, n);
    return rl_reply(&f->c);
}

/* Writes fp with one document as the coordinator does: its ids under its lock (table
 * 0's entry is the member holding them), then its entry in every table, then unlock. */
static void tq_add(tq_fix *f, uint64_t fp)
{
    char fs[24];
    snprintf(fs, sizeof fs, "%llu", (unsigned long long)fp);
    const char *lock[] = {"SHARD.LOCK", fs, "tq", "5000", "A", "doc"};
    redisReply *r = tq_plain(f, 6, lock);
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->element[0]->integer != 1)
        fail_msg("SHARD.LOCK: reply type %d %s", r->type, r->type == REDIS_REPLY_ERROR ? r->str : "");
    freeReplyObject(r);
    r = tq_cmd(f, "SHARD.ADD", fp, NULL, NULL);
    if (r->type != REDIS_REPLY_INTEGER)
        fail_msg("SHARD.ADD: reply type %d %s", r->type, r->type == REDIS_REPLY_ERROR ? r->str : "");
    freeReplyObject(r);
    const char *unlock[] = {"SHARD.UNLOCK", fs, "tq"};
    r = tq_plain(f, 3, unlock);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
}

/* ---- The corpus and brute force ---- */

#define TQ_MAXFP 1024

static uint64_t tq_fps[TQ_MAXFP];
static size_t tq_nfp;

typedef struct tq_match {
    uint64_t fp;
    unsigned dist;
} tq_match;

static int tq_match_cmp(const void *a, const void *b)
{
    const tq_match *x = a, *y = b;
    if (x->dist != y->dist)
        return x->dist < y->dist ? -1 : 1;
    return x->fp < y->fp ? -1 : x->fp > y->fp;
}

/* The queries, random fingerprints; near-duplicates of each at every distance up to
 * d + 1 (two of each), random others; a few written twice. */
static void tq_corpus(uint64_t *q)
{
    tq_nfp = 0;
    for (unsigned i = 0; i < TQ_QUERIES; i++) {
        q[i] = rnd();
        tq_fps[tq_nfp++] = q[i];
        for (unsigned d = 1; d <= TQ_DISTANCE + 1; d++)
            for (int k = 0; k < 2; k++)
                tq_fps[tq_nfp++] = flip_bits(q[i], d);
    }
    while (tq_nfp < 200)
        tq_fps[tq_nfp++] = rnd();
}

/* The fingerprints of the corpus within d of q, nearest first, each once. */
static size_t tq_brute(uint64_t q, unsigned d, tq_match *out)
{
    size_t n = 0;
    for (size_t i = 0; i < tq_nfp; i++) {
        unsigned dist = ham_dist(tq_fps[i], q);
        int seen = 0;
        for (size_t k = 0; k < n; k++)
            seen |= out[k].fp == tq_fps[i];
        if (dist <= d && !seen)
            out[n++] = (tq_match){tq_fps[i], dist};
    }
    qsort(out, n, sizeof *out, tq_match_cmp);
    return n;
}

/* The corpus written (fps 0..5 twice: a second write adds nothing), then every
 * query at every distance compared with brute force. */
static void tq_run(unsigned split_limit, unsigned db)
{
    tq_fix f;
    uint64_t q[TQ_QUERIES];
    tq_start(&f, split_limit, db);
    tq_corpus(q);
    for (size_t i = 0; i < tq_nfp + 6; i++)
        tq_add(&f, tq_fps[i % tq_nfp]);
    static tq_match want[TQ_MAXFP];
    for (unsigned i = 0; i < TQ_QUERIES; i++)
        for (unsigned d = 0; d <= TQ_DISTANCE; d++) {
            char ds[8];
            snprintf(ds, sizeof ds, "%u", d);
            size_t nw = tq_brute(q[i], d, want);
            redisReply *r = tq_cmd(&f, "SHARD.QUERY", q[i], ds, NULL);
            if (r->type != REDIS_REPLY_ARRAY)
                fail_msg("SHARD.QUERY: reply type %d %s", r->type,
                         r->type == REDIS_REPLY_ERROR ? r->str : "");
            assert_int_equal(r->elements, nw);
            for (size_t k = 0; k < nw; k++) {
                redisReply *e = r->element[k];
                assert_int_equal(e->type, REDIS_REPLY_ARRAY);
                assert_int_equal(e->elements, 2);
                assert_int_equal(strtoull(e->element[0]->str, NULL, 10), want[k].fp);
                assert_int_equal(e->element[1]->integer, want[k].dist);
            }
            freeReplyObject(r);
        }
    tq_stop(&f);
}

static void test_query(void **state)
{
    (void)state;
    tq_run(0, 1);
}

static void test_query_splits(void **state)
{
    (void)state;
    tq_run(4, 2);
}

/* A Redis error reply to one read (the directory of one table's shard holding a
 * string): the query is answered -REDIS once, counted once, and the worker goes on
 * answering exactly. */
static void test_query_redis_error(void **state)
{
    (void)state;
    tq_fix f;
    uint64_t q[TQ_QUERIES];
    tq_start(&f, 0, 0);
    tq_corpus(q);
    for (size_t i = 0; i < tq_nfp; i++)
        tq_add(&f, tq_fps[i]);
    const shard_ctx *sc = &f.sc;
    uint64_t bad = rnd();
    unsigned t = sc->ps.ntables / 2;
    char key[LAYOUT_KEY_MAX];
    assert_true(layout_tag_key(key, sizeof key, 'r', t,
                               layout_shard_of(perm_apply(&sc->ps.tables[t], bad))) > 0);
    redisContext *rc = redisConnect("127.0.0.1", (int)tq_redis_port);
    assert_true(rc != NULL && rc->err == 0);
    redisReply *r = redisCommand(rc, "SET %s x", key);
    assert_true(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(rc);
    unsigned long long before = sc->st.redis_err;
    r = tq_cmd(&f, "SHARD.QUERY", bad, "3", NULL);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_true(strncmp(r->str, "REDIS ", 6) == 0);
    freeReplyObject(r);
    assert_int_equal(sc->st.redis_err, before + 1);
    static tq_match want[TQ_MAXFP];
    size_t nw = tq_brute(q[0], 3, want);
    r = tq_cmd(&f, "SHARD.QUERY", q[0], "3", NULL);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, nw);
    freeReplyObject(r);
    tq_stop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_query),
        cmocka_unit_test(test_query_splits),
        cmocka_unit_test(test_query_redis_error),
    };
    return cmocka_run_group_tests(tests, tq_redis_start, tq_redis_stop);
}
