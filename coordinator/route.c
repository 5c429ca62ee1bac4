/* route.c: routing of simhash-coordinator, both modes behind coord_route() and
 * coord_routing_update(). With one Redis, every first byte of a permuted value goes
 * to the worker whose configured range holds it. In Redis Cluster mode
 * (docs/cluster.md) the slot map is read with CLUSTER SLOTS from a seed node (one
 * request in flight, a deadline, rate-limited, periodic), and every (table t, first
 * byte xx) goes to the shard worker attached to the master of the slot of "{t:xx}".
 * workers.c keeps the connections and their health and calls coord_routing_update()
 * when a worker comes or goes. */
#include "coord.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "cluster.h"
#include "log.h"

#define ROUTE_REFRESH_MIN_US 100000     /* at most one refresh start per 100 ms */
#define ROUTE_DEADLINE_MS 1000          /* one CLUSTER SLOTS attempt */
#define ROUTE_RETRY_MS 200              /* after a failed attempt, next seed */
#define ROUTE_SEEDS_MAX 256

struct coord_cluster {
    cluster_map *map, *next;            /* current map; scratch for the next one */
    int have_map;
    char (*master)[CLUSTER_ADDR_MAX + 8];   /* "host:port" per node index of map */
    unsigned ntables;
    uint16_t *slot;                     /* [t * 256 + xx]: slot of "{t:xx}" */
    int16_t *route;                     /* [t * 256 + xx]: worker index or -1 */
    size_t failover_routes;             /* routes to another node's worker (logged) */
    /* refresh */
    redisAsyncContext *ac;              /* the CLUSTER SLOTS connection in flight */
    int want;                           /* a refresh was asked for while busy */
    uint64_t last_start_us, last_ok_us;
    struct event *period_ev, *deadline_ev, *retry_ev;
    size_t seed_next;
    cluster_node seeds[ROUTE_SEEDS_MAX];
    size_t nseeds_cfg, nseeds;
    const char *reason;                 /* why the refresh in flight started */
    unsigned long long refreshes, failures, changes;
    char last_error[CLUSTER_ADDR_MAX + 8 + 200];
    char seed_addr[CLUSTER_ADDR_MAX + 8];
};

static void coord_cluster_refresh_start(coord *co);
static int coord_cluster_routing(coord *co, char *why, size_t whylen);
static coord_worker *coord_cluster_route(coord *co, unsigned t, uint64_t p);

/* ---- Routes ---- */

/* Recompute the routing table from the workers' ranges. Several workers may serve a
 * shard (workers added for a range, a standby, one draining): byte b goes to one of
 * the usable workers serving it (spread by b), else to one that is up but leaving the
 * registry, else to the first that serves it (down: routing is then incomplete).
 * Returns 1 when every byte 0..255 goes to a worker that is up, else 0 (with a reason
 * in why). */
static int coord_route_ranges(coord *co, char *why, size_t whylen)
{
    int owner[256];
    int ok = 1;
    why[0] = '\0';
    for (unsigned b = 0; b < 256; b++) {
        int cand[COORD_WORKERS_MAX];
        size_t nusable = 0, first = SIZE_MAX, up = SIZE_MAX;
        for (size_t i = 0; i < co->nw; i++) {
            coord_worker *w = &co->w[i];
            if (w->health == W_GONE || !w->have_range || b < w->lo || b > w->hi)
                continue;
            if (first == SIZE_MAX)
                first = i;
            if (up == SIZE_MAX && w->health == W_UP)
                up = i;
            if (coord_worker_usable(w))
                cand[nusable++] = (int)i;
        }
        owner[b] = nusable ? cand[b % nusable] : up != SIZE_MAX ? (int)up :
                   first != SIZE_MAX ? (int)first : -1;
        if (owner[b] >= 0 && co->w[owner[b]].health == W_UP)
            continue;
        if (ok) {
            if (owner[b] < 0)
                snprintf(why, whylen, "no shard worker serves first-byte shard %u (the "
                         "workers' ranges must cover 0-255)", b);
            else
                snprintf(why, whylen, "shard worker %s (shards %u-%u) unavailable: %s",
                         co->w[owner[b]].addr, co->w[owner[b]].lo, co->w[owner[b]].hi,
                         co->w[owner[b]].problem[0] ? co->w[owner[b]].problem : "not up");
        }
        ok = 0;
    }
    memcpy(co->route, owner, sizeof(owner));
    return ok;
}

