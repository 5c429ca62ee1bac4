/* write.c: the writes of simhash-coordinator: SIMHASH.ADD, SIMHASH.DEL and the
 * adding half of SIMHASH.CHECK / CHECKTEXT, under per-fingerprint write locks
 * (docs/protocol.md, "Consistency").
 *
 * A write of fingerprint fp runs three rounds:
 *   lock     SHARD.LOCK to the worker of table 0's shard of fp: one Lua call takes
 *            fp's lock in Redis and changes its document set (add or remove ids);
 *            it answers the set's size before and after. A lock held by another
 *            writer answers "busy, n ms left": the item tries again after 2, 4, 8 ..
 *            ms (at most CW_RETRY_MAX_MS, never past the expiry).
 *   entries  the table writes (ZADD or ZREM) at the owners of fp's tables, so that
 *            fp has an entry in every table iff its set is non-empty: ZADD after
 *            an add, ZREM when the set became empty, both when the lock was taken
 *            over from a dead writer (the whole fingerprint is reconciled).
 *   unlock   SHARD.UNLOCK; a lock lost meanwhile (lease run out, taken over) makes
 *            the item reconcile again under a new lock before it is acknowledged.
 * Items (distinct fingerprints) of a batch go through the rounds together, a window
 * of at most CW_WINDOW pairs at a time in argument order, each window with its own
 * deadline; so a batch of any size fits max-inflight-worker, and a failure names
 * exactly which pairs were stored. Each round sends one batched request per worker
 * for all the window's items it serves (docs/protocol.md, "Batched writes"):
 * SHARD.MLOCK, then SHARD.MADD and / or SHARD.MDEL, then SHARD.MUNLOCK; their replies
 * are per fingerprint, and an item answered busy goes round again alone. */
#include "coord.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout.h"
#include "log.h"

#define CW_WINDOW 256           /* pairs of a batch in flight at once */
#define CW_RETRY_MAX_MS 50      /* longest wait before asking for a busy lock again */

typedef enum cw_state {
    CW_LOCK,                    /* SHARD.LOCK to send */
    CW_WAIT,                    /* lock busy: SHARD.LOCK again after wait_ms */
    CW_ENTRIES,                 /* lock held: table writes to send */
    CW_UNLOCK,                  /* lock held, table writes done: SHARD.UNLOCK to send */
    CW_DONE
} cw_state;

typedef struct cw_item {
    struct coord_write *wr;
    uint64_t fp;
    size_t first, n;            /* slice of wr->order: the pairs of fp in the window */
    char op;                    /* LAYOUT_LOCK_OP_*: A, R, X; F after a lost lock */
    cw_state state;
    int applied;                /* its document change took effect */
    int unknown;                /* a SHARD.LOCK is out and its reply not seen */
    int entries;                /* +1 ZADD, -1 ZREM, 0 none */
    unsigned wait_ms, tries;
    int bw;                     /* worker of its batch in this round, or -1 */
    char token[64];             /* 16 + 3 separators + at most 16 + 16 + 8 hex digits */
} cw_item;

struct coord_write {
    coord *co;
    coord_write_kind kind;
    coord_pair *pairs;          /* in argument order */
    size_t npairs;
    char delop;                 /* DEL: R (one id) or X (all) */
    size_t wbeg, wend;          /* current window of pairs */
    size_t *order;              /* window pair indexes, sorted by fingerprint */
    cw_item *items;
    size_t nitems;
    long long count;            /* ids added (ADD, CHECK) or removed (DEL) */
    uint64_t q;                 /* CHECKTEXT: the fingerprint answered */
    resp_buf saved;             /* CHECK / CHECKTEXT: the matches, answered after */
    unsigned char touched[256]; /* durable: workers written to since the last WAIT */
    unsigned long long opid;
    coord_waiter *waiters;      /* merged one-pair writes: pair i answers waiters[i] */
    long long *added;           /* ... ADD with the ids its fingerprint added */
};

static void cw_lock_round(coord_op *op);

/* ---- State ---- */

/* The op is freed: every reply of its children arrived (or their connection was
 * lost). An item that may hold its lock but is not done belongs to a write that
 * failed half-way: its lock is made stale at once (SHARD.UNLOCK ... ABANDON, no
 * reply awaited), so the next writer of the fingerprint or the worker's repair pass
 * reconciles it now rather than after the lease. */
