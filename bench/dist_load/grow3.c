/* grow3.c: bench-dist_load's grow3 mode (bench/dist_load.c's comment at its top): a
 * corpus of layout 3 or 4 (--layout) of fingerprints [0, offset + count) written whole,
 * as the system's splits would leave it. Each table's members go in corpus order
 * through a simulation of its shards' buckets that splits one reaching --split-limit
 * where the split script would (bdir_split_point); then every live bucket is one ZADD,
 * table 0's id hashes one HSET each (layout 3; layout 4 packs a fingerprint's id into
 * its table-0 member, the layout's own put_id), the directories, the counters, and the
 * tombstones of the buckets live at --offset that split since. A table-0 member's bytes
 * after its first 7 do not move it: layout 4 routes, orders and splits on those 7, so
 * one simulation serves both layouts. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bucketdir.h"
#include "layout_ops.h"

#include "../bench_util.h"
#include "dl.h"

/* One bucket of the simulation: its lower bound, its members (as bounds, sorted) and
 * the fingerprint number of each, and the number of the fingerprint whose write made
 * it (0 for a shard's first bucket). */
typedef struct g3_bucket {
    bdir_bound lo;
    bdir_bound *m;
    uint32_t *ix;
    uint32_t n, born;
} g3_bucket;

typedef struct g3_shard {
    g3_bucket *b;
    size_t n, cap;
} g3_shard;

/* A bucket that was live after fingerprint --offset and split since: its old names
 * become tombstones holding the first split point, as the split script leaves them. */
typedef struct g3_dead {
    bdir_bound lo, hi, point;
    unsigned shard;
} g3_dead;

typedef struct g3_state {
    g3_shard shard[256];
    g3_dead *dead;
    size_t ndead, capdead;
    uint64_t splits;          /* splits made by fingerprints [offset, offset + count) */
    unsigned limit;
} g3_state;

static void *g3_alloc(size_t n)
{
    void *p = malloc(n);
    if (p == NULL)
        die("memory", "grow3");
    return p;
}

static g3_bucket *g3_insert_bucket(g3_shard *s, size_t at, bdir_bound lo, uint32_t born,
                                   unsigned limit)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->b = realloc(s->b, s->cap * sizeof *s->b);
        if (s->b == NULL)
            die("memory", "grow3 buckets");
    }
    memmove(&s->b[at + 1], &s->b[at], (s->n - at) * sizeof *s->b);
    s->n++;
    g3_bucket *b = &s->b[at];
    b->lo = lo;
    b->n = 0;
    b->born = born;
    b->m = g3_alloc(limit * sizeof *b->m);
    b->ix = g3_alloc(limit * sizeof *b->ix);
    return b;
}

/* Splits bucket `at` of s as l3_split does: at the shortest prefix of its middle
 * member above the one before it; the lower half keeps the array, both get new names. */
static void g3_split(g3_state *g, unsigned xx, size_t at, uint32_t i)
{
    g3_shard *s = &g->shard[xx];
    g3_bucket *b = &s->b[at];
    uint32_t c = b->n / 2;
    bdir_bound point = bdir_split_point(b->m[c - 1], b->m[c]);
    if (i >= opt.offset && b->born < opt.offset) {   /* live after --offset, split since */
        if (g->ndead == g->capdead) {
            g->capdead = g->capdead ? g->capdead * 2 : 1024;
            g->dead = realloc(g->dead, g->capdead * sizeof *g->dead);
            if (g->dead == NULL)
                die("memory", "grow3 tombstones");
        }
        g->dead[g->ndead++] = (g3_dead){b->lo, at + 1 < s->n ? s->b[at + 1].lo : BDIR_NONE,
                                        point, xx};
    }
    g->splits += i >= opt.offset;
    b->born = i;
    g3_bucket *u = g3_insert_bucket(s, at + 1, point, i, g->limit);
    b = &s->b[at];
    u->n = b->n - c;
    memcpy(u->m, b->m + c, u->n * sizeof *u->m);
    memcpy(u->ix, b->ix + c, u->n * sizeof *u->ix);
    b->n = c;
}

