/* workers.c: connections of the coordinator to its shard workers (common/net/rasync.h:
 * hiredis async on libevent), SHARD.HELLO checks (settings and first-byte ranges),
 * periodic SHARD.INFO health checks with latency, reconnect with exponential backoff
 * and jitter. Routing over the workers is in route.c. */
#include "coord.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "layout.h"
#include "log.h"
#include "parse.h"

#define BACKOFF_MIN_MS 100

static void coord_worker_connect(coord_worker *w);
static void coord_worker_on_reconnect(evutil_socket_t fd, short what, void *arg);
static void coord_worker_on_health_timer(evutil_socket_t fd, short what, void *arg);
static void coord_discover_first(coord *co);


static const char *coord_health_name(coord_health h)
{
    switch (h) {
    case W_CONNECTING: return "connecting";
    case W_UP: return "up";
    case W_DOWN: return "down";
    case W_MISMATCH: return "mismatch";
    case W_GONE: return "gone";
    }
    return "?";
}

/* Schedule the next connection attempt: backoff doubles up to reconnect_max_ms, and
 * the delay is drawn from [backoff/2, backoff] so workers do not reconnect in step. */
static void coord_worker_schedule_reconnect(coord_worker *w)
{
    struct timeval tv = ra_tv_ms(ra_backoff_next(&w->backoff, BACKOFF_MIN_MS,
                                                 w->co->cfg.reconnect_max_ms));
    evtimer_add(w->reconnect_ev, &tv);
}

static void coord_worker_lost(coord_worker *w, const char *why)
{
    coord *co = w->co;
    if (w->health == W_UP)
        log_warn("shard worker %s lost: %s", w->addr, why);
    else
        log_warn_rl("shard worker %s: %s", w->addr, why);
    snprintf(w->problem, sizeof(w->problem), "%s", why);
    if (w->health != W_MISMATCH)
        w->health = W_DOWN;
    w->errors++;
    w->health_pending = 0;
    w->redis_used_memory = -1;     /* not known until it answers SHARD.INFO again */
    coord_routing_update(co);
    if (co->cl)
        coord_cluster_refresh(co, "shard worker lost");
    coord_worker_schedule_reconnect(w);
}

static void coord_worker_on_disconnect(const redisAsyncContext *ac, int status)
{
    coord_worker *w = ac->data;
    char why[200];
    if (w == NULL || w->ac != ac)
        return;             /* a context already detached (coord_worker_retire) */
    snprintf(why, sizeof(why), "%s", status == REDIS_OK ? "disconnected" :
             (ac->errstr[0] ? ac->errstr : "connection lost"));
    w->ac = NULL;           /* hiredis frees the context after this callback */
    if (w->health == W_GONE)
        return;
    coord_worker_lost(w, why);
}

/* Integer element i of a SHARD.HELLO reply, or -1. */
static long long coord_hello_int(redisReply *r, size_t i)
{
    if (i >= r->elements || r->element[i]->type != REDIS_REPLY_INTEGER)
        return -1;
    return r->element[i]->integer;
}

/* A worker whose settings or mode differ from the coordinator's (w->problem says
 * how): before the coordinator was ever ready this ends it (exit 2); later the
 * worker is marked mismatched and disconnected, so it never gets traffic. */
static void coord_worker_mismatch(coord_worker *w)
{
    coord *co = w->co;

    log_error("shard worker %s: %s", w->addr, w->problem);
    w->health = W_MISMATCH;
    if (!co->ever_ready) {
        co->fatal = 2;
        event_base_loopbreak(co->base);
        return;
    }
    redisAsyncDisconnect(w->ac);
}

