/* main.c: simhash-shard, the worker beside one Redis node. Loads the configuration,
 * checks the corpus settings stored in Redis (simhash:meta), then serves the SHARD.*
 * commands of docs/protocol.md on the RESP server framework until SIGTERM/SIGINT. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cluster.h"
#include "config.h"
#include "fingerprint.h"
#include "layout.h"
#include "log.h"
#include "perm.h"
#include "rs_config.h"
#include "shard.h"

/* The options of this program: shard_config (shared with the handlers) plus the
 * cluster options, which only main.c and redis.c use. */
typedef struct shard_main_config {
    shard_config c;
    int cluster;
    char *redis_announce;
    char *password;
} shard_main_config;

#define SHARD_OPT(name, type, field, min, max, def, help) \
    {name, type, offsetof(shard_main_config, c.field), min, max, def, 0, help}
#define SHARD_OPT_MAIN(name, type, field, min, max, def, help) \
    {name, type, offsetof(shard_main_config, field), min, max, def, 0, help}

static const cfg_option shard_options[] = {
    SHARD_OPT("bind", CFG_STR, bind, 0, 0, "127.0.0.1", "address to listen on"),
    SHARD_OPT("port", CFG_UINT, port, 0, 65535, "7100",
              "port to listen on (0: any free port; none beside a tls-port)"),
    SHARD_OPT_MAIN("password-file", CFG_SECRET, password, 0, 0, NULL,
                   "file whose first line is the password clients (the coordinator: its "
                   "worker-password-file) must AUTH with"),
    SHARD_OPT("redis-host", CFG_STR, redis_host, 0, 0, "127.0.0.1", "Redis node address"),
    SHARD_OPT("redis-port", CFG_UINT, redis_port, 1, 65535, "6379", "Redis node port"),
    SHARD_OPT("redis-password-file", CFG_SECRET, redis_password, 0, 0, NULL,
              "file whose first line is the Redis password (AUTH)"),
    SHARD_OPT("redis-user", CFG_STR, redis_user, 0, 0, NULL,
              "Redis ACL user: AUTH user password (needs redis-password-file)"),
    SHARD_OPT("redis-db", CFG_UINT, redis_db, 0, 65535, "0", "Redis database number (SELECT)"),
    SHARD_OPT("shards", CFG_STR, shards, 0, 0, "0-255",
              "first-byte range LO-HI of permuted fingerprints this worker serves"),
    SHARD_OPT("blocks", CFG_UINT, blocks, 1, 64, "6", "blocks of the permutation tables"),
    SHARD_OPT("distance", CFG_UINT, distance, 0, 63, "3", "largest Hamming distance searched"),
    SHARD_OPT("layout", CFG_UINT, layout, 0, LAYOUT_VERSION, "0",
              "storage format: 4, the only one this build reads and writes (docs/protocol.md); "
              "0: the same. A Redis holding a corpus of another is refused at start"),
    SHARD_OPT("split-limit", CFG_UINT, split_limit, 0, LAYOUT_SPLIT_LIMIT_MAX, "0",
              "a bucket splits when it holds this many entries, at most the "
              "limit read from the Redis node (min(256, zset-/hash-max-listpack-entries)); "
              "it can only lower it (tests: a few entries force many splits); 0: the node's"),
    SHARD_OPT("tombstone-seconds", CFG_UINT, tombstone_s, 0, LAYOUT_TOMBSTONE_S_MAX, "0",
              "seconds a split bucket's old name stays a tombstone, for a new "
              "corpus (recorded in simhash:meta; readers re-read a directory older than a "
              "third of it, and timeout-ms must be at most that third); 0: the corpus's, "
              "and for a new corpus 120"),
    SHARD_OPT("corpus", CFG_STR, corpus, 0, 0, NULL,
              "corpus name: every Redis key starts with NAME: so several corpora share "
              "Redis nodes (letters, digits, _ . -; at most 32); unset: the keys of a "
              "corpus without a name"),
    SHARD_OPT("fingerprint-algorithm", CFG_STR, fingerprint_algorithm, 0, 0, NULL,
              "fingerprint algorithm of the corpus (v5, v1 or v1:W; docs/fingerprint.md), "
              "recorded in simhash:meta: a corpus never mixes two; unset: the corpus's (a "
              "new corpus gets v5; a corpus of the removed v2, v3, v4 is refused)"),
    SHARD_OPT("pidfile", CFG_STR, pidfile, 0, 0, NULL, "write the process id here"),
    SHARD_OPT("logfile", CFG_STR, logfile, 0, 0, NULL, "log here instead of stderr"),
    SHARD_OPT("loglevel", CFG_LOGLEVEL, loglevel, 0, 0, "info",
              "debug, info, warning, error (SIGHUP reloads it)"),
    SHARD_OPT("syslog", CFG_BOOL, syslog, 0, 0, "no",
              "also send every log message to syslog (facility daemon)"),
    SHARD_OPT("max-inflight-redis", CFG_UINT, max_inflight_redis, 1, 1000000, "100000",
              "Redis commands outstanding at once; past it requests get -BUSY"),
    SHARD_OPT("timeout-ms", CFG_UINT, timeout_ms, 10, 600000, "1000",
              "deadline of one request; past it the reply is -REDIS timeout"),
    SHARD_OPT("wait-replicas", CFG_UINT, wait_replicas, 0, 64, "0",
              "SHARD.WAIT: replicas that must acknowledge writes (Redis WAIT); 0: rely on "
              "appendfsync always"),
    SHARD_OPT("wait-timeout-ms", CFG_UINT, wait_timeout_ms, 1, 600000, "100",
              "SHARD.WAIT: how long Redis WAIT waits for the replicas"),
    SHARD_OPT("max-inflight-client", CFG_UINT, limits.max_inflight_client, 1, 1000000, "100000",
              "requests of one client (a coordinator) running at once"),
    SHARD_OPT("timeout", CFG_UINT, limits.idle_timeout_s, 0, 31536000, "0",
              "seconds a client may stay idle before it is disconnected (0: never; the "
              "coordinators keep their connections)"),
    SHARD_OPT("metrics-port", CFG_UINT, metrics_port, 0, 65535, "0",
              "port of the Prometheus endpoint GET /metrics (HTTP; 0: none)"),
    SHARD_OPT("metrics-bind", CFG_STR, metrics_bind, 0, 0, "127.0.0.1",
              "address the metrics endpoint listens on"),
    SHARD_OPT("repair-interval-ms", CFG_UINT, repair_interval_ms, 0, 600000, "1000",
              "how often stale write locks are looked for and their writes completed or "
              "rolled back (0: never; then only writers and simhash fsck repair)"),
    SHARD_OPT("announce-addr", CFG_STR, announce_addr, 0, 0, NULL,
              "HOST:PORT coordinators reach this worker at, kept in the corpus's worker "
              "registry (default: bind:port when bind names one address)"),
    SHARD_OPT("announce-interval-ms", CFG_UINT, announce_interval_ms, 0, 600000, "1000",
              "how often the registry entry is renewed (0: the worker does not register; "
              "coordinators then only know it from their worker lines)"),
    SHARD_OPT("announce-ttl-ms", CFG_UINT, announce_ttl_ms, 100, 3600000, "5000",
              "a registry entry not renewed for this long expires (a worker that died)"),
    SHARD_OPT("shutdown-drain-ms", CFG_UINT, drain_ms, 0, 600000, "0",
              "on SIGTERM: leave the registry, then keep serving this long so coordinators "
              "move away first (about 2x their discover-interval-ms)"),
    SHARD_OPT_MAIN("cluster", CFG_BOOL, cluster, 0, 0, "no",
                   "yes: the Redis node is a Redis Cluster node; serve every shard, follow "
                   "-MOVED/-ASK, reattach to the new master after a failover (shards is ignored)"),
    SHARD_OPT_MAIN("redis-announce", CFG_STR, redis_announce, 0, 0, NULL,
                   "cluster: HOST:PORT of the node as the cluster names it (default: learned "
                   "from CLUSTER NODES)"),
};