/* Rebuild the routes (single Redis: from the workers' ranges; cluster: from the slot
 * map) and log the transition between complete and incomplete. */
void coord_routing_update(coord *co)
{
    char why[1024];
    int ok = co->cl ? coord_cluster_routing(co, why, sizeof(why))
                    : coord_route_ranges(co, why, sizeof(why));
    if (ok && !co->routing_ok)
        log_info("routing complete: %s", co->cl ? "every (table, shard) has a shard worker at "
                 "its master" : "every first-byte shard has a shard worker that is up");
    else if (!ok && co->routing_ok)
        log_warn("routing incomplete: %s", why[0] ? why : "a shard worker is not up");
    co->routing_ok = ok;
    snprintf(co->routing_why, sizeof(co->routing_why), "%s", ok ? "" : why[0] ? why :
             "a shard worker is not up");
    if (ok)
        co->ever_ready = 1;
}

coord_worker *coord_route(coord *co, unsigned t, uint64_t p)
{
    if (co->cl)
        return coord_cluster_route(co, t, p);
    int i = co->route[p >> 56];
    return i >= 0 ? &co->w[i] : NULL;
}


/* Cluster mode: rebuild the (table, byte) -> worker routes from the slot map and the
 * workers' nodes. A (table, byte) whose master has no worker that is up goes to
 * another cluster worker that is up (spread over them by route index): workers follow
 * -MOVED / -ASK, so any of them reaches any slot, one hop further (worker failover,
 * docs/cluster.md). Returns 1 when every route has a worker that is up, else 0 with a
 * reason in why. */
static int coord_cluster_routing(coord *co, char *why, size_t whylen)
{
    struct coord_cluster *cl = co->cl;
    int ok = 1;
    size_t nup = 0, nfail = 0;
    int16_t *up = malloc(co->nw * sizeof(*up) + 1);

    why[0] = '\0';
    for (size_t k = 0; up && k < co->nw; k++)
        if (co->w[k].cluster && coord_worker_usable(&co->w[k]))
            up[nup++] = (int16_t)k;
    for (unsigned i = 0; i < cl->ntables * 256; i++) {
        int n = cl->have_map ? cluster_map_node(cl->map, cl->slot[i]) : -1;
        int best = -1;
        if (n >= 0)
            for (size_t k = 0; k < co->nw; k++) {
                coord_worker *w = &co->w[k];
                if (!w->cluster || w->health == W_GONE || strcmp(w->node, cl->master[n]) != 0)
                    continue;
                if (best < 0 || (coord_worker_usable(w) && !coord_worker_usable(&co->w[best])))
                    best = (int)k;
            }
        /* the node's own worker is down or leaving, or it has none (a node just added,
         * its worker not found in the registry yet): another one. Not when its worker
         * was refused (other settings): that is a deployment mistake to report */
        if (cl->have_map && n >= 0 && nup > 0 &&
            (best < 0 || (!coord_worker_usable(&co->w[best]) &&
                          co->w[best].health != W_MISMATCH))) {
            best = up[i % nup];
            nfail++;
        }
        cl->route[i] = (int16_t)best;
        if (best >= 0 && co->w[best].health == W_UP)
            continue;
        if (ok) {
            if (!cl->have_map)
                snprintf(why, whylen, "no cluster slot map yet (%s)",
                         cl->last_error[0] ? cl->last_error : "reading CLUSTER SLOTS");
            else if (n < 0)
                snprintf(why, whylen, "slot %u of table %u shard %u has no master (cluster down?)",
                         cl->slot[i], i / 256, i % 256);
            else if (best < 0)
                snprintf(why, whylen, "no shard worker attached to master %s (slot %u)",
                         cl->master[n], cl->slot[i]);
            else
                snprintf(why, whylen, "shard worker %s of master %s unavailable: %s",
                         co->w[best].addr, cl->master[n],
                         co->w[best].problem[0] ? co->w[best].problem : "not up");
        }
        ok = 0;
    }
    free(up);
    if (nfail != cl->failover_routes) {
        if (nfail)
            log_warn("worker failover: %zu of %u (table, shard) routes go to another node's "
                     "shard worker (their own is not up); they follow -MOVED", nfail,
                     cl->ntables * 256);
        else
            log_info("worker failover over: every (table, shard) goes to its own node's worker");
        cl->failover_routes = nfail;
    }
    return ok;
}

