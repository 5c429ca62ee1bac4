/* redis_stall.c: the shard worker's Redis connection when answers do not come
 * (see redis.h): stall detection, which tells a stopped Redis from a machine short of
 * CPU (a deadline of silence, then a PING probe, reply bytes waiting unread on the
 * socket (FIONREAD) and a second deadline before the connection is dropped), and the
 * waits of a command answered -TRYAGAIN (its slot migrating in a cluster): sent again
 * after 10 ms doubling to SHARD_TRYAGAIN_WAIT_MS, until timeout_ms after it was
 * first sent. The connection itself is redis.c. */
#include "redis_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>

#include <event2/event.h>
#include <hiredis/async.h>

#include "log.h"

/* ---- Stall detection: a Redis that stops answering is dropped ---- */

void shard_redis_activity(shard_redis *r)
{
    r->replies++;
    r->last_activity_ms = ra_now_ms();
}

/* True when the connection has been silent for (all but 5% of) timeout_ms since
 * since_ms: the event loop's clock may run a few ms behind ours (libevent can read a
 * coarse clock), so a timer of timeout_ms may fire that much early. */
static int shard_redis_silent_since(const shard_redis *r, uint64_t since_ms)
{
    return ra_now_ms() - since_ms + r->o.timeout_ms / 20 >= r->o.timeout_ms;
}

/* The stall probe's PING: its reply is activity like any other (reply NULL: the
 * connection is gone, or the worker shuts down). */
static void shard_redis_on_probe_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    shard_redis *r = privdata;
    if (reply != NULL && r != NULL && ac == r->ac)
        shard_redis_activity(r);
}

/* True when reply bytes wait on the connection's socket, unread: the event loop
 * was held up (a machine short of CPU), not Redis. */
static int shard_redis_unread(const shard_redis *r)
{
    int n = 0;
    return ioctl(r->ac->c.fd, FIONREAD, &n) == 0 && n > 0;
}

void shard_redis_on_stall_probe(evutil_socket_t fd, short what, void *arg)
{
    shard_redis *r = arg;
    (void)fd;
    (void)what;
    if (r->ac == NULL || r->state != SHARD_REDIS_READY || r->replies != r->replies_at_probe ||
        shard_redis_unread(r))
        return;
    if (!shard_redis_silent_since(r, r->probe_sent_ms)) {  /* fired early: wait the rest */
        struct timeval tv = ra_tv_ms((unsigned)(r->probe_sent_ms + r->o.timeout_ms - ra_now_ms()));
        evtimer_add(r->stall_ev, &tv);
        return;
    }
    uint64_t idle = ra_now_ms() - r->last_activity_ms;
    log_warn_rl("redis %s:%d: no reply for %llu ms (a PING unanswered for %u ms) with %u "
                "commands outstanding; dropping the connection", r->host, r->o.port,
                (unsigned long long)idle, r->o.timeout_ms, r->inflight);
    snprintf(r->st.last_error, sizeof r->st.last_error, "stalled");
    shard_redis_drop(r);
}

void shard_redis_stall_check(shard_redis *r)
{
    if (r->ac == NULL || r->state != SHARD_REDIS_READY || r->inflight == 0 ||
        evtimer_pending(r->stall_ev, NULL) || !shard_redis_silent_since(r, r->last_activity_ms))
        return;
    /* Silent for a whole deadline, which a machine short of CPU explains as well as a
     * stopped Redis (and commands waiting on other nodes or after -TRYAGAIN are not
     * outstanding here at all): ask Redis itself, and decide a deadline later. */
    r->replies_at_probe = r->replies;
    r->probe_sent_ms = ra_now_ms();
    if (redisAsyncCommand(r->ac, shard_redis_on_probe_reply, r, "PING") != REDIS_OK) {
        snprintf(r->st.last_error, sizeof r->st.last_error, "stalled");
        shard_redis_drop(r);
        return;
    }
    struct timeval tv = ra_tv_ms(r->o.timeout_ms);
    evtimer_add(r->stall_ev, &tv);
}

/* ---- -TRYAGAIN: a multi-key command whose slot is being migrated ---- */

static void shard_redis_unwait(shard_redis *r, shard_rcmd *cmd)
{
    if (cmd->wprev)
        cmd->wprev->wnext = cmd->wnext;
    else
        r->waiting = cmd->wnext;
    if (cmd->wnext)
        cmd->wnext->wprev = cmd->wprev;
    cmd->wnext = cmd->wprev = NULL;
    event_free(cmd->wait_ev);
    cmd->wait_ev = NULL;
}

/* Ends a command without a reply (err says why) and frees it. */
static void shard_redis_cmd_fail(shard_redis *r, shard_rcmd *cmd, const char *err)
{
    shard_redis_cb fn = cmd->fn;
    void *priv = cmd->priv;
    shard_rcmd_free(r, cmd);
    fn(priv, NULL, err);
}

static void shard_redis_on_tryagain_timer(evutil_socket_t fd, short what, void *arg)
{
    shard_rcmd *cmd = arg;
    shard_redis *r = cmd->r;
    (void)fd;
    (void)what;
    shard_redis_unwait(r, cmd);
    r->inflight--;
    /* sent again to the worker's own node: -ASK / -MOVED lead on from there */
    if (r->ac == NULL || r->state != SHARD_REDIS_READY ||
        redisAsyncFormattedCommand(r->ac, shard_redis_on_reply, cmd, cmd->fmt, cmd->fmtlen)
            != REDIS_OK) {
        shard_redis_cmd_fail(r, cmd, "connection lost");
        return;
    }
    r->inflight++;
}

int shard_redis_tryagain(shard_redis *r, shard_rcmd *cmd)
{
    if (ra_now_us() - cmd->sent_us >= (uint64_t)r->o.timeout_ms * 1000u)
        return -1;
    unsigned ms = 10u << (cmd->tryagain < 5 ? cmd->tryagain : 5);
    cmd->wait_ev = evtimer_new(r->base, shard_redis_on_tryagain_timer, cmd);
    if (cmd->wait_ev == NULL)
        return -1;
    cmd->tryagain++;
    cmd->wnext = r->waiting;
    if (r->waiting)
        r->waiting->wprev = cmd;
    r->waiting = cmd;
    struct timeval tv = ra_tv_ms(ms > SHARD_TRYAGAIN_WAIT_MS ? SHARD_TRYAGAIN_WAIT_MS : ms);
    evtimer_add(cmd->wait_ev, &tv);
    r->inflight++;
    r->st.tryagains++;
    return 0;
}

void shard_redis_waiting_fail(shard_redis *r, const char *err)
{
    while (r->waiting) {
        shard_rcmd *cmd = r->waiting;
        shard_redis_unwait(r, cmd);
        r->inflight--;
        shard_redis_cmd_fail(r, cmd, err);
    }
}
