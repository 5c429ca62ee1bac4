/* cmd_fsck.c: `simhash fsck [--repair]`: checks a whole deployment's Redis data
 * (single Redis or Redis Cluster) against the invariant of docs/protocol.md
 * ("Consistency"): a fingerprint has its entry in every table iff its document set
 * is non-empty, no write lock is stale, and the counters c:{0:xx} are exact.
 *
 * It talks to Redis directly (hiredis, blocking, pipelined in batches routed by key:
 * cmd_fsck_nodes.c), in phases:
 *   split      (cmd_fsck_split.c): SCAN r:*, each directory read into the layout's
 *              cache; SCAN s:*, the invariants of the split buckets per key (with
 *              --repair, members of stray buckets moved into their live ones)
 *   documents  table 0 walked by a snapshot of its directories (fk_walk0; a bucket
 *              that split since read range by range), ids counted from the packing
 *              each member carries (the layout's member_ids; SCARD of the overflow set
 *              when there are none inline); ZSCORE of the entry in every table from
 *              table 1 (table 0's is the ids); an overflow set found empty is read again
 *              after the tables phase (fk_lost_confirm): ids lost
 *   tables     SCAN s:*, every member reverted to its fingerprint; one without
 *              documents (ZLEXCOUNT of its table-0 member, asked once per fingerprint:
 *              the answer is kept) is an orphan
 *   locks      SCAN w:*, locks whose expiry passed (Redis TIME) are stale
 *   counters   c:{0:xx} against the recount of the documents phase; a shard that differs
 *              is counted again alone between two reads of its counters
 *              (cmd_fsck_count.c): writes in flight are told from wrong counters
 * With --corpus NAME every key pattern carries the corpus's prefix.
 * The reads route through the directories in the layout's cache, read again before
 * a batch where a split was met or they are older than a third of the tombstone
 * lifetime; a read that meets a tombstone is sent again with the batch's others
 * through directories read fresh (fsck_reroute, cmd_fsck_live.c): on a corpus being
 * loaded the buckets split all the time, and one by one these kept a run from
 * ending. An entry or id still found missing is asked again through the directory
 * read then (fsck_split_confirm), then against writes in flight (fsck_live_confirm).
 * The report's rechecked / in_flight lines add up the three kinds of re-check.
 * With --repair every inconsistent fingerprint is reconciled under its write lock
 * (the lock script with op F, then ZADD or ZREM in every table, then unlock; a lock
 * held by a live writer is left to it), and wrong counters are rewritten.
 * Memory: 8 bytes per fingerprint with documents (a sorted array, to tell orphans
 * without a Redis lookup per table entry), 32 per fingerprint written after the
 * documents phase (a hash set), plus the inconsistent ones. */
#include "cli.h"
#include "cmd_net.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "cmd_fsck_count.h"
#include "cmd_fsck_live.h"
#include "cmd_fsck_nodes.h"
#include "cmd_fsck_split.h"
#include "layout_ops.h"
#include "parse.h"
#include "perm.h"


typedef struct fk_counts {
    unsigned long long fps, docs, fps_missing, entries_missing, orphan_entries, orphan_fps,
        foreign, stale_locks, live_locks, counter_bad, repaired, repair_busy, repair_errors,
        counters_fixed, keys, ids_lost, rechecked, in_flight;
} fk_counts;

typedef struct fk {
    const char *prog;
    int repair, quiet;
    unsigned lease_ms;
    fk_nodes net;               /* the Redis nodes (cmd_fsck_nodes.h) */
    unsigned blocks, distance;
    layout_ctx lay;             /* the corpus's layout (layout_ops.h) */
    perm_set ps;
    uint64_t *have;             /* fingerprints with documents, sorted after phase 1 */
    size_t nhave, caphave;
    uint64_t *bad;              /* fingerprints to reconcile */
    size_t nbad, capbad;
    uint64_t *lost;             /* ids said to be in an overflow set found empty */
    size_t nlost, caplost;
    long long cnt_fps[256], cnt_docs[256];
    fk_counts n;
    cli_progress prog_bar;
    unsigned long long total_keys;
    fk_batch b, e;              /* pipelined batches: the main one, the checks of ids */
    fk_batch d;                 /* directory reads and commands sent again (fsck_reroute) */
    fk_batch w;                 /* the reads of table 0's walk (fk_walk0) */
    fsck_route *route;          /* per command of a batch: what fsck_reroute builds again */
    unsigned long long rerouted;    /* commands sent again through a fresh directory */
    fsck_fpset late;            /* fingerprints found with ids after the documents phase */
    fsck_split *split;          /* a layout whose buckets split: its own checks */
} fk;


/* Queues `cmd key member` for fp's entry in every table with entries of its own
 * (from entry_from on: layout 4's table 0 entry is the member holding the ids, which
 * the documents phase found) (ZSCORE). Returns 0, or -1. */
static int fk_add_entries(fk *f, fk_batch *b, uint64_t fp, const char *cmd)
{
    for (unsigned t = f->lay.ops->entry_from; t < f->ps.ntables; t++) {
        layout_cmd ec;
        f->lay.ops->entry(&f->lay, t, perm_apply(&f->ps.tables[t], fp), cmd, &ec);
        f->route[b->n] = (fsck_route){fp, t, FSCK_ROUTE_ENTRY};
        if (fk_add(&f->net, b, ec.argv[1], ec.argvlen[1], ec.argc, ec.argv, ec.argvlen) != 0)
            return -1;
    }
    return 0;
}

