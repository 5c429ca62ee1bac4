/* rs_tls.c: TLS on the RESP listeners (OpenSSL, libevent's bufferevent_openssl).
 *
 * The server framework is built on bufferevents, so a TLS connection is an OpenSSL
 * socket bufferevent in place of the plain one: the request path (parser, queues,
 * limits) reads and writes the same evbuffers and does not know the difference.
 * One SSL_CTX serves new connections; SIGHUP builds a new one from the files and swaps
 * it in when it loads (each live SSL holds a reference to the context it began with,
 * so live connections keep theirs). Never below TLS 1.2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "log.h"
#include "rs_int.h"

struct rs_tls {
    SSL_CTX *ctx;                       /* for new connections */
    unsigned long long reloads;         /* SIGHUP reloads that loaded */
    unsigned long long reload_errors;   /* SIGHUP reloads refused */
    char last_reload[256];              /* "ok", "failed: why", "" (none yet) */
};

/* tls-auth-clients: SSL_VERIFY_* of its value, or -1 when unknown. NULL: yes. */
static int rs_tls_verify_mode(const char *v)
{
    if (v == NULL || strcmp(v, "yes") == 0)
        return SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    if (strcmp(v, "optional") == 0)
        return SSL_VERIFY_PEER;
    if (strcmp(v, "no") == 0)
        return SSL_VERIFY_NONE;
    return -1;
}

/* tls-protocols: the lowest and highest version named (*min, *max). Returns 0, or -1
 * with err set (an unknown name, or one below TLS 1.2). */
static int rs_tls_versions(const char *v, int *min, int *max, char *err, size_t errlen)
{
    static const struct { const char *name; int ver; } names[] = {
        {"TLSv1.2", TLS1_2_VERSION}, {"TLSv1.3", TLS1_3_VERSION},
    };
    *min = TLS1_2_VERSION;
    *max = TLS1_3_VERSION;
    if (v == NULL)
        return 0;
    int lo = 0, hi = 0;
    const char *p = v;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        size_t n = strcspn(p, " \t,");
        if (n == 0)
            break;
        int ver = 0;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (strlen(names[i].name) == n && strncasecmp(p, names[i].name, n) == 0)
                ver = names[i].ver;
        if (ver == 0) {
            snprintf(err, errlen, "tls-protocols: '%.*s' is not TLSv1.2 or TLSv1.3 (older "
                     "versions are refused)", (int)(n > 32 ? 32 : n), p);
            return -1;
        }
        if (lo == 0 || ver < lo)
            lo = ver;
        if (ver > hi)
            hi = ver;
        p += n;
    }
    if (lo == 0) {
        snprintf(err, errlen, "tls-protocols: empty (name TLSv1.2 and/or TLSv1.3)");
        return -1;
    }
    *min = lo;
    *max = hi;
    return 0;
}

int rs_tls_conf_check(const rs_tls_conf *c, char *err, size_t errlen)
{
    int lo, hi;
    if (rs_tls_verify_mode(c->auth_clients) < 0) {
        snprintf(err, errlen, "tls-auth-clients: '%.32s' is not yes, no or optional",
                 c->auth_clients);
        return -1;
    }
    if (rs_tls_versions(c->protocols, &lo, &hi, err, errlen) != 0)
        return -1;
    if (c->metrics && c->port == 0) {
        snprintf(err, errlen, "metrics-tls needs a tls-port (its certificate and settings)");
        return -1;
    }
    if (c->port == 0)
        return 0;
    if (c->cert_file == NULL || c->key_file == NULL) {
        snprintf(err, errlen, "tls-port needs tls-cert-file and tls-key-file");
        return -1;
    }
    if (rs_tls_verify_mode(c->auth_clients) != SSL_VERIFY_NONE && c->ca_cert_file == NULL) {
        snprintf(err, errlen, "tls-auth-clients %s needs tls-ca-cert-file (the CA of the "
                 "client certificates), or set tls-auth-clients no",
                 c->auth_clients ? c->auth_clients : "yes");
        return -1;
    }
    return 0;
}

/* OpenSSL's reason for the last failure (its error queue, emptied), after what. */
static void rs_tls_ssl_error(char *err, size_t errlen, const char *what)
{
    unsigned long e, last = 0;
    while ((e = ERR_get_error()) != 0)
        last = last ? last : e;         /* the first is the root cause */
    char why[200] = "unknown error";
    if (last)
        ERR_error_string_n(last, why, sizeof(why));
    snprintf(err, errlen, "%s: %s", what, why);
}

