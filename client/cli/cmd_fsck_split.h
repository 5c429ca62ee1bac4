/* cmd_fsck_split.h: the part of `simhash fsck` for a layout whose buckets split
 * (docs/elastic-buckets.md): the directories read into the layout's cache
 * (so the other phases route each entry to its live bucket), and the layout's own
 * invariants checked key by key: every live bucket is a run of its directory (its
 * bounds two consecutive lower bounds of it, the last unbounded), holds only members
 * within its bounds, and every other key of a shard is a tombstone (a string).
 * cmd_fsck.c makes the Redis calls; this file judges, through the layout's own
 * readers of keys and members (layout.h: layout_dir_key_parse, layout_bucket_judge). */
#ifndef SIMHASH_CMD_FSCK_SPLIT_H
#define SIMHASH_CMD_FSCK_SPLIT_H

#include <stddef.h>
#include <stdio.h>

#include <hiredis/hiredis.h>

#include "layout_ops.h"

typedef struct fsck_split fsck_split;

/* NULL when out of memory. */
fsck_split *fsck_split_new(void);
void fsck_split_free(fsck_split *fs);

/* A directory key ("[name:]r:{t:xx}") and its ZRANGE 0 -1 reply: loaded into lay's
 * cache. Returns 0, or -1 when the key or reply is not a directory's (counted
 * as a bad key). */
int fsck_split_dir(fsck_split *fs, layout_ctx *lay, const char *key, size_t len,
                   const redisReply *members);

/* A blocking command, routed by key (its Redis Cluster node). */
typedef redisReply *(*fsck_split_send_fn)(void *arg, const char *key, size_t klen, int argc,
                                          const char **argv, const size_t *lens);

/* A bucket key of the corpus, its TYPE and, for a zset, its members (ZRANGE 0 -1;
 * NULL for another type).
 * Counts it. One found outside its directory or bounds is read again with its
 * directory (through send) before it counts: a bucket that split since the directory
 * was read is a write in flight (split_rechecked, split_writes_in_flight). */
void fsck_split_key(fsck_split *fs, const layout_ctx *lay, const perm_set *ps, const char *key,
                    size_t len, const char *type, const redisReply *members,
                    fsck_split_send_fn send, void *arg);

/* --repair: every member of a bucket found outside its directory or bounds is written
 * into its live bucket (the layout's table write, following splits), then removed
 * from the stray key. Returns 0, or -1 when Redis failed (counted). */
int fsck_split_repair(fsck_split *fs, const layout_ctx *lay, fsck_split_send_fn send, void *arg);

/* Is a fingerprint's entry in table t absent (p its permuted value in t; ids 0: the
 * entry's ZSCORE), or its ids (ids 1, t = 0: entry() of table 0, whether it has ids)?
 * The other phases route through the directories read when fsck began; on a corpus that grows meanwhile a bucket may
 * have split since, so a reply that is not a plain yes (a tombstone's WRONGTYPE,
 * nothing once it expired) is asked again here through the directory read now (again
 * while splits keep coming, at most 16 times). Returns 1 absent, 0 present, -1 failed. */
int fsck_split_confirm(const layout_ctx *lay, unsigned t, uint64_t p, int ids,
                       fsck_split_send_fn send, void *arg);

/* Prints the name:value lines; returns the number of problems found. */
unsigned long long fsck_split_report(const fsck_split *fs, FILE *out);

/* The buckets read again before they were reported, and of those, the writes in
 * flight (split_rechecked, split_writes_in_flight). */
void fsck_split_rechecks(const fsck_split *fs, unsigned long long *rechecked,
                         unsigned long long *in_flight);

/* The problems left after the repair (all of them without one). */
unsigned long long fsck_split_left(const fsck_split *fs, int repaired);

#endif
