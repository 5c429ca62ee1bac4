/* registry.c: the worker's entry in its corpus's worker registry (docs/protocol.md,
 * "Worker registry"), and SHARD.WORKERS, which reads the registry for coordinators.
 *
 * The registry is one sorted set in the corpus's Redis (layout_registry_key; in a
 * cluster, in whichever node serves its slot: the worker's connection follows
 * -MOVED): member = the address coordinators reach the worker at ("host:port"),
 * score = the entry's expiry in Redis's own clock (milliseconds). Every
 * announce-interval-ms the worker renews its entry to now + announce-ttl-ms; entries
 * more than a minute past their expiry are deleted by whichever worker renews next.
 * On SIGTERM the worker removes its entry first, then keeps serving for
 * shutdown-drain-ms (less when no client is connected any more), so coordinators
 * (which read the registry every discover-interval-ms) stop sending it requests
 * before it goes. A coordinator asks
 * any worker that is up for SHARD.WORKERS and connects to every address listed: so
 * workers join and leave without a configuration edit or a restart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "job.h"
#include "layout.h"
#include "log.h"
#include "rasync.h"
#include "shard.h"

/* The registry key of this worker's corpus (layout_registry_key), in a static buffer. */
static const char *shard_reg_key(void)
{
    static char key[LAYOUT_KEY_MAX];
    layout_registry_key(key, sizeof key);
    return key;
}

#define SHARD_REG_LEAVE_WAIT_MS 500     /* longest wait for the ZREM at shutdown */

/* KEYS[1] = registry; ARGV = address, ttl ms. Renews the entry by Redis's clock and
 * deletes entries expired for more than a minute. */
static const char shard_reg_renew_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 60000)\n"
    "return 1\n";

/* KEYS[1] = registry; ARGV = the most entries answered. The addresses whose entry has
 * not expired, by Redis's clock. */
static const char shard_reg_list_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "return redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'LIMIT', 0, "
    "tonumber(ARGV[1]))\n";

struct shard_registry {
    shard_ctx *sc;
    struct event *tick;         /* renewal */
    struct event *drain;        /* shutdown: the end of the drain */
    void (*on_drained)(shard_ctx *sc);
    uint64_t leave_ms, drain_end_ms;
    int zrem_pending;           /* the ZREM of the entry is out */
    unsigned outstanding;       /* commands sent, callback not yet run */
    int stopped;                /* shard_registry_stop ran: free on the last callback */
    int leaving;                /* the entry was removed: no more renewals */
    int announced;              /* the last renewal succeeded */
    unsigned long long renewals, failures;
    char addr[LAYOUT_REGISTRY_ADDR_MAX];
    char ttl[16];
    char last_error[160];
};

static void shard_registry_maybe_free(struct shard_registry *rg)
{
    if (rg->stopped && rg->outstanding == 0)
        free(rg);
}

/* Sends a command whose reply goes to fn(rg, reply, err). Returns 0, or -1 (fn is
 * not called). */
static int shard_registry_send(struct shard_registry *rg, shard_redis_cb fn, int argc,
                               const char **argv)
{
    if (rg->sc->redis == NULL || shard_redis_get_state(rg->sc->redis) != SHARD_REDIS_READY)
        return -1;
    if (shard_redis_command_background(rg->sc->redis, fn, rg, argc, argv, NULL) != 0)
        return -1;
    rg->outstanding++;
    return 0;
}

static void shard_registry_schedule(struct shard_registry *rg, unsigned ms)
{
    struct timeval tv = ra_tv_ms(ms);
    event_add(rg->tick, &tv);
}

static void shard_registry_on_renew(void *priv, redisReply *reply, const char *err)
{
    struct shard_registry *rg = priv;
    rg->outstanding--;
    if (!rg->stopped && !rg->leaving) {
        if (reply && reply->type == REDIS_REPLY_INTEGER) {
            if (!rg->announced)
                log_info("announced as %s in the worker registry", rg->addr);
            if (rg->renewals == 0 && rg->tick)
                shard_registry_schedule(rg, rg->sc->cfg.announce_interval_ms);
            rg->announced = 1;
            rg->renewals++;
            rg->last_error[0] = '\0';
        } else {
            snprintf(rg->last_error, sizeof rg->last_error, "%.150s",
                     reply && reply->type == REDIS_REPLY_ERROR ? reply->str :
                     err ? err : "unexpected reply");
            if (rg->announced)
                log_warn("worker registry: renewal failed: %s", rg->last_error);
            rg->announced = 0;
            rg->failures++;
        }
    }
    shard_registry_maybe_free(rg);
}

