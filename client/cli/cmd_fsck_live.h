/* cmd_fsck_live.h: a finding of `simhash fsck` about one fingerprint (table entries
 * missing while it has ids, or entries while it has none) confirmed before it is
 * reported: on a live corpus a writer between its lock script and its last table
 * write leaves exactly that for a moment (cmd_fsck_live.c). */
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

#endif
