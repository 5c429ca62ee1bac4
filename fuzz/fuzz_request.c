/* fuzz_request.c: libFuzzer target for the coordinator's request handling without a
 * network: the bytes of one input are what one client sends. They go through the RESP
 * server framework's connection code (parser, limits, ordered queue, AUTH, dispatch)
 * into the coordinator's SIMHASH.* command table, over a libevent bufferevent pair
 * instead of a socket.
 *
 * The framework's connection internals are static in common/net/rserver.c, so this file
 * includes that source (and is linked without the library's copy of it) to create a
 * client with rs_client_new, as rs_on_accept does; nothing in rserver.c changes for fuzzing.
 *
 * The first input byte picks the setup: bit 0 a password ("pw"), bit 1 complete
 * routing to two shard workers that are "up", bit 2 tiny limits, bit 3 worker
 * replies. Without bit 3 the rest is the client's byte stream and the "up" workers
 * have no connection (commands build their fan-out operation and fail at the first
 * send). With bit 3 (and bit 1), the next two bytes give the length of the client's
 * stream (little-endian) and the bytes after it script the workers' answers: each
 * worker gets a hiredis async context connected to a Unix socket of this process
 * (never read: requests pile up in its output buffer), and replies built from the
 * script (errors, integers, strings, nested arrays, [fp, dist] pairs) are fed into
 * its reader one per pending request, then hiredis runs the callbacks. Contexts
 * still open at the end are freed, which answers their requests with NULL (lost
 * connection). Checks (abort on failure):
 *   - everything written back is a sequence of well-formed RESP values
 *     (hiredis's reader), at most one per request plus the protocol error;
 *   - once the client has closed and the loop is idle, no request is left
 *     unfinished (the client struct holds only the harness's reference). */
#include "../common/net/rserver.c"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <sys/un.h>

#include "coord.h"
#include "perm.h"

static struct event_base *fz_base;
static coord fz_co;
static coord_worker fz_workers[2];
static rserver fz_srv;
static char fz_password[] = "pw";
static int fz_lis = -1;                 /* Unix listener the fake worker contexts connect to */
static char fz_dir[48], fz_sock[100];

/* Not in hiredis 0.14's headers, but exported: run the callbacks of every reply the
 * reader holds. */
void redisProcessCallbacks(redisAsyncContext *ac);

static void fz_drain(void);

static void fz_cleanup_sock(void)
{
    if (fz_sock[0])
        unlink(fz_sock);
    if (fz_dir[0])
        rmdir(fz_dir);
}

