/* coord.h: state shared by the parts of simhash-coordinator: configuration, shard
 * worker connections and routing, fan-out operations, counters, command table. */
#ifndef SIMHASH_COORD_H
#define SIMHASH_COORD_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "config.h"
#include "fingerprint.h"
#include "html.h"
#include "layout.h"
#include "matches.h"
#include "perm.h"
#include "rasync.h"
#include "rserver.h"

struct event_base;
struct event;

/* Document ids are 1..COORD_DOCID_MAX bytes without a NUL byte: what the client
 * library (SHC_DOCID_MAX), the CLI and the Python package carry. */
#define COORD_DOCID_MAX 4096

typedef struct coord_config {
    char *bind;
    unsigned port;
    cfg_list workers;               /* HOST:PORT, repeatable */
    unsigned blocks, distance;
    unsigned timeout_ms;
    char *password;                 /* clients must AUTH with it (password-file) */
    char *worker_password;          /* sent as AUTH to workers (worker-password-file) */
    char *worker_user;              /* AUTH worker_user worker_password, or NULL: the
                                       workers' default user (worker-user) */
    ra_tls_conf worker_tls;         /* worker-tls, worker-tls-*: TLS to the workers */
    char *pidfile, *logfile;
    int loglevel;
    rs_limits limits;               /* client limits and budgets (rs_limit_options) */
    unsigned metrics_port;          /* Prometheus endpoint (0: none) */
    char *metrics_bind;
    int syslog;                     /* also log to syslog(3) */
    unsigned max_inflight_worker;   /* per worker; past it requests fail with -BUSY */
    unsigned reconnect_max_ms;      /* backoff cap */
    unsigned health_interval_ms;
    unsigned discover_interval_ms;  /* worker registry reads (SHARD.WORKERS); 0: none */
    int durable;                    /* writes acknowledged only once durable (SHARD.WAIT) */
    int merge_adds;                 /* one-pair ADDs arriving together written together */
    cfg_list cluster_nodes;         /* cluster-node HOST:PORT seeds: Redis Cluster mode */
    char *cluster_password;         /* sent as AUTH to cluster nodes (cluster-password-file) */
    unsigned cluster_refresh_ms;    /* slot map refresh period */
    char *fingerprint_algorithm;    /* as given */
    fp_params fp;                   /* parsed from it by the validation */
    char fp_spec[16];               /* canonical text, compared with the workers' */
    unsigned layout;                /* 0 or LAYOUT_VERSION (checked at start) */
    char *corpus;                   /* corpus name the workers must serve; NULL: unnamed */
    unsigned fp_threads;            /* fingerprint-threads: pool for large texts (0: none) */
    unsigned fp_queue, fp_queue_client; /* jobs waiting in all / per client */
    size_t fp_offload_bytes;        /* texts of at least this many bytes go to the pool */
} coord_config;

typedef enum coord_health {
    W_CONNECTING,       /* TCP connect or SHARD.HELLO in progress */
    W_UP,
    W_DOWN,             /* lost; reconnect scheduled */
    W_MISMATCH,         /* answered SHARD.HELLO with other settings */
    W_GONE              /* left the worker registry and down: no connection, no routes */
} coord_health;

/* Workers a coordinator knows at once (configured and discovered); the slot of a
 * worker gone for COORD_GONE_REUSE_MS may be taken by a new one. */
#define COORD_WORKERS_MAX 256
#define COORD_GONE_REUSE_MS 60000

typedef struct coord coord;

typedef struct coord_worker {
    coord *co;
    unsigned idx;
    char *host;
    unsigned port;
    char addr[128];                 /* "host:port" for messages */
    redisAsyncContext *ac;          /* NULL while not connected */
    coord_health health;
    int have_range;
    unsigned lo, hi;
    unsigned inflight;              /* requests sent, callback not yet run */
    unsigned long long requests, errors, timeouts, connects;
    double latency_us;              /* EWMA of reply times */
    ra_backoff backoff;
    struct event *reconnect_ev;
    struct event *health_ev;
    int health_pending;
    long long health_sent_us;       /* when the pending SHARD.INFO or connection attempt began */
    long long fingerprints, documents;   /* from SHARD.INFO; -1 unknown */
    long long redis_used_memory;    /* from SHARD.INFO: its Redis node's used_memory; -1 */
    char redis_addr[80];            /* from SHARD.INFO: that node's host:port; "" unknown */
    int redis_role;                 /* from SHARD.INFO: 1 master, 0 replica, -1 unknown */
    char problem[256];              /* last error, for INFO and logs */
    /* cluster mode (route.c): the Redis node the worker is attached to, as HELLO and
     * SHARD.INFO name it; its redirection counters; its counts before de-duplication */
    int cluster;
    char node[80];
    unsigned long long moved, ask, reattaches;
    long long raw_fingerprints, raw_documents;
    long long repairs;              /* from SHARD.INFO: stale locks it repaired; -1 */
    /* from SHARD.INFO (the split buckets); -1 until a worker said */
    long long bucket_splits, buckets_cached, largest_bucket;
    /* membership (workers.c): configured (a seed: never dropped), in the last
     * registry read, left the registry (draining: routed to only when no other
     * worker can serve), since when gone */
    int seed, listed, ever_listed, left;
    uint64_t gone_ms;
} coord_worker;