/* fsck_dirs_fresh on f's corpus. Returns 0, or -1. */
static int fk_fresh(fk *f)
{
    return fsck_dirs_fresh(&f->lay, &f->ps, &f->net, &f->d);
}

/* fsck_reroute of batch bp, whose commands f->route describes. Returns 0, or -1. */
static int fk_reroute(fk *f, fk_batch *bp)
{
    return fsck_reroute(&f->lay, &f->ps, &f->net, bp, &f->d, f->route, &f->rerouted);
}

/* ---- Lists of fingerprints ---- */

static int fk_push(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 1024;
        uint64_t *nv = realloc(*v, nc * sizeof(*nv));
        if (nv == NULL)
            return -1;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = x;
    return 0;
}

static int fk_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v[0..*n) and drops repeats. */
static void fk_sort_unique(uint64_t *v, size_t *n)
{
    if (*n > 1)
        qsort(v, *n, sizeof(*v), fk_cmp_u64);
    size_t m = 0;
    for (size_t i = 0; i < *n; i++)
        if (m == 0 || v[i] != v[m - 1])
            v[m++] = v[i];
    *n = m;
}

/* Whether the sorted v[0..n) holds x. */
static int fk_in(const uint64_t *v, size_t n, uint64_t x)
{
    return n > 0 && bsearch(&x, v, n, sizeof(*v), fk_cmp_u64) != NULL;
}

static int fk_have(const fk *f, uint64_t fp)
{
    return fk_in(f->have, f->nhave, fp);
}

/* ---- Phases ---- */

typedef int (*fk_keys_fn)(fk *f, redisReply **keys, size_t n);

/* SCAN every master for pattern and hand the keys over in batches. */
static int fk_scan(fk *f, const char *pattern, fk_keys_fn fn)
{
    for (size_t ni = 0; ni < f->net.n; ni++) {
        if (!f->net.node[ni].master)
            continue;
        redisContext *c = fk_node_conn(&f->net, ni);
        if (c == NULL)
            return -1;
        char cursor[32] = "0";
        do {
            redisReply *r = redisCommand(c, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
            if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
                fprintf(stderr, "%s: SCAN on redis %s:%d failed: %s\n", f->prog,
                        f->net.node[ni].host, f->net.node[ni].port,
                        r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
                if (r)
                    freeReplyObject(r);
                return -1;
            }
            snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
            redisReply *ks = r->element[1];
            for (size_t i = 0; i < ks->elements; i += FK_BATCH) {
                size_t m = ks->elements - i < FK_BATCH ? ks->elements - i : FK_BATCH;
                if (fn(f, ks->element + i, m) != 0) {
                    freeReplyObject(r);
                    return -1;
                }
                f->n.keys += m;
                cli_progress_update(&f->prog_bar, f->n.keys);
            }
            freeReplyObject(r);
        } while (strcmp(cursor, "0") != 0);
    }
    return 0;
}

/* A fingerprint with cnt > 0 document ids, missing from that many tables: counted
 * in its shard, remembered as present, and as damaged when entries are missing.
 * Returns 0, or -1 (out of memory). */
static int fk_tally_one(fk *f, uint64_t fp, long long cnt, unsigned missing)
{
    unsigned xx = layout_shard_of(perm_apply(&f->ps.tables[0], fp));
    f->n.fps++;
    f->n.docs += (unsigned long long)cnt;
    f->cnt_fps[xx]++;
    f->cnt_docs[xx] += cnt;
    if (fk_push(&f->have, &f->nhave, &f->caphave, fp) != 0)
        return -1;
    if (missing) {
        f->n.fps_missing++;
        f->n.entries_missing += missing;
        if (fk_push(&f->bad, &f->nbad, &f->capbad, fp) != 0)
            return -1;
    }
    return 0;
}

/* fsck_live_confirm of a finding about fp, counted: 1 it stands, 0 a write in flight,
 * -1 (printed). */
static int fk_live_confirm(fk *f, uint64_t fp)
{
    int rc = fsck_live_confirm(&f->lay, &f->ps, &f->net, fp);
    f->n.rechecked++;
    if (rc == 0)
        f->n.in_flight++;
    if (rc < 0)
        fprintf(stderr, "%s: cannot read fingerprint %016" PRIx64 " again\n", f->prog, fp);
    return rc;
}

/* fsck_split_confirm of fp in table t (ids: its ids, t = 0); prints a failure. */
static int fk_split_confirm(fk *f, uint64_t fp, unsigned t, int ids)
{
    int rc = fsck_split_confirm(&f->lay, t, perm_apply(&f->ps.tables[t], fp), ids, fk_send, &f->net);
    if (rc < 0)
        fprintf(stderr, "%s: cannot check fingerprint %016" PRIx64 " in table %u against a "
                "fresh directory\n", f->prog, fp, t);
    return rc;
}

/* Tallies the fingerprints fps[0..n) whose ids were counted (cnt[i]; -1:
 * in the overflow set, SCARD here) and checks their entry in every table. */
static int fk_tally(fk *f, const uint64_t *fps, const long long *cnt, size_t n)
{
    fk_batch *bp = &f->b;
    if (fk_fresh(f) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (cnt[i] < 0) {
            char key[LAYOUT_KEY_MAX];
            size_t kl = layout_doc_key(key, sizeof(key), fps[i],
                                       perm_apply(&f->ps.tables[0], fps[i]));
            const char *argv[2] = {"SCARD", key};
            size_t lens[2] = {5, kl};
            f->route[bp->n].kind = FSCK_ROUTE_NONE;
            if (fk_add(&f->net, bp, key, kl, 2, argv, lens) != 0)
                return -1;
        }
        if (fk_add_entries(f, bp, fps[i], "ZSCORE") != 0)
            return -1;
    }
    if (fk_run(&f->net, bp) != 0 || fk_reroute(f, bp) != 0)
        return -1;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        long long c = cnt[i];
        if (c < 0) {
            c = bp->reply[j]->type == REDIS_REPLY_INTEGER ? bp->reply[j]->integer : 0;
            j++;
        }
        unsigned missing = 0;
        for (unsigned t = f->lay.ops->entry_from; t < f->ps.ntables; t++, j++) {
            const redisReply *e = bp->reply[j];
            int miss = e->type == REDIS_REPLY_NIL;
            if (e->type != REDIS_REPLY_STRING && c > 0 &&
                (miss = fk_split_confirm(f, fps[i], t, 0)) < 0)
                return -1;
            missing += (unsigned)miss;
        }
        int stands = missing ? fk_live_confirm(f, fps[i]) : 1;
        if (stands < 0)
            return -1;
        if (stands == 0)
            missing = 0;
        if (c <= 0) {       /* ids in an overflow set that is empty: read again later */
            if (cnt[i] < 0 && fk_push(&f->lost, &f->nlost, &f->caplost, fps[i]) != 0)
                return -1;
            continue;
        }
        if (fk_tally_one(f, fps[i], c, missing) != 0)
            return -1;
    }
    fk_batch_clear(bp);
    return 0;
}

