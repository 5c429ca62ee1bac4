/* redis.c: the shard worker's hiredis async connection to Redis (see redis.h):
 * connect, AUTH, SELECT, meta check (its rules in meta.c), backoff reconnect,
 * in-flight bound and the commands. The cluster side (connections to other nodes for -MOVED/-ASK, reattaching
 * after a failover) is in redis_cluster.c; stall detection and the waits after
 * -TRYAGAIN in redis_stall.c. */
#include "redis_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <hiredis/async.h>

#include "cluster.h"
#include "layout.h"
#include "layout_ops.h"
#include "log.h"
#include "resp.h"


/* ---- Connection life cycle ---- */

/* Schedules the next connection attempt after the backoff delay: 100 ms doubling
 * up to 1 s, drawn uniformly from the upper half of that (jitter). The cap keeps a
 * restarted Redis unserved for at most about a second; the doubling and jitter keep
 * a flapping one from being hammered by every worker at once. */
static void shard_redis_schedule_retry(shard_redis *r)
{
    r->state = SHARD_REDIS_DOWN;
    unsigned delay = ra_backoff_next(&r->backoff, SHARD_BACKOFF_MIN_MS, SHARD_BACKOFF_MAX_MS);
    r->attempt++;
    struct timeval tv = ra_tv_ms(delay);
    evtimer_add(r->retry_ev, &tv);
    log_debug("redis %s:%d: next connection attempt in %u ms", r->host, r->o.port, delay);
}

/* Drops the current context (if any) from outside hiredis callbacks; hiredis runs
 * every pending callback with a NULL reply, then our disconnect callback. */
void shard_redis_drop(shard_redis *r)
{
    redisAsyncContext *ac = r->ac;
    if (ac == NULL)
        return;
    evtimer_del(r->setup_ev);
    evtimer_del(r->stall_ev);
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
    evtimer_del(r->stall_ev);
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

/* Reply to the CONFIG GET of the listpack entry limits that every connection sends:
 * the split limit follows the node it is connected to now (a failover, a restart with
 * another redis.conf). An error (CONFIG renamed away) changes nothing. */
static void shard_redis_on_limits(redisAsyncContext *ac, void *reply, void *priv)
{
    static const char *names[2] = {"zset-max-listpack-entries", "hash-max-listpack-entries"};
    shard_redis *r = priv;
    redisReply *rep = reply;
    unsigned long have[2] = {0, 0};
    if (rep == NULL || r->ac != ac || rep->type != REDIS_REPLY_ARRAY || !r->o.on_split_limit)
        return;
    for (size_t i = 0; i + 1 < rep->elements; i += 2)
        for (int k = 0; k < 2; k++)
            if (rep->element[i]->type == REDIS_REPLY_STRING &&
                rep->element[i + 1]->type == REDIS_REPLY_STRING &&
                strcmp(rep->element[i]->str, names[k]) == 0)
                have[k] = strtoul(rep->element[i + 1]->str, NULL, 10);
    if (have[0] && have[1])
        r->o.on_split_limit(r->o.cb_arg, shard_split_limit_of(have[0], have[1]));
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
        r->last_activity_ms = ra_now_ms();
        log_info("redis %s:%d: connected, corpus settings agree", r->host, r->o.port);
        return;
    }
    if (rc == 1)
        snprintf(err, sizeof err, "redis %s:%d: %s missing right after creating it",
                 r->host, r->o.port, shard_redis_meta_key());
    snprintf(r->st.last_error, sizeof r->st.last_error, "%s", err);
    /* refuse work; reconnect later in case it is repaired */
    r->state = SHARD_REDIS_MISMATCH;
    r->st.connect_failures++;
    redisAsyncDisconnect(ac);
    if (!r->ever_ready && r->o.on_fatal) {
        r->o.on_fatal(r->o.cb_arg, err);   /* must not free r from here */
        return;
    }
    log_error_rl("%s; refusing requests until it is fixed", err);
}

/* Cluster mode: reply to the setup HSETNX commands (sent through the redirecting
 * path); errors are logged, the HGETALL after them decides. */
