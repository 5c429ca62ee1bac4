/* layout.h: the parts of the Redis storage format of distributed mode with no layout
 * decision in them (docs/protocol.md): the corpus name and its key prefix, the keys of
 * a table-0 shard (write locks, counters, overflow sets of document ids), the packing
 * of document ids, the lock operations and the unlock scripts. Pure functions; no
 * Redis calls here. Programs reach the tables through layout_ops.h (the format,
 * layout4.c), which is built from these.
 *
 * The hash c:{0:xx} counts the fingerprints (non-empty document sets) and document
 * ids of shard xx (the first byte of perm_0(fp)). The hash w:{0:xx} holds the write
 * locks of shard xx's fingerprints: field = the 16 hex digits of fp, value =
 * "<expiry ms>:<token>". Every write of a fingerprint holds its lock (the lock script
 * changes the document ids and takes the lock in one step; LAYOUT_UNLOCK_LUA releases
 * it), so ids and table entries change together; docs/protocol.md has the argument.
 *
 * Corpus names: with layout_corpus_set("news") every key, the meta hash included,
 * starts with "news:" (the hash tags stay as they are). The name is process-wide:
 * one program serves one corpus. */
#ifndef SIMHASH_LAYOUT_H
#define SIMHASH_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* The storage format (simhash:meta field layout): the one this code reads and
 * writes. A Redis holding another is refused at start (shard/meta.c). */
#define LAYOUT_VERSION 4
#define LAYOUT_VERSION_UNSET 0       /* an option left unset */
/* The bits of the first-byte shard: SHARD.HELLO's element 4, and the only value a
 * meta hash of this layout written by a former build holds in its field
 * LAYOUT_META_LEGACY (another value is another layout's data: refused). New meta
 * hashes lack that field: the format is fixed. */
#define LAYOUT_SHARD_BITS 8
#define LAYOUT_META_LEGACY "bucket_bits"
#define LAYOUT_META_KEY "simhash:meta"  /* without a corpus name; see layout_meta_key */
/* The worker registry (shard/registry.c): a sorted set, member = a worker's address
 * "host:port", score = the expiry of its entry in Redis's clock (ms). Its key is
 * [corpus name:]simhash:workers (layout_registry_key). */
/* The worker protocol a worker speaks (SHARD.HELLO's element 10; docs/protocol.md):
 * 2 has the batched writes SHARD.MLOCK / MUNLOCK / MADD / MDEL, which a coordinator
 * sends, so it refuses a worker speaking another. */
#define LAYOUT_WORKER_PROTOCOL 2
#define LAYOUT_REGISTRY_KEY "simhash:workers"
#define LAYOUT_REGISTRY_ADDR_MAX 128 /* longest address + NUL */
#define LAYOUT_REGISTRY_MAX 1024     /* entries SHARD.WORKERS answers at most */
#define LAYOUT_MIN_PREFIX_BITS 8     /* tables with a shorter prefix are refused */
#define LAYOUT_CORPUS_MAX 32         /* bytes of a corpus name */
#define LAYOUT_KEY_MAX 96            /* longest key + NUL, with room to spare */
#define LAYOUT_MEMBER_MAX 7          /* bytes of a member of tables 1.. */
#define LAYOUT_RANGE_ARG_MAX (LAYOUT_MEMBER_MAX + 1) /* '[' + member */

/* Whether a meta hash holding `layout` and, in the field LAYOUT_META_LEGACY of former
 * builds, legacy_bits (LAYOUT_SHARD_BITS when the field is absent) is this build's
 * format. Returns 0, or -1 with err set to the message saying that the Redis at
 * host:port (meta key meta_key) holds another layout's corpus and how to copy it
 * across. The one place that tells the format's data from another's (shard/meta.c at
 * start, fsck). */
int layout_meta_check(long layout, long legacy_bits, const char *host, int port,
                      const char *meta_key, char *err, size_t errlen);

/* The settings a new corpus's meta hash records. */
typedef struct layout_meta {
    const char *meta_key;       /* layout_meta_key's */
    const char *fingerprint;    /* the algorithm's canonical text (fp_params_format) */
    unsigned tombstone_s;       /* lifetime of a split bucket's tombstone */
    unsigned blocks, distance;
} layout_meta;

/* A new meta hash is written by LAYOUT_META_FIELDS commands, each of at most
 * LAYOUT_META_ARGV arguments: the fingerprint algorithm with the tombstone lifetime
 * (only into an absent hash), then blocks, distance and layout (HSETNX each). */
