/* info.c: the SHARD.INFO text of simhash-shard (docs/protocol.md): the name:value
 * lines about the worker, its counters, its Redis connection and clients, and the
 * parsing of the Redis node's INFO reply (used memory, role) read with every
 * SHARD.INFO. The command itself, which reads the shards' counter hashes as a job,
 * stays in handlers.c. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "layout.h"
#include "parse.h"
#include "shard.h"

/* The worker's INFO sections in b: Shard (fingerprints / documents of its shards when
 * have_counts >= 0: have_counts 1 with fps and docs, 0 unknown), the counters under
 * stats_title, Redis (and Cluster). */
static void shard_info_text(shard_ctx *sc, resp_buf *b, int have_counts, long long fps,
                            long long docs, const char *stats_title)
{
    shard_redis_stats rst;
    shard_redis_get_stats(sc->redis, &rst);
    resp_buf_printf(b, "# Shard\r\nshards:%u-%u\r\nblocks:%u\r\ndistance:%u\r\n"
                    "layout:%u\r\ncorpus:%s\r\ntables:%u\r\nversion:%s\r\n",
                    sc->cfg.lo, sc->cfg.hi, sc->cfg.blocks, sc->cfg.distance,
                    sc->cfg.layout, layout_corpus(), sc->ps.ntables,
                    SIMHASH_VERSION);
    shard_registry_info(sc, b);
    if (have_counts > 0)
        resp_buf_printf(b, "fingerprints:%lld\r\ndocuments:%lld\r\n", fps, docs);
    else if (have_counts == 0)
        resp_buf_printf(b, "fingerprints:unknown\r\ndocuments:unknown\r\n");
    {
        layout_dir_stats ds;
        layout_dir_stats_get(&sc->lay, &ds);
        resp_buf_printf(b, "split_limit:%u\r\ntombstone_seconds:%u\r\nbucket_splits:%llu\r\n"
                        "buckets_cached:%llu\r\ndirectories_cached:%llu\r\n"
                        "directory_loads:%llu\r\nbuckets_met_split:%llu\r\n"
                        "largest_bucket_read:%llu\r\nscripts_not_cached:%llu\r\n",
                        sc->lay.split_limit, sc->lay.tombstone_s, ds.splits, ds.buckets,
                        ds.shards, ds.loads, ds.stale, ds.largest, rst.noscripts);
    }
    resp_buf_printf(b, "# %s\r\n", stats_title);
#define SHARD_STAT_LINE_(f, n) resp_buf_printf(b, "%s:%llu\r\n", n, sc->st.f);
    SHARD_STATS(SHARD_STAT_LINE_)
#undef SHARD_STAT_LINE_
    /* the node it is attached to: in cluster mode as the cluster names it (it
     * changes after a reattach), else as configured */
    char addr[300];
    const char *node = shard_redis_cluster_mode(sc->redis) ? shard_redis_node(sc->redis) : "";
    if (node[0])
        snprintf(addr, sizeof addr, "%s", node);
    else
        snprintf(addr, sizeof addr, "%s:%u", sc->cfg.redis_host, sc->cfg.redis_port);
    resp_buf_printf(b, "# Redis\r\nredis:%s\r\nredis_addr:%s\r\nredis_db:%u\r\n"
                    "redis_reconnects:%llu\r\nredis_connect_failures:%llu\r\n"
                    "redis_inflight:%u\r\nredis_max_inflight:%u\r\nredis_commands:%llu\r\n"
                    "redis_last_error:%s\r\n",
                    shard_redis_state_name(shard_redis_get_state(sc->redis)),
                    addr, sc->cfg.redis_db,
                    rst.reconnects, rst.connect_failures, rst.inflight,
                    sc->cfg.max_inflight_redis, rst.commands, rst.last_error);
    if (sc->redis_used_memory >= 0)
        resp_buf_printf(b, "redis_used_memory:%lld\r\n", sc->redis_used_memory);
    else
        resp_buf_printf(b, "redis_used_memory:unknown\r\n");
    resp_buf_printf(b, "redis_role:%s\r\n", sc->redis_role == 1 ? "master"
                    : sc->redis_role == 0 ? "replica" : "unknown");
    shard_redis_cluster_info(sc->redis, b);
}

