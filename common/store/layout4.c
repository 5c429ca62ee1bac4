/* layout4.c: data layout 4, the storage format of distributed mode
 * (docs/elastic-buckets.md, docs/protocol.md): elastic buckets with table 0's document
 * ids in its members. Every (table, first byte) shard is cut into buckets that split
 * in two when they reach the split limit, so each key stays a small listpack at any
 * corpus size; keys are routed through a cached directory per shard (bucketdir.h) in
 * ctx->dir, writes go through the scripts of common/store/lua/layout4_*.lua (embedded at
 * build time), and a reply tells a program when a bucket split under it
 * (layout_dir_reply).
 *
 * Keys ([name:] in front when the corpus has one):
 *   s:{t:xx}:<lo>-<hi>   bucket (sorted set, score 0): in tables 1.. the 7 bytes of
 *                        perm_t(fp) after its first byte; in table 0 those 7 bytes
 *                        followed by fp's document ids packed (layout_ids_put), or the
 *                        7 bytes alone when the packing outgrew LAYOUT4_INLINE_MAX and
 *                        the ids live in the overflow set
 *   r:{t:xx}             directory: lower bounds of the live buckets (absent: one)
 *   d:{0:xx}:<16 hex fp> the overflow set of fp's ids
 *   w:{0:xx}, c:{0:xx}   the write locks and the counters of a table-0 shard
 *
 * Table 0's entry of a fingerprint is therefore its ids: the lock script writes it
 * (ids added or removed and the member rewritten in one step), nothing else does.
 * Programs write entries from table 1 on (the table's entry_from); entry() of table 0 is a
 * ZLEXCOUNT of the fingerprint's members, the check both a ZSCORE and a repair need.
 * The 7 bytes decide a member's bucket and its order, so a table-0 member routes and
 * splits as any other (a split point is a prefix of at most 7 bytes: two members
 * differ within their first 7), and a range read of table 0 ends with the successor
 * of its last 7 bytes instead of those bytes themselves (layout4_after). */
#include "layout_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bucketdir.h"
#include "sha1.h"

extern const char LAYOUT4_LIB_LUA[];
extern const char LAYOUT4_ZSET_LUA[];
extern const char LAYOUT4_ZSETS_LUA[];
extern const char LAYOUT4_LOCK_LUA[];
extern const char LAYOUT4_SPLIT_LUA[];

#define LAYOUT4_SHARDS 256
/* The longest table-0 member: Redis's default zset-max-listpack-value (a longer member
 * turns its bucket into a skiplist); layout4_lock.lua's IDS_INLINE is the rest. */
#define LAYOUT4_MEMBER_MAX 64
#define LAYOUT4_INLINE_MAX (LAYOUT4_MEMBER_MAX - 7)
/* A read's tag: bit 40 marks table 0 (its members carry ids), bits 32..39 the shard,
 * bits 0..31 the bucket's index in its directory. */
#define LAYOUT4_T0 ((uint64_t)1 << 40)

/* The cache of one corpus (ctx->dir). */
typedef struct layout4_dir {
    bdir_shard *sh[PERM_MAX_TABLES];  /* per table: LAYOUT4_SHARDS directories, or NULL */
    char *zset_lua, *zsets_lua, *lock_lua;      /* the texts sent with EVAL */
    char *split_lua;
    char zset_sha[SHA1_HEX_LEN + 1], zsets_sha[SHA1_HEX_LEN + 1],
        lock_sha[SHA1_HEX_LEN + 1], split_sha[SHA1_HEX_LEN + 1];   /* their names (EVALSHA) */
    layout_dir_stats st;
} layout4_dir;

/* ---- The cache ---- */

/* The library followed by a script's text, malloc'ed; NULL out of memory. */
static char *layout4_concat(const char *lib, const char *script)
{
    size_t n = strlen(lib) + strlen(script) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s\n%s", lib, script);
    return s;
}

extern const layout_ops layout4_ops;

/* Sets up ctx->dir with the scripts' texts and names. Returns 0, or -1 out of memory. */
static int layout4_dir_init(layout_ctx *c)
{
    layout4_dir *d = calloc(1, sizeof *d);
    if (d == NULL)
        return -1;
    d->zset_lua = layout4_concat(LAYOUT4_LIB_LUA, LAYOUT4_ZSET_LUA);
    d->zsets_lua = layout4_concat(LAYOUT4_LIB_LUA, LAYOUT4_ZSETS_LUA);
    d->lock_lua = layout4_concat(LAYOUT4_LIB_LUA, LAYOUT4_LOCK_LUA);
    d->split_lua = layout4_concat(LAYOUT4_LIB_LUA, LAYOUT4_SPLIT_LUA);
    if (!d->zset_lua || !d->zsets_lua || !d->lock_lua || !d->split_lua) {
        free(d->zset_lua);
        free(d->zsets_lua);
        free(d->lock_lua);
        free(d->split_lua);
        free(d);
        return -1;
    }
    sha1_hex(d->split_lua, strlen(d->split_lua), d->split_sha);
    sha1_hex(d->zset_lua, strlen(d->zset_lua), d->zset_sha);
    sha1_hex(d->zsets_lua, strlen(d->zsets_lua), d->zsets_sha);
    sha1_hex(d->lock_lua, strlen(d->lock_lua), d->lock_sha);
    c->dir = d;
    return 0;
}

