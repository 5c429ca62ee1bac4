/* info.c: SIMHASH.FINGERPRINT, SIMHASH.EXTRACT and SIMHASH.INFO of simhash-coordinator
 * (see docs/protocol.md): the fingerprint of a text computed locally, the text it is
 * taken from, and the INFO text that sums up the coordinator, its limits, its
 * counters, the corpus counts known from the workers, the Redis nodes' memory and each
 * worker's state. None of them sends a request to the workers; the command table is
 * cmdtable.c. */
#include "coord.h"

#include <stdio.h>
#include <unistd.h>

#include "fingerprint.h"
#include "layout.h"

/* SIMHASH.FINGERPRINT text [FORMAT text|html]: the fingerprint, computed here with
 * the corpus's algorithm (fingerprint-algorithm). */
/* FINGERPRINT once its text is fingerprinted (textfp.c): the answer. */
static void coord_fingerprint_then(rs_req *r, uint64_t fp, unsigned unused)
{
    (void)unused;
    resp_add_bulk_u64(rs_req_out(r), fp);
    rs_req_finish(r);
}

void coord_cmd_fingerprint(rs_req *r)
{
    coord *co = rs_req_ctx(r);
    coord_qopts qo;
    if (coord_query_options(co, r, 2, COORD_OPT_FORMAT, &qo) != 0)
        return;
    coord_textfp(co, r, 1, qo.html, coord_fingerprint_then, 0);
}

/* SIMHASH.EXTRACT once the text is extracted (textfp.c): a map (RESP3; a flat array
 * of field, value pairs in RESP2, as Redis's own HELLO and COMMAND DOCS) of the
 * fingerprint, the algorithm, the rule and the text. */
static void coord_extract_then(rs_req *r, const fp_extraction *x)
{
    coord *co = rs_req_ctx(r);
    resp_buf *b = rs_req_out(r);
    resp_add_map(b, 4);
    resp_add_bulk_str(b, "fingerprint");
    resp_add_bulk_u64(b, x->fp);
    resp_add_bulk_str(b, "algorithm");
    resp_add_bulk_str(b, co->cfg.fp_spec);
    resp_add_bulk_str(b, "rule");
    resp_add_bulk_str(b, x->rule);
    resp_add_bulk_str(b, "text");
    resp_add_bulk(b, x->text, x->len);
    rs_req_finish(r);
}

/* SIMHASH.EXTRACT text [FORMAT text|html|html-all]: FINGERPRINT's arguments. */
void coord_cmd_extract(rs_req *r)
{
    coord *co = rs_req_ctx(r);
    coord_qopts qo;
    if (coord_query_options(co, r, 2, COORD_OPT_FORMAT, &qo) != 0)
        return;
    coord_textx(co, r, 1, qo.html, coord_extract_then);
}

/* The split buckets: the workers' split counts and cached
 * buckets summed, the largest bucket any of them read; nothing when none reports them. */
static void coord_info_buckets(const coord *co, resp_buf *b)
{
    long long splits = 0, buckets = 0, largest = 0;
    int any = 0;
    for (size_t i = 0; i < co->nw; i++) {
        const coord_worker *w = &co->w[i];
        if (w->health == W_GONE || w->bucket_splits < 0)
            continue;
        any = 1;
        splits += w->bucket_splits;
        buckets += w->buckets_cached > 0 ? w->buckets_cached : 0;
        largest = w->largest_bucket > largest ? w->largest_bucket : largest;
    }
    if (any)
        resp_buf_printf(b, "bucket_splits:%lld\r\nbuckets_cached:%lld\r\n"
                        "largest_bucket_read:%lld\r\n", splits, buckets, largest);
}

/* The coordinator's sections in b: Corpus, Limits, the counters under stats_title,
 * Workers, and with keyspace a Redis-style Keyspace line (db0:keys=fingerprints). */
