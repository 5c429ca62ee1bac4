/* wait.c: SHARD.WAIT of simhash-shard, the durable acknowledgement (docs/durability.md).
 * With wait-replicas N > 0 the worker sends Redis `WAIT N wait-timeout-ms` behind the
 * writes it sent before (one Redis connection, in order). WAIT blocks that connection
 * while it waits, so only one is out at a time: the requests that arrive meanwhile
 * are answered together by the next one (group commit). With wait-replicas 0 the
 * worker relies on appendfsync always (Redis fsyncs before it replies) and refuses
 * when Redis runs without it (CONFIG GET, cached for a second and per connection).
 *
 * Every waiting request is a shard_waiter with its own deadline; it is answered once
 * (reply, error or deadline) and freed when answered and no longer listed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "log.h"
#include "rasync.h"
#include "shard.h"

struct shard_waiter {
    shard_ctx *sc;
    rs_req *req;                /* NULL once answered */
    struct event *deadline;
    int held;                   /* in a group list, or its CONFIG GET is out */
    struct shard_waiter *next;
};

/* Frees w when it has answered and nothing holds it. */
static void shard_waiter_release(shard_waiter *w)
{
    if (w->req != NULL || w->held)
        return;
    if (w->deadline)
        event_free(w->deadline);
    free(w);
}

/* Answers w once: +OK when msg is NULL, else -REDIS msg (counted in *counter). */
static void shard_waiter_answer(shard_waiter *w, const char *msg, unsigned long long *counter)
{
    if (w->req == NULL)
        return;
    evtimer_del(w->deadline);
    if (msg == NULL) {
        resp_add_simple(rs_req_out(w->req), "OK");
        rs_req_finish(w->req);
    } else {
        w->sc->st.errors++;
        if (counter)
            (*counter)++;
        rs_req_fail(w->req, RS_REDIS, "%s", msg);
    }
    w->req = NULL;
}

static void shard_waiter_on_deadline(evutil_socket_t fd, short what, void *arg)
{
    shard_waiter *w = arg;
    char msg[96];
    (void)fd;
    (void)what;
    snprintf(msg, sizeof msg, "timeout: redis did not answer within %u ms",
             w->sc->cfg.timeout_ms);
    shard_waiter_answer(w, msg, &w->sc->st.timeouts);
    shard_waiter_release(w);
}

/* Returns a new waiter for req with the request deadline, or NULL (answered -OOM). */
static shard_waiter *shard_waiter_new(shard_ctx *sc, rs_req *req)
{
    shard_waiter *w = calloc(1, sizeof *w);
    struct timeval tv = ra_tv_ms(sc->cfg.timeout_ms);
    if (w)
        w->deadline = evtimer_new(sc->base, shard_waiter_on_deadline, w);
    if (w == NULL || w->deadline == NULL || evtimer_add(w->deadline, &tv) != 0) {
        if (w && w->deadline)
            event_free(w->deadline);
        free(w);
        sc->st.errors++;
        rs_req_fail(req, RS_OOM, "out of memory");
        return NULL;
    }
    w->sc = sc;
    w->req = req;
    return w;
}

/* ---- appendfsync always (wait-replicas 0) ---- */

/* The refusal text for a Redis without appendonly yes + appendfsync always. */
static void shard_aof_refusal(shard_ctx *sc, char *msg, size_t cap)
{
    snprintf(msg, cap, "durable writes need appendonly yes and appendfsync always on redis "
             "%s:%u (it has %s) or wait-replicas > 0", sc->cfg.redis_host, sc->cfg.redis_port,
             sc->aof_seen);
    log_warn_rl("refusing SHARD.WAIT: %s", msg);
}

/* Reads a CONFIG GET appendonly appendfsync reply into the cache. Returns 0, or -1
 * when it is not a list of name/value pairs. */
static int shard_aof_absorb(shard_ctx *sc, const redisReply *rep)
{
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements % 2 != 0)
        return -1;
    const char *ao = "?", *fs = "?";
    int aolen = 1, fslen = 1;
    for (size_t i = 0; i + 1 < rep->elements; i += 2) {
        const redisReply *k = rep->element[i], *v = rep->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            return -1;
        int vlen = v->len > 16 ? 16 : (int)v->len;
        if (resp_word_is(k->str, k->len, "appendonly")) {
            ao = v->str;
            aolen = vlen;
        } else if (resp_word_is(k->str, k->len, "appendfsync")) {
            fs = v->str;
            fslen = vlen;
        }
    }
    sc->aof_ok = resp_word_is(ao, (size_t)aolen, "yes") &&
                 resp_word_is(fs, (size_t)fslen, "always");
    snprintf(sc->aof_seen, sizeof sc->aof_seen, "appendonly %.*s, appendfsync %.*s", aolen,
             ao, fslen, fs);
    shard_redis_stats rst;
    shard_redis_get_stats(sc->redis, &rst);
    sc->aof_epoch = rst.reconnects;
    sc->aof_checked_ms = ra_now_ms();
    return 0;
}