static void coord_worker_on_hello(redisAsyncContext *ac, void *reply, void *priv)
{
    coord_worker *w = priv;
    coord *co = w->co;
    redisReply *r = reply;

    if (r == NULL || ac != w->ac || w->health == W_GONE)
        return;             /* disconnected (coord_worker_on_disconnect handles it), or
                               the reply of a context retire detached */
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(w->problem, sizeof(w->problem), "SHARD.HELLO failed: %.200s", r->str);
        log_error_rl("shard worker %s: %s", w->addr, w->problem);
        redisAsyncDisconnect(w->ac);
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 6) {
        snprintf(w->problem, sizeof(w->problem), "SHARD.HELLO: malformed reply");
        log_error_rl("shard worker %s: %s", w->addr, w->problem);
        redisAsyncDisconnect(w->ac);
        return;
    }
    long long blocks = coord_hello_int(r, 0), dist = coord_hello_int(r, 1);
    long long lo = coord_hello_int(r, 4), hi = coord_hello_int(r, 5);
    if (blocks != co->cfg.blocks || dist != co->cfg.distance) {
        snprintf(w->problem, sizeof(w->problem),
                 "settings differ: shard worker has blocks %lld distance %lld, "
                 "coordinator has blocks %u distance %u",
                 blocks, dist, co->cfg.blocks, co->cfg.distance);
        coord_worker_mismatch(w);
        return;
    }
    long long proto = r->elements >= 11 ? coord_hello_int(r, 10) : -1;
    if (proto != LAYOUT_WORKER_PROTOCOL) {
        if (proto < 0)
            snprintf(w->problem, sizeof(w->problem),
                     "shard worker names no worker protocol in SHARD.HELLO (an older "
                     "release's), this coordinator speaks %d: run workers and coordinators "
                     "of one release", LAYOUT_WORKER_PROTOCOL);
        else
            snprintf(w->problem, sizeof(w->problem),
                     "shard worker speaks worker protocol %lld, this coordinator %d: run "
                     "workers and coordinators of one release",
                     proto, LAYOUT_WORKER_PROTOCOL);
        coord_worker_mismatch(w);
        return;
    }
    if (coord_corpus_check(co, r, w->problem, sizeof(w->problem)) != 0) {
        coord_worker_mismatch(w);
        return;
    }
    if (co->cl) {
        /* cluster mode: elements 6 and 7 are the cluster flag and the node name */
        if (r->elements < 8 || coord_hello_int(r, 6) != 1 ||
            r->element[7]->type != REDIS_REPLY_STRING) {
            snprintf(w->problem, sizeof(w->problem),
                     "shard worker is not in cluster mode (start it with cluster yes), "
                     "but the coordinator has cluster-node");
            coord_worker_mismatch(w);
            return;
        }
        w->cluster = 1;
        snprintf(w->node, sizeof(w->node), "%.*s", (int)r->element[7]->len, r->element[7]->str);
        w->health = W_UP;
        ra_backoff_reset(&w->backoff);
        w->problem[0] = '\0';
        w->connects++;
        log_info("shard worker %s up: cluster node %s", w->addr, w->node[0] ? w->node : "(not known yet)");
        coord_routing_update(co);
        coord_discover_first(co);
        coord_cluster_refresh(co, "shard worker up");
        return;
    }
    if (r->elements >= 8 && coord_hello_int(r, 6) == 1) {
        snprintf(w->problem, sizeof(w->problem),
                 "shard worker is in cluster mode, but the coordinator has no cluster-node");
        coord_worker_mismatch(w);
        return;
    }
    if (lo < 0 || hi > 255 || lo > hi) {
        snprintf(w->problem, sizeof(w->problem), "SHARD.HELLO: bad shard range %lld-%lld", lo, hi);
        log_error("shard worker %s: %s", w->addr, w->problem);
        redisAsyncDisconnect(w->ac);
        return;
    }
    if (w->have_range && (w->lo != (unsigned)lo || w->hi != (unsigned)hi))
        log_warn("shard worker %s now serves shards %lld-%lld (was %u-%u)", w->addr, lo, hi,
                 w->lo, w->hi);
    w->lo = (unsigned)lo;
    w->hi = (unsigned)hi;
    w->have_range = 1;
    w->health = W_UP;
    ra_backoff_reset(&w->backoff);
    w->problem[0] = '\0';
    w->connects++;
    log_info("shard worker %s up: shards %u-%u", w->addr, w->lo, w->hi);
    coord_routing_update(co);
    coord_discover_first(co);
}

static void coord_worker_on_auth(redisAsyncContext *ac, void *reply, void *priv)
{
    coord_worker *w = priv;
    redisReply *r = reply;
    (void)ac;
    if (r && r->type == REDIS_REPLY_ERROR) {
        snprintf(w->problem, sizeof(w->problem), "AUTH failed: %.200s", r->str);
        log_error_rl("shard worker %s: %s", w->addr, w->problem);
    }
}

