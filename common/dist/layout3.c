/* layout3.c: data layout 3, elastic buckets (docs/elastic-buckets.md): every (table,
 * first byte) shard is cut into buckets that split in two when they reach the split
 * limit, so each key stays a small listpack at any corpus size. Its operations table:
 * keys routed through a cached directory per shard (bucketdir.h) in ctx->dir, writes
 * through the scripts of common/dist/lua/ (embedded at build time), and the answers
 * that tell a program a bucket split under it (layout_dir_reply).
 *
 * Keys ([name:] in front when the corpus has one):
 *   s:{t:xx}:<lo>-<hi>   bucket (sorted set of 7-byte members, score 0)
 *   r:{t:xx}             directory: lower bounds of the live buckets (absent: one)
 *   h:{0:xx}:<lo>-<hi>   the ids of table 0's bucket of the same bounds (as layout 2)
 *   d:, w:, c:           as in layout 2 */
#include "layout_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bucketdir.h"
#include "layout3_int.h"
#include "sha1.h"

extern const char LAYOUT3_LIB_LUA[];
extern const char LAYOUT3_ZSET_LUA[];
extern const char LAYOUT3_ZSETS_LUA[];
extern const char LAYOUT2_LOCK_LUA[];

/* The lock script of layout 3: layout 2's lock steps on the id hash of fp's table-0
 * bucket, checked first (a split bucket answers as the zset script does, nothing
 * written), and the bucket split after a write that filled it. ARGV[6] and [7] (the
 * split limit and the tombstone seconds) are taken out before layout 2's steps read
 * ARGV: KEYS = id hash, overflow set, lock hash, counter hash, table-0 bucket,
 * directory. */
static const char layout3_lock_head[] =
    "local L3_LIMIT = tonumber(table.remove(ARGV, 6))\n"
    "local L3_TTL = tonumber(table.remove(ARGV, 6))\n"
    "local moved = l3_check(KEYS[1], KEYS[6], 'hash')\n"
    "if moved then return moved end\n"
    "local function l3_lock()\n";
static const char layout3_lock_tail[] =
    "\nend\n"
    "local r = l3_lock()\n"
    "if type(r) == 'table' and r[1] == 1 and ARGV[4] == 'A' then\n"
    "  l3_split_full(KEYS[5], KEYS[1], KEYS[6], L3_LIMIT, L3_TTL, {})\n"
    "end\n"
    "return r\n";

/* ---- The cache ---- */

static char *layout3_concat(const char *a, const char *b, const char *c, const char *d)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + strlen(d) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s\n%s%s%s", a, b, c, d);
    return s;
}

int layout3_dir_init_with(layout_ctx *c, const char *lock_head, const char *lock_body,
                          const char *lock_tail)
{
    layout3_dir *d = calloc(1, sizeof *d);
    if (d == NULL)
        return -1;
    d->zset_lua = layout3_concat(LAYOUT3_LIB_LUA, LAYOUT3_ZSET_LUA, "", "");
    d->zsets_lua = layout3_concat(LAYOUT3_LIB_LUA, LAYOUT3_ZSETS_LUA, "", "");
    d->lock_lua = layout3_concat(LAYOUT3_LIB_LUA, lock_head, lock_body, lock_tail);
    if (!d->zset_lua || !d->zsets_lua || !d->lock_lua) {
        free(d->zset_lua);
        free(d->zsets_lua);
        free(d->lock_lua);
        free(d);
        return -1;
    }
    sha1_hex(d->zset_lua, strlen(d->zset_lua), d->zset_sha);
    sha1_hex(d->zsets_lua, strlen(d->zsets_lua), d->zsets_sha);
    sha1_hex(d->lock_lua, strlen(d->lock_lua), d->lock_sha);
    c->dir = d;
    return 0;
}

static int layout3_dir_init(layout_ctx *c)
{
    return layout3_dir_init_with(c, layout3_lock_head, LAYOUT2_LOCK_LUA, layout3_lock_tail);
}