static void shard_aof_on_reply(void *priv, redisReply *reply, const char *err)
{
    shard_waiter *w = priv;
    shard_ctx *sc = w->sc;
    char msg[300];
    w->held = 0;
    if (reply == NULL) {
        shard_waiter_answer(w, err ? err : "connection lost", &sc->st.lost);
    } else if (reply->type == REDIS_REPLY_ERROR) {
        snprintf(msg, sizeof msg, "CONFIG GET appendonly appendfsync: %.*s",
                 (int)(reply->len > 200 ? 200 : reply->len), reply->str);
        shard_waiter_answer(w, msg, &sc->st.wait_fail);
    } else if (shard_aof_absorb(sc, reply) != 0) {
        shard_waiter_answer(w, "unexpected reply to CONFIG GET appendonly appendfsync",
                            &sc->st.redis_err);
    } else if (!sc->aof_ok) {
        shard_aof_refusal(sc, msg, sizeof msg);
        shard_waiter_answer(w, msg, &sc->st.wait_fail);
    } else {
        shard_waiter_answer(w, NULL, NULL);
    }
    shard_waiter_release(w);
}

/* ---- Redis WAIT, group commit (wait-replicas > 0) ---- */

static void shard_wait_send(shard_ctx *sc);

/* Reply to a Redis WAIT: answers every waiter of the group it covered, then sends the
 * next group's WAIT. */
static void shard_wait_on_reply(void *priv, redisReply *reply, const char *err)
{
    shard_ctx *sc = priv;
    shard_waiter *list = sc->wait_sent;
    sc->wait_sent = NULL;
    sc->wait_inflight = 0;
    char msg[256] = "";
    unsigned long long *counter = &sc->st.wait_fail;
    if (reply == NULL) {
        snprintf(msg, sizeof msg, "%s", err ? err : "connection lost");
        counter = &sc->st.lost;
    } else if (reply->type == REDIS_REPLY_ERROR) {
        snprintf(msg, sizeof msg, "%.*s", (int)(reply->len > 200 ? 200 : reply->len), reply->str);
    } else if (reply->type != REDIS_REPLY_INTEGER) {
        snprintf(msg, sizeof msg, "unexpected reply to WAIT");
    } else if (reply->integer < (long long)sc->cfg.wait_replicas) {
        snprintf(msg, sizeof msg, "not replicated to %u replicas within %u ms (%lld acknowledged)",
                 sc->cfg.wait_replicas, sc->cfg.wait_timeout_ms, reply->integer);
    }
    while (list) {
        shard_waiter *w = list;
        list = w->next;
        w->held = 0;
        shard_waiter_answer(w, msg[0] ? msg : NULL, counter);
        shard_waiter_release(w);
    }
    if (sc->wait_next == NULL)
        return;
    if (reply == NULL) {    /* their writes went on the lost connection */
        sc->wait_sent = sc->wait_next;
        sc->wait_next = NULL;
        shard_wait_on_reply(sc, NULL, err);
        return;
    }
    shard_wait_send(sc);
}

/* Sends one Redis WAIT for every waiter in wait_next: they all wrote before it on
 * this connection. */
static void shard_wait_send(shard_ctx *sc)
{
    char n[16], t[16];
    const char *argv[3] = {"WAIT", n, t};
    snprintf(n, sizeof n, "%u", sc->cfg.wait_replicas);
    snprintf(t, sizeof t, "%u", sc->cfg.wait_timeout_ms);
    sc->wait_sent = sc->wait_next;
    sc->wait_next = NULL;
    sc->wait_inflight = 1;
    sc->st.wait_cmds++;
    if (shard_redis_command(sc->redis, shard_wait_on_reply, sc, 3, argv, NULL) != 0)
        shard_wait_on_reply(sc, NULL, "connection lost");
}

/* ---- The command ---- */

void shard_cmd_wait(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    char msg[300];
    sc->st.requests++;
    sc->st.waits++;
    shard_redis_state state = shard_redis_get_state(sc->redis);
    if (state != SHARD_REDIS_READY) {
        sc->st.errors++;
        sc->st.unavail++;
        rs_req_fail(req, RS_REDIS, "unavailable (redis %s:%u %s)", sc->cfg.redis_host,
                    sc->cfg.redis_port, shard_redis_state_name(state));
        return;
    }
    if (!shard_redis_room(sc->redis, 1)) {
        sc->st.errors++;
        sc->st.busy++;
        rs_req_fail(req, RS_BUSY, "max-inflight-redis (%u) reached; retry later",
                    sc->cfg.max_inflight_redis);
        return;
    }
    if (sc->cfg.wait_replicas == 0) {
        shard_redis_stats rst;
        shard_redis_get_stats(sc->redis, &rst);
        if (sc->aof_checked_ms != 0 && sc->aof_epoch == rst.reconnects &&
            ra_now_ms() - sc->aof_checked_ms < 1000) {
            if (sc->aof_ok) {
                resp_add_simple(rs_req_out(req), "OK");
                rs_req_finish(req);
            } else {
                shard_aof_refusal(sc, msg, sizeof msg);
                sc->st.errors++;
                sc->st.wait_fail++;
                rs_req_fail(req, RS_REDIS, "%s", msg);
            }
            return;
        }
        shard_waiter *w = shard_waiter_new(sc, req);
        if (w == NULL)
            return;
        const char *argv[4] = {"CONFIG", "GET", "appendonly", "appendfsync"};
        w->held = 1;
        if (shard_redis_command(sc->redis, shard_aof_on_reply, w, 4, argv, NULL) != 0)
            shard_aof_on_reply(w, NULL, "connection lost");
        return;
    }
    shard_waiter *w = shard_waiter_new(sc, req);
    if (w == NULL)
        return;
    w->held = 1;
    w->next = sc->wait_next;
    sc->wait_next = w;
    if (!sc->wait_inflight)
        shard_wait_send(sc);
}