static void coord_worker_on_connect(const redisAsyncContext *cac, int status)
{
    coord_worker *w = cac->data;
    if (w == NULL || w->ac != cac)
        return;             /* a context already detached (coord_worker_retire) */
    redisAsyncContext *ac = w->ac;

    if (status != REDIS_OK) {
        char why[200];
        snprintf(why, sizeof(why), "cannot connect: %s", cac->errstr);
        w->ac = NULL;       /* hiredis frees it */
        if (w->health != W_GONE)
            coord_worker_lost(w, why);
        return;
    }
    if (w->co->cfg.worker_password && w->co->cfg.worker_user && w->co->cfg.worker_user[0])
        redisAsyncCommand(ac, coord_worker_on_auth, w, "AUTH %s %s", w->co->cfg.worker_user,
                          w->co->cfg.worker_password);
    else if (w->co->cfg.worker_password)
        redisAsyncCommand(ac, coord_worker_on_auth, w, "AUTH %s", w->co->cfg.worker_password);
    redisAsyncCommand(ac, coord_worker_on_hello, w, "SHARD.HELLO");
}

static void coord_worker_connect(coord_worker *w)
{
    char why[200];
    redisAsyncContext *ac = ra_connect_tls(w->co->base, w->host, (int)w->port,
                                           w->co->worker_tls, w, coord_worker_on_connect,
                                           coord_worker_on_disconnect, why, sizeof(why));
    if (ac == NULL) {
        coord_worker_lost(w, why);
        return;
    }
    w->ac = ac;
    w->health_sent_us = ra_now_us();
    if (w->health != W_MISMATCH)
        w->health = W_CONNECTING;
}

static void coord_worker_on_reconnect(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    coord_worker_connect(arg);
}

long long coord_redis_used_memory(const coord *co)
{
    long long sum = 0;
    for (size_t i = 0; i < co->nw; i++) {
        const coord_worker *w = &co->w[i];
        if (w->redis_role == 0 || w->health == W_GONE)
            continue;           /* a replica: its master is counted by its own worker */
        if (w->redis_used_memory < 0 || !w->redis_addr[0])
            return -1;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = co->w[j].redis_role != 0 && co->w[j].health != W_GONE &&
                   strcmp(co->w[j].redis_addr, w->redis_addr) == 0;
        if (!seen)
            sum += w->redis_used_memory;
    }
    return sum;
}

/* "name:value" lines of SHARD.INFO: value of name, or -1. */
static long long coord_info_field(const char *s, size_t len, const char *name)
{
    const char *v;
    size_t vl;
    uint64_t x;
    const char *why;
    if (parse_info_line(s, len, name, &v, &vl) == 0 && parse_u64(v, vl, &x, &why) == 0 &&
        x < (uint64_t)INT64_MAX)
        return (long long)x;
    return -1;
}

/* Cluster mode: every worker reads the counters of all 256 shards (through
 * redirections), so the corpus counts are taken from one worker (the first that is
 * up and knows them) and the others count 0 in the sum of SIMHASH.INFO. */
static void coord_cluster_counts_fix(coord *co)
{
    int chosen = 0;
    for (size_t i = 0; i < co->nw; i++) {
        coord_worker *x = &co->w[i];
        if (!chosen && x->health == W_UP && x->raw_fingerprints >= 0 && x->raw_documents >= 0) {
            x->fingerprints = x->raw_fingerprints;
            x->documents = x->raw_documents;
            chosen = 1;
        } else {
            x->fingerprints = x->documents = 0;
        }
    }
    if (!chosen)
        for (size_t i = 0; i < co->nw; i++)
            co->w[i].fingerprints = co->w[i].documents = -1;
}

/* Cluster mode: the node, redirection counters and Redis state a worker reports;
 * a new node, new redirections or a Redis that is not up ask for a map refresh. */
static void coord_worker_cluster_health(coord_worker *w, const char *s, size_t len)
{
    coord *co = w->co;
    char node[sizeof(w->node)], state[32];
    w->raw_fingerprints = w->fingerprints;
    w->raw_documents = w->documents;
    coord_cluster_counts_fix(co);
    if (parse_info_str(s, len, "cluster_node", node, sizeof(node)) == 0 &&
        strcmp(node, w->node) != 0) {
        log_info("shard worker %s now attached to cluster node %s (was %s)", w->addr,
                 node[0] ? node : "(unknown)", w->node[0] ? w->node : "(unknown)");
        snprintf(w->node, sizeof(w->node), "%s", node);
        coord_routing_update(co);
        coord_cluster_refresh(co, "a shard worker changed node");
    }
    long long moved = coord_info_field(s, len, "cluster_moved");
    long long ask = coord_info_field(s, len, "cluster_ask");
    long long re = coord_info_field(s, len, "cluster_reattaches");
    int grew = (moved >= 0 && (unsigned long long)moved > w->moved) ||
               (ask >= 0 && (unsigned long long)ask > w->ask);
    if (moved >= 0)
        w->moved = (unsigned long long)moved;
    if (ask >= 0)
        w->ask = (unsigned long long)ask;
    if (re >= 0)
        w->reattaches = (unsigned long long)re;
    if (grew)
        coord_cluster_refresh(co, "shard workers followed redirections");
    if (parse_info_str(s, len, "redis", state, sizeof(state)) == 0 && strcmp(state, "up") != 0)
        coord_cluster_refresh(co, "a shard worker's Redis node is not up");
}

