/* cmd_fsck_split.c: what `simhash fsck` checks in a layout whose buckets split
 * (cmd_fsck_split.h): the invariants tests/tools/bucket_check.py's verify() checks,
 * judged from replies cmd_fsck.c reads. */
#include "cmd_fsck_split.h"

#include <stdlib.h>
#include <string.h>

#include "bucketdir.h"

#define FS_SHARDS 256
#define FS_STRAY_MAX 100000             /* stray buckets remembered for the repair */

/* A bucket key outside its directory or holding members outside its bounds. */
typedef struct fs_stray {
    char key[LAYOUT_KEY_MAX];
    size_t klen;
    unsigned table, shard;
} fs_stray;

struct fsck_split {
    bdir_shard *dir[PERM_MAX_TABLES];   /* per table: FS_SHARDS directories, or NULL */
    unsigned long long directories, buckets, tombstones, largest;
    unsigned long long not_in_directory, out_of_bounds, bad_keys, rechecked, in_flight;
    unsigned long long moved, repair_failed;
    fs_stray *stray;
    size_t nstray, capstray;
};

fsck_split *fsck_split_new(void)
{
    return calloc(1, sizeof(fsck_split));
}

void fsck_split_free(fsck_split *fs)
{
    if (fs == NULL)
        return;
    for (size_t t = 0; t < PERM_MAX_TABLES; t++) {
        for (size_t x = 0; fs->dir[t] && x < FS_SHARDS; x++)
            bdir_shard_free(&fs->dir[t][x]);
        free(fs->dir[t]);
    }
    free(fs->stray);
    free(fs);
}

/* The directory of (t, xx), created empty (one bucket) on first use; NULL out of
 * memory or past the tables. */
static bdir_shard *fs_shard(fsck_split *fs, unsigned t, unsigned xx)
{
    if (t >= PERM_MAX_TABLES || xx >= FS_SHARDS)
        return NULL;
    if (fs->dir[t] == NULL) {
        bdir_shard *v = calloc(FS_SHARDS, sizeof(*v));
        if (v == NULL)
            return NULL;
        for (unsigned x = 0; x < FS_SHARDS; x++)
            if (bdir_shard_init(&v[x]) != 0) {
                while (x-- > 0)
                    bdir_shard_free(&v[x]);
                free(v);
                return NULL;
            }
        fs->dir[t] = v;
    }
    return &fs->dir[t][xx];
}

/* Reads "[name:]<kind>:{t:xx}" at the start of key; returns the length read (0: not
 * such a key). */
static size_t fs_tag(const char *key, size_t len, char kind, unsigned *t, unsigned *xx)
{
    const char *pre = layout_corpus();
    size_t plen = pre[0] ? strlen(pre) + 1 : 0;
    char buf[LAYOUT_KEY_MAX];
    if (len <= plen + 3 || len >= sizeof(buf) || key[plen] != kind || key[plen + 1] != ':')
        return 0;
    memcpy(buf, key + plen, len - plen);
    buf[len - plen] = '\0';
    int n = 0;
    char k;
    if (sscanf(buf, "%c:{%u:%2x}%n", &k, t, xx, &n) != 3 || n < 8)
        return 0;
    char again[LAYOUT_KEY_MAX];
    int m = snprintf(again, sizeof(again), "%c:{%u:%02x}", kind, *t, *xx);
    return m == n && memcmp(again, buf, (size_t)n) == 0 ? plen + (size_t)n : 0;
}

/* Loads directory s from a ZRANGE reply of its lower bounds. Returns 0, or -1 (not
 * a directory's reply, or out of memory). */
static int fs_load(bdir_shard *s, const redisReply *members)
{
    if (members->type != REDIS_REPLY_ARRAY)
        return -1;
    bdir_bound *los = malloc((members->elements + 1) * sizeof(*los));
    if (los == NULL)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < members->elements && rc == 0; i++) {
        const redisReply *e = members->element[i];
        if (e->type != REDIS_REPLY_STRING || e->len > BDIR_BOUND_MAX)
            rc = -1;
        else
            los[i] = bdir_bound_make(e->str, e->len);
    }
    if (rc == 0)
        rc = bdir_shard_load(s, los, members->elements);
    free(los);
    return rc;
}

