/* layout_ops.c: the list of layouts, the context of a corpus, key parsing, the steps
 * of reconciling a fingerprint, and the operations the fixed-bucket layouts (1 and
 * 2) share (see layout_ops.h). */
#include "layout_ops.h"
#include "resp.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

extern const layout_ops layout1_ops;
extern const layout_ops layout2_ops;
extern const layout_ops layout3_ops;
extern const layout_ops layout4_ops;

/* Every layout this code reads and writes; a new one is a new line here. */
static const layout_ops *const layout_all[] = {&layout1_ops, &layout2_ops, &layout3_ops,
                                                      &layout4_ops};

const layout_ops *layout_ops_of(unsigned version)
{
    for (size_t i = 0; i < sizeof layout_all / sizeof layout_all[0]; i++)
        if (layout_all[i]->version == version)
            return layout_all[i];
    return NULL;
}

int layout_ctx_init(layout_ctx *c, unsigned version, unsigned bucket_bits)
{
    const layout_ops *ops = layout_ops_of(version);
    if (ops == NULL)
        return -1;
    if (bucket_bits == 0)
        bucket_bits = ops->bucket_bits_default;
    if (!layout_bucket_bits_ok(bucket_bits) ||
        (ops->dir_init && bucket_bits != ops->bucket_bits_default))
        return -1;
    memset(c, 0, sizeof *c);
    c->ops = ops;
    c->version = version;
    c->bucket_bits = bucket_bits;
    c->split_limit = LAYOUT_SPLIT_LIMIT_DEFAULT;
    c->tombstone_s = LAYOUT_TOMBSTONE_S_DEFAULT;
    return ops->dir_init ? ops->dir_init(c) : 0;
}

void layout_ctx_free(layout_ctx *c)
{
    if (c->ops && c->ops->dir_free)
        c->ops->dir_free(c);
    c->dir = NULL;
}

/* ---- Split buckets ---- */

int layout_splits(const layout_ctx *c)
{
    return c->ops->dir_need != NULL;
}

int layout_dir_need(const layout_ctx *c, unsigned table, unsigned shard)
{
    return c->ops->dir_need ? c->ops->dir_need(c, table, shard) : 0;
}

void layout_dir_read(const layout_ctx *c, unsigned table, unsigned shard, layout_cmd *cmd)
{
    memset(cmd, 0, sizeof *cmd);
    if (c->ops->dir_read)
        c->ops->dir_read(c, table, shard, cmd);
}

uint64_t layout_dir_clock(void)
{
    struct timespec ts;     /* the coarse clock reads no hardware counter: a query asks
                             * for it once per table, and CLOCK_MONOTONIC was ~8% of a
                             * worker's time here */
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u + 1;
}

int layout_dir_load(const layout_ctx *c, unsigned table, unsigned shard, const redisReply *r,
                    uint64_t sent_ms)
{
    return c->ops->dir_load ? c->ops->dir_load(c, table, shard, r, sent_ms) : 0;
}

int layout_dir_reply(const layout_ctx *c, unsigned table, unsigned shard, const redisReply *r)
{
    return c->ops->dir_reply && r ? c->ops->dir_reply(c, table, shard, r) : 0;
}

void layout_dir_stats_get(const layout_ctx *c, layout_dir_stats *out)
{
    memset(out, 0, sizeof *out);
    if (c->ops->dir_stats)
        c->ops->dir_stats(c, out);
}

