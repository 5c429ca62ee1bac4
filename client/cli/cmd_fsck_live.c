/* cmd_fsck_live.c: the re-check of one fingerprint's finding (cmd_fsck_live.h). A
 * write of a fingerprint holds its lock from the lock script (ids changed) to the
 * unlock after its last table write, so a state read while it is under way shows ids
 * without all entries, or entries without ids. Read around two reads of the lock, a
 * finding stands only when no live lock was seen and the state, read twice, was the
 * same inconsistency both times: a writer that came and went between the reads
 * changes it, one under way holds its lock. The directories of its buckets are read
 * fresh first: the scan routed by those read when it began. */
#include "cmd_fsck_live.h"

#include <stdlib.h>
#include <string.h>

/* The directories of fp's buckets read fresh into lay's cache (the scan routed by
 * those read when it began). Returns 0, or -1. */
static int fl_dirs(const layout_ctx *lay, const perm_set *ps, fk_nodes *net, uint64_t fp)
{
    for (unsigned t = 0; t < ps->ntables; t++) {
        unsigned xx = layout_shard_of(perm_apply(&ps->tables[t], fp));
        layout_cmd dc;
        memset(&dc, 0, sizeof(dc));
        layout_dir_read(lay, t, xx, &dc);
        uint64_t sent = layout_dir_clock();
        redisReply *r = fk_send(net, dc.argv[1], dc.argvlen[1], dc.argc, dc.argv, dc.argvlen);
        int rc = r && layout_dir_load(lay, t, xx, r, sent) == 0 ? 0 : -1;
        if (r)
            freeReplyObject(r);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* fp's state: *has 1 when it has ids, 0 when not; *present the tables (from
 * entry_from) holding its entry. Returns 0, 1 when a read met a bucket that split
 * since its directory was read (a writer's doing), or -1. */
static int fl_state(const layout_ctx *lay, const perm_set *ps, fk_nodes *net, uint64_t fp,
                    int *has, unsigned *present)
{
    uint64_t p0 = perm_apply(&ps->tables[0], fp);
    layout_cmd c;
    lay->ops->has_ids(lay, fp, p0, &c);
    int k = layout_cmd_key_index(&c);
    redisReply *r = fk_send(net, c.argv[k], c.argvlen[k], c.argc, c.argv, c.argvlen);
    if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
        int split = r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "WRONGTYPE", 9) == 0;
        if (r)
            freeReplyObject(r);
        return split ? 1 : -1;
    }
    *has = r->integer > 0;
    freeReplyObject(r);
    *present = 0;
    for (unsigned t = lay->ops->entry_from; t < ps->ntables; t++) {
        lay->ops->entry(lay, t, perm_apply(&ps->tables[t], fp), "ZSCORE", &c);
        k = layout_cmd_key_index(&c);
        r = fk_send(net, c.argv[k], c.argvlen[k], c.argc, c.argv, c.argvlen);
        if (r == NULL)
            return -1;
        int split = r->type == REDIS_REPLY_ERROR && strncmp(r->str, "WRONGTYPE", 9) == 0;
        if (r->type == REDIS_REPLY_ERROR && !split) {
            freeReplyObject(r);
            return -1;
        }
        *present += r->type != REDIS_REPLY_NIL && !split;
        freeReplyObject(r);
        if (split)
            return 1;
    }
    return 0;
}

/* 1 when fp's lock is held and not expired (Redis's clock), 0 when not, -1. */
static int fl_locked(fk_nodes *net, uint64_t fp, uint64_t p0)
{
    char key[LAYOUT_KEY_MAX], field[17];
    size_t kl = layout_lock_key(key, sizeof(key), layout_shard_of(p0));
    layout_lock_field(field, fp);
    const char *argv[3] = {"HGET", key, field};
    size_t lens[3] = {4, kl, 16};
    redisReply *r = fk_send(net, key, kl, 3, argv, lens);
    if (r == NULL || (r->type != REDIS_REPLY_NIL && r->type != REDIS_REPLY_STRING)) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    unsigned long long exp = r->type == REDIS_REPLY_STRING ? strtoull(r->str, NULL, 10) : 0;
    freeReplyObject(r);
    if (exp == 0)
        return 0;
    unsigned long long now = fk_redis_ms(net, fk_node_of(net, key, kl));
    return exp > now;
}

int fsck_live_confirm(const layout_ctx *lay, const perm_set *ps, fk_nodes *net, uint64_t fp)
{
    uint64_t p0 = perm_apply(&ps->tables[0], fp);
    unsigned all = ps->ntables - lay->ops->entry_from, present[2];
    int has[2], locked, st;
    if (fl_dirs(lay, ps, net, fp) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        if ((locked = fl_locked(net, fp, p0)) != 0)
            return locked < 0 ? -1 : 0;
        if ((st = fl_state(lay, ps, net, fp, &has[i], &present[i])) != 0)
            return st < 0 ? -1 : 0;     /* a split met: a writer at work */
        if (has[i] ? present[i] == all : present[i] == 0)
            return 0;                   /* consistent now: the write has ended */
    }
    return has[0] == has[1] && present[0] == present[1];
}