#define LAYOUT_META_FIELDS 4
#define LAYOUT_META_ARGV 6

/* Formats the command creating field i (0..LAYOUT_META_FIELDS-1) of m's new meta hash
 * into argv; val (the caller's, alive until the command is sent) holds its number.
 * The one writer of the meta hash's fields (shard/meta.c, shard/redis.c, the benches'
 * preload). Returns the argument count. */
int layout_meta_field(const layout_meta *m, int i, const char *argv[LAYOUT_META_ARGV],
                      char val[16]);

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

/* Shard (first byte) of a permuted value. */
static inline unsigned layout_shard_of(uint64_t p)
{
    return (unsigned)(p >> 56);
}

/* Writes the overflow set key of fingerprint fp whose table-0 permuted value is p0
 * ("d:{0:xx}:<16 hex of fp>"). Returns its length, or 0 when it does not fit in cap. */
size_t layout_doc_key(char *buf, size_t cap, uint64_t fp, uint64_t p0);

/* The packing of the document ids of one fingerprint: for each id, its
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

/* Operations of the lock script (its ARGV[4]; common/store/lua/layout4_lock.lua). */
#define LAYOUT_LOCK_OP_ADD "A"      /* SADD the ids */
#define LAYOUT_LOCK_OP_REM "R"      /* SREM the ids */
#define LAYOUT_LOCK_OP_DELALL "X"   /* DEL the document set */
#define LAYOUT_LOCK_OP_FIX "F"      /* no change: take the lock to repair */
#define LAYOUT_LOCK_OP_FIXSTALE "S" /* as F, but only a stale lock is taken over */

/* A Redis command about one fingerprint's document ids, ready to send: argv[0..argc)
 * with argvlen, pointing into the struct itself (do not copy it). The longest (the
 * lock call) has 15 arguments; the slots after it hold ids for callers adding them. */
#define LAYOUT_CMD_ARGC 17
typedef struct layout_cmd {
    int argc;
    const char *argv[LAYOUT_CMD_ARGC];
    size_t argvlen[LAYOUT_CMD_ARGC];
    char key[6][LAYOUT_KEY_MAX];
    char field[17];
    uint8_t member[LAYOUT_MEMBER_MAX];
    char lease[24];
    char num[2][12];            /* split limit and tombstone seconds */
} layout_cmd;

/* Fills c with SMEMBERS of fp's overflow set. */
void layout_cmd_overflow(layout_cmd *c, uint64_t fp, uint64_t p0);

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
 * p: the buckets first_bucket .. first_bucket + nbuckets - 1 of one directory (their
 * indexes in it); in each, the members from lo to hi (ZRANGEBYLEX key lo hi). lo/hi
 * are the literal ZRANGEBYLEX arguments ("[" or "(" and bytes, or "+"). */
typedef struct layout_range {
    uint64_t first_bucket;
    uint64_t nbuckets;                    /* usually 1 */
    uint8_t lo[LAYOUT_RANGE_ARG_MAX];
    uint8_t hi[LAYOUT_RANGE_ARG_MAX];
    size_t lo_len, hi_len;
} layout_range;

/* ---- What `simhash fsck` judges (client/cli/cmd_fsck_split.c; in layout4.c) ----
 * fsck reads directory keys, bucket keys and their members back through these, so no
 * file outside common/store decodes a key or a member. */
struct layout_ctx;
struct perm_set;
struct redisReply;

/* Reads back a directory key "[name:]r:{t:xx}" of the corpus (checked by writing it
 * again). Returns 0 with *table, *shard, or -1 (not such a key). */
int layout_dir_key_parse(const char *key, size_t len, unsigned *table, unsigned *shard);

/* A bucket key and its members judged against the directory cached in the context. */
typedef struct layout_bucket_verdict {
    unsigned table, shard;
    uint64_t tag;               /* the bucket's tag: member_decode of its members */
    int outside;                /* 1: the bucket is no live bucket of the directory */
    unsigned long long stray;   /* members outside its bounds, or none of the table's */
} layout_bucket_verdict;

/* Judges bucket key `key` (its table below ps->ntables) and, when members is an
 * array (its ZRANGE 0 -1 reply), each member. Returns 0 with *v, or -1 when key is
 * no bucket key of the corpus. */
int layout_bucket_judge(const struct layout_ctx *c, const struct perm_set *ps,
                        const char *key, size_t len, const struct redisReply *members,
                        layout_bucket_verdict *v);

#endif