/* The fingerprints whose ids were said to be in their overflow set (a "" hash field,
 * a bare table-0 member) while the set was empty: both reads of their ids again
 * (ids_read, pipelined); those still so have lost their ids (the set was deleted by
 * hand, or a bug) and go to the reconciliation, which removes them (the lock script
 * drops a value whose set is empty, then every entry goes). Anything else met then
 * (ids back, none at all, a bucket split meanwhile) is a writer's doing and not
 * counted. Returns 0, or -1. */
static int fk_lost_confirm(fk *f)
{
    fk_batch *bp = &f->b;
    size_t nbad = f->nbad;      /* f->bad[0..nbad) is sorted, without repeats */
    fk_sort_unique(f->lost, &f->nlost);     /* a SCAN may hand a key over twice */
    for (size_t k = 0; k < f->nlost; k += FK_BATCH) {
        size_t m = f->nlost - k < FK_BATCH ? f->nlost - k : FK_BATCH;
        layout_ids_kind kind[2] = {0, 0};
        for (size_t i = 0; i < m; i++) {
            uint64_t fp = f->lost[k + i], p0 = perm_apply(&f->ps.tables[0], fp);
            for (unsigned r = 0; r < 2; r++) {
                layout_cmd rc;
                f->lay.ops->ids_read(&f->lay, r, fp, p0, &rc, &kind[r]);
                int ki = layout_cmd_key_index(&rc);
                if (fk_add(&f->net, bp, rc.argv[ki], rc.argvlen[ki], rc.argc, rc.argv,
                           rc.argvlen) != 0)
                    return -1;
            }
        }
        if (fk_run(&f->net, bp) != 0)
            return -1;
        for (size_t i = 0; i < m; i++) {
            const redisReply *v = bp->reply[2 * i], *set = bp->reply[2 * i + 1];
            const char *ids;
            size_t len;
            if (layout_ids_reply(kind[0], v, &ids, &len) == 1 && len == 0 &&
                set->type == REDIS_REPLY_ARRAY && set->elements == 0) {
                f->n.ids_lost++;
                if (!fk_in(f->bad, nbad, f->lost[k + i]) &&
                    fk_push(&f->bad, &f->nbad, &f->capbad, f->lost[k + i]) != 0)
                    return -1;
            }
        }
        fk_batch_clear(bp);
    }
    return 0;
}

/* The ids packed in v[0..len) (what a table-0 member carries, member_ids): their
 * count, -1 when there are none (the ids
 * are in the fingerprint's overflow set), FK_IDS_MALFORMED when v is not a packing. */
#define FK_IDS_MALFORMED (-2)
static long long fk_ids_count(const char *v, size_t len)
{
    size_t off = 0, idlen;
    const uint8_t *id;
    long long ids = 0;
    int more;
    if (len == 0)
        return -1;
    while ((more = layout_ids_next(v, len, &off, &id, &idlen)) == 1)
        ids++;
    return more < 0 ? FK_IDS_MALFORMED : ids;
}

/* ---- Documents: table 0 walked by a snapshot of its directories ---- */

/* The fingerprints taken from table 0, tallied FK_BATCH at a time. */
typedef struct fk_docs {
    uint64_t fps[FK_BATCH];
    long long cnt[FK_BATCH];
    size_t m;
} fk_docs;

/* The members of reply r (a read of the table-0 bucket of tag) whose value lies in
 * [lo, hi) (hi 0: to the end of the last shard): decoded by the layout (member_decode,
 * member_ids), their ids counted, tallied. Returns 0, or -1. */