static void shard_registry_renew(evutil_socket_t fd, short what, void *arg)
{
    struct shard_registry *rg = arg;
    (void)fd;
    (void)what;
    if (rg->leaving || rg->outstanding > 0)
        return;         /* a renewal still waits for Redis: do not pile them up */
    const char *argv[6] = {"EVAL", shard_reg_renew_lua, "1", shard_reg_key(), rg->addr,
                           rg->ttl};
    if (shard_registry_send(rg, shard_registry_on_renew, 6, argv) != 0) {
        if (rg->announced)
            log_warn("worker registry: cannot renew: redis not connected");
        rg->announced = 0;
        if (rg->renewals == 0) {
            shard_registry_schedule(rg, 100);  /* at start: as soon as Redis answers */
            return;
        }
        rg->failures++;
        snprintf(rg->last_error, sizeof rg->last_error, "redis not connected");
    }
}

/* The address coordinators reach this worker at: announce-addr, else bind:port when
 * bind names one address (bind:tls-port when the plain port is off: coordinators with
 * worker-tls). "" when neither (the worker does not register). */
static void shard_registry_addr(shard_ctx *sc, char *buf, size_t cap)
{
    const char *b = sc->cfg.bind ? sc->cfg.bind : "";
    buf[0] = '\0';
    if (sc->cfg.announce_addr && sc->cfg.announce_addr[0]) {
        snprintf(buf, cap, "%s", sc->cfg.announce_addr);
        return;
    }
    if (!b[0] || strcmp(b, "0.0.0.0") == 0 || strcmp(b, "::") == 0 || strcmp(b, "*") == 0)
        return;
    unsigned port = rs_port(sc->srv) ? rs_port(sc->srv) : rs_tls_port(sc->srv);
    if (strchr(b, ':'))
        snprintf(buf, cap, "[%s]:%u", b, port);
    else
        snprintf(buf, cap, "%s:%u", b, port);
}

int shard_registry_start(shard_ctx *sc)
{
    struct shard_registry *rg = calloc(1, sizeof *rg);
    if (rg == NULL)
        return -1;
    rg->sc = sc;
    sc->registry = rg;
    if (sc->cfg.announce_interval_ms == 0) {
        log_info("worker registry: not announced (announce-interval-ms 0)");
        return 0;
    }
    shard_registry_addr(sc, rg->addr, sizeof rg->addr);
    if (!rg->addr[0]) {
        log_warn("worker registry: not announced: bind %s listens on every address; set "
                 "announce-addr to the HOST:PORT coordinators reach this worker at",
                 sc->cfg.bind ? sc->cfg.bind : "");
        return 0;
    }
    snprintf(rg->ttl, sizeof rg->ttl, "%u", sc->cfg.announce_ttl_ms);
    rg->tick = event_new(sc->base, -1, EV_PERSIST, shard_registry_renew, rg);
    if (rg->tick == NULL)
        return -1;
    struct timeval tv = ra_tv_ms(sc->cfg.announce_interval_ms);
    event_add(rg->tick, &tv);
    event_active(rg->tick, EV_TIMEOUT, 0);      /* first renewal at once */
    return 0;
}

static void shard_registry_on_left(void *priv, redisReply *reply, const char *err)
{
    struct shard_registry *rg = priv;
    rg->outstanding--;
    rg->zrem_pending = 0;
    if (!rg->stopped) {
        if (reply && reply->type == REDIS_REPLY_INTEGER)
            log_info("left the worker registry");
        else
            log_warn("worker registry: could not remove %s (%s); it expires in %s ms",
                     rg->addr, reply && reply->type == REDIS_REPLY_ERROR ? reply->str :
                     err ? err : "unexpected reply", rg->ttl);
    }
    shard_registry_maybe_free(rg);
}

/* Every 10 ms of the leave: first the ZREM's reply (500 ms at most), then, with
 * shutdown-drain-ms, until that time is up or no client (coordinator) is connected. */
