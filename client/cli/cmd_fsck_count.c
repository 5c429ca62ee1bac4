/* cmd_fsck_count.c: the counters phase of `simhash fsck` (cmd_fsck_count.h). The
 * documents phase counts each shard's fingerprints and ids over minutes; on a live
 * corpus its writers move the counters c:{0:xx} meanwhile, so a shard whose counters
 * differ from that count is not yet a finding. It is counted again now, alone, between
 * two reads of its counters: the directory of its table-0 buckets read fresh, every
 * bucket read whole through the layout's walk (walk() from the shard's first value
 * to its last bucket), each member's ids counted from its packing (member_ids) or its overflow
 * set (SCARD). When the counters moved between the two reads, a writer was at work:
 * left as a write in flight (counting again while writes go on would cost a full read
 * of the shard each time, and prove nothing more). Only a count that differs twice
 * from counters that stood still (at most FK_COUNT_TRIES counts) is a mismatch; --repair writes it
 * only if the counters still hold what was read (a compare-and-set script), so a
 * write never loses its increment to a count it overtook. */
#include "cmd_fsck_count.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FK_COUNT_TRIES 3

/* HSET of the counters only when they still hold ARGV[1], ARGV[2] (absent: "0"). */
static const char fk_count_cas_lua[] =
    "if (redis.call('HGET', KEYS[1], 'fingerprints') or '0') ~= ARGV[1] or "
    "(redis.call('HGET', KEYS[1], 'documents') or '0') ~= ARGV[2] then return 0 end\n"
    "redis.call('HSET', KEYS[1], 'fingerprints', ARGV[3], 'documents', ARGV[4])\n"
    "return 1\n";

/* One command routed by its key (layout_cmd_key_index); NULL when the node cannot
 * be reached. */
static redisReply *fk_count_send(fk_nodes *net, const layout_cmd *c)
{
    int k = layout_cmd_key_index(c);
    return fk_send(net, c->argv[k], c->argvlen[k], c->argc, (const char **)c->argv, c->argvlen);
}

/* The counters of shard xx (absent fields: 0) into v[2]. Returns 0, or -1. */
static int fk_count_read(fk_nodes *net, unsigned xx, long long v[2])
{
    char key[LAYOUT_KEY_MAX];
    size_t kl = layout_count_key(key, sizeof(key), xx);
    const char *argv[4] = {"HMGET", key, "fingerprints", "documents"};
    size_t lens[4] = {5, kl, 12, 9};
    redisReply *r = fk_send(net, key, kl, 4, argv, lens);
    int rc = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < 2; i++)
        v[i] = r->element[i]->type == REDIS_REPLY_STRING ? strtoll(r->element[i]->str, NULL, 10)
                                                          : 0;
    if (r)
        freeReplyObject(r);
    return rc;
}

/* The ids of one member (bucket of tag): 1 with *ids, 0 when it is none of this
 * corpus's (foreign: not counted, as in the documents phase), -1 when a read failed. */
static int fk_count_member(const layout_ctx *lay, const perm_set *ps, fk_nodes *net,
                           uint64_t tag, const redisReply *m, long long *ids)
{
    uint64_t p0;
    const char *packed;
    size_t plen, off = 0, idlen;
    const uint8_t *id;
    if (m->type != REDIS_REPLY_STRING ||
        lay->ops->member_decode(lay, tag, m->str, m->len, &p0) != 0 ||
        lay->ops->member_ids(lay, tag, m->str, m->len, &packed, &plen) != 1)
        return 0;
    if (plen > 0) {
        int more;
        *ids = 0;
        while ((more = layout_ids_next(packed, plen, &off, &id, &idlen)) == 1)
            (*ids)++;
        return more < 0 ? 0 : 1;
    }
    layout_cmd sc;
    layout_cmd_overflow(&sc, perm_revert(&ps->tables[0], p0), p0);
    sc.argv[0] = "SCARD";
    sc.argvlen[0] = 5;
    redisReply *r = fk_count_send(net, &sc);
    if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    *ids = r->integer;
    freeReplyObject(r);
    return 1;
}

/* Counts shard xx now: v[0] fingerprints with ids, v[1] ids. Returns 0, 1 when a
 * bucket split under the count (counted again by the caller), or -1. */
