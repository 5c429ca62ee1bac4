/* repair.c: the worker's repair pass over stale write locks (docs/protocol.md,
 * "Consistency").
 *
 * Every write of a fingerprint holds its lock in w:{0:xx} (common/store/layout.h). A
 * writer that dies (worker, coordinator, connection) leaves its lock behind, and
 * with it a write that may be half applied: a document set whose table entries are
 * partly written, or entries still there for an emptied set. Every
 * repair-interval-ms (default 1000) the worker reads the lock hashes of the table-0 shards it serves (HGETALL w:{0:xx});
 * for every lock whose expiry has passed it reconciles the fingerprint with the
 * layout_fix_* steps of common/store/layout_ops.h, the ones `simhash fsck --repair`
 * takes too: the layout's lock script with op S (only a stale lock is taken, by
 * Redis's clock), every table's entry made to match the document ids (ZADD when it
 * has ids, ZREM when none), and the lock released.
 * A failed step leaves the lock; it is stale again after its lease and the next pass
 * retries. So a half-applied write is completed or rolled back within the lease
 * (LAYOUT_LOCK_LEASE_MS, or the writer's) plus one pass. In a Redis Cluster each
 * worker reads only the lock hashes whose slot its own node serves as a master
 * (CLUSTER SLOTS first), so every hash is read by one worker and none is redirected. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "cluster.h"
#include "job.h"
#include "layout_ops.h"
#include "log.h"
#include "rasync.h"
#include "shard.h"

#define SHARD_REPAIR_MAX_ACTIVE 64      /* fingerprints repaired at once */

struct shard_repair {
    shard_ctx *sc;
    struct event *tick;
    unsigned outstanding;       /* commands sent, callback not yet run */
    unsigned active;            /* fingerprints being repaired */
    unsigned long long seq;     /* token counter */
    int stopped;                /* shard_repair_stop ran: free on the last callback */
    cluster_map map;            /* cluster mode: the slot map of the pass */
};

typedef struct shard_fix shard_fix;

/* One table write of a fix: the directory it was routed through. */
typedef struct shard_fix_write {
    shard_fix *f;
    uint32_t dir;
} shard_fix_write;

/* One fingerprint under repair. */
struct shard_fix {
    struct shard_repair *rp;
    layout_fix fix;
    unsigned pending;           /* table writes not yet answered */
    int failed;
    shard_fix_write w[];        /* one per table */
};

/* Milliseconds of the wall clock (lock expiries are Redis TIME; this only filters
 * which locks look stale: the script decides). */
static uint64_t shard_repair_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Frees rp when it was stopped and nothing of it is outstanding. */
static void shard_repair_maybe_free(struct shard_repair *rp)
{
    if (rp->stopped && rp->outstanding == 0)
        free(rp);
}

/* Sends one command of the repair; counts it outstanding. Returns 0 or -1. */
static int shard_repair_send(struct shard_repair *rp, shard_redis_cb fn, void *priv, int argc,
                             const char **argv, const size_t *argvlen)
{
    if (rp->stopped || rp->sc->redis == NULL ||
        shard_redis_command(rp->sc->redis, fn, priv, argc, argv, argvlen) != 0)
        return -1;
    rp->outstanding++;
    return 0;
}

/* The fix of one fingerprint ended (done or failed): count it and free it. */
static void shard_fix_end(shard_fix *f, int ok)
{
    struct shard_repair *rp = f->rp;
    if (!rp->stopped) {
        if (ok)
            rp->sc->st.repairs++;
        else
            rp->sc->st.repair_errors++;
    }
    if (ok)
        log_info("repaired fingerprint %016llx after a stale write lock",
                 (unsigned long long)f->fix.fp);
    rp->active--;
    free(f);
}

/* 1 when reply is a usable reply of type type, else 0 (logged). */
static int shard_repair_reply_ok(const redisReply *reply, int type, const char *err,
                                 const char *what)
{
    if (reply != NULL && reply->type == type)
        return 1;
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR)
        log_warn_rl("repair: %s failed: %.*s", what, (int)(reply->len > 200 ? 200 : reply->len),
                    reply->str);
    else
        log_warn_rl("repair: %s failed: %s", what, err ? err : "unexpected reply");
    return 0;
}

static void shard_fix_on_unlock(void *priv, redisReply *reply, const char *err)
{
    shard_fix *f = priv;
    struct shard_repair *rp = f->rp;
    rp->outstanding--;
    shard_fix_end(f, shard_repair_reply_ok(reply, REDIS_REPLY_INTEGER, err, "unlock"));
    shard_repair_maybe_free(rp);
}

