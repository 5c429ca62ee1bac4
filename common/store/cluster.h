/* cluster.h: the small part of Redis Cluster that simhash needs itself (hiredis 0.14
 * has no cluster support): key slots with hash tags, the slot map from CLUSTER SLOTS,
 * and the parsing of -MOVED / -ASK redirections. */
#ifndef SIMHASH_CLUSTER_H
#define SIMHASH_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#define CLUSTER_SLOTS 16384
#define CLUSTER_ADDR_MAX 64          /* "host:port" incl. NUL */
#define CLUSTER_MAX_NODES 1024

struct redisReply;

/* Redis's CRC16 (XMODEM) of buf. */
uint16_t cluster_crc16(const char *buf, size_t len);

/* Slot of a key: CRC16 of the hash tag ({...}, first non-empty one) or of the key. */
unsigned cluster_keyslot(const char *key, size_t len);

typedef struct cluster_node {
    char host[CLUSTER_ADDR_MAX];
    int port;
} cluster_node;

/* Which master serves each slot; node index -1 when no master covers it. */
typedef struct cluster_map {
    size_t nnodes;
    cluster_node nodes[CLUSTER_MAX_NODES];
    int16_t slot_node[CLUSTER_SLOTS];
} cluster_map;

/* Fill map from a CLUSTER SLOTS reply. Returns the number of slots covered, or -1
 * with err set when the reply is not of the documented shape. Nodes that announce
 * an empty host ("" or "?") get default_host (the address we reached them by). */
int cluster_map_from_slots(cluster_map *map, const struct redisReply *r,
                           const char *default_host, char *err, size_t errlen);

/* Node index serving slot, or -1. */
int cluster_map_node(const cluster_map *map, unsigned slot);

typedef enum { CLUSTER_REDIR_NONE = 0, CLUSTER_REDIR_MOVED, CLUSTER_REDIR_ASK } cluster_redir_kind;

/* Parse an error reply text such as "MOVED 3999 127.0.0.1:6381" or
 * "ASK 3999 127.0.0.1:6381" (with or without the leading '-'). Returns the kind,
 * filling slot and node; CLUSTER_REDIR_NONE for any other text. */
cluster_redir_kind cluster_parse_redirect(const char *text, size_t len, unsigned *slot,
                                          cluster_node *node);

/* Parse "host:port" (port 1..65535, host non-empty and shorter than
 * CLUSTER_ADDR_MAX). Returns 0, or -1. */
int cluster_parse_addr(const char *s, size_t len, cluster_node *node);

/* What a node says about the cluster in its CLUSTER NODES reply. */
#define CLUSTER_NODES_MAX 64
typedef struct cluster_nodes_info {
    cluster_node myself;        /* port 0 when there was no "myself" line */
    int is_master;              /* 1 master, 0 replica (or unknown) */
    int my_slot;                /* a slot myself serves as master, or -1 */
    size_t nnodes;              /* every node listed (myself included), at most CLUSTER_NODES_MAX */
    cluster_node nodes[CLUSTER_NODES_MAX];
} cluster_nodes_info;

/* Parse the text of a CLUSTER NODES reply. Nodes with an empty address get
 * default_host. Returns 0, or -1 with err set when no line has the documented shape
 * or there is no "myself" line. */
int cluster_parse_nodes(const char *text, size_t len, const char *default_host,
                        cluster_nodes_info *out, char *err, size_t errlen);

/* 1 when the "myself" line of a CLUSTER NODES reply is a master serving slot with
 * the slot neither migrating out nor importing ("[slot->-id]", "[slot-<-id]"), so
 * every key of the slot is on that node; else 0. */
int cluster_nodes_serves(const char *text, size_t len, unsigned slot);

#endif
