/* layout_ops.h: the storage format of distributed mode behind one interface. The
 * format (layout4.c, its Lua in common/store/lua/, docs/protocol.md and
 * docs/elastic-buckets.md) is one const table of the operations a format varies: the
 * command on one table entry, the write and lock scripts, the reads of a fingerprint's
 * ids, the member decoding, the read plan of a query's prefix and the walk of table 0.
 * The worker, the coordinator, `simhash fsck`, export/migrate (through SHARD.SCAN) and
 * the bench reach a corpus's keys only through a layout_ctx: its table's operations,
 * and the plain functions below (declared here, defined by the format's file too) for
 * what no format varies: the directories, key parsing, the Redis settings, the
 * reconciling steps.
 *
 * Buckets always split (docs/elastic-buckets.md): every operation takes the
 * layout_ctx, the lookup context of one corpus, which keeps its cached per-shard
 * directories (ctx->dir), and the same calls route a key through them. A program loads
 * a (table, shard) directory before it routes a read through it (the layout_dir_*
 * calls below), and hands every reply of a command the layout built to
 * layout_dir_reply, which says when the command met a bucket that split meanwhile (the
 * program refreshes what layout_dir_need then asks for and runs it again: reads and
 * writes are idempotent).
 *
 * How a fingerprint is reconciled (the repair pass of the worker and `simhash fsck
 * --repair`) is the layout_fix_* steps below, built on the table's lock and entry: the
 * same commands in both, only the transport differs (async in the worker, blocking in
 * fsck). */
#ifndef SIMHASH_LAYOUT_OPS_H
#define SIMHASH_LAYOUT_OPS_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "layout.h"
#include "perm.h"

typedef struct layout_ops layout_ops;

/* The lookup context of one corpus. */
typedef struct layout_ctx {
    const layout_ops *ops;
    void *dir;                  /* the layout's own lookup state: the directories */
    unsigned split_limit;       /* a bucket splits at this many entries */
    unsigned tombstone_s;       /* lifetime of a split bucket's tombstone */
    int by_sha;                 /* scripts sent by name (EVALSHA; whoever sends
                                 * them sends one answered NOSCRIPT again whole with
                                 * EVAL, which caches it: layout_script_text) */
} layout_ctx;

/* The split limit's defaults: Redis's own zset-max-listpack-entries, the largest limit
 * (docs/elastic-buckets.md). The tombstone lifetime is the corpus's (simhash:meta
 * field tombstone_seconds, two minutes for a new one); readers re-read a directory
 * older than a third of it. */
#define LAYOUT_SPLIT_LIMIT_DEFAULT 128
#define LAYOUT_SPLIT_LIMIT_MAX 256
#define LAYOUT_SPLIT_LIMIT_MIN 2
#define LAYOUT_TOMBSTONE_S_DEFAULT 120
#define LAYOUT_TOMBSTONE_S_MIN 3
#define LAYOUT_TOMBSTONE_S_MAX 86400

/* What the directories count (layout_dir_stats). */
typedef struct layout_dir_stats {
    unsigned long long splits;  /* buckets split by this process's writes */
    unsigned long long loads;   /* directories read whole */
    unsigned long long stale;   /* replies that met a bucket split since it was cached */
    unsigned long long buckets; /* live buckets in the cached directories */
    unsigned long long largest; /* most members one read of one bucket returned */
    unsigned long long shards;  /* (table, shard) directories cached */
} layout_dir_stats;

/* The table writes of one or many fingerprints as one command (entries). */
#define LAYOUT_BATCH_MAX 256        /* table entries of one batched write */
#define LAYOUT_BATCH_ARGC (6 + 5 * LAYOUT_BATCH_MAX)
typedef struct layout_batch {
    int argc;
    const char *argv[LAYOUT_BATCH_ARGC];
    size_t argvlen[LAYOUT_BATCH_ARGC];
    char key[3 * LAYOUT_BATCH_MAX][LAYOUT_KEY_MAX];
    uint8_t member[LAYOUT_BATCH_MAX][LAYOUT_MEMBER_MAX];
    char num[3][12];            /* key count, split limit, tombstone seconds */
} layout_batch;

/* What one read of a fingerprint's ids answers (ids_read). */
typedef enum layout_ids_kind {
    LAYOUT_IDS_SET = 1,         /* SMEMBERS: an array of ids */
    LAYOUT_IDS_MEMBER = 3,      /* ZRANGEBYLEX: no member (none), or the fingerprint's
                                 * table-0 member, carrying the packed ids
                                 * (layout_ids_next), or none when they live in the set
                                 * the next read returns (layout_ids_reply) */
} layout_ids_kind;

