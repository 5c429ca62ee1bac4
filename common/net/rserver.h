/* rserver.h: the RESP server framework of simhash-shard and simhash-coordinator.
 *
 * libevent 2.1 (event_base + evconnlistener + bufferevent). Each connection parses
 * requests (multibulk or inline, see resp.h) into argv arrays and keeps them in an
 * ordered queue. A command handler answers at once or later (after a fan-out): it
 * writes its reply into rs_req_out() and calls rs_req_finish(); replies leave strictly
 * in request order. Every resource is bounded (see rs_limits). When a client
 * disconnects while requests are in flight, those requests stay valid until their
 * handler finishes them; the reply is then dropped.
 *
 * Built-in commands, used unless the command table defines the same name:
 *   PING [msg], AUTH [user] password, QUIT, and in rs_redis.c the commands Redis
 *   clients and tools send on their own: HELLO [2|3], CLIENT ..., SELECT 0, ECHO, INFO
 *   [section ...], COMMAND [COUNT|LIST|INFO|DOCS], CONFIG GET (empty), and MULTI/EXEC/
 *   DISCARD/WATCH/UNWATCH answered with an error that explains the alternative.
 * When a password or a users file (aclfile, rs_users.c) is set, every command but PING,
 * AUTH, HELLO and QUIT (and commands flagged RS_CMD_NOAUTH) answers -NOAUTH until the
 * client authenticates; with users, a command outside the user's roles answers -NOPERM
 * (the category of each command: RS_CMD_CAT_*). */
#ifndef SIMHASH_RSERVER_H
#define SIMHASH_RSERVER_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "resp.h"

struct event_base;
struct event;

/* ---- Error replies: one table of codes ---- */

/* X(enum, code sent on the wire) */
#define RS_ERROR_CODES(X) \
    X(RS_ERR,        "ERR")        /* bad request: arity, argument, unknown command */ \
    X(RS_NOAUTH,     "NOAUTH")     /* AUTH required */ \
    X(RS_WRONGPASS,  "WRONGPASS")  /* AUTH failed */ \
    X(RS_NOPERM,     "NOPERM")     /* the user's rules do not allow the command */ \
    X(RS_BUSY,       "BUSY")       /* a limit was reached; retry later */ \
    X(RS_TIMEOUT,    "TIMEOUT")    /* a shard worker did not answer in time */ \
    X(RS_SHARDDOWN,  "SHARDDOWN")  /* a shard worker is unavailable */ \
    X(RS_WRONGSHARD, "WRONGSHARD") /* the shard is not served by this worker */ \
    X(RS_REDIS,      "REDIS")      /* Redis failed or is unreachable */ \
    X(RS_OOM,        "OOM")        /* reply too large or out of memory */ \
    X(RS_MISMATCH,   "MISMATCH")   /* settings differ between coordinator, worker, corpus */

typedef enum rs_errcode {
#define RS_ERR_ENUM_(e, s) e,
    RS_ERROR_CODES(RS_ERR_ENUM_)
#undef RS_ERR_ENUM_
    RS_ERR_COUNT_
} rs_errcode;

/* "ERR", "TIMEOUT", ... */
const char *rs_errcode_str(rs_errcode code);

/* ---- Limits ---- */

/* TLS of the RESP listeners (rs_tls.c), as Redis names the options. Strings are the
 * configuration's (NULL: unset). A TLS listener runs when port is not 0. */
typedef struct rs_tls_conf {
    unsigned port;              /* tls-port: TLS listener beside the plain port */
    char *cert_file;            /* tls-cert-file: PEM certificate (chain) */
    char *key_file;             /* tls-key-file: PEM private key */
    char *key_pass;             /* tls-key-file-pass-file: the key's passphrase (the
                                   file's first line), or NULL: not encrypted */
    char *ca_cert_file;         /* tls-ca-cert-file: CAs that sign client certificates */
    char *auth_clients;         /* tls-auth-clients: yes (NULL), no, optional */
    char *protocols;            /* tls-protocols: "TLSv1.2 TLSv1.3" (NULL: both) */
    char *ciphers;              /* tls-ciphers: TLS 1.2 cipher list (NULL: OpenSSL's) */
    char *ciphersuites;         /* tls-ciphersuites: TLS 1.3 suites (NULL: OpenSSL's) */
    int prefer_server_ciphers;  /* tls-prefer-server-ciphers */
    int metrics;                /* metrics-tls: HTTPS on the metrics port, same material */
} rs_tls_conf;