/* Parses "LO-HI" (decimal, 0 <= LO <= HI <= 255). Returns 0 or -1. */
static int shard_parse_range(const char *s, unsigned *lo, unsigned *hi)
{
    char *end;
    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    unsigned long a = strtoul(s, &end, 10);
    if (*end != '-' || end[1] < '0' || end[1] > '9')
        return -1;
    unsigned long b = strtoul(end + 1, &end, 10);
    if (*end != '\0' || a > b || b > 255)
        return -1;
    *lo = (unsigned)a;
    *hi = (unsigned)b;
    return 0;
}

/* A read routed through a directory a third of the tombstone lifetime old must reach
 * Redis before the tombstones it may name expire (docs/elastic-buckets.md, "The
 * assumption"): timeout-ms at most that third. Returns 0, or -1 with err set. */
static int shard_timeout_check(const shard_config *c, char *err, size_t errlen)
{
    if (c->tombstone_s == 0 || (uint64_t)c->timeout_ms * 3u <= (uint64_t)c->tombstone_s * 1000u)
        return 0;
    snprintf(err, errlen, "timeout-ms %u is above a third of the corpus's tombstone lifetime "
             "(%u s): a read could name a bucket whose tombstone expired; lower timeout-ms "
             "to at most %u", c->timeout_ms, c->tombstone_s, c->tombstone_s * 1000u / 3u);
    return -1;
}