/* OpenSSL's passphrase callback: the passphrase (userdata) into buf (size bytes).
 * Returns its length, or 0 (no passphrase: an encrypted key fails to load instead of
 * OpenSSL's default of asking on the terminal). */
static int rs_tls_pass_cb(char *buf, int size, int rwflag, void *userdata)
{
    (void)rwflag;
    if (userdata == NULL || size <= 0)
        return 0;
    size_t n = strlen(userdata);
    if (n >= (size_t)size)
        return 0;
    memcpy(buf, userdata, n + 1);
    return (int)n;
}

/* A server context from c's files and settings. Returns it (the caller owns it), or
 * NULL with err set. */
static SSL_CTX *rs_tls_ctx_new(const rs_tls_conf *c, char *err, size_t errlen)
{
    char what[600];
    int lo, hi;
    if (rs_tls_conf_check(c, err, errlen) != 0 ||
        rs_tls_versions(c->protocols, &lo, &hi, err, errlen) != 0)
        return NULL;
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        rs_tls_ssl_error(err, errlen, "TLS context");
        return NULL;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 (c->prefer_server_ciphers ? SSL_OP_CIPHER_SERVER_PREFERENCE : 0));
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    /* sessions resumed across a verified handshake need an id context */
    static const unsigned char sid[] = "simhash";
    if (!SSL_CTX_set_min_proto_version(ctx, lo) || !SSL_CTX_set_max_proto_version(ctx, hi) ||
        !SSL_CTX_set_session_id_context(ctx, sid, sizeof(sid) - 1)) {
        rs_tls_ssl_error(err, errlen, "tls-protocols");
        goto fail;
    }
    if (c->ciphers && !SSL_CTX_set_cipher_list(ctx, c->ciphers)) {
        snprintf(what, sizeof(what), "tls-ciphers '%.100s'", c->ciphers);
        rs_tls_ssl_error(err, errlen, what);
        goto fail;
    }
    if (c->ciphersuites && !SSL_CTX_set_ciphersuites(ctx, c->ciphersuites)) {
        snprintf(what, sizeof(what), "tls-ciphersuites '%.100s'", c->ciphersuites);
        rs_tls_ssl_error(err, errlen, what);
        goto fail;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, c->cert_file) != 1) {
        snprintf(what, sizeof(what), "tls-cert-file %.500s", c->cert_file);
        rs_tls_ssl_error(err, errlen, what);
        goto fail;
    }
    /* the passphrase is the configuration's string: the context must not keep it */
    SSL_CTX_set_default_passwd_cb(ctx, rs_tls_pass_cb);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, c->key_pass);
    int key_ok = SSL_CTX_use_PrivateKey_file(ctx, c->key_file, SSL_FILETYPE_PEM);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL);
    if (key_ok != 1) {
        if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH)
            snprintf(what, sizeof(what), "tls-key-file %.250s does not match tls-cert-file "
                     "%.250s", c->key_file, c->cert_file);
        else
            snprintf(what, sizeof(what), "tls-key-file %.500s", c->key_file);
        rs_tls_ssl_error(err, errlen, what);
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(what, sizeof(what), "tls-key-file %.250s does not match tls-cert-file %.250s",
                 c->key_file, c->cert_file);
        rs_tls_ssl_error(err, errlen, what);
        goto fail;
    }
    if (c->ca_cert_file) {
        STACK_OF(X509_NAME) *names = NULL;
        if (SSL_CTX_load_verify_locations(ctx, c->ca_cert_file, NULL) != 1 ||
            (names = SSL_load_client_CA_file(c->ca_cert_file)) == NULL) {
            snprintf(what, sizeof(what), "tls-ca-cert-file %.500s", c->ca_cert_file);
            rs_tls_ssl_error(err, errlen, what);
            goto fail;
        }
        SSL_CTX_set_client_CA_list(ctx, names);     /* takes names */
    }
    SSL_CTX_set_verify(ctx, rs_tls_verify_mode(c->auth_clients), NULL);
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

int rs_tls_files_check(const rs_tls_conf *c, char *err, size_t errlen)
{
    if (c->port == 0)
        return rs_tls_conf_check(c, err, errlen);
    SSL_CTX *ctx = rs_tls_ctx_new(c, err, errlen);
    if (ctx == NULL)
        return -1;
    SSL_CTX_free(ctx);
    return 0;
}

