/* test_layout_ops.c: unit tests of the storage format's interface
 * (common/store/layout_ops.h, layout4.c): the context of a corpus, the directories'
 * age and routing, the batched table writes, keys written and read back by
 * layout_key_parse (every kind, with and without a corpus name, foreign keys refused),
 * the reads of a fingerprint's ids, the orphan check, the query plan, the walk of
 * table 0, and the
 * reconcile steps (lock reply read, table entries, unlock). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "layout_ops.h"

static perm_set test_ps;

static int test_setup(void **state)
{
    (void)state;
    char err[128];
    return perm_set_init(&test_ps, 6, 3, err, sizeof err);
}

static int test_teardown(void **state)
{
    (void)state;
    perm_set_free(&test_ps);
    layout_corpus_set(NULL);
    return 0;
}

static void test_ops_table(void **state)
{
    (void)state;
    layout_ctx c;
    assert_int_equal(layout_ctx_init(&c), 0);
    assert_int_equal(c.split_limit, LAYOUT_SPLIT_LIMIT_DEFAULT);
    assert_int_equal(c.tombstone_s, LAYOUT_TOMBSTONE_S_DEFAULT);
    assert_int_equal(c.ops->entry_from, 1);
    layout_needs nd;
    c.split_limit = 100;
    layout_redis_needs(&c, &nd);
    assert_int_equal(nd.zset_entries, 100);
    assert_int_equal(nd.zset_value, 64);
    assert_int_equal(nd.hash_entries, 0);
    assert_int_equal(nd.hash_value, 0);
    layout_ctx_free(&c);
    assert_null(c.dir);
}

/* Loads the directory of (table, shard) with two buckets split at 0x80, its read sent
 * at `sent`; returns layout_dir_load's answer. */
static int test_load_two(layout_ctx *c, unsigned table, unsigned shard, uint64_t sent)
{
    redisReply b0 = {.type = REDIS_REPLY_STRING, .str = "", .len = 0};
    redisReply b1 = {.type = REDIS_REPLY_STRING, .str = "\x80", .len = 1};
    redisReply *bl[2] = {&b0, &b1};
    redisReply dir = {.type = REDIS_REPLY_ARRAY, .elements = 2, .element = bl};
    return layout_dir_load(c, table, shard, &dir, sent);
}

/* A directory's age counts from when its read was sent, and it must be read again
 * once older than a third of the tombstone lifetime. */
static void test_dir_age(void **state)
{
    (void)state;
    layout_ctx c;
    assert_int_equal(layout_ctx_init(&c), 0);
    assert_int_equal(c.tombstone_s, LAYOUT_TOMBSTONE_S_DEFAULT);
    c.tombstone_s = 30;                     /* a third: 10 s */
    uint64_t now = layout_dir_clock();
    assert_true(now > 0);
    assert_int_equal(test_load_two(&c, 2, 0x40, now), 0);
    assert_int_equal(layout_dir_need(&c, 2, 0x40), 0);
    /* a read sent 9 s ago is still fresh; one sent 11 s ago is not, even though its
     * reply has just been taken in */
    assert_int_equal(test_load_two(&c, 2, 0x40, now - 9000), 0);
    assert_int_equal(layout_dir_need(&c, 2, 0x40), 0);
    assert_int_equal(test_load_two(&c, 2, 0x40, now - 11000), 0);
    assert_int_equal(layout_dir_need(&c, 2, 0x40), 1);
    /* the lifetime decides: an hour's third is 20 minutes */
    c.tombstone_s = 3600;
    assert_int_equal(layout_dir_need(&c, 2, 0x40), 0);
    layout_ctx_free(&c);
}

/* The walk of table 0 goes through the buckets of a shard's directory from the one
 * holding `from`: the first read from `from` on, the next ones whole; past the last,
 * the first value of the next shard (0 past the last shard). */
static void test_walk(void **state)
{
    (void)state;
    layout_ctx c;
    layout_walk w;
    uint64_t p;
    assert_int_equal(layout_corpus_set(NULL), 0);
    assert_int_equal(layout_ctx_init(&c), 0);
    assert_int_equal(test_load_two(&c, 0, 0x40, layout_dir_clock()), 0);
    uint64_t from = 0x4012345678abcdefull;
    assert_int_equal(c.ops->walk(&c, from, 0, &w), 1);
    assert_string_equal(w.read.key, "s:{0:40}:-80");
    assert_int_equal(w.first, 0x4000000000000000ull);
    assert_int_equal(w.read.lo_len, 8);
    assert_memory_equal(w.read.lo, "[\x12\x34\x56\x78\xab\xcd\xef", 8);
    assert_memory_equal(w.read.hi, "+", 1);
    /* a member read under the walk's tag carries ids and decodes to its value */
    assert_int_equal(c.ops->member_decode(&c, w.read.tag, "\x12\x34\x56\x78\xab\xcd\xef\x01" "d",
                                          9, &p), 0);
    assert_int_equal(p, from);
    assert_int_equal(c.ops->walk(&c, from, 1, &w), 1);
    assert_string_equal(w.read.key, "s:{0:40}:80-");
    assert_int_equal(w.first, 0x4080000000000000ull);
    assert_int_equal(w.read.lo_len, 1);
    assert_memory_equal(w.read.lo, "-", 1);
    assert_int_equal(c.ops->walk(&c, from, 2, &w), 0);
    assert_int_equal(w.first, 0x4100000000000000ull);
    /* from in the upper bucket: it is bucket 0 of the walk */
    assert_int_equal(c.ops->walk(&c, 0x4090000000000000ull, 0, &w), 1);
    assert_string_equal(w.read.key, "s:{0:40}:80-");
    assert_int_equal(c.ops->walk(&c, 0x4090000000000000ull, 1, &w), 0);
    /* a shard never split is one bucket; past the last shard the walk is over */
    assert_int_equal(c.ops->walk(&c, 0xff00000000000000ull, 0, &w), 1);
    assert_string_equal(w.read.key, "s:{0:ff}:-");
    assert_int_equal(c.ops->walk(&c, 0xff00000000000000ull, 1, &w), 0);
    assert_int_equal(w.first, 0);
    layout_ctx_free(&c);
}