static void cw_abandon(coord_write *wr)
{
    coord *co = wr->co;
    for (size_t k = 0; k < wr->nitems; k++) {
        cw_item *it = &wr->items[k];
        if (it->state == CW_DONE || (!it->unknown && it->state != CW_ENTRIES &&
                                     it->state != CW_UNLOCK))
            continue;
        coord_worker *w = coord_route(co, 0, perm_apply(&co->ps.tables[0], it->fp));
        if (w == NULL || w->health != W_UP || w->ac == NULL)
            continue;       /* the lease runs out; the repair pass takes it then */
        char fps[24];
        const char *argv[4] = { "SHARD.UNLOCK", fps, it->token, "ABANDON" };
        size_t lens[4] = { strlen(argv[0]), resp_u64_dec(fps, it->fp), strlen(it->token), 7 };
        if (redisAsyncCommandArgv(w->ac, NULL, NULL, 4, argv, lens) == REDIS_OK)
            co->st.locks_abandoned++;
    }
}

static void cw_cleanup(void *p)
{
    coord_write *wr = p;
    for (size_t i = 0; wr->waiters && i < wr->npairs; i++) {
        if (wr->waiters[i].req)     /* every end answers them first: never here */
            rs_req_fail(wr->waiters[i].req, RS_ERR,
                        "internal error: a merged write ended unanswered");
        resp_buf_free(&wr->waiters[i].saved);
    }
    free(wr->waiters);
    free(wr->added);
    if (wr->items)
        cw_abandon(wr);
    free(wr->pairs);
    free(wr->order);
    free(wr->items);
    resp_buf_free(&wr->saved);
}

coord_write *coord_write_new(coord_op *op, coord_write_kind kind, coord_pair *pairs,
                             size_t npairs)
{
    static unsigned long long opseq;
    coord_write *wr = calloc(1, sizeof(*wr));
    if (wr == NULL) {
        free(pairs);
        coord_op_fail(op, RS_OOM, "out of memory");
        return NULL;
    }
    wr->co = coord_op_coord(op);
    wr->kind = kind;
    wr->pairs = pairs;
    wr->npairs = npairs;
    wr->opid = ++opseq;
    resp_buf_init(&wr->saved, 0);
    coord_op_swap_data(op, wr, cw_cleanup);
    return wr;
}

void coord_write_set_del(coord_write *wr, int all)
{
    wr->delop = all ? LAYOUT_LOCK_OP_DELALL[0] : LAYOUT_LOCK_OP_REM[0];
}

/* Lease of the locks this coordinator takes: longer than any of its requests may
 * run (a window's deadline), so a live writer never loses its lock to a takeover. */
static unsigned cw_lease_ms(const coord *co)
{
    unsigned l = co->cfg.timeout_ms * 4u;
    return l < 2000 ? 2000 : l;
}

/* ---- Answer and failure note ---- */

/* The item of pair i in the current window, or NULL. */
static const cw_item *cw_item_of(const coord_write *wr, size_t i)
{
    for (size_t k = 0; k < wr->nitems; k++) {
        const cw_item *it = &wr->items[k];
        for (size_t j = it->first; j < it->first + it->n; j++)
            if (wr->order[j] == i)
                return it;
    }
    return NULL;
}

/* The answer of a write of kind once it is done: ADD and DEL the count of ids;
 * CHECK its query's matches; CHECKTEXT the fingerprint, then the matches. */
static void cw_reply(resp_buf *out, coord_write_kind kind, long long count, uint64_t q,
                     const resp_buf *saved)
{
    switch (kind) {
    case CW_ADD:
    case CW_DEL:
        resp_add_int(out, count);
        break;
    case CW_CHECK:
        resp_buf_append(out, saved->data, saved->len);
        break;
    case CW_CHECKTEXT:
        resp_add_array(out, 2);
        resp_add_bulk_u64(out, q);
        resp_buf_append(out, saved->data, saved->len);
        break;
    }
}

/* Answers pair i's waiter (a merged write; it: the pair's item), if not yet: its pair
 * stored (written and unlocked), or not (text: the op's error; NULL at the end of a
 * write that did not fail). */
static void cw_answer_pair(coord_write *wr, size_t i, const cw_item *it, rs_errcode code,
                           const char *text)
{
    coord_waiter *w = &wr->waiters[i];
    rs_req *req = w->req;
    if (req == NULL)
        return;
    w->req = NULL;
    if (text == NULL || (it != NULL && it->state == CW_DONE)) {
        cw_reply(rs_req_out(req), w->kind, wr->added[i], w->q, &w->saved);
        rs_req_finish(req);
    } else if (it != NULL && (it->applied || it->unknown)) {
        rs_req_fail(req, code, "%s (this pair's write may have been stored: the workers "
                    "complete or roll back within %u ms)", text, cw_lease_ms(wr->co) + 1000);
    } else {
        rs_req_fail(req, code, "%s", text);
    }
    resp_buf_free(&w->saved);
}