/* Cross-option checks; returns 0, or -1 with a message in err. */
static int shard_validate(void *obj, char *err, size_t errlen)
{
    shard_main_config *mc = obj;
    shard_config *c = &mc->c;
    if (shard_parse_range(c->shards, &c->lo, &c->hi) != 0) {
        snprintf(err, errlen, "shards '%s': expected LO-HI with 0 <= LO <= HI <= 255",
                 c->shards ? c->shards : "");
        return -1;
    }
    if (mc->cluster) {
        cluster_node n;
        c->lo = 0;      /* every shard: the cluster's slot map decides what is local */
        c->hi = 255;
        if (c->redis_db != 0) {
            snprintf(err, errlen, "redis-db %u: a Redis Cluster node has database 0 only",
                     c->redis_db);
            return -1;
        }
        if (mc->redis_announce && mc->redis_announce[0] &&
            cluster_parse_addr(mc->redis_announce, strlen(mc->redis_announce), &n) != 0) {
            snprintf(err, errlen, "redis-announce '%s': expected HOST:PORT", mc->redis_announce);
            return -1;
        }
    }
    if (c->split_limit == 1) {
        snprintf(err, errlen, "split-limit 1: a bucket needs room for two entries to split "
                 "(2..%d, or 0: the node's)", LAYOUT_SPLIT_LIMIT_MAX);
        return -1;
    }
    if (c->tombstone_s != 0 && c->tombstone_s < LAYOUT_TOMBSTONE_S_MIN) {
        snprintf(err, errlen, "tombstone-seconds %u: at least %d (or 0: the corpus's)",
                 c->tombstone_s, LAYOUT_TOMBSTONE_S_MIN);
        return -1;
    }
    if (shard_timeout_check(c, err, errlen) != 0)
        return -1;
    /* a WAIT outstanding past timeout-ms fails the write with -REDIS timeout while
     * Redis is still waiting for the replicas (and looks like a stalled Redis) */
    if (c->wait_replicas > 0 && c->wait_timeout_ms >= c->timeout_ms) {
        snprintf(err, errlen, "wait-timeout-ms %u must be below timeout-ms %u when "
                 "wait-replicas is %u (a Redis WAIT outstanding past timeout-ms fails the "
                 "write)", c->wait_timeout_ms, c->timeout_ms, c->wait_replicas);
        return -1;
    }
    if (c->redis_user && c->redis_user[0] && !(c->redis_password && c->redis_password[0])) {
        snprintf(err, errlen, "redis-user '%s' needs redis-password-file", c->redis_user);
        return -1;
    }
    if (c->announce_addr && c->announce_addr[0]) {
        cluster_node an;
        if (strlen(c->announce_addr) >= LAYOUT_REGISTRY_ADDR_MAX ||
            cluster_parse_addr(c->announce_addr, strlen(c->announce_addr), &an) != 0) {
            snprintf(err, errlen, "announce-addr '%.60s': expected HOST:PORT", c->announce_addr);
            return -1;
        }
    }
    if (c->announce_interval_ms > 0 && c->announce_ttl_ms <= c->announce_interval_ms) {
        snprintf(err, errlen, "announce-ttl-ms %u must be above announce-interval-ms %u (the "
                 "entry would expire between renewals)", c->announce_ttl_ms,
                 c->announce_interval_ms);
        return -1;
    }
    fp_params fpp;      /* unset: fp_spec stays "" until shard_resolve_corpus takes the corpus's */
    if (fp_params_option(c->fingerprint_algorithm, &fpp, c->fp_spec, sizeof c->fp_spec, err,
                         errlen) != 0)
        return -1;
    if (c->layout != LAYOUT_VERSION_UNSET && c->layout != LAYOUT_VERSION) {
        snprintf(err, errlen, "layout %u: this build reads and writes data layout %d only "
                 "(a corpus of another is copied across with simhash export of the build "
                 "that wrote it and simhash load)", c->layout, LAYOUT_VERSION);
        return -1;
    }
    if (layout_corpus_set(c->corpus) != 0) {
        snprintf(err, errlen, "corpus '%s': at most %d letters, digits, '_', '.' or '-'",
                 c->corpus, LAYOUT_CORPUS_MAX);
        return -1;
    }
    perm_set ps;
    char perr[200];
    if (perm_set_init(&ps, c->blocks, c->distance, perr, sizeof perr) != 0) {
        snprintf(err, errlen, "blocks %u distance %u: %s", c->blocks, c->distance, perr);
        return -1;
    }
    int rc = 0;
    for (unsigned t = 0; t < ps.ntables && rc == 0; t++) {
        unsigned pb = ps.tables[t].prefix_bits;
        if (pb < LAYOUT_MIN_PREFIX_BITS) {
            snprintf(err, errlen, "blocks %u distance %u: table %u has a %u-bit prefix; "
                     "distributed mode needs at least %d (use more blocks or a smaller "
                     "distance)", c->blocks, c->distance, t, pb, LAYOUT_MIN_PREFIX_BITS);
            rc = -1;
        }
    }
    perm_set_free(&ps);
    if (rc == 0 && c->port && c->port == c->limits.tls.port) {
        snprintf(err, errlen, "port and tls-port are both %u", c->port);
        rc = -1;
    }
    return rc == 0 ? rs_limits_check(&c->limits, err, errlen) : rc;
}