#define LAYOUT_IDS_READS 2          /* reads ids_read makes per fingerprint */
#define LAYOUT_PUT_ID_SCRATCH(idlen) (17 + (idlen))

/* The packed ids a reply of read kind `kind` (LAYOUT_IDS_MEMBER) carries: 1 with *v, *len set (len 0: they live in the overflow set the next read
 * returns), 0 when the fingerprint has none, -1 for an unexpected reply. */
int layout_ids_reply(layout_ids_kind kind, const redisReply *r, const char **v, size_t *len);

/* The kinds of key a corpus has (first letter of the key, after the corpus prefix). */
typedef enum layout_key_kind {
    LAYOUT_KEY_BUCKET = 's',    /* a table bucket: sorted set of members */
    LAYOUT_KEY_IDSET = 'd',     /* the overflow set of one fingerprint's ids */
    LAYOUT_KEY_LOCKS = 'w',     /* the write locks of a table-0 shard */
    LAYOUT_KEY_COUNTS = 'c',    /* the counters of a table-0 shard */
} layout_key_kind;

/* A key read back (layout_key_parse). */
typedef struct layout_key {
    layout_key_kind kind;
    unsigned table;             /* BUCKET */
    uint64_t bucket;            /* BUCKET: the tag member_decode needs */
    uint64_t fp;                /* IDSET */
    unsigned shard;             /* every kind: the first byte of the hash tag */
} layout_key;

/* The reads of one table for a query (plan) and one of them (plan_read). */
typedef struct layout_plan {
    unsigned table;
    unsigned shard;             /* first byte of p (routes through its directory) */
    uint64_t nreads;
    layout_range r;
} layout_plan;

typedef struct layout_read {
    char key[LAYOUT_KEY_MAX];
    size_t klen;
    const uint8_t *lo, *hi;     /* the ZRANGEBYLEX bounds, into the plan or into lo_buf */
    size_t lo_len, hi_len;
    uint64_t tag;               /* what member_decode needs to rebuild a value */
    uint8_t lo_buf[LAYOUT_RANGE_ARG_MAX];
} layout_read;

/* Redis settings below which the layout's keys stop being listpacks (0: no need). */
typedef struct layout_needs {
    unsigned long zset_entries, zset_value, hash_entries, hash_value;
} layout_needs;

/* One bucket of the walk of table 0 (walk). */
typedef struct layout_walk {
    /* its values from the walk's `from` on (the whole bucket when from lies below it),
     * in value order: ZRANGEBYLEX read.key read.lo read.hi (the caller adds LIMIT 0
     * cap); read.tag is what member_decode needs */
    layout_read read;
    uint64_t first;             /* the first value the bucket can hold */
} layout_walk;

struct layout_ops {
    /* The first table whose entries programs write (entry, entries, the repair): 1,
     * table 0's entry of a fingerprint being its ids, written by the lock script alone;
     * entry() of table 0 is a check answering an integer. */
    unsigned entry_from;