int fsck_split_dir(fsck_split *fs, layout_ctx *lay, const char *key, size_t len,
                   const redisReply *members)
{
    unsigned t, xx;
    size_t n = fs_tag(key, len, 'r', &t, &xx);
    bdir_shard *s = n == len ? fs_shard(fs, t, xx) : NULL;
    if (s == NULL || members == NULL || members->type != REDIS_REPLY_ARRAY ||
        layout_dir_load(lay, t, xx, members, layout_dir_clock()) != 0 || fs_load(s, members) != 0) {
        fs->bad_keys++;
        return -1;
    }
    fs->directories++;
    return 0;
}

/* 1 when a member of table t carries ids after its 7 bytes (layout 4's table 0). */
static int fs_long(const layout_ctx *lay, unsigned t)
{
    return t < lay->ops->entry_from;
}

/* 1 when every member (7 bytes; longer with ids) of reply r lies in [lo, hi). */
static int fs_within(const redisReply *r, bdir_bound lo, bdir_bound hi, int ids)
{
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING || e->len < BDIR_BOUND_MAX ||
            (e->len > BDIR_BOUND_MAX && !ids))
            return 0;
        bdir_bound m = bdir_bound_make(e->str, BDIR_BOUND_MAX);
        if (m < lo || m >= hi)
            return 0;
    }
    return 1;
}

/* Remembers a stray bucket for the repair (past FS_STRAY_MAX it stays unrepaired). */
static void fs_stray_add(fsck_split *fs, const char *key, size_t len, unsigned t, unsigned xx)
{
    if (fs->nstray == fs->capstray) {
        size_t nc = fs->capstray ? fs->capstray * 2 : 64;
        fs_stray *v = nc <= FS_STRAY_MAX ? realloc(fs->stray, nc * sizeof(*v)) : NULL;
        if (v == NULL) {
            fs->repair_failed++;
            return;
        }
        fs->stray = v;
        fs->capstray = nc;
    }
    fs_stray *x = &fs->stray[fs->nstray++];
    memcpy(x->key, key, len);
    x->key[len] = '\0';
    x->klen = len;
    x->table = t;
    x->shard = xx;
}

/* The members of bucket key [lo, hi) of (t, xx) against directory s: *outside when
 * the bucket is no run of it, *stray when a member lies outside the bounds. */
static void fs_judge(const layout_ctx *lay, const bdir_shard *s, unsigned t, bdir_bound lo,
                     bdir_bound hi, const redisReply *members, int *outside, int *stray)
{
    size_t i = bdir_shard_find(s, lo);
    *outside = s->lo[i] != lo || bdir_shard_hi(s, i) != hi;
    *stray = !fs_within(members, lo, hi, fs_long(lay, t));
}

/* A bucket found outside its directory or bounds, read again with its directory:
 * the directory read fresh (into s and lay's cache), then the key's TYPE and members.
 * Returns 1 when it still is, 0 when it was a write in flight (a split since the
 * directory was read: now a run of it, or a tombstone, or gone), -1 failed. */
static int fs_recheck(fsck_split *fs, const layout_ctx *lay, bdir_shard *s, unsigned t,
                      unsigned xx, const char *key, size_t len, bdir_bound lo, bdir_bound hi,
                      fsck_split_send_fn send, void *arg)
{
    layout_cmd dc;
    layout_dir_read(lay, t, xx, &dc);
    uint64_t sent = layout_dir_clock();
    redisReply *d = send(arg, dc.argv[1], dc.argvlen[1], dc.argc, dc.argv, dc.argvlen);
    int rc = d && fs_load(s, d) == 0 && layout_dir_load(lay, t, xx, d, sent) == 0 ? 0 : -1;
    if (d)
        freeReplyObject(d);
    const char *argv[4] = {"ZRANGE", key, "0", "-1"};
    size_t lens[4] = {6, len, 1, 2};
    redisReply *m = rc == 0 ? send(arg, key, len, 4, argv, lens) : NULL;
    if (m == NULL)
        return -1;
    int outside = 0, stray = 0;
    if (m->type == REDIS_REPLY_ARRAY && m->elements > 0)
        fs_judge(lay, s, t, lo, hi, m, &outside, &stray);
    else if (m->type != REDIS_REPLY_ARRAY &&
             !(m->type == REDIS_REPLY_ERROR && strncmp(m->str, "WRONGTYPE", 9) == 0))
        rc = -1;                        /* not a tombstone's WRONGTYPE, not empty (gone) */
    freeReplyObject(m);
    fs->rechecked++;
    if (rc == 0 && !outside && !stray)
        fs->in_flight++;
    return rc < 0 ? -1 : outside || stray;
}