void layout3_dir_free(layout_ctx *c)
{
    layout3_dir *d = c->dir;
    if (d == NULL)
        return;
    for (size_t t = 0; t < PERM_MAX_TABLES; t++) {
        for (size_t x = 0; d->sh[t] && x < LAYOUT3_SHARDS; x++)
            bdir_shard_free(&d->sh[t][x]);
        free(d->sh[t]);
    }
    free(d->zset_lua);
    free(d->zsets_lua);
    free(d->lock_lua);
    free(d);
    c->dir = NULL;
}

/* The directory of (table, shard), allocated (one bucket, never loaded) on first use;
 * NULL out of memory or past the tables. */
bdir_shard *layout3_shard(const layout_ctx *c, unsigned table, unsigned shard)
{
    layout3_dir *d = c->dir;
    if (table >= PERM_MAX_TABLES || shard >= LAYOUT3_SHARDS)
        return NULL;
    if (d->sh[table] == NULL) {
        bdir_shard *v = calloc(LAYOUT3_SHARDS, sizeof *v);
        if (v == NULL)
            return NULL;
        for (unsigned x = 0; x < LAYOUT3_SHARDS; x++) {
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

/* The directory routing p of table t, or a one-bucket stand-in when out of memory
 * (its reads then fail as stale and are retried). */
const bdir_shard *layout3_route(const layout_ctx *c, unsigned table, unsigned shard)
{
    static bdir_bound one_lo[1] = {0};
    static const bdir_shard one = {one_lo, 1, 1, 0};
    const bdir_shard *s = layout3_shard(c, table, shard);
    return s ? s : &one;
}

int layout3_dir_need(const layout_ctx *c, unsigned table, unsigned shard)
{
    const bdir_shard *s = layout3_shard(c, table, shard);
    if (s == NULL || s->loaded_ms == 0)
        return 1;
    return layout_dir_clock() - s->loaded_ms > (uint64_t)c->tombstone_s * 1000u / 3u;
}

void layout3_dir_read(const layout_ctx *c, unsigned table, unsigned shard,
                             layout_cmd *cmd)
{
    (void)c;
    size_t kl = layout_tag_key(cmd->key[0], sizeof cmd->key[0], 'r', table, shard);
    const char *argv[4] = {"ZRANGE", cmd->key[0], "0", "-1"};
    size_t lens[4] = {6, kl, 1, 2};
    for (int i = 0; i < 4; i++) {
        cmd->argv[i] = argv[i];
        cmd->argvlen[i] = lens[i];
    }
    cmd->argc = 4;
}

int layout3_dir_load(const layout_ctx *c, unsigned table, unsigned shard,
                            const redisReply *r, uint64_t sent_ms)
{
    layout3_dir *d = c->dir;
    bdir_shard *s = layout3_shard(c, table, shard);
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
static void layout3_learn(bdir_shard *s, const redisReply *e)
{
    if (e->type != REDIS_REPLY_STRING || e->len < 1 || e->len > BDIR_BOUND_MAX ||
        bdir_shard_add(s, bdir_bound_make(e->str, e->len)) != 0)
        s->loaded_ms = 0;
}

int layout3_dir_reply(const layout_ctx *c, unsigned table, unsigned shard,
                             const redisReply *r)
{
    layout3_dir *d = c->dir;
    bdir_shard *s = layout3_shard(c, table, shard);
    if (s == NULL)
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
            layout3_learn(s, r->element[1]);
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
            layout3_learn(s, e);
            d->st.splits++;
        } else if (e->type == REDIS_REPLY_ARRAY) {      /* split points it followed */
            for (size_t k = 0; k < e->elements; k++)
                layout3_learn(s, e->element[k]);
            d->st.stale++;
        }
    }
    return 0;
}

void layout3_dir_stats(const layout_ctx *c, layout_dir_stats *out)
{
    const layout3_dir *d = c->dir;
    *out = d->st;
    out->buckets = out->shards = 0;
    for (size_t t = 0; t < PERM_MAX_TABLES; t++)
        for (size_t x = 0; d->sh[t] && x < LAYOUT3_SHARDS; x++)
            if (d->sh[t][x].loaded_ms != 0 || d->sh[t][x].n > 1) {
                out->buckets += d->sh[t][x].n;
                out->shards++;
            }
}

/* EVALSHA and the script's name (by_sha), or EVAL and its text. */
void layout3_script(const layout_ctx *c, const char *text, const char *sha,
                           const char **cmd, const char **arg)
{
    *cmd = c->by_sha ? "EVALSHA" : "EVAL";
    *arg = c->by_sha ? sha : text;
}

const char *layout3_script_text(const layout_ctx *c, const char *sha, size_t len)
{
    const layout3_dir *d = c->dir;
    const char *names[] = { d->zset_sha, d->zsets_sha, d->lock_sha };
    const char *texts[] = { d->zset_lua, d->zsets_lua, d->lock_lua };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (len == SHA1_HEX_LEN && memcmp(sha, names[i], len) == 0)
            return texts[i];
    return NULL;
}

/* ---- Keys ---- */

/* The 7 member bytes of p (after its first byte) into out; returns 7. */
size_t layout3_member(uint8_t *out, uint64_t p)
{
    for (int i = 0; i < 7; i++)
        out[i] = (uint8_t)(p >> (48 - 8 * i));
    return 7;
}

/* "[name:]<kind>:{t:xx}:<lo>-<hi>" of bucket i of directory s into buf. */
size_t layout3_bucket_key(char *buf, size_t cap, char kind, unsigned table,
                                 unsigned shard, const bdir_shard *s, size_t i)
{
    return bdir_key(buf, cap, kind, table, shard, s->lo[i], bdir_shard_hi(s, i));
}

/* Key of kind `kind` of the bucket of table t holding p. */
size_t layout3_key_of(const layout_ctx *c, char *buf, size_t cap, char kind,
                             unsigned table, uint64_t p)
{
    unsigned xx = layout_shard_of(p);
    const bdir_shard *s = layout3_route(c, table, xx);
    return layout3_bucket_key(buf, cap, kind, table, xx, s, bdir_shard_find(s, bdir_member(p)));
}

/* ---- Document ids and the lock ---- */

static void layout3_needs(const layout_ctx *c, layout_needs *out)
{
    memset(out, 0, sizeof *out);
    out->zset_entries = c->split_limit;
    out->hash_entries = c->split_limit;
    out->zset_value = 7;
    out->hash_value = LAYOUT2_INLINE_MAX;
}

/* fp's field: in the id hash of its table-0 bucket, the member. */
static size_t layout3_field_of(const layout_ctx *c, uint64_t p0, char *key, uint8_t *member,
                               size_t *mlen)
{
    *mlen = layout3_member(member, p0);
    return layout3_key_of(c, key, LAYOUT_KEY_MAX, 'h', 0, p0);
}

void layout3_lock_cmd(const layout_ctx *c, uint64_t fp, uint64_t p0, const char *token,
                      unsigned long long lease_ms, const char *op, int idhash, layout_cmd *cmd)
{
    const layout3_dir *d = c->dir;
    unsigned xx = layout_shard_of(p0);
    int nk = 0;
    memset(cmd, 0, sizeof *cmd);
    if (idhash)
        layout3_key_of(c, cmd->key[nk++], LAYOUT_KEY_MAX, 'h', 0, p0);
    else
        layout3_key_of(c, cmd->key[nk++], LAYOUT_KEY_MAX, 's', 0, p0);
    layout_doc_key(cmd->key[nk++], LAYOUT_KEY_MAX, fp, p0);
    layout_lock_key(cmd->key[nk++], LAYOUT_KEY_MAX, xx);
    layout_count_key(cmd->key[nk++], LAYOUT_KEY_MAX, xx);
    if (idhash)
        layout3_key_of(c, cmd->key[nk++], LAYOUT_KEY_MAX, 's', 0, p0);
    layout_tag_key(cmd->key[nk++], LAYOUT_KEY_MAX, 'r', 0, xx);
    snprintf(cmd->lease, sizeof cmd->lease, "%llu", lease_ms);
    snprintf(cmd->num[0], sizeof cmd->num[0], "%u", c->split_limit);
    snprintf(cmd->num[1], sizeof cmd->num[1], "%u", c->tombstone_s);
    layout_lock_field(cmd->field, fp);
    const char *ev, *script;
    layout3_script(c, d->lock_lua, d->lock_sha, &ev, &script);
    int k = 0;
    cmd->argv[k++] = ev;
    cmd->argv[k++] = script;
    cmd->argv[k++] = idhash ? "6" : "5";
    for (int i = 0; i < nk; i++)
        cmd->argv[k++] = cmd->key[i];
    const char *tail[] = {cmd->field, token, cmd->lease, op};
    for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
        cmd->argv[k++] = tail[i];
    for (int i = 0; i < k; i++)
        cmd->argvlen[i] = strlen(cmd->argv[i]);
    cmd->argv[k] = (const char *)cmd->member;
    cmd->argvlen[k++] = layout3_member(cmd->member, p0);
    cmd->argv[k] = cmd->num[0];
    cmd->argvlen[k++] = strlen(cmd->num[0]);
    cmd->argv[k] = cmd->num[1];
    cmd->argvlen[k++] = strlen(cmd->num[1]);
    cmd->argc = k;
}

/* EVAL lock: KEYS id hash, overflow set, locks, counters, table-0 bucket, directory;
 * ARGV field, token, lease, op, member, limit, ttl (the caller adds the ids). */
static void layout3_lock(const layout_ctx *c, uint64_t fp, uint64_t p0, const char *token,
                         unsigned long long lease_ms, const char *op, layout_cmd *cmd)
{
    layout3_lock_cmd(c, fp, p0, token, lease_ms, op, 1, cmd);
}

/* ---- Table entries and reads ---- */

/* A bucket read's tag: its shard (a member decodes with it alone) above its index. */
uint64_t layout3_tag(unsigned shard, size_t i)
{
    return (uint64_t)shard << 32 | (uint64_t)i;
}

int layout3_plan(const layout_ctx *c, unsigned table, uint64_t p, unsigned prefix_bits,
                        layout_plan *pl)
{
    if (prefix_bits < LAYOUT_MIN_PREFIX_BITS || prefix_bits > 64)
        return -1;
    uint64_t keep = prefix_bits == 64 ? ~(uint64_t)0 : ~(~(uint64_t)0 >> prefix_bits);
    uint64_t lo = p & keep, hi = p | ~keep;
    const bdir_shard *s = layout3_route(c, table, layout_shard_of(p));
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
    pl->r.lo_len = 1 + layout3_member(pl->r.lo + 1, lo);
    pl->r.hi_len = 1 + layout3_member(pl->r.hi + 1, hi);
    return 0;
}

void layout3_plan_read(const layout_ctx *c, const layout_plan *pl, uint64_t i,
                              layout_read *r)
{
    const bdir_shard *s = layout3_route(c, pl->table, pl->shard);
    size_t b = (size_t)(pl->r.first_bucket + i);
    if (b >= s->n)             /* the plan outlived its directory: read the last bucket */
        b = s->n - 1;
    r->tag = layout3_tag(pl->shard, b);
    r->klen = layout3_bucket_key(r->key, sizeof r->key, 's', pl->table, pl->shard, s, b);
    r->lo = pl->r.lo;
    r->hi = pl->r.hi;
    r->lo_len = pl->r.lo_len;
    r->hi_len = pl->r.hi_len;
}

int layout3_member_decode(const layout_ctx *c, uint64_t tag, const void *member,
                                 size_t len, uint64_t *p)
{
    (void)c;
    const uint8_t *m = member;
    if (len != 7)
        return -1;
    uint64_t v = (tag >> 32) & 0xffu;
    for (size_t i = 0; i < 7; i++)
        v = v << 8 | m[i];
    *p = v;
    return 0;
}

/* ZSCORE of the entry, or the zset script adding / removing it: KEYS bucket, directory
 * [, table 0's id hash]; ARGV op, limit, ttl, member. */
void layout3_entry(const layout_ctx *c, unsigned table, uint64_t p, const char *cmd,
                          layout_cmd *out)
{
    const layout3_dir *d = c->dir;
    memset(out, 0, sizeof *out);
    size_t kl = layout3_key_of(c, out->key[0], sizeof out->key[0], 's', table, p);
    size_t ml = layout3_member(out->member, p);
    if (strcmp(cmd, "ZADD") != 0 && strcmp(cmd, "ZREM") != 0) {
        const char *argv[3] = {cmd, out->key[0], (const char *)out->member};
        size_t lens[3] = {strlen(cmd), kl, ml};
        memcpy(out->argv, argv, sizeof argv);
        memcpy(out->argvlen, lens, sizeof lens);
        out->argc = 3;
        return;
    }
    layout_tag_key(out->key[1], sizeof out->key[1], 'r', table, layout_shard_of(p));
    if (table == 0)
        layout3_key_of(c, out->key[2], sizeof out->key[2], 'h', 0, p);
    snprintf(out->num[0], sizeof out->num[0], "%u", c->split_limit);
    snprintf(out->num[1], sizeof out->num[1], "%u", c->tombstone_s);
    const char *ev, *script;
    layout3_script(c, d->zset_lua, d->zset_sha, &ev, &script);
    const char *argv[] = {ev, script, table == 0 ? "3" : "2", out->key[0],
                          out->key[1], out->key[2], cmd[1] == 'A' ? "A" : "R", out->num[0],
                          out->num[1]};
    int k = 0;
    for (size_t i = 0; i < sizeof argv / sizeof argv[0]; i++) {
        if (i == 5 && table != 0)
            continue;
        out->argv[k] = argv[i];
        out->argvlen[k++] = strlen(argv[i]);
    }
    out->argv[k] = (const char *)out->member;
    out->argvlen[k++] = ml;
    out->argc = k;
}

/* The zsets script of n entries of one fingerprint: KEYS bucket, directory [, table 0's
 * id hash] per entry; ARGV op, limit, ttl, then member and '1' / '0' (an id hash key
 * given) per entry. */
void layout3_entries(const layout_ctx *c, unsigned n, const unsigned *tables,
                            const uint64_t *ps, int add, layout_batch *out)
{
    const layout3_dir *d = c->dir;
    const char *ev, *script;
    unsigned nkeys = 0;
    int k = 3;

    out->argc = 0;
    if (n == 0 || n > LAYOUT_BATCH_MAX)
        return;
    layout3_script(c, d->zsets_lua, d->zsets_sha, &ev, &script);
    for (unsigned i = 0; i < n; i++) {
        char *kb = out->key[nkeys];
        out->argv[k] = kb;
        out->argvlen[k++] = layout3_key_of(c, kb, LAYOUT_KEY_MAX, 's', tables[i], ps[i]);
        kb = out->key[++nkeys];
        out->argv[k] = kb;
        out->argvlen[k++] = layout_tag_key(kb, LAYOUT_KEY_MAX, 'r', tables[i],
                                            layout_shard_of(ps[i]));
        nkeys++;
        if (tables[i] == 0) {
            kb = out->key[nkeys++];
            out->argv[k] = kb;
            out->argvlen[k++] = layout3_key_of(c, kb, LAYOUT_KEY_MAX, 'h', 0, ps[i]);
        }
    }
    snprintf(out->num[0], sizeof out->num[0], "%u", nkeys);
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
        out->argvlen[k++] = layout3_member(out->member[i], ps[i]);
        out->argv[k] = tables[i] == 0 ? "1" : "0";
        out->argvlen[k++] = 1;
    }
    out->argc = k;
}

/* The item (from 1) an element of the zsets script's reply names, or 0 when it names
 * none of the n. */
static unsigned layout3_item_of(const redisReply *r, unsigned n)
{
    if (r->type != REDIS_REPLY_INTEGER || r->integer < 1 || r->integer > (long long)n)
        return 0;
    return (unsigned)r->integer;
}

/* The zsets script's reply: each part goes to the directory of its item's (table,
 * shard), which learns the split points (and the splits met) from it. */
int layout3_entries_reply(const layout_ctx *c, unsigned n, const unsigned *tables,
                                 const uint64_t *ps, const redisReply *r, long long *count)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0 ||
        r->element[0]->type != REDIS_REPLY_INTEGER)
        return -1;
    long long v = r->element[0]->integer;
    if (v == -3) {
        unsigned i = r->elements == 3 ? layout3_item_of(r->element[1], n) : 0;
        if (i == 0 || r->element[2]->type != REDIS_REPLY_ARRAY ||
            layout3_dir_reply(c, tables[i - 1], layout_shard_of(ps[i - 1]), r->element[2]) != 1)
            return -1;
        return 1;
    }
    if (v < 0)
        return -1;
    for (size_t e = 1; e < r->elements; e++) {
        const redisReply *part = r->element[e];
        unsigned i = part->type == REDIS_REPLY_ARRAY && part->elements >= 1
                         ? layout3_item_of(part->element[0], n) : 0;
        if (i == 0)
            return -1;
        layout3_dir_reply(c, tables[i - 1], layout_shard_of(ps[i - 1]), part);
    }
    *count = v;
    return 0;
}

