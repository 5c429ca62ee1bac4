/* cmd_fsck_split.c: what `simhash fsck` checks in a layout whose buckets split
 * (cmd_fsck_split.h): the invariants tests/tools/bucket_check.py's verify() checks,
 * judged from replies cmd_fsck.c reads. Keys and members are read back by the layout
 * (layout_dir_key_parse, layout_bucket_judge, member_decode: common/store), against
 * the directories in its cache: nothing here decodes either. */
#include "cmd_fsck_split.h"

#include <stdlib.h>
#include <string.h>

#define FS_STRAY_MAX 100000             /* stray buckets remembered for the repair */

/* A bucket key outside its directory or holding members outside its bounds. */
typedef struct fs_stray {
    char key[LAYOUT_KEY_MAX];
    size_t klen;
    unsigned table, shard;
    uint64_t tag;                       /* member_decode's tag of its members */
} fs_stray;

struct fsck_split {
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
    free(fs->stray);
    free(fs);
}

int fsck_split_dir(fsck_split *fs, layout_ctx *lay, const char *key, size_t len,
                   const redisReply *members)
{
    unsigned t, xx;
    if (layout_dir_key_parse(key, len, &t, &xx) != 0 || members == NULL ||
        layout_dir_load(lay, t, xx, members, layout_dir_clock()) != 0) {
        fs->bad_keys++;
        return -1;
    }
    fs->directories++;
    return 0;
}

/* 1 when a member of table t carries ids after its entry (layout 4's table 0). */
static int fs_long(const layout_ctx *lay, unsigned t)
{
    return t < lay->ops->entry_from;
}

/* Remembers a stray bucket for the repair (past FS_STRAY_MAX it stays unrepaired). */
static void fs_stray_add(fsck_split *fs, const char *key, size_t len,
                         const layout_bucket_verdict *v)
{
    if (fs->nstray == fs->capstray) {
        size_t nc = fs->capstray ? fs->capstray * 2 : 64;
        fs_stray *nv = nc <= FS_STRAY_MAX ? realloc(fs->stray, nc * sizeof(*nv)) : NULL;
        if (nv == NULL) {
            fs->repair_failed++;
            return;
        }
        fs->stray = nv;
        fs->capstray = nc;
    }
    fs_stray *x = &fs->stray[fs->nstray++];
    memcpy(x->key, key, len);
    x->key[len] = '\0';
    x->klen = len;
    x->table = v->table;
    x->shard = v->shard;
    x->tag = v->tag;
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

/* A bucket found outside its directory or bounds, read again with its directory:
 * the directory read fresh (into lay's cache), then the key's members, judged again
 * (*v). Returns 1 when it still is, 0 when it was a write in flight (a split since the
 * directory was read: now a run of it, or a tombstone, or gone), -1 failed. */
static int fs_recheck(fsck_split *fs, const layout_ctx *lay, const perm_set *ps,
                      const char *key, size_t len, layout_bucket_verdict *v,
                      fsck_split_send_fn send, void *arg)
{
    int rc = fs_dir_reload(lay, v->table, v->shard, send, arg);
    const char *argv[4] = {"ZRANGE", key, "0", "-1"};
    size_t lens[4] = {6, len, 1, 2};
    redisReply *m = rc == 0 ? send(arg, key, len, 4, argv, lens) : NULL;
    if (m == NULL)
        return -1;
    int stands = 0;
    if (m->type == REDIS_REPLY_ARRAY && m->elements > 0) {
        rc = layout_bucket_judge(lay, ps, key, len, m, v);
        stands = v->outside || v->stray > 0;
    } else if (m->type != REDIS_REPLY_ARRAY &&
               !(m->type == REDIS_REPLY_ERROR && strncmp(m->str, "WRONGTYPE", 9) == 0)) {
        rc = -1;                        /* not a tombstone's WRONGTYPE, not empty (gone) */
    }
    freeReplyObject(m);
    fs->rechecked++;
    if (rc == 0 && !stands)
        fs->in_flight++;
    return rc < 0 ? -1 : stands;
}

void fsck_split_key(fsck_split *fs, const layout_ctx *lay, const perm_set *ps, const char *key,
                    size_t len, const char *type, const redisReply *members,
                    fsck_split_send_fn send, void *arg)
{
    layout_bucket_verdict v;
    if (layout_bucket_judge(lay, ps, key, len, NULL, &v) != 0) {
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
    layout_bucket_judge(lay, ps, key, len, members, &v);
    int outside = v.outside, stray = v.stray > 0;
    if (outside || stray) {
        int again = fs_recheck(fs, lay, ps, key, len, &v, send, arg);
        if (again == 0)
            outside = stray = 0;
        else if (again < 0)
            fs->bad_keys++;             /* could not be read again: left as found */
        else {
            outside = v.outside;
            stray = v.stray > 0;
        }
    }
    fs->not_in_directory += (unsigned long long)outside;
    fs->out_of_bounds += (unsigned long long)stray;
    if (outside || stray)
        fs_stray_add(fs, key, len, &v);
    fs->buckets++;
    if (members->elements > fs->largest)
        fs->largest = members->elements;
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

int fsck_split_confirm(const layout_ctx *lay, unsigned t, uint64_t p, int ids,
                       fsck_split_send_fn send, void *arg)
{
    unsigned xx = layout_shard_of(p);
    for (int tries = 0; tries < 16; tries++) {
        layout_cmd c;
        if (fs_dir_reload(lay, t, xx, send, arg) != 0)
            return -1;
        lay->ops->entry(lay, ids ? 0 : t, p, "ZSCORE", &c);   /* table 0: whether fp has ids */
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
            uint64_t p;
            if (e->type != REDIS_REPLY_STRING ||
                lay->ops->member_decode(lay, x->tag, e->str, e->len, &p) != 0) {
                fs->repair_failed++;
                continue;
            }
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

void fsck_split_rechecks(const fsck_split *fs, unsigned long long *rechecked,
                         unsigned long long *in_flight)
{
    *rechecked = fs ? fs->rechecked : 0;
    *in_flight = fs ? fs->in_flight : 0;
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
