/* redis_int.h: the shard worker's Redis connection, internals shared by redis.c
 * (connection life cycle, commands), meta.c (simhash:meta: the check, the commands
 * creating it) and redis_cluster.c (connections to other cluster nodes, -MOVED/-ASK,
 * reattaching after a failover). Not a public header. */
#ifndef SIMHASH_SHARD_REDIS_INT_H
#define SIMHASH_SHARD_REDIS_INT_H

#include <event2/util.h>
#include <hiredis/async.h>

#include "cluster.h"
#include "rasync.h"
#include "layout.h"
#include "redis.h"

#define SHARD_BACKOFF_MIN_MS 100
#define SHARD_BACKOFF_MAX_MS 1000     /* a restarted Redis is back within about a second */
#define SHARD_REDIRECTS_MAX 5       /* -MOVED/-ASK hops per command */
#define SHARD_TRYAGAIN_WAIT_MS 200  /* longest wait before a retry after -TRYAGAIN (10 ms
                                       doubling to this) */
#define SHARD_PEERS_MAX 64          /* connections to other cluster nodes */
#define SHARD_REATTACH_PROBES 16    /* nodes asked for CLUSTER SLOTS after a failure */
#define SHARD_REATTACH_MS 200       /* deadline of one probe */

/* meta.c: the command creating field i (0..LAYOUT_META_FIELDS-1) of a new meta hash
 * with o's settings (layout_meta_field), into argv (val holds its number); returns
 * its argument count. */
int shard_meta_field(const shard_redis_opts *o, int i, const char *argv[LAYOUT_META_ARGV],
                     char val[16]);


/* A connection to another cluster node, for redirected commands. */
typedef struct shard_peer {
    shard_redis *r;
    cluster_node node;
    redisAsyncContext *ac;          /* NULL while not connected */
} shard_peer;

struct shard_redis {
    int send_background;        /* shard_redis_command_background is sending */
    struct event_base *base;
    shard_redis_opts o;
    char *host, *password, *user;
    redisAsyncContext *ac;          /* NULL while down */
    shard_redis_state state;
    unsigned attempt;               /* failed attempts since the last success */
    int ever_ready;
    struct event *retry_ev;         /* backoff timer */
    ra_backoff backoff;
    struct event *setup_ev;         /* deadline of connect + meta check */
    unsigned inflight;
    uint64_t last_activity_ms;      /* last reply on the connection, or send on an idle one */
    unsigned long long replies;     /* replies read on the connection (ac) */
    /* stall probe (shard_redis_stall_check): a PING sent when the connection looked
       silent; stall_ev is its deadline, replies_at_probe the count it was sent at */
    struct event *stall_ev;
    unsigned long long replies_at_probe;
    uint64_t probe_sent_ms;
    shard_redis_stats st;
    rs_hist rtt;                    /* round trip of one answered command in
                                       SHARD_RTT_SAMPLE, redirections included (metrics) */
    unsigned rtt_tick;              /* commands sent, for that sample */
    struct shard_rcmd *cmd_free;    /* freed commands kept for the next ones (a query or
                                       a batch sends tens at once) */
    unsigned cmd_nfree;
    struct shard_rcmd *waiting;     /* commands waiting to retry after -TRYAGAIN */
    /* cluster mode */
    unsigned gen;                   /* connection attempts; stale setup replies are ignored */
    char node[CLUSTER_ADDR_MAX + 8];/* "host:port" as the cluster names the node */
    int announced;                  /* node comes from redis-announce */
    int role;                       /* 1 master, 0 replica, -1 unknown */
    int my_slot;                    /* a slot the node served as master, or -1 */
    size_t nknown;
    cluster_node known[CLUSTER_NODES_MAX];
    shard_peer *peers[SHARD_PEERS_MAX];
    size_t npeers;
    /* reattach (redis_cluster.c): one CLUSTER SLOTS probe at a time, asynchronous */
    redisAsyncContext *probe_ac;    /* the probe in flight, or NULL */
    struct event *probe_ev;         /* its deadline; also "next probe now" */
    size_t probe_next;              /* index in known of the next node to ask */
    unsigned probe_asked;
    cluster_map *probe_map;
};

/* One command in flight: hiredis privdata. In cluster mode, and for an EVALSHA, it
 * keeps the formatted command so that a redirection (or NOSCRIPT) can send it again. */