static int fk_count_shard(const layout_ctx *lay, const perm_set *ps, fk_nodes *net,
                          unsigned xx, long long v[2])
{
    layout_cmd dc;
    memset(&dc, 0, sizeof(dc));
    layout_dir_read(lay, 0, xx, &dc);
    uint64_t sent = layout_dir_clock();
    redisReply *r = fk_count_send(net, &dc);
    int rc = r && layout_dir_load(lay, 0, xx, r, sent) == 0 ? 0 : -1;
    if (r)
        freeReplyObject(r);
    v[0] = v[1] = 0;
    layout_walk w;
    for (uint64_t b = 0; rc == 0 && lay->ops->walk(lay, (uint64_t)xx << 56, b, &w); b++) {
        const char *argv[4] = {"ZRANGE", w.read.key, "0", "-1"};
        size_t lens[4] = {6, w.read.klen, 1, 2};
        r = fk_send(net, w.read.key, w.read.klen, 4, argv, lens);
        if (r == NULL || (r->type != REDIS_REPLY_ARRAY && r->type != REDIS_REPLY_ERROR)) {
            rc = -1;
        } else if (r->type == REDIS_REPLY_ERROR) {
            rc = strncmp(r->str, "WRONGTYPE", 9) == 0 ? 1 : -1;   /* split meanwhile */
        } else {
            for (size_t i = 0; i < r->elements && rc == 0; i++) {
                long long ids = 0;
                int m = fk_count_member(lay, ps, net, w.read.tag, r->element[i], &ids);
                if (m < 0)
                    rc = -1;
                else if (m > 0 && ids > 0) {
                    v[0]++;
                    v[1] += ids;
                }
            }
        }
        if (r)
            freeReplyObject(r);
    }
    return rc;
}

/* Writes v into the counters of shard xx if they still hold have. Returns 1 written,
 * 0 not (a writer moved them: left), -1 failed. */
static int fk_count_fix(fk_nodes *net, unsigned xx, const long long have[2],
                        const long long v[2])
{
    char key[LAYOUT_KEY_MAX], num[4][24];
    size_t kl = layout_count_key(key, sizeof(key), xx);
    snprintf(num[0], sizeof(num[0]), "%lld", have[0]);
    snprintf(num[1], sizeof(num[1]), "%lld", have[1]);
    snprintf(num[2], sizeof(num[2]), "%lld", v[0]);
    snprintf(num[3], sizeof(num[3]), "%lld", v[1]);
    const char *argv[8] = {"EVAL", fk_count_cas_lua, "1", key, num[0], num[1], num[2], num[3]};
    size_t lens[8];
    for (int i = 0; i < 8; i++)
        lens[i] = strlen(argv[i]);
    redisReply *r = fk_send(net, key, kl, 8, argv, lens);
    int rc = r && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
    if (r)
        freeReplyObject(r);
    return rc;
}

/* Shard xx, whose counters differed from the scan's count: 1 a mismatch confirmed
 * (have and v set: the counters and the count), 0 none (a write in flight during the
 * scan, or still), -1 a read failed. *moving is set when writes were met. */
static int fk_count_confirm(const layout_ctx *lay, const perm_set *ps, fk_nodes *net,
                            unsigned xx, long long have[2], long long v[2], int *moving)
{
    long long prev[2] = {-1, -1}, prevc[2] = {-1, -1};
    *moving = 0;
    for (int t = 0; t < FK_COUNT_TRIES; t++) {
        long long h1[2], h2[2];
        if (fk_count_read(net, xx, h1) != 0)
            return -1;
        int rc = fk_count_shard(lay, ps, net, xx, v);
        if (rc < 0 || fk_count_read(net, xx, h2) != 0)
            return -1;
        if (rc == 1 || h1[0] != h2[0] || h1[1] != h2[1]) {
            *moving = 1;                /* a writer at work */
            return 0;
        }
        if (v[0] == h2[0] && v[1] == h2[1])
            return 0;                   /* the scan met writes in flight */
        if (prev[0] == h2[0] && prev[1] == h2[1] && prevc[0] == v[0] && prevc[1] == v[1]) {
            have[0] = h2[0];
            have[1] = h2[1];
            return 1;                   /* the same difference twice, nothing moving */
        }
        memcpy(prev, h2, sizeof(prev));
        memcpy(prevc, v, sizeof(prevc));
    }
    return 0;                           /* never the same twice: left as in flight */
}

int fsck_counters(const layout_ctx *lay, const perm_set *ps, fk_nodes *net,
                  const long long *cnt_fps, const long long *cnt_docs, int repair,
                  fsck_count_stats *st)
{
    memset(st, 0, sizeof(*st));
    for (unsigned xx = 0; xx < 256; xx++) {
        long long have[2], v[2];
        if (fk_count_read(net, xx, have) != 0) {
            fprintf(stderr, "simhash fsck: cannot read the counters of shard %02x\n", xx);
            return -1;
        }
        if (have[0] == cnt_fps[xx] && have[1] == cnt_docs[xx])
            continue;
        st->rechecked++;
        int moving = 0;
        int rc = fk_count_confirm(lay, ps, net, xx, have, v, &moving);
        if (rc < 0) {
            fprintf(stderr, "simhash fsck: cannot count shard %02x again\n", xx);
            return -1;
        }
        if (rc == 0) {
            st->in_flight++;
            continue;
        }
        st->mismatches++;
        if (repair && fk_count_fix(net, xx, have, v) == 1)
            st->fixed++;
    }
    return 0;
}
