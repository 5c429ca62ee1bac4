/* shard.h: state shared by the parts of simhash-shard: its configuration, the
 * permutation tables, the Redis connection, counters, and the command table. */
#ifndef SIMHASH_SHARD_H
#define SIMHASH_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "layout_ops.h"
#include "perm.h"
#include "redis.h"
#include "rserver.h"

typedef struct shard_config {
    char *bind;
    unsigned port;
    char *redis_host;
    unsigned redis_port;
    char *redis_password;       /* first line of redis-password-file */
    char *redis_user;           /* redis-user: ACL user for AUTH (NULL: default user) */
    unsigned redis_db;
    char *shards;               /* "LO-HI" */
    unsigned blocks, distance;
    unsigned layout;            /* LAYOUT_VERSION once resolved at start (0: unset) */
    unsigned split_limit;       /* at most this split limit (0: the node's) */
    unsigned tombstone_s;       /* tombstone lifetime; 0: the corpus's (resolved) */
    char *corpus;               /* corpus name (key prefix); NULL: none */
    char *pidfile, *logfile;
    int loglevel;
    unsigned max_inflight_redis;
    unsigned timeout_ms;
    unsigned wait_replicas;     /* SHARD.WAIT: Redis WAIT for this many replicas (0: AOF) */
    unsigned wait_timeout_ms;   /* SHARD.WAIT: WAIT timeout */
    unsigned repair_interval_ms; /* repair pass period; 0: none */
    rs_limits limits;           /* client limits and budgets (rs_limit_options) */
    unsigned metrics_port;      /* Prometheus endpoint (0: none) */
    char *metrics_bind;
    int syslog;                 /* also log to syslog(3) */
    unsigned lo, hi;            /* parsed from shards by the validation */
    char *fingerprint_algorithm; /* as given */
    char fp_spec[16];           /* its canonical text (fp_params_format), in simhash:meta */
    char *announce_addr;        /* worker registry: HOST:PORT coordinators reach us at */
    unsigned announce_interval_ms, announce_ttl_ms; /* registry renewal; 0: none */
    unsigned drain_ms;          /* shutdown: serve this long after leaving the registry */
} shard_config;

/* Counters shown by SHARD.INFO; X(field, info name). */
#define SHARD_STATS(X) \
    X(requests,   "requests")          /* SHARD.* requests handled */ \
    X(errors,     "errors")            /* answered with an error of any kind */ \
    X(bad_args,   "errors_args")       /* -ERR */ \
    X(wrongshard, "errors_wrongshard") /* -WRONGSHARD */ \
    X(busy,       "errors_busy")       /* -BUSY: max-inflight-redis reached */ \
    X(unavail,    "errors_unavailable")/* -REDIS unavailable: not connected */ \
    X(lost,       "errors_lost")       /* -REDIS connection lost */ \
    X(timeouts,   "errors_timeout")    /* -REDIS timeout */ \
    X(redis_err,  "errors_redis")      /* -REDIS <error reply> */ \
    X(queries,    "queries")           /* SHARD.QUERY */ \
    X(candidates, "query_candidates")  /* members read by queries */ \
    X(matches,    "query_matches")     /* fingerprints returned */ \
    X(added,      "table_entries_added") \
    X(removed,    "table_entries_removed") \
    X(repairs,    "repairs")           /* stale write locks taken over and repaired */ \
    X(repair_errors, "repair_errors")  /* repair attempts that failed (retried) */ \
    X(reruns,     "requests_rerun")    /* run again: a bucket split under them */ \
    X(split_calls, "split_calls")      /* split calls after plain ZADDs (layout4_split.lua) */ \
    X(waits,      "waits")             /* SHARD.WAIT requests */ \
    X(wait_cmds,  "wait_commands")     /* Redis WAIT commands sent (group commits) */ \
    X(wait_fail,  "errors_wait")       /* SHARD.WAIT refused or not replicated */

typedef struct shard_stats {
#define SHARD_STAT_FIELD_(f, n) unsigned long long f;
    SHARD_STATS(SHARD_STAT_FIELD_)
#undef SHARD_STAT_FIELD_
} shard_stats;

typedef struct shard_ctx {
    shard_config cfg;
    perm_set ps;
    layout_ctx lay;             /* the corpus's layout (layout_ops.h), set at start */
    shard_redis *redis;
    rserver *srv;
    struct event_base *base;
    shard_stats st;
    /* SHARD.WAIT (wait.c): group commit of Redis WAIT; the AOF check cache */
    struct shard_waiter *wait_sent; /* requests the WAIT in flight answers */
    struct shard_waiter *wait_next; /* requests for the next WAIT */
    int wait_inflight;
    int aof_ok;                     /* 1: appendonly yes + appendfsync always (when checked) */
    char aof_seen[96];              /* what CONFIG GET said, for the error text */
    unsigned long long aof_epoch;   /* redis reconnect count when checked */
    uint64_t aof_checked_ms;        /* 0: never checked */
    int fatal;                  /* stopped because Redis holds another corpus */
    /* SHARD.INFO (info.c): the Redis node's INFO, read with every SHARD.INFO */
    long long redis_used_memory;    /* used_memory; -1 unknown */
    int redis_role;                 /* 1 master, 0 replica, -1 unknown */
    struct shard_repair *repair;    /* repair.c: the pass over stale write locks */
    rs_metrics *metrics;            /* GET /metrics, when metrics-port is set */
    struct shard_registry *registry; /* registry.c: this worker's registry entry */
} shard_ctx;