const char *layout_script_text(const layout_ctx *c, const char *sha, size_t len)
{
    return c->ops->script_text && c->dir ? c->ops->script_text(c, sha, len) : NULL;
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

int layout_cmd_docs(layout_cmd *c, unsigned layout, unsigned bucket_bits, uint64_t fp,
                    uint64_t p0)
{
    layout_ctx lc;
    layout_ids_kind kind;
    if (layout_ctx_init(&lc, layout, bucket_bits) != 0)
        return -1;
    lc.ops->ids_read(&lc, 0, fp, p0, c, &kind);
    layout_ctx_free(&lc);
    return 0;
}

int layout_cmd_lock(layout_cmd *c, unsigned layout, unsigned bucket_bits, uint64_t fp,
                    uint64_t p0, const char *token, unsigned long long lease_ms,
                    const char *op)
{
    layout_ctx lc;
    if (layout_ctx_init(&lc, layout, bucket_bits) != 0)
        return -1;
    lc.ops->lock(&lc, fp, p0, token, lease_ms, op, c);
    layout_ctx_free(&lc);
    return 0;
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
    switch (k->kind) {
    case LAYOUT_KEY_BUCKET:
    case LAYOUT_KEY_IDHASH:
        if (k->kind == LAYOUT_KEY_IDHASH)
            return layout_hash_key(buf, cap, k->bucket << (64u - c->bucket_bits),
                                   c->bucket_bits);
        return layout_bucket_key(buf, cap, k->table, k->bucket, c->bucket_bits);
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
    case LAYOUT_KEY_BUCKET:
    case LAYOUT_KEY_IDHASH: {
        if (c->ops->bucket_suffix_parse) {
            if (c->ops->bucket_suffix_parse(c, k.table, k.shard, rest, rlen, &k.bucket) != 0 ||
                (k.kind != LAYOUT_KEY_BUCKET && k.table != 0))
                return -1;
            *out = k;
            return 0;
        }
        size_t hexlen = (c->bucket_bits - 8u) / 4u;
        int64_t low = hexlen ? layout_hex_value(rest + 1, hexlen) : 0;
        if (rlen != 1 + hexlen || low < 0)
            return -1;
        k.bucket = (uint64_t)shard << (c->bucket_bits - 8u) | (uint64_t)low;
        break;
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

/* ---- Ids in bucket hash fields ---- */

/* `cmd hash-key field` of fp's field (key[0], member). */
static void layout_field_cmd(const layout_ctx *c, uint64_t fp, uint64_t p0, const char *cmd,
                             layout_cmd *out)
{
    size_t mlen = 0;
    layout_cmd_overflow(out, fp, p0);
    out->argc = 3;
    out->argv[0] = cmd;
    out->argv[1] = out->key[0];
    out->argv[2] = (const char *)out->member;
    out->argvlen[0] = strlen(cmd);
    out->argvlen[1] = c->ops->field_of(c, p0, out->key[0], out->member, &mlen);
    out->argvlen[2] = mlen;
}

/* Read 0: the field; read 1: the overflow set, which counts when the field is "". */
void layout_field_ids_read(const layout_ctx *c, unsigned i, uint64_t fp, uint64_t p0,
                           layout_cmd *cmd, layout_ids_kind *kind)
{
    if (i == 0) {
        layout_field_cmd(c, fp, p0, "HGET", cmd);
        *kind = LAYOUT_IDS_PACKED;
    } else {
        layout_cmd_overflow(cmd, fp, p0);
        *kind = LAYOUT_IDS_SET;
    }
}

int layout_ids_reply(layout_ids_kind kind, const redisReply *r, const char **v, size_t *len)
{
    if (kind == LAYOUT_IDS_MEMBER) {
        if (r->type != REDIS_REPLY_ARRAY || r->elements > 1)
            return -1;
        if (r->elements == 0)
            return 0;
        r = r->element[0];
        if (r->type != REDIS_REPLY_STRING || r->len < 7)
            return -1;
        *v = r->str + 7;
        *len = r->len - 7;
        return 1;
    }
    if (r->type == REDIS_REPLY_NIL)
        return 0;
    if (kind != LAYOUT_IDS_PACKED || r->type != REDIS_REPLY_STRING)
        return -1;
    *v = r->str;
    *len = r->len;
    return 1;
}

void layout_field_has_ids(const layout_ctx *c, uint64_t fp, uint64_t p0, layout_cmd *cmd)
{
    layout_field_cmd(c, fp, p0, "HEXISTS", cmd);
}

void layout_field_put_id(const layout_ctx *c, uint64_t fp, uint64_t p0, const void *id,
                         size_t idlen, uint8_t *scratch, layout_cmd *cmd)
{
    layout_field_cmd(c, fp, p0, "HSET", cmd);
    cmd->argv[3] = (const char *)scratch;
    cmd->argvlen[3] = layout_ids_put(scratch, id, idlen);
    cmd->argc = 4;
}

/* ---- The fixed-bucket family ---- */

void layout_fixed_needs(const layout_ctx *c, layout_needs *out)
{
    memset(out, 0, sizeof *out);
    out->zset_entries = 128;
    out->zset_value = layout_member_len(c->bucket_bits);
}

int layout_fixed_plan(const layout_ctx *c, unsigned table, uint64_t p, unsigned prefix_bits,
                      layout_plan *pl)
{
    if (layout_range_init(&pl->r, p, prefix_bits, c->bucket_bits) != 0)
        return -1;
    pl->table = table;
    pl->shard = layout_shard_of(p);
    pl->nreads = pl->r.nbuckets;
    return 0;
}

void layout_fixed_plan_read(const layout_ctx *c, const layout_plan *pl, uint64_t i,
                            layout_read *r)
{
    r->tag = pl->r.first_bucket + i;
    r->klen = layout_bucket_key(r->key, sizeof r->key, pl->table, r->tag, c->bucket_bits);
    r->lo = pl->r.lo;
    r->hi = pl->r.hi;
    r->lo_len = pl->r.lo_len;
    r->hi_len = pl->r.hi_len;
}

int layout_fixed_member_decode(const layout_ctx *c, uint64_t tag, const void *member,
                               size_t len, uint64_t *p)
{
    return layout_member_decode(member, len, tag, c->bucket_bits, p);
}

void layout_fixed_entry(const layout_ctx *c, unsigned table, uint64_t p, const char *cmd,
                        layout_cmd *out)
{
    int zadd = strcmp(cmd, "ZADD") == 0;
    memset(out, 0, sizeof *out);
    size_t klen = layout_key_of(out->key[0], sizeof out->key[0], table, p, c->bucket_bits);
    size_t mlen = layout_member(out->member, p, c->bucket_bits);
    int k = 0;
    out->argv[k] = cmd;
    out->argvlen[k++] = strlen(cmd);
    out->argv[k] = out->key[0];
    out->argvlen[k++] = klen;
    if (zadd) {
        out->argv[k] = "0";
        out->argvlen[k++] = 1;
    }
    out->argv[k] = (const char *)out->member;
    out->argvlen[k++] = mlen;
    out->argc = k;
}

void layout_fixed_lock(layout_cmd *c, const char *script, const char *lead_key,
                       uint64_t fp, uint64_t p0, const char *token,
                       unsigned long long lease_ms, const char *op, const uint8_t *tail,
                       size_t tail_len)
{
    memset(c, 0, sizeof *c);
    unsigned xx = layout_shard_of(p0);
    snprintf(c->lease, sizeof c->lease, "%llu", lease_ms);
    layout_lock_field(c->field, fp);
    int k = 0;
    c->argv[k++] = "EVAL";
    c->argv[k++] = script;
    c->argv[k++] = lead_key ? "4" : "3";
    if (lead_key) {
        snprintf(c->key[0], sizeof c->key[0], "%s", lead_key);
        c->argv[k++] = c->key[0];
    }
    layout_doc_key(c->key[1], sizeof c->key[1], fp, p0);
    layout_lock_key(c->key[2], sizeof c->key[2], xx);
    layout_count_key(c->key[3], sizeof c->key[3], xx);
    c->argv[k++] = c->key[1];
    c->argv[k++] = c->key[2];
    c->argv[k++] = c->key[3];
    c->argv[k++] = c->field;
    c->argv[k++] = token;
    c->argv[k++] = c->lease;
    c->argv[k++] = op;
    for (int i = 0; i < k; i++)
        c->argvlen[i] = strlen(c->argv[i]);
    if (tail) {
        memcpy(c->member, tail, tail_len);
        c->argv[k] = (const char *)c->member;
        c->argvlen[k++] = tail_len;
    }
    c->argc = k;
}

size_t layout_fixed_walk_pattern(const layout_ctx *c, unsigned shard, char *buf, size_t cap)
{
    (void)c;
    const char *pre = layout_corpus();
    int n = snprintf(buf, cap, "%s%ss:{0:%02x}:*", pre, pre[0] ? ":" : "", shard & 0xffu);
    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

uint64_t layout_fixed_walk_tag_of(const layout_ctx *c, uint64_t p)
{
    return layout_bucket_of(p, c->bucket_bits);
}

uint64_t layout_fixed_walk_tag_end(const layout_ctx *c, unsigned shard)
{
    return ((uint64_t)shard + 1) << (c->bucket_bits - 8u);
}

uint64_t layout_fixed_walk_first_value(const layout_ctx *c, uint64_t tag)
{
    return tag << (64u - c->bucket_bits);
}

void layout_fixed_walk_read(const layout_ctx *c, uint64_t tag, uint64_t from, layout_read *r)
{
    r->tag = tag;
    r->klen = layout_bucket_key(r->key, sizeof r->key, 0, tag, c->bucket_bits);
    int inside = layout_bucket_of(from, c->bucket_bits) == tag;
    layout_walk_bounds(r, inside, inside ? layout_member(r->lo_buf + 1, from, c->bucket_bits) : 0);
}

void layout_walk_bounds(layout_read *r, int inside, size_t mlen)
{
    r->lo_buf[0] = inside ? '[' : '-';
    r->lo_len = inside ? 1 + mlen : 1;
    r->lo = r->lo_buf;
    r->hi = (const uint8_t *)"+";
    r->hi_len = 1;
}
