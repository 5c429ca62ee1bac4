/* cmd_fsck_count.h: the counters phase of `simhash fsck` on a live corpus: a shard
 * whose counters differ from the documents phase's count is counted again through the
 * layout's walk between two reads of its counters before it is reported, and --repair
 * writes a counter only where no write moved it (cmd_fsck_count.c). */
#ifndef SIMHASH_CMD_FSCK_COUNT_H
#define SIMHASH_CMD_FSCK_COUNT_H

#include "cmd_fsck_nodes.h"
#include "layout_ops.h"
#include "perm.h"

typedef struct fsck_count_stats {
    unsigned long long mismatches;  /* shards whose counters are wrong (confirmed) */
    unsigned long long rechecked;   /* shards counted again after the scan */
    unsigned long long in_flight;   /* of those, the difference was writes in flight */
    unsigned long long fixed;       /* --repair: counters rewritten */
} fsck_count_stats;

/* Compares every shard's counters with cnt_fps[256] / cnt_docs[256] (the documents
 * phase's count), confirming each difference as above; with repair, rewrites the
 * confirmed ones. Returns 0 with st filled, or -1 (a node unreachable: printed). */
int fsck_counters(const layout_ctx *lay, const perm_set *ps, fk_nodes *net,
                  const long long *cnt_fps, const long long *cnt_docs, int repair,
                  fsck_count_stats *st);

#endif