/* One table write of f was answered (or could not be sent): when none is left,
 * release the lock, unless a write failed (then the lock stays; the next pass after
 * its lease retries). */
static void shard_fix_step(shard_fix *f)
{
    struct shard_repair *rp = f->rp;
    if (--f->pending > 0)
        return;
    if (f->failed) {
        shard_fix_end(f, 0);
        return;
    }
    layout_cmd uc;
    layout_fix_unlock(&f->fix, &uc);
    if (shard_repair_send(rp, shard_fix_on_unlock, f, uc.argc, uc.argv, uc.argvlen) != 0)
        shard_fix_end(f, 0);
}

static void shard_fix_on_entry(void *priv, redisReply *reply, const char *err)
{
    shard_fix_write *w = priv;
    shard_fix *f = w->f;
    struct shard_repair *rp = f->rp;
    rp->outstanding--;
    /* a bucket that split: the cache learns it, the write failed (retried) */
    layout_dir_reply(&rp->sc->lay, shard_dir_table(w->dir), shard_dir_shard(w->dir), reply);
    if (!layout_fix_entry_ok(reply)) {
        shard_repair_reply_ok(reply, REDIS_REPLY_INTEGER, err, "table write");   /* logs */
        f->failed = 1;
    }
    shard_fix_step(f);
    shard_repair_maybe_free(rp);
}

/* Reply of the takeover: [1, before, after, stale, n] or [0, ms left]. */
static void shard_fix_on_lock(void *priv, redisReply *reply, const char *err)
{
    shard_fix *f = priv;
    struct shard_repair *rp = f->rp;
    rp->outstanding--;
    layout_dir_reply(&rp->sc->lay, 0, layout_shard_of(f->fix.p0), reply);
    int taken = layout_fix_locked(&f->fix, reply);
    if (taken < 0) {
        shard_repair_reply_ok(reply, REDIS_REPLY_ARRAY, err, "lock takeover");     /* logs */
        shard_fix_end(f, 0);
        shard_repair_maybe_free(rp);
        return;
    }
    if (taken == 0) {
        rp->active--;           /* no longer stale, or gone: nothing to repair */
        free(f);
        shard_repair_maybe_free(rp);
        return;
    }
    shard_ctx *sc = rp->sc;
    f->pending = 1;             /* held until every write is sent */
    for (unsigned t = 0; t < sc->ps.ntables; t++) {
        layout_cmd ec;
        layout_fix_entry(&sc->lay, &sc->ps, &f->fix, t, &ec);
        f->pending++;
        f->w[t].f = f;
        f->w[t].dir = shard_dir_id(t, layout_shard_of(perm_apply(&sc->ps.tables[t], f->fix.fp)));
        if (shard_repair_send(rp, shard_fix_on_entry, &f->w[t], ec.argc, ec.argv,
                              ec.argvlen) != 0) {
            f->pending--;
            f->failed = 1;
            break;
        }
    }
    shard_fix_step(f);          /* drop the hold */
    shard_repair_maybe_free(rp);
}

/* Starts the repair of fp, whose lock looked stale. */
static void shard_fix_start(struct shard_repair *rp, uint64_t fp)
{
    shard_ctx *sc = rp->sc;
    if (rp->active >= SHARD_REPAIR_MAX_ACTIVE || !shard_redis_room(sc->redis, sc->ps.ntables + 2))
        return;                 /* the next pass */
    {                               /* the directories its writes route through, first */
        uint32_t dirs[PERM_MAX_TABLES];
        for (unsigned t = 0; t < sc->ps.ntables; t++)
            dirs[t] = shard_dir_id(t, layout_shard_of(perm_apply(&sc->ps.tables[t], fp)));
        if (shard_dirs_refresh(sc, dirs, sc->ps.ntables) > 0)
            return;             /* the next pass */
    }
    shard_fix *f = calloc(1, sizeof *f + sc->ps.ntables * sizeof f->w[0]);
    if (f == NULL)
        return;
    f->rp = rp;
    char token[48];
    snprintf(token, sizeof token, "repair-%d-%llu", (int)getpid(), ++rp->seq);
    layout_fix_init(&f->fix, &sc->ps, fp, token);
    layout_cmd lc;
    layout_fix_lock(&sc->lay, &f->fix, LAYOUT_LOCK_LEASE_MS, LAYOUT_LOCK_OP_FIXSTALE, &lc);
    rp->active++;
    if (shard_repair_send(rp, shard_fix_on_lock, f, lc.argc, lc.argv, lc.argvlen) != 0) {
        rp->active--;
        free(f);
    }
}

