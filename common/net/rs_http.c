/* rs_http.c: the HTTP side of the metrics endpoint (rs_metrics.c builds the text): a
 * small one-request-per-connection server on its own listener, bounded everywhere.
 *   - at most RS_METRICS_MAX_CONNS connections; past it the connection is answered 503
 *     and closed at once;
 *   - the whole request (line and headers, at most RS_HTTP_MAX_HEAD bytes) must arrive
 *     within RS_METRICS_DEADLINE_MS of the accept, however slowly it trickles;
 *   - when the server has a password, every scrape presents it: "Authorization:
 *     Bearer PASSWORD" or "Authorization: Basic base64(ANYUSER:PASSWORD)"; else 401.
 *     wrong passwords take the server's wrong-password tokens (rs_guard.c), and an
 *     address without a token gets 429 without a check;
 *   - without a password it refuses to listen on an address that is not loopback;
 *   - with metrics-tls it speaks HTTPS (rs_tls.c: the TLS port's context, so the same
 *     certificate, client certificates and rotation); the handshake is inside the
 *     same deadline;
 *   - accept() failures (EMFILE, ENFILE) pause the listener for a moment, as Redis does.
 * One response, then the connection closes (Connection: close). */
#include "rs_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "log.h"
#include "rasync.h"

typedef struct rs_mconn rs_mconn;

struct rs_metrics {
    rserver *s;
    struct evconnlistener *lis;
    struct event *retry;            /* re-enables accepting after an accept() failure */
    unsigned port;
    void (*extra)(void *ctx, resp_buf *b);
    void *ctx;
    rs_mconn *conns;
    unsigned nconns;
};

struct rs_mconn {
    rs_metrics *m;
    struct bufferevent *bev;
    struct event *deadline;
    char addr[64];
    int answered;                   /* the response is queued: close once it is sent */
    rs_mconn *prev, *next;
};

/* ---- Listeners ---- */

void rs_accept_pause(struct evconnlistener *lis, struct event *retry, const char *what)
{
    int e = EVUTIL_SOCKET_ERROR();
    struct timeval tv = ra_tv_ms(RS_ACCEPT_PAUSE_MS);
    log_error_rl("%s: accept failed: %s; not accepting for %d ms%s", what,
                 evutil_socket_error_to_string(e), RS_ACCEPT_PAUSE_MS,
                 e == EMFILE || e == ENFILE
                     ? " (out of file descriptors: raise the limit, LimitNOFILE or ulimit -n, "
                       "or lower max-clients)" : "");
    evconnlistener_disable(lis);
    evtimer_add(retry, &tv);
}