int layout3_bucket_suffix_parse(const layout_ctx *c, unsigned table, unsigned shard,
                                const char *s, size_t len, uint64_t *tag)
{
    (void)c;
    (void)table;
    bdir_bound lo, hi;
    char again[BDIR_SUFFIX_MAX];
    if (len < 2 || s[0] != ':' || bdir_suffix_parse(s + 1, len - 1, &lo, &hi) != 0 ||
        bdir_suffix(again, lo, hi) != len - 1 || memcmp(again, s + 1, len - 1) != 0)
        return -1;
    *tag = layout3_tag(shard, 0);
    return 0;
}

/* ---- The walk of table 0 (SHARD.SCAN) ---- */

size_t layout3_walk_pattern(const layout_ctx *c, unsigned shard, char *buf, size_t cap)
{
    return layout_fixed_walk_pattern(c, shard, buf, cap);
}

uint64_t layout3_walk_tag_of(const layout_ctx *c, uint64_t p)
{
    unsigned xx = layout_shard_of(p);
    return layout3_tag(xx, bdir_shard_find(layout3_route(c, 0, xx), bdir_member(p)));
}

uint64_t layout3_walk_tag_end(const layout_ctx *c, unsigned shard)
{
    return layout3_tag(shard, layout3_route(c, 0, shard)->n);
}