int layout_ctx_init(layout_ctx *c)
{
    memset(c, 0, sizeof *c);
    c->ops = &layout4_ops;
    c->split_limit = LAYOUT_SPLIT_LIMIT_DEFAULT;
    c->tombstone_s = LAYOUT_TOMBSTONE_S_DEFAULT;
    return layout4_dir_init(c);
}

static void layout4_dir_free(layout_ctx *c)
{
    layout4_dir *d = c->dir;
    if (d == NULL)
        return;
    for (size_t t = 0; t < PERM_MAX_TABLES; t++) {
        for (size_t x = 0; d->sh[t] && x < LAYOUT4_SHARDS; x++)
            bdir_shard_free(&d->sh[t][x]);
        free(d->sh[t]);
    }
    free(d->zset_lua);
    free(d->zsets_lua);
    free(d->lock_lua);
    free(d->split_lua);
    free(d);
    c->dir = NULL;
}

void layout_ctx_free(layout_ctx *c)
{
    layout4_dir_free(c);
}

/* The directory of (table, shard), allocated (one bucket, never loaded) on first use;
 * NULL out of memory or past the tables. */
static bdir_shard *layout4_shard(const layout_ctx *c, unsigned table, unsigned shard)
{
    layout4_dir *d = c->dir;
    if (table >= PERM_MAX_TABLES || shard >= LAYOUT4_SHARDS)
        return NULL;
    if (d->sh[table] == NULL) {
        bdir_shard *v = calloc(LAYOUT4_SHARDS, sizeof *v);
        if (v == NULL)
            return NULL;
        for (unsigned x = 0; x < LAYOUT4_SHARDS; x++) {
            if (bdir_shard_init(&v[x]) != 0) {
                while (x-- > 0)
                    bdir_shard_free(&v[x]);
                free(v);
                return NULL;
            }
        }
        d->sh[table] = v;
    }
    return &d->sh[table][shard];
}

/* The directory routing a key of (table, shard), or a one-bucket stand-in when out of
 * memory (its reads then fail as stale and are retried). */
static const bdir_shard *layout4_route(const layout_ctx *c, unsigned table, unsigned shard)
{
    static bdir_bound one_lo[1] = {0};
    static const bdir_shard one = {one_lo, 1, 1, 0, NULL};
    const bdir_shard *s = layout4_shard(c, table, shard);
    return s ? s : &one;
}

int layout_dir_need(const layout_ctx *c, unsigned table, unsigned shard)
{
    const bdir_shard *s = layout4_shard(c, table, shard);
    if (s == NULL || s->loaded_ms == 0)
        return 1;
    return layout_dir_clock() - s->loaded_ms > (uint64_t)c->tombstone_s * 1000u / 3u;
}

void layout_dir_read(const layout_ctx *c, unsigned table, unsigned shard, layout_cmd *cmd)
{
    (void)c;
    memset(cmd, 0, sizeof *cmd);
    size_t kl = layout_tag_key(cmd->key[0], sizeof cmd->key[0], 'r', table, shard);
    const char *argv[4] = {"ZRANGE", cmd->key[0], "0", "-1"};
    size_t lens[4] = {6, kl, 1, 2};
    for (int i = 0; i < 4; i++) {
        cmd->argv[i] = argv[i];
        cmd->argvlen[i] = lens[i];
    }
    cmd->argc = 4;
}

int layout_dir_load(const layout_ctx *c, unsigned table, unsigned shard, const redisReply *r,
                    uint64_t sent_ms)
{
    layout4_dir *d = c->dir;
    bdir_shard *s = layout4_shard(c, table, shard);
    if (s == NULL || r == NULL || r->type != REDIS_REPLY_ARRAY)
        return -1;
    bdir_bound *los = malloc((r->elements ? r->elements : 1) * sizeof *los);
    if (los == NULL)
        return -1;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING || e->len > BDIR_BOUND_MAX) {
            free(los);
            return -1;
        }
        los[i] = bdir_bound_make(e->str, e->len);
    }
    int rc = bdir_shard_load(s, los, r->elements);
    free(los);
    if (rc != 0)
        return -1;
    s->loaded_ms = sent_ms ? sent_ms : 1;
    d->st.loads++;
    return 0;
}

/* Adds split point e (a reply string) to the directory; a malformed one marks the
 * directory for reading instead. */
static void layout4_learn(bdir_shard *s, const redisReply *e)
{
    if (e->type != REDIS_REPLY_STRING || e->len < 1 || e->len > BDIR_BOUND_MAX ||
        bdir_shard_add(s, bdir_bound_make(e->str, e->len)) != 0)
        s->loaded_ms = 0;
}