struct evconnlistener *rs_listen(struct event_base *base, const char *host, unsigned port,
                                 void (*cb)(struct evconnlistener *, int, struct sockaddr *,
                                            int, void *),
                                 void *arg, unsigned *bound, char *err, size_t errlen)
{
    struct addrinfo hints, *ai = NULL;
    char portstr[16];
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
    snprintf(portstr, sizeof(portstr), "%u", port);
    int gai = getaddrinfo(host, portstr, &hints, &ai);
    if (gai != 0) {
        snprintf(err, errlen, "bad bind address '%s': %s (give a numeric IPv4 or IPv6 address)",
                 host, gai_strerror(gai));
        return NULL;
    }
    struct evconnlistener *lis = evconnlistener_new_bind(
        base, cb, arg, LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 511,
        ai->ai_addr, (int)ai->ai_addrlen);
    if (lis == NULL) {
        snprintf(err, errlen, "cannot listen on %s port %u: %s", host, port, strerror(errno));
        freeaddrinfo(ai);
        return NULL;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    *bound = port;
    if (getsockname(evconnlistener_get_fd(lis), (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            *bound = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            *bound = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    return lis;
}

/* "ip:port" of the peer (peer != 0) or the local end of socket fd; "?" when unknown
 * (a socket pair, or an error). */
void rs_sock_addr(int fd, int peer, char *buf, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    snprintf(buf, cap, "?");
    if (fd < 0 || (peer ? getpeername(fd, (struct sockaddr *)&ss, &sl)
                        : getsockname(fd, (struct sockaddr *)&ss, &sl)) != 0)
        return;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
        snprintf(buf, cap, "%s:%u", host, port);
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
        snprintf(buf, cap, "%s:%u", host, port);
    }
}

/* ---- Request parsing ---- */

int rs_http_parse(const char *h, size_t n, rs_http_req *rq)
{
    memset(rq, 0, sizeof(*rq));
    const char *end = h + n, *eol = memchr(h, '\n', n);
    if (eol == NULL)
        return -1;
    const char *sp1 = memchr(h, ' ', (size_t)(eol - h));
    if (sp1 == NULL || sp1 == h || (size_t)(sp1 - h) >= sizeof(rq->method))
        return -1;
    memcpy(rq->method, h, (size_t)(sp1 - h));
    const char *path = sp1 + 1;
    const char *sp2 = memchr(path, ' ', (size_t)(eol - path));
    /* the request is not NUL-terminated: compare only bytes before the line's end */
    if (sp2 == NULL || sp2 == path || (size_t)(eol - (sp2 + 1)) < 7 ||
        memcmp(sp2 + 1, "HTTP/1.", 7) != 0)
        return -1;
    rq->path = path;
    rq->pathlen = (size_t)(sp2 - path);
    for (const char *l = eol + 1; l < end; ) {
        const char *le = memchr(l, '\n', (size_t)(end - l));
        if (le == NULL)
            le = end;
        static const char key[] = "authorization:";
        if ((size_t)(le - l) > sizeof(key) - 1 && strncasecmp(l, key, sizeof(key) - 1) == 0) {
            const char *v = l + sizeof(key) - 1, *ve = le;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            rq->auth = v;
            rq->authlen = (size_t)(ve - v);
        }
        l = le + 1;
    }
    return 0;
}

/* Base64 (RFC 4648, padding optional) of in[0..n) into out (cap bytes). Returns the
 * decoded length, or -1 on a bad character or when it does not fit. */
static long rs_b64_decode(const char *in, size_t n, char *out, size_t cap)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned acc = 0, bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n && in[i] != '='; i++) {
        const char *p = in[i] ? strchr(tab, in[i]) : NULL;
        if (p == NULL)
            return -1;
        acc = (acc << 6) | (unsigned)(p - tab);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= cap)
                return -1;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    return (long)o;
}

int rs_http_auth_ok(const char *auth, size_t n, const char *password)
{
    char dec[1024];
    if (auth == NULL)
        return 0;
    if (n > 7 && strncasecmp(auth, "Bearer ", 7) == 0)
        return rs_secret_equal(auth + 7, n - 7, password);
    if (n > 6 && strncasecmp(auth, "Basic ", 6) == 0) {
        long len = rs_b64_decode(auth + 6, n - 6, dec, sizeof dec);
        const char *colon = len > 0 ? memchr(dec, ':', (size_t)len) : NULL;
        return colon && rs_secret_equal(colon + 1, (size_t)(dec + len - colon - 1), password);
    }
    return 0;
}

/* ---- Connections ---- */

static void rs_mconn_close(rs_mconn *mc)
{
    rs_metrics *m = mc->m;
    if (mc->prev)
        mc->prev->next = mc->next;
    else
        m->conns = mc->next;
    if (mc->next)
        mc->next->prev = mc->prev;
    m->nconns--;
    bufferevent_free(mc->bev);
    event_free(mc->deadline);
    free(mc);
}

/* Queue the one response and close once it is sent. */
static void rs_mconn_reply(rs_mconn *mc, int code, const char *reason, const char *extra_hdr,
                           const char *body, size_t len)
{
    struct evbuffer *out = bufferevent_get_output(mc->bev);
    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s"
                        "Content-Type: %s\r\n\r\n", code, reason, len, extra_hdr ? extra_hdr : "",
                        code == 200 ? "text/plain; version=0.0.4; charset=utf-8"
                                    : "text/plain; charset=utf-8");
    evbuffer_add(out, body, len);
    mc->answered = 1;
    bufferevent_disable(mc->bev, EV_READ);
}