static void cw_answer_waiters(coord_write *wr, rs_errcode code, const char *text)
{
    for (size_t i = 0; i < wr->npairs; i++)
        if (wr->waiters[i].req)
            cw_answer_pair(wr, i, cw_item_of(wr, i), code, text);
}

static void cw_failed(coord_op *op, rs_errcode code, const char *text)
{
    cw_answer_waiters(coord_op_data(op), code, text);
}

void coord_write_set_waiters(coord_write *wr, coord_waiter *w)
{
    wr->waiters = w;
}

static void cw_answer(coord_op *op)
{
    coord_write *wr = coord_op_data(op);
    if (wr->waiters) {
        cw_answer_waiters(wr, RS_ERR, NULL);
        coord_op_finish(op);
        return;
    }
    cw_reply(rs_req_out(coord_op_req(op)), wr->kind, wr->count, wr->q, &wr->saved);
    coord_op_finish(op);
}

/* Appends "a-b" or "a" (1-based pair numbers) to buf, comma-separated. A window
 * holds at most CW_WINDOW pairs, so the lists of one failure fit their buffers:
 * the stored pairs are 1-N before the window plus at most CW_WINDOW numbers of 6
 * characters. */
static void cw_note_range(char *buf, size_t cap, size_t a, size_t b)
{
    size_t len = strlen(buf);
    if (len + 48 >= cap)
        return;             /* cannot happen with the sizes below; stay bounded anyway */
    snprintf(buf + len, cap - len, "%s%zu", len ? "," : "", a + 1);
    len = strlen(buf);
    if (b > a)
        snprintf(buf + len, cap - len, "-%zu", b + 1);
}

/* Status of pair i: 1 stored, 0 not stored, -1 unknown. */
static int cw_pair_status(const coord_write *wr, size_t i)
{
    if (i < wr->wbeg)
        return 1;
    if (i >= wr->wend)
        return 0;
    for (size_t k = 0; k < wr->nitems; k++) {
        const cw_item *it = &wr->items[k];
        for (size_t j = it->first; j < it->first + it->n; j++)
            if (wr->order[j] == i)
                return it->applied ? 1 : it->unknown ? -1 : 0;
    }
    return 0;
}

/* The note of a failed batch: which pairs were stored, which may have been. */
static void cw_note(coord_op *op, char *buf, size_t cap)
{
    coord_write *wr = coord_op_data(op);
    char stored[CW_WINDOW * 7 + 64] = "", unknown[CW_WINDOW * 7 + 64] = "";
    if (wr->kind != CW_ADD || wr->npairs < 2 || wr->waiters || cap < sizeof(stored) * 2 + 256)
        return;
    size_t nstored = 0, nunknown = 0;
    for (int want = 1; want >= -1; want -= 2) {
        char *dst = want == 1 ? stored : unknown;
        size_t *cnt = want == 1 ? &nstored : &nunknown;
        for (size_t i = 0; i < wr->npairs;) {
            if (cw_pair_status(wr, i) != want) {
                i++;
                continue;
            }
            size_t j = i;
            while (j + 1 < wr->npairs && cw_pair_status(wr, j + 1) == want)
                j++;
            cw_note_range(dst, sizeof(stored), i, j);
            *cnt += j - i + 1;
            i = j + 1;
        }
    }
    /* the ids the stored pairs added: a client that sends the call again (every pair
     * is idempotent) learns from its replies only what the second try added */
    snprintf(buf, cap, "%zu of %zu pairs stored: %s; %zu unknown%s%s (a write the workers "
             "complete or roll back within %u ms); the other pairs were not stored; "
             "%lld new ids among the stored pairs", nstored, wr->npairs,
             nstored ? stored : "none", nunknown, nunknown ? ": " : "", unknown,
             cw_lease_ms(coord_op_coord(op)) + 1000, wr->count);
}

/* ---- Rounds ---- */

