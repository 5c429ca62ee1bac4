/* fuzz_request.c: libFuzzer target for the coordinator's request handling without a
 * network: the bytes of one input are what one client sends. They go through the RESP
 * server framework's connection code (parser, limits, ordered queue, AUTH, dispatch)
 * into the coordinator's SIMHASH.* command table, over a libevent bufferevent pair
 * instead of a socket.
 *
 * The framework's connection internals are static in common/rserver.c, so this file
 * includes that source (and is linked without the library's copy of it) to create a
 * client the way on_accept does; nothing in rserver.c changes for fuzzing.
 *
 * The first input byte picks the setup: bit 0 a password ("pw"), bit 1 complete
 * routing to two shard workers that are "up" but have no connection (commands then
 * build their fan-out operation and fail at the first send), bit 2 tiny limits. The
 * rest is the client's byte stream. Checks (abort on failure):
 *   - everything written back is a sequence of well-formed RESP values
 *     (hiredis's reader), at most one per request plus the protocol error;
 *   - once the client has closed and the loop is idle, no request is left
 *     unfinished (the client struct holds only the harness's reference). */
#include "../common/rserver.c"

#include <hiredis/hiredis.h>

#include "coord.h"
#include "perm.h"

static struct event_base *fz_base;
static coord fz_co;
static coord_worker fz_workers[2];
static rserver fz_srv;
static char fz_password[] = "pw";

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
    co->cfg.max_arg_bytes = 4096;
    co->cfg.max_request_bytes = 65536;
    co->cfg.max_args = 1024;
    co->cfg.max_pending = 16;
    co->cfg.max_clients = 16;
    co->cfg.max_per_event = 4;
    co->cfg.max_reply_bytes = 1 << 20;
    co->cfg.out_high_watermark = 64 << 10;
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
        l->max_arg_bytes = co->cfg.max_arg_bytes;
        l->max_req_bytes = co->cfg.max_request_bytes;
        l->max_args = co->cfg.max_args;
        l->max_pending = co->cfg.max_pending;
        l->max_per_event = co->cfg.max_per_event;
    }
}

/* A client on one end of a bufferevent pair, set up as on_accept does for a socket.
 * *peer gets the other end (where replies arrive). */
static rs_client *fz_client_new(struct bufferevent **peer)
{
    rserver *s = &fz_srv;
    struct bufferevent *pair[2];
    rs_client *c = calloc(1, sizeof(*c));
    resp_limits pl = {
        .max_arg_bytes = s->opt.limits.max_arg_bytes,
        .max_req_bytes = s->opt.limits.max_req_bytes,
        .max_args = s->opt.limits.max_args,
        .max_inline_bytes = s->opt.limits.max_inline_bytes,
    };
    if (c == NULL || (c->parser = resp_parser_new(&pl)) == NULL)
        abort();
    if (bufferevent_pair_new(s->base, BEV_OPT_CLOSE_ON_FREE, pair) != 0)
        abort();
    c->bev = pair[0];
    *peer = pair[1];
    c->resume_ev = event_new(s->base, -1, 0, on_resume, c);
    if (c->resume_ev == NULL)
        abort();
    c->s = s;
    c->id = ++s->next_id;
    c->refs = 1;
    c->authed = s->password == NULL;
    c->next = s->clients;
    if (s->clients)
        s->clients->prev = c;
    s->clients = c;
    s->st.clients++;
    s->st.connections++;
    bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
    bufferevent_setwatermark(c->bev, EV_WRITE, s->opt.limits.out_high_watermark / 2, 0);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    bufferevent_enable(*peer, EV_READ | EV_WRITE);
    return c;
}

/* Run the loop until nothing is active (bounded). */
static void fz_drain(void)
{
    for (int i = 0; i < 100000; i++)
        if (event_base_loop(fz_base, EVLOOP_NONBLOCK) != 0)
            break;
}

/* Every byte the client got back must be whole, well-formed RESP values.
 * Returns their count. */
static size_t fz_check_replies(struct bufferevent *peer)
{
    struct evbuffer *in = bufferevent_get_input(peer);
    size_t len = evbuffer_get_length(in);
    unsigned char *data = evbuffer_pullup(in, -1);
    redisReader *rd = redisReaderCreate();
    size_t n = 0;
    void *rep;

    if (rd == NULL)
        abort();
    if (getenv("FUZZ_VERBOSE"))        /* replay a file and show what the client got */
        fprintf(stderr, "%.*s\n", (int)len, (const char *)data);
    rd->maxbuf = 0;
    if (len > 0 && redisReaderFeed(rd, (const char *)data, len) != REDIS_OK)
        abort();
    for (;;) {
        if (redisReaderGetReply(rd, &rep) != REDIS_OK) {
            fprintf(stderr, "malformed reply stream: %s\n", rd->errstr);
            abort();
        }
        if (rep == NULL)
            break;
        freeReplyObject(rep);
        n++;
    }
    /* a partial value left in the reader would mean a truncated reply */
    if (rd->pos != rd->len) {
        fprintf(stderr, "truncated reply at the end of the stream\n");
        abort();
    }
    redisReaderFree(rd);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (fz_base == NULL)
        fz_setup();
    if (size < 1)
        return 0;
    fz_configure(data[0]);
    data++;
    size--;

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
            client_process(c);
        fz_drain();
    }
    /* end of input: answer what came, then close */
    if (c->bev)
        on_event(c->bev, BEV_EVENT_EOF | BEV_EVENT_READING, c);
    fz_drain();
    size_t nreplies = fz_check_replies(peer);
    unsigned long long requests = (fz_srv.st.commands - cmds0) + (fz_srv.st.proto_errors - perr0);
    if (nreplies > requests) {
        fprintf(stderr, "%zu replies to %llu requests\n", nreplies, requests);
        abort();
    }
    if (c->bev)
        client_close(c);
    fz_drain();
    if (c->refs != 1 || c->head != NULL) {
        fprintf(stderr, "requests left unfinished after the client closed (refs %u)\n", c->refs);
        abort();
    }
    client_unref(c);
    bufferevent_free(peer);
    fz_drain();
    return 0;
}