uint64_t layout3_walk_first_value(const layout_ctx *c, uint64_t tag)
{
    unsigned xx = (unsigned)(tag >> 32) & 0xffu;
    size_t i = (size_t)(tag & 0xffffffffu);
    const bdir_shard *s = layout3_route(c, 0, xx);
    if (i >= s->n)
        return ((uint64_t)xx + 1) << 56;        /* 0 past the last shard */
    return (uint64_t)xx << 56 | s->lo[i] >> 8;
}

void layout3_walk_read(const layout_ctx *c, uint64_t tag, uint64_t from, layout_read *r)
{
    unsigned xx = (unsigned)(tag >> 32) & 0xffu;
    size_t i = (size_t)(tag & 0xffffffffu);
    const bdir_shard *s = layout3_route(c, 0, xx);
    if (i >= s->n)
        i = s->n - 1;
    r->tag = tag;
    r->klen = layout3_bucket_key(r->key, sizeof r->key, 's', 0, xx, s, i);
    int inside = layout_shard_of(from) == xx && from >= layout3_walk_first_value(c, tag);
    layout_walk_bounds(r, inside, inside ? layout3_member(r->lo_buf + 1, from) : 0);
}

const layout_ops layout3_ops = {
    .version = 3,
    .name = "layout 3",
    .bucket_bits_default = 8,
    .docs_kind = LAYOUT_KEY_IDHASH,
    .ids_reads = 2,
    .needs = layout3_needs,
    .ids_read = layout_field_ids_read,
    .has_ids = layout_field_has_ids,
    .put_id = layout_field_put_id,
    .field_of = layout3_field_of,
    .lock = layout3_lock,
    .plan = layout3_plan,
    .plan_read = layout3_plan_read,
    .member_decode = layout3_member_decode,
    .entry = layout3_entry,
    .entries = layout3_entries,
    .entries_reply = layout3_entries_reply,
    .walk_pattern = layout3_walk_pattern,
    .walk_tag_of = layout3_walk_tag_of,
    .walk_first_value = layout3_walk_first_value,
    .walk_read = layout3_walk_read,
    .walk_tag_end = layout3_walk_tag_end,
    .bucket_suffix_parse = layout3_bucket_suffix_parse,
    .dir_init = layout3_dir_init,
    .dir_free = layout3_dir_free,
    .dir_need = layout3_dir_need,
    .dir_read = layout3_dir_read,
    .dir_load = layout3_dir_load,
    .dir_reply = layout3_dir_reply,
    .dir_stats = layout3_dir_stats,
    .script_text = layout3_script_text,
};
