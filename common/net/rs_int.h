/* rs_int.h: the RESP server framework's internal structures, shared by rserver.c
 * (connections, queues, limits) and rs_redis.c (the Redis-compatible built-in
 * commands: HELLO, CLIENT, INFO, COMMAND, ...). Not for programs: they use rserver.h. */
#ifndef SIMHASH_RS_INT_H
#define SIMHASH_RS_INT_H

#include <stdint.h>

#include <event2/util.h>

#include "rs_acl.h"
#include "rserver.h"

#define RS_READ_HIGH_WATERMARK (64u << 10)   /* unparsed input kept per client */

/* Per-command counters, as Redis's INFO commandstats / latencystats: lat.count calls
 * started and answered, lat.sum_us their time from start to reply. */
typedef struct rs_cmdstat {
    unsigned long long failed;      /* answered with an error */
    unsigned long long rejected;    /* refused before starting (arguments, AUTH) */
    rs_hist lat;
} rs_cmdstat;

/* One SLOWLOG entry: a request that took at least slowlog_slower_than_us. */
#define RS_SLOWLOG_ARGS 32          /* arguments kept (Redis: 32) */
#define RS_SLOWLOG_ARG_BYTES 128    /* bytes kept of each (Redis: 128) */
typedef struct rs_slowlog_entry {
    unsigned long long id;
    long long time_s;               /* Unix time it finished */
    unsigned long long us;
    size_t argc;                    /* shown, RS_SLOWLOG_ARGS at most */
    char *args[RS_SLOWLOG_ARGS];    /* into buf */
    size_t lens[RS_SLOWLOG_ARGS];
    char *buf;                      /* the arguments' copies, kept for the next use */
    size_t cap;
    char addr[64];
    char *name;
} rs_slowlog_entry;

typedef struct rs_client rs_client;
typedef struct rs_guard_addr rs_guard_addr;

struct rs_req {
    rs_client *c;
    rs_req *prev, *next;        /* the client's queue, in request order */
    resp_request rq;
    resp_buf out;
    const rs_command *cmd;      /* set once resolved */
    uint64_t start_us;          /* when it started (monotonic), for the latency figures */
    int started;
    int finished;
};

struct rs_client {
    rserver *s;                 /* NULL after rs_free */
    void *ctx;                  /* the server's ctx, kept for requests answered after rs_free */
    uint64_t id;
    struct bufferevent *bev;    /* NULL once the connection is closed */
    resp_parser *parser;
    rs_req *head, *tail;
    unsigned npending;          /* unfinished requests */
    unsigned nstarted;          /* started and unfinished */
    unsigned nwrites;           /* started and unfinished RS_CMD_WRITE requests */
    unsigned nordered;          /* started and unfinished RS_CMD_ORDERED requests */
    rs_req *waiting;            /* resolved, waits for a write barrier */
    size_t pending_bytes;       /* argument bytes held by unfinished requests */
    unsigned refs;              /* 1 while connected + 1 per unfinished request + 1 while processing */
    int authed;
    int user;                   /* rs_users.c: its user's index in rserver.acl, or -1:
                                   the password of the default user (all commands) */
    char user_name[RS_ACL_NAME_MAX + 1]; /* that user's name ("default" for -1) */
    int eof;                    /* peer closed its side: answer what came, then close */
    int closing;                /* QUIT or protocol error: close once replies are sent */
    int paused;                 /* reading stopped by a limit */
    int resp3;                  /* HELLO 3 switched the connection to RESP3 */
    int in_multi;               /* a refused MULTI came: commands up to EXEC/DISCARD are
                                   refused and EXEC aborts, so none of them runs */
    unsigned auth_failures;
    uint64_t connected_ms;      /* monotonic */
    char *name;                 /* CLIENT SETNAME / HELLO SETNAME, or NULL */
    char *lib_name, *lib_ver;   /* CLIENT SETINFO */
    char addr[64], laddr[64];   /* peer and local address, "ip:port" ("?" unknown) */
    const char *last_cmd;       /* name of the last command started */
    uint64_t active_ms;         /* last input or finished request */
    uint64_t recv_start_ms;     /* a request began arriving then; 0: none is arriving */
    int admitted;               /* counted in its address's connections (rs_guard.c) */
    int tls;                    /* came on the TLS port */
    int handshaking;            /* its TLS handshake is not done yet */
    struct evbuffer_cb_entry *out_cb; /* counts its output into rserver.out_total */
    size_t out_bytes;           /* its unsent output, as counted there */
    size_t unauth_bytes;        /* counted in rserver.unauth_total (unauthenticated) */
    struct event *resume_ev;    /* continue parsing in a later loop iteration */
    rs_client *prev, *next;     /* server's client list */
};

