/* args.c: the argument checks shared by the SHARD.* commands of simhash-shard
 * (handlers.c, query.c): parsing of fingerprints and table numbers, the shard-ownership and
 * Redis-availability checks, the document-id checks, and the immediate error replies
 * they answer with (each counted in the worker's stats). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "layout.h"
#include "parse.h"
#include "shard.h"

/* Answers req with an error at once and counts it. */
void shard_fail(rs_req *req, rs_errcode code, unsigned long long *counter,
                const char *fmt, ...)
{
    shard_ctx *sc = rs_req_ctx(req);
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sc->st.errors++;
    if (counter)
        (*counter)++;
    rs_req_fail(req, code, "%s", msg);
}

/* Parses argument i as a fingerprint; answers -ERR and returns -1 when it is not. */
int shard_arg_fp(rs_req *req, size_t i, uint64_t *fp)
{
    shard_ctx *sc = rs_req_ctx(req);
    size_t len;
    const char *s = rs_req_arg(req, i, &len);
    const char *why;
    if (parse_u64(s, len, fp, &why) != 0) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "fingerprint '%.40s': %s", s, why);
        return -1;
    }
    return 0;
}

/* Parses argument i as a table number; answers -ERR and returns -1 when it is not. */
int shard_arg_table(rs_req *req, size_t i, unsigned *t)
{
    shard_ctx *sc = rs_req_ctx(req);
    size_t len;
    const char *s = rs_req_arg(req, i, &len);
    const char *why;
    uint64_t v;
    if (parse_uint_range(s, len, 0, sc->ps.ntables - 1, &v, &why) != 0) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "table '%.40s': %s", s, why);
        return -1;
    }
    *t = (unsigned)v;
    return 0;
}

/* Checks that permuted value p (of table t) is in a shard this worker serves;
 * answers -WRONGSHARD and returns -1 when not. */
int shard_check_owner(rs_req *req, unsigned t, uint64_t p)
{
    shard_ctx *sc = rs_req_ctx(req);
    unsigned s = layout_shard_of(p);
    if (s < sc->cfg.lo || s > sc->cfg.hi) {
        shard_fail(req, RS_WRONGSHARD, &sc->st.wrongshard,
                   "table %u shard %u is not served by this worker (it serves %u-%u)",
                   t, s, sc->cfg.lo, sc->cfg.hi);
        return -1;
    }
    return 0;
}

/* Checks that Redis is usable and n more commands fit; answers -REDIS / -BUSY and
 * returns -1 when not. */
int shard_check_redis(rs_req *req, unsigned n)
{
    shard_ctx *sc = rs_req_ctx(req);
    shard_redis_state state = shard_redis_get_state(sc->redis);
    if (state != SHARD_REDIS_READY) {
        shard_redis_stats rst;
        shard_redis_get_stats(sc->redis, &rst);
        shard_fail(req, RS_REDIS, &sc->st.unavail, "unavailable (redis %s:%u %s%s%s)",
                   sc->cfg.redis_host, sc->cfg.redis_port, shard_redis_state_name(state),
                   rst.last_error[0] ? ": " : "", rst.last_error);
        return -1;
    }
    if (n > sc->cfg.max_inflight_redis) {
        shard_fail(req, RS_ERR, &sc->st.bad_args,
                   "request needs %u redis commands, more than max-inflight-redis %u", n,
                   sc->cfg.max_inflight_redis);
        return -1;
    }
    if (!shard_redis_room(sc->redis, n)) {
        shard_fail(req, RS_BUSY, &sc->st.busy,
                   "max-inflight-redis (%u) reached; retry later", sc->cfg.max_inflight_redis);
        return -1;
    }
    return 0;
}

/* Document key of fp, after the shard check; returns -1 (answered) when not ours. */
int shard_doc_key(rs_req *req, uint64_t fp, char key[LAYOUT_KEY_MAX])
{
    shard_ctx *sc = rs_req_ctx(req);
    uint64_t p0 = perm_apply(&sc->ps.tables[0], fp);
    if (shard_check_owner(req, 0, p0) != 0)
        return -1;
    layout_doc_key(key, LAYOUT_KEY_MAX, fp, p0);
    return 0;
}

void shard_oom(rs_req *req)
{
    shard_ctx *sc = rs_req_ctx(req);
    sc->st.errors++;
    rs_req_fail(req, RS_OOM, "out of memory");
}

/* Most document ids in one SHARD.LOCK (the request limits bound it too). */
#define SHARD_MAX_DOCIDS 65536

/* Checks document ids in arguments [from, from+n): answers -ERR and returns -1 when
 * there are too many or one is empty. */
int shard_check_docids(rs_req *req, size_t from, size_t n)
{
    shard_ctx *sc = rs_req_ctx(req);
    if (n > SHARD_MAX_DOCIDS) {
        shard_fail(req, RS_ERR, &sc->st.bad_args, "%zu document ids in one request; at most %d",
                   n, SHARD_MAX_DOCIDS);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        size_t len;
        rs_req_arg(req, from + i, &len);
        if (len == 0) {
            shard_fail(req, RS_ERR, &sc->st.bad_args, "empty document id");
            return -1;
        }
    }
    return 0;
}