int layout_dir_reply(const layout_ctx *c, unsigned table, unsigned shard, const redisReply *r)
{
    layout4_dir *d = c->dir;
    bdir_shard *s = layout4_shard(c, table, shard);
    if (s == NULL || r == NULL)
        return 0;
    if (r->type == REDIS_REPLY_ERROR) {
        if (r->len < 9 || memcmp(r->str, "WRONGTYPE", 9) != 0)
            return 0;
        s->loaded_ms = 0;       /* a tombstone: its split point is in the directory */
        d->st.stale++;
        return 1;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0)
        return 0;
    if (r->element[0]->type != REDIS_REPLY_INTEGER) {     /* a read of members */
        if (r->elements > d->st.largest)
            d->st.largest = r->elements;
        return 0;
    }
    long long v = r->element[0]->integer;
    if (v == -1 || v == -2) {
        if (v == -1 && r->elements == 2)
            layout4_learn(s, r->element[1]);
        else
            s->loaded_ms = 0;
        d->st.stale++;
        return 1;
    }
    /* a write's reply {n, split points...}, or (from entries_reply) a part of the zsets
     * script's reply for this directory's item: {i, split points it made...} or
     * {i, {split points it followed}} */
    for (size_t i = 1; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type == REDIS_REPLY_STRING) {            /* split points of a write */
            layout4_learn(s, e);
            d->st.splits++;
        } else if (e->type == REDIS_REPLY_ARRAY) {      /* split points it followed */
            for (size_t k = 0; k < e->elements; k++)
                layout4_learn(s, e->element[k]);
            d->st.stale++;
        }
    }
    return 0;
}

void layout_dir_stats_get(const layout_ctx *c, layout_dir_stats *out)
{
    const layout4_dir *d = c->dir;
    *out = d->st;
    out->buckets = out->shards = 0;
    for (size_t t = 0; t < PERM_MAX_TABLES; t++)
        for (size_t x = 0; d->sh[t] && x < LAYOUT4_SHARDS; x++)
            if (d->sh[t][x].loaded_ms != 0 || d->sh[t][x].n > 1) {
                out->buckets += d->sh[t][x].n;
                out->shards++;
            }
}

/* EVALSHA and the script's name (by_sha), or EVAL and its text. */
static void layout4_script(const layout_ctx *c, const char *text, const char *sha,
                           const char **cmd, const char **arg)
{
    *cmd = c->by_sha ? "EVALSHA" : "EVAL";
    *arg = c->by_sha ? sha : text;
}

const char *layout_script_text(const layout_ctx *c, const char *sha, size_t len)
{
    const layout4_dir *d = c->dir;
    if (d == NULL)
        return NULL;
    const char *names[] = { d->zset_sha, d->zsets_sha, d->lock_sha, d->split_sha };
    const char *texts[] = { d->zset_lua, d->zsets_lua, d->lock_lua, d->split_lua };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (len == SHA1_HEX_LEN && memcmp(sha, names[i], len) == 0)
            return texts[i];
    return NULL;
}

/* ---- Keys and members ---- */

/* The 7 member bytes of p (after its first byte) into out; returns 7. */
static size_t layout4_member(uint8_t *out, uint64_t p)
{
    for (int i = 0; i < 7; i++)
        out[i] = (uint8_t)(p >> (48 - 8 * i));
    return 7;
}

/* "[name:]s:{t:xx}:<lo>-<hi>" of bucket i of directory s into buf; returns its length. */
static size_t layout4_bucket_key(char *buf, size_t cap, unsigned table, unsigned shard,
                                 const bdir_shard *s, size_t i)
{
    return bdir_key(buf, cap, 's', table, shard, s->lo[i], bdir_shard_hi(s, i));
}

/* Key of the bucket of table t holding p; returns its length. */
static size_t layout4_key_of(const layout_ctx *c, char *buf, size_t cap, unsigned table,
                             uint64_t p)
{
    unsigned xx = layout_shard_of(p);
    const bdir_shard *s = layout4_route(c, table, xx);
    return layout4_bucket_key(buf, cap, table, xx, s, bdir_shard_find(s, bdir_member(p)));
}

/* A bucket read's tag: table 0's mark, its shard (a member decodes with it alone) and
 * its index. */
static uint64_t layout4_tag(unsigned table, unsigned shard, size_t i)
{
    return (table == 0 ? LAYOUT4_T0 : 0) | (uint64_t)shard << 32 | (uint64_t)i;
}

/* The ZRANGEBYLEX argument ending the members that start with the 7 bytes m: '(' and
 * the shortest string above all of them, or "+" when m is all 0xff. out has room for
 * 8 bytes; returns its length. */
static size_t layout4_after(uint8_t *out, const uint8_t *m)
{
    uint8_t v[7];
    size_t i = 7;
    memcpy(v, m, 7);
    while (i > 0 && v[i - 1] == 0xff)
        i--;
    if (i == 0) {
        out[0] = '+';
        return 1;
    }
    v[i - 1]++;
    out[0] = '(';
    memcpy(out + 1, v, i);
    return 1 + i;
}

