/* cmd_fsck_split.c: what `simhash fsck` checks in a layout whose buckets split
 * (cmd_fsck_split.h): the invariants tests/tools/layout3_check.py's verify() checks,
 * judged from replies cmd_fsck.c reads. */
#include "cmd_fsck_split.h"

#include <stdlib.h>
#include <string.h>

#include "bucketdir.h"

#define FS_SHARDS 256

struct fsck_split {
    bdir_shard *dir[PERM_MAX_TABLES];   /* per table: FS_SHARDS directories, or NULL */
    unsigned long long directories, buckets, idhashes, tombstones, largest;
    unsigned long long not_in_directory, out_of_bounds, bad_keys;
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

int fsck_split_dir(fsck_split *fs, layout_ctx *lay, const char *key, size_t len,
                   const redisReply *members)
{
    unsigned t, xx;
    size_t n = fs_tag(key, len, 'r', &t, &xx);
    bdir_shard *s = n == len ? fs_shard(fs, t, xx) : NULL;
    if (s == NULL || members == NULL || members->type != REDIS_REPLY_ARRAY ||
        layout_dir_load(lay, t, xx, members) != 0) {
        fs->bad_keys++;
        return -1;
    }
    bdir_bound *los = malloc((members->elements + 1) * sizeof(*los));
    if (los == NULL) {
        fs->bad_keys++;
        return -1;
    }
    for (size_t i = 0; i < members->elements; i++)
        los[i] = bdir_bound_make(members->element[i]->str, members->element[i]->len);
    int rc = bdir_shard_load(s, los, members->elements);
    free(los);
    fs->directories++;
    return rc;
}

/* 1 when every member (7 bytes) of reply r lies in [lo, hi). */
static int fs_within(const redisReply *r, bdir_bound lo, bdir_bound hi)
{
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING || e->len != BDIR_BOUND_MAX)
            return 0;
        bdir_bound m = bdir_bound_make(e->str, e->len);
        if (m < lo || m >= hi)
            return 0;
    }
    return 1;
}

void fsck_split_key(fsck_split *fs, const layout_ctx *lay, const char *key, size_t len,
                    const char *type, const redisReply *members)
{
    (void)lay;
    int bucket = 1;
    unsigned t, xx;
    size_t n = fs_tag(key, len, 's', &t, &xx);
    if (n == 0) {
        n = fs_tag(key, len, 'h', &t, &xx);
        bucket = 0;
    }
    bdir_bound lo, hi;
    bdir_shard *s = n ? fs_shard(fs, t, xx) : NULL;
    if (s == NULL || len < n + 2 || key[n] != ':' ||
        bdir_suffix_parse(key + n + 1, len - n - 1, &lo, &hi) != 0 || (!bucket && t != 0)) {
        fs->bad_keys++;
        return;
    }
    if (strcmp(type, "string") == 0) {
        fs->tombstones++;
        return;
    }
    if (strcmp(type, "none") == 0)             /* gone since the SCAN */
        return;
    if (strcmp(type, bucket ? "zset" : "hash") != 0 || members == NULL ||
        members->type != REDIS_REPLY_ARRAY) {
        fs->bad_keys++;
        return;
    }
    size_t i = bdir_shard_find(s, lo);
    if (s->lo[i] != lo || bdir_shard_hi(s, i) != hi)
        fs->not_in_directory++;
    if (!fs_within(members, lo, hi))
        fs->out_of_bounds++;
    if (bucket) {
        fs->buckets++;
        if (members->elements > fs->largest)
            fs->largest = members->elements;
    } else {
        fs->idhashes++;
    }
}

unsigned long long fsck_split_report(const fsck_split *fs, FILE *out)
{
    fprintf(out, "split_directories:%llu\nsplit_buckets:%llu\nsplit_id_hashes:%llu\n"
            "split_tombstones:%llu\nsplit_largest_bucket:%llu\n"
            "split_buckets_not_in_directory:%llu\nsplit_members_out_of_bounds:%llu\n"
            "split_bad_keys:%llu\n", fs->directories, fs->buckets, fs->idhashes,
            fs->tombstones, fs->largest, fs->not_in_directory, fs->out_of_bounds,
            fs->bad_keys);
    return fs->not_in_directory + fs->out_of_bounds + fs->bad_keys;
}