static void coord_info_text(coord *co, resp_buf *b, const char *stats_title, int keyspace)
{
    long long fps, docs;

    coord_corpus_counts(co, &fps, &docs);
    resp_buf_printf(b, "\r\n# Corpus\r\ncorpus:%s\r\nblocks:%u\r\ndistance:%u\r\ntables:%u\r\n"
                    "fingerprint_algorithm:%s\r\n",
                    co->cfg.corpus ? co->cfg.corpus : "", co->cfg.blocks, co->cfg.distance,
                    co->ps.ntables, co->cfg.fp_spec[0] ? co->cfg.fp_spec : "unknown");
    if (co->layout)
        resp_buf_printf(b, "layout:%u\r\n", co->layout);
    else
        resp_buf_printf(b, "layout:unknown\r\n");
    if (fps >= 0)
        resp_buf_printf(b, "fingerprints:%lld\r\n", fps);
    else
        resp_buf_printf(b, "fingerprints:unknown\r\n");
    if (docs >= 0)
        resp_buf_printf(b, "documents:%lld\r\n", docs);
    else
        resp_buf_printf(b, "documents:unknown\r\n");
    coord_info_buckets(co, b);
    /* the Redis nodes behind the workers, each counted once (replicas left out) */
    long long mem = coord_redis_used_memory(co);
    if (mem >= 0)
        resp_buf_printf(b, "redis_used_memory:%lld\r\nredis_used_memory_human:%.2fM\r\n", mem,
                        (double)mem / (1024.0 * 1024.0));
    else
        resp_buf_printf(b, "redis_used_memory:unknown\r\nredis_used_memory_human:unknown\r\n");
    /* everything on the nodes counted (other corpora on them too, docs/capacity.md) */
    if (mem >= 0 && fps > 0)
        resp_buf_printf(b, "bytes_per_fingerprint:%.1f\r\n", (double)mem / (double)fps);
    else
        resp_buf_printf(b, "bytes_per_fingerprint:unknown\r\n");
    /* every configured limit, then each worker's requests in flight against its cap */
    resp_buf_printf(b, "\r\n# Limits\r\ntimeout_ms:%u\r\nmax_inflight_worker:%u\r\n"
                    "max_clients:%u\r\nmax_pending:%u\r\nmax_args:%u\r\nmax_arg_bytes:%zu\r\n"
                    "max_request_bytes:%zu\r\nmax_reply_bytes:%zu\r\nout_high_watermark:%zu\r\n"
                    "max_per_event:%u\r\nmax_inline_bytes:%u\r\nreconnect_max_ms:%u\r\n"
                    "health_interval_ms:%u\r\nauth_required:%s\r\n",
                    co->cfg.timeout_ms, co->cfg.max_inflight_worker, co->cfg.limits.max_clients,
                    co->cfg.limits.max_pending, co->cfg.limits.max_args,
                    co->cfg.limits.max_arg_bytes, co->cfg.limits.max_req_bytes,
                    co->cfg.limits.max_reply_bytes, co->cfg.limits.out_high_watermark,
                    co->cfg.limits.max_per_event, (unsigned)co->cfg.limits.max_inline_bytes,
                    co->cfg.reconnect_max_ms,
                    co->cfg.health_interval_ms,
                    (co->cfg.password && co->cfg.password[0]) ||
                    (co->cfg.limits.aclfile && co->cfg.limits.aclfile[0]) ? "yes" : "no");
    for (size_t i = 0; i < co->nw; i++)
        if (co->w[i].health != W_GONE)
            resp_buf_printf(b, "worker%zu_inflight:%u\r\nworker%zu_inflight_max:%u\r\n", i,
                            co->w[i].inflight, i, co->cfg.max_inflight_worker);
    resp_buf_printf(b, "\r\n# %s\r\n", stats_title);
#define COORD_STAT_PRINT_(f, name) resp_buf_printf(b, name ":%llu\r\n", co->st.f);
    COORD_STATS(COORD_STAT_PRINT_)
#undef COORD_STAT_PRINT_
    coord_textfp_info(co, b);
    resp_buf_printf(b, "\r\n# Workers\r\n");
    coord_workers_info(co, b);
    if (keyspace && fps >= 0)
        resp_buf_printf(b, "\r\n# Keyspace\r\ndb0:keys=%lld,expires=0,avg_ttl=0\r\n", fps);
}

/* SIMHASH.INFO: the coordinator's INFO text (server, clients, corpus, limits,
 * stats, workers) as one bulk string, once every worker that is up has answered a
 * fresh SHARD.INFO (so the corpus counts include every write acknowledged before).
 * Best effort: a worker that fails or does not answer within timeout-ms keeps its
 * last known counts, and INFO still answers. */