/* `name key [m7 after(m7)` on fp's members in its table-0 bucket (ZRANGEBYLEX,
 * ZLEXCOUNT). */
static void layout4_member_cmd(const layout_ctx *c, uint64_t p0, const char *name,
                               layout_cmd *cmd)
{
    memset(cmd, 0, sizeof *cmd);
    size_t kl = layout4_key_of(c, cmd->key[0], sizeof cmd->key[0], 0, p0);
    uint8_t *lo = (uint8_t *)cmd->key[1], *hi = (uint8_t *)cmd->key[2];
    lo[0] = '[';
    layout4_member(lo + 1, p0);
    size_t hl = layout4_after(hi, lo + 1);
    cmd->argv[0] = name;
    cmd->argvlen[0] = strlen(name);
    cmd->argv[1] = cmd->key[0];
    cmd->argvlen[1] = kl;
    cmd->argv[2] = cmd->key[1];
    cmd->argvlen[2] = 8;
    cmd->argv[3] = cmd->key[2];
    cmd->argvlen[3] = hl;
    cmd->argc = 4;
}

/* ---- Document ids and the lock ---- */

void layout_redis_needs(const layout_ctx *c, layout_needs *out)
{
    memset(out, 0, sizeof *out);
    out->zset_entries = c->split_limit;
    out->zset_value = LAYOUT4_MEMBER_MAX;
}

/* Read 0: fp's member (ZRANGEBYLEX, at most one); read 1: the overflow set. */
static void layout4_ids_read(const layout_ctx *c, unsigned i, uint64_t fp, uint64_t p0,
                             layout_cmd *cmd, layout_ids_kind *kind)
{
    if (i == 0) {
        layout4_member_cmd(c, p0, "ZRANGEBYLEX", cmd);
        cmd->argv[4] = "LIMIT";
        cmd->argvlen[4] = 5;
        cmd->argv[5] = "0";
        cmd->argvlen[5] = 1;
        cmd->argv[6] = "1";
        cmd->argvlen[6] = 1;
        cmd->argc = 7;
        *kind = LAYOUT_IDS_MEMBER;
    } else {
        layout_cmd_overflow(cmd, fp, p0);
        *kind = LAYOUT_IDS_SET;
    }
}

/* ZADD of the member with the one id packed in (scratch: 17 + idlen bytes). */
void layout_put_id(const layout_ctx *c, uint64_t fp, uint64_t p0, const void *id,
                   size_t idlen, uint8_t *scratch, layout_cmd *cmd)
{
    (void)fp;
    memset(cmd, 0, sizeof *cmd);
    size_t kl = layout4_key_of(c, cmd->key[0], sizeof cmd->key[0], 0, p0);
    size_t n = layout4_member(scratch, p0);
    n += layout_ids_put(scratch + n, id, idlen);
    const char *argv[4] = {"ZADD", cmd->key[0], "0", (const char *)scratch};
    size_t lens[4] = {4, kl, 1, n};
    memcpy(cmd->argv, argv, sizeof argv);
    memcpy(cmd->argvlen, lens, sizeof lens);
    cmd->argc = 4;
}

/* Sets cmd's first n arguments to the NUL-terminated strings v[0..n) (n fits
 * LAYOUT_CMD_ARGC: the callers' lists are fixed); returns n, the next argument's
 * index. */
static int layout4_strs(layout_cmd *cmd, const char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cmd->argv[i] = v[i];
        cmd->argvlen[i] = strlen(v[i]);
    }
    return (int)n;
}

/* The lock script call (layout4_lock.lua) up to the ids: KEYS table-0 bucket, overflow
 * set, locks, counters, directory; ARGV field, token, lease, op, member, limit, ttl. */
static void layout4_lock(const layout_ctx *c, uint64_t fp, uint64_t p0, const char *token,
                         unsigned long long lease_ms, const char *op, layout_cmd *cmd)
{
    const layout4_dir *d = c->dir;
    unsigned xx = layout_shard_of(p0);
    memset(cmd, 0, sizeof *cmd);
    layout4_key_of(c, cmd->key[0], LAYOUT_KEY_MAX, 0, p0);
    layout_doc_key(cmd->key[1], LAYOUT_KEY_MAX, fp, p0);
    layout_lock_key(cmd->key[2], LAYOUT_KEY_MAX, xx);
    layout_count_key(cmd->key[3], LAYOUT_KEY_MAX, xx);
    layout_tag_key(cmd->key[4], LAYOUT_KEY_MAX, 'r', 0, xx);
    snprintf(cmd->lease, sizeof cmd->lease, "%llu", lease_ms);
    snprintf(cmd->num[0], sizeof cmd->num[0], "%u", c->split_limit);
    snprintf(cmd->num[1], sizeof cmd->num[1], "%u", c->tombstone_s);
    layout_lock_field(cmd->field, fp);
    const char *ev, *script;
    layout4_script(c, d->lock_lua, d->lock_sha, &ev, &script);
    const char *head[] = {ev, script, "5", cmd->key[0], cmd->key[1], cmd->key[2],
                          cmd->key[3], cmd->key[4], cmd->field, token, cmd->lease, op};
    int k = layout4_strs(cmd, head, sizeof head / sizeof head[0]);
    cmd->argv[k] = (const char *)cmd->member;
    cmd->argvlen[k++] = layout4_member(cmd->member, p0);
    cmd->argv[k] = cmd->num[0];
    cmd->argvlen[k++] = strlen(cmd->num[0]);
    cmd->argv[k] = cmd->num[1];
    cmd->argvlen[k++] = strlen(cmd->num[1]);
    cmd->argc = k;
}