/* Counters shown in SIMHASH.INFO # Stats; X(field, name). */
#define COORD_STATS(X) \
    X(queries,        "queries") \
    X(adds,           "adds") \
    X(dels,           "dels") \
    X(checks,         "checks") \
    X(fingerprints,   "fingerprints_computed") \
    X(matches,        "matches_returned") \
    X(err_timeout,    "errors_timeout") \
    X(err_sharddown,  "errors_sharddown") \
    X(err_busy,       "errors_busy") \
    X(err_worker,     "errors_worker_reply") \
    X(lock_waits,     "write_lock_waits")      /* a fingerprint's lock was busy: asked again */ \
    X(locks_lost,     "write_locks_lost")      /* lost before unlock: reconciled again */ \
    X(locks_abandoned, "write_locks_abandoned") /* made stale by a failed write */ \
    X(write_merges,   "write_merges")          /* batches of one-pair writes written together */ \
    X(adds_merged,    "adds_merged")           /* ADD requests answered by those batches */ \
    X(checks_merged,  "checks_merged")         /* CHECK / CHECKTEXT requests answered by them */

typedef struct coord_stats {
#define COORD_STAT_FIELD_(f, n) unsigned long long f;
    COORD_STATS(COORD_STAT_FIELD_)
#undef COORD_STAT_FIELD_
} coord_stats;

struct coord {
    coord_config cfg;
    perm_set ps;
    struct event_base *base;
    rserver *srv;
    ra_tls *worker_tls;             /* TLS context of the worker connections, or NULL */
    coord_worker *w;                /* COORD_WORKERS_MAX slots; never moved */
    size_t nw;                      /* slots in use (some may be W_GONE) */
    struct coord_discovery *disc;   /* workers.c: registry reads */
    int route[256];                 /* worker index per first byte of a permuted value */
    int routing_ok;                 /* every route goes to a worker that is up */
    char routing_why[256];          /* why not, for -SHARDDOWN */
    int ever_ready;                 /* routing was complete once (startup is over) */
    int fatal;                      /* exit code requested (mismatch at startup) */
    struct coord_cluster *cl;       /* Redis Cluster mode (route.c); NULL: single Redis */
    long long start_time;
    char lock_id[24];               /* this process's prefix of write-lock tokens */
    unsigned layout;                /* the corpus's layout (corpus.c); 0 until a worker said */
    coord_stats st;
    rs_metrics *metrics;            /* GET /metrics, when metrics-port is set */
    struct rs_pool *pool;           /* fingerprints of large texts (textfp.c); NULL: none */
    struct coord_merge *merge;      /* one-pair ADDs waiting to be written (merge.c) */
    struct coord_op *ops;           /* operations not ended (ops.c), for shutdown */
};

/* ---- workers.c ---- */

/* Parse the worker addresses and start connecting. Returns 0, or -1 with err. */
int coord_workers_start(coord *co, char *err, size_t errlen);
void coord_workers_stop(coord *co);
/* Append the # Workers section lines. */
void coord_workers_info(coord *co, resp_buf *b);
/* The corpus's fingerprint and document counts from the workers' last SHARD.INFO
 * (each shard counted once); -1 when not known. */
void coord_corpus_counts(const coord *co, long long *fps, long long *docs);
/* 1 when w can take requests now (up, not draining), else 0. */
static inline int coord_worker_usable(const coord_worker *w)
{
    return w->health == W_UP && !w->left;
}
/* Memory used by the Redis nodes behind the workers: used_memory summed over the
 * distinct redis_addr the workers report, leaving out nodes that report the replica
 * role. Returns the sum, or -1 when a worker's node memory is unknown. */