static coord_worker *coord_cluster_route(coord *co, unsigned t, uint64_t p)
{
    struct coord_cluster *cl = co->cl;
    if (t >= cl->ntables)
        return NULL;
    int i = cl->route[t * 256 + (unsigned)(p >> 56)];
    return i >= 0 ? &co->w[i] : NULL;
}

/* ---- Map refresh ---- */

/* Seeds: the cluster-node list, then the masters of the current map. */
static void coord_cluster_seeds_update(struct coord_cluster *cl)
{
    cl->nseeds = cl->nseeds_cfg;
    if (!cl->have_map)
        return;
    for (size_t i = 0; i < cl->map->nnodes && cl->nseeds < ROUTE_SEEDS_MAX; i++) {
        const cluster_node *n = &cl->map->nodes[i];
        int dup = 0;
        for (size_t j = 0; j < cl->nseeds && !dup; j++)
            dup = cl->seeds[j].port == n->port && strcmp(cl->seeds[j].host, n->host) == 0;
        if (!dup)
            cl->seeds[cl->nseeds++] = *n;
    }
}

/* End of one attempt: close ac when given (a graceful close, safe from its own
 * callbacks), count a failure and retry with the next seed, or run a refresh that
 * was asked for meanwhile. */
static void coord_cluster_attempt_end(coord *co, redisAsyncContext *ac, int ok, const char *err)
{
    struct coord_cluster *cl = co->cl;
    evtimer_del(cl->deadline_ev);
    cl->ac = NULL;
    if (ac)
        redisAsyncDisconnect(ac);
    if (!ok) {
        cl->failures++;
        snprintf(cl->last_error, sizeof(cl->last_error), "%s: %.180s", cl->seed_addr, err);
        log_warn_rl("cluster slot map refresh failed: %s", cl->last_error);
        struct timeval tv = ra_tv_ms(ROUTE_RETRY_MS);
        evtimer_add(cl->retry_ev, &tv);
        return;
    }
    if (cl->want) {
        cl->want = 0;
        coord_cluster_refresh(co, "asked for during the last refresh");
    }
}

/* Installs the map in cl->next; returns 1 when any route changed. */
static int coord_cluster_map_install(coord *co)
{
    struct coord_cluster *cl = co->cl;
    size_t n = cl->ntables * 256;
    int16_t *old = malloc(n * sizeof(*old));
    char (*names)[CLUSTER_ADDR_MAX + 8] = malloc(cl->next->nnodes * sizeof(*names) + 1);
    if (old == NULL || names == NULL) {
        free(old);
        free(names);
        return 0;
    }
    memcpy(old, cl->route, n * sizeof(*old));
    cluster_map *t = cl->map;
    cl->map = cl->next;
    cl->next = t;
    cl->have_map = 1;
    free(cl->master);
    cl->master = names;
    for (size_t i = 0; i < cl->map->nnodes; i++)
        snprintf(cl->master[i], sizeof(cl->master[i]), "%s:%d", cl->map->nodes[i].host,
                 cl->map->nodes[i].port);
    coord_cluster_seeds_update(cl);
    coord_routing_update(co);
    int changed = memcmp(old, cl->route, n * sizeof(*old)) != 0;
    free(old);
    return changed;
}

static void coord_cluster_on_slots(redisAsyncContext *ac, void *reply, void *priv)
{
    coord *co = priv;
    struct coord_cluster *cl = co->cl;
    redisReply *r = reply;
    char err[256];

    if (r == NULL || cl == NULL || cl->ac != ac)
        return;             /* dropped: the disconnect or deadline path counted it */
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(err, sizeof(err), "CLUSTER SLOTS: %.*s", (int)(r->len > 200 ? 200 : r->len), r->str);
        coord_cluster_attempt_end(co, ac, 0, err);
        return;
    }
    int covered = cluster_map_from_slots(cl->next, r, ac->c.tcp.host ? ac->c.tcp.host : "127.0.0.1",
                                         err, sizeof(err));
    if (covered < 0) {
        coord_cluster_attempt_end(co, ac, 0, err);
        return;
    }
    cl->refreshes++;
    cl->last_ok_us = ra_now_us();
    cl->last_error[0] = '\0';
    if (coord_cluster_map_install(co)) {
        cl->changes++;
        log_info("cluster slot map from %s: %zu masters, %d of %d slots covered (%s); routes changed",
                 cl->seed_addr, cl->map->nnodes, covered, CLUSTER_SLOTS, cl->reason);
    }
    coord_cluster_attempt_end(co, ac, 1, NULL);
}