/* ---- Table entries and reads ---- */

/* The buckets of table `table` holding the values sharing the top prefix_bits bits of
 * p: usually one; a table-0 read ends past the members starting with its last 7
 * bytes (they carry ids). */
static int layout4_plan(const layout_ctx *c, unsigned table, uint64_t p, unsigned prefix_bits,
                        layout_plan *pl)
{
    if (prefix_bits < LAYOUT_MIN_PREFIX_BITS || prefix_bits > 64)
        return -1;
    uint64_t keep = prefix_bits == 64 ? ~(uint64_t)0 : ~(~(uint64_t)0 >> prefix_bits);
    uint64_t lo = p & keep, hi = p | ~keep;
    const bdir_shard *s = layout4_route(c, table, layout_shard_of(p));
    memset(pl, 0, sizeof *pl);
    pl->table = table;
    pl->shard = layout_shard_of(p);
    size_t first = bdir_shard_find(s, bdir_member(lo));
    bdir_bound top = bdir_member(hi);
    /* the usual range lies in one bucket: the next bound, when there is one, is above */
    size_t last = first + 1 >= s->n || top < s->lo[first + 1] ? first
                                                              : bdir_shard_find(s, top);
    pl->r.first_bucket = first;
    pl->r.nbuckets = last - first + 1;
    pl->nreads = pl->r.nbuckets;
    pl->r.lo[0] = pl->r.hi[0] = '[';
    pl->r.lo_len = 1 + layout4_member(pl->r.lo + 1, lo);
    pl->r.hi_len = 1 + layout4_member(pl->r.hi + 1, hi);
    if (table == 0) {
        uint8_t last7[7];
        memcpy(last7, pl->r.hi + 1, 7);
        pl->r.hi_len = layout4_after(pl->r.hi, last7);
    }
    return 0;
}

static void layout4_plan_read(const layout_ctx *c, const layout_plan *pl, uint64_t i,
                              layout_read *r)
{
    const bdir_shard *s = layout4_route(c, pl->table, pl->shard);
    size_t b = (size_t)(pl->r.first_bucket + i);
    if (b >= s->n)             /* the plan outlived its directory: read the last bucket */
        b = s->n - 1;
    r->tag = layout4_tag(pl->table, pl->shard, b);
    r->klen = layout4_bucket_key(r->key, sizeof r->key, pl->table, pl->shard, s, b);
    r->lo = pl->r.lo;
    r->hi = pl->r.hi;
    r->lo_len = pl->r.lo_len;
    r->hi_len = pl->r.hi_len;
}

/* The value of a member read under tag: its shard byte and its first 7 bytes (a
 * table-0 member may carry up to LAYOUT4_INLINE_MAX bytes of ids after them). */
static int layout4_member_decode(const layout_ctx *c, uint64_t tag, const void *member,
                                 size_t len, uint64_t *p)
{
    (void)c;
    const uint8_t *m = member;
    if (len != 7 && !((tag & LAYOUT4_T0) && len > 7 && len <= LAYOUT4_MEMBER_MAX))
        return -1;
    uint64_t v = (tag >> 32) & 0xffu;
    for (size_t i = 0; i < 7; i++)
        v = v << 8 | m[i];
    *p = v;
    return 0;
}

/* The packed ids after the 7 bytes of a table-0 member (len 0: in the overflow set);
 * -1 for a member of another table or of no place. */
static int layout4_member_ids(const layout_ctx *c, uint64_t tag, const void *member,
                              size_t len, const char **v, size_t *vlen)
{
    (void)c;
    if (!(tag & LAYOUT4_T0) || len < 7 || len > LAYOUT4_MEMBER_MAX)
        return -1;
    *v = (const char *)member + 7;
    *vlen = len - 7;
    return 1;
}

int layout_ids_reply(layout_ids_kind kind, const redisReply *r, const char **v, size_t *len)
{
    if (kind != LAYOUT_IDS_MEMBER || r->type != REDIS_REPLY_ARRAY || r->elements > 1)
        return -1;
    if (r->elements == 0)
        return 0;
    r = r->element[0];
    if (r->type != REDIS_REPLY_STRING)
        return -1;
    return layout4_member_ids(NULL, LAYOUT4_T0, r->str, r->len, v, len);
}

/* Table 0: ZLEXCOUNT of fp's members whatever cmd is (the lock script writes them).
 * Tables 1..: `cmd key member` (ZSCORE), or for ZADD / ZREM the zset script adding or
 * removing the entry: KEYS bucket, directory; ARGV op, limit, ttl, member. */