static void shard_registry_on_drain_tick(evutil_socket_t fd, short what, void *arg)
{
    struct shard_registry *rg = arg;
    (void)fd;
    (void)what;
    uint64_t now = ra_now_ms();
    if (rg->zrem_pending && now - rg->leave_ms < SHARD_REG_LEAVE_WAIT_MS)
        return;
    int idle = rg->sc->srv == NULL || rs_nclients(rg->sc->srv) == 0;
    if (rg->sc->cfg.drain_ms > 0 && !idle && now < rg->drain_end_ms)
        return;
    if (rg->sc->cfg.drain_ms > 0)
        log_info("drain over (%s): stopping", idle ? "no client connected" : "time is up");
    event_del(rg->drain);
    rg->on_drained(rg->sc);
}

int shard_registry_leave(shard_ctx *sc, void (*on_drained)(shard_ctx *sc))
{
    struct shard_registry *rg = sc->registry;
    if (rg == NULL || rg->tick == NULL || rg->leaving)
        return 0;
    rg->leaving = 1;
    event_del(rg->tick);
    const char *argv[3] = {"ZREM", shard_reg_key(), rg->addr};
    rg->zrem_pending = shard_registry_send(rg, shard_registry_on_left, 3, argv) == 0;
    if (!rg->zrem_pending && sc->cfg.drain_ms == 0)
        return 0;           /* Redis not connected: the entry expires by itself */
    rg->on_drained = on_drained;
    rg->leave_ms = ra_now_ms();
    rg->drain_end_ms = rg->leave_ms + sc->cfg.drain_ms;
    rg->drain = event_new(sc->base, -1, EV_PERSIST, shard_registry_on_drain_tick, rg);
    if (rg->drain == NULL)
        return 0;
    struct timeval tv = ra_tv_ms(10);
    event_add(rg->drain, &tv);
    if (sc->cfg.drain_ms > 0)
        log_info("leaving the worker registry; serving %u ms more while coordinators move "
                 "away", sc->cfg.drain_ms);
    return 1;
}

void shard_registry_stop(shard_ctx *sc)
{
    struct shard_registry *rg = sc->registry;
    if (rg == NULL)
        return;
    sc->registry = NULL;
    if (rg->tick)
        event_free(rg->tick);
    if (rg->drain)
        event_free(rg->drain);
    rg->tick = rg->drain = NULL;
    rg->stopped = 1;
    shard_registry_maybe_free(rg);
}

void shard_registry_info(const shard_ctx *sc, resp_buf *b)
{
    const struct shard_registry *rg = sc->registry;
    if (rg == NULL)
        return;
    resp_buf_printf(b, "announce_addr:%s\r\nannounced:%s\r\nannounce_renewals:%llu\r\n"
                    "announce_failures:%llu\r\nannounce_last_error:%s\r\n",
                    rg->addr[0] ? rg->addr : "none",
                    rg->leaving ? "left" : rg->announced ? "yes" : "no", rg->renewals,
                    rg->failures, rg->last_error);
}

/* ---- SHARD.WORKERS ---- */

static int shard_workers_absorb(shard_job *j, const shard_slot *s, redisReply *rep,
                                const char **why)
{
    resp_buf *out = rs_req_out(j->req);
    (void)s;
    if (rep->type != REDIS_REPLY_ARRAY) {
        *why = "unexpected reply to the registry read";
        return -1;
    }
    for (size_t i = 0; i < rep->elements; i++)
        if (rep->element[i]->type != REDIS_REPLY_STRING) {
            *why = "unexpected element in the registry";
            return -1;
        }
    resp_add_array(out, rep->elements);
    for (size_t i = 0; i < rep->elements; i++)
        resp_add_bulk(out, rep->element[i]->str, rep->element[i]->len);
    return 0;
}

static const shard_job_ops shard_workers_ops = {shard_workers_absorb, shard_job_answer, NULL,
                                                NULL, NULL};

void shard_cmd_workers(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    sc->st.requests++;
    if (shard_check_redis(req, 1) != 0)
        return;
    shard_job *j = shard_job_new(sc, req, &shard_workers_ops, NULL, 1);
    if (j == NULL) {
        shard_oom(req);
        return;
    }
    char limit[16];
    snprintf(limit, sizeof limit, "%u", LAYOUT_REGISTRY_MAX);
    const char *argv[5] = {"EVAL", shard_reg_list_lua, "1", shard_reg_key(), limit};
    j->background = 1;      /* the registry's slot may be on another node */
    shard_job_send(j, 0, 5, argv, NULL);
    shard_job_release(j);
}