    /* p's entry in table t: ZSCORE, or the write script's ZADD / ZREM (tables 1..). */
    void (*entry)(const layout_ctx *c, unsigned table, uint64_t p, const char *cmd,
                  layout_cmd *out);
    /* The n table
     * writes (tables[i], ps[i]) of one or many fingerprints (two may share a bucket),
     * added (add) or removed, as one command, 1 <= n <= LAYOUT_BATCH_MAX. One Redis only: the keys of different
     * tables lie in different Redis Cluster slots. Its reply goes to entries_reply
     * only (its parts name the items, of many directories; not layout_dir_reply):
     * 0 with *count (entries added or removed; the split points made are learnt),
     * 1 when an item met a bucket that split (nothing written; its directory learnt
     * it: send again), -1 for an unexpected reply. */
    void (*entries)(const layout_ctx *c, unsigned n, const unsigned *tables,
                    const uint64_t *ps, int add, layout_batch *out);
    int (*entries_reply)(const layout_ctx *c, unsigned n, const unsigned *tables,
                         const uint64_t *ps, const redisReply *r, long long *count);
    /* The plain table writes (SHARD.MADD / MDEL of the worker, docs/protocol.md): p's
     * entry in table `table` (1..) as `ZADD key 0 member` (add) or `ZREM key member`,
     * on the bucket the cached directory routes p to; a bucket that split since
     * answers WRONGTYPE (its tombstone), which layout_dir_reply reads as "read the
     * directory and send again" (both are idempotent). */
    void (*plain)(const layout_ctx *c, unsigned table, uint64_t p, int add, layout_cmd *out);
    /* Counts a plain ZADD of p that answered n into the count of its bucket (kept
     * beside the bucket in the cached directory, bucketdir.h). Returns 1 when split()
     * of p must follow: the count reached the split limit, or the bucket had no
     * count; else 0. */
    int (*plain_count)(const layout_ctx *c, unsigned table, uint64_t p, long long n);
    /* The split call of p's bucket (it splits while the bucket holds split_limit
     * members or more, and answers the size of the one now holding p); its reply goes
     * to layout_dir_reply first (the split points, or the split met), then to
     * split_reply, which sets the count. split_reply returns 0, or -1 for an
     * unexpected reply. */
    void (*split)(const layout_ctx *c, unsigned table, uint64_t p, layout_cmd *out);
    int (*split_reply)(const layout_ctx *c, unsigned table, uint64_t p, const redisReply *r);
    /* The lock script call of fp up to its document ids (the caller adds them for ops
     * A and R); token and op are NUL-terminated and outlive cmd's use. */
    void (*lock)(const layout_ctx *c, uint64_t fp, uint64_t p0, const char *token,
                 unsigned long long lease_ms, const char *op, layout_cmd *cmd);
    /* Read i (0..LAYOUT_IDS_READS-1) of fp's ids (p0 = perm_0(fp)), in the order a
     * worker pipelines them; *kind says what it answers. Single-key commands only (a
     * multi-key one gets -TRYAGAIN while its slot migrates). */
    void (*ids_read)(const layout_ctx *c, unsigned i, uint64_t fp, uint64_t p0,
                     layout_cmd *cmd, layout_ids_kind *kind);
    /* Rebuilds the permuted value of a member read from the key of tag `tag`.
     * Returns 0, or -1 for a member that does not belong there (foreign data). */
    int (*member_decode)(const layout_ctx *c, uint64_t tag, const void *member, size_t len,
                         uint64_t *p);
    /* The packed ids (layout_ids_next) a table-0 member read under tag carries: 1 with
     * *v, *vlen set (vlen 0: they live in the fingerprint's overflow set), -1 when the
     * member is none of table 0's. */
    int (*member_ids)(const layout_ctx *c, uint64_t tag, const void *member, size_t len,
                      const char **v, size_t *vlen);
    /* The reads finding every value of table `table` sharing the top prefix_bits
     * bits of p. Returns 0, or -1 when prefix_bits is out of range. */
    int (*plan)(const layout_ctx *c, unsigned table, uint64_t p, unsigned prefix_bits,
                layout_plan *pl);
    /* Read i (0..pl->nreads-1) of the plan. */
    void (*plan_read)(const layout_ctx *c, const layout_plan *pl, uint64_t i,
                      layout_read *r);
    /* The walk of table 0 (SHARD.SCAN, fsck's recount): bucket i (from 0) of the
     * buckets of from's first-byte shard, counted from the one holding from (the
     * directory's, so a walk visits the buckets that exist). Returns 1 with *w set, or
     * 0 past the shard's last bucket with only w->first set: the first value of the
     * next shard (0 past the last). */
    int (*walk)(const layout_ctx *c, uint64_t from, uint64_t i, layout_walk *w);
};

/* Fills c for a corpus (split limit and tombstone lifetime at their defaults: the
 * caller sets the corpus's). Returns 0, or -1 out of memory. Free with
 * layout_ctx_free. */
int layout_ctx_init(layout_ctx *c);
void layout_ctx_free(layout_ctx *c);

/* The Redis settings the format needs of a node (shard/meta.c checks them). */
void layout_redis_needs(const layout_ctx *c, layout_needs *out);

/* The write of one id of fp straight to Redis, without lock or counters (the bench's
 * preload of a corpus); scratch has room for LAYOUT_PUT_ID_SCRATCH(idlen) bytes and
 * outlives cmd's use. */
void layout_put_id(const layout_ctx *c, uint64_t fp, uint64_t p0, const void *id,
                   size_t idlen, uint8_t *scratch, layout_cmd *cmd);

/* Reads back what follows the hash tag of a bucket key of (table, shard) (":<lo>-<hi>"),
 * checked by writing it again. Returns 0 with *tag (member_decode's), or -1. */
int layout_bucket_suffix_parse(unsigned table, unsigned shard, const char *s, size_t len,
                               uint64_t *tag);

/* ---- The directories of the split buckets ----
 * A (table, shard) pair names one directory (shard = first byte of the permuted
 * value). */

/* 1 when the directory of (table, shard) must be read (layout_dir_read, then
 * layout_dir_load) before a read is routed through it: never read, marked stale by
 * layout_dir_reply, or older than a third of the tombstone lifetime. 0 otherwise. */
