/* layout.h: what the Redis data layouts of distributed mode (versions 1 and 2, see
 * docs/protocol.md) are made of: key names, member encoding, the ZRANGEBYLEX bounds of
 * a prefix range, the packed document ids of layout 2, the lock operations and the
 * unlock script. Pure functions on permuted values; no Redis calls here. Programs
 * reach a corpus through layout_ops.h (one table of operations per layout, the lock
 * scripts in layout1.c and layout2.c), which is built from these.
 *
 * Table t stores perm_t(fp) = p as follows, with B = bucket_bits (8, 12, 16, 20, 24):
 *   key    s:{t:xx}:yy..   xx = top 8 bits of p (2 hex digits), yy.. = the next
 *                          B-8 bits as (B-8)/4 lower-case hex digits (none for B=8)
 *   member the low 8*ceil((64-B)/8) bits of p, big-endian, score 0
 * Layout 1: document ids of fp live in the set d:{0:xx}:<16 hex of fp>, xx = top
 * byte of perm_0(fp). Layout 2: in the hash h:{0:xx}:yy.. of fp's table-0 bucket,
 * field = the table-0 member of fp, value = the ids packed (layout_ids_*), or ""
 * when they did not fit in LAYOUT2_INLINE_MAX bytes and live in the set
 * d:{0:xx}:<16 hex of fp> instead (an overflow set). The hash c:{0:xx} counts the
 * fingerprints (non-empty document sets) and document ids of shard xx. The hash
 * w:{0:xx} holds the write locks of shard xx's fingerprints: field = the 16 hex
 * digits of fp, value = "<expiry ms>:<token>". Every write of a fingerprint holds
 * its lock (the lock script changes the document ids and takes the lock in one
 * step; LAYOUT_UNLOCK_LUA releases it), so ids and table entries change together;
 * docs/protocol.md has the argument.
 *
 * Corpus names: with layout_corpus_set("news") every key, the meta hash included,
 * starts with "news:" (the hash tags stay as they are). The name is process-wide:
 * one program serves one corpus. */
#ifndef SIMHASH_LAYOUT_H
#define SIMHASH_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define LAYOUT_VERSION_MIN 1
#define LAYOUT_VERSION_MAX 4
#define LAYOUT_VERSION_UNSET 0       /* an option left unset: the corpus's */
#define LAYOUT_VERSION_DEFAULT 4     /* of a new corpus (docs/elastic-buckets.md, "Layout 4") */
#define LAYOUT_VERSION_FIXED 2       /* of a new corpus given bucket bits (fixed buckets) */
#define LAYOUT_META_KEY "simhash:meta"  /* without a corpus name; see layout_meta_key */
#define LAYOUT_BUCKET_BITS_DEFAULT 16   /* layout 1 */
#define LAYOUT2_BUCKET_BITS_DEFAULT 12  /* layout 2 (docs/capacity.md: about N/256) */
#define LAYOUT2_INLINE_MAX 64        /* packed ids kept in the bucket hash up to this */
/* The worker registry (shard/registry.c): a sorted set, member = a worker's address
 * "host:port", score = the expiry of its entry in Redis's clock (ms). Its key is
 * [corpus name:]simhash:workers (layout_registry_key). */
/* The worker protocol a worker speaks (SHARD.HELLO's element 10; docs/protocol.md):
 * 2 added the batched writes SHARD.MLOCK / MUNLOCK / MADD / MDEL, which a coordinator
 * sends, so it refuses a worker without them (one answering 10 elements is 1). */
#define LAYOUT_WORKER_PROTOCOL 2
#define LAYOUT_REGISTRY_KEY "simhash:workers"
#define LAYOUT_REGISTRY_ADDR_MAX 128 /* longest address + NUL */
#define LAYOUT_REGISTRY_MAX 1024     /* entries SHARD.WORKERS answers at most */
#define LAYOUT_MIN_PREFIX_BITS 8     /* tables with a shorter prefix are refused */
#define LAYOUT_CORPUS_MAX 32         /* bytes of a corpus name */
#define LAYOUT_KEY_MAX 96            /* longest key + NUL, with room to spare */
#define LAYOUT_MEMBER_MAX 7          /* bytes of a member at bucket_bits 8 and 12 */
#define LAYOUT_RANGE_ARG_MAX (LAYOUT_MEMBER_MAX + 1) /* '[' + member */

/* 1 when b is a supported bucket_bits value (8, 12, 16, 20 or 24), else 0. */
int layout_bucket_bits_ok(unsigned b);

/* 1 when v is a layout version this code reads and writes (1 to 4), else 0. */
int layout_version_ok(unsigned v);

/* Sets the corpus name of this process: every key gets "name:" in front. NULL or
 * "" for none (the keys of corpora made before names existed). Returns 0, or -1
 * when the name is longer than LAYOUT_CORPUS_MAX or has a byte other than
 * [A-Za-z0-9_.-] (the name stays as it was). */
int layout_corpus_set(const char *name);

/* The corpus name set ("" for none). */
const char *layout_corpus(void);

/* Writes the meta hash key of the corpus ("[name:]simhash:meta"). Returns its
 * length, or 0 when it does not fit in cap. */
size_t layout_meta_key(char *buf, size_t cap);

/* Writes the worker registry key of the corpus ("[name:]simhash:workers"). Returns
 * its length, or 0 when it does not fit in cap. */
size_t layout_registry_key(char *buf, size_t cap);

