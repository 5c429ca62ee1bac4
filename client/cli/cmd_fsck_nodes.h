/* cmd_fsck_nodes.h: the Redis nodes `simhash fsck` talks to (one Redis, or every
 * node of a Redis Cluster from its CLUSTER SLOTS) and the pipelined batches it sends
 * them: each command queued on the node serving its key, the replies read back in
 * the order of the batch. Blocking hiredis; connections made on first use, with AUTH
 * when a password is set. cmd_fsck.c runs the phases over these. */
#ifndef SIMHASH_CMD_FSCK_NODES_H
#define SIMHASH_CMD_FSCK_NODES_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "cluster.h"

#define FK_BATCH 256            /* keys per pipelined batch */
#define FK_MAX_NODES CLUSTER_MAX_NODES

typedef struct fk_node {
    char host[CLUSTER_ADDR_MAX];
    int port;
    redisContext *c;
    int master;                 /* scanned (single Redis: the one node) */
} fk_node;

typedef struct fk_nodes {
    const char *prog;           /* for messages */
    int cluster;                /* a Redis Cluster: route by slot */
    const char *user;           /* AUTH user (NULL: the default user) */
    char password[512];
    int have_password;
    fk_node node[FK_MAX_NODES];
    size_t n;
    cluster_map *map;           /* cluster: slot -> index into node */
} fk_nodes;

/* Connects to host:port; with ns->cluster, reads CLUSTER SLOTS there and takes every
 * node it names (connected on first use). Returns 0, or -1 (printed). */
int fk_nodes_setup(fk_nodes *ns, const char *host, int port);
void fk_nodes_free(fk_nodes *ns);

/* Node i's connection, made on first use. NULL (message printed) when it fails. */
redisContext *fk_node_conn(fk_nodes *ns, size_t i);
/* Index of the node serving key. */
size_t fk_node_of(const fk_nodes *ns, const char *key, size_t len);
/* Milliseconds of Redis's clock on node i (TIME), or 0. */
unsigned long long fk_redis_ms(fk_nodes *ns, size_t i);
/* One blocking command on the node of key; arg is the fk_nodes (the
 * fsck_split_send_fn of cmd_fsck_split.h). NULL when the node cannot be reached. */
redisReply *fk_send(void *arg, const char *key, size_t klen, int argc, const char **argv,
                    const size_t *lens);

typedef struct fk_batch {
    size_t n, cap;
    size_t *node;
    redisReply **reply;
} fk_batch;

/* A batch for FK_BATCH keys of ntables + 2 commands each. Returns 0 or -1. */
int fk_batch_init(fk_batch *b, size_t ntables);
void fk_batch_free(fk_batch *b);
/* Queues a command on the node of key. Returns 0, or -1 (no connection, batch full). */
int fk_add(fk_nodes *ns, fk_batch *b, const char *key, size_t klen, int argc,
           const char **argv, const size_t *lens);
/* Queues ZRANGE key 0 -1 (the whole sorted set: a bucket, a directory) of key k. */
int fk_add_zrange(fk_nodes *ns, fk_batch *b, const redisReply *k);
/* Reads every reply of the batch (in order per node) into b->reply. Returns 0, or -1
 * (printed). */
int fk_run(fk_nodes *ns, fk_batch *b);
/* Frees the replies; the batch is empty again. */
void fk_batch_clear(fk_batch *b);

#endif