/* Plain table writes: ZADD / ZREM on the routed bucket, the count kept from the
 * replies, the split call when it reaches the limit (or when the bucket has no count),
 * and its reply {size, points...} learnt by the directory and setting the count. */
static void test_plain(void **state)
{
    (void)state;
    layout_ctx c;
    layout_cmd ec;
    assert_int_equal(layout_corpus_set(NULL), 0);
    assert_int_equal(layout_ctx_init(&c), 0);
    c.split_limit = 4;
    uint64_t p = 0x22c0000000000001ull;
    c.ops->plain(&c, 2, p, 1, &ec);
    assert_int_equal(ec.argc, 4);
    assert_string_equal(ec.argv[0], "ZADD");
    assert_string_equal(ec.argv[1], "s:{2:22}:-");
    assert_string_equal(ec.argv[2], "0");
    assert_int_equal(ec.argvlen[3], 7);
    assert_memory_equal(ec.argv[3], "\xc0\x00\x00\x00\x00\x00\x01", 7);
    c.ops->plain(&c, 2, p, 0, &ec);
    assert_int_equal(ec.argc, 3);
    assert_string_equal(ec.argv[0], "ZREM");
    assert_string_equal(ec.argv[1], "s:{2:22}:-");
    /* no count yet: the first write asks; then 1 + 1 + 0 + 1 + 1 reaches 4 */
    assert_int_equal(c.ops->plain_count(&c, 2, p, 1), 1);
    assert_int_equal(c.ops->plain_count(&c, 2, p, 1), 0);
    assert_int_equal(c.ops->plain_count(&c, 2, p, 1), 0);
    assert_int_equal(c.ops->plain_count(&c, 2, p, 0), 0);
    assert_int_equal(c.ops->plain_count(&c, 2, p, 1), 0);
    assert_int_equal(c.ops->plain_count(&c, 2, p, 1), 1);
    c.by_sha = 1;
    c.ops->split(&c, 2, p, &ec);
    assert_string_equal(ec.argv[0], "EVALSHA");
    assert_non_null(layout_script_text(&c, ec.argv[1], ec.argvlen[1]));
    assert_string_equal(ec.argv[2], "2");
    assert_string_equal(ec.argv[3], "s:{2:22}:-");
    assert_string_equal(ec.argv[4], "r:{2:22}");
    assert_string_equal(ec.argv[5], "4");
    assert_int_equal(ec.argvlen[7], 7);
    /* {2, "\x80"}: split at 80, the member's half holds 2: two more writes to split */
    redisReply s0 = {.type = REDIS_REPLY_INTEGER, .integer = 2};
    redisReply s1 = {.type = REDIS_REPLY_STRING, .str = "\x80", .len = 1};
    redisReply *sel[2] = {&s0, &s1};
    redisReply split = {.type = REDIS_REPLY_ARRAY, .elements = 2, .element = sel};
    assert_int_equal(layout_dir_reply(&c, 2, 0x22, &split), 0);
    assert_int_equal(c.ops->split_reply(&c, 2, p, &split), 0);
    c.ops->plain(&c, 2, p, 1, &ec);
    assert_string_equal(ec.argv[1], "s:{2:22}:80-");
    assert_int_equal(c.ops->plain_count(&c, 2, p, 1), 0);
    assert_int_equal(c.ops->plain_count(&c, 2, p, 1), 1);
    /* the other half has no count: its first write asks */
    assert_int_equal(c.ops->plain_count(&c, 2, 0x2210000000000000ull, 1), 1);
    /* a reply of no known shape is refused and drops the count; NULL drops it too */
    redisReply bad = {.type = REDIS_REPLY_STRING, .str = "x", .len = 1};
    assert_int_equal(c.ops->split_reply(&c, 2, p, &bad), -1);
    assert_int_equal(c.ops->plain_count(&c, 2, p, 1), 1);
    assert_int_equal(c.ops->split_reply(&c, 2, p, NULL), 0);
    assert_int_equal(c.ops->plain_count(&c, 2, p, 1), 1);
    /* a tombstone's WRONGTYPE marks the directory for reading */
    redisReply d0 = {.type = REDIS_REPLY_STRING, .str = "", .len = 0};
    redisReply *del[2] = {&d0, &s1};
    redisReply dir = {.type = REDIS_REPLY_ARRAY, .elements = 2, .element = del};
    assert_int_equal(layout_dir_load(&c, 2, 0x22, &dir, layout_dir_clock()), 0);
    assert_int_equal(layout_dir_need(&c, 2, 0x22), 0);
    redisReply wt = {.type = REDIS_REPLY_ERROR, .str = "WRONGTYPE Operation", .len = 19};
    assert_int_equal(layout_dir_reply(&c, 2, 0x22, &wt), 1);
    assert_int_equal(layout_dir_need(&c, 2, 0x22), 1);
    layout_ctx_free(&c);
}