static int cw_cmp_order(const void *a, const void *b, void *arg)
{
    const coord_write *wr = arg;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    uint64_t fx = wr->pairs[x].fp, fy = wr->pairs[y].fp;
    if (fx != fy)
        return fx < fy ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* 1 when every worker has room for need[w] more requests, else 0. */
static int cw_room(const coord *co, const unsigned *need)
{
    for (size_t wi = 0; wi < co->nw; wi++)
        if (need[wi] && co->w[wi].inflight + need[wi] > co->cfg.max_inflight_worker)
            return 0;
    return 1;
}

/* Start the window from wr->wbeg, or answer when every pair is done. */
static void cw_window_start(coord_op *op)
{
    coord_write *wr = coord_op_data(op);
    if (wr->wbeg >= wr->npairs) {
        cw_answer(op);
        return;
    }
    wr->wend = wr->npairs - wr->wbeg > CW_WINDOW ? wr->wbeg + CW_WINDOW : wr->npairs;
    size_t n = wr->wend - wr->wbeg;
    for (size_t i = 0; i < n; i++)
        wr->order[i] = wr->wbeg + i;
    qsort_r(wr->order, n, sizeof(*wr->order), cw_cmp_order, wr);
    wr->nitems = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && wr->pairs[wr->order[j]].fp == wr->pairs[wr->order[i]].fp)
            j++;
        SH_ASSERT(wr->nitems < CW_WINDOW);
        cw_item *it = &wr->items[wr->nitems++];
        memset(it, 0, sizeof(*it));
        it->wr = wr;
        it->fp = wr->pairs[wr->order[i]].fp;
        it->first = i;
        it->n = j - i;
        it->op = wr->kind == CW_DEL ? wr->delop : LAYOUT_LOCK_OP_ADD[0];
        it->state = CW_LOCK;
        i = j;
    }
    coord_op_rearm(op);
    cw_lock_round(op);
}

/* ---- Batched requests ---- */

/* The arguments of one batched request to one worker: argv[i] points into the
 * request's pairs, the items' tokens or num (numbers written here). */
typedef struct cw_args {
    const char **argv;
    size_t *lens;
    char (*num)[24];
    size_t argc, nnum;
} cw_args;

/* Room for maxargs arguments of which maxnums numbers. Returns 0, or -1 (no memory). */
static int cw_args_init(cw_args *a, size_t maxargs, size_t maxnums)
{
    a->argc = a->nnum = 0;
    a->argv = malloc(maxargs * sizeof *a->argv);
    a->lens = malloc(maxargs * sizeof *a->lens);
    a->num = malloc((maxnums ? maxnums : 1) * sizeof *a->num);
    if (a->argv && a->lens && a->num)
        return 0;
    free(a->argv);
    free(a->lens);
    free(a->num);
    return -1;
}

static void cw_args_free(cw_args *a)
{
    free(a->argv);
    free(a->lens);
    free(a->num);
}

static void cw_args_add(cw_args *a, const char *s, size_t len)
{
    a->argv[a->argc] = s;
    a->lens[a->argc++] = len;
}

static void cw_args_num(cw_args *a, uint64_t v)
{
    char *b = a->num[a->nnum++];
    cw_args_add(a, b, resp_u64_dec(b, v));
}

/* The items of worker wi's batch of this round, in item order: it->bw == wi. */
static cw_item *cw_batch_next(coord_write *wr, unsigned wi, size_t *k)
{
    for (; *k < wr->nitems; (*k)++)
        if (wr->items[*k].bw == (int)wi)
            return &wr->items[(*k)++];
    return NULL;
}

static int cw_on_count(coord_op *op, coord_worker *w, redisReply *r, void *arg);

/* Worker of table 0's shard of fp (NULL: routing incomplete). */
static coord_worker *cw_doc_owner(coord *co, uint64_t fp)
{
    return coord_route(co, 0, perm_apply(&co->ps.tables[0], fp));
}

/* Routes every item in state want (or want2) to table 0's worker of its fingerprint
 * (it->bw; -1 for the others) and counts them per worker in cnt. Returns 0, or -1
 * when routing is incomplete (the op failed). */
static int cw_batch_route(coord_op *op, cw_state want, cw_state want2, unsigned *cnt)
{
    coord_write *wr = coord_op_data(op);
    coord *co = coord_op_coord(op);
    for (size_t k = 0; k < wr->nitems; k++) {
        cw_item *it = &wr->items[k];
        it->bw = -1;
        if (it->state != want && it->state != want2)
            continue;
        coord_worker *w = cw_doc_owner(co, it->fp);
        if (w == NULL) {
            coord_op_send(op, NULL, 0, NULL, NULL, cw_on_count, NULL);   /* fails the op */
            return -1;
        }
        it->bw = (int)w->idx;
        cnt[w->idx]++;
    }
    return 0;
}