static void shard_redis_on_cluster_setnx(void *priv, redisReply *rep, const char *err)
{
    shard_setup *s = priv;
    shard_redis *r = s->r;
    if (s->gen == r->gen && (err || (rep && rep->type == REDIS_REPLY_ERROR)))
        log_warn_rl("redis %s:%d: creating %s: %.*s", r->host, r->o.port, shard_redis_meta_key(),
                    err ? 200 : (int)rep->len, err ? err : rep->str);
    free(s);
}

/* Cluster mode: reply to HGETALL simhash:meta (through the redirecting path). */
static void shard_redis_on_cluster_meta(void *priv, redisReply *rep, const char *err)
{
    shard_setup *s = priv;
    shard_redis *r = s->r;
    unsigned gen = s->gen;
    free(s);
    if (gen != r->gen || r->state != SHARD_REDIS_CONNECTING || r->ac == NULL)
        return;
    if (rep == NULL || rep->type == REDIS_REPLY_ERROR) {
        snprintf(r->st.last_error, sizeof r->st.last_error, "HGETALL %s: %.*s",
                 shard_redis_meta_key(), rep ? (int)rep->len : 200, rep ? rep->str : err);
        log_warn_rl("redis %s:%d: %s", r->host, r->o.port, r->st.last_error);
        r->st.connect_failures++;
        redisAsyncDisconnect(r->ac);
        return;
    }
    shard_redis_on_meta(r->ac, rep, r);
}

/* Cluster mode: reply to CLUSTER NODES on a new connection: learn the node's name,
 * role, a slot it serves and the other nodes. */