void coord_worker_take_info(coord_worker *w, const redisReply *r)
{
    if (r->type == REDIS_REPLY_STRING) {
        w->fingerprints = coord_info_field(r->str, r->len, "fingerprints");
        w->documents = coord_info_field(r->str, r->len, "documents");
        w->redis_used_memory = coord_info_field(r->str, r->len, "redis_used_memory");
        w->repairs = coord_info_field(r->str, r->len, "repairs");
        w->bucket_splits = coord_info_field(r->str, r->len, "bucket_splits");
        w->buckets_cached = coord_info_field(r->str, r->len, "buckets_cached");
        w->largest_bucket = coord_info_field(r->str, r->len, "largest_bucket_read");
        if (parse_info_str(r->str, r->len, "redis_addr", w->redis_addr,
                           sizeof(w->redis_addr)) != 0)
            w->redis_addr[0] = '\0';
        char role[16];
        w->redis_role = -1;
        if (parse_info_str(r->str, r->len, "redis_role", role, sizeof(role)) == 0)
            w->redis_role = strcmp(role, "master") == 0 ? 1 : strcmp(role, "replica") == 0 ? 0 : -1;
        if (w->co->cl)
            coord_worker_cluster_health(w, r->str, r->len);
    }
}

static void coord_worker_on_health(redisAsyncContext *ac, void *reply, void *priv)
{
    coord_worker *w = priv;
    redisReply *r = reply;
    (void)ac;
    w->health_pending = 0;
    if (r != NULL && w->health != W_GONE)
        coord_worker_take_info(w, r);
}

static void coord_worker_on_health_timer(evutil_socket_t fd, short what, void *arg)
{
    coord_worker *w = arg;
    (void)fd;
    (void)what;
    /* A worker whose host stops answering (a partition drops its packets: no FIN, no
     * RST) would keep its connection, and its routes, until TCP gives up many minutes
     * later: a health check or connection attempt without an answer for 3 health
     * intervals (at least twice the request deadline) drops the connection instead. */
    unsigned lim_ms = 3 * w->co->cfg.health_interval_ms;
    if (lim_ms < 2 * w->co->cfg.timeout_ms)
        lim_ms = 2 * w->co->cfg.timeout_ms;
    if (w->ac && ((w->health == W_UP && w->health_pending) || w->health == W_CONNECTING) &&
        ra_now_us() - w->health_sent_us > 1000LL * lim_ms) {
        char why[200];
        snprintf(why, sizeof(why), "%s: no answer within %u ms",
                 w->health == W_UP ? "SHARD.INFO" : "connecting", lim_ms);
        redisAsyncContext *ac = w->ac;
        ac->onDisconnect = NULL;    /* hiredis 0.14 cannot unset it through the API */
        w->ac = NULL;
        redisAsyncFree(ac);         /* pending callbacks run with NULL replies */
        coord_worker_lost(w, why);
        return;
    }
    if (w->health == W_UP && w->ac && !w->health_pending &&
        w->inflight < w->co->cfg.max_inflight_worker) {
        if (redisAsyncCommand(w->ac, coord_worker_on_health, w, "SHARD.INFO") == REDIS_OK) {
            w->health_pending = 1;
            w->health_sent_us = ra_now_us();
        }
    }
}

/* ---- Membership: configured workers, the registry, workers that leave ---- */

struct coord_discovery {
    struct event *tick;
    int pending;                /* a SHARD.WORKERS in flight */
    unsigned long long gen;     /* its number: a reply of an older one is ignored */
    uint64_t sent_ms;
    char asked[128];            /* the worker it went to */
    size_t next;                /* round robin over the workers that are up */
    unsigned long long reads, errors, joined, departed;
    int have_list;              /* a registry read succeeded */
    char last_error[160];
};

