/* redis.c: the shard worker's hiredis async connection to Redis (see redis.h):
 * connect, AUTH, SELECT, meta check, backoff reconnect, in-flight bound, stalls. */
#include "redis.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libevent.h>

#include "layout.h"
#include "log.h"

#define SHARD_BACKOFF_MIN_MS 100
#define SHARD_BACKOFF_MAX_MS 5000

struct shard_redis {
    struct event_base *base;
    shard_redis_opts o;
    char *host, *password, *user;
    redisAsyncContext *ac;          /* NULL while down */
    shard_redis_state state;
    unsigned attempt;               /* failed attempts since the last success */
    int ever_ready;
    struct event *retry_ev;         /* backoff timer */
    struct event *setup_ev;         /* deadline of connect + meta check */
    unsigned inflight;
    uint64_t last_activity_ms;      /* last reply or send on an idle connection */
    shard_redis_stats st;
};

/* One user command in flight: hiredis privdata. */
typedef struct shard_rcmd {
    shard_redis *r;
    shard_redis_cb fn;
    void *priv;
} shard_rcmd;

static void shard_redis_connect(shard_redis *r);

/* Milliseconds of a monotonic clock. */
static uint64_t shard_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- Meta check ---- */

/* Parses a decimal field value; returns -1 when it is not a number. */
static long shard_meta_num(const redisReply *v)
{
    if (v->type != REDIS_REPLY_STRING || v->len == 0 || v->len > 9)
        return -1;
    long n = 0;
    for (size_t i = 0; i < v->len; i++) {
        if (v->str[i] < '0' || v->str[i] > '9')
            return -1;
        n = n * 10 + (v->str[i] - '0');
    }
    return n;
}

int shard_redis_meta_compare(const redisReply *r, const shard_redis_opts *o,
                             char *err, size_t errlen)
{
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0) {
        snprintf(err, errlen, "redis %s:%d: unexpected reply to HGETALL %s", o->host, o->port,
                 LAYOUT_META_KEY);
        return -1;
    }
    if (r->elements == 0)
        return 1;
    long blocks = -1, distance = -1, layout = -1, bucket_bits = -1;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING)
            continue;
        long n = shard_meta_num(v);
        if (strcmp(k->str, "blocks") == 0)
            blocks = n;
        else if (strcmp(k->str, "distance") == 0)
            distance = n;
        else if (strcmp(k->str, "layout") == 0)
            layout = n;
        else if (strcmp(k->str, "bucket_bits") == 0)
            bucket_bits = n;
    }
    if (blocks < 0 || distance < 0 || layout < 0 || bucket_bits < 0) {
        snprintf(err, errlen, "redis %s:%d: %s lacks a field or holds a non-number "
                 "(blocks, distance, layout, bucket_bits); repair or delete it",
                 o->host, o->port, LAYOUT_META_KEY);
        return -1;
    }
    if (layout != LAYOUT_VERSION) {
        snprintf(err, errlen, "corpus in redis %s:%d uses data layout %ld; this worker "
                 "understands layout %d", o->host, o->port, layout, LAYOUT_VERSION);
        return -1;
    }
    if ((unsigned long)blocks != o->blocks || (unsigned long)distance != o->distance ||
        (unsigned long)bucket_bits != o->bucket_bits) {
        snprintf(err, errlen, "corpus in redis %s:%d was built with blocks %ld distance %ld "
                 "bucket-bits %ld; this worker is configured with blocks %u distance %u "
                 "bucket-bits %u", o->host, o->port, blocks, distance, bucket_bits,
                 o->blocks, o->distance, o->bucket_bits);
        return -1;
    }
    return 0;
}

/* Formats the HSETNX arguments of field/value pair i (0..3) into argv. */
static void shard_meta_field(const shard_redis_opts *o, int i, const char *argv[4],
                             char val[16])
{
    static const char *names[4] = {"blocks", "distance", "layout", "bucket_bits"};
    unsigned vals[4] = {o->blocks, o->distance, LAYOUT_VERSION, o->bucket_bits};
    snprintf(val, 16, "%u", vals[i]);
    argv[0] = "HSETNX";
    argv[1] = LAYOUT_META_KEY;
    argv[2] = names[i];
    argv[3] = val;
}

