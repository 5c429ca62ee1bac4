/* redis_cluster.c: the cluster side of the shard worker's Redis connection
 * (docs/cluster.md): connections to the other nodes, opened on demand, over which
 * -MOVED / -ASK redirections are followed; and reattaching to the new master of the
 * worker's slots after its node failed, by asking the other known nodes for CLUSTER
 * SLOTS one at a time, asynchronously, each with a deadline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "log.h"
#include "redis_int.h"

/* AUTH on a new connection to a node, when a password is set; no reply awaited (a
 * refusal shows as NOAUTH on the commands after it). */
static void shard_redis_auth(shard_redis *r, redisAsyncContext *ac)
{
    if (r->password && r->password[0]) {
        const char *argv[3] = {"AUTH", r->user[0] ? r->user : r->password, r->password};
        redisAsyncCommandArgv(ac, NULL, NULL, r->user[0] ? 3 : 2, argv, NULL);
    }
}

/* ---- Connections to other cluster nodes ---- */

static void shard_peer_on_connect(const redisAsyncContext *ac, int status)
{
    shard_peer *p = ac->data;
    if (p == NULL || p->ac != ac || status == REDIS_OK)
        return;
    p->ac = NULL;           /* hiredis frees it; pending commands get NULL replies */
    log_warn_rl("redis %s:%d: connect failed: %s", p->node.host, p->node.port, ac->errstr);
}

static void shard_peer_on_disconnect(const redisAsyncContext *ac, int status)
{
    shard_peer *p = ac->data;
    (void)status;
    if (p != NULL && p->ac == ac)
        p->ac = NULL;
}

/* The connection to node n (the worker's own node, or a peer connected on demand,
 * with AUTH). Returns NULL when none can be made. */
static redisAsyncContext *shard_redis_conn_to(shard_redis *r, const cluster_node *n)
{
    if (r->ac && n->port == r->o.port && strcmp(n->host, r->host) == 0)
        return r->ac;
    shard_peer *p = NULL;
    for (size_t i = 0; i < r->npeers; i++)
        if (r->peers[i]->node.port == n->port && strcmp(r->peers[i]->node.host, n->host) == 0)
            p = r->peers[i];
    if (p == NULL) {
        if (r->npeers == SHARD_PEERS_MAX)
            return NULL;
        p = calloc(1, sizeof *p);
        if (p == NULL)
            return NULL;
        p->r = r;
        p->node = *n;
        r->peers[r->npeers++] = p;
    }
    if (p->ac)
        return p->ac;
    char err[200];
    redisAsyncContext *ac = ra_connect(r->base, n->host, n->port, p, shard_peer_on_connect,
                                       shard_peer_on_disconnect, err, sizeof err);
    if (ac == NULL)
        return NULL;
    shard_redis_auth(r, ac);
    p->ac = ac;
    log_info("redis %s:%d: connecting for redirected commands", n->host, n->port);
    return ac;
}

/* ---- Redirections ---- */

int shard_redis_redirect(shard_redis *r, shard_rcmd *cmd, cluster_redir_kind kind,
                                const cluster_node *n)
{
    redisAsyncContext *ac = shard_redis_conn_to(r, n);
    if (ac == NULL)
        return -1;
    if (kind == CLUSTER_REDIR_ASK && redisAsyncCommand(ac, NULL, NULL, "ASKING") != REDIS_OK)
        return -1;
    if (redisAsyncFormattedCommand(ac, shard_redis_on_reply, cmd, cmd->fmt, cmd->fmtlen) != REDIS_OK)
        return -1;
    cmd->hops++;
    r->inflight++;
    return 0;
}

/* ---- Reattach after a failover ---- */

static void shard_probe_next(shard_redis *r);

/* Ends the probe in flight (if any); from inside its own callback hiredis frees it
 * when the callback returns. */
static void shard_probe_close(shard_redis *r)
{
    redisAsyncContext *ac = r->probe_ac;
    if (ac == NULL)
        return;
    r->probe_ac = NULL;
    ac->data = NULL;
    redisAsyncFree(ac);
}

/* The probe failed or said nothing useful: the next node, from the event loop. */
static void shard_probe_skip(shard_redis *r)
{
    struct timeval now = {0, 0};
    shard_probe_close(r);
    evtimer_add(r->probe_ev, &now);
}

static void shard_probe_on_connect(const redisAsyncContext *ac, int status)
{
    shard_redis *r = ac->data;
    if (r == NULL || r->probe_ac != ac || status == REDIS_OK)
        return;
    r->probe_ac = NULL;         /* hiredis frees it */
    shard_probe_skip(r);
}

static void shard_probe_on_disconnect(const redisAsyncContext *ac, int status)
{
    shard_redis *r = ac->data;
    (void)status;
    if (r == NULL || r->probe_ac != ac)
        return;
    r->probe_ac = NULL;
    shard_probe_skip(r);
}

