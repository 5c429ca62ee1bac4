/* job.h: a request of simhash-shard that waits for Redis (job.c). Internal to the
 * worker.
 *
 * A job holds one slot per Redis command, a deadline, and what its kind needs (a
 * state of its own, freed with the job). Every slot is marked done by exactly one
 * function (job.c's reply callback), on every path: reply, Redis error, connection
 * lost, shutdown. The job answers its client once (first error, deadline, or its
 * kind's done() after the last reply) and is freed when it has answered and no
 * command is outstanding, so a late reply never touches freed memory. What each kind
 * does with replies is its shard_job_ops: one table per kind, no switch.
 *
 * The layout's buckets split: it routes commands through cached directories:
 * a slot names the directory its command went through (dir), its reply goes to
 * layout_dir_reply first, and a job whose reply met a bucket that split ends, after
 * its last reply, by running its request again (rerun, shard_job_rerun in dirs.c). */
#ifndef SIMHASH_SHARD_JOB_H
#define SIMHASH_SHARD_JOB_H

#include <stdint.h>

#include <hiredis/hiredis.h>

#include "shard.h"

typedef struct shard_job shard_job;

typedef struct shard_slot {
    shard_job *job;
    uint32_t idx;          /* the kind's index: position in the reply, match, ... */
    uint32_t table;        /* QUERY: table of the bucket */
    uint64_t bucket;       /* QUERY: bucket number scanned */
    uint8_t qdocs;         /* QUERY ... DOCS: the read of q's own ids */
    uint8_t part;          /* shard_ids: the layout_ids_kind of the read */
    uint32_t dir;          /* the directory the command was routed through
                            * (shard_dir_id): its reply goes to layout_dir_reply; 0
                            * for none, and for a call of the layout's entries, whose
                            * reply names the directories of its items (entries_reply) */
} shard_slot;

typedef struct shard_job_ops {
    /* Folds one reply (never an error reply) of slot s into the kind's state.
     * Returns 0, or -1 with why set (the job answers -REDIS why). */
    int (*absorb)(shard_job *j, const shard_slot *s, redisReply *rep, const char **why);
    /* Every command answered without failure: write the reply into
     * rs_req_out(shard_job_req(j)) and call shard_job_answer, or hand the request
     * on (shard_job_handoff). */
    void (*done)(shard_job *j);
    /* Optional: the job failed (code, text); return 1 when the kind answered the
     * request itself (SHARD.INFO still answers, without counts), 0 for -CODE text. */
    int (*failed)(shard_job *j, rs_req *req);
    /* Optional: frees the state (called with the job). */
    void (*free_state)(void *state);
    /* Optional: slot s met a bucket that split (its command wrote nothing; its
     * directory learnt it): the kind answers that part "try again" itself. Without
     * it the whole request runs again (rerun), which only idempotent writes may. */
    void (*stale)(shard_job *j, const shard_slot *s);
} shard_job_ops;

struct shard_job {
    shard_ctx *sc;
    rs_req *req;           /* NULL once answered or handed on */
    const shard_job_ops *ops;
    void *state;           /* the kind's own */
    unsigned nslots;
    unsigned pending;      /* commands sent and not yet called back */
    shard_slot *slots;
    struct event *deadline;
    int background;        /* not routed by a coordinator (shard_redis_command_background) */
    int stale;             /* a reply met a bucket that split (layout_dir_reply) */
    rs_cmd_fn rerun;       /* runs the request again after stale (NULL: -REDIS error) */
};

/* A new job of n slots answering req, with its deadline (timeout-ms) running.
 * NULL: out of memory (state is not freed; req is not answered). */
shard_job *shard_job_new(shard_ctx *sc, rs_req *req, const shard_job_ops *ops, void *state,
                         unsigned n);
/* Sends slot i's command. On failure the job answers -REDIS (commands already sent
 * still call back). Returns 0 or -1. */
int shard_job_send(shard_job *j, unsigned i, int argc, const char **argv, const size_t *argvlen);
/* Drops the starter's hold: frees j when it has answered and nothing is
 * outstanding. Call once after the last shard_job_send. Returns 1 if freed. */