/* Bytes of a member at bucket_bits b: ceil((64 - b) / 8). */
static inline size_t layout_member_len(unsigned bucket_bits)
{
    return (size_t)(64u - bucket_bits + 7u) / 8u;
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

/* Writes the document set key of fingerprint fp whose table-0 permuted value is p0
 * (layout 1; the overflow set in layout 2). Returns its length, or 0 when it does
 * not fit in cap. */
size_t layout_doc_key(char *buf, size_t cap, uint64_t fp, uint64_t p0);

/* Layout 2: writes the key of the hash holding the ids of the table-0 bucket of p0
 * ("h:{0:xx}:yy.."). Returns its length, or 0 when it does not fit in cap or
 * bucket_bits is unsupported. */
size_t layout_hash_key(char *buf, size_t cap, uint64_t p0, unsigned bucket_bits);

/* Layout 2's packing of the document ids of one fingerprint: for each id, its
 * length as a varint (7 bits a byte, low first, high bit = more) then its bytes.
 * Ids are never empty, so the empty string is free to mean "in the overflow set".
 * layout_ids_next reads the id at *off of v[0..len) and moves *off past it; returns
 * 1 with *id, *idlen set, 0 at the end, -1 when the packing is malformed. */
int layout_ids_next(const void *v, size_t len, size_t *off, const uint8_t **id,
                    size_t *idlen);

/* Writes the packing of one id into out (room for 10 + idlen bytes); returns the
 * bytes written. */
size_t layout_ids_put(uint8_t *out, const void *id, size_t idlen);

/* Writes "[name:]<kind>:{t:xx}" (table t in decimal, shard xx in two lower-case hex
 * digits: the hash tag of a (table, shard)) into buf. Returns its length, or 0 when it
 * does not fit in cap or shard > 255. Built by hand, as every key here: a query builds
 * one per table. */
size_t layout_tag_key(char *buf, size_t cap, char kind, unsigned table, unsigned shard);

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

/* Reads back a lock field: 16 lower-case hex digits. Returns 0, or -1. */
int layout_lock_field_parse(const char *s, size_t n, uint64_t *fp);

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

/* Layout 2's lock script: the same lock steps and reply as LAYOUT_LOCK_LUA, on the
 * packed ids. KEYS = bucket hash, overflow set, lock hash, counter hash (one slot);
 * ARGV = lock field, token, lease ms, op, hash field, document ids.... */
extern const char LAYOUT2_LOCK_LUA[];
/* The lock steps of LAYOUT2_LOCK_LUA after its ids_* functions (layout2.c says what
 * they must do): a layout keeping packed ids elsewhere defines its own before them. */
extern const char *const LAYOUT_IDS_LOCK_BODY;


/* A Redis command about one fingerprint's document ids, ready to send: argv[0..argc)
 * with argvlen, pointing into the struct itself (do not copy it). The longest (layout
 * 3's lock call) has 16 arguments; one slot more holds an id for callers adding one. */
#define LAYOUT_CMD_ARGC 17
typedef struct layout_cmd {
    int argc;
    const char *argv[LAYOUT_CMD_ARGC];
    size_t argvlen[LAYOUT_CMD_ARGC];
    char key[6][LAYOUT_KEY_MAX];
    char field[17];
    uint8_t member[LAYOUT_MEMBER_MAX];
    char lease[24];
    char num[2][12];            /* layout 3: split limit and tombstone seconds */
} layout_cmd;

/* The operations of layout version `layout` (layout_ops.h) for callers holding a
 * version number rather than a layout_ctx (the unit tests).
 * Fills c with the read of fp's document ids (p0 = perm_0(fp)), one single-key
 * command (a multi-key one gets -TRYAGAIN while its slot migrates): layout 1 SMEMBERS
 * of its set (reply: array); layout 2 HGET of its bucket hash field (reply: nil, the
 * packed ids (layout_ids_next), or "" when they are in the overflow set, which
 * layout_cmd_overflow reads). Returns 0, or -1 when layout or bucket_bits is
 * unsupported. */
int layout_cmd_docs(layout_cmd *c, unsigned layout, unsigned bucket_bits, uint64_t fp,
                    uint64_t p0);

/* Fills c with SMEMBERS of fp's document set: layout 1's set, layout 2's overflow
 * set. */
void layout_cmd_overflow(layout_cmd *c, uint64_t fp, uint64_t p0);

/* Fills c with the lock script call of fp (p0 = perm_0(fp)) up to its document ids
 * (layout 1: up to op; layout 2: up to the hash field after op); the caller sends
 * the ids after it (ops A and R). token and op are
 * NUL-terminated and must outlive c's use. Returns 0, or -1 when layout or
 * bucket_bits is unsupported. */
int layout_cmd_lock(layout_cmd *c, unsigned layout, unsigned bucket_bits, uint64_t fp,
                    uint64_t p0, const char *token, unsigned long long lease_ms,
                    const char *op);

/* EVAL script: KEYS = lock hash; ARGV = lock field, token [, "abandon"]. Deletes
 * the lock when the token holds it (with "abandon": makes it stale at once, so the
 * next writer or the repair pass reconciles the fingerprint); returns 1, or 0 when
 * the lock was lost (taken over). */
extern const char LAYOUT_UNLOCK_LUA[];

/* EVAL script: the release of many locks in one call (one Redis only: the lock
 * hashes of different shards lie in different Redis Cluster slots). KEYS = the lock
 * hash of each fingerprint; ARGV = its lock field and token, per fingerprint in KEYS'
 * order. Returns one integer per fingerprint, as LAYOUT_UNLOCK_LUA's. */
extern const char LAYOUT_UNLOCKS_LUA[];

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