static const cfg_spec shard_spec = {
    "simhash-shard",
    "simhash-shard: the worker beside one Redis node. It serves every permutation table\n"
    "for the first-byte range given by --shards, keeps the corpus in Redis sorted sets\n"
    "(layout in docs/protocol.md) and answers the SHARD.* commands of a\n"
    "simhash-coordinator. Options come from --config FILE and --name value flags\n"
    "(flags win); --check-config validates and exits.\n" RS_EXIT_HELP,
    shard_options,
    sizeof shard_options / sizeof shard_options[0],
    shard_validate,
    RS_CONFIG_SHARED(shard_main_config, c.limits)
};

static int shard_argc;
static char **shard_argv;

/* SIGHUP: read the configuration again and apply what can change while running:
 * loglevel, syslog, the slow log settings, the TLS files (rs_config_reload). */
static void shard_reload(void *arg)
{
    shard_ctx *sc = arg;
    shard_main_config nc;
    rs_live_config live = {&sc->cfg.loglevel, &sc->cfg.syslog, &sc->cfg.limits};
    rs_config_reload(&shard_spec, shard_argc, shard_argv, &nc, sizeof nc,
                     offsetof(shard_main_config, c.loglevel),
                     offsetof(shard_main_config, c.syslog), live, sc->srv);
}