int shard_job_release(shard_job *j);
/* Answers with an error (once); counts it in errors and *counter. */
void shard_job_fail(shard_job *j, rs_errcode code, unsigned long long *counter, const char *text);
/* The reply is in rs_req_out: send it. */
void shard_job_answer(shard_job *j);
/* Detaches the request (and the state, which the caller now owns) from j, for a
 * next job; j ends. Only before j answered (from done() or a rerun). */
rs_req *shard_job_handoff(shard_job *j);

/* ---- dirs.c: the directories of the split buckets (layout_ops.h) ---- */

/* The id of the directory of (table, shard) in a slot's dir: never 0. The only
 * encoder of an id; shard_dir_table and shard_dir_shard the only decoders. */
static inline uint32_t shard_dir_id(unsigned table, unsigned shard)
{
    return ((uint32_t)table << 8 | (shard & 0xffu)) + 1u;
}

/* The table of directory id (not 0). */
static inline unsigned shard_dir_table(uint32_t id)
{
    return (unsigned)((id - 1u) >> 8);
}

/* The shard (first byte) of directory id (not 0). */
static inline unsigned shard_dir_shard(uint32_t id)
{
    return (unsigned)((id - 1u) & 0xffu);
}

/* Before a request routes reads through the directories ids[0..n): 1 when all are
 * fresh (layout_dir_need); else 0 after starting their
 * loading, after which rerun(req) runs the request again (or req is answered with
 * the error); -1 when req was answered with an error. */
int shard_dirs_ready(rs_req *req, rs_cmd_fn rerun, uint32_t *ids, unsigned n);

/* A job's reply said a bucket split under it: frees the kind's state, and runs the
 * request again with j->rerun once the directories ids[0..n) that need it are read
 * (n 0: at once). j ends. */
void shard_job_rerun(shard_job *j, uint32_t *ids, unsigned n);

/* The repair pass: reads the directories ids[0..n) that need it, in the background.
 * Returns how many were asked for. */
unsigned shard_dirs_refresh(shard_ctx *sc, uint32_t *ids, unsigned n);

/* Writes the reply of a read of document ids (an SMEMBERS array, or the packed ids of
 * a table-0 member as shard_ids_as_packed gives them, or nil) to b as an array of ids sorted bytewise.
 * Returns 0, or -1 with why set. */
int shard_reply_docs(resp_buf *b, const redisReply *rep, const char **why);

/* 1 when such a reply holds no id. */
int shard_reply_docs_empty(const redisReply *rep);
/* A reply to a read of ids of kind `kind` as the reply to HGET it stands for: rep
 * itself, or for LAYOUT_IDS_MEMBER (the ZRANGEBYLEX of the table-0 member) nil
 * or the packed ids it carries, built in *tmp (pointing into rep). NULL when rep is
 * not such a reply. */
const redisReply *shard_ids_as_packed(unsigned kind, const redisReply *rep, redisReply *tmp);

/* The ids of one fingerprint, read with the layout's reads (layout_ops ids_read),
 * pipelined: the ZRANGEBYLEX of its table-0 member and SMEMBERS of its overflow set,
 * which counts when the member carries no ids. Ids only move from the member to the
 * set while the fingerprint has any (docs/protocol.md), so the two reads never miss
 * ids that were there throughout. */
typedef struct shard_ids {
    resp_buf field, set;   /* the ids each reply gave, as a RESP array */
    uint8_t packed;        /* a packed read answered: its ids count, unless ... */
    uint8_t overflow;      /* ... it was "": the set's ids count */
    uint8_t field_empty, set_empty;
} shard_ids;

/* Sends the LAYOUT_IDS_READS reads of fp's ids on slots *slot.. of j (their idx = idx); advances *slot. */
void shard_ids_send(shard_job *j, unsigned *slot, uint32_t idx, uint64_t fp);
void shard_ids_init(shard_ids *x);
void shard_ids_free(shard_ids *x);
/* Folds a reply of slot s into x. Returns 0, or -1 with why set. */
int shard_ids_absorb(shard_ids *x, const shard_slot *s, redisReply *rep, const char **why);
/* Every reply in: moves the ids into out (an array of ids), sets *empty; x is left
 * empty. */
void shard_ids_take(shard_ids *x, resp_buf *out, int *empty);

#endif