/* Keys routed through the cached directory, which learns split points from the
 * replies of writes and of the write scripts' "bucket split" answers. */
static void test_routing(void **state)
{
    (void)state;
    layout_ctx c;
    layout_cmd ec;
    layout_dir_stats st;
    assert_int_equal(layout_corpus_set(NULL), 0);
    assert_int_equal(layout_ctx_init(&c), 0);
    assert_int_equal(layout_dir_need(&c, 1, 0x11), 1);
    uint64_t p = 0x11c0000000000001ull;
    c.ops->entry(&c, 1, p, "ZADD", &ec);
    assert_string_equal(ec.argv[0], "EVAL");
    assert_string_equal(ec.argv[2], "2");                /* bucket, directory */
    assert_string_equal(ec.argv[3], "s:{1:11}:-");
    assert_string_equal(ec.argv[4], "r:{1:11}");
    /* {-1, "\x80"}: the bucket split at 80; the write goes to the upper half */
    redisReply e0 = {.type = REDIS_REPLY_INTEGER, .integer = -1};
    redisReply e1 = {.type = REDIS_REPLY_STRING, .str = "\x80", .len = 1};
    redisReply *els[2] = {&e0, &e1};
    redisReply moved = {.type = REDIS_REPLY_ARRAY, .elements = 2, .element = els};
    assert_int_equal(layout_dir_reply(&c, 1, 0x11, &moved), 1);
    c.ops->entry(&c, 1, p, "ZADD", &ec);
    assert_string_equal(ec.argv[3], "s:{1:11}:80-");
    c.ops->entry(&c, 1, 0x1100000000000001ull, "ZREM", &ec);
    assert_string_equal(ec.argv[3], "s:{1:11}:-80");
    /* {1, "\xc0\x01"}: written, and the upper half split again */
    redisReply w0 = {.type = REDIS_REPLY_INTEGER, .integer = 1};
    redisReply w1 = {.type = REDIS_REPLY_STRING, .str = "\xc0\x01", .len = 2};
    redisReply *wel[2] = {&w0, &w1};
    redisReply wrote = {.type = REDIS_REPLY_ARRAY, .elements = 2, .element = wel};
    long long n;
    assert_int_equal(layout_dir_reply(&c, 1, 0x11, &wrote), 0);
    assert_int_equal(layout_write_count(&wrote, &n), 0);
    assert_int_equal(n, 1);
    c.ops->entry(&c, 1, p, "ZADD", &ec);
    assert_string_equal(ec.argv[3], "s:{1:11}:80-c001");
    /* the query plan of a 9-bit prefix covers the buckets it overlaps */
    layout_plan pl;
    layout_read rd;
    assert_int_equal(c.ops->plan(&c, 1, 0x1180000000000000ull, 9, &pl), 0);
    assert_int_equal(pl.nreads, 2);
    c.ops->plan_read(&c, &pl, 1, &rd);
    assert_string_equal(rd.key, "s:{1:11}:c001-");
    uint64_t v;
    assert_int_equal(c.ops->member_decode(&c, rd.tag, "\xc0\x01\x00\x00\x00\x00\x07", 7, &v), 0);
    assert_true(v == 0x11c0010000000007ull);
    /* a read of a tombstone: the directory must be read again */
    redisReply wt = {.type = REDIS_REPLY_ERROR, .str = "WRONGTYPE Operation", .len = 19};
    assert_int_equal(layout_dir_reply(&c, 1, 0x11, &wt), 1);
    assert_int_equal(layout_dir_need(&c, 1, 0x11), 1);
    /* bucket keys read back with their bounds; malformed bounds refused */
    layout_key k;
    assert_int_equal(layout_key_parse(&c, &test_ps, "s:{3:11}:80-c001", 16, &k), 0);
    assert_int_equal(k.kind, LAYOUT_KEY_BUCKET);
    assert_int_equal(k.table, 3);
    assert_int_equal(k.shard, 0x11);
    assert_int_equal(layout_key_parse(&c, &test_ps, "h:{0:11}:-80", 12, &k), -1);
    assert_int_equal(layout_key_parse(&c, &test_ps, "s:{0:11}:8-c0", 13, &k), -1);
    assert_int_equal(layout_key_parse(&c, &test_ps, "s:{0:11}:c0-80", 14, &k), -1);
    assert_int_equal(layout_key_parse(&c, &test_ps, "s:{0:11}:C0-", 12, &k), -1);
    assert_int_equal(layout_key_parse(&c, &test_ps, "s:{0:11}", 8, &k), -1);
    layout_dir_stats_get(&c, &st);
    assert_int_equal(st.splits, 1);
    assert_int_equal(st.stale, 2);
    /* a corpus name in front, a table of two digits, a shard under 0x10 */
    assert_int_equal(layout_corpus_set("news.b-2"), 0);
    c.ops->entry(&c, 12, 0x0a00000000000001ull, "ZADD", &ec);
    assert_string_equal(ec.argv[3], "news.b-2:s:{12:0a}:-");
    assert_string_equal(ec.argv[4], "news.b-2:r:{12:0a}");
    c.ops->entry(&c, 1, p, "ZSCORE", &ec);
    assert_string_equal(ec.argv[1], "news.b-2:s:{1:11}:80-c001");
    assert_int_equal(layout_corpus_set(NULL), 0);
    layout_ctx_free(&c);
}

