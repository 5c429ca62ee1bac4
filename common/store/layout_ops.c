/* layout_ops.c: what programs call beside the layout's table (layout_ops.h) that holds
 * no layout decision: the directories' clock, the key index of a command, write
 * counts, key parsing and the steps of reconciling a fingerprint. */
#include "layout_ops.h"
#include "resp.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

uint64_t layout_dir_clock(void)
{
    struct timespec ts;     /* the coarse clock reads no hardware counter: a query asks
                             * for it once per table, and CLOCK_MONOTONIC was ~8% of a
                             * worker's time here */
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u + 1;
}

int layout_cmd_key_index(const layout_cmd *c)
{
    return c->argc > 3 && (strcmp(c->argv[0], "EVAL") == 0 || strcmp(c->argv[0], "EVALSHA") == 0)
               ? 3 : 1;
}

int layout_write_count(const redisReply *r, long long *n)
{
    if (r && r->type == REDIS_REPLY_INTEGER) {
        *n = r->integer;
        return 0;
    }
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
        r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer >= 0) {
        *n = r->element[0]->integer;
        return 0;
    }
    return -1;
}

/* ---- Keys read back ---- */

/* Value of n lower-case hex digits at s, or -1. */
static int64_t layout_hex_value(const char *s, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    return (int64_t)v;
}

/* Writes the key k describes (the inverse of the parse). Returns its length or 0. */
static size_t layout_key_write(const layout_ctx *c, const layout_key *k, char *buf, size_t cap,
                               uint64_t p0)
{
    (void)c;
    switch (k->kind) {
    case LAYOUT_KEY_BUCKET:
        return 0;                       /* read back by the layout */
    case LAYOUT_KEY_IDSET:
        return layout_doc_key(buf, cap, k->fp, p0);
    case LAYOUT_KEY_LOCKS:
        return layout_lock_key(buf, cap, k->shard);
    case LAYOUT_KEY_COUNTS:
        return layout_count_key(buf, cap, k->shard);
    }
    return 0;
}

int layout_key_parse(const layout_ctx *c, const perm_set *ps, const char *key, size_t len,
                     layout_key *out)
{
    const char *pre = layout_corpus();
    size_t plen = pre[0] ? strlen(pre) + 1 : 0;
    if (len < plen + 8 || len >= LAYOUT_KEY_MAX)
        return -1;
    const char *s = key + plen, *end = key + len;
    layout_key k = {.kind = (layout_key_kind)s[0]};
    if (memcmp(s + 1, ":{", 2) != 0)
        return -1;
    const char *colon = memchr(s + 3, ':', (size_t)(end - s - 3));
    const char *close = colon ? memchr(colon, '}', (size_t)(end - colon)) : NULL;
    if (colon == NULL || close == NULL || close - colon != 3 || colon - (s + 3) > 5)
        return -1;
    uint64_t table = 0;
    for (const char *d = s + 3; d < colon; d++) {
        if (*d < '0' || *d > '9')
            return -1;
        table = table * 10 + (uint64_t)(*d - '0');
    }
    int64_t shard = layout_hex_value(colon + 1, 2);
    if (shard < 0 || (ps && table >= ps->ntables))
        return -1;
    k.table = (unsigned)table;
    k.shard = (unsigned)shard;
    const char *rest = close + 1;       /* ":yy.." or ":<fp>" or nothing */
    size_t rlen = (size_t)(end - rest);
    uint64_t p0 = 0;
    switch (k.kind) {
    case LAYOUT_KEY_BUCKET: {   /* the tag written again; the bounds the layout's */
        char again[LAYOUT_KEY_MAX];
        size_t n = layout_tag_key(again, sizeof again, 's', k.table, k.shard);
        if (n != (size_t)(rest - key) || memcmp(again, key, n) != 0 ||
            layout_bucket_suffix_parse(k.table, k.shard, rest, rlen, &k.bucket) != 0)
            return -1;
        *out = k;
        return 0;
    }
    case LAYOUT_KEY_IDSET: {
        int64_t hi = rlen == 17 ? layout_hex_value(rest + 1, 8) : -1;
        int64_t lo = rlen == 17 ? layout_hex_value(rest + 9, 8) : -1;
        if (hi < 0 || lo < 0)
            return -1;
        k.fp = (uint64_t)hi << 32 | (uint64_t)lo;
        p0 = ps ? perm_apply(&ps->tables[0], k.fp) : (uint64_t)shard << 56;
        break;
    }
    case LAYOUT_KEY_LOCKS:
    case LAYOUT_KEY_COUNTS:
        break;
    default:
        return -1;
    }
    char again[LAYOUT_KEY_MAX];
    size_t n = layout_key_write(c, &k, again, sizeof again, p0);
    if (n != len || memcmp(again, key, len) != 0 ||
        (k.kind != LAYOUT_KEY_BUCKET && k.table != 0))
        return -1;
    *out = k;
    return 0;
}

size_t layout_scan_pattern(char *buf, size_t cap, layout_key_kind kind)
{
    const char *pre = layout_corpus();
    int n = snprintf(buf, cap, "%s%s%c:{*", pre, pre[0] ? ":" : "", (char)kind);
    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

/* ---- Reconciling one fingerprint ---- */

void layout_fix_init(layout_fix *f, const perm_set *ps, uint64_t fp, const char *token)
{
    memset(f, 0, sizeof *f);
    f->fp = fp;
    f->p0 = perm_apply(&ps->tables[0], fp);
    snprintf(f->token, sizeof f->token, "%s", token);
}

void layout_fix_lock(const layout_ctx *c, const layout_fix *f, unsigned long long lease_ms,
                     const char *op, layout_cmd *cmd)
{
    c->ops->lock(c, f->fp, f->p0, f->token, lease_ms, op, cmd);
}

int layout_fix_locked(layout_fix *f, const redisReply *r)
{
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        r->element[0]->type != REDIS_REPLY_INTEGER)
        return -1;
    if (r->element[0]->integer != 1 || r->elements < 3 ||
        r->element[2]->type != REDIS_REPLY_INTEGER)
        return 0;
    f->add = r->element[2]->integer > 0;
    return 1;
}

void layout_fix_entry(const layout_ctx *c, const perm_set *ps, const layout_fix *f,
                      unsigned table, layout_cmd *cmd)
{
    c->ops->entry(c, table, perm_apply(&ps->tables[table], f->fp), f->add ? "ZADD" : "ZREM",
                  cmd);
}

int layout_fix_entry_ok(const redisReply *r)
{
    long long n;
    return layout_write_count(r, &n) == 0;
}

void layout_fix_unlock(const layout_fix *f, layout_cmd *cmd)
{
    memset(cmd, 0, sizeof *cmd);
    layout_lock_key(cmd->key[0], sizeof cmd->key[0], layout_shard_of(f->p0));
    layout_lock_field(cmd->field, f->fp);
    const char *argv[6] = {"EVAL", LAYOUT_UNLOCK_LUA, "1", cmd->key[0], cmd->field, f->token};
    cmd->argc = 6;
    for (int i = 0; i < 6; i++) {
        cmd->argv[i] = argv[i];
        cmd->argvlen[i] = strlen(argv[i]);
    }
}
