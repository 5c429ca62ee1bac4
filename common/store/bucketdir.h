/* bucketdir.h: elastic buckets, the part with no Redis calls (docs/elastic-buckets.md,
 * layout4.c): bounds of buckets as ordered values, bucket key names, and a worker's
 * cached directory of one (table, first byte) shard.
 *
 * The members of table t's shard xx (the 7 bytes of perm_t(fp) after its
 * first byte) are cut into buckets by lower bounds: byte strings of 0 to 7 bytes, in
 * Redis's ZRANGEBYLEX order (memcmp, a prefix before its extensions). Bucket i holds
 * the members m with lo_i <= m < lo_{i+1} (the last one has no upper bound), and is the
 * sorted set "s:{t:xx}:<hex lo>-<hex hi>" (hi empty for the last). A shard starts as
 * one bucket with lo = "" ("s:{t:xx}:-"); a bucket that reaches its size limit splits
 * at a point between its two middle members, the shortest byte string that separates
 * them (so bounds stay short and keys short): the write scripts choose it
 * (`bk_point` in lua/layout4_lib.lua, the one split rule), and the directory learns it
 * from their replies.
 *
 * A bound is kept as one uint64_t whose order is that byte-string order: the bytes
 * left-aligned in bits 63..8 (zero-padded), the length (0..7) in bits 7..0. A member
 * is the bound of its 7 bytes. */
#ifndef SIMHASH_BUCKETDIR_H
#define SIMHASH_BUCKETDIR_H

#include <stddef.h>
#include <stdint.h>

#define BDIR_BOUND_MAX 7             /* bytes of a bound or member */
#define BDIR_NONE UINT64_MAX         /* "no upper bound" (sorts after every bound) */
/* Longest bucket key suffix: "<14 hex>-<14 hex>" + NUL. */
#define BDIR_SUFFIX_MAX (2 * 2 * BDIR_BOUND_MAX + 2)

typedef uint64_t bdir_bound;

/* The bound of the byte string s[0..len) (len <= 7). */
bdir_bound bdir_bound_make(const void *s, size_t len);

/* Writes the bytes of bound b into out[BDIR_BOUND_MAX]; returns their number. */
size_t bdir_bound_bytes(bdir_bound b, uint8_t *out);

/* The member (as a bound) of a permuted value p: its low 56 bits. */
static inline bdir_bound bdir_member(uint64_t p)
{
    return (p << 8) | BDIR_BOUND_MAX;
}

/* The permuted value of member m in shard `shard` (its first byte). */
static inline uint64_t bdir_member_value(bdir_bound m, unsigned shard)
{
    return ((uint64_t)shard << 56) | (m >> 8);
}

/* Parses "<hex lo>-<hex hi>" (the part of a bucket key after its last ':'; hex of 0
 * to 7 bytes each, lower-case, hi empty for "no upper bound"). Returns 0 with *lo and
 * *hi (BDIR_NONE when empty), or -1 when s is not such a suffix or lo >= hi. */
int bdir_suffix_parse(const char *s, size_t len, bdir_bound *lo, bdir_bound *hi);

/* Writes the suffix of the bucket [lo, hi) (hi = BDIR_NONE for none) into
 * buf[BDIR_SUFFIX_MAX]; returns its length. */
size_t bdir_suffix(char *buf, bdir_bound lo, bdir_bound hi);

/* Writes the key "[name:]<kind>:{t:xx}:<lo>-<hi>" of the bucket [lo, hi) of table
 * `table`, shard `shard` (kind 's': its sorted set, 'h': table 0's id hash) into buf,
 * NUL-terminated. Returns its length, or 0 when it does not fit in cap. */
size_t bdir_key(char *buf, size_t cap, char kind, unsigned table, unsigned shard,
                bdir_bound lo, bdir_bound hi);

/* A writer's count of a bucket's members not known (BDIR_COUNT_NONE). */
#define BDIR_COUNT_NONE UINT32_MAX

/* A cached directory of one shard: the sorted lower bounds of its buckets (the first
 * is always 0, the empty string), and when it was last read whole from Redis; cnt[i]
 * is a writer's count of bucket i's members (layout4.c, plain table writes), or
 * BDIR_COUNT_NONE: a bucket a split or a load made starts without one, a bucket whose
 * bounds a load keeps keeps its count. */
typedef struct bdir_shard {
    bdir_bound *lo;
    size_t n, cap;
    uint64_t loaded_ms;
    uint32_t *cnt;              /* cap slots, n used; NULL in a stand-in */
} bdir_shard;

/* An empty directory: one bucket, lo = "". Returns 0, or -1 out of memory. */
int bdir_shard_init(bdir_shard *d);

void bdir_shard_free(bdir_shard *d);

/* Replaces the directory with the bounds los[0..n) (any order, duplicates allowed;
 * "" is added when missing), as read from Redis; a bucket with the same bounds before
 * and after keeps its count. Returns 0, or -1 out of memory (d unchanged). */
int bdir_shard_load(bdir_shard *d, const bdir_bound *los, size_t n);

/* Adds split point s (a no-op when present); the two buckets it makes have no count.
 * Returns 0, or -1 out of memory. */
int bdir_shard_add(bdir_shard *d, bdir_bound s);

/* Index of the bucket holding member m: the last i with lo[i] <= m (found from m's
 * proportional place in lo, galloping; exact for any directory). */
size_t bdir_shard_find(const bdir_shard *d, bdir_bound m);

/* Upper bound of bucket i (BDIR_NONE for the last). */
static inline bdir_bound bdir_shard_hi(const bdir_shard *d, size_t i)
{
    return i + 1 < d->n ? d->lo[i + 1] : BDIR_NONE;
}

#endif