/* The batched table writes: one script call for the entries of one fingerprint in
 * several tables, its reply's parts going to each table's directory, and replies of
 * the wrong shape refused. */
static void test_entries(void **state)
{
    (void)state;
    layout_ctx c;
    layout_batch b;
    layout_dir_stats st;
    long long n = -1;
    assert_int_equal(layout_ctx_init(&c), 0);
    unsigned tabs[2] = {1, 5};
    uint64_t ps[2] = {0x11c0000000000001ull, 0x22c0000000000002ull};
    c.ops->entries(&c, 2, tabs, ps, 1, &b);
    assert_int_equal(b.argc, 3 + 4 + 3 + 2);
    assert_string_equal(b.argv[0], "EVAL");
    assert_string_equal(b.argv[2], "4");                 /* 2 keys an item */
    assert_string_equal(b.argv[3], "s:{1:11}:-");
    assert_string_equal(b.argv[4], "r:{1:11}");
    assert_string_equal(b.argv[5], "s:{5:22}:-");
    assert_string_equal(b.argv[6], "r:{5:22}");
    assert_string_equal(b.argv[7], "A");
    assert_int_equal(b.argvlen[10], 7);                  /* the members */
    assert_memory_equal(b.argv[10], "\xc0\x00\x00\x00\x00\x00\x01", 7);
    assert_int_equal(b.argvlen[11], 7);
    c.ops->entries(&c, 0, tabs, ps, 1, &b);
    assert_int_equal(b.argc, 0);
    /* {-3, 2, {-1, "\x80"}}: item 2's bucket split at 80, nothing written */
    redisReply m0 = {.type = REDIS_REPLY_INTEGER, .integer = -1};
    redisReply m1 = {.type = REDIS_REPLY_STRING, .str = "\x80", .len = 1};
    redisReply *mel[2] = {&m0, &m1};
    redisReply sub = {.type = REDIS_REPLY_ARRAY, .elements = 2, .element = mel};
    redisReply f0 = {.type = REDIS_REPLY_INTEGER, .integer = -3};
    redisReply f1 = {.type = REDIS_REPLY_INTEGER, .integer = 2};
    redisReply *fel[3] = {&f0, &f1, &sub};
    redisReply failed = {.type = REDIS_REPLY_ARRAY, .elements = 3, .element = fel};
    assert_int_equal(c.ops->entries_reply(&c, 2, tabs, ps, &failed, &n), 1);
    c.ops->entries(&c, 2, tabs, ps, 1, &b);
    assert_string_equal(b.argv[3], "s:{1:11}:-");        /* table 1 untouched */
    assert_string_equal(b.argv[5], "s:{5:22}:80-");
    /* {2, {1, "\xc0\x01"}}: written, item 1's bucket split */
    redisReply p0 = {.type = REDIS_REPLY_INTEGER, .integer = 1};
    redisReply p1 = {.type = REDIS_REPLY_STRING, .str = "\xc0\x01", .len = 2};
    redisReply *pel[2] = {&p0, &p1};
    redisReply part = {.type = REDIS_REPLY_ARRAY, .elements = 2, .element = pel};
    redisReply w0 = {.type = REDIS_REPLY_INTEGER, .integer = 2};
    redisReply *wel[2] = {&w0, &part};
    redisReply wrote = {.type = REDIS_REPLY_ARRAY, .elements = 2, .element = wel};
    assert_int_equal(c.ops->entries_reply(&c, 2, tabs, ps, &wrote, &n), 0);
    assert_int_equal(n, 2);
    c.ops->entries(&c, 2, tabs, ps, 0, &b);
    assert_string_equal(b.argv[3], "s:{1:11}:-c001");
    assert_string_equal(b.argv[7], "R");
    /* {1, {2, {"\x90"}}}: written, item 2 followed a split at 90 made since its
     * directory was read: that directory learns it (and only that one) */
    redisReply q1 = {.type = REDIS_REPLY_STRING, .str = "\x90", .len = 1};
    redisReply *qpl[1] = {&q1};
    redisReply qpts = {.type = REDIS_REPLY_ARRAY, .elements = 1, .element = qpl};
    redisReply q0 = {.type = REDIS_REPLY_INTEGER, .integer = 2};
    redisReply *qel[2] = {&q0, &qpts};
    redisReply qpart = {.type = REDIS_REPLY_ARRAY, .elements = 2, .element = qel};
    redisReply *fol[2] = {&p0, &qpart};
    redisReply followed = {.type = REDIS_REPLY_ARRAY, .elements = 2, .element = fol};
    assert_int_equal(c.ops->entries_reply(&c, 2, tabs, ps, &followed, &n), 0);
    assert_int_equal(n, 1);
    c.ops->entries(&c, 2, tabs, ps, 1, &b);
    assert_string_equal(b.argv[3], "s:{1:11}:-c001");
    assert_string_equal(b.argv[5], "s:{5:22}:90-");
    /* wrong shapes: an item out of range, a bare integer, a part without its item */
    f1.integer = 3;
    assert_int_equal(c.ops->entries_reply(&c, 2, tabs, ps, &failed, &n), -1);
    f1.integer = 0;
    assert_int_equal(c.ops->entries_reply(&c, 2, tabs, ps, &failed, &n), -1);
    assert_int_equal(c.ops->entries_reply(&c, 2, tabs, ps, &w0, &n), -1);
    p0.type = REDIS_REPLY_STRING;
    p0.str = "1";
    p0.len = 1;
    assert_int_equal(c.ops->entries_reply(&c, 2, tabs, ps, &wrote, &n), -1);
    f0.integer = -1;
    assert_int_equal(c.ops->entries_reply(&c, 2, tabs, ps, &failed, &n), -1);
    layout_dir_stats_get(&c, &st);
    assert_int_equal(st.splits, 1);
    assert_int_equal(st.stale, 2);              /* the split at 80 met, 90 followed */
    layout_ctx_free(&c);
}