static void shard_redis_on_nodes(redisAsyncContext *ac, void *reply, void *priv)
{
    shard_redis *r = priv;
    redisReply *rep = reply;
    cluster_nodes_info *ni;
    char err[200];
    if (rep == NULL || r->ac != ac)
        return;
    if (rep->type != REDIS_REPLY_STRING && rep->type != REDIS_REPLY_STATUS) {
        snprintf(r->st.last_error, sizeof r->st.last_error, "CLUSTER NODES: %.*s",
                 rep->type == REDIS_REPLY_ERROR ? (int)rep->len : 20,
                 rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
        log_error_rl("redis %s:%d: %s (is it a cluster node? see the option cluster)",
                     r->host, r->o.port, r->st.last_error);
        r->st.connect_failures++;
        redisAsyncDisconnect(ac);
        return;
    }
    ni = malloc(sizeof *ni);
    if (ni == NULL)
        return;
    if (cluster_parse_nodes(rep->str, rep->len, r->host, ni, err, sizeof err) == 0) {
        if (!r->announced)
            snprintf(r->node, sizeof r->node, "%s:%d", ni->myself.host, ni->myself.port);
        r->role = ni->is_master;
        if (ni->my_slot >= 0)
            r->my_slot = ni->my_slot;
        r->nknown = ni->nnodes;
        memcpy(r->known, ni->nodes, ni->nnodes * sizeof(ni->nodes[0]));
    } else {
        log_warn_rl("redis %s:%d: %s", r->host, r->o.port, err);
    }
    free(ni);
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
    shard_redis *r = arg;
    (void)fd;
    (void)what;
    if (r->o.cluster && r->attempt >= 2 && r->my_slot >= 0 && r->nknown > 0)
        shard_redis_reattach_start(r);      /* connects when it is done */
    else
        shard_redis_connect(r);
}

/* Starts one connection attempt: connect, then queue AUTH, SELECT, the meta fields (shard_meta_field) and
 * HGETALL (hiredis sends them once the socket is connected). */
void shard_redis_connect(shard_redis *r)
{
    r->state = SHARD_REDIS_CONNECTING;
    redisAsyncContext *ac = ra_connect(r->base, r->host, r->o.port, r, shard_redis_on_connect,
                                       shard_redis_on_disconnect, r->st.last_error,
                                       sizeof r->st.last_error);
    if (ac == NULL) {
        r->st.connect_failures++;
        log_warn_rl("redis %s:%d: connect failed: %s", r->host, r->o.port, r->st.last_error);
        shard_redis_schedule_retry(r);
        return;
    }
    r->ac = ac;
    const char *argv[LAYOUT_META_ARGV];
    char dbs[16], val[16];
    r->gen++;
    if (r->password && r->password[0]) {
        int na = 0;
        argv[na++] = "AUTH";
        if (r->user[0])
            argv[na++] = r->user;       /* ACL user (redis-user) */
        argv[na++] = r->password;
        redisAsyncCommandArgv(ac, shard_redis_on_setup_reply, r, na, argv, NULL);
    }
    if (r->o.on_split_limit) {
        const char *cg[4] = {"CONFIG", "GET", "zset-max-listpack-entries",
                             "hash-max-listpack-entries"};
        redisAsyncCommandArgv(ac, shard_redis_on_limits, r, 4, cg, NULL);
    }
    if (r->o.cluster) {
        /* database 0 only; HSETNX / HGETALL of the meta key follow redirections */
        argv[0] = "CLUSTER";
        argv[1] = "NODES";
        redisAsyncCommandArgv(ac, shard_redis_on_nodes, r, 2, argv, NULL);
        for (int i = 0; i <= LAYOUT_META_FIELDS; i++) {
            shard_setup *s = malloc(sizeof *s);
            if (s == NULL)
                break;
            s->r = r;
            s->gen = r->gen;
            int setnx = i < LAYOUT_META_FIELDS, na = 2;
            if (setnx)
                na = shard_meta_field(&r->o, i, argv, val);
            else {
                argv[0] = "HGETALL";
                argv[1] = shard_redis_meta_key();
            }
            if (shard_redis_send(r, ac, setnx ? shard_redis_on_cluster_setnx
                                              : shard_redis_on_cluster_meta,
                                 s, na, argv, NULL) != 0)
                free(s);
        }
        goto deadline;
    }
    snprintf(dbs, sizeof dbs, "%u", r->o.db);
    argv[0] = "SELECT";
    argv[1] = dbs;
    redisAsyncCommandArgv(ac, shard_redis_on_setup_reply, r, 2, argv, NULL);
    for (int i = 0; i < LAYOUT_META_FIELDS; i++) {
        int na = shard_meta_field(&r->o, i, argv, val);
        redisAsyncCommandArgv(ac, shard_redis_on_setup_reply, r, na, argv, NULL);
    }
    argv[0] = "HGETALL";
    argv[1] = shard_redis_meta_key();
    redisAsyncCommandArgv(ac, shard_redis_on_meta, r, 2, argv, NULL);
deadline:;
    unsigned tmo = r->o.timeout_ms < 1000 ? 1000 : r->o.timeout_ms;
    struct timeval tv = ra_tv_ms(tmo);
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
    r->stall_ev = evtimer_new(base, shard_redis_on_stall_probe, r);
    if (!r->host || !r->password || !r->user || !r->retry_ev || !r->setup_ev ||
        !r->stall_ev) {
        shard_redis_free(r);
        return NULL;
    }
    r->o.host = r->host;
    r->o.password = r->password;
    r->o.user = r->user;
    r->o.announce = NULL;       /* not kept: copied into node below */
    r->role = -1;
    r->my_slot = -1;
    if (!o->cluster)
        snprintf(r->node, sizeof r->node, "%s:%d", o->host, o->port);
    else if (o->announce && o->announce[0]) {
        snprintf(r->node, sizeof r->node, "%s", o->announce);
        r->announced = 1;
    }
    srandom((unsigned)ra_now_ms() ^ (unsigned)getpid());
    shard_redis_connect(r);
    return r;
}

void shard_redis_free(shard_redis *r)
{
    if (r == NULL)
        return;
    shard_redis_cluster_free(r);
    shard_redis_waiting_fail(r, "shutting down");
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
    if (r->stall_ev)
        event_free(r->stall_ev);
    shard_rcmd_free_kept(r);
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

/* ---- NOSCRIPT: a script sent by name that Redis does not have ---- */

/* Reads the argument at *p of a formatted command ("$<len>\r\n<bytes>\r\n"; end: the
 * command's end) into *s and *len, and moves *p past it. Returns 0, or -1. */
static int shard_fmt_arg(const char **p, const char *end, const char **s, size_t *len)
{
    const char *q = *p;
    size_t n = 0;
    if (q >= end || *q++ != '$')
        return -1;
    while (q < end && *q >= '0' && *q <= '9' && n < ((size_t)1 << 40))
        n = n * 10 + (size_t)(*q++ - '0');
    if (end - q < 4 || q[0] != '\r' || q[1] != '\n' || (size_t)(end - q) - 4 < n)
        return -1;
    *s = q + 2;
    *len = n;
    *p = q + 2 + n + 2;
    return 0;
}

/* cmd, an EVALSHA Redis answered NOSCRIPT, becomes EVAL with the text of the script
 * it names (same keys and arguments), which Redis runs and caches; it is sent again
 * to the worker's own node (in a cluster, -MOVED / -ASK lead on from there). Returns
 * 0, or -1 (the layout has no script of that name, out of memory, not sent: the
 * caller hands the NOSCRIPT on). */
static int shard_redis_noscript(shard_redis *r, shard_rcmd *cmd)
{
    const char *end = cmd->fmt + cmd->fmtlen, *name, *sha, *text;
    const char *p = memchr(cmd->fmt, '\n', cmd->fmtlen);
    size_t namelen, shalen;
    cmd->evalsha = 0;                                       /* once */
    if (p == NULL)
        return -1;
    size_t head = (size_t)(++p - cmd->fmt);                 /* "*<argc>\r\n" */
    if (shard_fmt_arg(&p, end, &name, &namelen) != 0 ||
        shard_fmt_arg(&p, end, &sha, &shalen) != 0 ||
        (text = layout_script_text(r->o.scripts, sha, shalen)) == NULL)
        return -1;
    size_t tlen = strlen(text), rest = (size_t)(end - p);
    char mid[48];
    int m = snprintf(mid, sizeof mid, "$4\r\nEVAL\r\n$%zu\r\n", tlen);
    char *fmt = malloc(head + (size_t)m + tlen + 2 + rest);
    if (fmt == NULL)
        return -1;
    memcpy(fmt, cmd->fmt, head);
    memcpy(fmt + head, mid, (size_t)m);
    memcpy(fmt + head + m, text, tlen);
    memcpy(fmt + head + m + tlen, "\r\n", 2);
    memcpy(fmt + head + m + tlen + 2, p, rest);
    free(cmd->fmt);
    cmd->fmt = fmt;
    cmd->fmtlen = head + (size_t)m + tlen + 2 + rest;
    r->st.noscripts++;
    if (r->ac == NULL || r->state != SHARD_REDIS_READY ||
        redisAsyncFormattedCommand(r->ac, shard_redis_on_reply, cmd, cmd->fmt, cmd->fmtlen)
            != REDIS_OK)
        return -1;
    r->inflight++;
    return 0;
}

/* hiredis callback of every command: follow a redirection (cluster mode), send again
 * after -TRYAGAIN or NOSCRIPT, else account for it and hand the reply on. */
void shard_redis_on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    shard_rcmd *cmd = privdata;
    shard_redis *r = cmd->r;
    redisReply *rep = reply;
    r->inflight--;
    if (rep != NULL && ac == r->ac)
        shard_redis_activity(r);    /* any reply, redirections and -TRYAGAIN included */
    if (rep && rep->type == REDIS_REPLY_ERROR && cmd->fmt) {
        unsigned slot;
        cluster_node n;
        cluster_redir_kind kind = cluster_parse_redirect(rep->str, rep->len, &slot, &n);
        if (kind != CLUSTER_REDIR_NONE) {
            if (cmd->background)
                r->st.redirects_background++;
            else if (kind == CLUSTER_REDIR_MOVED)
                r->st.moved++;
            else
                r->st.ask++;
            if (cmd->hops < SHARD_REDIRECTS_MAX && shard_redis_redirect(r, cmd, kind, &n) == 0)
                return;
            r->st.redirect_errors++;
            log_warn_rl("redis: cannot follow '%.*s' (%u hops)", (int)rep->len, rep->str,
                        cmd->hops);
        } else if (rep->len >= 8 && memcmp(rep->str, "TRYAGAIN", 8) == 0 &&
                   shard_redis_tryagain(r, cmd) == 0) {
            return;     /* its slot is migrating and a key is on either side: again soon */
        } else if (cmd->evalsha && rep->len >= 8 && memcmp(rep->str, "NOSCRIPT", 8) == 0 &&
                   shard_redis_noscript(r, cmd) == 0) {
            return;     /* sent again whole, once */
        }
    }
    const char *err = NULL;
    if (reply == NULL)
        err = r->ac == NULL && r->state == SHARD_REDIS_READY ? "shutting down"
                                                             : "connection lost";
    if (reply != NULL && cmd->sent_us != 0)
        rs_hist_add(&r->rtt, ra_now_us() - cmd->sent_us);
    shard_redis_cb fn = cmd->fn;
    void *priv = cmd->priv;
    shard_rcmd_free(r, cmd);
    fn(priv, reply, err);
}

int shard_redis_send(shard_redis *r, redisAsyncContext *ac, shard_redis_cb fn, void *priv,
                     int argc, const char **argv, const size_t *argvlen)
{
    shard_rcmd *cmd = shard_rcmd_new(r);
    if (cmd == NULL)
        return -1;
    cmd->r = r;
    cmd->fn = fn;
    cmd->priv = priv;
    if (r->o.cluster || r->rtt_tick++ % SHARD_RTT_SAMPLE == 0)
        cmd->sent_us = ra_now_us();
    cmd->background = (ac == r->ac && r->state != SHARD_REDIS_READY) ||  /* setup commands */
                      r->send_background;
    if (argc > 0 && (argvlen ? argvlen[0] == 5 : strlen(argv[0]) == 5) &&
        strncasecmp(argv[0], "HMGET", 5) == 0)
        cmd->background = 1;
    cmd->evalsha = r->o.scripts != NULL && argc > 1 &&
                   (argvlen ? argvlen[0] == 7 : strlen(argv[0]) == 7) &&
                   strncasecmp(argv[0], "EVALSHA", 7) == 0;
    int rc;
    /* the usual command (a range scan, a small write) is formatted on the stack,
     * without hiredis's printf-style formatter */
    char small[512];
    size_t len = resp_format_command(small, sizeof small, argc, argv, argvlen);
    if (r->o.cluster || cmd->evalsha) {     /* kept formatted for a redirection, NOSCRIPT */
        if (len > 0) {
            cmd->fmt = malloc(len);
            if (cmd->fmt != NULL)
                memcpy(cmd->fmt, small, len);
        } else {
            int n = redisFormatCommandArgv(&cmd->fmt, argc, argv, argvlen);
            len = n < 0 ? 0 : (size_t)n;
        }
        if (cmd->fmt == NULL) {
            shard_rcmd_free(r, cmd);
            return -1;
        }
        cmd->fmtlen = len;
        rc = redisAsyncFormattedCommand(ac, shard_redis_on_reply, cmd, cmd->fmt, cmd->fmtlen);
    } else if (len > 0) {
        rc = redisAsyncFormattedCommand(ac, shard_redis_on_reply, cmd, small, len);
    } else {
        rc = redisAsyncCommandArgv(ac, shard_redis_on_reply, cmd, argc, argv, argvlen);
    }
    if (rc != REDIS_OK) {
        shard_rcmd_free(r, cmd);
        return -1;
    }
    if (r->inflight == 0)
        r->last_activity_ms = ra_now_ms();
    r->inflight++;
    return 0;
}

int shard_redis_command(shard_redis *r, shard_redis_cb fn, void *priv,
                        int argc, const char **argv, const size_t *argvlen)
{
    if (r->state != SHARD_REDIS_READY || r->ac == NULL)
        return -1;
    if (shard_redis_send(r, r->ac, fn, priv, argc, argv, argvlen) != 0)
        return -1;
    r->st.commands++;
    return 0;
}

int shard_redis_command_background(shard_redis *r, shard_redis_cb fn, void *priv,
                                   int argc, const char **argv, const size_t *argvlen)
{
    r->send_background = 1;
    int rc = shard_redis_command(r, fn, priv, argc, argv, argvlen);
    r->send_background = 0;
    return rc;
}

const rs_hist *shard_redis_rtt(const shard_redis *r)
{
    return &r->rtt;
}

void shard_redis_get_stats(const shard_redis *r, shard_redis_stats *out)
{
    *out = r->st;
    out->inflight = r->inflight;
}

int shard_redis_cluster_mode(const shard_redis *r)
{
    return r->o.cluster != 0;
}

const char *shard_redis_node(const shard_redis *r)
{
    return r->node;
}