typedef struct rs_limits {
    size_t max_arg_bytes;       /* one argument (default 1 MiB) */
    size_t max_req_bytes;       /* one request (default 8 MiB) */
    unsigned max_args;          /* arguments per request (default 65536) */
    size_t max_inline_bytes;    /* one inline command line (default 64 KiB) */
    unsigned max_pending;       /* requests queued per client (pipeline depth, default 128) */
    size_t max_reply_bytes;     /* one reply (default 64 MiB); larger -> -OOM */
    size_t out_high_watermark;  /* stop reading a client whose unsent output passes this (1 MiB) */
    unsigned max_clients;       /* connections at once (default 1024) */
    unsigned max_per_event;     /* requests started per read event (default 32) */
    size_t max_output_bytes;    /* unsent output past which a client is disconnected, as
                                   Redis's client-output-buffer-limit (default 128 MiB) */
    unsigned max_inflight_client; /* requests of one client running at once; the rest
                                   wait in its queue (default 32) */
    unsigned idle_timeout_s;    /* close a client idle this long (nothing running or
                                   received); 0: never (default 300) */
    unsigned auth_timeout_s;    /* close a client not authenticated after this long, when
                                   a password is set; 0: never (default 10) */
    unsigned auth_fail_delay_ms; /* a failed AUTH is answered after this long (default
                                   RS_AUTH_FAIL_DELAY_MS; 0: at once) */
    unsigned slowlog_slower_than_us; /* SLOWLOG: requests that took at least this long
                                   (default 10000; 0: every request) */
    unsigned slowlog_max_len;   /* SLOWLOG entries kept (default 128; 0: none kept) */
    unsigned request_timeout_s; /* close a client whose request is still arriving after
                                   this long (slow senders); 0: never (default 10) */
    unsigned max_clients_per_addr; /* connections at once from one address (default
                                   256; 0: no limit) */
    unsigned reserved_auth_clients; /* with a password: slots unauthenticated clients
                                   never take (default 32, a quarter of max_clients at
                                   most); at their cap a new connection replaces the
                                   oldest unauthenticated one */
    unsigned auth_fail_rate_addr;  /* wrong passwords a second from one address
                                   (default 10; a token bucket, burst one second) */
    unsigned auth_fail_rate_total; /* wrong passwords a second in all (default 100) */
    size_t max_output_total;    /* unsent reply bytes of all clients together, as Redis's
                                   maxmemory-clients: past it the client with the most is
                                   disconnected, then the next (default 512 MiB; 0: none) */
    size_t max_unauth_bytes;    /* bytes of unfinished requests of all unauthenticated
                                   clients together (password set): past it the one
                                   holding the most is disconnected (default 32 MiB; 0: none) */
    rs_tls_conf tls;            /* the TLS options, in the same shared table */
    char *aclfile;              /* aclfile: the users file (rs_acl.h), or NULL: none */
} rs_limits;

/* Before AUTH (when a password is set) a client may send requests of at most this many
 * arguments and bytes per argument or inline line, as Redis allows unauthenticated
 * clients; a larger one is a protocol error and closes the connection. */
#define RS_UNAUTH_MAX_ARGS 10
#define RS_UNAUTH_MAX_ARG_BYTES 16384
/* A failed AUTH is answered after this delay (by default), and the connection closed
 * after this many failures. */
#define RS_AUTH_FAIL_DELAY_MS 200
#define RS_AUTH_MAX_FAILURES 3

/* The defaults: those of the option table rs_limit_options (rs_config.c). */
void rs_limits_default(rs_limits *l);

/* ---- Requests ---- */

typedef struct rs_req rs_req;
typedef struct rserver rserver;

typedef void (*rs_cmd_fn)(rs_req *req);

#define RS_CMD_NOAUTH 1u        /* allowed before AUTH */
/* A write: it starts only after every earlier request of the same client finished,
 * and later requests of that client start only after it finished. Other commands of
 * one client run concurrently (their replies still leave in order). So a client that
 * pipelines ADD then QUERY sees its own ADD. */
#define RS_CMD_WRITE 2u
/* An ordered write: it starts when no RS_CMD_WRITE of the client runs and may run
 * concurrently with other ordered writes of the client (they must commute, as ADDs
 * of one connection do); any later request that is not an ordered write starts only
 * after it finished. So pipelined ADDs overlap and a QUERY after them sees them. */