/* Reply of HGETALL w:{0:xx}: field, value pairs. */
static void shard_repair_on_locks(void *priv, redisReply *reply, const char *err)
{
    struct shard_repair *rp = priv;
    rp->outstanding--;
    if (rp->stopped || !shard_repair_reply_ok(reply, REDIS_REPLY_ARRAY, err, "lock scan")) {
        shard_repair_maybe_free(rp);
        return;
    }
    uint64_t now = shard_repair_wall_ms();
    for (size_t i = 0; i + 1 < reply->elements; i += 2) {
        const redisReply *k = reply->element[i], *v = reply->element[i + 1];
        uint64_t fp;
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
            layout_lock_field_parse(k->str, k->len, &fp) != 0)
            continue;
        unsigned long long exp = strtoull(v->str, NULL, 10);
        if (exp <= now)
            shard_fix_start(rp, fp);
    }
    shard_repair_maybe_free(rp);
}

/* Sends HGETALL w:{0:xx} for the shards of the pass: lo..hi; in cluster mode those
 * whose slot the worker's node serves (rp->map). */
static void shard_repair_scan(struct shard_repair *rp)
{
    shard_ctx *sc = rp->sc;
    int cluster = shard_redis_cluster_mode(sc->redis);
    const char *me = shard_redis_node(sc->redis);
    for (unsigned xx = sc->cfg.lo; xx <= sc->cfg.hi; xx++) {
        char wkey[LAYOUT_KEY_MAX];
        size_t klen = layout_lock_key(wkey, sizeof wkey, xx);
        if (cluster) {
            int ni = cluster_map_node(&rp->map, cluster_keyslot(wkey, klen));
            char addr[CLUSTER_ADDR_MAX + 16];
            if (ni < 0)
                continue;
            snprintf(addr, sizeof addr, "%s:%d", rp->map.nodes[ni].host, rp->map.nodes[ni].port);
            if (strcmp(addr, me) != 0)
                continue;
        }
        const char *argv[2] = {"HGETALL", wkey};
        if (shard_repair_send(rp, shard_repair_on_locks, rp, 2, argv, NULL) != 0)
            break;
    }
}

/* Cluster mode: the CLUSTER SLOTS reply of the pass. */
static void shard_repair_on_slots(void *priv, redisReply *reply, const char *err)
{
    struct shard_repair *rp = priv;
    char why[128];
    rp->outstanding--;
    if (!rp->stopped && shard_repair_reply_ok(reply, REDIS_REPLY_ARRAY, err, "CLUSTER SLOTS")) {
        if (cluster_map_from_slots(&rp->map, reply, rp->sc->cfg.redis_host, why, sizeof why) < 0)
            log_warn_rl("repair: CLUSTER SLOTS: %s", why);
        else
            shard_repair_scan(rp);
    }
    shard_repair_maybe_free(rp);
}

/* The timer: one pass over the lock hashes of the shards served. */
static void shard_repair_on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct shard_repair *rp = arg;
    shard_ctx *sc = rp->sc;
    (void)fd;
    (void)what;
    if (rp->outstanding > 0 || sc->redis == NULL ||
        shard_redis_get_state(sc->redis) != SHARD_REDIS_READY)
        return;                 /* the previous pass is still out, or no Redis */
    unsigned n = sc->cfg.hi - sc->cfg.lo + 1;
    if (!shard_redis_room(sc->redis, n))
        return;
    if (shard_redis_cluster_mode(sc->redis)) {
        const char *argv[2] = {"CLUSTER", "SLOTS"};
        shard_repair_send(rp, shard_repair_on_slots, rp, 2, argv, NULL);
        return;
    }
    shard_repair_scan(rp);
}

int shard_repair_start(shard_ctx *sc)
{
    unsigned ms = sc->cfg.repair_interval_ms;
    if (ms == 0)
        return 0;
    struct shard_repair *rp = calloc(1, sizeof *rp);
    if (rp == NULL)
        return -1;
    rp->sc = sc;
    rp->tick = event_new(sc->base, -1, EV_PERSIST, shard_repair_on_tick, rp);
    struct timeval tv = ra_tv_ms(ms);
    if (rp->tick == NULL || event_add(rp->tick, &tv) != 0) {
        if (rp->tick)
            event_free(rp->tick);
        free(rp);
        return -1;
    }
    sc->repair = rp;
    return 0;
}

void shard_repair_stop(shard_ctx *sc)
{
    struct shard_repair *rp = sc->repair;
    if (rp == NULL)
        return;
    sc->repair = NULL;
    event_free(rp->tick);
    rp->stopped = 1;
    shard_repair_maybe_free(rp);
}