long long coord_redis_used_memory(const coord *co);

/* ---- ops.c: fan-out operations ---- */

typedef struct coord_op coord_op;
/* Called with one worker reply (never NULL, never an error reply: those fail the op).
 * Return 0, or -1 after coord_op_fail. */
typedef int (*coord_reply_fn)(coord_op *op, coord_worker *w, redisReply *r, void *arg);
/* Called when every child of the round is done without failure. */
typedef void (*coord_round_fn)(coord_op *op);

/* Start an operation for req with the deadline timeout_ms from now. NULL: the request
 * was answered with an error already. req NULL: an op answering requests of its own
 * (coord_op_set_failed tells it of a failure). */
coord_op *coord_op_new(coord *co, rs_req *req);
/* Shutdown: every operation not ended fails with -SHARDDOWN (its requests answered,
 * its timers freed), so none is left waiting on a timer of a loop that no longer runs. */
void coord_ops_stop(coord *co);
rs_req *coord_op_req(coord_op *op);
/* The op's request is answered elsewhere from now on (merge.c): the op answers no one. */
void coord_op_give_req(coord_op *op);
coord *coord_op_coord(coord_op *op);
/* Per-command state: freed with free() when the op ends (after cleanup, if set). */
void coord_op_set_data(coord_op *op, void *data, void (*cleanup)(void *data));
void *coord_op_data(coord_op *op);

/* Send one request to worker w as a child of the current round. Returns 0, or -1 when
 * the op failed (worker down or busy): the caller stops and returns. */
int coord_op_send(coord_op *op, coord_worker *w, int argc, const char **argv,
                  const size_t *argvlen, coord_reply_fn fn, void *arg);
/* A best-effort op: a child's lost connection or error reply, and the deadline, end
 * that child (its reply fn is not called) instead of failing the op. */
void coord_op_set_tolerant(coord_op *op);
/* All children of the round were sent: next(op) runs when they are done (at once when
 * there were none). */
void coord_op_round_end(coord_op *op, coord_round_fn next);
/* Run next(op) after ms milliseconds (between rounds; the deadline still runs). */
void coord_op_later(coord_op *op, unsigned ms, coord_round_fn next);
/* Restart the deadline: timeout-ms from now (a batch, per window of its items). */
void coord_op_rearm(coord_op *op);
/* fn writes a note (NUL-terminated, at most cap bytes) that coord_op_fail appends to
 * the error text in parentheses, e.g. which items of a batch were stored. */
typedef void (*coord_note_fn)(coord_op *op, char *buf, size_t cap);
void coord_op_set_note(coord_op *op, coord_note_fn fn);
/* fn is called once when the op fails, with the error code and text, before the op
 * ends (for an op that answers requests of its own). */