static void layout4_entry(const layout_ctx *c, unsigned table, uint64_t p, const char *cmd,
                          layout_cmd *out)
{
    if (table == 0) {
        layout4_member_cmd(c, p, "ZLEXCOUNT", out);
        return;
    }
    const layout4_dir *d = c->dir;
    memset(out, 0, sizeof *out);
    size_t kl = layout4_key_of(c, out->key[0], sizeof out->key[0], table, p);
    size_t ml = layout4_member(out->member, p);
    if (strcmp(cmd, "ZADD") != 0 && strcmp(cmd, "ZREM") != 0) {
        const char *argv[3] = {cmd, out->key[0], (const char *)out->member};
        size_t lens[3] = {strlen(cmd), kl, ml};
        memcpy(out->argv, argv, sizeof argv);
        memcpy(out->argvlen, lens, sizeof lens);
        out->argc = 3;
        return;
    }
    layout_tag_key(out->key[1], sizeof out->key[1], 'r', table, layout_shard_of(p));
    snprintf(out->num[0], sizeof out->num[0], "%u", c->split_limit);
    snprintf(out->num[1], sizeof out->num[1], "%u", c->tombstone_s);
    const char *ev, *script;
    layout4_script(c, d->zset_lua, d->zset_sha, &ev, &script);
    const char *argv[] = {ev, script, "2", out->key[0], out->key[1],
                          cmd[1] == 'A' ? "A" : "R", out->num[0], out->num[1]};
    int k = layout4_strs(out, argv, sizeof argv / sizeof argv[0]);
    out->argv[k] = (const char *)out->member;
    out->argvlen[k++] = ml;
    out->argc = k;
}

/* The zsets script of n entries (tables 1..): KEYS bucket, directory per entry; ARGV
 * op, limit, ttl, then the member of each entry. An item of table 0 (the lock
 * script's alone) makes no command (argc 0). */
static void layout4_entries(const layout_ctx *c, unsigned n, const unsigned *tables,
                            const uint64_t *ps, int add, layout_batch *out)
{
    const layout4_dir *d = c->dir;
    const char *ev, *script;
    int k = 3;

    out->argc = 0;
    if (n == 0 || n > LAYOUT_BATCH_MAX)
        return;
    for (unsigned i = 0; i < n; i++)
        if (tables[i] == 0)
            return;
    layout4_script(c, d->zsets_lua, d->zsets_sha, &ev, &script);
    for (unsigned i = 0; i < n; i++) {
        char *kb = out->key[2 * i];
        out->argv[k] = kb;
        out->argvlen[k++] = layout4_key_of(c, kb, LAYOUT_KEY_MAX, tables[i], ps[i]);
        kb = out->key[2 * i + 1];
        out->argv[k] = kb;
        out->argvlen[k++] = layout_tag_key(kb, LAYOUT_KEY_MAX, 'r', tables[i],
                                           layout_shard_of(ps[i]));
    }
    snprintf(out->num[0], sizeof out->num[0], "%u", 2 * n);
    snprintf(out->num[1], sizeof out->num[1], "%u", c->split_limit);
    snprintf(out->num[2], sizeof out->num[2], "%u", c->tombstone_s);
    const char *head[3] = {ev, script, out->num[0]};
    const char *args[3] = {add ? "A" : "R", out->num[1], out->num[2]};
    for (int i = 0; i < 3; i++) {
        out->argv[i] = head[i];
        out->argvlen[i] = strlen(head[i]);
        out->argv[k] = args[i];
        out->argvlen[k++] = strlen(args[i]);
    }
    for (unsigned i = 0; i < n; i++) {
        out->argv[k] = (const char *)out->member[i];
        out->argvlen[k++] = layout4_member(out->member[i], ps[i]);
    }
    out->argc = k;
}

/* The item (from 1) an element of the zsets script's reply names, or 0 when it names
 * none of the n. */
static unsigned layout4_item_of(const redisReply *r, unsigned n)
{
    if (r->type != REDIS_REPLY_INTEGER || r->integer < 1 || r->integer > (long long)n)
        return 0;
    return (unsigned)r->integer;
}

/* The zsets script's reply: each part goes to the directory of its item's (table,
 * shard), which learns the split points (and the splits met) from it. */
static int layout4_entries_reply(const layout_ctx *c, unsigned n, const unsigned *tables,
                                 const uint64_t *ps, const redisReply *r, long long *count)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0 ||
        r->element[0]->type != REDIS_REPLY_INTEGER)
        return -1;
    long long v = r->element[0]->integer;
    if (v == -3) {
        unsigned i = r->elements == 3 ? layout4_item_of(r->element[1], n) : 0;
        if (i == 0 || r->element[2]->type != REDIS_REPLY_ARRAY ||
            layout_dir_reply(c, tables[i - 1], layout_shard_of(ps[i - 1]), r->element[2]) != 1)
            return -1;
        return 1;
    }
    if (v < 0)
        return -1;
    for (size_t e = 1; e < r->elements; e++) {
        const redisReply *part = r->element[e];
        unsigned i = part->type == REDIS_REPLY_ARRAY && part->elements >= 1
                         ? layout4_item_of(part->element[0], n) : 0;
        if (i == 0)
            return -1;
        layout_dir_reply(c, tables[i - 1], layout_shard_of(ps[i - 1]), part);
    }
    *count = v;
    return 0;
}