static void rs_mconn_text(rs_mconn *mc, int code, const char *reason, const char *hdr,
                          const char *text)
{
    rs_mconn_reply(mc, code, reason, hdr, text, strlen(text));
}

/* A whole request head arrived: answer it. */
static void rs_mconn_serve(rs_mconn *mc, const char *head, size_t n)
{
    rs_metrics *m = mc->m;
    rs_http_req rq;
    if (rs_http_parse(head, n, &rq) != 0) {
        rs_mconn_text(mc, 400, "Bad Request", NULL, "bad request\n");
        return;
    }
    if (m->s->password && rs_guard_auth_wait_ms(m->s, mc->addr) > 0) {
        rs_mconn_text(mc, 429, "Too Many Requests", "Retry-After: 1\r\n",
                      "too many wrong passwords from this address; retry later\n");
        return;
    }
    if (m->s->password && !rs_http_auth_ok(rq.auth, rq.authlen, m->s->password)) {
        if (rq.auth)
            rs_guard_auth_failed(m->s, mc->addr);
        rs_mconn_text(mc, 401, "Unauthorized", "WWW-Authenticate: Basic realm=\"simhash\"\r\n",
                      "the metrics need the server's password (Authorization: Bearer or "
                      "Basic)\n");
        return;
    }
    if (strcmp(rq.method, "GET") != 0 && strcmp(rq.method, "HEAD") != 0) {
        rs_mconn_text(mc, 405, "Method Not Allowed", NULL, "only GET /metrics\n");
        return;
    }
    if (!((rq.pathlen == 8 || (rq.pathlen > 8 && rq.path[8] == '?')) &&
          strncmp(rq.path, "/metrics", 8) == 0)) {
        rs_mconn_text(mc, 404, "Not Found", NULL, "not found: the metrics are at /metrics\n");
        return;
    }
    resp_buf b;
    resp_buf_init(&b, 0);
    rs_metrics_text(m->s, &b, m->extra, m->ctx);
    if (b.overflow)
        rs_mconn_text(mc, 500, "Internal Server Error", NULL, "out of memory\n");
    else
        rs_mconn_reply(mc, 200, "OK", NULL, strcmp(rq.method, "HEAD") ? b.data : "",
                       strcmp(rq.method, "HEAD") ? b.len : 0);
    resp_buf_free(&b);
}

static void rs_mconn_on_read(struct bufferevent *bev, void *arg)
{
    rs_mconn *mc = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (mc->answered)
        return;
    struct evbuffer_ptr p = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    size_t len = p.pos >= 0 ? (size_t)p.pos + 4 : 0;
    if (len == 0) {
        p = evbuffer_search(in, "\n\n", 2, NULL);
        len = p.pos >= 0 ? (size_t)p.pos + 2 : 0;
    }
    if (len == 0 || len > RS_HTTP_MAX_HEAD) {
        if (evbuffer_get_length(in) > RS_HTTP_MAX_HEAD)
            rs_mconn_text(mc, 431, "Request Header Fields Too Large", NULL, "request too large\n");
        return;
    }
    rs_mconn_serve(mc, (const char *)evbuffer_pullup(in, (ev_ssize_t)len), len);
}

static void rs_mconn_on_write(struct bufferevent *bev, void *arg)
{
    rs_mconn *mc = arg;
    if (mc->answered && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        rs_mconn_close(mc);
}

static void rs_mconn_on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        rs_mconn_close(arg);
}

static void rs_mconn_on_deadline(evutil_socket_t fd, short what, void *arg)
{
    rs_mconn *mc = arg;
    (void)fd;
    (void)what;
    mc->m->s->st.metrics_timeouts++;
    rs_mconn_close(mc);
}