struct rserver {
    struct event_base *base;
    struct evconnlistener *lis;     /* NULL: no plain port (port 0 beside a tls-port) */
    struct event *accept_retry;
    struct evconnlistener *tls_lis; /* the TLS port's, or NULL */
    struct event *tls_accept_retry;
    struct rs_tls *tls;             /* rs_tls.c: the context of new TLS connections */
    unsigned tls_port;
    rs_options opt;
    char *bind;
    char *password;
    unsigned port;
    rs_client *clients;
    uint64_t next_id;
    rs_stats st;
    struct event *sweep_ev;     /* once a second: idle and auth timeouts, ops/sec */
    rs_cmdstat *cstat;          /* per command: the program's, then the built-in ones */
    size_t ncstat;
    uint64_t start_ms;          /* monotonic time rs_new ran */
    unsigned long long ops_sample, ops_per_sec; /* commands at the last sweep; rate */
    rs_slowlog_entry *slowlog;      /* ring of slowlog_max_len entries, newest at
                                       slowlog_head - 1 */
    size_t slowlog_len, slowlog_head;
    unsigned long long slowlog_next_id;
    rs_guard_addr **guard;      /* rs_guard.c: per-address entries, hashed */
    size_t guard_naddrs;
    double auth_tokens;         /* the server's wrong-password bucket */
    uint64_t auth_refill_ms;
    unsigned long nauthed;      /* connected clients authenticated (password set) */
    size_t out_total;           /* unsent output of every client (max_output_total) */
    size_t unauth_total;        /* unfinished input of unauthenticated clients */
    struct event *budget_ev;    /* enforces both budgets outside buffer callbacks */
    struct rs_auth_delay *auth_delays; /* rs_auth.c: requests waiting on a timer */
    int stopping;               /* rs_free runs: waiting tries are not re-run */
    rs_acl *acl;                /* rs_users.c: the users of aclfile, or NULL: none */
    unsigned long long acl_reloads, acl_reload_errors;
    char acl_last_reload[420];  /* "ok", or why the last reload failed */
};

/* 1 when clients must authenticate: a password or a users file. */
static inline int rs_auth_on(const rserver *s)
{
    return s->password != NULL || s->acl != NULL;
}

/* ---- rs_users.c: users and roles (aclfile) ---- */

/* Loads path (NULL or "": no users) into s at start. Returns 0, or -1 with err set. */
int rs_users_init(rserver *s, const char *path, char *err, size_t errlen);
/* Checks pass for user (NULL: "default") and, when right, makes it c's user. Returns 1
 * when right, else 0 (nothing changed). */
int rs_users_auth(rs_client *c, const char *user, size_t ulen, const char *pass,
                  size_t plen);
/* 1 when c's user may run cmd; else answers r -NOPERM, counts it and returns 0. */
int rs_users_permit(rs_req *r, const rs_command *cmd);
void rs_users_info(const rserver *s, resp_buf *b);
void rs_users_metrics(const rserver *s, resp_buf *b);

/* ---- rs_tls.c: TLS listeners ---- */

typedef struct rs_tls rs_tls;
/* A context from c's files. Returns it, or NULL with err set. */
rs_tls *rs_tls_new(const rs_tls_conf *c, char *err, size_t errlen);
void rs_tls_free(rs_tls *t);
/* An accepting TLS bufferevent on fd (closed when it is freed). NULL: out of memory
 * (fd left open). */
struct bufferevent *rs_tls_bev(rserver *s, int fd);
/* c's handshake failed (its bufferevent still open): logs OpenSSL's reason, counts. */
void rs_tls_handshake_failed(rs_client *c);
/* INFO lines tls_port ... tls_last_reload. */
void rs_tls_info(const rserver *s, resp_buf *b);
/* /metrics families of the TLS counters (nothing when s has no TLS port). */
void rs_tls_metrics(const rserver *s, resp_buf *b);

/* rs_auth.c: answers every request waiting on an AUTH timer now (rs_free). */
void rs_auth_cancel_all(rserver *s);

/* ---- rs_guard.c: budgets across clients ---- */

/* Start / stop counting c's output (after its bufferevent exists / before it is freed;
 * stopping also drops c's unauthenticated bytes). */
void rs_budget_attach(rs_client *c);
void rs_budget_detach(rs_client *c);
/* c's unfinished input now (parser and buffer) counted while it is unauthenticated;
 * 0 once it is authenticated. */
void rs_budget_unauth_note(rs_client *c);
/* The budget event: disconnects the largest holders until both budgets hold. */
void rs_budget_enforce(evutil_socket_t fd, short what, void *arg);
/* rserver.c: close c now (unfinished requests keep the struct alive). */
void rs_client_close(rs_client *c);

/* ---- rs_guard.c: per-address connections and wrong-password buckets ---- */

/* A connection from addr ("ip:port"): 0 when admitted (counted), -1 when its address
 * has max_clients_per_addr already (counted as rejected). */
int rs_guard_admit(rserver *s, const char *addr);
void rs_guard_release(rserver *s, const char *addr);
/* 0 when an AUTH try from addr may be checked now, else the ms to wait first. */
unsigned rs_guard_auth_wait_ms(rserver *s, const char *addr);
/* A wrong password from addr: takes a token of its bucket and of the server's. */
void rs_guard_auth_failed(rserver *s, const char *addr);
void rs_guard_sweep(rserver *s);
void rs_guard_free(rserver *s);
void rs_guard_info(const rserver *s, resp_buf *b);
void rs_guard_metrics(rserver *s, resp_buf *b);