/* A reply holding one element per item of worker w's batch (checked here). */
static int cw_batch_reply(coord_op *op, coord_worker *w, redisReply *r, const char *cmd,
                          int (*each)(coord_op *, coord_worker *, redisReply *, cw_item *))
{
    coord_write *wr = coord_op_data(op);
    size_t n = 0, k = 0, e = 0;
    for (size_t i = 0; i < wr->nitems; i++)
        n += wr->items[i].bw == (int)w->idx;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != n) {
        coord_op_coord(op)->st.err_worker++;
        coord_op_fail(op, RS_ERR, "shard worker %s: unexpected reply to %s", w->addr, cmd);
        return -1;
    }
    for (cw_item *it; (it = cw_batch_next(wr, w->idx, &k)) != NULL;)
        if (each(op, w, r->element[e++], it) != 0)
            return -1;
    return 0;
}

/* ---- Rounds ---- */

/* One fingerprint's SHARD.LOCK reply: [1, before, after, stale, changed] or [0, ms
 * left] (busy; 0 also when its bucket split under it and nothing was written). */
static int cw_on_lock(coord_op *op, coord_worker *w, redisReply *r, cw_item *it)
{
    coord_write *wr = it->wr;
    it->unknown = 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2)
        goto bad;
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type != REDIS_REPLY_INTEGER)
            goto bad;
    if (r->element[0]->integer == 0) {
        long long ms = r->element[1]->integer;
        it->state = CW_WAIT;
        coord_op_coord(op)->st.lock_waits++;
        /* a lock is usually held for one round trip: ask again after 1, 2, 4 .. ms,
         * at most CW_RETRY_MAX_MS, never later than the lock's expiry */
        unsigned back = 1u << (it->tries < 6 ? it->tries : 6);
        if (back > CW_RETRY_MAX_MS)
            back = CW_RETRY_MAX_MS;
        it->wait_ms = ms < 1 ? 1 : (long long)back > ms ? (unsigned)ms : back;
        return 0;
    }
    if (r->elements != 5)
        goto bad;
    long long before = r->element[1]->integer, after = r->element[2]->integer;
    int stale = r->element[3]->integer != 0, fix = it->op == LAYOUT_LOCK_OP_FIX[0];
    if (!it->applied && !fix) {
        wr->count += r->element[4]->integer;
        if (wr->added)      /* a merged write: one pair per item */
            wr->added[wr->order[it->first]] += r->element[4]->integer;
    }
    it->applied = 1;
    if (after > 0)
        it->entries = it->op == LAYOUT_LOCK_OP_ADD[0] || stale || fix || before == 0 ? 1 : 0;
    else
        it->entries = before > 0 || stale || fix ? -1 : 0;
    it->state = it->entries ? CW_ENTRIES : CW_UNLOCK;
    return 0;
bad:
    coord_op_coord(op)->st.err_worker++;
    coord_op_fail(op, RS_ERR, "shard worker %s: unexpected reply to SHARD.MLOCK", w->addr);
    return -1;
}

static int cw_on_mlock(coord_op *op, coord_worker *w, redisReply *r, void *arg)
{
    (void)arg;
    return cw_batch_reply(op, w, r, "SHARD.MLOCK", cw_on_lock);
}

/* One fingerprint's SHARD.UNLOCK reply: 1 released, 0 lost (reconcile again under a
 * new lock). */
static int cw_on_unlock(coord_op *op, coord_worker *w, redisReply *r, cw_item *it)
{
    if (r->type != REDIS_REPLY_INTEGER) {
        coord_op_coord(op)->st.err_worker++;
        coord_op_fail(op, RS_ERR, "shard worker %s: unexpected reply to SHARD.MUNLOCK", w->addr);
        return -1;
    }
    if (r->integer == 1) {
        it->state = CW_DONE;
        if (it->wr->waiters)    /* a merged write: its request need not wait for the rest */
            cw_answer_pair(it->wr, it->wr->order[it->first], it, RS_ERR, NULL);
    } else {
        log_warn_rl("write lock of %016" PRIx64 " was taken over before it was released; "
                    "reconciling it again", it->fp);
        it->op = LAYOUT_LOCK_OP_FIX[0];
        it->state = CW_LOCK;
        coord_op_coord(op)->st.locks_lost++;
    }
    return 0;
}

static int cw_on_munlock(coord_op *op, coord_worker *w, redisReply *r, void *arg)
{
    (void)arg;
    return cw_batch_reply(op, w, r, "SHARD.MUNLOCK", cw_on_unlock);
}