#define RS_CMD_ORDERED 4u

/* Flags that only describe a command (COMMAND INFO / DOCS); built-in commands. */
#define RS_CMD_CONN 8u          /* connection handling (group "connection") */
#define RS_CMD_SERVER 16u       /* server introspection (group "server") */
#define RS_CMD_READONLY 32u     /* changes nothing (flag "readonly") */
#define RS_CMD_CHANGES 64u      /* changes data (flag "write"), with no ordering effect:
                                   RS_CMD_WRITE / RS_CMD_ORDERED imply it */

/* The command's category for the users file (rs_acl.h): the roles @read, @write,
 * @shard and @admin are made of these. A command with none is an admin command, so
 * a new command is closed to every role but @admin until it is given one. */
#define RS_CMD_CAT_READ 128u    /* reads or describes: any user with a role runs it */
#define RS_CMD_CAT_WRITE 256u   /* adds data (role @write) */
#define RS_CMD_CAT_SHARD 512u   /* a worker command the coordinator sends (role @shard) */
#define RS_CMD_CAT_ADMIN 1024u  /* removes data or changes the server (role @admin) */
#define RS_CMD_CAT_MASK (RS_CMD_CAT_READ | RS_CMD_CAT_WRITE | RS_CMD_CAT_SHARD | \
                         RS_CMD_CAT_ADMIN)

/* One argument of a command as COMMAND DOCS describes it (Redis's argument model). */
#define RS_ARG_OPTIONAL 1u
#define RS_ARG_MULTIPLE 2u
typedef struct rs_arg {
    const char *name;           /* NULL ends a list */
    const char *type;           /* "integer", "string", "double", "pure-token", "block", "oneof" */
    const char *token;          /* keyword before the value ("DISTANCE"), or NULL */
    unsigned flags;             /* RS_ARG_* */
    const struct rs_arg *args;  /* members of a "block" / "oneof" */
} rs_arg;

typedef struct rs_command {
    const char *name;           /* matched case-insensitively */
    int arity;                  /* argc including the name; -N: at least N */
    unsigned flags;
    rs_cmd_fn fn;
    const char *summary;        /* one line for COMMAND DOCS / redis-cli HELP */
    const rs_arg *args;         /* arguments after the name, or NULL */
} rs_command;

size_t rs_req_argc(const rs_req *r);
/* Argument i (0 = command name): len bytes, NUL-terminated, binary-safe. */
const char *rs_req_arg(const rs_req *r, size_t i, size_t *len);
/* Printable copy of the first max bytes of src (len bytes) into dst (cap bytes, always
 * terminated): bytes outside printable ASCII and quotes become '?', a cut adds "...".
 * Returns dst. For echoing a peer's text in an error message. */
const char *rs_printable(char *dst, size_t cap, const char *src, size_t len, size_t max);

/* Where the handler writes its reply (bounded by max_reply_bytes). */
resp_buf *rs_req_out(rs_req *r);

/* The reply is complete: it is sent when every earlier request's reply was.
 * Call exactly once per request, from the handler or later; r is invalid after. */
void rs_req_finish(rs_req *r);

/* Replace whatever was written with one error reply "-CODE text" and finish. */
void rs_req_fail(rs_req *r, rs_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));


/* The id of r's client (CLIENT ID), e.g. to share work out fairly between clients. */
uint64_t rs_req_client_id(const rs_req *r);

/* The ctx given in rs_options (also for a request answered after rs_free, from a
 * callback that outlived the server). */
void *rs_req_ctx(const rs_req *r);

/* ---- Server ---- */

typedef struct rs_options {
    const char *name;           /* program name for logs, e.g. "simhash-shard" */
    const char *bind;           /* default "127.0.0.1" */
    unsigned port;              /* 0: an ephemeral port (see rs_port) */
    const char *password;       /* NULL or "": no AUTH needed */
    rs_limits limits;
    const rs_command *commands;
    size_t ncommands;
    void *ctx;                  /* handed to handlers via rs_req_ctx */
    const char *group;          /* COMMAND DOCS group of the program's commands */
    /* INFO: appends the program's own sections ("# Name\r\nfield:value\r\n...") to b;
     * INFO picks the ones asked for by name. A section named Keyspace is listed last,
     * as Redis does. NULL: none. */
    void (*info)(void *ctx, resp_buf *b);
} rs_options;