int layout_dir_need(const layout_ctx *c, unsigned table, unsigned shard);
/* The read of the whole directory (ZRANGE r:{t:xx} 0 -1). */
void layout_dir_read(const layout_ctx *c, unsigned table, unsigned shard, layout_cmd *cmd);
/* The clock of a directory's age (milliseconds, monotonic, never 0). */
uint64_t layout_dir_clock(void);
/* Takes its reply into the cache, aged from sent_ms (layout_dir_clock when the read was
 * sent: Redis ran it no earlier, so the cache is at least that new). Returns 0, or -1
 * (unexpected reply, out of memory: the directory stays marked for reading). */
int layout_dir_load(const layout_ctx *c, unsigned table, unsigned shard, const redisReply *r,
                    uint64_t sent_ms);
/* Every reply of a command the layout built for a key of (table, shard) (reads,
 * entry writes, the lock call, the reads of ids; not entries, see entries_reply):
 * learns the split points it carries and
 * returns 1 when the command met a bucket that had split (a WRONGTYPE on a tombstone,
 * or a write script's {-1, point} / {-2}): nothing was read or written, the cache is
 * updated or marked for reading, and the command must be built and sent again. 0
 * otherwise. */
int layout_dir_reply(const layout_ctx *c, unsigned table, unsigned shard, const redisReply *r);
/* The counters of the cache. */
void layout_dir_stats_get(const layout_ctx *c, layout_dir_stats *out);
/* The text of the layout's script named sha (len hex digits, as EVALSHA carries it),
 * for sending again with EVAL a command Redis answered NOSCRIPT; NULL when the
 * layout has no script of that name. */
const char *layout_script_text(const layout_ctx *c, const char *sha, size_t len);
/* The index in c->argv of the first key of command c (3 for EVAL and EVALSHA: script,
 * numkeys, key; else 1): where a blocking client routes it in a Redis Cluster. */
int layout_cmd_key_index(const layout_cmd *c);
/* The number of entries a write reply says were written: an integer (ZADD, ZREM) or
 * the first element of a write script's array. Returns 0, or -1 for another reply. */
int layout_write_count(const redisReply *r, long long *n);

/* Reads back a key of the corpus (its name prefix included). Checks it by writing it
 * again: a key this code would not write is refused. ntables bounds the table number;
 * with ps, an IDSET key must also carry the shard of its fingerprint. Returns 0, or -1
 * (a foreign key). */
int layout_key_parse(const layout_ctx *c, const perm_set *ps, const char *key, size_t len,
                     layout_key *out);

/* Writes the SCAN MATCH pattern of every key of one kind of the corpus:
 * "[name:]x:{*" (the hash tag right after the kind, so the keys of a corpus named
 * like a kind, "w:w:{0:13}", are not taken for the unnamed corpus's "w:{0:13}").
 * Returns its length, or 0 when it does not fit in cap. */
size_t layout_scan_pattern(char *buf, size_t cap, layout_key_kind kind);

/* ---- Reconciling one fingerprint (worker repair pass, fsck --repair) ----
 * 1. layout_fix_lock: the lock script with op F (fsck: any lock not held by a live
 *    writer) or S (the worker: only a stale one);
 * 2. layout_fix_locked on its reply: taken or not, and whether fp has ids;
 * 3. layout_fix_entry for every table: ZADD when it has ids, ZREM when not; each
 *    answers an integer (layout_fix_entry_ok);
 * 4. layout_fix_unlock when every entry was written; after a failed one the lock
 *    stays, goes stale after its lease, and the next pass retries. */
typedef struct layout_fix {
    uint64_t fp, p0;
    char token[48];
    int add;                    /* set by layout_fix_locked: fp has ids */
} layout_fix;

void layout_fix_init(layout_fix *f, const perm_set *ps, uint64_t fp, const char *token);
void layout_fix_lock(const layout_ctx *c, const layout_fix *f, unsigned long long lease_ms,
                     const char *op, layout_cmd *cmd);
/* 1 the lock was taken (f->add set), 0 not (held by a live writer, or for op S no
 * longer stale), -1 an unexpected reply. */
int layout_fix_locked(layout_fix *f, const redisReply *reply);
void layout_fix_entry(const layout_ctx *c, const perm_set *ps, const layout_fix *f,
                      unsigned table, layout_cmd *cmd);
int layout_fix_entry_ok(const redisReply *reply);
void layout_fix_unlock(const layout_fix *f, layout_cmd *cmd);

#endif