/* ---- rs_http.c: the metrics endpoint's HTTP side; shared listener helpers ---- */

#define RS_ACCEPT_PAUSE_MS 100          /* accepting stops this long after a failure */
#define RS_METRICS_MAX_CONNS 64         /* metrics connections at once */
#define RS_METRICS_DEADLINE_MS 5000     /* a metrics request must arrive within this */
#define RS_HTTP_MAX_HEAD 8192           /* bytes of a request line and headers */

/* An accept() failed on lis (EMFILE, ENFILE, ...): log (rate-limited), stop accepting,
 * and re-enable after RS_ACCEPT_PAUSE_MS through retry (a timer the caller made that
 * calls evconnlistener_enable). what names the listener in the log. */
struct evconnlistener;
struct sockaddr;
struct event;
void rs_accept_pause(struct evconnlistener *lis, struct event *retry, const char *what);

typedef struct rs_http_req {
    char method[8];
    const char *path;           /* into the head; pathlen bytes */
    size_t pathlen;
    const char *auth;           /* the Authorization value, or NULL */
    size_t authlen;
} rs_http_req;
/* Parses a request head (request line, headers; n bytes). Returns 0, or -1 when it is
 * not an HTTP/1.x request. */
int rs_http_parse(const char *head, size_t n, rs_http_req *rq);
/* 1 when the Authorization value carries password (Bearer, or Basic with any user). */
int rs_http_auth_ok(const char *auth, size_t n, const char *password);

/* rserver.c: a listening socket on host:port (numeric) calling cb(arg); *bound gets the
 * port actually bound. NULL with err set. */
struct evconnlistener *rs_listen(struct event_base *base, const char *host, unsigned port,
                                 void (*cb)(struct evconnlistener *, int, struct sockaddr *,
                                            int, void *),
                                 void *arg, unsigned *bound, char *err, size_t errlen);
/* "ip:port" of the peer (peer != 0) or the local end of fd; "?" when unknown. */
void rs_sock_addr(int fd, int peer, char *buf, size_t cap);
/* a (alen bytes) equals the string b, compared without an early exit. */
int rs_secret_equal(const char *a, size_t alen, const char *b);


/* rs_redis.c: the built-in commands beyond PING/AUTH/QUIT (and the table of all of
 * them); rs_stats.c: the per-command counters, histograms and the slow log. */
void rs_cmd_ping(rs_req *r);       /* rserver.c */
void rs_cmd_auth(rs_req *r);
void rs_cmd_quit(rs_req *r);
void rs_cmd_hello(rs_req *r);
void rs_cmd_client(rs_req *r);
void rs_cmd_select(rs_req *r);
void rs_cmd_echo(rs_req *r);
void rs_cmd_command(rs_req *r);
void rs_cmd_info(rs_req *r);
void rs_cmd_config(rs_req *r);
void rs_cmd_notx(rs_req *r);
/* Counters of cmd (NULL when it has none: the server is gone or has no table). */
rs_cmdstat *rs_cmdstat_of(rserver *s, const rs_command *cmd);
/* Records one finished request of cmd that took us microseconds. */
void rs_cmdstat_add(rs_cmdstat *st, uint64_t us, int failed);
/* SLOWLOG: keeps r (its arguments, client) when it took us >= the threshold. */
void rs_slowlog_note(rserver *s, rs_req *r, uint64_t us);
void rs_slowlog_free(rserver *s);
void rs_cmd_slowlog(rs_req *r);

/* 1 when argument i of r is word (any case). */
int rs_arg_is(rs_req *r, size_t i, const char *word);
/* Wall-clock time in microseconds since the epoch. */
unsigned long long rs_wall_us(void);
/* Lower-case copy of a command name (at most cap - 1 bytes); returns buf. */
const char *rs_lower(const char *name, char *buf, size_t cap);
/* Calls fn(cmd, arg) for every command: the program's, then the built-in ones it does
 * not replace (fn may be NULL). Returns the count. */
size_t rs_each_command(const rserver *s, void (*fn)(const rs_command *, void *), void *arg);

/* rs_redis.c: every built-in command, used unless the program defines the name */
extern const rs_command rs_builtin[];
extern const size_t rs_nbuiltin;

/* rserver.c: the parser limits of a client (the small ones before AUTH). */
resp_limits rs_parser_limits(const rserver *s, int authed);

/* rserver.c, for rs_redis.c */
/* The command named name[0..len) (any case): the program's, else a built-in one. */
const rs_command *rs_find_command(const rserver *s, const char *name, size_t len);
/* HELLO's AUTH: checks user/password like AUTH and answers a failure itself (after
 * the failure delay). Returns 1 when authenticated, 0 when r was answered. */
int rs_auth_check(rs_req *r, const char *user, size_t ulen, const char *pass, size_t plen);

#endif