typedef struct shard_waiter shard_waiter;

/* SHARD.WAIT (wait.c): +OK once the writes sent before it are durable. */
void shard_cmd_wait(rs_req *req);

/* ---- repair.c: stale write locks completed or rolled back ---- */

/* Starts the pass (once a second) over the lock hashes of the table-0 shards served.
 * Returns 0, or -1 (out of memory). */
int shard_repair_start(shard_ctx *sc);
/* Stops it; call before the Redis connection is freed. */
void shard_repair_stop(shard_ctx *sc);

/* ---- registry.c: the worker registry (docs/protocol.md, "Worker registry") ---- */

/* Starts renewing this worker's entry (after the server listens). Returns 0, or -1
 * (out of memory). */
int shard_registry_start(shard_ctx *sc);
/* Shutdown: removes the entry; when drain_ms is set, calls on_drained(sc) after it
 * and returns 1 (keep serving until then), else returns 0 (stop now). */
int shard_registry_leave(shard_ctx *sc, void (*on_drained)(shard_ctx *sc));
/* Stops renewing; call before the Redis connection is freed. */
void shard_registry_stop(shard_ctx *sc);
/* The announce_* lines of SHARD.INFO. */
void shard_registry_info(const shard_ctx *sc, resp_buf *b);
/* SHARD.WORKERS: the addresses in the registry whose entry has not expired. */
void shard_cmd_workers(rs_req *req);

/* ---- scan.c: SHARD.SCAN from count limit ---- */

/* The fingerprints whose table-0 value is from or more, in at most count buckets of
 * from's shard and about limit values: [next from (0: the walk is over), fp ...]. */
void shard_cmd_scan(rs_req *req);

/* ---- args.c: argument checks of the SHARD.* commands ---- */

/* Answers req with an error at once and counts it. */
void shard_fail(rs_req *req, rs_errcode code, unsigned long long *counter,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Parses argument i as a fingerprint; answers -ERR and returns -1 when it is not. */
int shard_arg_fp(rs_req *req, size_t i, uint64_t *fp);
/* Parses argument i as a table number; answers -ERR and returns -1 when it is not. */
int shard_arg_table(rs_req *req, size_t i, unsigned *t);
/* Checks that permuted value p (of table t) is in a shard this worker serves;
 * answers -WRONGSHARD and returns -1 when not. */
int shard_check_owner(rs_req *req, unsigned t, uint64_t p);
/* Checks that Redis is usable and n more commands fit; answers -REDIS / -BUSY and
 * returns -1 when not. */
int shard_check_redis(rs_req *req, unsigned n);
/* Document key of fp, after the shard check; returns -1 (answered) when not ours. */
int shard_doc_key(rs_req *req, uint64_t fp, char key[LAYOUT_KEY_MAX]);
/* Answers req with -OOM and counts it. */
void shard_oom(rs_req *req);
/* Checks document ids in arguments [from, from+n): answers -ERR and returns -1 when
 * there are too many or one is empty. */
int shard_check_docids(rs_req *req, size_t from, size_t n);

/* ---- info.c: the SHARD.INFO text ---- */

/* Answers a SHARD.INFO request: name:value lines about this worker and its Redis
 * connection; fingerprints / documents of its shards when have_counts. */
void shard_info_reply(rs_req *req, int have_counts, long long fps, long long docs);
/* INFO's program sections (rs_options.info; ctx is the shard_ctx). */
void shard_info_sections(void *ctx, resp_buf *b);
/* The worker's own /metrics families (rs_metrics extra; ctx is the shard_ctx). */
void shard_metrics(void *ctx, resp_buf *b);
/* Reply of the INFO sent with every SHARD.INFO: keeps used_memory and the role of
 * the Redis node (-1: unknown when the reply is missing or malformed). */
void shard_on_redis_info(void *priv, redisReply *reply, const char *err);

/* ---- handlers.c: the commands a stale bucket runs again (dirs.c) ---- */
void shard_cmd_add(rs_req *req);
void shard_cmd_del(rs_req *req);
void shard_cmd_lock(rs_req *req);
void shard_cmd_docs(rs_req *req);

/* ---- query.c ---- */

/* SHARD.QUERY fp d t [t ...] [DOCS] */
void shard_cmd_query(rs_req *req);

/* The command table of the worker (handlers.c). */
/* batch.c: the batched writes (docs/protocol.md, "Batched writes"). */
void shard_cmd_mlock(rs_req *req);
void shard_cmd_munlock(rs_req *req);
void shard_cmd_madd(rs_req *req);
void shard_cmd_mdel(rs_req *req);

extern const rs_command shard_commands[];
extern const size_t shard_ncommands;

#endif