/* Runs one blocking command; returns the reply, or NULL with err set (a Redis error
 * reply is turned into NULL too) and *transient = 1 when retrying may help (I/O
 * error, LOADING). */
static redisReply *shard_sync_cmd(redisContext *c, const shard_redis_opts *o, int argc,
                                  const char **argv, char *err, size_t errlen, int *transient)
{
    redisReply *rep = redisCommandArgv(c, argc, argv, NULL);
    if (rep == NULL) {
        snprintf(err, errlen, "redis %s:%d: %s failed: %s", o->host, o->port, argv[0],
                 c->errstr[0] ? c->errstr : "connection lost");
        *transient = 1;
        return NULL;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "redis %s:%d: %s failed: %.*s", o->host, o->port, argv[0],
                 (int)rep->len, rep->str);
        *transient = strncmp(rep->str, "LOADING", 7) == 0 || strncmp(rep->str, "BUSY", 4) == 0;
        freeReplyObject(rep);
        return NULL;
    }
    return rep;
}

int shard_redis_check_meta_sync(const shard_redis_opts *o, char *err, size_t errlen)
{
    unsigned tmo = o->timeout_ms ? o->timeout_ms : 1000;
    struct timeval tv = {(time_t)(tmo / 1000), (suseconds_t)(tmo % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(o->host, o->port, tv);
    if (c == NULL || c->err) {
        snprintf(err, errlen, "cannot connect to redis %s:%d: %s", o->host, o->port,
                 c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return -2;
    }
    redisSetTimeout(c, tv);
    int rc = -1, transient = 0;
    redisReply *rep;
    char dbs[16], val[16];
    const char *argv[4];
    if (o->password && o->password[0]) {
        int na = 0;
        argv[na++] = "AUTH";
        if (o->user && o->user[0])
            argv[na++] = o->user;       /* ACL user (redis-user) */
        argv[na++] = o->password;
        if ((rep = shard_sync_cmd(c, o, na, argv, err, errlen, &transient)) == NULL)
            goto out;
        freeReplyObject(rep);
    }
    snprintf(dbs, sizeof dbs, "%u", o->db);
    argv[0] = "SELECT";
    argv[1] = dbs;
    if ((rep = shard_sync_cmd(c, o, 2, argv, err, errlen, &transient)) == NULL)
        goto out;
    freeReplyObject(rep);
    argv[0] = "HGETALL";
    argv[1] = LAYOUT_META_KEY;
    if ((rep = shard_sync_cmd(c, o, 2, argv, err, errlen, &transient)) == NULL)
        goto out;
    rc = shard_redis_meta_compare(rep, o, err, errlen);
    freeReplyObject(rep);
    if (rc != 1)
        goto out;
    /* absent: create it; a worker racing us with other settings wins some fields,
     * and the re-read below then reports the mismatch */
    rc = -1;
    for (int i = 0; i < 4; i++) {
        shard_meta_field(o, i, argv, val);
        if ((rep = shard_sync_cmd(c, o, 4, argv, err, errlen, &transient)) == NULL)
            goto out;
        freeReplyObject(rep);
    }
    argv[0] = "HGETALL";
    argv[1] = LAYOUT_META_KEY;
    if ((rep = shard_sync_cmd(c, o, 2, argv, err, errlen, &transient)) == NULL)
        goto out;
    rc = shard_redis_meta_compare(rep, o, err, errlen);
    freeReplyObject(rep);
    if (rc == 1) {
        snprintf(err, errlen, "redis %s:%d: %s still empty after creating it", o->host,
                 o->port, LAYOUT_META_KEY);
        rc = -1;
    }
out:
    redisFree(c);
    return rc != 0 && transient ? -2 : rc;
}

/* ---- Connection life cycle ---- */

/* Schedules the next connection attempt after the backoff delay:
 * min(5 s, 100 ms * 2^attempt), drawn uniformly from its upper half (jitter). */
static void shard_redis_schedule_retry(shard_redis *r)
{
    r->state = SHARD_REDIS_DOWN;
    unsigned shift = r->attempt < 6 ? r->attempt : 6;
    unsigned delay = SHARD_BACKOFF_MIN_MS << shift;
    if (delay > SHARD_BACKOFF_MAX_MS)
        delay = SHARD_BACKOFF_MAX_MS;
    delay = delay / 2 + (unsigned)(random() % (delay / 2 + 1));
    r->attempt++;
    struct timeval tv = {(time_t)(delay / 1000), (suseconds_t)(delay % 1000) * 1000};
    evtimer_add(r->retry_ev, &tv);
    log_debug("redis %s:%d: next connection attempt in %u ms", r->host, r->o.port, delay);
}

/* Drops the current context (if any) from outside hiredis callbacks; hiredis runs
 * every pending callback with a NULL reply, then our disconnect callback. */
static void shard_redis_drop(shard_redis *r)
{
    redisAsyncContext *ac = r->ac;
    if (ac == NULL)
        return;
    evtimer_del(r->setup_ev);
    redisAsyncFree(ac);    /* the disconnect callback sees r->ac == ac and clears it */
    if (r->ac == ac) {     /* never connected: no disconnect callback ran */
        r->ac = NULL;
        shard_redis_schedule_retry(r);
    }
}

static void shard_redis_on_disconnect(const redisAsyncContext *ac, int status)
{
    shard_redis *r = ac->data;
    if (r == NULL || r->ac != ac)
        return;
    r->ac = NULL;
    evtimer_del(r->setup_ev);
    if (status != REDIS_OK)
        snprintf(r->st.last_error, sizeof r->st.last_error, "%s", ac->errstr);
    log_warn_rl("redis %s:%d: connection lost%s%s", r->host, r->o.port,
                status != REDIS_OK ? ": " : "", status != REDIS_OK ? ac->errstr : "");
    shard_redis_schedule_retry(r);
}

static void shard_redis_on_connect(const redisAsyncContext *ac, int status)
{
    shard_redis *r = ac->data;
    if (r == NULL || r->ac != ac || status == REDIS_OK)
        return;
    /* hiredis frees the context after this returns, without a disconnect callback */
    r->ac = NULL;
    evtimer_del(r->setup_ev);
    r->st.connect_failures++;
    snprintf(r->st.last_error, sizeof r->st.last_error, "%s", ac->errstr);
    log_warn_rl("redis %s:%d: connect failed: %s", r->host, r->o.port, ac->errstr);
    shard_redis_schedule_retry(r);
}

/* Reply to a setup command (AUTH, SELECT, HSETNX): a Redis error ends the attempt. */
static void shard_redis_on_setup_reply(redisAsyncContext *ac, void *reply, void *priv)
{
    shard_redis *r = priv;
    redisReply *rep = reply;
    if (rep == NULL || r->ac != ac || rep->type != REDIS_REPLY_ERROR)
        return;
    snprintf(r->st.last_error, sizeof r->st.last_error, "%.*s", (int)rep->len, rep->str);
    log_error_rl("redis %s:%d: setup command failed: %.*s", r->host, r->o.port,
                 (int)rep->len, rep->str);
    r->st.connect_failures++;
    redisAsyncDisconnect(ac);   /* from a callback: closes after the replies */
}

/* Reply to the final HGETALL simhash:meta: ready, or mismatch. */
static void shard_redis_on_meta(redisAsyncContext *ac, void *reply, void *priv)
{
    shard_redis *r = priv;
    redisReply *rep = reply;
    if (rep == NULL || r->ac != ac || r->state != SHARD_REDIS_CONNECTING)
        return;
    evtimer_del(r->setup_ev);
    char err[256];
    int rc = shard_redis_meta_compare(rep, &r->o, err, sizeof err);
    if (rc == 0) {
        if (r->ever_ready)
            r->st.reconnects++;
        r->ever_ready = 1;
        r->attempt = 0;
        r->state = SHARD_REDIS_READY;
        r->last_activity_ms = shard_now_ms();
        log_info("redis %s:%d: connected, corpus settings agree", r->host, r->o.port);
        return;
    }
    if (rc == 1)
        snprintf(err, sizeof err, "redis %s:%d: %s missing right after creating it",
                 r->host, r->o.port, LAYOUT_META_KEY);
    snprintf(r->st.last_error, sizeof r->st.last_error, "%s", err);
    /* refuse work; reconnect later in case it is repaired */
    r->state = SHARD_REDIS_MISMATCH;
    r->st.connect_failures++;
    redisAsyncDisconnect(ac);
    if (!r->ever_ready && r->o.on_fatal) {
        r->o.on_fatal(r->o.fatal_arg, err);   /* must not free r from here */
        return;
    }
    log_error_rl("%s; refusing requests until it is fixed", err);
}

/* Setup did not finish within the deadline: drop and retry. */
static void shard_redis_on_setup_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    shard_redis *r = arg;
    log_warn_rl("redis %s:%d: no answer within %u ms while connecting", r->host, r->o.port,
                r->o.timeout_ms);
    snprintf(r->st.last_error, sizeof r->st.last_error, "connect timeout");
    r->st.connect_failures++;
    shard_redis_drop(r);
}

static void shard_redis_on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    shard_redis_connect(arg);
}

/* Starts one connection attempt: connect, then queue AUTH, SELECT, HSETNX x4 and
 * HGETALL (hiredis sends them once the socket is connected). */
static void shard_redis_connect(shard_redis *r)
{
    r->state = SHARD_REDIS_CONNECTING;
    redisAsyncContext *ac = redisAsyncConnect(r->host, r->o.port);
    if (ac == NULL || ac->err) {
        r->st.connect_failures++;
        snprintf(r->st.last_error, sizeof r->st.last_error, "%s",
                 ac ? ac->errstr : "out of memory");
        log_warn_rl("redis %s:%d: connect failed: %s", r->host, r->o.port, r->st.last_error);
        if (ac)
            redisAsyncFree(ac);
        shard_redis_schedule_retry(r);
        return;
    }
    ac->data = r;
    if (redisLibeventAttach(ac, r->base) != REDIS_OK) {
        redisAsyncFree(ac);
        shard_redis_schedule_retry(r);
        return;
    }
    r->ac = ac;
    redisAsyncSetConnectCallback(ac, shard_redis_on_connect);
    redisAsyncSetDisconnectCallback(ac, shard_redis_on_disconnect);
    const char *argv[4];
    char dbs[16], val[16];
    if (r->password && r->password[0]) {
        int na = 0;
        argv[na++] = "AUTH";
        if (r->user[0])
            argv[na++] = r->user;       /* ACL user (redis-user) */
        argv[na++] = r->password;
        redisAsyncCommandArgv(ac, shard_redis_on_setup_reply, r, na, argv, NULL);
    }
    snprintf(dbs, sizeof dbs, "%u", r->o.db);
    argv[0] = "SELECT";
    argv[1] = dbs;
    redisAsyncCommandArgv(ac, shard_redis_on_setup_reply, r, 2, argv, NULL);
    for (int i = 0; i < 4; i++) {
        shard_meta_field(&r->o, i, argv, val);
        redisAsyncCommandArgv(ac, shard_redis_on_setup_reply, r, 4, argv, NULL);
    }
    argv[0] = "HGETALL";
    argv[1] = LAYOUT_META_KEY;
    redisAsyncCommandArgv(ac, shard_redis_on_meta, r, 2, argv, NULL);
    unsigned tmo = r->o.timeout_ms < 1000 ? 1000 : r->o.timeout_ms;
    struct timeval tv = {(time_t)(tmo / 1000), (suseconds_t)(tmo % 1000) * 1000};
    evtimer_add(r->setup_ev, &tv);
}

shard_redis *shard_redis_new(struct event_base *base, const shard_redis_opts *o)
{
    shard_redis *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->base = base;
    r->o = *o;
    r->host = strdup(o->host);
    r->password = strdup(o->password ? o->password : "");
    r->user = strdup(o->user ? o->user : "");
    r->retry_ev = evtimer_new(base, shard_redis_on_retry, r);
    r->setup_ev = evtimer_new(base, shard_redis_on_setup_timeout, r);
    if (!r->host || !r->password || !r->user || !r->retry_ev || !r->setup_ev) {
        shard_redis_free(r);
        return NULL;
    }
    r->o.host = r->host;
    r->o.password = r->password;
    r->o.user = r->user;
    srandom((unsigned)shard_now_ms() ^ (unsigned)getpid());
    shard_redis_connect(r);
    return r;
}

void shard_redis_free(shard_redis *r)
{
    if (r == NULL)
        return;
    if (r->ac) {
        redisAsyncContext *ac = r->ac;
        r->ac = NULL;           /* callbacks below must not schedule a retry */
        ac->data = NULL;
        redisAsyncFree(ac);
    }
    if (r->retry_ev)
        event_free(r->retry_ev);
    if (r->setup_ev)
        event_free(r->setup_ev);
    free(r->host);
    free(r->password);
    free(r->user);
    free(r);
}

shard_redis_state shard_redis_get_state(const shard_redis *r)
{
    return r->state;
}

const char *shard_redis_state_name(shard_redis_state s)
{
    switch (s) {
    case SHARD_REDIS_DOWN: return "down";
    case SHARD_REDIS_CONNECTING: return "connecting";
    case SHARD_REDIS_READY: return "up";
    case SHARD_REDIS_MISMATCH: return "meta-mismatch";
    }
    return "unknown";
}

int shard_redis_room(const shard_redis *r, unsigned n)
{
    return r->inflight + n <= r->o.max_inflight;
}

/* ---- Commands ---- */

/* hiredis callback of a user command: account for it and hand the reply on. */
static void shard_redis_on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    shard_rcmd *cmd = privdata;
    shard_redis *r = cmd->r;
    (void)ac;
    r->inflight--;
    const char *err = NULL;
    if (reply == NULL)
        err = r->ac == NULL && r->state == SHARD_REDIS_READY ? "shutting down"
                                                             : "connection lost";
    else
        r->last_activity_ms = shard_now_ms();
    shard_redis_cb fn = cmd->fn;
    void *priv = cmd->priv;
    free(cmd);
    fn(priv, reply, err);
}