/* Splits "host:port" or "[v6addr]:port" into a malloc'd host (brackets removed) and
 * a port 1..65535. Returns 0, or -1 (not an address, or out of memory). */
static int coord_split_addr(const char *spec, char **host, unsigned *port)
{
    const char *colon = strrchr(spec, ':');
    uint64_t p;
    const char *why;
    *host = NULL;
    if (colon == NULL || colon == spec ||
        parse_uint_range(colon + 1, strlen(colon + 1), 1, 65535, &p, &why) != 0)
        return -1;
    size_t hl = (size_t)(colon - spec);
    if (spec[0] == '[') {
        if (hl < 3 || spec[hl - 1] != ']')
            return -1;
        *host = strndup(spec + 1, hl - 2);
    } else {
        if (memchr(spec, ':', hl) != NULL)
            return -1;          /* an IPv6 address needs its brackets */
        *host = strndup(spec, hl);
    }
    *port = (unsigned)p;
    return *host ? 0 : -1;
}

/* Fills slot w (index idx) for the address spec and starts its timers. Returns 0, or
 * -1 with err set. */
static int coord_worker_init(coord *co, coord_worker *w, unsigned idx, const char *spec,
                             int seed, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    w->co = co;
    w->idx = idx;
    w->seed = seed;
    w->fingerprints = w->documents = -1;
    w->raw_fingerprints = w->raw_documents = -1;
    w->redis_used_memory = -1;
    w->repairs = -1;
    w->bucket_splits = w->buckets_cached = w->largest_bucket = -1;
    w->redis_role = -1;
    if (strlen(spec) >= sizeof(w->addr)) {
        snprintf(err, errlen, "worker '%.40s...': longer than %zu characters", spec,
                 sizeof(w->addr) - 1);
        return -1;
    }
    if (coord_split_addr(spec, &w->host, &w->port) != 0) {
        snprintf(err, errlen, "worker '%.60s': expected HOST:PORT or [IPV6]:PORT with a port "
                 "1..65535", spec);
        return -1;
    }
    snprintf(w->addr, sizeof(w->addr), "%s", spec);
    w->reconnect_ev = evtimer_new(co->base, coord_worker_on_reconnect, w);
    w->health_ev = event_new(co->base, -1, EV_PERSIST, coord_worker_on_health_timer, w);
    if (w->host == NULL || w->reconnect_ev == NULL || w->health_ev == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct timeval tv = ra_tv_ms(co->cfg.health_interval_ms);
    event_add(w->health_ev, &tv);
    w->health = W_CONNECTING;
    return 0;
}

/* Frees what a slot holds (its connection must be gone). */
static void coord_worker_release(coord_worker *w)
{
    if (w->reconnect_ev)
        event_free(w->reconnect_ev);
    if (w->health_ev)
        event_free(w->health_ev);
    free(w->host);
    w->reconnect_ev = w->health_ev = NULL;
    w->host = NULL;
}

static coord_worker *coord_worker_find(coord *co, const char *addr, size_t len)
{
    for (size_t i = 0; i < co->nw; i++)
        if (strlen(co->w[i].addr) == len && memcmp(co->w[i].addr, addr, len) == 0)
            return &co->w[i];
    return NULL;
}

/* A worker the registry lists and this coordinator does not know: a new slot, or the
 * slot of a worker gone for COORD_GONE_REUSE_MS (no request of an operation still
 * running can name it). */
static void coord_worker_join(coord *co, const char *addr)
{
    char err[200];
    coord_worker *w = NULL;
    char *host;
    unsigned port;
    if (coord_split_addr(addr, &host, &port) != 0) {
        log_warn_rl("worker registry lists '%.60s', not a HOST:PORT: ignored", addr);
        return;
    }
    free(host);
    if (co->nw < COORD_WORKERS_MAX) {
        w = &co->w[co->nw];
    } else {
        uint64_t now = ra_now_ms();
        for (size_t i = 0; i < co->nw && w == NULL; i++)
            if (co->w[i].health == W_GONE && co->w[i].inflight == 0 && co->w[i].ac == NULL &&
                now - co->w[i].gone_ms >= COORD_GONE_REUSE_MS)
                w = &co->w[i];
        if (w == NULL) {
            log_error_rl("worker registry lists %s, but %d workers are known already "
                         "(COORD_WORKERS_MAX); not connected", addr, COORD_WORKERS_MAX);
            return;
        }
        coord_worker_release(w);
    }
    unsigned idx = (unsigned)(w - co->w);
    if (coord_worker_init(co, w, idx, addr, 0, err, sizeof err) != 0) {
        log_warn_rl("worker registry: %s", err);     /* out of memory */
        coord_worker_release(w);
        memset(w, 0, sizeof *w);
        w->health = W_GONE;     /* a free slot again (gone_ms 0: reusable at once) */
        w->idx = idx;
        w->co = co;
        return;
    }
    if (idx == co->nw)
        co->nw++;
    w->listed = w->ever_listed = 1;
    co->disc->joined++;
    log_info("shard worker %s joined (worker registry)", w->addr);
    coord_worker_connect(w);
}

/* A worker that is not configured, not in the registry and not up: dropped (no
 * connection attempts, no routes) until the registry lists it again. */
static void coord_worker_retire(coord_worker *w)
{
    coord *co = w->co;
    log_info("shard worker %s gone: not in the worker registry and %s", w->addr,
             coord_health_name(w->health));
    w->health = W_GONE;
    w->gone_ms = ra_now_ms();
    w->have_range = 0;
    w->cluster = 0;
    w->node[0] = '\0';
    w->fingerprints = w->documents = -1;
    w->raw_fingerprints = w->raw_documents = -1;
    w->redis_used_memory = -1;
    w->redis_addr[0] = '\0';
    w->listed = w->left = 0;
    event_del(w->reconnect_ev);
    event_del(w->health_ev);
    if (w->ac) {
        /* detached first: no callback of this context touches the slot again (a
         * context still connecting is freed by hiredis 0.14 without any callback) */
        redisAsyncContext *ac = w->ac;
        w->ac = NULL;
        ac->data = NULL;
        if (ac->c.flags & REDIS_CONNECTED)
            redisAsyncDisconnect(ac);
        else
            redisAsyncFree(ac);
    }
    co->disc->departed++;
    coord_routing_update(co);
}

/* A gone worker listed again: connect. */
static void coord_worker_revive(coord_worker *w)
{
    struct timeval tv = ra_tv_ms(w->co->cfg.health_interval_ms);
    log_info("shard worker %s is back in the worker registry", w->addr);
    w->health = W_CONNECTING;
    ra_backoff_reset(&w->backoff);
    event_add(w->health_ev, &tv);
    w->co->disc->joined++;
    coord_worker_connect(w);
}

static void coord_on_workers(redisAsyncContext *ac, void *reply, void *priv)
{
    coord_worker *from = ac->data;
    redisReply *r = reply;
    if (from == NULL || r == NULL)
        return;             /* connection lost, retired or shutting down: the next tick
                               asks again (its deadline clears pending) */
    coord *co = from->co;
    struct coord_discovery *d = co->disc;
    if (d == NULL || (uintptr_t)priv != (uintptr_t)d->gen)
        return;             /* an older read, given up on */
    d->pending = 0;
    if (r->type != REDIS_REPLY_ARRAY) {
        d->errors++;
        snprintf(d->last_error, sizeof d->last_error, "%.150s",
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply to SHARD.WORKERS");
        return;
    }
    d->reads++;
    d->have_list = 1;
    d->last_error[0] = '\0';
    for (size_t i = 0; i < co->nw; i++)
        co->w[i].listed = 0;
    for (size_t e = 0; e < r->elements; e++) {
        const redisReply *a = r->element[e];
        if (a->type != REDIS_REPLY_STRING || a->len == 0 || a->len >= sizeof co->w[0].addr)
            continue;
        coord_worker *w = coord_worker_find(co, a->str, a->len);
        if (w) {
            w->listed = w->ever_listed = 1;
            if (w->health == W_GONE)
                coord_worker_revive(w);
        } else {
            char addr[sizeof co->w[0].addr];
            memcpy(addr, a->str, a->len);
            addr[a->len] = '\0';
            coord_worker_join(co, addr);
        }
    }
    int changed = 0;
    for (size_t i = 0; i < co->nw; i++) {
        coord_worker *w = &co->w[i];
        if (w->health == W_GONE)
            continue;
        if (w->listed && w->left) {
            w->left = 0;
            changed = 1;
            log_info("shard worker %s is in the worker registry again", w->addr);
        } else if (!w->listed && !w->left && w->ever_listed) {
            /* it was listed; now it left (shutdown, drain) */
            w->left = 1;
            changed = 1;
            log_info("shard worker %s left the worker registry: no new requests while "
                     "another worker can serve its shards", w->addr);
        }
        /* dropped when down and not listed: a discovered worker, or a configured one
         * that was listed once (it announces itself, so its absence means it left or
         * died); a configured worker that never registered is kept, as before */
        if (!w->listed && (!w->seed || w->ever_listed) && w->health != W_UP)
            coord_worker_retire(w);
    }
    if (changed)
        coord_routing_update(co);
}

/* Every discover-interval-ms: SHARD.WORKERS to the next worker that is up. */
static void coord_on_discover(evutil_socket_t fd, short what, void *arg)
{
    coord *co = arg;
    struct coord_discovery *d = co->disc;
    (void)fd;
    (void)what;
    if (d->pending) {
        /* a worker that keeps the connection but stops answering must not stop the
         * registry reads: give up on it after twice timeout-ms or the interval */
        uint64_t limit = 2u * (co->cfg.timeout_ms > co->cfg.discover_interval_ms
                               ? co->cfg.timeout_ms : co->cfg.discover_interval_ms);
        if (ra_now_ms() - d->sent_ms < limit)
            return;
        d->pending = 0;
        d->gen++;
        d->errors++;
        snprintf(d->last_error, sizeof d->last_error, "SHARD.WORKERS to %.100s unanswered for "
                 "%llu ms", d->asked, (unsigned long long)limit);
        log_warn_rl("worker registry: %s; asking another worker", d->last_error);
    }
    if (co->nw == 0)
        return;
    for (size_t k = 0; k < co->nw; k++) {
        coord_worker *w = &co->w[(d->next + k) % co->nw];
        if (w->health != W_UP || w->ac == NULL ||
            w->inflight >= co->cfg.max_inflight_worker)
            continue;
        d->next = (d->next + k + 1) % co->nw;
        d->gen++;
        if (redisAsyncCommand(w->ac, coord_on_workers, (void *)(uintptr_t)d->gen,
                              "SHARD.WORKERS") == REDIS_OK) {
            d->pending = 1;
            d->sent_ms = ra_now_ms();
            snprintf(d->asked, sizeof d->asked, "%s", w->addr);
        }
        return;
    }
}

/* The first worker up: read the registry now rather than at the next tick, so the
 * other workers are found as soon as possible after a start. */
static void coord_discover_first(coord *co)
{
    if (co->disc && co->disc->tick && !co->disc->have_list)
        coord_on_discover(-1, 0, co);
}

int coord_workers_start(coord *co, char *err, size_t errlen)
{
    co->nw = 0;
    co->w = calloc(COORD_WORKERS_MAX, sizeof(*co->w));
    co->disc = calloc(1, sizeof(*co->disc));
    if (co->w == NULL || co->disc == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int b = 0; b < 256; b++)
        co->route[b] = -1;
    srandom((unsigned)ra_now_us() ^ (unsigned)getpid());
    for (size_t i = 0; i < co->cfg.workers.n && i < COORD_WORKERS_MAX; i++) {
        const char *spec = co->cfg.workers.v[i];
        if (coord_worker_find(co, spec, strlen(spec)) != NULL) {
            snprintf(err, errlen, "worker '%s' given twice", spec);
            return -1;
        }
        co->nw = i + 1;
        if (coord_worker_init(co, &co->w[i], (unsigned)i, spec, 1, err, errlen) != 0)
            return -1;
    }
    if (co->cfg.discover_interval_ms > 0) {
        co->disc->tick = event_new(co->base, -1, EV_PERSIST, coord_on_discover, co);
        if (co->disc->tick == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        struct timeval tv = ra_tv_ms(co->cfg.discover_interval_ms);
        event_add(co->disc->tick, &tv);
    }
    for (size_t i = 0; i < co->nw; i++)
        coord_worker_connect(&co->w[i]);
    return 0;
}

void coord_workers_stop(coord *co)
{
    for (size_t i = 0; co->w && i < co->nw; i++) {
        coord_worker *w = &co->w[i];
        if (w->ac) {
            redisAsyncContext *ac = w->ac;
            ac->onDisconnect = NULL;    /* hiredis 0.14 cannot unset it through the API */
            w->ac = NULL;
            redisAsyncFree(ac);     /* pending callbacks run with NULL replies */
        }
        coord_worker_release(w);
    }
    if (co->disc && co->disc->tick)
        event_free(co->disc->tick);
    free(co->disc);
    co->disc = NULL;
    free(co->w);
    co->w = NULL;
    co->nw = 0;
}

void coord_corpus_counts(const coord *co, long long *fps, long long *docs)
{
    *fps = *docs = 0;
    if (co->cl) {
        /* every worker reads every shard: coord_cluster_counts_fix chose one */
        for (size_t i = 0; i < co->nw; i++) {
            const coord_worker *w = &co->w[i];
            if (w->health == W_GONE)
                continue;
            *fps = *fps < 0 || w->fingerprints < 0 ? -1 : *fps + w->fingerprints;
            *docs = *docs < 0 || w->documents < 0 ? -1 : *docs + w->documents;
        }
        return;
    }
    /* one Redis: workers may serve the same shards (a standby, a drain), so the
     * counts come from workers whose ranges cover 0-255 once (ranges that only
     * partly overlap give no such cover: unknown), those up with counts first */
    unsigned b = 0;
    while (b < 256) {
        const coord_worker *pick = NULL;
        for (size_t i = 0; i < co->nw; i++) {
            const coord_worker *w = &co->w[i];
            if (w->health == W_GONE || !w->have_range || w->lo != b)
                continue;
            /* up with counts, then counts (a down worker's may be stale), then the
                 * widest range */
            int rank = (w->fingerprints >= 0 && w->documents >= 0) * (1 + (w->health == W_UP));
            int prank = pick ? (pick->fingerprints >= 0 && pick->documents >= 0) *
                               (1 + (pick->health == W_UP)) : -1;
            if (rank > prank || (rank == prank && w->hi > pick->hi))
                pick = w;
        }
        if (pick == NULL || pick->fingerprints < 0 || pick->documents < 0) {
            *fps = *docs = -1;
            return;
        }
        *fps += pick->fingerprints;
        *docs += pick->documents;
        b = pick->hi + 1;
    }
}

void coord_workers_info(coord *co, resp_buf *b)
{
    size_t live = 0, up = 0;
    const struct coord_discovery *d = co->disc;
    for (size_t i = 0; i < co->nw; i++) {
        live += co->w[i].health != W_GONE;
        up += co->w[i].health == W_UP;
    }
    resp_buf_printf(b, "workers:%zu\r\nworkers_up:%zu\r\nrouting:%s\r\n"
                    "discover_interval_ms:%u\r\nregistry_reads:%llu\r\nregistry_errors:%llu\r\n"
                    "workers_joined:%llu\r\nworkers_gone:%llu\r\nregistry_last_error:%s\r\n",
                    live, up, co->routing_ok ? "ok" : "incomplete", co->cfg.discover_interval_ms,
                    d ? d->reads : 0, d ? d->errors : 0, d ? d->joined : 0, d ? d->departed : 0,
                    d ? d->last_error : "");
    if (co->cl)
        for (size_t i = 0; i < co->nw; i++)
            if (co->w[i].health != W_GONE)
                resp_buf_printf(b, "worker%zu_node:%s\r\n", i,
                                co->w[i].node[0] ? co->w[i].node : "unknown");
    for (size_t i = 0; i < co->nw; i++) {
        coord_worker *w = &co->w[i];
        if (w->health == W_GONE)
            continue;
        char range[32] = "unknown";
        if (w->have_range)
            snprintf(range, sizeof(range), "%u-%u", w->lo, w->hi);
        resp_buf_printf(b,
                        "worker%zu:addr=%s,health=%s,shards=%s,latency_us=%.0f,requests=%llu,"
                        "errors=%llu,timeouts=%llu,inflight=%u,connects=%llu,repairs=%lld,"
                        "source=%s,registry=%s,redis_addr=%s,redis_used_memory=",
                        i, w->addr, coord_health_name(w->health), range, w->latency_us, w->requests,
                        w->errors, w->timeouts, w->inflight, w->connects, w->repairs,
                        w->seed ? "config" : "registry",
                        w->listed ? "listed" : w->left ? "left" : "no",
                        w->redis_addr[0] ? w->redis_addr : "unknown");
        if (w->redis_used_memory >= 0)
            resp_buf_printf(b, "%lld\r\n", w->redis_used_memory);
        else
            resp_buf_printf(b, "unknown\r\n");
    }
    coord_cluster_info(co, b);
}
