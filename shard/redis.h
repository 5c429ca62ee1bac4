/* redis.h: the shard worker's connection to its Redis node: one hiredis async
 * connection on libevent, AUTH + SELECT + the simhash:meta check on every
 * (re)connect, reconnect with exponential backoff and jitter, a bound on in-flight
 * commands, and stall detection (a Redis that stops answering is dropped). */
#ifndef SIMHASH_SHARD_REDIS_H
#define SIMHASH_SHARD_REDIS_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "resp.h"
#include "rserver.h"

struct event_base;

typedef struct shard_redis_opts {
    const char *host;
    int port;
    const char *password;     /* NULL or "" for none */
    const char *user;         /* ACL user sent with AUTH; NULL or "" for the default */
    unsigned db;
    unsigned blocks, distance;
    unsigned layout;          /* LAYOUT_VERSION, or 0 before shard_redis_resolve */
    char fingerprint[16];     /* fingerprint algorithm, canonical ("v5", "v1:3"); "": the
                                 corpus's, resolved by shard_redis_check_meta_sync (a new
                                 corpus gets FP_VERSION_DEFAULT) */
    unsigned tombstone_s;     /* lifetime of a split bucket's tombstone; 0: the corpus's,
                                 resolved by shard_redis_check_meta_sync (a new corpus
                                 gets LAYOUT_TOMBSTONE_S_DEFAULT) */
    unsigned max_inflight;    /* Redis commands outstanding at once */
    unsigned split_limit;     /* out: the split limit from the node's listpack
                                 settings (shard_redis_check_meta_sync; 0: not read) */
    unsigned timeout_ms;      /* connect + meta check deadline, stall detection */
    int cluster;              /* the node is a Redis Cluster node: follow -MOVED/-ASK,
                                 learn the node's name, reattach after a failover */
    const char *announce;     /* cluster: "host:port" of the node as the cluster names
                                 it; NULL: learned from CLUSTER NODES */
    /* The layout whose scripts the commands send by name (EVALSHA): one that Redis
     * answers NOSCRIPT (restarted, SCRIPT FLUSH, another cluster node) is sent again
     * once, at once, as EVAL with the text (layout_script_text), which caches it;
     * the caller sees only that reply. NULL: no script goes by name. */
    const struct layout_ctx *scripts;
    /* Called when the first successful connection finds simhash:meta disagreeing
     * with these settings (the worker should exit). May be NULL. */
    void (*on_fatal)(void *arg, const char *msg);
    /* Called at every connection with the split limit the node's listpack settings
     * allow (shard_split_limit_of), when the node says them. May be NULL. */
    void (*on_split_limit)(void *arg, unsigned limit);
    void *cb_arg;             /* the argument of on_fatal and on_split_limit */
} shard_redis_opts;

/* The split limit of the buckets (docs/elastic-buckets.md), from a
 * node's zset- and hash-max-listpack-entries: min(the two, 256), at least
 * LAYOUT_SPLIT_LIMIT_MIN, so its buckets stay listpacks. */
unsigned shard_split_limit_of(unsigned long zset_entries, unsigned long hash_entries);

typedef enum shard_redis_state {
    SHARD_REDIS_DOWN = 0,     /* waiting for the next reconnect attempt */
    SHARD_REDIS_CONNECTING,   /* connect, AUTH, SELECT, meta check under way */
    SHARD_REDIS_READY,
    SHARD_REDIS_MISMATCH,     /* connected, but simhash:meta disagrees with us */
} shard_redis_state;

typedef struct shard_redis shard_redis;

/* Called once per command: with the reply (which may be a Redis error reply), or
 * with reply NULL and err saying why there is none ("connection lost"). */
typedef void (*shard_redis_cb)(void *priv, redisReply *reply, const char *err);

/* Startup check, blocking: connect, AUTH, SELECT, create simhash:meta if absent,
 * compare it with o. A fingerprint algorithm or tombstone lifetime unset in o is
 * replaced by the corpus's (or, for a new corpus, by the defaults of
 * shard_redis_resolve). Returns SHARD_META_OK; SHARD_META_REFUSED with a message for
 * the operator in err when the settings disagree, the Redis holds a corpus of another
 * storage format, or Redis refuses us (AUTH, SELECT); SHARD_META_UNREACHABLE with
 * err set when Redis is unreachable or still loading (worth retrying; o is then
 * resolved with the defaults of a new corpus). */