void fsck_split_key(fsck_split *fs, const layout_ctx *lay, const char *key, size_t len,
                    const char *type, const redisReply *members, fsck_split_send_fn send,
                    void *arg)
{
    unsigned t, xx;
    size_t n = fs_tag(key, len, 's', &t, &xx);
    bdir_bound lo, hi;
    bdir_shard *s = n ? fs_shard(fs, t, xx) : NULL;
    if (s == NULL || len < n + 2 || key[n] != ':' ||
        bdir_suffix_parse(key + n + 1, len - n - 1, &lo, &hi) != 0) {
        fs->bad_keys++;
        return;
    }
    if (strcmp(type, "string") == 0) {
        fs->tombstones++;
        return;
    }
    if (strcmp(type, "none") == 0)             /* gone since the SCAN */
        return;
    if (members && members->type == REDIS_REPLY_ERROR &&
        strncmp(members->str, "WRONGTYPE", 9) == 0) {
        fs->tombstones++;                       /* split between its TYPE and ZRANGE */
        fs->rechecked++;
        fs->in_flight++;
        return;
    }
    if (strcmp(type, "zset") != 0 || members == NULL || members->type != REDIS_REPLY_ARRAY) {
        fs->bad_keys++;
        return;
    }
    int outside, stray;
    fs_judge(lay, s, t, lo, hi, members, &outside, &stray);
    if (outside || stray) {
        int again = fs_recheck(fs, lay, s, t, xx, key, len, lo, hi, send, arg);
        if (again == 0)
            outside = stray = 0;
        else if (again < 0)
            fs->bad_keys++;             /* could not be read again: left as found */
    }
    fs->not_in_directory += (unsigned long long)outside;
    fs->out_of_bounds += (unsigned long long)stray;
    if (outside || stray)
        fs_stray_add(fs, key, len, t, xx);
    fs->buckets++;
    if (members->elements > fs->largest)
        fs->largest = members->elements;
}

/* Reads the directory of (t, xx) again through send and loads it into lay's cache,
 * aged from when the read was sent. Returns 0, or -1 (no reply, or one the layout
 * could not take). */
static int fs_dir_reload(const layout_ctx *lay, unsigned t, unsigned xx,
                         fsck_split_send_fn send, void *arg)
{
    layout_cmd dc;
    layout_dir_read(lay, t, xx, &dc);
    uint64_t sent = layout_dir_clock();
    redisReply *d = send(arg, dc.argv[1], dc.argvlen[1], dc.argc, dc.argv, dc.argvlen);
    int loaded = d && layout_dir_load(lay, t, xx, d, sent) == 0;
    if (d)
        freeReplyObject(d);
    return loaded ? 0 : -1;
}

/* Writes permuted value p of table t, whose member in stray key x is m (mlen bytes),
 * into its live bucket unless x is that bucket: the layout's write, or where the
 * member carries ids (fs_long) that member itself. Returns 1 written, 0 it belongs in
 * x, -1 failed. */
static int fs_move_one(const layout_ctx *lay, const fs_stray *x, uint64_t p, const char *m,
                       size_t mlen, fsck_split_send_fn send, void *arg)
{
    for (int tries = 0; tries < 16; tries++) {
        layout_cmd ec;
        lay->ops->entry(lay, x->table, p, "ZSCORE", &ec);
        if (ec.argvlen[1] == x->klen && memcmp(ec.argv[1], x->key, x->klen) == 0)
            return 0;
        if (fs_long(lay, x->table)) {
            ec.argv[0] = "ZADD";
            ec.argvlen[0] = 4;
            ec.argv[2] = "0";
            ec.argvlen[2] = 1;
            ec.argv[3] = m;
            ec.argvlen[3] = mlen;
            ec.argc = 4;
        } else {
            lay->ops->entry(lay, x->table, p, "ZADD", &ec);
        }
        int k = layout_cmd_key_index(&ec);
        redisReply *w = send(arg, ec.argv[k], ec.argvlen[k], ec.argc, ec.argv, ec.argvlen);
        long long n;
        int stale = w && layout_dir_reply(lay, x->table, x->shard, w);
        int ok = w && !stale && layout_write_count(w, &n) == 0;
        if (w)
            freeReplyObject(w);
        if (!stale)
            return ok ? 1 : -1;
        if (fs_dir_reload(lay, x->table, x->shard, send, arg) != 0)
            return -1;      /* a split under the repair: the directory read again */
    }
    return -1;
}

