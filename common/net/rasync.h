/* rasync.h: hiredis async connections on libevent, written once for the coordinator
 * and the worker (as hiredis keeps its event-loop glue in adapters/): connect with
 * the reply guard and the libevent adapter attached, reconnect backoff with jitter,
 * the monotonic clock, and milliseconds as a struct timeval. */
#ifndef SIMHASH_RASYNC_H
#define SIMHASH_RASYNC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#include <hiredis/async.h>

struct event_base;

/* Microseconds / milliseconds on a monotonic clock. */
uint64_t ra_now_us(void);
uint64_t ra_now_ms(void);

/* ms milliseconds as a struct timeval (for evtimer_add). */
struct timeval ra_tv_ms(unsigned ms);

/* Reconnect backoff: the delay doubles from min_ms up to max_ms and each delay is
 * drawn from [d/2, d], so peers that lost one server do not come back in step. */
typedef struct ra_backoff {
    unsigned cur_ms;            /* 0: no failure since the last reset */
} ra_backoff;

/* The next delay in ms (first failure: min_ms, jittered). */
unsigned ra_backoff_next(ra_backoff *b, unsigned min_ms, unsigned max_ms);
/* A connection succeeded: the next failure starts again from min_ms. */
void ra_backoff_reset(ra_backoff *b);

/* Unused bytes of a connection's read buffer kept between bursts of replies. */
#define RA_READ_BUF_KEEP (256u * 1024u)

/* Starts a non-blocking connection to host:port on base: the reply guard installed
 * (common/net/hiredis_guard.h), ac->data = data, the connect and disconnect callbacks
 * set. Returns the context (hiredis frees it after the disconnect callback, or after
 * a failed connect callback), or NULL with a reason in err. */
redisAsyncContext *ra_connect(struct event_base *base, const char *host, int port, void *data,
                              redisConnectCallback *on_connect,
                              redisDisconnectCallback *on_disconnect, char *err, size_t errlen);

/* ---- TLS (ra_tls.c): the same connections over TLS, hiredis's transport replaced by a
 * libevent OpenSSL bufferevent; see the top of ra_tls.c ---- */

/* The client side's TLS options (a coordinator's worker-tls-*). Strings are the
 * configuration's. */
typedef struct ra_tls_conf {
    int on;                     /* worker-tls yes */
    char *cert_file;            /* client certificate (chain), PEM, or NULL: none */
    char *key_file;             /* its key, PEM (unencrypted) */
    char *ca_cert_file;         /* CAs the peer's certificate must chain to (NULL: the
                                   system's) */
    char *server_name;          /* name the certificate must carry (NULL: the host) */
} ra_tls_conf;

typedef struct ra_tls ra_tls;

/* The values of c alone (no file read). Returns 0, or -1 with err set. */
int ra_tls_conf_check(const ra_tls_conf *c, char *err, size_t errlen);
/* A client TLS context from c (the files read now; TLS 1.2 or newer; the peer's
 * certificate verified against the CA and the name). Returns it, or NULL with err. */
ra_tls *ra_tls_new(const ra_tls_conf *c, char *err, size_t errlen);
/* Reads c's files again into a new context for new connections (live ones keep
 * theirs). Returns 0, or -1 with err set and t unchanged. */
int ra_tls_reload(ra_tls *t, const ra_tls_conf *c, char *err, size_t errlen);
void ra_tls_free(ra_tls *t);

/* As ra_connect, over TLS when tls is not NULL: the connect callback runs once the
 * handshake completed and the peer's certificate was verified; a failed handshake is
 * a failed connect (REDIS_ERR, errstr "TLS: why"). */
redisAsyncContext *ra_connect_tls(struct event_base *base, const char *host, int port,
                                  ra_tls *tls, void *data, redisConnectCallback *on_connect,
                                  redisDisconnectCallback *on_disconnect, char *err,
                                  size_t errlen);

#endif