static int fk_take(fk *f, uint64_t tag, const redisReply *r, uint64_t lo, uint64_t hi,
                   fk_docs *d)
{
    for (size_t e = 0; e < r->elements; e++) {
        const redisReply *mr = r->element[e];
        uint64_t p0;
        const char *packed;
        size_t plen;
        if (mr->type != REDIS_REPLY_STRING ||
            f->lay.ops->member_decode(&f->lay, tag, mr->str, mr->len, &p0) != 0 ||
            f->lay.ops->member_ids(&f->lay, tag, mr->str, mr->len, &packed, &plen) != 1) {
            f->n.foreign++;
            continue;
        }
        if (p0 < lo || (hi != 0 && p0 >= hi))
            continue;               /* another range's */
        long long ids = fk_ids_count(packed, plen);
        if (ids == FK_IDS_MALFORMED) {
            f->n.foreign++;
            continue;
        }
        d->fps[d->m] = perm_revert(&f->ps.tables[0], p0);
        d->cnt[d->m++] = ids;
        if (d->m == FK_BATCH) {
            if (fk_tally(f, d->fps, d->cnt, d->m) != 0)
                return -1;
            d->m = 0;
        }
    }
    return 0;
}

/* A bucket's read of the walk (its members from the walk's `from` on) queued in bp. */
static int fk_add_walk(fk *f, fk_batch *bp, const layout_read *rd)
{
    const char *argv[4] = {"ZRANGEBYLEX", rd->key, (const char *)rd->lo, (const char *)rd->hi};
    size_t lens[4] = {11, rd->klen, rd->lo_len, rd->hi_len};
    return fk_add(&f->net, bp, rd->key, rd->klen, 4, argv, lens);
}

/* The bucket of the cached directory holding v (*w, its read from v on) and the first
 * value past it: the next bucket's, or the next shard's (0 past the last) when it is
 * its shard's last (*last_of_shard set). */
static uint64_t fk_bucket_of(const fk *f, uint64_t v, layout_walk *w, int *last_of_shard)
{
    layout_walk nx;
    f->lay.ops->walk(&f->lay, v, 0, w);
    *last_of_shard = !f->lay.ops->walk(&f->lay, v, 1, &nx);
    return nx.first;
}

/* The values [lo, hi) of table 0's shard xx, a bucket of the snapshot that split since
 * it was taken: read bucket by bucket through its directory read fresh (again while
 * splits keep coming, at most 16 times in a row). Returns 0, or -1 (printed). */
