/* ra_tls.c: hiredis async connections over TLS (see rasync.h, ra_connect_tls).
 *
 * Debian 12's hiredis (0.14) has no TLS, and its async context reads and writes its
 * socket itself. It does let the event-loop glue be replaced (ac->ev, as its adapters
 * do), so the context is kept, with its command formatting, callback queue and reply
 * reader, and its transport is moved onto a libevent OpenSSL bufferevent:
 *   - hiredis opens the non-blocking TCP connection (redisAsyncConnect); an event
 *     waits for it, then a bufferevent_openssl on a dup of the socket does the TLS
 *     handshake (the peer's certificate checked against the CA and the name or IP);
 *   - commands: hiredis appends them to c->obuf and asks for a write (ev.addWrite);
 *     here an event made active moves the bytes into the bufferevent once per loop
 *     pass (one TLS record for what the callbacks of that pass sent);
 *   - replies: the bufferevent's input is fed to hiredis's reader (redisReaderFeed)
 *     and redisProcessCallbacks runs the callbacks, as hiredis's own read path does;
 *   - a failure sets the context's error: before the handshake completes the connect
 *     callback gets REDIS_ERR and the context is freed (as hiredis does for a refused
 *     connection); later redisAsyncHandleRead, which returns at once on a context with
 *     an error, disconnects it: pending callbacks get NULL, the disconnect callback
 *     REDIS_ERR with errstr saying why;
 *   - hiredis's cleanup hook (ev.cleanup, on every free) frees the bufferevent, the
 *     SSL and the dup; hiredis closes its own descriptor.
 * Callers keep using redisAsyncCommand and friends unchanged. The bufferevent's
 * callbacks are deferred to the event loop, so a failure found while a command is
 * written never frees the context under a hiredis callback. */
#include "rasync.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <hiredis/sds.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "hiredis_guard.h"
#include "log.h"

/* Exported by libhiredis 0.14 (async.c), not declared in its headers: runs the
 * callbacks of the replies the reader holds, as its own read path does after a read,
 * and disconnects on a reader error. */
void redisProcessCallbacks(redisAsyncContext *ac);

struct ra_tls {
    SSL_CTX *ctx;               /* for new connections; each SSL holds a reference */
    char *server_name;          /* checked instead of the host connected to, or NULL */
};

/* One TLS connection: the transport under a hiredis async context. */
typedef struct ra_tls_conn {
    redisAsyncContext *ac;
    struct event_base *base;
    struct event *tcp_ev;       /* the TCP connect in progress, then NULL */
    struct bufferevent *bev;    /* TLS, once the TCP connection is up */
    struct event *flush_ev;     /* moves c->obuf into bev once per loop pass */
    int flush_pending;          /* flush_ev is active */
    SSL_CTX *ctx;               /* referenced until the SSL is made */
    int ready;                  /* handshake completed, peer verified */
    char name[256];             /* the name or IP address the certificate must carry */
    char addr[300];             /* host:port, for messages */
} ra_tls_conn;

/* OpenSSL's oldest queued error as text into buf ("" when none). */
static void ra_tls_err_text(char *buf, size_t cap)
{
    unsigned long e = ERR_get_error();
    buf[0] = '\0';
    if (e != 0)
        ERR_error_string_n(e, buf, cap);
    ERR_clear_error();
}