/* Attaches the worker to master m (another node than its own). */
static void shard_redis_switch(shard_redis *r, const cluster_node *m)
{
    char *h = strdup(m->host);
    if (h == NULL)
        return;
    log_warn("redis %s:%d unreachable; slot %d is now served by %s:%d: attaching to it",
             r->host, r->o.port, r->my_slot, m->host, m->port);
    free(r->host);
    r->host = h;
    r->o.host = h;
    r->o.port = m->port;
    r->node[0] = '\0';
    r->announced = 0;           /* redis-announce named the old node */
    r->attempt = 0;
    ra_backoff_reset(&r->backoff);
    r->st.reattaches++;
}

/* CLUSTER SLOTS from the probed node: one node's view decides. */
static void shard_probe_on_slots(redisAsyncContext *ac, void *reply, void *priv)
{
    shard_redis *r = priv;
    redisReply *rep = reply;
    char err[256];
    if (r == NULL || ac->data != r || r->probe_ac != ac)
        return;
    int n = -1;
    if (rep && cluster_map_from_slots(r->probe_map, rep, ac->c.tcp.host ? ac->c.tcp.host : "",
                                      err, sizeof err) >= 0)
        n = cluster_map_node(r->probe_map, (unsigned)r->my_slot);
    if (n < 0) {
        shard_probe_skip(r);
        return;
    }
    const cluster_node *m = &r->probe_map->nodes[n];
    if (m->port != r->o.port || strcmp(m->host, r->host) != 0)
        shard_redis_switch(r, m);
    shard_probe_close(r);
    evtimer_del(r->probe_ev);
    shard_redis_connect(r);     /* the new master, or the same node again */
}

/* Asks the next known node, or, when none is left, connects as usual. */
static void shard_probe_next(shard_redis *r)
{
    while (r->probe_next < r->nknown && r->probe_asked < SHARD_REATTACH_PROBES) {
        const cluster_node *k = &r->known[r->probe_next++];
        if (k->port == r->o.port && strcmp(k->host, r->host) == 0)
            continue;
        r->probe_asked++;
        char err[200];
        redisAsyncContext *ac = ra_connect(r->base, k->host, k->port, r, shard_probe_on_connect,
                                           shard_probe_on_disconnect, err, sizeof err);
        if (ac == NULL)
            continue;
        r->probe_ac = ac;
        shard_redis_auth(r, ac);
        if (redisAsyncCommand(ac, shard_probe_on_slots, r, "CLUSTER SLOTS") != REDIS_OK) {
            shard_probe_close(r);
            continue;
        }
        struct timeval tv = ra_tv_ms(SHARD_REATTACH_MS);
        evtimer_add(r->probe_ev, &tv);
        return;
    }
    shard_redis_connect(r);
}

/* The probe deadline, or "next probe now". */
static void shard_probe_on_timer(evutil_socket_t fd, short what, void *arg)
{
    shard_redis *r = arg;
    (void)fd;
    (void)what;
    shard_probe_close(r);       /* a probe still out took too long */
    shard_probe_next(r);
}

void shard_redis_reattach_start(shard_redis *r)
{
    if (r->probe_map == NULL)
        r->probe_map = malloc(sizeof *r->probe_map);
    if (r->probe_ev == NULL)
        r->probe_ev = evtimer_new(r->base, shard_probe_on_timer, r);
    if (r->probe_map == NULL || r->probe_ev == NULL) {
        shard_redis_connect(r);
        return;
    }
    r->probe_next = 0;
    r->probe_asked = 0;
    shard_probe_next(r);
}

void shard_redis_cluster_free(shard_redis *r)
{
    /* each peer leaves the list before its pending commands answer "connection
     * lost": those callbacks may write SHARD.INFO, which walks the list */
    while (r->npeers > 0) {
        shard_peer *p = r->peers[--r->npeers];
        if (p->ac) {
            redisAsyncContext *ac = p->ac;
            p->ac = NULL;
            ac->data = NULL;
            redisAsyncFree(ac);
        }
        free(p);
    }
    shard_probe_close(r);
    if (r->probe_ev)
        event_free(r->probe_ev);
    r->probe_ev = NULL;
    free(r->probe_map);
    r->probe_map = NULL;
}

/* ---- SHARD.INFO ---- */

void shard_redis_cluster_info(const shard_redis *r, resp_buf *b)
{
    size_t open = 0;
    for (size_t i = 0; i < r->npeers; i++)
        open += r->peers[i]->ac != NULL;
    resp_buf_printf(b, "# Cluster\r\ncluster:%s\r\ncluster_node:%s\r\ncluster_role:%s\r\n"
                    "cluster_moved:%llu\r\ncluster_ask:%llu\r\ncluster_redirect_errors:%llu\r\n"
                    "cluster_redirects_background:%llu\r\n"
                    "cluster_reattaches:%llu\r\ncluster_tryagain:%llu\r\ncluster_peers:%zu\r\n"
                    "cluster_known_nodes:%zu\r\n",
                    r->o.cluster ? "yes" : "no", r->node,
                    r->role == 1 ? "master" : r->role == 0 ? "replica" : "unknown",
                    r->st.moved, r->st.ask, r->st.redirect_errors, r->st.redirects_background,
                    r->st.reattaches, r->st.tryagains, open,
                    r->nknown);
}