/* Listen and serve on base. Returns NULL with err set (bad address, bind failed). */
rserver *rs_new(struct event_base *base, const rs_options *opt, char *err, size_t errlen);

/* Close the listener and every connection. Requests still in flight stay valid
 * until finished; their replies are dropped. */
void rs_free(rserver *s);

/* The port actually bound (0: no plain listener, port 0 beside a tls-port). */
unsigned rs_port(const rserver *s);
/* The TLS port bound, 0 when none. */
unsigned rs_tls_port(const rserver *s);

/* ---- TLS (rs_tls.c) ---- */

/* The values of c alone (no file read): tls-auth-clients, tls-protocols, the files a
 * tls-port needs. Returns 0, or -1 with err set. */
int rs_tls_conf_check(const rs_tls_conf *c, char *err, size_t errlen);
/* The files of c read into a context and freed again (a start's check, so that a bad
 * certificate is a configuration error). Returns 0, or -1 with err set. */
int rs_tls_files_check(const rs_tls_conf *c, char *err, size_t errlen);
/* SIGHUP: certificate, key and CA files read again into a new context for new
 * connections; live ones keep theirs. A failure leaves the running context, logs and
 * counts it (INFO tls_reload_errors, tls_last_reload). Returns 0, or -1. */
int rs_tls_reload(rserver *s, const rs_tls_conf *c);

/* ---- Users and roles (rs_users.c; the file format in rs_acl.h) ---- */

/* The users file at path (NULL or "": none) read and checked against the commands of
 * the program (cmds, n) and the built-in ones, then freed: a start's check, so that a
 * bad file is a configuration error. Returns 0, or -1 with err set ("aclfile PATH:
 * line N: why"). */
int rs_users_file_check(const char *path, const rs_command *cmds, size_t n, char *err,
                        size_t errlen);
/* SIGHUP: the users file read again for new AUTHs; connections of a user that is gone
 * or off are closed, the others are checked against the new rules from their next
 * command on. A failure keeps the running users, logs and counts it (INFO
 * acl_reload_errors, acl_last_reload). path must be the file given at start (adding or
 * removing the file needs a restart). Returns 0, or -1. */
int rs_users_reload(rserver *s, const char *path);

typedef struct rs_stats {
    unsigned long clients;              /* connected now */
    unsigned long long connections;     /* accepted since start */
    unsigned long long rejected;        /* refused: max_clients */
    unsigned long long commands;        /* requests processed */
    unsigned long long proto_errors;    /* connections closed for a protocol error / limit */
    unsigned long long read_pauses;     /* times reading a client was paused (backpressure) */
    unsigned long long inflight;        /* requests started and not finished */
    unsigned long long auth_failures;   /* AUTH with a wrong password */
    unsigned long long closed_auth_failures; /* closed after RS_AUTH_MAX_FAILURES */
    unsigned long long closed_auth_timeout;  /* closed: not authenticated in time */
    unsigned long long closed_idle;     /* closed: idle_timeout_s */
    unsigned long long closed_output;   /* closed: max_output_bytes */
    unsigned long long rejected_per_addr;  /* refused: max_clients_per_addr */
    unsigned long long rejected_unauth;    /* unauthenticated, replaced by a newer one */
    unsigned long long closed_request_timeout; /* a request arrived too slowly */
    unsigned long long metrics_rejected;   /* metrics connections refused: the cap */
    unsigned long long metrics_timeouts;   /* metrics requests not received in time */
    unsigned long long auth_waits;         /* times an AUTH try waited for a token */
    unsigned long long evicted_output;     /* closed: max_output_total, largest first */
    unsigned long long evicted_unauth_bytes; /* closed: max_unauth_bytes, largest first */
    unsigned long long tls_connections;    /* TLS handshakes completed */
    unsigned long long tls_handshake_failures; /* TLS handshakes refused or broken */
    unsigned long long tls_handshake_timeouts; /* TLS handshakes not done in time */
    unsigned long long acl_denied;         /* -NOPERM: a command outside the user's rules */
} rs_stats;


/* ---- Latency histograms (INFO latencystats, /metrics) ---- */

/* Latencies in microseconds: values below RS_HIST_SUB exactly, above in RS_HIST_SUB
 * buckets per power of two (within 1/RS_HIST_SUB of the value), up to 2^40 us. */
