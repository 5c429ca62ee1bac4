/* layout.h: the Redis data layout of distributed mode (layout version 1, see
 * docs/protocol.md): key names, member encoding and the ZRANGEBYLEX bounds of a
 * prefix range. Pure functions on permuted values; no Redis calls here.
 *
 * Table t stores perm_t(fp) = p as follows, with B = bucket_bits (8, 16 or 24):
 *   key    s:{t:xx}:yy..   xx = top 8 bits of p (2 hex digits), yy.. = the next
 *                          B-8 bits as (B-8)/4 lower-case hex digits (none for B=8)
 *   member the low 64-B bits of p as (64-B)/8 big-endian bytes, score 0
 * Document ids of fp live in the set d:{0:xx}:<16 hex of fp>, xx = top byte of
 * perm_0(fp). The hash c:{0:xx} counts the fingerprints (non-empty document sets) and
 * document ids of shard xx. The hash w:{0:xx} holds the write locks of shard xx's
 * fingerprints: field = the 16 hex digits of fp, value = "<expiry ms>:<token>".
 * Every write of a fingerprint holds its lock (LAYOUT_LOCK_LUA changes the document
 * set and takes the lock in one step; LAYOUT_UNLOCK_LUA releases it), so document
 * set and table entries change together; docs/protocol.md has the argument. */
#ifndef SIMHASH_LAYOUT_H
#define SIMHASH_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define LAYOUT_VERSION 1
#define LAYOUT_META_KEY "simhash:meta"
#define LAYOUT_BUCKET_BITS_DEFAULT 16
/* The worker registry (shard/registry.c): a sorted set, member = a worker's address
 * "host:port", score = the expiry of its entry in Redis's clock (ms). */
#define LAYOUT_REGISTRY_KEY "simhash:workers"
#define LAYOUT_REGISTRY_ADDR_MAX 128 /* longest address + NUL */
#define LAYOUT_REGISTRY_MAX 1024     /* entries SHARD.WORKERS answers at most */
#define LAYOUT_MIN_PREFIX_BITS 8     /* tables with a shorter prefix are refused */
#define LAYOUT_KEY_MAX 48            /* longest key + NUL, with room to spare */
#define LAYOUT_MEMBER_MAX 7          /* bytes of a member at bucket_bits 8 */
#define LAYOUT_RANGE_ARG_MAX (LAYOUT_MEMBER_MAX + 1) /* '[' + member */

/* 1 when b is a supported bucket_bits value (8, 16 or 24), else 0. */
int layout_bucket_bits_ok(unsigned b);

/* Bytes of a member at bucket_bits b: (64 - b) / 8. */
static inline size_t layout_member_len(unsigned bucket_bits)
{
    return (size_t)(64u - bucket_bits) / 8u;
}

/* Top b bits of the permuted value p (the bucket number, b in 8..24). */
static inline uint64_t layout_bucket_of(uint64_t p, unsigned bucket_bits)
{
    return p >> (64u - bucket_bits);
}

/* Shard (first byte) of a permuted value. */
static inline unsigned layout_shard_of(uint64_t p)
{
    return (unsigned)(p >> 56);
}

/* Writes the key of bucket number `bucket` (top bucket_bits bits of a permuted
 * value) of table `table` into buf as a NUL-terminated string. Returns its length,
 * or 0 when it does not fit in cap or bucket_bits is unsupported. */
size_t layout_bucket_key(char *buf, size_t cap, unsigned table, uint64_t bucket,
                         unsigned bucket_bits);

/* Same, for the bucket holding the permuted value p. */
size_t layout_key_of(char *buf, size_t cap, unsigned table, uint64_t p, unsigned bucket_bits);

/* Writes the member encoding of p (its low 64-bucket_bits bits, big-endian) into
 * out[LAYOUT_MEMBER_MAX]. Returns the member length. */
size_t layout_member(uint8_t *out, uint64_t p, unsigned bucket_bits);