/* Every kind of key written by layout.h and the layout comes back with what was
 * written. */
static void check_parse(const char *corpus)
{
    layout_ctx c;
    layout_key k;
    layout_cmd ec;
    char key[LAYOUT_KEY_MAX];
    assert_int_equal(layout_corpus_set(corpus), 0);
    assert_int_equal(layout_ctx_init(&c), 0);
    uint64_t fp = 0x0123456789abcdefull;
    uint64_t p0 = perm_apply(&test_ps.tables[0], fp);
    for (unsigned t = 0; t < test_ps.ntables; t++) {
        uint64_t p = perm_apply(&test_ps.tables[t], fp), back;
        c.ops->entry(&c, t, p, "ZSCORE", &ec);
        assert_int_equal(layout_key_parse(&c, &test_ps, ec.argv[1], ec.argvlen[1], &k), 0);
        assert_int_equal(k.kind, LAYOUT_KEY_BUCKET);
        assert_int_equal(k.table, t);
        assert_int_equal(k.shard, layout_shard_of(p));
        /* the tag decodes the bucket's members */
        uint8_t m[7];
        for (int i = 0; i < 7; i++)
            m[i] = (uint8_t)(p >> (48 - 8 * i));
        assert_int_equal(c.ops->member_decode(&c, k.bucket, m, 7, &back), 0);
        assert_true(back == p);
    }
    size_t n = layout_doc_key(key, sizeof key, fp, p0);
    assert_int_equal(layout_key_parse(&c, &test_ps, key, n, &k), 0);
    assert_int_equal(k.kind, LAYOUT_KEY_IDSET);
    assert_true(k.fp == fp);
    /* a set key naming another shard than its fingerprint's is foreign */
    n = layout_doc_key(key, sizeof key, fp, p0 ^ ((uint64_t)1 << 56));
    assert_int_equal(layout_key_parse(&c, &test_ps, key, n, &k), -1);
    n = layout_lock_key(key, sizeof key, 0xa7);
    assert_int_equal(layout_key_parse(&c, &test_ps, key, n, &k), 0);
    assert_int_equal(k.kind, LAYOUT_KEY_LOCKS);
    assert_int_equal(k.shard, 0xa7);
    n = layout_count_key(key, sizeof key, 0x05);
    assert_int_equal(layout_key_parse(&c, &test_ps, key, n, &k), 0);
    assert_int_equal(k.kind, LAYOUT_KEY_COUNTS);
    layout_ctx_free(&c);
}

/* Table 0's entry is the member holding the ids. Its reads of ids, the
 * orphan check and entry() of table 0 are range reads of the member's 7 bytes up to
 * their successor (all-0xff bytes: to the end), its lock call names the table-0
 * bucket and no id hash, a query of table 0 reads to the successor of the range's
 * last 7 bytes, members of table 0 decode with ids after them, and programs write
 * entries from table 1 on. */