/* Builds a client context from c. Returns it, or NULL with err set. */
static SSL_CTX *ra_tls_ctx_new(const ra_tls_conf *c, char *err, size_t errlen)
{
    char why[256];
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        ra_tls_err_text(why, sizeof(why));
        snprintf(err, errlen, "worker-tls: cannot create a TLS context: %s", why);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (c->ca_cert_file && c->ca_cert_file[0]) {
        if (SSL_CTX_load_verify_locations(ctx, c->ca_cert_file, NULL) != 1) {
            ra_tls_err_text(why, sizeof(why));
            snprintf(err, errlen, "worker-tls-ca-cert-file %s: cannot load: %s",
                     c->ca_cert_file, why);
            goto fail;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        ra_tls_err_text(why, sizeof(why));
        snprintf(err, errlen, "worker-tls: the system's CA certificates do not load: %s", why);
        goto fail;
    }
    if (c->cert_file && c->cert_file[0]) {
        if (SSL_CTX_use_certificate_chain_file(ctx, c->cert_file) != 1) {
            ra_tls_err_text(why, sizeof(why));
            snprintf(err, errlen, "worker-tls-cert-file %s: cannot load: %s", c->cert_file, why);
            goto fail;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, c->key_file, SSL_FILETYPE_PEM) != 1) {
            int mismatch = ERR_GET_REASON(ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH;
            ra_tls_err_text(why, sizeof(why));
            if (mismatch)
                snprintf(err, errlen, "worker-tls-key-file %s does not match "
                         "worker-tls-cert-file %s", c->key_file, c->cert_file);
            else
                snprintf(err, errlen, "worker-tls-key-file %s: cannot load: %s", c->key_file,
                         why);
            goto fail;
        }
        if (SSL_CTX_check_private_key(ctx) != 1) {
            snprintf(err, errlen, "worker-tls-key-file %s does not match worker-tls-cert-file %s",
                     c->key_file, c->cert_file);
            goto fail;
        }
    }
    ERR_clear_error();
    return ctx;
fail:
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return NULL;
}

int ra_tls_conf_check(const ra_tls_conf *c, char *err, size_t errlen)
{
    int cert = c->cert_file && c->cert_file[0], key = c->key_file && c->key_file[0];
    int any = cert || key || (c->ca_cert_file && c->ca_cert_file[0]) ||
              (c->server_name && c->server_name[0]);
    if (!c->on && any) {
        snprintf(err, errlen, "worker-tls-* options need worker-tls yes");
        return -1;
    }
    if (cert != key) {
        snprintf(err, errlen, "worker-tls-cert-file and worker-tls-key-file go together");
        return -1;
    }
    return 0;
}

ra_tls *ra_tls_new(const ra_tls_conf *c, char *err, size_t errlen)
{
    if (ra_tls_conf_check(c, err, errlen) != 0)
        return NULL;
    ra_tls *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (c->server_name && c->server_name[0] && (t->server_name = strdup(c->server_name)) == NULL) {
        snprintf(err, errlen, "out of memory");
        free(t);
        return NULL;
    }
    if ((t->ctx = ra_tls_ctx_new(c, err, errlen)) == NULL) {
        free(t->server_name);
        free(t);
        return NULL;
    }
    return t;
}

int ra_tls_reload(ra_tls *t, const ra_tls_conf *c, char *err, size_t errlen)
{
    if (ra_tls_conf_check(c, err, errlen) != 0)
        return -1;
    char *sn = NULL;
    if (c->server_name && c->server_name[0] && (sn = strdup(c->server_name)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    SSL_CTX *ctx = ra_tls_ctx_new(c, err, errlen);
    if (ctx == NULL) {
        free(sn);
        return -1;
    }
    SSL_CTX_free(t->ctx);       /* live connections hold their own references */
    t->ctx = ctx;
    free(t->server_name);
    t->server_name = sn;
    return 0;
}

void ra_tls_free(ra_tls *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    free(t->server_name);
    free(t);
}

/* Sets the context's error to why (as hiredis's own errors: c->err, c->errstr, and
 * their copies ac->err, ac->errstr that callbacks read). */
static void ra_tls_set_error(redisAsyncContext *ac, const char *why)
{
    redisContext *c = &ac->c;
    size_t n = strlen(why);
    if (n >= sizeof(c->errstr))
        n = sizeof(c->errstr) - 1;      /* hiredis's errstr is 128 bytes */
    c->err = REDIS_ERR_IO;
    memcpy(c->errstr, why, n);
    c->errstr[n] = '\0';
    ac->err = c->err;
    ac->errstr = c->errstr;
}

/* The connection failed with why: before the handshake completed, the connect callback
 * gets REDIS_ERR and the context is freed; after, hiredis disconnects it with the error
 * (pending callbacks get NULL, the disconnect callback REDIS_ERR). The context and
 * conn are gone on return. */
static void ra_tls_fail(ra_tls_conn *conn, const char *why)
{
    redisAsyncContext *ac = conn->ac;
    ra_tls_set_error(ac, why);
    if (!conn->ready) {
        if (ac->onConnect)
            ac->onConnect(ac, REDIS_ERR);
        redisAsyncFree(ac);
        return;
    }
    redisAsyncHandleRead(ac);   /* reads nothing: the error disconnects the context */
}

/* Moves c->obuf into the bufferevent (one TLS record for all the commands of a loop
 * pass rather than one per command, as hiredis writes its socket once per pass). */
static void ra_tls_on_flush(evutil_socket_t fd, short what, void *arg)
{
    ra_tls_conn *conn = arg;
    redisContext *c = &conn->ac->c;
    size_t n = sdslen(c->obuf);
    (void)fd;
    (void)what;
    conn->flush_pending = 0;
    if (n == 0)
        return;
    if (bufferevent_write(conn->bev, c->obuf, n) != 0) {
        /* out of memory: the bytes stay in c->obuf for the next write */
        log_warn_rl("TLS connection to %s: cannot queue %zu bytes", conn->addr, n);
        return;
    }
    sdsclear(c->obuf);
}

/* ev.addWrite: hiredis appended commands to c->obuf; once the handshake completed they
 * move to the bufferevent at the end of this loop pass (before, they wait). */
static void ra_tls_add_write(void *priv)
{
    ra_tls_conn *conn = priv;
    if (!conn->ready || conn->flush_pending)
        return;
    conn->flush_pending = 1;
    event_active(conn->flush_ev, EV_TIMEOUT, 1);
}

static void ra_tls_nop(void *priv)
{
    (void)priv;
}

/* ev.cleanup: hiredis frees the context; the transport goes with it. */
static void ra_tls_cleanup(void *priv)
{
    ra_tls_conn *conn = priv;
    if (conn->tcp_ev)
        event_free(conn->tcp_ev);
    if (conn->flush_ev)
        event_free(conn->flush_ev);     /* deletes it when active */
    if (conn->bev)
        bufferevent_free(conn->bev);        /* frees the SSL, closes the dup */
    if (conn->ctx)
        SSL_CTX_free(conn->ctx);
    conn->ac->ev.data = NULL;
    free(conn);
}

/* Replies: the input goes to hiredis's reader, then its callbacks run. */
static void ra_tls_on_read(struct bufferevent *bev, void *arg)
{
    ra_tls_conn *conn = arg;
    redisContext *c = &conn->ac->c;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t n;
    while ((n = evbuffer_get_contiguous_space(in)) > 0) {
        const char *p = (const char *)evbuffer_pullup(in, (ev_ssize_t)n);
        if (p == NULL || redisReaderFeed(c->reader, p, n) != REDIS_OK)
            break;      /* a reader error: redisProcessCallbacks disconnects */
        evbuffer_drain(in, n);
    }
    redisProcessCallbacks(conn->ac);        /* may free the context and conn */
}

/* Why a TLS connection failed, into buf: the certificate check's result, OpenSSL's
 * error, or whether the connection failed or was closed. */
static void ra_tls_reason(ra_tls_conn *conn, short what, char *buf, size_t cap)
{
    char ossl[200] = "";
    unsigned long e;
    /* libevent queues OpenSSL's errors, and for a closed or failed socket the bare
     * SSL_get_error code (library 0), which says nothing more than the socket does */
    while ((e = bufferevent_get_openssl_error(conn->bev)) != 0)
        if (!ossl[0] && ERR_GET_LIB(e) != 0)
            ERR_error_string_n(e, ossl, sizeof(ossl));
    SSL *ssl = bufferevent_openssl_get_ssl(conn->bev);
    long vr = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
    /* TLS 1.3 completes the client's handshake before the server checks the client's
     * certificate: a worker that wants one closes the connection right after */
    const char *hint = ssl && SSL_get_certificate(ssl) == NULL ?
        " (no client certificate sent)" : "";
    if (vr != X509_V_OK)
        snprintf(buf, cap, "TLS: the worker's certificate was refused: %s",
                 X509_verify_cert_error_string(vr));
    else if (ossl[0])
        snprintf(buf, cap, "TLS: %s%s", ossl, hint);
    else if (what & BEV_EVENT_ERROR)    /* errno is stale by now (deferred callback) */
        snprintf(buf, cap, "TLS: the connection failed%s%s",
                 conn->ready ? "" : " during the handshake", hint);
    else
        snprintf(buf, cap, "TLS: connection closed by the worker%s%s",
                 conn->ready ? "" : " during the handshake", hint);
}

static void ra_tls_on_event(struct bufferevent *bev, short what, void *arg)
{
    ra_tls_conn *conn = arg;
    redisAsyncContext *ac = conn->ac;
    (void)bev;
    if (what & BEV_EVENT_CONNECTED) {
        conn->ready = 1;
        ac->c.flags |= REDIS_CONNECTED;
        if (ac->onConnect)
            ac->onConnect(ac, REDIS_OK);    /* queues commands: ra_tls_add_write */
        ra_tls_add_write(conn);
        return;
    }
    if (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF)) {
        char why[300];
        ra_tls_reason(conn, what, why, sizeof(why));
        ra_tls_fail(conn, why);     /* the caller's callbacks log why */
    }
}

/* Is s an IPv4 or IPv6 address literal? */
static int ra_tls_is_ip(const char *s)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* The TCP connection is up (or failed): start the TLS handshake on a dup of it. */
static void ra_tls_on_tcp(evutil_socket_t fd, short what, void *arg)
{
    ra_tls_conn *conn = arg;
    char why[300];
    (void)what;
    event_free(conn->tcp_ev);
    conn->tcp_ev = NULL;
    int serr = 0;
    socklen_t slen = sizeof(serr);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &serr, &slen) != 0)
        serr = errno;
    if (serr == EINPROGRESS) {
        conn->tcp_ev = event_new(conn->base, fd, EV_WRITE, ra_tls_on_tcp, conn);
        if (conn->tcp_ev && event_add(conn->tcp_ev, NULL) == 0)
            return;
        serr = ENOMEM;
    }
    if (serr != 0) {
        snprintf(why, sizeof(why), "%s", strerror(serr));
        ra_tls_fail(conn, why);
        return;
    }
    SSL *ssl = SSL_new(conn->ctx);
    int dfd = ssl ? dup(fd) : -1;
    if (ssl == NULL || dfd < 0) {
        snprintf(why, sizeof(why), "TLS: %s", ssl ? strerror(errno) : "out of memory");
        SSL_free(ssl);
        ra_tls_fail(conn, why);
        return;
    }
    SSL_CTX_free(conn->ctx);    /* the SSL holds its own reference */
    conn->ctx = NULL;
    if (ra_tls_is_ip(conn->name)) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), conn->name);
    } else {
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        SSL_set1_host(ssl, conn->name);
        SSL_set_tlsext_host_name(ssl, conn->name);
    }
    conn->bev = bufferevent_openssl_socket_new(conn->base, dfd, ssl, BUFFEREVENT_SSL_CONNECTING,
                                               BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    if (conn->bev == NULL) {
        SSL_free(ssl);
        close(dfd);
        ra_tls_fail(conn, "TLS: cannot create the connection (out of memory)");
        return;
    }
    bufferevent_openssl_set_allow_dirty_shutdown(conn->bev, 1);
    bufferevent_setcb(conn->bev, ra_tls_on_read, NULL, ra_tls_on_event, conn);
    bufferevent_enable(conn->bev, EV_READ | EV_WRITE);
}