/* ---- Plain table writes and their splits ---- */

/* `ZADD key 0 member` or `ZREM key member` of p in table `table` (1..), on the bucket
 * the cached directory routes p to. A bucket that split since answers WRONGTYPE (its
 * key is a tombstone), which layout_dir_reply reads as "read the directory again". */
static void layout4_plain(const layout_ctx *c, unsigned table, uint64_t p, int add,
                          layout_cmd *out)
{
    memset(out, 0, sizeof *out);
    size_t kl = layout4_key_of(c, out->key[0], sizeof out->key[0], table, p);
    size_t ml = layout4_member(out->member, p);
    int k = 0;
    out->argv[k] = add ? "ZADD" : "ZREM";
    out->argvlen[k++] = 4;
    out->argv[k] = out->key[0];
    out->argvlen[k++] = kl;
    if (add) {
        out->argv[k] = "0";
        out->argvlen[k++] = 1;
    }
    out->argv[k] = (const char *)out->member;
    out->argvlen[k++] = ml;
    out->argc = k;
}

/* The count of the bucket routing p in table `table`: a slot of its cached directory
 * (bucketdir.h, cnt), so one per bucket the worker knows, kept while the bucket's
 * bounds stay; NULL when the directory is a stand-in (out of memory). */
static uint32_t *layout4_count_of(const layout_ctx *c, unsigned table, uint64_t p)
{
    bdir_shard *s = layout4_shard(c, table, layout_shard_of(p));
    if (s == NULL || s->cnt == NULL)
        return NULL;
    return &s->cnt[bdir_shard_find(s, bdir_member(p))];
}

/* A plain ZADD of p answered n (1 added, 0 there already). Returns 1 when the split
 * call of p's bucket should follow (the count reached the split limit, or the bucket
 * has no count yet), else 0. */
static int layout4_plain_count(const layout_ctx *c, unsigned table, uint64_t p, long long n)
{
    uint32_t *e = layout4_count_of(c, table, p);
    if (e == NULL)
        return 1;
    /* no count yet, or the limit reached: the split call's reply sets the count; till
     * then the count goes on from 0, so a call that never answers costs at most
     * another split_limit writes before the next call */
    if (*e == BDIR_COUNT_NONE) {
        *e = 0;
        return 1;
    }
    *e += n > 0 ? (uint32_t)n : 0;
    if (*e < c->split_limit)
        return 0;
    *e = 0;
    return 1;
}

/* The split call (layout4_split.lua) of p's bucket: KEYS bucket, directory; ARGV
 * limit, ttl, member. */
static void layout4_split(const layout_ctx *c, unsigned table, uint64_t p, layout_cmd *out)
{
    const layout4_dir *d = c->dir;
    memset(out, 0, sizeof *out);
    layout4_key_of(c, out->key[0], sizeof out->key[0], table, p);
    layout_tag_key(out->key[1], sizeof out->key[1], 'r', table, layout_shard_of(p));
    snprintf(out->num[0], sizeof out->num[0], "%u", c->split_limit);
    snprintf(out->num[1], sizeof out->num[1], "%u", c->tombstone_s);
    const char *ev, *script;
    layout4_script(c, d->split_lua, d->split_sha, &ev, &script);
    const char *argv[] = {ev, script, "2", out->key[0], out->key[1], out->num[0], out->num[1]};
    int k = layout4_strs(out, argv, sizeof argv / sizeof argv[0]);
    out->argv[k] = (const char *)out->member;
    out->argvlen[k++] = layout4_member(out->member, p);
    out->argc = k;
}

/* The split call's reply {size, split points...}, after layout_dir_reply learnt its
 * points: the count of the bucket now holding p is its size. NULL (the key had split
 * under the call) leaves the bucket without a count, so the next write to it asks
 * again. Returns 0, or -1 for a reply of no known shape (the count is dropped too). */
static int layout4_split_reply(const layout_ctx *c, unsigned table, uint64_t p,
                               const redisReply *r)
{
    uint32_t *e = layout4_count_of(c, table, p);
    int ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
             r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer >= 0;
    if (e != NULL)
        *e = ok && r->element[0]->integer < BDIR_COUNT_NONE ? (uint32_t)r->element[0]->integer
                                                             : BDIR_COUNT_NONE;
    return ok || r == NULL ? 0 : -1;
}

/* The tag of a bucket key's shard (its index is not in the key). */
int layout_bucket_suffix_parse(unsigned table, unsigned shard, const char *s, size_t len,
                               uint64_t *tag)
{
    bdir_bound lo, hi;
    char again[BDIR_SUFFIX_MAX];
    if (len < 2 || s[0] != ':' || bdir_suffix_parse(s + 1, len - 1, &lo, &hi) != 0 ||
        bdir_suffix(again, lo, hi) != len - 1 || memcmp(again, s + 1, len - 1) != 0)
        return -1;
    *tag = layout4_tag(table, shard, 0);
    return 0;
}