static void rs_metrics_on_accept(struct evconnlistener *lis, evutil_socket_t fd,
                                 struct sockaddr *sa, int salen, void *arg)
{
    rs_metrics *m = arg;
    (void)lis;
    (void)sa;
    (void)salen;
    if (m->nconns >= RS_METRICS_MAX_CONNS) {
        static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                   "Connection: close\r\n\r\n";
        m->s->st.metrics_rejected++;
        if (write(fd, busy, sizeof(busy) - 1) < 0) {
            /* best effort */
        }
        evutil_closesocket(fd);
        return;
    }
    rs_mconn *mc = calloc(1, sizeof(*mc));
    struct timeval tv = ra_tv_ms(RS_METRICS_DEADLINE_MS);
    if (mc == NULL ||
        (mc->bev = m->s->opt.limits.tls.metrics
                       ? rs_tls_bev(m->s, fd)       /* HTTPS: metrics-tls */
                       : bufferevent_socket_new(m->s->base, fd, BEV_OPT_CLOSE_ON_FREE)) == NULL ||
        (mc->deadline = evtimer_new(m->s->base, rs_mconn_on_deadline, mc)) == NULL) {
        if (mc && mc->bev)
            bufferevent_free(mc->bev);
        else
            evutil_closesocket(fd);
        free(mc);
        return;
    }
    mc->m = m;
    rs_sock_addr(fd, 1, mc->addr, sizeof mc->addr);
    mc->next = m->conns;
    if (m->conns)
        m->conns->prev = mc;
    m->conns = mc;
    m->nconns++;
    evtimer_add(mc->deadline, &tv);
    bufferevent_setwatermark(mc->bev, EV_READ, 0, RS_HTTP_MAX_HEAD + 1);
    bufferevent_setcb(mc->bev, rs_mconn_on_read, rs_mconn_on_write, rs_mconn_on_event, mc);
    bufferevent_enable(mc->bev, EV_READ | EV_WRITE);
}

static void rs_metrics_on_accept_error(struct evconnlistener *lis, void *arg)
{
    rs_metrics *m = arg;
    rs_accept_pause(lis, m->retry, "metrics");
}

static void rs_metrics_on_retry(evutil_socket_t fd, short what, void *arg)
{
    rs_metrics *m = arg;
    (void)fd;
    (void)what;
    evconnlistener_enable(m->lis);
}

/* 1 when host is a loopback address (127.0.0.0/8, ::1). */
static int rs_is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

rs_metrics *rs_metrics_new(rserver *s, const char *bind, unsigned port,
                           void (*extra)(void *ctx, resp_buf *b), void *ctx, char *err,
                           size_t errlen)
{
    const char *host = bind && bind[0] ? bind : "127.0.0.1";
    if (s->password == NULL && !rs_is_loopback(host)) {
        snprintf(err, errlen, "metrics: refusing to listen on %s without a password: the "
                 "metrics show the deployment to anyone who connects; set password-file "
                 "(scrapes then present it) or use metrics-bind 127.0.0.1", host);
        return NULL;
    }
    rs_metrics *m = calloc(1, sizeof(*m));
    if (m == NULL || (m->retry = evtimer_new(s->base, rs_metrics_on_retry, m)) == NULL) {
        snprintf(err, errlen, "out of memory");
        free(m);
        return NULL;
    }
    m->s = s;
    m->extra = extra;
    m->ctx = ctx;
    m->lis = rs_listen(s->base, host, port, rs_metrics_on_accept, m, &m->port, err, errlen);
    if (m->lis == NULL) {
        event_free(m->retry);
        free(m);
        return NULL;
    }
    evconnlistener_set_error_cb(m->lis, rs_metrics_on_accept_error);
    return m;
}

void rs_metrics_free(rs_metrics *m)
{
    if (m == NULL)
        return;
    while (m->conns)
        rs_mconn_close(m->conns);
    evconnlistener_free(m->lis);
    event_free(m->retry);
    free(m);
}

unsigned rs_metrics_port(const rs_metrics *m)
{
    return m->port;
}