static void test_layout4(void **state)
{
    (void)state;
    layout_ctx c;
    layout_cmd cmd;
    layout_ids_kind kind;
    assert_int_equal(layout_corpus_set(NULL), 0);
    assert_int_equal(layout_ctx_init(&c), 0);
    layout_needs nd;
    layout_redis_needs(&c, &nd);
    assert_int_equal(nd.zset_value, 64);
    assert_int_equal(nd.hash_entries, 0);
    uint64_t fp = 0x0123456789abcdefull, p0 = 0x11223344556677ffull;
    c.ops->ids_read(&c, 0, fp, p0, &cmd, &kind);
    assert_int_equal(kind, LAYOUT_IDS_MEMBER);
    assert_int_equal(cmd.argc, 7);
    assert_string_equal(cmd.argv[0], "ZRANGEBYLEX");
    assert_string_equal(cmd.argv[1], "s:{0:11}:-");
    assert_int_equal(cmd.argvlen[2], 8);
    assert_memory_equal(cmd.argv[2], "[\x22\x33\x44\x55\x66\x77\xff", 8);
    assert_int_equal(cmd.argvlen[3], 7);     /* the last 0xff carried: 22..66 78 */
    assert_memory_equal(cmd.argv[3], "(\x22\x33\x44\x55\x66\x78", 7);
    assert_string_equal(cmd.argv[4], "LIMIT");
    c.ops->ids_read(&c, 1, fp, p0, &cmd, &kind);
    assert_int_equal(kind, LAYOUT_IDS_SET);
    assert_string_equal(cmd.argv[0], "SMEMBERS");
    c.ops->entry(&c, 0, 0x11ffffffffffffffull, "ZSCORE", &cmd);
    assert_string_equal(cmd.argv[0], "ZLEXCOUNT");
    assert_int_equal(cmd.argc, 4);
    assert_int_equal(cmd.argvlen[3], 1);
    assert_memory_equal(cmd.argv[3], "+", 1);
    c.ops->entry(&c, 0, p0, "ZADD", &cmd);
    assert_string_equal(cmd.argv[0], "ZLEXCOUNT");
    c.ops->entry(&c, 5, p0, "ZADD", &cmd);
    assert_string_equal(cmd.argv[0], "EVAL");
    assert_string_equal(cmd.argv[2], "2");   /* bucket, directory: no id hash */
    c.ops->lock(&c, fp, p0, "tok", 5000, "A", &cmd);
    assert_string_equal(cmd.argv[2], "5");
    assert_string_equal(cmd.argv[3], "s:{0:11}:-");
    assert_string_equal(cmd.argv[7], "r:{0:11}");
    assert_int_equal(cmd.argvlen[12], 7);    /* the member's 7 bytes, then limit, ttl */
    assert_int_equal(cmd.argc, 15);
    assert_non_null(strstr(cmd.argv[1], "ZRANGEBYLEX"));
    assert_null(strstr(cmd.argv[1], "'HGET', KEYS[1]"));   /* no id hash */
    /* a reply of the member read: nil, the ids after the 7 bytes, or in the set */
    redisReply m = {.type = REDIS_REPLY_STRING, .str = "ABCDEFG\x03" "abc", .len = 11};
    redisReply *mel[1] = {&m};
    redisReply arr = {.type = REDIS_REPLY_ARRAY, .elements = 1, .element = mel};
    redisReply none = {.type = REDIS_REPLY_ARRAY, .elements = 0};
    const char *v;
    size_t len;
    assert_int_equal(layout_ids_reply(LAYOUT_IDS_MEMBER, &arr, &v, &len), 1);
    assert_int_equal(len, 4);
    assert_memory_equal(v, "\x03" "abc", 4);
    assert_int_equal(layout_ids_reply(LAYOUT_IDS_MEMBER, &none, &v, &len), 0);
    m.len = 7;
    assert_int_equal(layout_ids_reply(LAYOUT_IDS_MEMBER, &arr, &v, &len), 1);
    assert_int_equal(len, 0);
    m.len = 6;
    assert_int_equal(layout_ids_reply(LAYOUT_IDS_MEMBER, &arr, &v, &len), -1);
    assert_int_equal(layout_ids_reply(LAYOUT_IDS_MEMBER, &m, &v, &len), -1);
    /* a query of table 0 ends at the successor of its range's last 7 bytes */
    layout_plan pl;
    layout_read rd;
    assert_int_equal(c.ops->plan(&c, 0, 0x1122334455667788ull, 32, &pl), 0);
    c.ops->plan_read(&c, &pl, 0, &rd);
    assert_int_equal(rd.lo_len, 8);
    assert_memory_equal(rd.lo, "[\x22\x33\x44\x00\x00\x00\x00", 8);
    assert_int_equal(rd.hi_len, 4);
    assert_memory_equal(rd.hi, "(\x22\x33\x45", 4);
    uint64_t p;
    assert_int_equal(c.ops->member_decode(&c, rd.tag, "\x22\x33\x44\x55\x66\x77\x88\x03" "abc",
                                          11, &p), 0);
    assert_true(p == 0x1122334455667788ull);
    assert_int_equal(c.ops->plan(&c, 3, 0x1122334455667788ull, 32, &pl), 0);
    c.ops->plan_read(&c, &pl, 0, &rd);
    assert_int_equal(rd.hi_len, 8);         /* other tables: inclusive */
    assert_int_equal(c.ops->member_decode(&c, rd.tag, "\x22\x33\x44\x55\x66\x77\x88\x03" "abc",
                                          11, &p), -1);
    /* keys read back: only a table-0 bucket's members carry ids */
    layout_key k0, k3;
    assert_int_equal(layout_key_parse(&c, &test_ps, "s:{0:22}:33-34", 14, &k0), 0);
    assert_int_equal(layout_key_parse(&c, &test_ps, "s:{3:22}:33-34", 14, &k3), 0);
    assert_int_equal(c.ops->member_decode(&c, k0.bucket, "\x33\x01\x02\x03\x04\x05\x06\x03" "abc",
                                          11, &p), 0);
    assert_true(p == 0x2233010203040506ull);
    assert_int_equal(c.ops->member_decode(&c, k3.bucket, "\x33\x01\x02\x03\x04\x05\x06\x03" "abc",
                                          11, &p), -1);
    assert_int_equal(c.ops->member_decode(&c, k3.bucket, "\x33\x01\x02\x03\x04\x05\x06", 7, &p), 0);
    /* a batch holding a table-0 item builds nothing */
    layout_batch *b = malloc(sizeof *b);
    assert_non_null(b);
    unsigned tabs[2] = {3, 0};
    uint64_t ps[2] = {p0, p0};
    c.ops->entries(&c, 2, tabs, ps, 1, b);
    assert_int_equal(b->argc, 0);
    c.ops->entries(&c, 1, tabs, ps, 1, b);
    assert_true(b->argc > 0);
    free(b);
    layout_ctx_free(&c);
}