/* Member m of fingerprint number i into its shard's bucket (a member already there is
 * left as it is, as ZADD does); splits the bucket when it reaches the limit. */
static void g3_add(g3_state *g, unsigned xx, bdir_bound m, uint32_t i)
{
    g3_shard *s = &g->shard[xx];
    if (s->n == 0)
        g3_insert_bucket(s, 0, 0, 0, g->limit);
    size_t lo = 0, hi = s->n;               /* the last bucket with b.lo <= m */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->b[mid].lo <= m)
            lo = mid;
        else
            hi = mid;
    }
    g3_bucket *b = &s->b[lo];
    uint32_t a = 0, z = b->n;               /* the first member >= m */
    while (a < z) {
        uint32_t mid = a + (z - a) / 2;
        if (b->m[mid] < m)
            a = mid + 1;
        else
            z = mid;
    }
    if (a < b->n && b->m[a] == m)
        return;
    memmove(&b->m[a + 1], &b->m[a], (b->n - a) * sizeof *b->m);
    memmove(&b->ix[a + 1], &b->ix[a], (b->n - a) * sizeof *b->ix);
    b->m[a] = m;
    b->ix[a] = i;
    if (++b->n >= g->limit)
        g3_split(g, xx, lo, i);
}

/* The key of kind `kind` of bucket [lo, hi) into buf[LAYOUT_KEY_MAX]; returns its
 * length. */
static size_t g3_key(char *buf, char kind, unsigned t, unsigned xx, bdir_bound lo, bdir_bound hi)
{
    size_t n = bdir_key(buf, LAYOUT_KEY_MAX, kind, t, xx, lo, hi);
    if (n == 0)
        die("grow3", "key too long");
    return n;
}

enum { G3_GROUP = LAYOUT_SPLIT_LIMIT_MAX };

/* Layout 4's table-0 member of fingerprint number i (its member as a bound m, in shard
 * xx) with its one id doc, into out[LAYOUT_PUT_ID_SCRATCH(32)], built by the layout's
 * put_id (ZADD key 0 member); returns its length. Refuses a member that would not fit
 * inline (a 30-byte id always does). */
static size_t g3_member_with_id(uint8_t *out, bdir_bound m, unsigned xx, uint32_t i,
                                const char *doc, size_t dlen)
{
    uint64_t p0 = bdir_member_value(m, xx), fp = dl_fp(i);
    if (perm_apply(&ps.tables[0], fp) != p0)
        die("grow3", "a table-0 member is not its fingerprint's");
    layout_cmd pc;
    lay.ops->put_id(&lay, fp, p0, doc, dlen, out, &pc);
    if (pc.argc != 4 || pc.argvlen[3] <= 7 || (const uint8_t *)pc.argv[3] != out)
        die("grow3", "layout 4: the id does not fit in the table-0 member");
    return pc.argvlen[3];
}

/* Appends one command; at most 512 replies stay outstanding. */
static void g3_send(redisContext *c, int argc, const char **argv, const size_t *lens,
                    uint64_t *pending, uint64_t *sent, dl_stats *st)
{
    redisAppendCommandArgv(c, argc, argv, lens);
    (*pending)++;
    (*sent)++;
    dl_drain(c, pending, 512, st);
}

/* Writes table t's simulated state: every live bucket whole (ZADD; table 0 also its id
 * hash), each shard's directory once it has split, the tombstones of the buckets that
 * split since --offset; table 0 also sets the counters. Returns commands sent. */