int fsck_split_confirm(const layout_ctx *lay, unsigned t, uint64_t fp, uint64_t p, int ids,
                       fsck_split_send_fn send, void *arg)
{
    unsigned xx = layout_shard_of(p);
    for (int tries = 0; tries < 16; tries++) {
        layout_cmd c;
        if (fs_dir_reload(lay, t, xx, send, arg) != 0)
            return -1;
        if (ids)
            lay->ops->has_ids(lay, fp, p, &c);
        else
            lay->ops->entry(lay, t, p, "ZSCORE", &c);
        int k = layout_cmd_key_index(&c);
        redisReply *r = send(arg, c.argv[k], c.argvlen[k], c.argc, c.argv, c.argvlen);
        if (r == NULL)
            return -1;
        int rc = r->type == REDIS_REPLY_NIL ? 1
                 : r->type == REDIS_REPLY_STRING ? 0
                 : r->type == REDIS_REPLY_INTEGER ? r->integer == 0 : -1;
        int split = r->type == REDIS_REPLY_ERROR && strncmp(r->str, "WRONGTYPE", 9) == 0;
        freeReplyObject(r);
        if (!split)
            return rc;
    }
    return -1;
}

int fsck_split_repair(fsck_split *fs, const layout_ctx *lay, fsck_split_send_fn send, void *arg)
{
    for (size_t i = 0; i < fs->nstray; i++) {
        const fs_stray *x = &fs->stray[i];
        const char *argv[4] = {"ZRANGE", x->key, "0", "-1"};
        size_t lens[4] = {6, x->klen, 1, 2};
        redisReply *r = send(arg, x->key, x->klen, 4, argv, lens);
        if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
            fs->repair_failed++;
            if (r)
                freeReplyObject(r);
            continue;
        }
        for (size_t m = 0; m < r->elements; m++) {
            const redisReply *e = r->element[m];
            uint64_t p = (uint64_t)x->shard << 56;
            if (e->type != REDIS_REPLY_STRING || e->len < BDIR_BOUND_MAX ||
                (e->len > BDIR_BOUND_MAX && !fs_long(lay, x->table))) {
                fs->repair_failed++;
                continue;
            }
            for (size_t b = 0; b < BDIR_BOUND_MAX; b++)
                p |= (uint64_t)(uint8_t)e->str[b] << (48 - 8 * b);
            int rc = fs_move_one(lay, x, p, e->str, e->len, send, arg);
            if (rc <= 0) {
                fs->repair_failed += rc < 0;
                continue;
            }
            const char *zargv[3] = {"ZREM", x->key, e->str};
            size_t zlens[3] = {4, x->klen, e->len};
            redisReply *z = send(arg, x->key, x->klen, 3, zargv, zlens);
            if (z && z->type == REDIS_REPLY_INTEGER)
                fs->moved++;
            else
                fs->repair_failed++;
            if (z)
                freeReplyObject(z);
        }
        freeReplyObject(r);
    }
    return fs->repair_failed ? -1 : 0;
}

unsigned long long fsck_split_left(const fsck_split *fs, int repaired)
{
    if (!repaired)
        return fs->not_in_directory + fs->out_of_bounds + fs->bad_keys;
    return fs->bad_keys + fs->repair_failed;
}

unsigned long long fsck_split_report(const fsck_split *fs, FILE *out)
{
    fprintf(out, "split_directories:%llu\nsplit_buckets:%llu\n"
            "split_tombstones:%llu\nsplit_largest_bucket:%llu\n"
            "split_buckets_not_in_directory:%llu\nsplit_members_out_of_bounds:%llu\n"
            "split_bad_keys:%llu\nsplit_members_moved:%llu\nsplit_repair_failures:%llu\n"
            "split_rechecked:%llu\nsplit_writes_in_flight:%llu\n",
            fs->directories, fs->buckets, fs->tombstones, fs->largest,
            fs->not_in_directory, fs->out_of_bounds, fs->bad_keys, fs->moved,
            fs->repair_failed, fs->rechecked, fs->in_flight);
    return fs->not_in_directory + fs->out_of_bounds + fs->bad_keys;
}