static void coord_cluster_on_auth(redisAsyncContext *ac, void *reply, void *priv)
{
    coord *co = priv;
    redisReply *r = reply;
    char err[256];
    if (r == NULL || co->cl == NULL || co->cl->ac != ac || r->type != REDIS_REPLY_ERROR)
        return;
    snprintf(err, sizeof(err), "AUTH: %.*s", (int)(r->len > 200 ? 200 : r->len), r->str);
    coord_cluster_attempt_end(co, ac, 0, err);
}

static void coord_cluster_on_connect(const redisAsyncContext *ac, int status)
{
    coord *co = ac->data;
    if (status == REDIS_OK || co == NULL || co->cl == NULL || co->cl->ac != ac)
        return;
    char err[200];
    snprintf(err, sizeof(err), "cannot connect: %s", ac->errstr);
    coord_cluster_attempt_end(co, NULL, 0, err);     /* hiredis frees ac */
}

static void coord_cluster_on_disconnect(const redisAsyncContext *ac, int status)
{
    coord *co = ac->data;
    if (co == NULL || co->cl == NULL || co->cl->ac != ac)
        return;
    char err[200];
    snprintf(err, sizeof(err), "connection lost%s%s", status != REDIS_OK ? ": " : "",
             status != REDIS_OK ? ac->errstr : "");
    coord_cluster_attempt_end(co, NULL, 0, err);
}

static void coord_cluster_on_deadline(evutil_socket_t fd, short what, void *arg)
{
    coord *co = arg;
    struct coord_cluster *cl = co->cl;
    (void)fd;
    (void)what;
    redisAsyncContext *ac = cl->ac;
    if (ac == NULL)
        return;
    cl->ac = NULL;
    ac->data = NULL;
    redisAsyncFree(ac);     /* callbacks run with NULL replies and find ac->data NULL */
    char err[64];
    snprintf(err, sizeof(err), "no answer within %d ms", ROUTE_DEADLINE_MS);
    coord_cluster_attempt_end(co, NULL, 0, err);
}

/* One CLUSTER SLOTS attempt against the next seed. */
static void coord_cluster_refresh_start(coord *co)
{
    struct coord_cluster *cl = co->cl;
    if (cl->ac || cl->nseeds == 0)
        return;
    const cluster_node *s = &cl->seeds[cl->seed_next++ % cl->nseeds];
    snprintf(cl->seed_addr, sizeof(cl->seed_addr), "%s:%d", s->host, s->port);
    cl->last_start_us = ra_now_us();
    char err[200];
    redisAsyncContext *ac = ra_connect(co->base, s->host, s->port, co, coord_cluster_on_connect,
                                       coord_cluster_on_disconnect, err, sizeof(err));
    if (ac == NULL) {
        coord_cluster_attempt_end(co, NULL, 0, err);
        return;
    }
    cl->ac = ac;
    if (co->cfg.cluster_password && co->cfg.cluster_password[0])
        redisAsyncCommand(ac, coord_cluster_on_auth, co, "AUTH %s", co->cfg.cluster_password);
    redisAsyncCommand(ac, coord_cluster_on_slots, co, "CLUSTER SLOTS");
    struct timeval tv = ra_tv_ms(ROUTE_DEADLINE_MS);
    evtimer_add(cl->deadline_ev, &tv);
}

void coord_cluster_refresh(coord *co, const char *why)
{
    struct coord_cluster *cl = co->cl;
    if (cl == NULL)
        return;
    if (cl->ac || evtimer_pending(cl->retry_ev, NULL)) {
        cl->want = 1;
        return;
    }
    uint64_t now = ra_now_us();
    if (cl->last_start_us && now - cl->last_start_us < ROUTE_REFRESH_MIN_US) {
        uint64_t wait = ROUTE_REFRESH_MIN_US - (now - cl->last_start_us);
        struct timeval tv = { 0, (suseconds_t)wait };
        cl->reason = why;
        evtimer_add(cl->retry_ev, &tv);
        return;
    }
    cl->reason = why;
    coord_cluster_refresh_start(co);
}

static void coord_cluster_on_retry(evutil_socket_t fd, short what, void *arg)
{
    coord *co = arg;
    (void)fd;
    (void)what;
    co->cl->want = 0;
    coord_cluster_refresh_start(co);
}

static void coord_cluster_on_period(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    coord_cluster_refresh(arg, "periodic");
}

/* ---- Life cycle and INFO ---- */