int shard_redis_command(shard_redis *r, shard_redis_cb fn, void *priv,
                        int argc, const char **argv, const size_t *argvlen)
{
    if (r->state != SHARD_REDIS_READY || r->ac == NULL)
        return -1;
    shard_rcmd *cmd = malloc(sizeof *cmd);
    if (cmd == NULL)
        return -1;
    cmd->r = r;
    cmd->fn = fn;
    cmd->priv = priv;
    if (r->inflight == 0)
        r->last_activity_ms = shard_now_ms();
    if (redisAsyncCommandArgv(r->ac, shard_redis_on_reply, cmd, argc, argv, argvlen) != REDIS_OK) {
        free(cmd);
        return -1;
    }
    r->inflight++;
    r->st.commands++;
    return 0;
}

void shard_redis_stall_check(shard_redis *r)
{
    if (r->ac == NULL || r->state != SHARD_REDIS_READY || r->inflight == 0)
        return;
    uint64_t idle = shard_now_ms() - r->last_activity_ms;
    if (idle < r->o.timeout_ms)
        return;
    log_warn_rl("redis %s:%d: no reply for %llu ms with %u commands outstanding; "
                "dropping the connection", r->host, r->o.port, (unsigned long long)idle,
                r->inflight);
    snprintf(r->st.last_error, sizeof r->st.last_error, "stalled");
    shard_redis_drop(r);
}

void shard_redis_get_stats(const shard_redis *r, shard_redis_stats *out)
{
    *out = r->st;
    out->inflight = r->inflight;
}