static int cw_on_count(coord_op *op, coord_worker *w, redisReply *r, void *arg)
{
    (void)arg;
    if (r->type != REDIS_REPLY_INTEGER) {
        coord_op_coord(op)->st.err_worker++;
        coord_op_fail(op, RS_ERR, "shard worker %s: unexpected reply type %d to a table write",
                      w->addr, r->type);
        return -1;
    }
    return 0;
}

static int cw_on_wait(coord_op *op, coord_worker *w, redisReply *r, void *arg)
{
    (void)arg;
    if (r->type != REDIS_REPLY_STATUS) {
        coord_op_coord(op)->st.err_worker++;
        coord_op_fail(op, RS_ERR, "shard worker %s: unexpected reply type %d to SHARD.WAIT",
                      w->addr, r->type);
        return -1;
    }
    return 0;
}

/* 1 when the items' lock requests carry their ids (ops A and R). */
static int cw_with_ids(const cw_item *it)
{
    return it->op == LAYOUT_LOCK_OP_ADD[0] || it->op == LAYOUT_LOCK_OP_REM[0];
}

/* Worker wi's SHARD.MLOCK lease fp token op nids [ids] ... of its items. Returns 0, or
 * -1 (the op failed). */
static int cw_send_mlock(coord_op *op, unsigned wi, const char *lease)
{
    coord_write *wr = coord_op_data(op);
    coord *co = coord_op_coord(op);
    size_t nargs = 2, nnum = 0, k = 0;
    for (cw_item *it; (it = cw_batch_next(wr, wi, &k)) != NULL; nnum += 2)
        nargs += 4 + (cw_with_ids(it) ? it->n : 0);
    cw_args a;
    if (cw_args_init(&a, nargs, nnum) != 0) {
        coord_op_fail(op, RS_OOM, "out of memory");
        return -1;
    }
    cw_args_add(&a, "SHARD.MLOCK", RESP_LITLEN("SHARD.MLOCK"));
    cw_args_add(&a, lease, strlen(lease));
    k = 0;
    for (cw_item *it; (it = cw_batch_next(wr, wi, &k)) != NULL;) {
        int withids = cw_with_ids(it);
        it->tries++;
        snprintf(it->token, sizeof(it->token), "%s.%llx.%zx.%x", co->lock_id, wr->opid,
                 wr->wbeg + (size_t)(it - wr->items), it->tries);
        cw_args_num(&a, it->fp);
        cw_args_add(&a, it->token, strlen(it->token));
        cw_args_add(&a, &it->op, 1);
        cw_args_num(&a, withids ? it->n : 0);
        for (size_t j = 0; withids && j < it->n; j++) {
            const coord_pair *p = &wr->pairs[wr->order[it->first + j]];
            cw_args_add(&a, p->docid, p->len);
        }
        it->unknown = 1;
    }
    wr->touched[wi] = 1;        /* before the send: a failed send may free wr */
    int rc = coord_op_send(op, &co->w[wi], (int)a.argc, a.argv, a.lens, cw_on_mlock, NULL);
    cw_args_free(&a);
    return rc;
}

static void cw_entries_round(coord_op *op);

/* Round 1: one SHARD.MLOCK per worker, for every item in CW_LOCK / CW_WAIT whose
 * table-0 shard it serves. */
static void cw_lock_round(coord_op *op)
{
    coord *co = coord_op_coord(op);
    unsigned cnt[256] = {0}, need[256] = {0};
    if (cw_batch_route(op, CW_LOCK, CW_WAIT, cnt) != 0)
        return;
    for (size_t wi = 0; wi < co->nw; wi++)
        need[wi] = cnt[wi] > 0;
    if (!cw_room(co, need)) {   /* other requests fill the workers: wait for room */
        coord_op_later(op, 1, cw_lock_round);
        return;
    }
    char lease[16];
    snprintf(lease, sizeof(lease), "%u", cw_lease_ms(co));
    for (unsigned wi = 0; wi < co->nw; wi++)
        if (cnt[wi] && cw_send_mlock(op, wi, lease) != 0)
            return;
    coord_op_round_end(op, cw_entries_round);
}

/* Worker wi's SHARD.MADD (sign > 0) or SHARD.MDEL (< 0) of the tables it owns of every
 * item in CW_ENTRIES of that sign; owner[k * ntables + t] is the worker of item k's
 * table t. Sends nothing when it owns none. Returns 0, or -1 (the op failed). */
/* The tables of item k that worker wi owns, when k is in CW_ENTRIES with that sign;
 * else 0. */