int coord_cluster_start(coord *co, char *err, size_t errlen)
{
    if (co->cfg.cluster_nodes.n == 0)
        return 0;
    struct coord_cluster *cl = calloc(1, sizeof(*cl));
    if (cl == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    co->cl = cl;
    cl->ntables = co->ps.ntables;
    cl->map = malloc(sizeof(*cl->map));
    cl->next = malloc(sizeof(*cl->next));
    cl->slot = malloc(cl->ntables * 256 * sizeof(*cl->slot));
    cl->route = malloc(cl->ntables * 256 * sizeof(*cl->route));
    cl->period_ev = event_new(co->base, -1, EV_PERSIST, coord_cluster_on_period, co);
    cl->deadline_ev = evtimer_new(co->base, coord_cluster_on_deadline, co);
    cl->retry_ev = evtimer_new(co->base, coord_cluster_on_retry, co);
    if (!cl->map || !cl->next || !cl->slot || !cl->route || !cl->period_ev ||
        !cl->deadline_ev || !cl->retry_ev) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (unsigned t = 0; t < cl->ntables; t++)
        for (unsigned b = 0; b < 256; b++) {
            char tag[24];
            int n = snprintf(tag, sizeof(tag), "{%u:%02x}", t, b);
            cl->slot[t * 256 + b] = (uint16_t)cluster_keyslot(tag, (size_t)n);
            cl->route[t * 256 + b] = -1;
        }
    for (size_t i = 0; i < co->cfg.cluster_nodes.n; i++) {
        const char *spec = co->cfg.cluster_nodes.v[i];
        if (i >= ROUTE_SEEDS_MAX || cluster_parse_addr(spec, strlen(spec), &cl->seeds[i]) != 0) {
            snprintf(err, errlen, "cluster-node '%s': expected HOST:PORT with a port 1..65535 "
                     "(at most %d)", spec, ROUTE_SEEDS_MAX);
            return -1;
        }
    }
    cl->nseeds_cfg = cl->nseeds = co->cfg.cluster_nodes.n;
    struct timeval tv = ra_tv_ms(co->cfg.cluster_refresh_ms);
    event_add(cl->period_ev, &tv);
    coord_cluster_refresh(co, "start");
    return 0;
}

void coord_cluster_stop(coord *co)
{
    struct coord_cluster *cl = co->cl;
    if (cl == NULL)
        return;
    if (cl->ac) {
        redisAsyncContext *ac = cl->ac;
        cl->ac = NULL;
        ac->data = NULL;
        ac->onDisconnect = NULL;
        redisAsyncFree(ac);
    }
    if (cl->period_ev)
        event_free(cl->period_ev);
    if (cl->deadline_ev)
        event_free(cl->deadline_ev);
    if (cl->retry_ev)
        event_free(cl->retry_ev);
    free(cl->map);
    free(cl->next);
    free(cl->master);
    free(cl->slot);
    free(cl->route);
    free(cl);
    co->cl = NULL;
}

void coord_cluster_info(coord *co, resp_buf *b)
{
    struct coord_cluster *cl = co->cl;
    unsigned long long moved = 0, ask = 0, re = 0;
    int covered = 0;
    if (cl == NULL) {
        resp_buf_printf(b, "\r\n# Cluster\r\ncluster_enabled:0\r\n");
        return;
    }
    for (size_t i = 0; i < co->nw; i++) {
        moved += co->w[i].moved;
        ask += co->w[i].ask;
        re += co->w[i].reattaches;
    }
    if (cl->have_map)
        for (unsigned s = 0; s < CLUSTER_SLOTS; s++)
            covered += cl->map->slot_node[s] >= 0;
    resp_buf_printf(b, "\r\n# Cluster\r\ncluster_enabled:1\r\ncluster_state:%s\r\n"
                    "cluster_masters:%zu\r\ncluster_slots_covered:%d\r\nmap_refreshes:%llu\r\n"
                    "map_refresh_failures:%llu\r\nmap_changes:%llu\r\ncluster_moved:%llu\r\n"
                    "cluster_ask:%llu\r\ncluster_reattaches:%llu\r\nmap_age_ms:%lld\r\n"
                    "map_last_error:%s\r\nworker_failover_routes:%zu\r\n",
                    co->routing_ok ? "ok" : "incomplete", cl->have_map ? cl->map->nnodes : 0,
                    covered, cl->refreshes, cl->failures, cl->changes, moved, ask, re,
                    cl->last_ok_us ? (long long)((ra_now_us() - cl->last_ok_us) / 1000) : -1LL,
                    cl->last_error, cl->failover_routes);
}