/* Answers a SHARD.INFO request: name:value lines about this worker and its Redis
 * connection; fingerprints / documents of its shards when have_counts. */
void shard_info_reply(rs_req *req, int have_counts, long long fps, long long docs)
{
    shard_ctx *sc = rs_req_ctx(req);
    resp_buf b;
    resp_buf_init(&b, 1 << 16);
    shard_info_text(sc, &b, have_counts != 0, fps, docs, "Stats");
    resp_buf_printf(&b, "# Clients\r\n");
    if (sc->srv)
        rs_info_clients(sc->srv, &b);
    resp_add_bulk(rs_req_out(req), b.data, b.len);
    resp_buf_free(&b);
    rs_req_finish(req);
}

/* The worker's own sections of INFO (rs_options.info): as SHARD.INFO without the
 * corpus counts (they need a round to Redis) and with the counters under "Worker". */
void shard_info_sections(void *ctx, resp_buf *b)
{
    shard_info_text(ctx, b, -1, 0, 0, "Worker");
}

/* Reply of the INFO sent with every SHARD.INFO: keeps used_memory and the role of
 * the Redis node (-1: unknown when the reply is missing or malformed). */
void shard_on_redis_info(void *priv, redisReply *reply, const char *err)
{
    shard_ctx *sc = priv;
    char v[32];
    (void)err;
    sc->redis_used_memory = -1;
    sc->redis_role = -1;
    if (reply == NULL || reply->type != REDIS_REPLY_STRING)
        return;
    uint64_t x;
    const char *why;
    if (parse_info_str(reply->str, reply->len, "used_memory", v, sizeof v) == 0 &&
        parse_u64(v, strlen(v), &x, &why) == 0 && x < (uint64_t)INT64_MAX)
        sc->redis_used_memory = (long long)x;
    if (parse_info_str(reply->str, reply->len, "role", v, sizeof v) == 0)
        sc->redis_role = strcmp(v, "master") == 0 ? 1 : strcmp(v, "slave") == 0 ? 0 : -1;
}

void shard_metrics(void *ctx, resp_buf *b)
{
    shard_ctx *sc = ctx;
    shard_redis_stats rst;
    shard_redis_get_stats(sc->redis, &rst);

#define SHARD_STAT_PROM_(f, name)                                                          \
    rs_prom_family(b, "simhash_shard_" name "_total", "counter",                          \
                   "SHARD.INFO counter " name " (docs/shard.md).");                         \
    resp_buf_printf(b, "simhash_shard_" name "_total %llu\n", sc->st.f);
    SHARD_STATS(SHARD_STAT_PROM_)
#undef SHARD_STAT_PROM_
    rs_prom_family(b, "simhash_redis_up", "gauge", "1 while the connection to Redis is ready.");
    resp_buf_printf(b, "simhash_redis_up %d\n",
                    shard_redis_get_state(sc->redis) == SHARD_REDIS_READY);
    rs_prom_family(b, "simhash_redis_inflight_commands", "gauge",
                   "Redis commands sent and not answered yet.");
    resp_buf_printf(b, "simhash_redis_inflight_commands %u\n", rst.inflight);
    rs_prom_family(b, "simhash_redis_commands_total", "counter", "Redis commands sent.");
    resp_buf_printf(b, "simhash_redis_commands_total %llu\n", rst.commands);
    rs_prom_family(b, "simhash_redis_reconnects_total", "counter",
                   "Connections to Redis made after the first.");
    resp_buf_printf(b, "simhash_redis_reconnects_total %llu\n", rst.reconnects);
    rs_prom_family(b, "simhash_redis_connect_failures_total", "counter",
                   "Failed attempts to connect to Redis.");
    resp_buf_printf(b, "simhash_redis_connect_failures_total %llu\n", rst.connect_failures);
    rs_prom_family(b, "simhash_redis_round_trip_seconds", "histogram",
                   "Time from sending a Redis command to its reply (one Redis round).");
    rs_hist_prom(shard_redis_rtt(sc->redis), b, "simhash_redis_round_trip_seconds", "");
}