rs_tls *rs_tls_new(const rs_tls_conf *c, char *err, size_t errlen)
{
    rs_tls *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if ((t->ctx = rs_tls_ctx_new(c, err, errlen)) == NULL) {
        free(t);
        return NULL;
    }
    return t;
}

void rs_tls_free(rs_tls *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    free(t);
}

int rs_tls_reload(rserver *s, const rs_tls_conf *c)
{
    char err[800];
    rs_tls *t = s->tls;
    if (t == NULL) {
        if (c->port)
            log_warn("SIGHUP: tls-port %u is set but the server started without TLS: a "
                     "restart starts the TLS listener", c->port);
        return 0;
    }
    if (c->port == 0) {
        t->reload_errors++;
        snprintf(t->last_reload, sizeof(t->last_reload),
                 "failed: tls-port removed from the configuration (needs a restart)");
        log_error("SIGHUP: TLS not reloaded: %s", t->last_reload + 8);
        return -1;
    }
    SSL_CTX *ctx = rs_tls_ctx_new(c, err, sizeof(err));
    if (ctx == NULL) {
        t->reload_errors++;
        snprintf(t->last_reload, sizeof(t->last_reload), "failed: %.240s", err);
        log_error("SIGHUP: TLS certificate, key and CA not reloaded, the running ones stay: "
                  "%s", err);
        return -1;
    }
    SSL_CTX_free(t->ctx);           /* live connections hold their own reference */
    t->ctx = ctx;
    t->reloads++;
    snprintf(t->last_reload, sizeof(t->last_reload), "ok");
    log_info("SIGHUP: TLS certificate, key and CA reloaded from %s, %s%s%s; new connections "
             "use them", c->cert_file, c->key_file, c->ca_cert_file ? ", " : "",
             c->ca_cert_file ? c->ca_cert_file : "");
    return 0;
}

struct bufferevent *rs_tls_bev(rserver *s, int fd)
{
    SSL *ssl = SSL_new(s->tls->ctx);
    if (ssl == NULL)
        return NULL;
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        s->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        SSL_free(ssl);
        return NULL;
    }
    /* a peer that closes without close_notify ends like a plain one (EOF) */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

void rs_tls_handshake_failed(rs_client *c)
{
    char why[200] = "connection closed";
    unsigned long e = bufferevent_get_openssl_error(c->bev), first = e;
    while (e)
        e = bufferevent_get_openssl_error(c->bev);    /* empties the queue */
    if (first)
        ERR_error_string_n(first, why, sizeof(why));
    if (c->s)
        c->s->st.tls_handshake_failures++;
    log_warn_rl("client %llu (%s): TLS handshake failed: %s", (unsigned long long)c->id,
                c->addr, why);
}

void rs_tls_metrics(const rserver *s, resp_buf *b)
{
    const rs_tls *t = s->tls;
    if (t == NULL)
        return;
    rs_prom_family(b, "simhash_tls_handshakes_total", "counter",
                   "TLS handshakes on the TLS port, by result: ok, failed (refused or broken), "
                   "timeout (not done within request-timeout).");
    resp_buf_printf(b,
                    "simhash_tls_handshakes_total{result=\"ok\"} %llu\n"
                    "simhash_tls_handshakes_total{result=\"failed\"} %llu\n"
                    "simhash_tls_handshakes_total{result=\"timeout\"} %llu\n",
                    s->st.tls_connections, s->st.tls_handshake_failures,
                    s->st.tls_handshake_timeouts);
    rs_prom_family(b, "simhash_tls_reloads_total", "counter",
                   "SIGHUP reloads of the TLS certificate, key and CA, by result: ok, failed "
                   "(the running ones stay).");
    resp_buf_printf(b,
                    "simhash_tls_reloads_total{result=\"ok\"} %llu\n"
                    "simhash_tls_reloads_total{result=\"failed\"} %llu\n",
                    t->reloads, t->reload_errors);
}

void rs_tls_info(const rserver *s, resp_buf *b)
{
    const rs_tls *t = s->tls;
    resp_buf_printf(b,
                    "tls_port:%u\r\ntls_connections:%llu\r\ntls_handshake_failures:%llu\r\n"
                    "tls_handshake_timeouts:%llu\r\ntls_reloads:%llu\r\n"
                    "tls_reload_errors:%llu\r\ntls_last_reload:%s\r\n",
                    s->tls_port, s->st.tls_connections, s->st.tls_handshake_failures,
                    s->st.tls_handshake_timeouts, t ? t->reloads : 0ull,
                    t ? t->reload_errors : 0ull,
                    t && t->last_reload[0] ? t->last_reload : "none");
}
