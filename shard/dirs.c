/* dirs.c: the worker's side of the split buckets (docs/elastic-buckets.md). The layout routes keys through directories it caches
 * (layout_ops.h, layout_dir_*); the worker
 *   - reads the directories a request routes through before it builds the request's
 *     commands, when they were never read or are older than a third of the tombstone
 *     lifetime (shard_dirs_ready: a job of ZRANGEs, then the request runs again);
 *   - runs a request again when one of its replies says a bucket split under it
 *     (job.c hands every reply of a routed slot to layout_dir_reply; the job then ends
 *     with shard_job_rerun): reads and table writes are idempotent, and a write
 *     script that met a split wrote nothing;
 *   - in the repair pass, reads stale directories in the background.
 * Layouts 1 and 2 have no directory: shard_dirs_ready answers 1 at once. */
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "log.h"
#include "shard.h"

static int shard_dir_id_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Keeps in ids[0..n) those that need reading, each once; returns how many. */
static unsigned shard_dirs_needed(const shard_ctx *sc, uint32_t *ids, unsigned n)
{
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++)
        if (ids[i] != 0 && layout_dir_need(&sc->lay, shard_dir_table(ids[i]), shard_dir_shard(ids[i])))
            ids[k++] = ids[i];
    if (k > 1)
        qsort(ids, k, sizeof *ids, shard_dir_id_cmp);
    unsigned m = 0;
    for (unsigned i = 0; i < k; i++)
        if (m == 0 || ids[i] != ids[m - 1])
            ids[m++] = ids[i];
    return m;
}

/* The loading job: one ZRANGE per directory (slot idx = its id). */
typedef struct shard_dirload {
    rs_cmd_fn rerun;
    uint64_t sent_ms;           /* when the reads went out: the directories' age */
} shard_dirload;

static int shard_dirload_absorb(shard_job *j, const shard_slot *s, redisReply *rep,
                                const char **why)
{
    const shard_dirload *d = j->state;
    if (layout_dir_load(&j->sc->lay, shard_dir_table(s->idx), shard_dir_shard(s->idx), rep,
                        d->sent_ms) != 0) {
        *why = "unexpected reply to a read of a bucket directory";
        return -1;
    }
    return 0;
}

static void shard_dirload_done(shard_job *j)
{
    shard_dirload *d = j->state;
    rs_cmd_fn rerun = d->rerun;
    rs_req *req = shard_job_handoff(j);
    free(d);
    rerun(req);
}

static const shard_job_ops shard_dirload_ops = {shard_dirload_absorb, shard_dirload_done, NULL,
                                                free, NULL};

/* Sends the reads of ids[0..n) (all needed) on a new job; then rerun(req). Returns 0,
 * or -1 with req answered. */
static int shard_dirs_load(rs_req *req, rs_cmd_fn rerun, const uint32_t *ids, unsigned n)
{
    shard_ctx *sc = rs_req_ctx(req);
    if (shard_check_redis(req, n) != 0)
        return -1;
    shard_dirload *d = calloc(1, sizeof *d);
    shard_job *j = d ? shard_job_new(sc, req, &shard_dirload_ops, d, n) : NULL;
    if (j == NULL) {
        free(d);
        shard_oom(req);
        return -1;
    }
    d->rerun = rerun;
    d->sent_ms = layout_dir_clock();
    for (unsigned i = 0; i < n && j->req; i++) {
        layout_cmd c;
        layout_dir_read(&sc->lay, shard_dir_table(ids[i]), shard_dir_shard(ids[i]), &c);
        j->slots[i].idx = ids[i];
        shard_job_send(j, i, c.argc, c.argv, c.argvlen);
    }
    shard_job_release(j);
    return 0;
}

int shard_dirs_ready(rs_req *req, rs_cmd_fn rerun, uint32_t *ids, unsigned n)
{
    shard_ctx *sc = rs_req_ctx(req);
    unsigned m = shard_dirs_needed(sc, ids, n);
    if (m == 0)
        return 1;
    return shard_dirs_load(req, rerun, ids, m) == 0 ? 0 : -1;
}

void shard_job_rerun(shard_job *j, uint32_t *ids, unsigned n)
{
    shard_ctx *sc = j->sc;
    if (j->rerun == NULL) {
        shard_job_fail(j, RS_REDIS, &sc->st.redis_err, "a bucket split under the request; retry");
        return;
    }
    rs_cmd_fn rerun = j->rerun;
    void *state = j->state;
    rs_req *req = shard_job_handoff(j);
    if (state && j->ops->free_state)
        j->ops->free_state(state);
    sc->st.reruns++;
    if (shard_dirs_ready(req, rerun, ids, n) == 1)
        rerun(req);
}

/* ---- The repair pass's reads ---- */

typedef struct shard_dirbg {
    shard_ctx *sc;
    uint32_t id;
    uint64_t sent_ms;
} shard_dirbg;

static void shard_dirbg_on_reply(void *priv, redisReply *reply, const char *err)
{
    shard_dirbg *b = priv;
    if (reply == NULL || layout_dir_load(&b->sc->lay, shard_dir_table(b->id), shard_dir_shard(b->id),
                                         reply, b->sent_ms) != 0)
        log_warn_rl("repair: reading a bucket directory failed: %s",
                    reply == NULL ? (err ? err : "no reply")
                    : reply->type == REDIS_REPLY_ERROR ? reply->str : "unexpected reply");
    free(b);
}

unsigned shard_dirs_refresh(shard_ctx *sc, uint32_t *ids, unsigned n)
{
    unsigned m = shard_dirs_needed(sc, ids, n), sent = 0;
    for (unsigned i = 0; i < m; i++) {
        shard_dirbg *b = malloc(sizeof *b);
        layout_cmd c;
        if (b == NULL)
            break;
        b->sc = sc;
        b->id = ids[i];
        b->sent_ms = layout_dir_clock();
        layout_dir_read(&sc->lay, shard_dir_table(ids[i]), shard_dir_shard(ids[i]), &c);
        if (shard_redis_command_background(sc->redis, shard_dirbg_on_reply, b, c.argc, c.argv,
                                           c.argvlen) != 0) {
            free(b);
            break;
        }
        sent++;
    }
    return sent;
}