static int fk_range0(fk *f, unsigned xx, uint64_t lo, uint64_t hi, fk_docs *d)
{
    fk_batch *wp = &f->w;
    for (int tries = 0; tries < 16;) {
        if (fk_fresh(f) != 0)
            return -1;
        layout_walk w;
        int end;
        uint64_t next = fk_bucket_of(f, lo, &w, &end);
        int last = end || (hi != 0 && next >= hi);
        if (fk_add_walk(f, wp, &w.read) != 0 || fk_run(&f->net, wp) != 0)
            return -1;
        redisReply *r = wp->reply[0];
        wp->reply[0] = NULL;    /* wp free again: fk_take's tally reads directories */
        fk_batch_clear(wp);
        if (fsck_wrongtype(r)) {
            layout_dir_reply(&f->lay, 0, xx, r);
            freeReplyObject(r);
            tries++;
            continue;
        }
        int rc = r->type == REDIS_REPLY_ARRAY ? fk_take(f, w.read.tag, r, lo, hi, d) : -1;
        if (r->type != REDIS_REPLY_ARRAY)
            fprintf(stderr, "%s: a read of table 0 shard %02x: %s\n", f->prog, xx,
                    r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        freeReplyObject(r);
        if (rc != 0)
            return -1;
        f->n.keys++;
        if (last)
            return 0;
        lo = next;
        tries = 0;
    }
    fprintf(stderr, "%s: table 0 shard %02x kept splitting under the walk\n", f->prog, xx);
    return -1;
}

/* Documents, kept in table 0's members, walked shard by shard over a snapshot of its
 * directory taken when the walk reaches the shard: every bucket of the snapshot read
 * from its first value to its end (the layout's walk, FK_BATCH at a time), one that split
 * since read range by range through a fresh directory (fk_range0). A member is read
 * once, whatever splits meanwhile, and the walk ends: a SCAN of the keys instead
 * follows the buckets a load makes while it runs, and may miss the halves of a
 * split or see a member twice. Returns 0, or -1. */
static int fk_walk0(fk *f)
{
    fk_docs d;
    fk_batch *wp = &f->w;
    uint64_t *vals = NULL, rtag[FK_BATCH];
    size_t capv = 0;
    int rc = 0;
    d.m = 0;
    for (unsigned xx = 0; xx < 256 && rc == 0; xx++) {
        if ((rc = fk_fresh(f)) != 0)
            break;
        const layout_ops *ops = f->lay.ops;
        uint64_t base = (uint64_t)xx << 56;
        size_t nb = 0;
        for (layout_walk w;; nb++) {          /* vals[nb]: the next shard's first (or 0) */
            int more = ops->walk(&f->lay, base, nb, &w);
            if (nb + 1 > capv) {
                size_t nc = capv ? 2 * capv : 64;
                uint64_t *nv = realloc(vals, nc * sizeof(*nv));
                if (nv == NULL) {
                    fprintf(stderr, "%s: out of memory\n", f->prog);
                    rc = -1;
                    break;
                }
                vals = nv;
                capv = nc;
            }
            vals[nb] = w.first;
            if (!more)
                break;
        }
        for (size_t i = 0; i < nb && rc == 0; i += FK_BATCH) {
            size_t m = nb - i < FK_BATCH ? nb - i : FK_BATCH;
            int whole[FK_BATCH];
            for (size_t k = 0; k < m && rc == 0; k++) {
                layout_walk w;
                int end;
                uint64_t v = vals[i + k], next = fk_bucket_of(f, v, &w, &end);
                whole[k] = w.first == v && next == vals[i + k + 1];
                rtag[k] = w.read.tag;
                rc = fk_add_walk(f, wp, &w.read);
            }
            if (rc != 0 || (rc = fk_run(&f->net, wp)) != 0)
                break;
            redisReply *rep[FK_BATCH];
            memcpy(rep, wp->reply, m * sizeof(*rep));
            wp->n = 0;              /* the replies are rep's now: wp free for fk_range0 */
            for (size_t k = 0; k < m; k++) {
                if (rc == 0 && whole[k] && rep[k]->type == REDIS_REPLY_ARRAY) {
                    rc = fk_take(f, rtag[k], rep[k], vals[i + k], vals[i + k + 1], &d);
                    f->n.keys++;
                } else if (rc == 0) {   /* split since the snapshot, or the cache is finer */
                    if (fsck_wrongtype(rep[k]))
                        layout_dir_reply(&f->lay, 0, xx, rep[k]);
                    rc = fk_range0(f, xx, vals[i + k], vals[i + k + 1], &d);
                }
                freeReplyObject(rep[k]);
            }
            cli_progress_update(&f->prog_bar, f->n.keys);
        }
    }
    free(vals);
    if (rc == 0 && d.m)
        rc = fk_tally(f, d.fps, d.cnt, d.m);
    return rc;
}

/* The candidates cand[0..ncand) of the tables phase (entries of fingerprints that had
 * no ids in the documents phase): each asked whether it has ids now (entry() of table 0), one
 * that has none confirmed through a fresh directory and against writes in flight
 * before it counts as an orphan. The answer is kept (f->late): the fingerprints a load
 * wrote after the documents phase are asked about once, not once per table. Returns
 * 0, or -1. */
#define FK_LATE_IDS 1           /* f->late: has ids */
#define FK_LATE_ORPHAN 2        /* f->late: an orphan, confirmed */
static int fk_orphans(fk *f, const uint64_t *cand, size_t ncand)
{
    fk_batch *ep = &f->e;
    for (size_t i = 0; i < ncand; i++) {
        unsigned mark = fsck_fpset_get(&f->late, cand[i]);
        if (mark == FK_LATE_ORPHAN) {
            f->n.orphan_entries++;      /* another entry of one confirmed already */
        } else if (mark != FK_LATE_IDS) {
            layout_cmd hc;
            if (ep->n == 0 && fk_fresh(f) != 0)
                return -1;
            f->lay.ops->entry(&f->lay, 0, perm_apply(&f->ps.tables[0], cand[i]), "ZSCORE", &hc);
            f->route[ep->n] = (fsck_route){cand[i], 0, FSCK_ROUTE_IDS};
            if (fk_add(&f->net, ep, hc.argv[1], hc.argvlen[1], hc.argc, hc.argv,
                       hc.argvlen) != 0)
                return -1;
        }
        if (ep->n == 0 || (ep->n < FK_BATCH && i + 1 < ncand))
            continue;
        if (fk_run(&f->net, ep) != 0 || fk_reroute(f, ep) != 0)
            return -1;
        for (size_t k = 0; k < ep->n; k++) {
            const redisReply *e = ep->reply[k];
            uint64_t fp = f->route[k].fp;
            int orphan = e->type == REDIS_REPLY_INTEGER && e->integer == 0;
            int present = e->type == REDIS_REPLY_INTEGER && e->integer > 0;
            if ((orphan || e->type == REDIS_REPLY_ERROR) &&
                (orphan = fk_split_confirm(f, fp, 0, 1)) < 0)
                return -1;
            present |= e->type == REDIS_REPLY_ERROR && orphan == 0;
            if (orphan && (orphan = fk_live_confirm(f, fp)) < 0)
                return -1;
            if (orphan) {
                f->n.orphan_entries++;
                if (fk_push(&f->bad, &f->nbad, &f->capbad, fp) != 0 ||
                    fsck_fpset_put(&f->late, fp, FK_LATE_ORPHAN) != 0)
                    return -1;
            } else if (present && fsck_fpset_put(&f->late, fp, FK_LATE_IDS) != 0) {
                return -1;
            }
        }
        fk_batch_clear(ep);
    }
    return 0;
}

/* Tables: every member of every bucket; fingerprints without documents are orphans
 * (confirmed by fk_orphans, in case one was added meanwhile). */
static int fk_tables(fk *f, redisReply **keys, size_t n)
{
    fk_batch *bp = &f->b;
    unsigned tab[FK_BATCH];
    uint64_t bucket[FK_BATCH];
    int ok[FK_BATCH];
    for (size_t i = 0; i < n; i++) {
        layout_key lk;
        ok[i] = layout_key_parse(&f->lay, &f->ps, keys[i]->str, keys[i]->len, &lk) == 0 &&
                lk.kind == LAYOUT_KEY_BUCKET;
        tab[i] = lk.table;
        bucket[i] = lk.bucket;
        if (!ok[i]) {
            f->n.foreign++;
            continue;
        }
        if (fk_add_zrange(&f->net, bp, keys[i]) != 0)
            return -1;
    }
    if (fk_run(&f->net, bp) != 0)
        return -1;
    uint64_t cand[FK_BATCH * 64];
    size_t ncand = 0, j = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (!ok[i])
            continue;
        redisReply *r = bp->reply[j++];
        for (size_t m = 0; r->type == REDIS_REPLY_ARRAY && m < r->elements && rc == 0; m++) {
            uint64_t p;
            if (f->lay.ops->member_decode(&f->lay, bucket[i], r->element[m]->str,
                                          r->element[m]->len, &p) != 0) {
                f->n.foreign++;
                continue;
            }
            uint64_t fp = perm_revert(&f->ps.tables[tab[i]], p);
            if (fk_have(f, fp))
                continue;
            cand[ncand++] = fp;
            if (ncand == sizeof(cand) / sizeof(cand[0])) {
                rc = fk_orphans(f, cand, ncand);
                ncand = 0;
            }
        }
    }
    fk_batch_clear(bp);
    return rc == 0 ? fk_orphans(f, cand, ncand) : -1;
}