typedef void (*coord_failed_fn)(coord_op *op, rs_errcode code, const char *text);
void coord_op_set_failed(coord_op *op, coord_failed_fn fn);
/* Answer an error, mark every child done, end the op. */
void coord_op_fail(coord_op *op, rs_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The reply was written into rs_req_out(coord_op_req(op)): send it and end the op. */
void coord_op_finish(coord_op *op);

/* Swap the per-command state: the old one is cleaned up and freed. */
void coord_op_swap_data(coord_op *op, void *data, void (*cleanup)(void *data));

/* ---- write.c: ADD, DEL and CHECK's add under per-fingerprint write locks ---- */

typedef struct coord_pair {
    uint64_t fp;
    const char *docid;          /* in the request's arguments; NULL: DEL of all ids */
    size_t len;
} coord_pair;

typedef enum coord_write_kind { CW_ADD, CW_DEL, CW_CHECK, CW_CHECKTEXT } coord_write_kind;
typedef struct coord_write coord_write;

/* The write state of op (replaces its data; takes pairs, freed with the op). NULL:
 * the op failed (out of memory). */
coord_write *coord_write_new(coord_op *op, coord_write_kind kind, coord_pair *pairs,
                             size_t npairs);
/* DEL: remove every id (all) or the pair's id. */
void coord_write_set_del(coord_write *wr, int all);

/* A request answered by the write of one pair: ADD with the ids the pair added,
 * CHECK / CHECKTEXT with the answer of their query (saved; CHECKTEXT's fingerprint
 * q first). Whoever holds it owns saved. */
typedef struct coord_waiter {
    rs_req *req;
    coord_write_kind kind;      /* CW_ADD, CW_CHECK or CW_CHECKTEXT */
    uint64_t q;
    resp_buf saved;
} coord_waiter;
/* Each pair i answers w[i] (the op has no request of its own; merge.c): once its
 * fingerprint is written and unlocked, or with the op's error (takes w and what its
 * entries own; the pairs' fingerprints must be distinct). */
void coord_write_set_waiters(coord_write *wr, coord_waiter *w);
/* Run the rounds; the op is answered when every pair is written, or failed. */
void coord_write_start(coord_op *op);
/* Writes pair p (taken) for w alone, op answering w->req: ADD's, CHECK's and
 * CHECKTEXT's one-pair write (takes w->saved). */
void coord_write_one(coord_op *op, coord_waiter *w, coord_pair *p);

/* ---- merge.c: one-pair writes of any clients written together (merge-adds) ---- */

typedef struct coord_merge coord_merge;
/* Returns 0, or -1 with err (out of memory). Nothing when merge-adds is off. */
int coord_merge_start(coord *co, char *err, size_t errlen);
/* Requests still queued answer -SHARDDOWN. */
void coord_merge_stop(coord *co);
/* Queues w's one pair (its docid stays in w->req's arguments); written once the event
 * loop has read what arrived with it. Returns 0 (w and its saved answer taken), or -1
 * (merging off, out of memory: nothing taken; write it alone). */
int coord_merge_add(coord *co, coord_waiter *w, const coord_pair *pair);

/* ---- commands.c: argument checks and the starts of the commands ---- */

void coord_cmd_add(rs_req *r);
void coord_cmd_del(rs_req *r);
void coord_cmd_query(rs_req *r);
void coord_cmd_check(rs_req *r);
void coord_cmd_checktext(rs_req *r);

/* ---- cmdtable.c: the command table (names, arity, flags, help, arguments) ---- */

extern const rs_command coord_commands[];
extern const size_t coord_ncommands;

/* ---- query.c: the query state machine of QUERY, CHECK and CHECKTEXT ---- */

typedef struct grp {
    size_t start, n;        /* slice of matches / pairs */
} grp;

typedef struct coord_qstate coord_qstate;

/* What a query does with its matches: QUERY answers them; CHECK and CHECKTEXT keep the
 * answer and add the document (write.c). */
typedef void (*coord_query_done_fn)(coord_op *op, coord_qstate *s);

struct coord_qstate {
    coord_query_done_fn done;
    uint64_t q;
    unsigned d;
    size_t limit;           /* 0: all */
    qmatch *m;
    size_t n, cap;
    grp *groups;            /* per worker: the matches whose ids SHARD.DOCS fetches */
    size_t *fetch;          /* DOCS: indexes into m of the matches to fetch, by worker */
    coord_write_kind check_kind; /* CHECK / CHECKTEXT: CW_CHECK or CW_CHECKTEXT */
    coord_pair *pairs;      /* CHECK / CHECKTEXT: the pair added after the query */
};

/* A new operation answering r, with its query state (*sp) for q within d, ending
 * with done. NULL when out of memory (r answered). */
coord_op *coord_query_op_new(coord *co, rs_req *r, coord_query_done_fn done, uint64_t q,
                             unsigned d, coord_qstate **sp);
/* Starts the query round for s->q within s->d (s: the op's data). */
void coord_query_start(coord_op *op);
/* Writes s's matches into b as QUERY answers them: [[fp, distance, [docid ...]] ...]. */
void coord_query_answer(const coord_qstate *s, resp_buf *b);
/* The done functions: QUERY answers the matches (query.c); CHECK / CHECKTEXT keep
 * them and add the pair, which answers (coord_check_write, write.c). */
void coord_query_reply(coord_op *op, coord_qstate *s);
void coord_check_write(coord_op *op, coord_qstate *s);

/* Outcome of a step that can fail in two ways a caller answers differently. */
typedef enum coord_status {
    COORD_OK = 0,
    COORD_BAD_REPLY = -1,       /* a worker's reply is malformed: -ERR, counted */
    COORD_NOMEM = -2            /* out of memory: -OOM */
} coord_status;

/* Parses e, an array of document ids, into a RESP array in *docs (malloc'd). */
coord_status coord_docs_copy(const redisReply *e, char **docs, size_t *docslen);

/* ---- info.c: SIMHASH.FINGERPRINT and SIMHASH.INFO ---- */

/* SIMHASH.FINGERPRINT text: answers the text's fingerprint. */
void coord_cmd_fingerprint(rs_req *r);
/* SIMHASH.EXTRACT text: answers the text the fingerprint is taken from, its rule and
 * fingerprint. */
void coord_cmd_extract(rs_req *r);
/* Takes the counts and state of a SHARD.INFO reply of w (the health check's, or
 * SIMHASH.INFO's fresh one). */
void coord_worker_take_info(coord_worker *w, const redisReply *r);

/* Options after the fixed arguments of QUERY, CHECK, CHECKTEXT, FINGERPRINT. */
/* Parses the options from argument `from` on (those in allow: coord_qopts_parse,
 * matches.h); 0, or -1 after failing r. */
int coord_query_options(coord *co, rs_req *r, size_t from, unsigned allow, coord_qopts *o);

/* ---- textfp.c: fingerprints of request texts, large ones off the event loop ---- */

/* Then: the fingerprint of argument text_arg of r is fp; arg as given. */
typedef void (*coord_textfp_fn)(rs_req *r, uint64_t fp, unsigned arg);
/* Fingerprints argument text_arg of r (HTML when html), then calls then(r, fp, arg):
 * at once for a text below fingerprint-offload-bytes (or without a pool), else from the
 * pool's completion on the event loop. A failure (bad HTML, pool full: -BUSY) answers
 * r and then is not called. */
void coord_textfp(coord *co, rs_req *r, size_t text_arg, int html, coord_textfp_fn then,
                  unsigned arg);
/* Then: x is the extraction of argument text_arg of r (valid during the call only). */
typedef void (*coord_textx_fn)(rs_req *r, const fp_extraction *x);
/* As coord_textfp, with the text the fingerprint is taken from (fp_html_extract; a
 * text's own text, rule "text"): the same threads, queue and answers to failures. */
void coord_textx(coord *co, rs_req *r, size_t text_arg, int html, coord_textx_fn then);
/* Start / stop the pool (fingerprint-threads). coord_textfp_start returns 0, or -1 with
 * err. Jobs waiting at the stop answer -BUSY. */
int coord_textfp_start(coord *co, char *err, size_t errlen);
void coord_textfp_stop(coord *co);
/* INFO lines of the pool (fingerprint_pool_...). */
void coord_textfp_info(coord *co, resp_buf *b);
/* SIMHASH.INFO: answers the coordinator's INFO text. */
void coord_cmd_info(rs_req *r);
/* INFO's program sections (rs_options.info; ctx is the coord): Corpus, Limits,
 * Coordinator (counters), Workers, Keyspace. */
void coord_info_sections(void *ctx, resp_buf *b);
/* The coordinator's own /metrics families (rs_metrics extra; ctx is the coord). */
void coord_metrics(void *ctx, resp_buf *b);

/* ---- scan.c ---- */

/* SIMHASH.SCAN cursor [COUNT n]: [next cursor, [[fp, [docid ...]] ...]]. */
void coord_cmd_scan(rs_req *r);

/* ---- route.c: routing in both modes, and the Redis Cluster slot map ---- */

/* Worker owning the shard of permuted value p of table t, or NULL when routing is
 * not complete (by first byte with one Redis, by slot in a cluster). */
coord_worker *coord_route(coord *co, unsigned t, uint64_t p);
/* Rebuild the routes after a worker or the slot map changed; sets routing_ok. */
void coord_routing_update(coord *co);

/* Cluster mode (cluster-node given): set up the map refresh. Returns 0, or -1 with err. */
int coord_cluster_start(coord *co, char *err, size_t errlen);
void coord_cluster_stop(coord *co);
/* Ask for a slot map refresh (at most one in flight, at most one per 100 ms). */
void coord_cluster_refresh(coord *co, const char *why);
/* Append the # Cluster section. */
void coord_cluster_info(coord *co, resp_buf *b);

/* ---- corpus.c: the corpus checks of SHARD.HELLO ---- */

/* Checks the layout (element 2), corpus name (element 9) and fingerprint algorithm
 * (element 8) of a SHARD.HELLO reply against the coordinator's corpus: the
 * configured layout and algorithm, or those the first worker reported, and the
 * configured name. Returns 0, or -1 with why (for the operator) set. */
int coord_corpus_check(coord *co, const redisReply *r, char *why, size_t whylen);

#endif