enum shard_meta_status {
    SHARD_META_OK = 0,
    SHARD_META_REFUSED = -1,        /* settings disagree, or Redis refuses us */
    SHARD_META_UNREACHABLE = -2     /* unreachable or loading: worth retrying */
};
int shard_redis_check_meta_sync(shard_redis_opts *o, char *err, size_t errlen);

/* Sets o's layout (LAYOUT_VERSION) and replaces an unset fingerprint algorithm or
 * tombstone lifetime by the defaults of a new corpus. */
void shard_redis_resolve(shard_redis_opts *o);

/* Writes the corpus's meta hash key (layout_meta_key) into a static buffer and
 * returns it. */
const char *shard_redis_meta_key(void);

/* Compares an HGETALL simhash:meta reply with o. Returns 0 when they agree, 1 when
 * the hash is empty, -1 with err set ("corpus in redis H:P was built with ...") when
 * they differ or the reply is malformed. */
int shard_redis_meta_compare(const redisReply *r, const shard_redis_opts *o,
                             char *err, size_t errlen);

/* Creates the connection object and starts connecting. Strings of o are copied.
 * Returns NULL on out of memory. */
shard_redis *shard_redis_new(struct event_base *base, const shard_redis_opts *o);
/* Drops the connection (pending callbacks run with err "shutting down") and frees. */
void shard_redis_free(shard_redis *r);

shard_redis_state shard_redis_get_state(const shard_redis *r);
const char *shard_redis_state_name(shard_redis_state s);

/* 1 when n more commands fit under max_inflight. */
int shard_redis_room(const shard_redis *r, unsigned n);

/* Sends one command. Returns 0 (fn will be called exactly once, later), or -1 when
 * not connected or the connection refused it (fn is not called). */
int shard_redis_command(shard_redis *r, shard_redis_cb fn, void *priv,
                        int argc, const char **argv, const size_t *argvlen);

/* The same for a command no coordinator routed (the worker registry): its cluster
 * redirections count in redirects_background, not in moved / ask. */
int shard_redis_command_background(shard_redis *r, shard_redis_cb fn, void *priv,
                                   int argc, const char **argv, const size_t *argvlen);

/* A request deadline passed: when commands are outstanding and Redis has not
 * answered anything for (all but 5% of) timeout_ms, send a PING; when Redis then
 * answers nothing (neither it nor an earlier command, and no reply bytes wait unread
 * on the socket) for another timeout_ms, drop the connection (its pending commands
 * get "connection lost") and reconnect. A slow Redis on a machine short of CPU
 * answers within that second span; a stopped one does not. */
void shard_redis_stall_check(shard_redis *r);

typedef struct shard_redis_stats {
    unsigned long long commands;      /* sent */
    unsigned long long reconnects;    /* successful connections after the first */
    unsigned long long connect_failures;
    unsigned inflight;
    unsigned long long moved, ask;    /* cluster: redirections followed */
    unsigned long long redirect_errors; /* redirections that could not be followed */
    unsigned long long redirects_background; /* of SHARD.INFO counter reads, meta check */
    unsigned long long reattaches;    /* cluster: moved to another node after a failover */
    unsigned long long tryagains;     /* cluster: commands sent again after -TRYAGAIN */
    unsigned long long noscripts;     /* EVALSHA answered NOSCRIPT, sent again whole */
    char last_error[256];
} shard_redis_stats;

/* Round trips of the commands answered so far (microseconds). */
const rs_hist *shard_redis_rtt(const shard_redis *r);

/* 1 in cluster mode (option cluster), else 0. */
int shard_redis_cluster_mode(const shard_redis *r);

/* "host:port" of the Redis node as the cluster names it (cluster mode), or the
 * configured address; "" while not known yet. */
const char *shard_redis_node(const shard_redis *r);

/* Appends the "# Cluster" lines of SHARD.INFO (cluster, cluster_node, cluster_role,
 * redirection and reattach counters). */
void shard_redis_cluster_info(const shard_redis *r, resp_buf *b);

void shard_redis_get_stats(const shard_redis *r, shard_redis_stats *out);

#endif