/* Rebuilds the permuted value from a bucket number and a member read from that
 * bucket. Returns 0, or -1 when len is not the member length of bucket_bits
 * (foreign data in the key). */
int layout_member_decode(const void *member, size_t len, uint64_t bucket,
                         unsigned bucket_bits, uint64_t *p);

/* Writes the document set key of fingerprint fp whose table-0 permuted value is p0.
 * Returns its length, or 0 when it does not fit in cap. */
size_t layout_doc_key(char *buf, size_t cap, uint64_t fp, uint64_t p0);

/* Writes the counter hash key of shard (first byte of table 0) s: "c:{0:xx}", fields
 * fingerprints (table-0 entries) and documents (document ids) of that shard.
 * Returns its length, or 0 when it does not fit in cap. */
size_t layout_count_key(char *buf, size_t cap, unsigned shard);

/* Writes the lock hash key of shard s: "w:{0:xx}". Returns its length, or 0 when it
 * does not fit in cap. */
size_t layout_lock_key(char *buf, size_t cap, unsigned shard);

/* Writes the lock field of fp (16 lower-case hex digits, NUL-terminated) into
 * buf[17]. Returns 16. */
size_t layout_lock_field(char *buf, uint64_t fp);

/* Lease of a write lock when the caller gives none; a lock older than its lease is
 * stale: the next writer, the worker's repair pass or fsck takes it over and makes
 * the table entries match the document set. */
#define LAYOUT_LOCK_LEASE_MS 5000

/* Operations of LAYOUT_LOCK_LUA (its ARGV[4]). */
#define LAYOUT_LOCK_OP_ADD "A"      /* SADD the ids */
#define LAYOUT_LOCK_OP_REM "R"      /* SREM the ids */
#define LAYOUT_LOCK_OP_DELALL "X"   /* DEL the document set */
#define LAYOUT_LOCK_OP_FIX "F"      /* no change: take the lock to repair */
#define LAYOUT_LOCK_OP_FIXSTALE "S" /* as F, but only a stale lock is taken over */

/* EVAL script: KEYS = document set, lock hash, counter hash (one slot: {0:xx});
 * ARGV = lock field, token, lease ms, op, document ids.... When the lock is held and
 * not expired (or, for op S, absent) it changes nothing and returns {0, ms left}.
 * Otherwise it takes the lock, applies op, keeps c:{0:xx} exact and returns
 * {1, ids before, ids after, 1 if it took over a stale lock else 0, ids changed}. */
extern const char LAYOUT_LOCK_LUA[];

/* EVAL script: KEYS = lock hash; ARGV = lock field, token [, "abandon"]. Deletes
 * the lock when the token holds it (with "abandon": makes it stale at once, so the
 * next writer or the repair pass reconciles the fingerprint); returns 1, or 0 when
 * the lock was lost (taken over). */
extern const char LAYOUT_UNLOCK_LUA[];

/* The Redis reads that find every permuted value sharing the top prefix_bits bits of
 * p: buckets first_bucket .. first_bucket + nbuckets - 1 (consecutive bucket
 * numbers); in each, the members from lo to hi inclusive (ZRANGEBYLEX key lo hi).
 * lo/hi are the literal ZRANGEBYLEX arguments: "[" + bytes, or "-" and "+" when
 * whole buckets are scanned (prefix_bits < bucket_bits). */
typedef struct layout_range {
    uint64_t first_bucket;
    uint64_t nbuckets;                    /* 1 when prefix_bits >= bucket_bits */
    uint8_t lo[LAYOUT_RANGE_ARG_MAX];
    uint8_t hi[LAYOUT_RANGE_ARG_MAX];
    size_t lo_len, hi_len;
} layout_range;

/* Fills r for p, prefix_bits (LAYOUT_MIN_PREFIX_BITS..64) and bucket_bits.
 * Returns 0, or -1 when a setting is out of range. */
int layout_range_init(layout_range *r, uint64_t p, unsigned prefix_bits, unsigned bucket_bits);

#endif
