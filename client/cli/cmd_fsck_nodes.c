/* cmd_fsck_nodes.c: the Redis nodes of `simhash fsck` and its pipelined batches
 * (cmd_fsck_nodes.h). */
#include "cmd_fsck_nodes.h"

#include <stdio.h>
#include <stdlib.h>

static redisContext *fk_connect(const fk_nodes *ns, const char *host, int port)
{
    struct timeval tv = {10, 0};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (c == NULL || c->err) {
        fprintf(stderr, "%s: cannot connect to redis %s:%d: %s\n", ns->prog, host, port,
                c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    if (ns->have_password) {
        redisReply *r = ns->user ? redisCommand(c, "AUTH %s %s", ns->user, ns->password)
                                 : redisCommand(c, "AUTH %s", ns->password);
        int bad = r == NULL || r->type == REDIS_REPLY_ERROR;
        if (bad)
            fprintf(stderr, "%s: AUTH on redis %s:%d failed: %s\n", ns->prog, host, port,
                    r ? r->str : c->errstr);
        if (r)
            freeReplyObject(r);
        if (bad) {
            redisFree(c);
            return NULL;
        }
    }
    return c;
}

int fk_nodes_setup(fk_nodes *ns, const char *host, int port)
{
    redisContext *c = fk_connect(ns, host, port);
    if (c == NULL)
        return -1;
    if (!ns->cluster) {
        snprintf(ns->node[0].host, sizeof(ns->node[0].host), "%s", host);
        ns->node[0].port = port;
        ns->node[0].c = c;
        ns->node[0].master = 1;
        ns->n = 1;
        return 0;
    }
    char err[256];
    redisReply *r = redisCommand(c, "CLUSTER SLOTS");
    ns->map = calloc(1, sizeof(*ns->map));
    if (r == NULL || ns->map == NULL ||
        cluster_map_from_slots(ns->map, r, host, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s: CLUSTER SLOTS on %s:%d: %s\n", ns->prog, host, port,
                r == NULL ? c->errstr : r->type == REDIS_REPLY_ERROR ? r->str : err);
        if (r)
            freeReplyObject(r);
        redisFree(c);
        return -1;
    }
    freeReplyObject(r);
    redisFree(c);
    for (size_t i = 0; i < ns->map->nnodes && i < FK_MAX_NODES; i++) {
        snprintf(ns->node[i].host, sizeof(ns->node[i].host), "%s", ns->map->nodes[i].host);
        ns->node[i].port = ns->map->nodes[i].port;
        ns->node[i].master = 1;
    }
    ns->n = ns->map->nnodes;
    return 0;
}

void fk_nodes_free(fk_nodes *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        if (ns->node[i].c)
            redisFree(ns->node[i].c);
    free(ns->map);
}

redisContext *fk_node_conn(fk_nodes *ns, size_t i)
{
    if (ns->node[i].c == NULL)
        ns->node[i].c = fk_connect(ns, ns->node[i].host, ns->node[i].port);
    return ns->node[i].c;
}

size_t fk_node_of(const fk_nodes *ns, const char *key, size_t len)
{
    if (!ns->cluster)
        return 0;
    int n = cluster_map_node(ns->map, cluster_keyslot(key, len));
    return n < 0 ? 0 : (size_t)n;
}

unsigned long long fk_redis_ms(fk_nodes *ns, size_t i)
{
    redisContext *c = fk_node_conn(ns, i);
    redisReply *r = c ? redisCommand(c, "TIME") : NULL;
    unsigned long long ms = 0;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        ms = strtoull(r->element[0]->str, NULL, 10) * 1000ull +
             strtoull(r->element[1]->str, NULL, 10) / 1000ull;
    if (r)
        freeReplyObject(r);
    return ms;
}

redisReply *fk_send(void *arg, const char *key, size_t klen, int argc, const char **argv,
                    const size_t *lens)
{
    fk_nodes *ns = arg;
    redisContext *c = fk_node_conn(ns, fk_node_of(ns, key, klen));
    return c ? redisCommandArgv(c, argc, argv, lens) : NULL;
}

int fk_batch_init(fk_batch *b, size_t ntables)
{
    b->n = 0;
    b->cap = FK_BATCH * (ntables + 2);
    b->node = malloc(b->cap * sizeof(*b->node));
    b->reply = malloc(b->cap * sizeof(*b->reply));
    return b->node && b->reply ? 0 : -1;
}

void fk_batch_free(fk_batch *b)
{
    free(b->node);
    free(b->reply);
}

int fk_add(fk_nodes *ns, fk_batch *b, const char *key, size_t klen, int argc,
           const char **argv, const size_t *lens)
{
    size_t ni = fk_node_of(ns, key, klen);
    redisContext *c = fk_node_conn(ns, ni);
    if (c == NULL || b->n >= b->cap)
        return -1;
    if (redisAppendCommandArgv(c, argc, argv, lens) != REDIS_OK)
        return -1;
    b->node[b->n] = ni;
    b->reply[b->n] = NULL;
    b->n++;
    return 0;
}

int fk_add_zrange(fk_nodes *ns, fk_batch *b, const redisReply *k)
{
    const char *argv[4] = {"ZRANGE", k->str, "0", "-1"};
    size_t lens[4] = {6, k->len, 1, 2};
    return fk_add(ns, b, k->str, k->len, 4, argv, lens);
}

int fk_run(fk_nodes *ns, fk_batch *b)
{
    for (size_t ni = 0; ni < ns->n; ni++)
        for (size_t i = 0; i < b->n; i++) {
            if (b->node[i] != ni)
                continue;
            void *r = NULL;
            if (redisGetReply(ns->node[ni].c, &r) != REDIS_OK || r == NULL) {
                fprintf(stderr, "%s: redis %s:%d: %s\n", ns->prog, ns->node[ni].host,
                        ns->node[ni].port, ns->node[ni].c->errstr);
                return -1;
            }
            b->reply[i] = r;
        }
    return 0;
}

void fk_batch_clear(fk_batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->reply[i])
            freeReplyObject(b->reply[i]);
    b->n = 0;
}
