/* cmd_fsck_live.c: fsck on a live corpus (cmd_fsck_live.h): the re-check of one
 * fingerprint's finding, the re-routing of reads a split overtook, the set of
 * fingerprints met after the documents phase. A
 * write of a fingerprint holds its lock from the lock script (ids changed) to the
 * unlock after its last table write, so a state read while it is under way shows ids
 * without all entries, or entries without ids. Read around two reads of the lock, a
 * finding stands only when no live lock was seen and the state, read twice, was the
 * same inconsistency both times: a writer that came and went between the reads
 * changes it, one under way holds its lock. The directories of its buckets are read
 * fresh first: the scan routed by those read when it began. */
#include "cmd_fsck_live.h"

#include <stdio.h>
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
    lay->ops->entry(lay, 0, p0, "ZSCORE", &c);     /* table 0: an integer, 1 with ids */
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

/* ---- Reads a split overtook ---- */

int fsck_wrongtype(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "WRONGTYPE", 9) == 0;
}

/* Runs the directory reads queued in dp (tx[i]: table << 8 | shard), sent after
 * sent_ms, and loads them into lay's cache. Returns 0, or -1 (printed). */
static int fl_dirs_run(const layout_ctx *lay, fk_nodes *net, fk_batch *dp, const unsigned *tx,
                       uint64_t sent_ms)
{
    int rc = fk_run(net, dp);
    for (size_t i = 0; rc == 0 && i < dp->n; i++)
        if (layout_dir_load(lay, tx[i] >> 8, tx[i] & 0xffu, dp->reply[i], sent_ms) != 0) {
            fprintf(stderr, "%s: the directory of table %u shard %02x is no directory\n",
                    net->prog, tx[i] >> 8, tx[i] & 0xffu);
            rc = -1;
        }
    fk_batch_clear(dp);
    return rc;
}

int fsck_dirs_fresh(const layout_ctx *lay, const perm_set *ps, fk_nodes *net, fk_batch *dp)
{
    unsigned tx[FK_BATCH];
    uint64_t sent = 0;
    for (unsigned t = 0; t < ps->ntables; t++)
        for (unsigned xx = 0; xx < 256; xx++) {
            if (!layout_dir_need(lay, t, xx))
                continue;
            layout_cmd dc;
            layout_dir_read(lay, t, xx, &dc);
            if (dp->n == 0)
                sent = layout_dir_clock();
            tx[dp->n] = t << 8 | xx;
            if (fk_add(net, dp, dc.argv[1], dc.argvlen[1], dc.argc, dc.argv, dc.argvlen) != 0)
                return -1;
            if (dp->n == FK_BATCH && fl_dirs_run(lay, net, dp, tx, sent) != 0)
                return -1;
        }
    return dp->n > 0 ? fl_dirs_run(lay, net, dp, tx, sent) : 0;
}

int fsck_reroute(const layout_ctx *lay, const perm_set *ps, fk_nodes *net, fk_batch *bp,
                 fk_batch *dp, const fsck_route *route, unsigned long long *sent)
{
    size_t *idx = malloc((bp->n ? bp->n : 1) * sizeof(*idx));
    int rc = idx ? 0 : -1;
    for (int round = 0; rc == 0 && round < FSCK_ROUTE_TRIES; round++) {
        size_t n = 0;
        for (size_t j = 0; j < bp->n; j++) {
            const fsck_route *ro = &route[j];
            if (ro->kind == FSCK_ROUTE_NONE || !fsck_wrongtype(bp->reply[j]))
                continue;
            layout_dir_reply(lay, ro->table,
                             layout_shard_of(perm_apply(&ps->tables[ro->table], ro->fp)),
                             bp->reply[j]);
            idx[n++] = j;
        }
        if (n == 0)
            break;
        rc = fsck_dirs_fresh(lay, ps, net, dp);
        for (size_t k = 0; k < n && rc == 0; k += FK_BATCH) {
            size_t m = n - k < FK_BATCH ? n - k : FK_BATCH;
            for (size_t i = 0; i < m && rc == 0; i++) {
                const fsck_route *ro = &route[idx[k + i]];
                uint64_t p = perm_apply(&ps->tables[ro->table], ro->fp);
                layout_cmd c;
                lay->ops->entry(lay, ro->kind == FSCK_ROUTE_IDS ? 0 : ro->table, p, "ZSCORE", &c);
                int ki = layout_cmd_key_index(&c);
                rc = fk_add(net, dp, c.argv[ki], c.argvlen[ki], c.argc, c.argv, c.argvlen);
            }
            if (rc == 0 && (rc = fk_run(net, dp)) == 0)
                for (size_t i = 0; i < m; i++) {
                    freeReplyObject(bp->reply[idx[k + i]]);
                    bp->reply[idx[k + i]] = dp->reply[i];
                    dp->reply[i] = NULL;
                }
            fk_batch_clear(dp);
            *sent += m;
        }
    }
    free(idx);
    return rc;
}

/* ---- Repair ---- */