/* Stops serving: the registry, the repair pass, the metrics endpoint, the RESP
 * server, then the Redis connection (its pending requests answer and are freed).
 * Whatever part of it exists. */
static void shard_serving_free(shard_ctx *sc)
{
    shard_registry_stop(sc);
    shard_repair_stop(sc);
    rs_metrics_free(sc->metrics);
    sc->metrics = NULL;
    if (sc->srv) {
        rs_free(sc->srv);
        sc->srv = NULL;     /* the Redis callbacks below may still answer requests */
    }
    if (sc->redis) {
        shard_redis_free(sc->redis);
        sc->redis = NULL;
    }
}

static void shard_stop_now(shard_ctx *sc)
{
    log_info("stopping");
    shard_serving_free(sc);
    event_base_loopexit(sc->base, NULL);
}

/* SIGTERM / SIGINT: leave the worker registry; with shutdown-drain-ms, keep serving
 * that long (returns 1: shard_stop_now ends the loop later), else stop now. */
static int shard_on_stop(void *arg)
{
    shard_ctx *sc = arg;
    if (shard_registry_leave(sc, shard_stop_now))
        return 1;
    shard_stop_now(sc);
    return 0;
}

/* The first connection made after a start without Redis found other corpus
 * settings: stop with exit status 1 (called from a hiredis callback, so only stop
 * the loop here; main frees everything after it returns). */
static void shard_on_fatal(void *arg, const char *msg)
{
    shard_ctx *sc = arg;
    log_error("%s", msg);
    fprintf(stderr, "simhash-shard: %s\n", msg);
    sc->fatal = 1;
    event_base_loopexit(sc->base, NULL);
}

/* The split limit of the buckets: the one the node's listpack
 * settings allow, or the option split-limit when lower. */
static void shard_set_split_limit(shard_ctx *sc, unsigned node_limit)
{
    unsigned limit = node_limit, opt = sc->cfg.split_limit;
    if (opt >= LAYOUT_SPLIT_LIMIT_MIN && opt < limit)
        limit = opt;
    if (sc->lay.split_limit && limit != sc->lay.split_limit)
        log_info("redis: its listpack settings allow %u entries a bucket: buckets split at "
                 "%u entries from now on (were %u)", node_limit, limit, sc->lay.split_limit);
    sc->lay.split_limit = limit;
}

/* Every connection to Redis reads its listpack settings again (another node after a
 * failover, a restart with another redis.conf): the split limit follows them. */
static void shard_on_split_limit(void *arg, unsigned node_limit)
{
    shard_ctx *sc = arg;
    shard_set_split_limit(sc, node_limit);
}

/* Logs err and repeats it on stderr (the operator starting the worker by hand sees it
 * there). */
static void shard_main_fail(const char *err)
{
    log_error("%s", err);
    fprintf(stderr, "simhash-shard: %s\n", err);
}

/* Reads the corpus settings stored in Redis (simhash:meta) into ro and the layout of
 * sc, then validates the options again with them. A worker that follows its corpus's
 * fingerprint algorithm or tombstone lifetime (options unset) cannot know them before
 * Redis answers: it waits for Redis before it listens (SIGTERM still ends it), rather
 * than guess a new corpus's settings and be refused later. With both given it starts
 * at once and answers -REDIS unavailable meanwhile. Returns 0, or -1 with the message
 * printed. */