/* Listen on a Unix socket in a fresh temporary directory. */
static void fz_listen(void)
{
    struct sockaddr_un sa;
    snprintf(fz_dir, sizeof(fz_dir), "%s", "/tmp/simhash-fuzz.XXXXXX");
    if (mkdtemp(fz_dir) == NULL)
        abort();
    snprintf(fz_sock, sizeof(fz_sock), "%s/w.sock", fz_dir);
    atexit(fz_cleanup_sock);
    fz_lis = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", fz_sock);
    if (fz_lis < 0 || bind(fz_lis, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(fz_lis, 16) != 0)
        abort();
}

static void fz_setup(void)
{
    fz_base = event_base_new();
    if (fz_base == NULL)
        abort();
    char err[256];
    /* warnings (wrong password, protocol errors) would only add noise */
    if (!getenv("FUZZ_VERBOSE") && log_open("/dev/null", err, sizeof(err)) != 0)
        abort();
    coord *co = &fz_co;
    co->base = fz_base;
    co->cfg.blocks = 6;
    co->cfg.distance = 3;
    co->cfg.timeout_ms = 500;
    co->cfg.max_inflight_worker = 10000;
    rs_limits_default(&co->cfg.limits);
    co->cfg.limits.max_arg_bytes = 4096;
    co->cfg.limits.max_req_bytes = 65536;
    co->cfg.limits.max_args = 1024;
    co->cfg.limits.max_pending = 16;
    co->cfg.limits.max_clients = 16;
    co->cfg.limits.max_per_event = 4;
    co->cfg.limits.max_reply_bytes = 1 << 20;
    co->cfg.limits.out_high_watermark = 64 << 10;
    co->cfg.reconnect_max_ms = 2000;
    co->cfg.health_interval_ms = 1000;
    if (perm_set_init(&co->ps, 6, 3, err, sizeof(err)) != 0)
        abort();
    for (unsigned i = 0; i < 2; i++) {
        coord_worker *w = &fz_workers[i];
        w->co = co;
        w->idx = i;
        snprintf(w->addr, sizeof(w->addr), "127.0.0.1:%u", 7100 + i);
        w->have_range = 1;
        w->lo = i == 0 ? 0 : 100;
        w->hi = i == 0 ? 99 : 255;
        w->fingerprints = w->documents = -1;
    }
    co->w = fz_workers;
    co->nw = 2;
    for (int b = 0; b < 256; b++)
        co->route[b] = b < 100 ? 0 : 1;

    fz_srv.base = fz_base;
    fz_srv.opt.name = "simhash-coordinator";
    fz_srv.opt.commands = coord_commands;
    fz_srv.opt.ncommands = coord_ncommands;
    fz_srv.opt.ctx = co;
    fz_srv.port = 7000;
    co->srv = &fz_srv;
    fz_listen();
}

/* hiredis dropped a context (reader error, or freed): forget it. */
static void fz_on_disconnect(const redisAsyncContext *ac, int status)
{
    coord_worker *w = ac->data;
    (void)status;
    if (w)
        w->ac = NULL;
}

/* Give worker w a context that accepts commands but is never written to the socket:
 * connected to the Unix listener, not attached to the event loop. */
static void fz_worker_connect(coord_worker *w)
{
    redisAsyncContext *ac = redisAsyncConnectUnix(fz_sock);
    if (ac == NULL || ac->err)
        abort();
    ac->c.flags |= REDIS_CONNECTED;     /* as if the connect callback had run */
    ac->data = w;
    redisAsyncSetDisconnectCallback(ac, fz_on_disconnect);
    w->ac = ac;
    int fd = accept(fz_lis, NULL, NULL);
    if (fd >= 0)
        close(fd);                      /* nothing is ever read from it */
}

/* ---- Scripted worker replies ---- */

typedef struct fz_script {
    const uint8_t *p;
    size_t n;
} fz_script;

static unsigned fz_byte(fz_script *sc)
{
    if (sc->n == 0)
        return 0;
    sc->n--;
    return *sc->p++;
}

/* Append one RESP value built from the script to b. */
static void fz_gen_reply(fz_script *sc, resp_buf *b, int depth)
{
    static const char *const codes[] = { "ERR", "BUSY", "REDIS", "WRONGSHARD", "TIMEOUT",
                                         "MISMATCH", "X" };
    unsigned t = fz_byte(sc) % 9;
    switch (t) {
    case 0:
        resp_add_error(b, codes[fz_byte(sc) % 7], "worker says %u", fz_byte(sc));
        break;
    case 1: {
        int64_t v = 0;
        for (int i = 0; i < 8; i++)
            v = (int64_t)((uint64_t)v << 8 | fz_byte(sc));
        resp_add_int(b, v);
        break;
    }
    case 2: {
        size_t len = fz_byte(sc) % 24;
        if (len > sc->n)
            len = sc->n;
        resp_add_bulk(b, sc->p, len);
        sc->p += len;
        sc->n -= len;
        break;
    }
    case 3: {
        size_t n = depth < 3 ? fz_byte(sc) % 6 : 0;
        resp_add_array(b, n);
        for (size_t i = 0; i < n; i++)
            fz_gen_reply(sc, b, depth + 1);
        break;
    }
    case 4:
        resp_add_null(b);
        break;
    case 5:
        resp_add_simple(b, "OK");
        break;
    case 6:         /* a fingerprint near 0 (queries of small numbers match it) */
        resp_add_bulk_u64(b, fz_byte(sc));
        break;
    case 7: {       /* SHARD.QUERY shape: [[fp, dist], ...] */
        size_t n = fz_byte(sc) % 5;
        resp_add_array(b, n);
        for (size_t i = 0; i < n; i++) {
            resp_add_array(b, 2);
            resp_add_bulk_u64(b, fz_byte(sc));
            resp_add_int(b, fz_byte(sc) % 5);
        }
        break;
    }
    default: {      /* SHARD.DOCS shape: [[id, ...], ...] */
        size_t n = fz_byte(sc) % 4;
        resp_add_array(b, n);
        for (size_t i = 0; i < n; i++) {
            size_t k = fz_byte(sc) % 3;
            resp_add_array(b, k);
            for (size_t j = 0; j < k; j++) {
                char id[8];
                snprintf(id, sizeof(id), "d%u", fz_byte(sc) % 10);
                resp_add_bulk_str(b, id);
            }
        }
        break;
    }
    }
}

/* Answer pending worker requests from the script, one reply at a time. */
static void fz_run_workers(fz_script *sc)
{
    resp_buf b;
    resp_buf_init(&b, 0);
    for (int guard = 0; sc->n > 0 && guard < 4096; guard++) {
        coord_worker *w = &fz_workers[fz_byte(sc) & 1];
        if (w->ac == NULL || w->ac->replies.head == NULL)
            continue;           /* nothing asked: an unsolicited reply is not scripted */
        resp_buf_clear(&b);
        fz_gen_reply(sc, &b, 0);
        if (b.overflow)
            abort();
        if (getenv("FUZZ_VERBOSE"))
            fprintf(stderr, "worker %u <- %s\n", w->idx, b.data);
        if (redisReaderFeed(w->ac->c.reader, b.data, b.len) != REDIS_OK)
            abort();
        redisProcessCallbacks(w->ac);
        fz_drain();
    }
    resp_buf_free(&b);
}

/* Free the fake contexts: their pending requests are answered NULL (lost). */
static void fz_workers_disconnect(void)
{
    for (unsigned i = 0; i < 2; i++) {
        redisAsyncContext *ac = fz_workers[i].ac;
        if (ac == NULL)
            continue;
        fz_workers[i].ac = NULL;
        ac->onDisconnect = NULL;
        redisAsyncFree(ac);
    }
    fz_drain();
}

/* Apply the setup byte: password, routing, limits. */
static void fz_configure(unsigned mode)
{
    coord *co = &fz_co;
    fz_srv.password = (mode & 1) ? fz_password : NULL;
    co->routing_ok = (mode & 2) != 0;
    for (unsigned i = 0; i < 2; i++) {
        fz_workers[i].health = (mode & 2) ? W_UP : W_CONNECTING;
        fz_workers[i].inflight = 0;
    }
    rs_limits_default(&fz_srv.opt.limits);
    rs_limits *l = &fz_srv.opt.limits;
    l->auth_fail_delay_ms = 0;      /* the harness runs no timers: wrong AUTHs answer at once */
    /* ... and never wait for the wrong-password budget (rs_guard.c), which starts
     * full for every input */
    l->auth_fail_rate_addr = l->auth_fail_rate_total = 1000000;
    rs_guard_free(&fz_srv);
    fz_srv.auth_tokens = l->auth_fail_rate_total;
    fz_srv.auth_refill_ms = ra_now_ms();
    if (mode & 4) {
        l->max_arg_bytes = 64;
        l->max_req_bytes = 256;
        l->max_args = 8;
        l->max_inline_bytes = 128;
        l->max_pending = 2;
        l->max_reply_bytes = 1024;
        l->out_high_watermark = 1024;
        l->max_per_event = 1;
    } else {
        l->max_arg_bytes = co->cfg.limits.max_arg_bytes;
        l->max_req_bytes = co->cfg.limits.max_req_bytes;
        l->max_args = co->cfg.limits.max_args;
        l->max_pending = co->cfg.limits.max_pending;
        l->max_per_event = co->cfg.limits.max_per_event;
    }
}

/* A client on one end of a bufferevent pair, set up by rserver's own rs_client_new as
 * rs_on_accept does for a socket. *peer gets the other end (where replies arrive). */
static rs_client *fz_client_new(struct bufferevent **peer)
{
    rserver *s = &fz_srv;
    struct bufferevent *pair[2];
    if (bufferevent_pair_new(s->base, BEV_OPT_CLOSE_ON_FREE, pair) != 0)
        abort();
    rs_client *c = rs_client_new(s, pair[0]);
    if (c == NULL)
        abort();
    *peer = pair[1];
    bufferevent_enable(*peer, EV_READ | EV_WRITE);
    return c;
}

/* Run the loop until nothing is active (bounded). Pending timers (request deadlines)
 * do not fire: they are far in the future. */
static void fz_drain(void)
{
    event_base_loop(fz_base, EVLOOP_NONBLOCK);
    for (int i = 0; i < 10000; i++) {
        if (event_base_get_num_events(fz_base, EVENT_BASE_COUNT_ACTIVE) == 0)
            break;
        event_base_loop(fz_base, EVLOOP_NONBLOCK);
    }
}

/* One RESP2 or RESP3 value at d[*pos..len) (the types this server writes: + - : $ *
 * and RESP3's % and _), nested at most 64 deep. Returns 0 and advances *pos, or -1
 * (malformed or truncated). hiredis 0.14's reader knows no RESP3, which HELLO 3
 * switches a connection to. */
static int fz_resp_value(const unsigned char *d, size_t len, size_t *pos, int depth)
{
    if (*pos >= len || depth > 64)
        return -1;
    unsigned char t = d[*pos];
    const unsigned char *cr = memchr(d + *pos, '\r', len - *pos);
    if (cr == NULL || (size_t)(cr - d) + 1 >= len || cr[1] != '\n')
        return -1;
    size_t line_end = (size_t)(cr - d) + 2;
    const char *num = (const char *)d + *pos + 1;
    size_t numlen = (size_t)(cr - d) - *pos - 1;
    long long n = 0;
    int neg = 0;
    if (t == '$' || t == '*' || t == '%' || t == ':') {
        size_t i = 0;
        if (numlen > 0 && num[0] == '-')
            neg = 1, i = 1;
        if (i == numlen || numlen > 20)
            return -1;
        for (; i < numlen; i++) {
            if (num[i] < '0' || num[i] > '9')
                return -1;
            n = n * 10 + (num[i] - '0');
        }
    }
    *pos = line_end;
    switch (t) {
    case '+': case '-': case ':':
        return 0;
    case '_':
        return numlen == 0 ? 0 : -1;
    case '$':
        if (neg)
            return n == 1 ? 0 : -1;
        if ((size_t)n > len - *pos || len - *pos - (size_t)n < 2 || d[*pos + (size_t)n] != '\r' ||
            d[*pos + (size_t)n + 1] != '\n')
            return -1;
        *pos += (size_t)n + 2;
        return 0;
    case '*': case '%':
        if (neg)
            return t == '*' && n == 1 ? 0 : -1;
        for (long long i = 0; i < (t == '%' ? 2 * n : n); i++)
            if (fz_resp_value(d, len, pos, depth + 1) != 0)
                return -1;
        return 0;
    default:
        return -1;
    }
}

/* Every byte the client got back must be whole, well-formed RESP values.
 * Returns their count. */
static size_t fz_check_replies(struct bufferevent *peer)
{
    struct evbuffer *in = bufferevent_get_input(peer);
    size_t len = evbuffer_get_length(in), pos = 0, n = 0;
    unsigned char *data = evbuffer_pullup(in, -1);

    if (getenv("FUZZ_VERBOSE"))        /* replay a file and show what the client got */
        fprintf(stderr, "%.*s\n", (int)len, (const char *)data);
    while (pos < len) {
        if (fz_resp_value(data, len, &pos, 0) != 0) {
            fprintf(stderr, "malformed or truncated reply at byte %zu of %zu\n", pos, len);
            abort();
        }
        n++;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (fz_base == NULL)
        fz_setup();
    if (size < 1)
        return 0;
    unsigned mode = data[0];
    fz_script sc = { NULL, 0 };
    fz_configure(mode);
    data++;
    size--;
    if ((mode & 8) && (mode & 2)) {
        if (size < 2)
            return 0;
        size_t clen = (size_t)data[0] | (size_t)data[1] << 8;
        data += 2;
        size -= 2;
        if (clen > size)
            clen = size;
        sc.p = data + clen;
        sc.n = size - clen;
        size = clen;
        for (unsigned i = 0; i < 2; i++)
            fz_worker_connect(&fz_workers[i]);
    }

    struct bufferevent *peer;
    rs_client *c = fz_client_new(&peer);
    unsigned long long cmds0 = fz_srv.st.commands, perr0 = fz_srv.st.proto_errors;
    c->refs++;                         /* the harness's reference */

    /* the stream in up to three writes, as a socket might deliver it */
    size_t cut1 = size / 3, cut2 = 2 * size / 3;
    const size_t cuts[4] = { 0, cut1, cut2, size };
    for (int k = 0; k < 3; k++) {
        if (c->bev == NULL)
            break;
        /* through the peer's output, as the pair moves it into the client's input
         * (the input buffer itself only accepts data from the bufferevent) */
        if (cuts[k + 1] > cuts[k] &&
            bufferevent_write(peer, data + cuts[k], cuts[k + 1] - cuts[k]) != 0)
            abort();
        fz_drain();
        if (c->bev)
            rs_client_process(c);
        fz_drain();
    }
    fz_run_workers(&sc);
    /* end of input: answer what came, then close */
    if (c->bev)
        rs_on_event(c->bev, BEV_EVENT_EOF | BEV_EVENT_READING, c);
    fz_drain();
    fz_workers_disconnect();
    size_t nreplies = fz_check_replies(peer);
    unsigned long long requests = (fz_srv.st.commands - cmds0) + (fz_srv.st.proto_errors - perr0);
    if (nreplies > requests) {
        fprintf(stderr, "%zu replies to %llu requests\n", nreplies, requests);
        abort();
    }
    if (c->bev)
        rs_client_close(c);
    fz_drain();
    if (c->refs != 1 || c->head != NULL) {
        fprintf(stderr, "requests left unfinished after the client closed (refs %u)\n", c->refs);
        abort();
    }
    rs_client_unref(c);
    bufferevent_free(peer);
    fz_drain();
    return 0;
}