static size_t cw_tables_mine(const coord_write *wr, size_t k, unsigned wi, int sign,
                             const short *owner, unsigned nt)
{
    const cw_item *it = &wr->items[k];
    size_t mine = 0;
    if (it->state != CW_ENTRIES || (it->entries > 0) != (sign > 0))
        return 0;
    for (unsigned t = 0; t < nt; t++)
        mine += owner[k * nt + t] == (short)wi;
    return mine;
}

static int cw_send_tables(coord_op *op, unsigned wi, int sign, const short *owner)
{
    coord_write *wr = coord_op_data(op);
    coord *co = coord_op_coord(op);
    unsigned nt = co->ps.ntables;
    size_t nargs = 1, nnum = 0;
    for (size_t k = 0; k < wr->nitems; k++) {
        size_t mine = cw_tables_mine(wr, k, wi, sign, owner, nt);
        if (mine)
            nargs += 2 + mine, nnum += 2 + mine;
    }
    if (nargs == 1)
        return 0;
    cw_args a;
    if (cw_args_init(&a, nargs, nnum) != 0) {
        coord_op_fail(op, RS_OOM, "out of memory");
        return -1;
    }
    const char *cmd = sign > 0 ? "SHARD.MADD" : "SHARD.MDEL";
    cw_args_add(&a, cmd, strlen(cmd));
    for (size_t k = 0; k < wr->nitems; k++) {
        size_t mine = cw_tables_mine(wr, k, wi, sign, owner, nt);
        if (!mine)
            continue;
        cw_args_num(&a, wr->items[k].fp);
        cw_args_num(&a, mine);
        for (unsigned t = 0; t < nt; t++)
            if (owner[k * nt + t] == (short)wi)
                cw_args_num(&a, t);
    }
    wr->touched[wi] = 1;        /* before the send: a failed send may free wr */
    int rc = coord_op_send(op, &co->w[wi], (int)a.argc, a.argv, a.lens, cw_on_count, NULL);
    cw_args_free(&a);
    return rc;
}

/* The worker of each table of each item in CW_ENTRIES into owner[k * ntables + t]
 * (need[w]: requests the round sends w). Returns 0, or -1 (routing incomplete: the
 * op failed). */
static int cw_entries_owners(coord_op *op, short *owner, unsigned *need)
{
    coord_write *wr = coord_op_data(op);
    coord *co = coord_op_coord(op);
    unsigned nt = co->ps.ntables;
    for (size_t k = 0; k < wr->nitems; k++) {
        if (wr->items[k].state != CW_ENTRIES)
            continue;
        for (unsigned t = 0; t < nt; t++) {
            coord_worker *w = coord_route(co, t, perm_apply(&co->ps.tables[t], wr->items[k].fp));
            if (w == NULL) {
                coord_op_send(op, NULL, 0, NULL, NULL, cw_on_count, NULL);  /* fails the op */
                return -1;
            }
            owner[k * nt + t] = (short)w->idx;
            need[w->idx] = 2;       /* at most a MADD and a MDEL */
        }
    }
    return 0;
}

static void cw_unlock_round(coord_op *op);

/* Round 2: the table writes of every item holding its lock, one SHARD.MADD and one
 * SHARD.MDEL at most per worker; in durable mode SHARD.WAIT after them to every worker
 * written to (it runs after them). */
static void cw_entries_round(coord_op *op)
{
    coord_write *wr = coord_op_data(op);
    coord *co = coord_op_coord(op);
    unsigned need[256] = {0};
    short *owner = malloc((wr->nitems ? wr->nitems : 1) * co->ps.ntables * sizeof *owner);
    if (owner == NULL) {
        coord_op_fail(op, RS_OOM, "out of memory");
        return;
    }
    if (cw_entries_owners(op, owner, need) != 0)
        goto out;
    if (!cw_room(co, need)) {
        coord_op_later(op, 1, cw_entries_round);
        goto out;
    }
    for (unsigned wi = 0; wi < co->nw; wi++)
        if (need[wi] && (cw_send_tables(op, wi, 1, owner) != 0 ||
                         cw_send_tables(op, wi, -1, owner) != 0))
            goto out;
    for (size_t k = 0; k < wr->nitems; k++)
        if (wr->items[k].state == CW_ENTRIES)
            wr->items[k].state = CW_UNLOCK;
    if (co->cfg.durable) {
        for (size_t wi = 0; wi < co->nw && wi < sizeof(wr->touched); wi++) {
            if (!wr->touched[wi])
                continue;
            wr->touched[wi] = 0;
            const char *argv[1] = { "SHARD.WAIT" };
            size_t lens[1] = { strlen(argv[0]) };
            if (coord_op_send(op, &co->w[wi], 1, argv, lens, cw_on_wait, NULL) != 0)
                goto out;
        }
    }
    coord_op_round_end(op, cw_unlock_round);
out:
    free(owner);
}