#define RS_HIST_SUB 16
#define RS_HIST_EXP_MAX 40
#define RS_HIST_BUCKETS ((RS_HIST_EXP_MAX - 3) * RS_HIST_SUB)
typedef struct rs_hist {
    unsigned long long count, sum_us;
    uint64_t b[RS_HIST_BUCKETS];
} rs_hist;

void rs_hist_add(rs_hist *h, uint64_t us);
/* The latency below which a share p (0..1) of the values fall (a bucket's upper
 * bound); 0 when empty. */
uint64_t rs_hist_percentile(const rs_hist *h, double p);
/* Prometheus histogram samples of h: NAME_bucket{LABELS,le="..."} (seconds, cumulative,
 * 100 us .. 10 s and +Inf), NAME_sum, NAME_count. labels: "" or `key="value",...`. */
void rs_hist_prom(const rs_hist *h, resp_buf *b, const char *name, const char *labels);

/* ---- Metrics endpoint ---- */

/* An HTTP listener (libevent's evhttp) answering GET /metrics with the Prometheus text
 * format: the server's counters, per-command counts, errors and latency histograms,
 * then what extra(ctx, b) appends (the program's own families). */
typedef struct rs_metrics rs_metrics;
rs_metrics *rs_metrics_new(rserver *s, const char *bind, unsigned port,
                           void (*extra)(void *ctx, resp_buf *b), void *ctx, char *err,
                           size_t errlen);
void rs_metrics_free(rs_metrics *m);
unsigned rs_metrics_port(const rs_metrics *m);
/* The whole /metrics text of s into b (for tests and the endpoint). */
void rs_metrics_text(rserver *s, resp_buf *b, void (*extra)(void *ctx, resp_buf *b), void *ctx);
/* `# HELP` and `# TYPE` lines of one family. */
void rs_prom_family(resp_buf *b, const char *name, const char *type, const char *help);

/* Clients connected now. */
unsigned long rs_nclients(const rserver *s);
/* Append the INFO lines of the server ("connected_clients:3\r\n" ...) to b. */
void rs_info_clients(const rserver *s, resp_buf *b);

/* ---- Process helpers ---- */

/* Write the pid to path (0644). Returns 0, or -1 with err set. */
int rs_pidfile_write(const char *path, char *err, size_t errlen);
void rs_pidfile_remove(const char *path);

/* The daemons' event loop until SIGTERM or SIGINT, in two steps. rs_runner_init
 * ignores SIGPIPE and installs the handlers of SIGTERM, SIGINT and SIGHUP on base; a
 * daemon calls it before it listens, so a TERM that arrives while it starts (a client
 * may connect as soon as it listens) is handled when the loop runs, not by the default
 * action that would end it without its teardown. rs_runner_run then runs base: at
 * SIGTERM or SIGINT on_stop(arg) (NULL: none) is called once (close servers there; the
 * loop then exits when nothing is left, or at once with loopexit; on_stop returns 0,
 * or 1 when it ends the loop itself later, a drain); at SIGHUP the log file is reopened
 * (logrotate), then on_hup(arg) (NULL: none) reloads the settings that may change
 * while running. It returns 0, or -1 on a loop error; SIGTERM, SIGINT and SIGHUP are
 * ignored from then on (the caller's teardown runs to its end): rs_runner_done, which
 * rs_runner_run calls, and which a start that fails after rs_runner_init calls. */
#define RS_RUNNER_NSIG 3
typedef struct rs_runner {
    struct event_base *base;
    int (*on_stop)(void *arg);
    void (*on_hup)(void *arg);
    void *arg;
    int stopped;
    struct event *ev[RS_RUNNER_NSIG];
} rs_runner;
int rs_runner_init(rs_runner *r, struct event_base *base, int (*on_stop)(void *arg),
                   void (*on_hup)(void *arg), void *arg);
int rs_runner_run(rs_runner *r);
void rs_runner_done(rs_runner *r);
/* Slow log settings while running (SIGHUP reload): a new max_len empties it. */
void rs_set_slowlog(rserver *s, unsigned slower_than_us, unsigned max_len);

/* The daemons' event loop: epoll's changelist on (coalesces the write-event add/del
 * hiredis makes per command), else a default base. NULL when none can be made. */
struct event_base *rs_base_new(void);

#endif