static void coord_info_answer(coord_op *op)
{
    coord *co = coord_op_coord(op);
    rs_req *r = coord_op_req(op);
    resp_buf b;

    resp_buf_init(&b, 0);
    resp_buf_printf(&b, "# Server\r\nsimhash_version:%s\r\nprocess_id:%ld\r\ntcp_port:%u\r\n"
                    "uptime_in_seconds:%lld\r\n",
                    SIMHASH_VERSION, (long)getpid(), rs_port(co->srv),
                    (long long)((ra_now_us() / 1000000) - co->start_time));
    resp_buf_printf(&b, "\r\n# Clients\r\n");
    rs_info_clients(co->srv, &b);
    coord_info_text(co, &b, "Stats", 0);
    resp_add_bulk(rs_req_out(r), b.data, b.len);
    resp_buf_free(&b);
    coord_op_finish(op);
}

static int coord_info_on_worker(coord_op *op, coord_worker *w, redisReply *r, void *arg)
{
    (void)op;
    (void)arg;
    coord_worker_take_info(w, r);
    return 0;
}

void coord_cmd_info(rs_req *r)
{
    coord *co = rs_req_ctx(r);
    coord_op *op = coord_op_new(co, r);
    if (op == NULL)
        return;
    coord_op_set_tolerant(op);
    static const char *argv[1] = {"SHARD.INFO"};
    static const size_t lens[1] = {10};
    for (size_t i = 0; i < co->nw; i++) {
        coord_worker *w = &co->w[i];
        if (w->health != W_UP || w->inflight >= co->cfg.max_inflight_worker)
            continue;               /* down or busy: its last known counts are shown */
        if (coord_op_send(op, w, 1, argv, lens, coord_info_on_worker, NULL) != 0)
            return;
    }
    coord_op_round_end(op, coord_info_answer);
}

void coord_info_sections(void *ctx, resp_buf *b)
{
    coord_info_text(ctx, b, "Coordinator", 1);
}

void coord_metrics(void *ctx, resp_buf *b)
{
    coord *co = ctx;
    long long fps, docs;

#define COORD_STAT_PROM_(f, name)                                                          \
    rs_prom_family(b, "simhash_coordinator_" name "_total", "counter",                    \
                   "SIMHASH.INFO counter " name " (docs/protocol.md).");                   \
    resp_buf_printf(b, "simhash_coordinator_" name "_total %llu\n", co->st.f);
    COORD_STATS(COORD_STAT_PROM_)
#undef COORD_STAT_PROM_
    static const struct {
        const char *name, *type, *help;
    } fams[] = {
        { "simhash_worker_up", "gauge",
          "1 while the shard worker is connected and healthy, by worker address." },
        { "simhash_worker_inflight_requests", "gauge",
          "Requests sent to the worker and not answered yet." },
        { "simhash_worker_requests_total", "counter", "Requests sent to the worker." },
        { "simhash_worker_errors_total", "counter",
          "Worker requests that failed (error reply, lost connection)." },
        { "simhash_worker_timeouts_total", "counter", "Worker requests past their deadline." },
        { "simhash_worker_connects_total", "counter",
          "Connections made to the worker (the first and every reconnect)." },
    };
    for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
        rs_prom_family(b, fams[f].name, fams[f].type, fams[f].help);
        for (size_t i = 0; i < co->nw; i++) {
            const coord_worker *w = &co->w[i];
            if (w->health == W_GONE)
                continue;
            unsigned long long v[] = { w->health == W_UP, w->inflight, w->requests, w->errors,
                                       w->timeouts, w->connects };
            resp_buf_printf(b, "%s{worker=\"%s\"} %llu\n", fams[f].name, w->addr, v[f]);
        }
    }
    rs_prom_family(b, "simhash_routing_complete", "gauge",
                   "1 when every first-byte shard has a worker that is up.");
    resp_buf_printf(b, "simhash_routing_complete %d\n", co->routing_ok);
    coord_corpus_counts(co, &fps, &docs);
    if (fps >= 0) {
        rs_prom_family(b, "simhash_corpus_fingerprints", "gauge",
                       "Fingerprints in the corpus (the workers' counts, once a second).");
        resp_buf_printf(b, "simhash_corpus_fingerprints %lld\n", fps);
    }
    if (docs >= 0) {
        rs_prom_family(b, "simhash_corpus_documents", "gauge",
                       "(fingerprint, document) pairs in the corpus.");
        resp_buf_printf(b, "simhash_corpus_documents %lld\n", docs);
    }
}