static uint64_t g3_write(redisContext *c, const g3_state *g, unsigned t, dl_stats *st)
{
    static const char *argv[2 + 2 * G3_GROUP];
    static size_t lens[2 + 2 * G3_GROUP];
    static uint8_t mem[G3_GROUP][LAYOUT_PUT_ID_SCRATCH(32)];
    static uint8_t ids[G3_GROUP][48];
    /* layout 4: a table-0 member carries its ids, and there is no id hash */
    int inline_ids = t == 0 && lay.ops->entry_from == 1;
    int hashes = t == 0 && !inline_ids;
    char key[LAYOUT_KEY_MAX], num[2][24];
    uint64_t pending = 0, sent = 0;
    for (unsigned xx = 0; xx < 256; xx++) {
        const g3_shard *s = &g->shard[xx];
        uint64_t fps = 0;
        for (size_t k = 0; k < s->n; k++) {
            const g3_bucket *b = &s->b[k];
            fps += b->n;
            if (b->n == 0)
                continue;
            bdir_bound hi = k + 1 < s->n ? s->b[k + 1].lo : BDIR_NONE;
            for (int h = 0; h <= hashes; h++) {
                argv[0] = h ? "HSET" : "ZADD";
                lens[0] = 4;
                argv[1] = key;
                lens[1] = g3_key(key, h ? 'h' : 's', t, xx, b->lo, hi);
                int argc = 2;
                /* descending: ZADD's insert then stops at the list's head each time */
                for (uint32_t j = b->n; j-- > 0;) {
                    size_t ml = bdir_bound_bytes(b->m[j], mem[j]);
                    char doc[32];
                    int dlen = h || inline_ids ? dl_doc(doc, b->ix[j]) : 0;
                    if (inline_ids)
                        ml = g3_member_with_id(mem[j], b->m[j], xx, b->ix[j], doc, (size_t)dlen);
                    if (h) {
                        argv[argc] = (const char *)mem[j];
                        lens[argc++] = ml;
                        argv[argc] = (const char *)ids[j];
                        lens[argc++] = layout_ids_put(ids[j], doc, (size_t)dlen);
                    } else {
                        argv[argc] = "0";
                        lens[argc++] = 1;
                        argv[argc] = (const char *)mem[j];
                        lens[argc++] = ml;
                    }
                }
                g3_send(c, argc, argv, lens, &pending, &sent, st);
            }
        }
        for (size_t k = s->n > 1 ? 0 : s->n; k < s->n; k += G3_GROUP) {
            layout_cmd rc;
            layout_dir_read(&lay, t, xx, &rc);
            argv[0] = "ZADD";
            lens[0] = 4;
            argv[1] = rc.argv[1];
            lens[1] = rc.argvlen[1];
            int argc = 2;
            for (size_t j = k; j < s->n && j < k + G3_GROUP; j++) {
                argv[argc] = "0";
                lens[argc++] = 1;
                argv[argc] = (const char *)mem[j - k];
                lens[argc++] = bdir_bound_bytes(s->b[j].lo, mem[j - k]);
            }
            g3_send(c, argc, argv, lens, &pending, &sent, st);
        }
        if (t == 0) {
            size_t kl = layout_count_key(key, sizeof key, xx);
            snprintf(num[0], sizeof num[0], "%" PRIu64, fps);
            const char *cargv[6] = {"HSET", key, "fingerprints", num[0], "documents", num[0]};
            size_t clens[6] = {4, kl, 12, strlen(num[0]), 9, strlen(num[0])};
            g3_send(c, 6, cargv, clens, &pending, &sent, st);
        }
    }
    snprintf(num[1], sizeof num[1], "%u", lay.tombstone_s);
    for (size_t k = 0; k < g->ndead; k++) {
        const g3_dead *d = &g->dead[k];
        uint8_t pt[BDIR_BOUND_MAX];
        size_t pl = bdir_bound_bytes(d->point, pt);
        for (int h = 0; h <= hashes; h++) {
            size_t kl = g3_key(key, h ? 'h' : 's', t, d->shard, d->lo, d->hi);
            const char *targv[5] = {"SET", key, (const char *)pt, "EX", num[1]};
            size_t tlens[5] = {3, kl, pl, 2, strlen(num[1])};
            g3_send(c, 5, targv, tlens, &pending, &sent, st);
        }
    }
    dl_drain(c, &pending, 0, st);
    return sent;
}