static int shard_resolve_corpus(shard_ctx *sc, shard_main_config *mc, shard_redis_opts *ro)
{
    shard_config *c = &sc->cfg;
    char err[512];
    const unsigned want_ts = c->tombstone_s;
    int mrc;
    for (unsigned tries = 0;; tries++) {
        ro->layout = LAYOUT_VERSION;
        ro->tombstone_s = want_ts;
        snprintf(ro->fingerprint, sizeof ro->fingerprint, "%s", c->fp_spec);
        mrc = shard_redis_check_meta_sync(ro, err, sizeof err);
        if (mrc != SHARD_META_UNREACHABLE || (c->fp_spec[0] && want_ts != 0))
            break;
        if (tries % 10 == 0)
            log_warn("%s; waiting for it: this worker follows its corpus's fingerprint "
                     "algorithm or tombstone lifetime (options fingerprint-algorithm, "
                     "tombstone-seconds unset), which only its Redis knows", err);
        sleep(1);
    }
    if (mrc == SHARD_META_REFUSED) {
        shard_main_fail(err);
        return -1;
    }
    if (mrc == SHARD_META_UNREACHABLE)  /* serve -REDIS unavailable, keep trying */
        log_warn("%s; answering -REDIS unavailable until it answers", err);
    c->layout = ro->layout;             /* resolved: the corpus's, or a new one's */
    c->tombstone_s = ro->tombstone_s;
    snprintf(c->fp_spec, sizeof c->fp_spec, "%s", ro->fingerprint);
    if (layout_ctx_init(&sc->lay) != 0) {
        shard_main_fail("out of memory");
        return -1;
    }
    sc->lay.tombstone_s = c->tombstone_s;
    sc->lay.by_sha = 1;     /* the worker sends the layout's scripts by name, */
    ro->scripts = &sc->lay; /* and again whole after a NOSCRIPT (shard/redis.c) */
    unsigned node_limit = ro->split_limit ? ro->split_limit : sc->lay.split_limit;
    sc->lay.split_limit = 0;                /* at start: nothing to report a change from */
    shard_set_split_limit(sc, node_limit);
    if (shard_validate(mc, err, sizeof err) != 0 || shard_timeout_check(c, err, sizeof err) != 0) {
        shard_main_fail(err);
        return -1;
    }
    return 0;
}

/* Starts what serves: the Redis connection, the RESP server, the metrics endpoint,
 * the pidfile, the repair pass and the registry. Returns 0, or -1 with the message
 * printed. */
static int shard_start(shard_ctx *sc, const shard_main_config *mc, const shard_redis_opts *ro)
{
    const shard_config *c = &sc->cfg;
    char err[512];
    sc->redis = shard_redis_new(sc->base, ro);
    if (sc->redis == NULL) {
        shard_main_fail("out of memory");
        return -1;
    }
    rs_options so = {
        .name = "simhash-shard", .bind = c->bind, .port = c->port, .password = mc->password,
        .limits = c->limits, .commands = shard_commands, .ncommands = shard_ncommands,
        .ctx = sc, .group = "shard", .info = shard_info_sections,
    };
    sc->srv = rs_new(sc->base, &so, err, sizeof err);
    if (sc->srv == NULL ||
        (c->metrics_port &&
         (sc->metrics = rs_metrics_new(sc->srv, c->metrics_bind, c->metrics_port,
                                       shard_metrics, sc, err, sizeof err)) == NULL) ||
        (c->pidfile && c->pidfile[0] && rs_pidfile_write(c->pidfile, err, sizeof err) != 0)) {
        shard_main_fail(err);
        return -1;
    }
    log_info("simhash-shard %s listening on %s:%u (TLS port %u), shards %s, redis %s%s:%u "
             "db %u, blocks %u distance %u (%u tables), layout %u, corpus %s",
             SIMHASH_VERSION, c->bind,
             rs_port(sc->srv), rs_tls_port(sc->srv), mc->cluster ? "as the cluster's slots" : c->shards,
             mc->cluster ? "cluster node " : "", c->redis_host, c->redis_port, c->redis_db,
             c->blocks, c->distance, sc->ps.ntables, c->layout,
             layout_corpus()[0] ? layout_corpus() : "(unnamed)");
    if (shard_repair_start(sc) != 0 || shard_registry_start(sc) != 0) {
        shard_main_fail("out of memory");
        return -1;
    }
    return 0;
}