/* The entry writes of fx in the tables t (from entry_from) with todo[t] set, sent
 * through bp; todo[t] cleared for each written. Returns the number still to write (a
 * split met: nothing written there), or -1 failed. */
static int fl_fix_entries(const layout_ctx *lay, const perm_set *ps, fk_nodes *net,
                          fk_batch *bp, const layout_fix *fx, unsigned char *todo)
{
    unsigned *tab = malloc(ps->ntables * sizeof(*tab));
    int left = 0;
    if (tab == NULL)
        return -1;
    for (unsigned t = lay->ops->entry_from; t < ps->ntables; t++) {
        if (!todo[t])
            continue;
        layout_cmd ec;
        layout_fix_entry(lay, ps, fx, t, &ec);
        int k = layout_cmd_key_index(&ec);      /* writes go through a script */
        tab[bp->n] = t;
        if (fk_add(net, bp, ec.argv[k], ec.argvlen[k], ec.argc, ec.argv, ec.argvlen) != 0) {
            free(tab);
            return -1;
        }
    }
    int rc = fk_run(net, bp);
    for (size_t i = 0; rc == 0 && i < bp->n; i++) {
        unsigned t = tab[i];
        if (layout_dir_reply(lay, t, layout_shard_of(perm_apply(&ps->tables[t], fx->fp)),
                             bp->reply[i]) == 1)
            left++;                             /* a split met: nothing written */
        else if (layout_fix_entry_ok(bp->reply[i]))
            todo[t] = 0;
        else
            rc = -1;
    }
    fk_batch_clear(bp);
    free(tab);
    return rc < 0 ? -1 : left;
}

int fsck_fix(const layout_ctx *lay, const perm_set *ps, fk_nodes *net, fk_batch *bp,
             fk_batch *dp, uint64_t fp, unsigned lease_ms, const char *token)
{
    layout_fix fx;
    layout_cmd lc;
    if (fsck_dirs_fresh(lay, ps, net, dp) != 0)
        return -1;
    layout_fix_init(&fx, ps, fp, token);
    layout_fix_lock(lay, &fx, lease_ms, LAYOUT_LOCK_OP_FIX, &lc);
    int k = layout_cmd_key_index(&lc);  /* all of the script's keys share {0:xx}'s slot */
    redisReply *r = fk_send(net, lc.argv[k], lc.argvlen[k], lc.argc, lc.argv, lc.argvlen);
    int taken = layout_fix_locked(&fx, r);
    if (r)
        freeReplyObject(r);
    if (taken <= 0)
        return taken;
    unsigned char *todo = calloc(ps->ntables, 1);
    int left = todo ? 1 : -1;
    for (unsigned t = 0; todo && t < ps->ntables; t++)
        todo[t] = 1;
    for (int round = 0; left > 0 && round < FSCK_ROUTE_TRIES; round++)
        if ((left = fl_fix_entries(lay, ps, net, bp, &fx, todo)) > 0 &&
            fsck_dirs_fresh(lay, ps, net, dp) != 0)
            left = -1;
    free(todo);
    if (left != 0)
        return -1;
    layout_cmd uc;
    layout_fix_unlock(&fx, &uc);
    r = fk_send(net, uc.argv[3], uc.argvlen[3], uc.argc, uc.argv, uc.argvlen);
    if (r)
        freeReplyObject(r);
    return 1;
}

/* ---- A set of fingerprints ---- */

/* The slot of fp: where it is, or the free slot where it goes. */
static size_t fl_slot(const fsck_fpset *s, uint64_t fp)
{
    uint64_t h = fp * 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h >> 20) & (s->cap - 1);
    while (s->mark[i] != 0 && s->fp[i] != fp)
        i = (i + 1) & (s->cap - 1);
    return i;
}

unsigned fsck_fpset_get(const fsck_fpset *s, uint64_t fp)
{
    return s->cap ? s->mark[fl_slot(s, fp)] : 0;
}

int fsck_fpset_put(fsck_fpset *s, uint64_t fp, unsigned mark)
{
    if (2 * (s->n + 1) > s->cap) {
        fsck_fpset g = {NULL, NULL, 0, s->cap ? 2 * s->cap : 1024};
        g.fp = malloc(g.cap * sizeof(*g.fp));
        g.mark = calloc(g.cap, sizeof(*g.mark));
        if (g.fp == NULL || g.mark == NULL) {
            fsck_fpset_free(&g);
            return -1;
        }
        for (size_t i = 0; i < s->cap; i++)
            if (s->mark[i]) {
                size_t j = fl_slot(&g, s->fp[i]);
                g.fp[j] = s->fp[i];
                g.mark[j] = s->mark[i];
                g.n++;
            }
        fsck_fpset_free(s);
        *s = g;
    }
    size_t i = fl_slot(s, fp);
    s->n += s->mark[i] == 0;
    s->fp[i] = fp;
    s->mark[i] = (unsigned char)mark;
    return 0;
}

void fsck_fpset_free(fsck_fpset *s)
{
    free(s->fp);
    free(s->mark);
    memset(s, 0, sizeof(*s));
}