static void test_key_parse(void **state)
{
    (void)state;
    check_parse(NULL);
    check_parse("news");
    layout_corpus_set(NULL);
}

static void test_key_parse_foreign(void **state)
{
    (void)state;
    layout_ctx c;
    layout_key k;
    layout_corpus_set(NULL);
    layout_ctx_init(&c);
    static const char *bad[] = {
        "s:{0:a7}:b3",        /* not bounds */
        "s:{0:a7}:b-",        /* a bound of an odd number of digits */
        "s:{0:a7}:b3-b3",     /* an empty bucket */
        "s:{0:A7}:-",         /* upper-case hex */
        "s:{00:a7}:-",        /* table with a leading zero */
        "s:{20:a7}:-",        /* table past the 20 of (6,3) */
        "s:{0:a7:-",          /* no closing brace */
        "h:{0:a7}:-",         /* an id hash (no kind of this format) */
        "x:{0:a7}:-",         /* unknown kind */
        "d:{0:a7}:0123",      /* short fingerprint */
        "w:{0:a7}:",          /* trailing bytes */
        "news:s:{0:a7}:-",    /* another corpus's key */
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(layout_key_parse(&c, &test_ps, bad[i], strlen(bad[i]), &k), -1);
    assert_int_equal(layout_key_parse(&c, &test_ps, "s:{19:a7}:b3-", 13, &k), 0);
    char pat[LAYOUT_KEY_MAX];
    assert_int_equal(layout_scan_pattern(pat, sizeof pat, LAYOUT_KEY_IDSET), 4);
    assert_string_equal(pat, "d:{*");
    layout_corpus_set("news");
    layout_scan_pattern(pat, sizeof pat, LAYOUT_KEY_BUCKET);
    assert_string_equal(pat, "news:s:{*");
    assert_int_equal(layout_key_parse(&c, &test_ps, "s:{0:a7}:-", 10, &k), -1);
    assert_int_equal(layout_key_parse(&c, &test_ps, "news:s:{0:a7}:-", 15, &k), 0);
    layout_corpus_set(NULL);
    layout_ctx_free(&c);
}

/* The reads of ids: the table-0 member, then the overflow set; the orphan check, the
 * bench's write and the lock call match them. */
static void test_ids_reads(void **state)
{
    (void)state;
    layout_ctx c;
    layout_cmd cmd;
    layout_ids_kind kind;
    uint64_t fp = 0xfeedull, p0 = 0xa7b3c4d5e6f70812ull;
    layout_ctx_init(&c);
    c.ops->ids_read(&c, 0, fp, p0, &cmd, &kind);
    assert_int_equal(kind, LAYOUT_IDS_MEMBER);
    assert_string_equal(cmd.argv[0], "ZRANGEBYLEX");
    assert_string_equal(cmd.argv[1], "s:{0:a7}:-");
    c.ops->ids_read(&c, 1, fp, p0, &cmd, &kind);
    assert_int_equal(kind, LAYOUT_IDS_SET);
    assert_string_equal(cmd.argv[0], "SMEMBERS");
    assert_string_equal(cmd.argv[1], "d:{0:a7}:000000000000feed");
    c.ops->entry(&c, 0, p0, "ZSCORE", &cmd);
    assert_int_equal(cmd.argc, 4);
    assert_string_equal(cmd.argv[0], "ZLEXCOUNT");
    assert_string_equal(cmd.argv[1], "s:{0:a7}:-");
    uint8_t scratch[32];
    layout_put_id(&c, fp, p0, "doc", 3, scratch, &cmd);
    assert_int_equal(cmd.argc, 4);
    assert_string_equal(cmd.argv[0], "ZADD");
    assert_int_equal(cmd.argvlen[3], 7 + 4);
    assert_memory_equal(cmd.argv[3], "\xb3\xc4\xd5\xe6\xf7\x08\x12\x03" "doc", 11);
    c.ops->lock(&c, fp, p0, "tok", 5000, LAYOUT_LOCK_OP_ADD, &cmd);
    assert_int_equal(cmd.argc, 15);
    assert_string_equal(cmd.argv[2], "5");
    assert_string_equal(cmd.argv[3], "s:{0:a7}:-");
    assert_string_equal(cmd.argv[4], "d:{0:a7}:000000000000feed");
    assert_string_equal(cmd.argv[5], "w:{0:a7}");
    assert_string_equal(cmd.argv[6], "c:{0:a7}");
    assert_string_equal(cmd.argv[8], "000000000000feed");
    assert_string_equal(cmd.argv[11], "A");
    layout_ctx_free(&c);
}

/* The plan reads the buckets of the prefix range, each decoding what it holds. */
static void test_plan(void **state)
{
    (void)state;
    layout_ctx c;
    layout_plan pl;
    layout_read rd;
    layout_ctx_init(&c);
    uint64_t p = 0xa7b3c4d5e6f70812ull;
    assert_int_equal(c.ops->plan(&c, 3, p, 4, &pl), -1);
    assert_int_equal(c.ops->plan(&c, 3, p, 65, &pl), -1);
    assert_int_equal(c.ops->plan(&c, 3, p, 12, &pl), 0);
    assert_int_equal(pl.nreads, 1);             /* one bucket: the shard never split */
    c.ops->plan_read(&c, &pl, 0, &rd);
    assert_string_equal(rd.key, "s:{3:a7}:-");
    assert_int_equal(rd.lo_len, 8);
    assert_memory_equal(rd.lo, "[\xb0\x00\x00\x00\x00\x00\x00", 8);
    assert_memory_equal(rd.hi, "[\xbf\xff\xff\xff\xff\xff\xff", 8);
    uint8_t m[7] = {0xb3, 0xc4, 0xd5, 0xe6, 0xf7, 0x08, 0x12};
    uint64_t back;
    assert_int_equal(c.ops->member_decode(&c, rd.tag, m, 7, &back), 0);
    assert_true(back == p);
    assert_int_equal(c.ops->member_decode(&c, rd.tag, m, 6, &back), -1);
    layout_ctx_free(&c);
}

static redisReply *fake_int(long long v)
{
    redisReply *r = calloc(1, sizeof *r);
    r->type = REDIS_REPLY_INTEGER;
    r->integer = v;
    return r;
}

static redisReply *fake_array(size_t n, const long long *v)
{
    redisReply *r = calloc(1, sizeof *r);
    r->type = REDIS_REPLY_ARRAY;
    r->elements = n;
    r->element = calloc(n, sizeof *r->element);
    for (size_t i = 0; i < n; i++)
        r->element[i] = fake_int(v[i]);
    return r;
}

static void fake_free(redisReply *r)
{
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
        free(r->element[i]);
    if (r->type == REDIS_REPLY_ARRAY)
        free(r->element);
    free(r);
}

/* The reconcile steps: the lock reply decides ZADD or ZREM in every table. */
static void test_fix_steps(void **state)
{
    (void)state;
    layout_ctx c;
    layout_fix f;
    layout_cmd cmd;
    layout_ctx_init(&c);
    uint64_t fp = 0x0123456789abcdefull;
    layout_fix_init(&f, &test_ps, fp, "fsck-1-2");
    layout_fix_lock(&c, &f, 5000, LAYOUT_LOCK_OP_FIX, &cmd);
    assert_string_equal(cmd.argv[11], "F");
    assert_string_equal(cmd.argv[9], "fsck-1-2");
    static const long long taken_ids[] = {1, 2, 3, 1, 1}, taken_none[] = {1, 1, 0, 0, 1},
                           held[] = {0, 1200};
    redisReply *r = fake_array(5, taken_ids);
    assert_int_equal(layout_fix_locked(&f, r), 1);
    assert_int_equal(f.add, 1);
    fake_free(r);
    for (unsigned t = c.ops->entry_from; t < test_ps.ntables; t++) {
        layout_fix_entry(&c, &test_ps, &f, t, &cmd);
        uint64_t p = perm_apply(&test_ps.tables[t], fp);
        char key[LAYOUT_KEY_MAX];
        snprintf(key, sizeof key, "s:{%u:%02x}:-", t, layout_shard_of(p));
        assert_string_equal(cmd.argv[0], "EVAL");   /* the zset script */
        assert_string_equal(cmd.argv[3], key);
        assert_string_equal(cmd.argv[5], "A");
    }
    r = fake_array(5, taken_none);
    assert_int_equal(layout_fix_locked(&f, r), 1);
    assert_int_equal(f.add, 0);
    fake_free(r);
    layout_fix_entry(&c, &test_ps, &f, 1, &cmd);
    assert_string_equal(cmd.argv[5], "R");
    r = fake_array(2, held);
    assert_int_equal(layout_fix_locked(&f, r), 0);
    fake_free(r);
    r = fake_int(1);
    assert_int_equal(layout_fix_locked(&f, r), -1);
    assert_int_equal(layout_fix_entry_ok(r), 1);
    fake_free(r);
    assert_int_equal(layout_fix_locked(&f, NULL), -1);
    assert_int_equal(layout_fix_entry_ok(NULL), 0);
    layout_fix_unlock(&f, &cmd);
    assert_int_equal(cmd.argc, 6);
    char wkey[LAYOUT_KEY_MAX], field[17];
    layout_lock_key(wkey, sizeof wkey, layout_shard_of(f.p0));
    layout_lock_field(field, fp);
    assert_string_equal(cmd.argv[3], wkey);
    assert_string_equal(cmd.argv[4], field);
    assert_string_equal(cmd.argv[5], "fsck-1-2");
    uint64_t back;
    assert_int_equal(layout_lock_field_parse(field, 16, &back), 0);
    assert_true(back == fp);
    assert_int_equal(layout_lock_field_parse("0123456789ABCDEF", 16, &back), -1);
    assert_int_equal(layout_lock_field_parse(field, 15, &back), -1);
    layout_ctx_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ops_table),
        cmocka_unit_test(test_dir_age),
        cmocka_unit_test(test_routing),
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_walk),
        cmocka_unit_test(test_entries),
        cmocka_unit_test(test_layout4),
        cmocka_unit_test(test_key_parse),
        cmocka_unit_test(test_key_parse_foreign),
        cmocka_unit_test(test_ids_reads),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_fix_steps),
    };
    return cmocka_run_group_tests(tests, test_setup, test_teardown);
}