/* Frees what main and shard_start made, whatever part of it exists. */
static void shard_free_all(shard_ctx *sc, shard_main_config *mc)
{
    shard_serving_free(sc);
    if (sc->base)
        event_base_free(sc->base);
    layout_ctx_free(&sc->lay);
    perm_set_free(&sc->ps);
    cfg_free_values(&shard_spec, mc);
    log_info("simhash-shard stopped");
    log_close();
}

int main(int argc, char **argv)
{
    shard_ctx sc;
    shard_main_config mc;
    memset(&sc, 0, sizeof sc);
    memset(&mc, 0, sizeof mc);
    rs_limits_default(&mc.c.limits);
    cfg_result cr = cfg_load(&shard_spec, &mc, argc, argv);
    if (cr != CFG_RUN) {
        cfg_free_values(&shard_spec, &mc);
        return cr == CFG_EXIT_OK ? RS_EXIT_OK : RS_EXIT_CONFIG;
    }
    sc.cfg = mc.c;      /* the strings stay owned by mc */
    sc.redis_used_memory = -1;
    sc.redis_role = -1;
    shard_config *c = &sc.cfg;
    char err[512];
    shard_argc = argc;
    shard_argv = argv;
    log_set_level(c->loglevel);
    log_syslog("simhash-shard", c->syslog);
    if (c->logfile && c->logfile[0] && log_open(c->logfile, err, sizeof err) != 0) {
        fprintf(stderr, "simhash-shard: %s\n", err);
        cfg_free_values(&shard_spec, &mc);
        return RS_EXIT_CONFIG;
    }
    if (perm_set_init(&sc.ps, c->blocks, c->distance, err, sizeof err) != 0 ||
        rs_tls_files_check(&c->limits.tls, err, sizeof err) != 0 ||
        rs_users_file_check(c->limits.aclfile, shard_commands, shard_ncommands, err,
                            sizeof err) != 0) {
        shard_main_fail(err);
        shard_free_all(&sc, &mc);
        return RS_EXIT_CONFIG;
    }
    shard_redis_opts ro = {
        .host = c->redis_host, .port = (int)c->redis_port, .password = c->redis_password,
        .user = c->redis_user,
        .db = c->redis_db, .blocks = c->blocks, .distance = c->distance,
        .layout = c->layout,
        .max_inflight = c->max_inflight_redis,
        .timeout_ms = c->timeout_ms, .on_fatal = shard_on_fatal,
        .on_split_limit = shard_on_split_limit, .cb_arg = &sc,
        .cluster = mc.cluster, .announce = mc.redis_announce,
    };
    int rc = RS_EXIT_FAILURE;
    if (shard_resolve_corpus(&sc, &mc, &ro) != 0)
        goto out;
    if ((sc.base = rs_base_new()) == NULL) {
        shard_main_fail("cannot create the event loop");
        goto out;
    }
    rs_runner run;      /* before it listens: a TERM while it starts ends it cleanly */
    if (rs_runner_init(&run, sc.base, shard_on_stop, shard_reload, &sc) != 0)
        goto out;
    if (shard_start(&sc, &mc, &ro) != 0)
        rs_runner_done(&run);
    else {
        if (rs_runner_run(&run) == 0 && !sc.fatal)
            rc = RS_EXIT_OK;
        if (c->pidfile && c->pidfile[0])
            rs_pidfile_remove(c->pidfile);
    }
out:
    shard_free_all(&sc, &mc);
    return rc;
}