static void cw_after_round(coord_op *op);

/* Round 3: one SHARD.MUNLOCK per worker, for every item that holds its lock. */
static void cw_unlock_round(coord_op *op)
{
    coord_write *wr = coord_op_data(op);
    coord *co = coord_op_coord(op);
    unsigned cnt[256] = {0};
    if (cw_batch_route(op, CW_UNLOCK, CW_UNLOCK, cnt) != 0)
        return;
    for (unsigned wi = 0; wi < co->nw; wi++) {
        if (!cnt[wi])
            continue;
        cw_args a;
        if (cw_args_init(&a, 1 + 2 * (size_t)cnt[wi], cnt[wi]) != 0) {
            coord_op_fail(op, RS_OOM, "out of memory");
            return;
        }
        cw_args_add(&a, "SHARD.MUNLOCK", RESP_LITLEN("SHARD.MUNLOCK"));
        size_t k = 0;
        for (cw_item *it; (it = cw_batch_next(wr, wi, &k)) != NULL;) {
            cw_args_num(&a, it->fp);
            cw_args_add(&a, it->token, strlen(it->token));
        }
        int rc = coord_op_send(op, &co->w[wi], (int)a.argc, a.argv, a.lens, cw_on_munlock, NULL);
        cw_args_free(&a);
        if (rc != 0)
            return;
    }
    coord_op_round_end(op, cw_after_round);
}

/* After the unlocks: the next window when every item is done, else the items whose
 * lock was busy (or lost) go round again, after the shortest wait asked for. */
static void cw_after_round(coord_op *op)
{
    coord_write *wr = coord_op_data(op);
    unsigned wait = 0;
    int again = 0;
    for (size_t k = 0; k < wr->nitems; k++) {
        cw_item *it = &wr->items[k];
        if (it->state == CW_DONE)
            continue;
        again = 1;
        if (it->state == CW_WAIT && (wait == 0 || it->wait_ms < wait))
            wait = it->wait_ms;
        if (it->state == CW_LOCK)
            wait = 1;
    }
    if (!again) {
        wr->wbeg = wr->wend;
        cw_window_start(op);
        return;
    }
    coord_op_later(op, wait ? wait : 1, cw_lock_round);
}

void coord_write_start(coord_op *op)
{
    coord_write *wr = coord_op_data(op);
    size_t w = wr->npairs < CW_WINDOW ? wr->npairs : CW_WINDOW;
    wr->order = malloc((w ? w : 1) * sizeof(*wr->order));
    wr->items = malloc((w ? w : 1) * sizeof(*wr->items));
    if (wr->waiters) {
        coord_op_set_failed(op, cw_failed);
        wr->added = calloc(wr->npairs, sizeof *wr->added);
        SH_ASSERT(wr->npairs <= CW_WINDOW);     /* one window: its items stay to the end */
    }
    if (wr->order == NULL || wr->items == NULL || (wr->waiters && wr->added == NULL)) {
        coord_op_fail(op, RS_OOM, "out of memory");
        return;
    }
    coord_op_set_note(op, cw_note);
    cw_window_start(op);
}

void coord_write_one(coord_op *op, coord_waiter *w, coord_pair *p)
{
    coord_write *wr = coord_write_new(op, w->kind, p, 1);
    if (wr == NULL) {
        resp_buf_free(&w->saved);
        return;
    }
    wr->q = w->q;
    resp_buf_free(&wr->saved);
    wr->saved = w->saved;
    resp_buf_init(&w->saved, 0);
    coord_write_start(op);
}

/* ---- CHECK / CHECKTEXT: the hand-over from the query ---- */

/* The query answered: its matches are saved, and the pair is written, with the
 * one-pair writes of other requests (merge.c) or alone. */
void coord_check_write(coord_op *op, coord_qstate *s)
{
    coord_waiter w = { .req = coord_op_req(op), .kind = s->check_kind, .q = s->q };
    resp_buf_init(&w.saved, 0);
    coord_query_answer(s, &w.saved);
    coord_pair *p = s->pairs;
    s->pairs = NULL;
    if (coord_merge_add(coord_op_coord(op), &w, p) == 0) {
        free(p);
        coord_op_give_req(op);      /* answered by the merged write */
        coord_op_finish(op);
        return;
    }
    /* the write state replaces s as the op's data (s is freed) */
    coord_write_one(op, &w, p);
}