typedef struct shard_rcmd {
    shard_redis *r;
    shard_redis_cb fn;
    void *priv;
    char *fmt;
    size_t fmtlen;
    unsigned hops;
    unsigned tryagain;      /* -TRYAGAIN retries so far (they stop timeout_ms after sent_us) */
    int evalsha;            /* an EVALSHA (fmt kept): sent again as EVAL after NOSCRIPT */
    struct event *wait_ev;  /* while waiting to retry after -TRYAGAIN */
    struct shard_rcmd *wnext, *wprev; /* the list of those waiting (shard_redis.waiting) */
    int background;         /* not routed by the coordinator (HMGET of the counters for
                               SHARD.INFO, the meta check): redirections counted apart */
    uint64_t sent_us;       /* when it was sent (first hop), for the round-trip figures
                               and -TRYAGAIN's deadline; 0 when not read (see
                               SHARD_RTT_SAMPLE) */
    struct shard_rcmd *next_free;   /* in shard_redis.cmd_free */
} shard_rcmd;

/* One command in this many has its round trip timed (the clock read at send and at
 * reply was ~6% of a worker's CPU under a query load); in a cluster every command is,
 * for -TRYAGAIN's deadline. The freed commands kept for reuse, at most. */
#define SHARD_RTT_SAMPLE 8u
#define SHARD_CMD_FREE_MAX 1024u

/* ---- redis_cmd.c ---- */

/* A zeroed command, from r's kept ones when it has some (NULL: out of memory), and
 * the way back: kept for the next command, or freed past SHARD_CMD_FREE_MAX (its
 * formatted command freed either way). shard_rcmd_free_kept frees the kept ones. */
shard_rcmd *shard_rcmd_new(shard_redis *r);
void shard_rcmd_free(shard_redis *r, shard_rcmd *cmd);
void shard_rcmd_free_kept(shard_redis *r);

/* Setup command of connection attempt gen (cluster mode): hiredis privdata. */
typedef struct shard_setup {
    shard_redis *r;
    unsigned gen;
} shard_setup;

/* ---- redis.c ---- */

/* Sends one command on ac (the node's connection), keeping it formatted in cluster
 * mode. Returns 0 (fn will be called exactly once), or -1. */
int shard_redis_send(shard_redis *r, redisAsyncContext *ac, shard_redis_cb fn, void *priv,
                     int argc, const char **argv, const size_t *argvlen);
/* hiredis callback of every command (redirections are followed in redis_cluster.c). */
void shard_redis_on_reply(redisAsyncContext *ac, void *reply, void *privdata);
/* Starts one connection attempt to r->host:r->o.port. */
void shard_redis_connect(shard_redis *r);
/* Drops the current context (if any) from outside hiredis callbacks: every pending
 * command gets "connection lost", and the next attempt is scheduled. */
void shard_redis_drop(shard_redis *r);

/* ---- redis_stall.c ---- */

/* A reply was read on the connection: Redis is answering (stall detection). */
void shard_redis_activity(shard_redis *r);
/* The stall probe's deadline (r->stall_ev): drops the connection when Redis answered
 * nothing at all, neither the PING nor any command sent before it, for timeout_ms. */
void shard_redis_on_stall_probe(evutil_socket_t fd, short what, void *arg);
/* Schedules cmd to be sent again after -TRYAGAIN. Returns 0, or -1 (timeout_ms has
 * passed since it was first sent, so the request's deadline has too; or out of
 * memory: the caller passes the error on). */
int shard_redis_tryagain(shard_redis *r, shard_rcmd *cmd);
/* Ends every command waiting to retry after -TRYAGAIN with err (shutting down). */
void shard_redis_waiting_fail(shard_redis *r, const char *err);

/* ---- redis_cluster.c ---- */

/* Sends cmd (already formatted) again to node n after a redirection; ASKING first
 * for kind ASK. Returns 0, or -1 when it could not be sent. */
int shard_redis_redirect(shard_redis *r, shard_rcmd *cmd, cluster_redir_kind kind,
                         const cluster_node *n);
/* Cluster mode, node unreachable twice: asks the other known nodes, one at a time
 * with a deadline each, who serves my_slot now; attaches to that master if it is
 * another node; then makes the next connection attempt. Never blocks. */
void shard_redis_reattach_start(shard_redis *r);
/* Closes the peer connections and a probe in flight (from shard_redis_free). */
void shard_redis_cluster_free(shard_redis *r);

#endif