/* ---- The walk of table 0 (SHARD.SCAN) ---- */

/* Bucket i from from's on in from's directory: its members from `from` on (the whole
 * bucket when from lies below it) to its end, and its first value; past the last, the
 * first value of the next shard. */
static int layout4_walk(const layout_ctx *c, uint64_t from, uint64_t i, layout_walk *w)
{
    unsigned xx = layout_shard_of(from);
    const bdir_shard *s = layout4_route(c, 0, xx);
    size_t first = bdir_shard_find(s, bdir_member(from));
    memset(w, 0, sizeof *w);
    if (i >= s->n - first) {
        w->first = ((uint64_t)xx + 1) << 56;        /* 0 past the last shard */
        return 0;
    }
    size_t b = first + (size_t)i;
    layout_read *r = &w->read;
    w->first = (uint64_t)xx << 56 | s->lo[b] >> 8;
    r->tag = layout4_tag(0, xx, b);
    r->klen = layout4_bucket_key(r->key, sizeof r->key, 0, xx, s, b);
    int inside = from >= w->first;
    r->lo_buf[0] = inside ? '[' : '-';
    r->lo_len = inside ? 1 + layout4_member(r->lo_buf + 1, from) : 1;
    r->lo = r->lo_buf;
    r->hi = (const uint8_t *)"+";
    r->hi_len = 1;
    return 1;
}

const layout_ops layout4_ops = {
    .entry_from = 1,
    .entry = layout4_entry,
    .entries = layout4_entries,
    .entries_reply = layout4_entries_reply,
    .plain = layout4_plain,
    .plain_count = layout4_plain_count,
    .split = layout4_split,
    .split_reply = layout4_split_reply,
    .lock = layout4_lock,
    .ids_read = layout4_ids_read,
    .member_decode = layout4_member_decode,
    .member_ids = layout4_member_ids,
    .plan = layout4_plan,
    .plan_read = layout4_plan_read,
    .walk = layout4_walk,
};

/* ---- What `simhash fsck` judges (client/cli/cmd_fsck_split.c) ----
 * Kept apart from the table above: fsck reads keys and members back through these,
 * so no file outside common/store decodes either. */

int layout_dir_key_parse(const char *key, size_t len, unsigned *table, unsigned *shard)
{
    const char *pre = layout_corpus();
    size_t plen = pre[0] ? strlen(pre) + 1 : 0, i = plen + 3;
    unsigned t = 0, xx = 0;
    if (len < plen + 8 || len >= LAYOUT_KEY_MAX || memcmp(key + plen, "r:{", 3) != 0)
        return -1;
    for (; i < len && key[i] >= '0' && key[i] <= '9' && i < plen + 8; i++)
        t = t * 10 + (unsigned)(key[i] - '0');
    if (i + 4 != len || t >= PERM_MAX_TABLES || key[i] != ':')
        return -1;
    for (size_t k = i + 1; k < i + 3; k++) {
        char ch = key[k];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        xx = xx << 4 | (unsigned)d;
    }
    char again[LAYOUT_KEY_MAX];
    if (layout_tag_key(again, sizeof again, 'r', t, xx) != len || memcmp(again, key, len) != 0)
        return -1;
    *table = t;
    *shard = xx;
    return 0;
}

int layout_bucket_judge(const layout_ctx *c, const perm_set *ps, const char *key, size_t len,
                        const redisReply *members, layout_bucket_verdict *v)
{
    layout_key k;
    bdir_bound lo, hi;
    memset(v, 0, sizeof *v);
    if (layout_key_parse(c, ps, key, len, &k) != 0 || k.kind != LAYOUT_KEY_BUCKET)
        return -1;
    char tag[LAYOUT_KEY_MAX];
    size_t n = layout_tag_key(tag, sizeof tag, 's', k.table, k.shard);   /* then ":<lo>-<hi>" */
    if (n == 0 || n + 1 >= len || bdir_suffix_parse(key + n + 1, len - n - 1, &lo, &hi) != 0)
        return -1;
    v->table = k.table;
    v->shard = k.shard;
    v->tag = k.bucket;
    const bdir_shard *s = layout4_route(c, k.table, k.shard);
    size_t i = bdir_shard_find(s, lo);
    v->outside = s->lo[i] != lo || bdir_shard_hi(s, i) != hi;
    if (members == NULL || members->type != REDIS_REPLY_ARRAY)
        return 0;
    for (size_t m = 0; m < members->elements; m++) {
        const redisReply *e = members->element[m];
        uint64_t p;
        if (e->type != REDIS_REPLY_STRING ||
            layout4_member_decode(c, k.bucket, e->str, e->len, &p) != 0 ||
            bdir_member(p) < lo || bdir_member(p) >= hi)
            v->stray++;
    }
    return 0;
}