static void g3_free(g3_state *g)
{
    for (unsigned xx = 0; xx < 256; xx++) {
        for (size_t k = 0; k < g->shard[xx].n; k++) {
            free(g->shard[xx].b[k].m);
            free(g->shard[xx].b[k].ix);
        }
        free(g->shard[xx].b);
    }
    free(g->dead);
    memset(g, 0, sizeof *g);
}

/* grow3: fingerprints [0, offset + count) as a corpus of layout 3 or 4 whose buckets
 * split as the system's would, written whole (see the top of the file). */
int dl_grow3(void)
{
    if (opt.offset + opt.count > UINT32_MAX)
        die("grow3", "--offset + --count must stay below 2^32");
    redisContext *c = dl_connect();
    dl_stats st = {0};
    uint64_t n = opt.offset + opt.count, splits = 0, buckets = 0, dead = 0, cmds = 0;
    redisReply *r = redisCommand(c, "HSETNX %s blocks %u", LAYOUT_META_KEY, opt.blocks);
    freeReplyObject(r);
    r = redisCommand(c, "HSETNX %s distance %u", LAYOUT_META_KEY, opt.distance);
    freeReplyObject(r);
    r = redisCommand(c, "HSETNX %s layout %u", LAYOUT_META_KEY, opt.layout);
    freeReplyObject(r);
    r = redisCommand(c, "HSETNX %s tombstone_seconds %u", LAYOUT_META_KEY, lay.tombstone_s);
    freeReplyObject(r);
    r = redisCommand(c, "HGET %s tombstone_seconds", LAYOUT_META_KEY);    /* the corpus's */
    if (r && r->type == REDIS_REPLY_STRING && strtoul(r->str, NULL, 10) >= LAYOUT_TOMBSTONE_S_MIN &&
        strtoul(r->str, NULL, 10) <= LAYOUT_TOMBSTONE_S_MAX)
        lay.tombstone_s = (unsigned)strtoul(r->str, NULL, 10);
    freeReplyObject(r);
    r = redisCommand(c, "HMGET %s layout blocks distance", LAYOUT_META_KEY);
    char want[64];
    snprintf(want, sizeof want, "%u %u %u", opt.layout, opt.blocks, opt.distance);
    char have[64] = "";
    for (size_t k = 0; r && r->type == REDIS_REPLY_ARRAY && k < r->elements; k++)
        if (r->element[k]->type == REDIS_REPLY_STRING)
            snprintf(have + strlen(have), sizeof have - strlen(have), "%s%.*s", k ? " " : "",
                     (int)r->element[k]->len, r->element[k]->str);
    freeReplyObject(r);
    if (strcmp(have, want) != 0)
        die("grow3", "the corpus's meta (layout blocks distance) is not --layout, --blocks, --distance");
    double t0 = bench_now(), sim = 0;
    for (unsigned t = 0; t < ps.ntables; t++) {
        g3_state *g = calloc(1, sizeof *g);
        if (g == NULL)
            die("memory", "grow3");
        g->limit = opt.split_limit;
        double s0 = bench_now();
        for (uint64_t i = 0; i < n; i++) {
            uint64_t p = perm_apply(&ps.tables[t], dl_fp(i));
            g3_add(g, layout_shard_of(p), bdir_member(p), (uint32_t)i);
        }
        sim += bench_now() - s0;
        splits += g->splits;
        dead += g->ndead;
        for (unsigned xx = 0; xx < 256; xx++)
            buckets += g->shard[xx].n;
        cmds += g3_write(c, g, t, &st);
        g3_free(g);
        free(g);
    }
    double secs = bench_now() - t0;
    redisFree(c);
    dl_metric("grow3_fingerprints", (double)n);
    dl_metric("grow3_splits", (double)splits);
    dl_metric("grow3_buckets", (double)buckets);
    dl_metric("grow3_tombstones", (double)dead);
    dl_metric("grow3_commands", (double)cmds);
    dl_metric("grow3_simulation_seconds", sim);
    dl_metric("grow3_seconds", secs);
    st.ops = opt.count;
    st.secs = secs;
    return dl_report(&st, "grow3_fp");
}