redisAsyncContext *ra_connect_tls(struct event_base *base, const char *host, int port,
                                  ra_tls *tls, void *data, redisConnectCallback *on_connect,
                                  redisDisconnectCallback *on_disconnect, char *err,
                                  size_t errlen)
{
    if (tls == NULL)
        return ra_connect(base, host, port, data, on_connect, on_disconnect, err, errlen);
    ra_tls_conn *conn = calloc(1, sizeof(*conn));
    if (conn == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    redisAsyncContext *ac = redisAsyncConnect(host, port);
    if (ac == NULL) {
        free(conn);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (ac->err) {
        snprintf(err, errlen, "cannot connect: %s", ac->errstr);
        redisAsyncFree(ac);
        free(conn);
        return NULL;
    }
    conn->ac = ac;
    conn->base = base;
    snprintf(conn->name, sizeof(conn->name), "%s", tls->server_name ? tls->server_name : host);
    snprintf(conn->addr, sizeof(conn->addr), "%s:%d", host, port);
    conn->tcp_ev = event_new(base, ac->c.fd, EV_WRITE, ra_tls_on_tcp, conn);
    conn->flush_ev = event_new(base, -1, 0, ra_tls_on_flush, conn);
    if (conn->tcp_ev == NULL || conn->flush_ev == NULL || event_add(conn->tcp_ev, NULL) != 0) {
        if (conn->tcp_ev)
            event_free(conn->tcp_ev);
        if (conn->flush_ev)
            event_free(conn->flush_ev);
        redisAsyncFree(ac);
        free(conn);
        snprintf(err, errlen, "cannot attach to the event loop");
        return NULL;
    }
    SSL_CTX_up_ref(tls->ctx);
    conn->ctx = tls->ctx;
    ac->data = data;
    hiredis_guard(ac);
    ac->c.reader->maxbuf = RA_READ_BUF_KEEP;
    ac->ev.data = conn;
    ac->ev.addRead = ra_tls_nop;
    ac->ev.delRead = ra_tls_nop;
    ac->ev.addWrite = ra_tls_add_write;
    ac->ev.delWrite = ra_tls_nop;
    ac->ev.cleanup = ra_tls_cleanup;
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    return ac;
}