/* ---- Split buckets (cmd_fsck_split.c) ---- */

/* The directories: each read into the layout's cache, before the other phases. */
static int fk_dirs(fk *f, redisReply **keys, size_t n)
{
    fk_batch *bp = &f->b;
    for (size_t i = 0; i < n; i++) {
        if (fk_add_zrange(&f->net, bp, keys[i]) != 0)
            return -1;
    }
    if (fk_run(&f->net, bp) != 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        fsck_split_dir(f->split, &f->lay, keys[i]->str, keys[i]->len, bp->reply[i]);
    fk_batch_clear(bp);
    return 0;
}

/* Bucket keys: their type, then the members of the sorted sets (ZRANGE; a tombstone
 * or another type has none to read). */
static int fk_split_keys(fk *f, redisReply **keys, size_t n)
{
    fk_batch *bp = &f->b;
    char type[FK_BATCH][8];
    size_t at[FK_BATCH];
    for (size_t i = 0; i < n; i++) {
        const char *argv[2] = {"TYPE", keys[i]->str};
        size_t lens[2] = {4, keys[i]->len};
        if (fk_add(&f->net, bp, keys[i]->str, keys[i]->len, 2, argv, lens) != 0)
            return -1;
    }
    if (fk_run(&f->net, bp) != 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        snprintf(type[i], sizeof(type[i]), "%s",
                 bp->reply[i]->type == REDIS_REPLY_STATUS ? bp->reply[i]->str : "?");
    fk_batch_clear(bp);
    for (size_t i = 0; i < n; i++) {
        at[i] = bp->n;
        if (strcmp(type[i], "zset") == 0 && fk_add_zrange(&f->net, bp, keys[i]) != 0)
            return -1;
    }
    if (fk_run(&f->net, bp) != 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        fsck_split_key(f->split, &f->lay, &f->ps, keys[i]->str, keys[i]->len, type[i],
                       strcmp(type[i], "zset") == 0 ? bp->reply[at[i]] : NULL, fk_send,
                       &f->net);
    fk_batch_clear(bp);
    return 0;
}

/* Locks: stale ones (expiry passed by Redis's clock) and live ones. */
static int fk_locks(fk *f, redisReply **keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t ni = fk_node_of(&f->net, keys[i]->str, keys[i]->len);
        redisContext *c = fk_node_conn(&f->net, ni);
        if (c == NULL)
            return -1;
        unsigned long long now = fk_redis_ms(&f->net, ni);
        redisReply *r = redisCommand(c, "HGETALL %b", keys[i]->str, keys[i]->len);
        for (size_t m = 0; r && r->type == REDIS_REPLY_ARRAY && m + 1 < r->elements; m += 2) {
            uint64_t fp;
            if (layout_lock_field_parse(r->element[m]->str, r->element[m]->len, &fp) != 0) {
                f->n.foreign++;
                continue;
            }
            if (strtoull(r->element[m + 1]->str, NULL, 10) <= now) {
                f->n.stale_locks++;
                if (fk_push(&f->bad, &f->nbad, &f->capbad, fp) != 0) {
                    freeReplyObject(r);
                    return -1;
                }
            } else {
                f->n.live_locks++;
            }
        }
        if (r)
            freeReplyObject(r);
    }
    return 0;
}


/* ---- Setup ---- */

/* Reads simhash:meta. Returns 0, or -1 (printed). */
static int fk_meta(fk *f)
{
    char mkey[LAYOUT_KEY_MAX];
    size_t ml = layout_meta_key(mkey, sizeof(mkey));
    size_t ni = fk_node_of(&f->net, mkey, ml);
    redisContext *c = fk_node_conn(&f->net, ni);
    if (c == NULL)
        return -1;
    redisReply *r = redisCommand(c, "HMGET %s blocks distance layout tombstone_seconds %s",
                                 mkey, LAYOUT_META_LEGACY);
    long v[5] = {-1, -1, -1, -1, LAYOUT_SHARD_BITS};
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < 5 && i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_STRING)
            v[i] = strtol(r->element[i]->str, NULL, 10);
    if (r)
        freeReplyObject(r);
    if (v[0] < 0) {
        fprintf(stderr, "%s: no corpus here: %s is missing on redis %s:%d\n", f->prog,
                mkey, f->net.node[ni].host, f->net.node[ni].port);
        return -1;
    }
    char merr[512];
    if (layout_meta_check(v[2], v[4], f->net.node[ni].host, f->net.node[ni].port, mkey, merr,
                          sizeof merr) != 0) {
        fprintf(stderr, "%s: %s\n", f->prog, merr);
        return -1;
    }
    if (layout_ctx_init(&f->lay) != 0) {
        fprintf(stderr, "%s: out of memory\n", f->prog);
        return -1;
    }
    if (v[3] >= LAYOUT_TOMBSTONE_S_MIN && v[3] <= LAYOUT_TOMBSTONE_S_MAX)
        f->lay.tombstone_s = (unsigned)v[3];    /* what --repair's splits leave */
    f->blocks = (unsigned)v[0];
    f->distance = (unsigned)v[1];
    char err[256];
    if (perm_set_init(&f->ps, f->blocks, f->distance, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: %s\n", f->prog, err);
        return -1;
    }
    return 0;
}

static void fk_usage(FILE *out)
{
    fprintf(out,
            "usage: simhash fsck [--repair] [--redis HOST:PORT] [--cluster] [options]\n"
            "Check a deployment's Redis data: every fingerprint with documents has its entry\n"
            "in every table, no table entry lacks documents, no fingerprint's ids are lost\n"
            "(an overflow set gone), no write lock is stale, and the counters are exact.\n"
            "Prints name:value lines; exit 0 clean (or all repaired),\n"
            "1 inconsistencies left, 2 usage or connection errors.\n"
            "  --redis HOST:PORT     the Redis node (a seed node with --cluster; default 127.0.0.1:6379)\n"
            "  --cluster             a Redis Cluster: scan every master\n"
            "  --corpus NAME         the corpus of that name (its workers' option corpus)\n"
            "  --repair              reconcile every inconsistent fingerprint under its write\n"
            "                        lock and rewrite wrong counters (first move the\n"
            "                        members of buckets outside their directory or bounds)\n"
            "  --password-file FILE  AUTH with the password in FILE\n"
            "  --user USER           AUTH as this ACL user\n"
            "  --lease-ms MS         lease of the locks fsck takes (default %d)\n"
            "  -q, --quiet           no progress bar\n"
            "  -h, --help            show this help\n", LAYOUT_LOCK_LEASE_MS);
}

static void fk_free(fk *f)
{
    fk_nodes_free(&f->net);
    fk_batch_free(&f->b);
    fk_batch_free(&f->e);
    fk_batch_free(&f->d);
    fk_batch_free(&f->w);
    free(f->route);
    fsck_fpset_free(&f->late);
    fsck_split_free(f->split);
    layout_ctx_free(&f->lay);
    free(f->have);
    free(f->bad);
    free(f->lost);
    if (f->ps.tables)
        perm_set_free(&f->ps);
}

int cmd_fsck(int argc, char **argv)
{
    static const struct option lo[] = {
        {"redis", required_argument, NULL, 'r'},    {"cluster", no_argument, NULL, 'c'},
        {"repair", no_argument, NULL, 'R'},         {"password-file", required_argument, NULL, 'p'},
        {"user", required_argument, NULL, 'u'},     {"lease-ms", required_argument, NULL, 'l'},
        {"quiet", no_argument, NULL, 'q'},          {"help", no_argument, NULL, 'h'},
        {"corpus", required_argument, NULL, 'C'},
        {NULL, 0, NULL, 0}};
    fk *f = calloc(1, sizeof(*f));
    const char *addr = "127.0.0.1:6379", *pwfile = NULL;
    int o, rc = CLI_EXIT_USAGE;
    if (f == NULL) {
        fprintf(stderr, "simhash fsck: out of memory\n");
        return CLI_EXIT_FAIL;
    }
    f->prog = "simhash fsck";
    f->net.prog = f->prog;
    f->lease_ms = LAYOUT_LOCK_LEASE_MS;
    opterr = 0;
    optind = 1;
    while ((o = getopt_long(argc, argv, ":qh", lo, NULL)) != -1) {
        uint64_t v;
        const char *why;
        switch (o) {
        case 'r': addr = optarg; break;
        case 'c': f->net.cluster = 1; break;
        case 'R': f->repair = 1; break;
        case 'p': pwfile = optarg; break;
        case 'u': f->net.user = optarg; break;
        case 'q': f->quiet = 1; break;
        case 'C':
            if (layout_corpus_set(optarg) != 0) {
                fprintf(stderr, "%s: --corpus '%s': at most %d letters, digits, '_', '.' or '-'\n",
                        f->prog, optarg, LAYOUT_CORPUS_MAX);
                goto out;
            }
            break;
        case 'l':
            if (parse_uint_range(optarg, strlen(optarg), 100, 3600000, &v, &why) != 0) {
                fprintf(stderr, "%s: --lease-ms '%s': %s (100..3600000)\n", f->prog, optarg, why);
                goto out;
            }
            f->lease_ms = (unsigned)v;
            break;
        case 'h': fk_usage(stdout); rc = CLI_EXIT_OK; goto out;
        default: rc = cli_opt_error(f->prog, o, argv); goto out;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", f->prog, argv[optind]);
        fk_usage(stderr);
        goto out;
    }
    cluster_node seed;
    if (cluster_parse_addr(addr, strlen(addr), &seed) != 0) {
        fprintf(stderr, "%s: --redis '%s': expected HOST:PORT\n", f->prog, addr);
        goto out;
    }
    if (pwfile) {
        if (net_read_password(f->prog, pwfile, f->net.password, sizeof(f->net.password)) != 0)
            goto out;
        f->net.have_password = 1;
    }
    if (f->net.user && !pwfile) {
        fprintf(stderr, "%s: --user needs --password-file\n", f->prog);
        goto out;
    }
    if (fk_nodes_setup(&f->net, seed.host, seed.port) != 0 || fk_meta(f) != 0)
        goto out;
    if (fk_batch_init(&f->b, f->ps.ntables) != 0 || fk_batch_init(&f->e, 0) != 0 ||
        fk_batch_init(&f->d, 0) != 0 || fk_batch_init(&f->w, 0) != 0 ||
        (f->route = calloc(f->b.cap, sizeof(*f->route))) == NULL) {
        fprintf(stderr, "%s: out of memory\n", f->prog);
        goto out;
    }
    rc = CLI_EXIT_FAIL;
    for (size_t i = 0; i < f->net.n; i++) {
        redisContext *c = fk_node_conn(&f->net, i);
        redisReply *r = c ? redisCommand(c, "DBSIZE") : NULL;
        if (r && r->type == REDIS_REPLY_INTEGER)
            f->total_keys += (unsigned long long)r->integer;
        if (r)
            freeReplyObject(r);
        if (c == NULL)
            goto out;
    }
    cli_progress_init(&f->prog_bar, "simhash fsck", (size_t)f->total_keys);
    if (f->quiet)
        f->prog_bar.enabled = 0;
    char ps[LAYOUT_KEY_MAX], pw[LAYOUT_KEY_MAX];
    layout_scan_pattern(ps, sizeof(ps), LAYOUT_KEY_BUCKET);
    layout_scan_pattern(pw, sizeof(pw), LAYOUT_KEY_LOCKS);
    {                               /* the directories first: the phases route by them */
        char pr[LAYOUT_KEY_MAX];
        layout_scan_pattern(pr, sizeof(pr), (layout_key_kind)'r');
        if ((f->split = fsck_split_new()) == NULL || fk_scan(f, pr, fk_dirs) != 0 ||
            fk_scan(f, ps, fk_split_keys) != 0)
            goto out;
        if (f->repair)      /* before the other phases, which then see the entries moved */
            fsck_split_repair(f->split, &f->lay, fk_send, &f->net);
    }
    if (fk_walk0(f) != 0)
        goto out;
    if (f->nhave > 1)
        qsort(f->have, f->nhave, sizeof(*f->have), fk_cmp_u64);
    if (fk_scan(f, ps, fk_tables) != 0 || fk_scan(f, pw, fk_locks) != 0)
        goto out;
    cli_progress_end(&f->prog_bar);
    fk_sort_unique(f->bad, &f->nbad);
    for (size_t i = 0; i < f->nbad; i++)
        f->n.orphan_fps += !fk_have(f, f->bad[i]);
    if (fk_lost_confirm(f) != 0)    /* after the orphans: these have no documents either */
        goto out;
    if (f->repair) {
        for (size_t i = 0; i < f->nbad; i++) {
            char tok[48];
            snprintf(tok, sizeof(tok), "fsck-%d-%zu", (int)getpid(), i);
            int r = fsck_fix(&f->lay, &f->ps, &f->net, &f->b, &f->d, f->bad[i], f->lease_ms, tok);
            if (r > 0)
                f->n.repaired++;
            else if (r == 0)
                f->n.repair_busy++;
            else
                f->n.repair_errors++;
        }
    }
    fsck_count_stats cs;
    if (fsck_counters(&f->lay, &f->ps, &f->net, f->cnt_fps, f->cnt_docs, f->repair, &cs) != 0)
        goto out;
    f->n.counter_bad = cs.mismatches;
    f->n.counters_fixed = cs.fixed;
    const fk_counts *n = &f->n;
    int split_bad = f->split && fsck_split_report(f->split, stdout) > 0;
    int split_left = f->split && fsck_split_left(f->split, f->repair) > 0;
    int problems = n->fps_missing || n->orphan_entries || n->stale_locks || n->counter_bad ||
                   n->foreign || n->ids_lost || split_bad;
    int left = n->repair_busy || n->repair_errors || n->foreign || split_left ||
               (n->counter_bad > n->counters_fixed) || (!f->repair && problems);
    printf("keys_scanned:%llu\nfingerprints:%llu\ndocuments:%llu\n"
           "fingerprints_missing_entries:%llu\nmissing_entries:%llu\norphan_entries:%llu\n"
           "orphan_fingerprints:%llu\nforeign_keys_or_members:%llu\nstale_locks:%llu\n"
           "live_locks:%llu\ncounter_mismatches:%llu\nfingerprints_ids_lost:%llu\n"
           "counters_rechecked:%llu\ncounters_writes_in_flight:%llu\n"
           "findings_rechecked:%llu\nfindings_writes_in_flight:%llu\n",
           n->keys, n->fps, n->docs, n->fps_missing, n->entries_missing, n->orphan_entries,
           n->orphan_fps, n->foreign, n->stale_locks, n->live_locks, n->counter_bad,
           n->ids_lost, cs.rechecked, cs.in_flight, n->rechecked, n->in_flight);
    unsigned long long src, sif;
    fsck_split_rechecks(f->split, &src, &sif);
    printf("rechecked:%llu\nin_flight:%llu\nreads_rerouted:%llu\n",
           n->rechecked + cs.rechecked + src, n->in_flight + cs.in_flight + sif, f->rerouted);
    if (f->repair)
        printf("repaired_fingerprints:%llu\nrepair_busy:%llu\nrepair_errors:%llu\n"
               "counters_rewritten:%llu\n", n->repaired, n->repair_busy, n->repair_errors,
               n->counters_fixed);
    printf("status:%s\n", !problems ? "clean" : left ? "inconsistent" : "repaired");
    rc = left ? CLI_EXIT_FAIL : CLI_EXIT_OK;
out:
    fk_free(f);
    free(f);
    return rc;
}
