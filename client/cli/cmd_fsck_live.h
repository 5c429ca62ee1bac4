/* cmd_fsck_live.h: `simhash fsck` on a live corpus (cmd_fsck_live.c). A finding about
 * one fingerprint (table entries missing while it has ids, or entries while it has
 * none) is confirmed before it is reported: a writer between its lock script and its
 * last table write leaves exactly that for a moment. Reads routed through directories
 * that a split overtook are sent again through fresh ones, in batches, and the
 * fingerprints written after the documents phase are asked about once, not once per
 * table: on a corpus being loaded the walk stays bounded by what it met. */
#ifndef SIMHASH_CMD_FSCK_LIVE_H
#define SIMHASH_CMD_FSCK_LIVE_H

#include <stdint.h>

#include "cmd_fsck_nodes.h"
#include "layout_ops.h"
#include "perm.h"

/* Reads fp's lock, its state (ids or not, the entries of its tables), its lock and
 * its state again. Returns 1 when the finding stands (no live lock either time, the
 * same inconsistent state both times), 0 when it was a write in flight (a live lock,
 * or a state consistent or changed), -1 when a read failed. */
int fsck_live_confirm(const layout_ctx *lay, const perm_set *ps, fk_nodes *net, uint64_t fp);

/* What a command of a batch asks about, to build it again through a fresh directory
 * (fsck_reroute): fp's entry in table t (ZSCORE), its ids (entry() of table 0), or nothing
 * routed by a directory. */
typedef enum fsck_route_kind { FSCK_ROUTE_NONE, FSCK_ROUTE_ENTRY, FSCK_ROUTE_IDS } fsck_route_kind;
typedef struct fsck_route {
    uint64_t fp;
    unsigned table;
    fsck_route_kind kind;
} fsck_route;

/* 1 when r is a tombstone's answer: the bucket split since its directory was read. */
int fsck_wrongtype(const redisReply *r);

/* Reads again, pipelined through batch dp (empty, room for FK_BATCH), every directory
 * of the corpus's tables that lay's cache must not route through any more
 * (layout_dir_need: never read, a split met through it, or older than a third of the
 * tombstone lifetime, so that no read lands on a tombstone that expired). Returns 0,
 * or -1 (printed). */
int fsck_dirs_fresh(const layout_ctx *lay, const perm_set *ps, fk_nodes *net, fk_batch *dp);

/* The commands of batch bp (route[j] says what command j asks) whose reply met a
 * bucket that split since its directory was read (a tombstone's WRONGTYPE): sent again
 * through batch dp after fsck_dirs_fresh, their replies put in place of the old ones,
 * while splits keep coming at most FSCK_ROUTE_TRIES rounds (a reply still WRONGTYPE is
 * left to fsck_split_confirm). *sent counts the commands sent again. Returns 0, or -1. */
#define FSCK_ROUTE_TRIES 8
int fsck_reroute(const layout_ctx *lay, const perm_set *ps, fk_nodes *net, fk_batch *bp,
                 fk_batch *dp, const fsck_route *route, unsigned long long *sent);

/* --repair of fp: reconciled under its write lock with the worker's steps
 * (layout_fix_*: the lock script with op F, every table's entry written, the unlock),
 * the directories read fresh first and an entry write that met a split sent again
 * through them (FSCK_ROUTE_TRIES rounds); bp and dp are empty batches. token is the
 * lock's. Returns 1 repaired, 0 busy (a live writer holds the lock), -1 failed (the
 * lock stays: it goes stale and the workers' repair pass takes it over). */
int fsck_fix(const layout_ctx *lay, const perm_set *ps, fk_nodes *net, fk_batch *bp,
             fk_batch *dp, uint64_t fp, unsigned lease_ms, const char *token);

/* A set of fingerprints with a mark each (open addressing; 16 bytes a slot, at most
 * half full). */
typedef struct fsck_fpset {
    uint64_t *fp;
    unsigned char *mark;        /* 0: a free slot */
    size_t n, cap;
} fsck_fpset;

/* The mark of fp (0: not in the set). */
unsigned fsck_fpset_get(const fsck_fpset *s, uint64_t fp);
/* Sets fp's mark (1..255). Returns 0, or -1 out of memory. */
int fsck_fpset_put(fsck_fpset *s, uint64_t fp, unsigned mark);
void fsck_fpset_free(fsck_fpset *s);

#endif
