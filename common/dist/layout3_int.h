/* layout3_int.h: the parts of layout 3 (layout3.c) that layout 4 (layout4.c) shares:
 * layout 4 is layout 3 with table 0's document ids kept in its members, so its
 * directories, routing, scripts of tables 1.., reads and walks are layout 3's.
 * Internal to common/dist; programs use layout_ops.h. */
#ifndef SIMHASH_LAYOUT3_INT_H
#define SIMHASH_LAYOUT3_INT_H

#include "bucketdir.h"
#include "layout_ops.h"
#include "sha1.h"

#define LAYOUT3_SHARDS 256

/* The cache of one corpus (ctx->dir). */
typedef struct layout3_dir {
    bdir_shard *sh[PERM_MAX_TABLES];  /* per table: LAYOUT3_SHARDS directories, or NULL */
    char *zset_lua, *zsets_lua, *lock_lua;      /* the texts sent with EVAL */
    char zset_sha[SHA1_HEX_LEN + 1], zsets_sha[SHA1_HEX_LEN + 1],
        lock_sha[SHA1_HEX_LEN + 1];   /* their names (EVALSHA) */
    layout_dir_stats st;
} layout3_dir;

/* dir_init with the lock script made of layout3_lib.lua, then head, body, tail. */
int layout3_dir_init_with(layout_ctx *c, const char *lock_head, const char *lock_body,
                          const char *lock_tail);
void layout3_dir_free(layout_ctx *c);
bdir_shard *layout3_shard(const layout_ctx *c, unsigned table, unsigned shard);
const bdir_shard *layout3_route(const layout_ctx *c, unsigned table, unsigned shard);
int layout3_dir_need(const layout_ctx *c, unsigned table, unsigned shard);
void layout3_dir_read(const layout_ctx *c, unsigned table, unsigned shard, layout_cmd *cmd);
int layout3_dir_load(const layout_ctx *c, unsigned table, unsigned shard, const redisReply *r,
                     uint64_t sent_ms);
int layout3_dir_reply(const layout_ctx *c, unsigned table, unsigned shard, const redisReply *r);
void layout3_dir_stats(const layout_ctx *c, layout_dir_stats *out);
/* The lock script call of fp (p0 = perm_0(fp)) up to its ids: KEYS [id hash (idhash:
 * layout 3) or table-0 bucket (layout 4)], overflow set, locks, counters [, table-0
 * bucket (layout 3)], directory; ARGV field, token, lease, op, member, limit, ttl. */
void layout3_lock_cmd(const layout_ctx *c, uint64_t fp, uint64_t p0, const char *token,
                      unsigned long long lease_ms, const char *op, int idhash, layout_cmd *cmd);
/* EVALSHA and the script's name (by_sha), or EVAL and its text. */
void layout3_script(const layout_ctx *c, const char *text, const char *sha, const char **cmd,
                    const char **arg);
const char *layout3_script_text(const layout_ctx *c, const char *sha, size_t len);
/* The 7 member bytes of p (after its first byte) into out; returns 7. */
size_t layout3_member(uint8_t *out, uint64_t p);
size_t layout3_bucket_key(char *buf, size_t cap, char kind, unsigned table, unsigned shard,
                          const bdir_shard *s, size_t i);
/* Key of kind `kind` of the bucket of table t holding p. */
size_t layout3_key_of(const layout_ctx *c, char *buf, size_t cap, char kind, unsigned table,
                      uint64_t p);
/* A bucket read's tag: its shard above its index (bits 32..39 and 0..31). */
uint64_t layout3_tag(unsigned shard, size_t i);
int layout3_plan(const layout_ctx *c, unsigned table, uint64_t p, unsigned prefix_bits,
                 layout_plan *pl);
void layout3_plan_read(const layout_ctx *c, const layout_plan *pl, uint64_t i, layout_read *r);
int layout3_member_decode(const layout_ctx *c, uint64_t tag, const void *member, size_t len,
                          uint64_t *p);
void layout3_entry(const layout_ctx *c, unsigned table, uint64_t p, const char *cmd,
                   layout_cmd *out);
void layout3_entries(const layout_ctx *c, unsigned n, const unsigned *tables, const uint64_t *ps,
                     int add, layout_batch *out);
int layout3_entries_reply(const layout_ctx *c, unsigned n, const unsigned *tables,
                          const uint64_t *ps, const redisReply *r, long long *count);
int layout3_bucket_suffix_parse(const layout_ctx *c, unsigned table, unsigned shard,
                                const char *s, size_t len, uint64_t *tag);
size_t layout3_walk_pattern(const layout_ctx *c, unsigned shard, char *buf, size_t cap);
uint64_t layout3_walk_tag_of(const layout_ctx *c, uint64_t p);
uint64_t layout3_walk_tag_end(const layout_ctx *c, unsigned shard);
uint64_t layout3_walk_first_value(const layout_ctx *c, uint64_t tag);
void layout3_walk_read(const layout_ctx *c, uint64_t tag, uint64_t from, layout_read *r);

#endif
