/* main.c: simhash-coordinator: configuration, start-up checks, the event loop and
 * clean shutdown. The RESP front end that fans SIMHASH.* commands out to shard
 * workers (see docs/coordinator.md). */
#include "coord.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "layout.h"
#include "log.h"
#include "rs_config.h"

#define OPT(name, type, field, min, max, def, flags, help) \
    { name, type, offsetof(coord_config, field), min, max, def, flags, help }

static const cfg_option coord_options[] = {
    OPT("bind", CFG_STR, bind, 0, 0, "127.0.0.1", 0, "address to listen on"),
    OPT("port", CFG_UINT, port, 0, 65535, "7000", 0,
        "TCP port to listen on (0: none, only with a tls-port)"),
    OPT("worker", CFG_LIST, workers, 1, 256, NULL, 0,
        "shard worker HOST:PORT, repeatable: the workers known at start (seeds); the "
        "others are found in the worker registry (discover-interval-ms)"),
    OPT("blocks", CFG_UINT, blocks, 1, 64, "6", 0, "blocks of the permutation tables (m)"),
    OPT("distance", CFG_UINT, distance, 0, 63, "3", 0, "largest Hamming distance matched (k)"),
    OPT("timeout-ms", CFG_UINT, timeout_ms, 1, 600000, "500", 0,
        "deadline of one request across all workers"),
    OPT("password-file", CFG_SECRET, password, 0, 0, NULL, 0,
        "file whose first line is the password clients must AUTH with"),
    OPT("worker-password-file", CFG_SECRET, worker_password, 0, 0, NULL, 0,
        "file whose first line is sent as AUTH to the workers"),
    OPT("worker-user", CFG_STR, worker_user, 0, 0, NULL, 0,
        "user of the workers' aclfile to AUTH as (role @shard; needs worker-password-file)"),
    OPT("worker-tls", CFG_BOOL, worker_tls.on, 0, 0, "no", 0,
        "connect to the workers over TLS (their tls-port), verifying their certificate"),
    OPT("worker-tls-cert-file", CFG_STR, worker_tls.cert_file, 0, 0, NULL, 0,
        "client certificate (PEM chain) shown to the workers (their tls-auth-clients)"),
    OPT("worker-tls-key-file", CFG_STR, worker_tls.key_file, 0, 0, NULL, 0,
        "the key of worker-tls-cert-file (PEM, unencrypted; keep it 0600)"),
    OPT("worker-tls-ca-cert-file", CFG_STR, worker_tls.ca_cert_file, 0, 0, NULL, 0,
        "CA certificates (PEM) the workers' certificates must chain to (unset: the system's)"),
    OPT("worker-tls-server-name", CFG_STR, worker_tls.server_name, 0, 0, NULL, 0,
        "name the workers' certificates must carry (unset: each worker's host or IP)"),
    OPT("pidfile", CFG_STR, pidfile, 0, 0, NULL, 0, "write the process id here"),
    OPT("logfile", CFG_STR, logfile, 0, 0, NULL, 0, "log here instead of stderr"),
    OPT("loglevel", CFG_LOGLEVEL, loglevel, 0, 0, "info", 0,
        "debug, info, warning or error (SIGHUP reloads it)"),
    OPT("syslog", CFG_BOOL, syslog, 0, 0, "no", 0,
        "also send every log message to syslog (facility daemon)"),
    OPT("metrics-port", CFG_UINT, metrics_port, 0, 65535, "0", 0,
        "port of the Prometheus endpoint GET /metrics (HTTP; 0: none)"),
    OPT("metrics-bind", CFG_STR, metrics_bind, 0, 0, "127.0.0.1", 0,
        "address the metrics endpoint listens on"),
    OPT("max-inflight-worker", CFG_UINT, max_inflight_worker, 1, 1000000, "10000", 0,
        "requests in flight per worker; past it requests fail with -BUSY"),
    OPT("reconnect-max-ms", CFG_UINT, reconnect_max_ms, 100, 600000, "2000", 0,
        "cap of the reconnect backoff"),
    OPT("cluster-node", CFG_LIST, cluster_nodes, 0, 256, NULL, 0,
        "Redis Cluster node HOST:PORT to read the slot map from (repeatable); turns "
        "cluster mode on (docs/cluster.md)"),
    OPT("cluster-password-file", CFG_SECRET, cluster_password, 0, 0, NULL, 0,
        "file whose first line is sent as AUTH to the cluster nodes"),
    OPT("cluster-refresh-ms", CFG_UINT, cluster_refresh_ms, 100, 600000, "5000", 0,
        "period of the cluster slot map refresh"),
    OPT("health-interval-ms", CFG_UINT, health_interval_ms, 50, 600000, "1000", 0,
        "SHARD.INFO health check period"),
    OPT("discover-interval-ms", CFG_UINT, discover_interval_ms, 0, 600000, "1000", 0,
        "how often the worker registry is read (SHARD.WORKERS to a worker that is up): "
        "workers that join are connected, workers that left are dropped (0: only the "
        "worker lines)"),
    OPT("fingerprint-algorithm", CFG_STR, fingerprint_algorithm, 0, 0, NULL, 0,
        "algorithm of SIMHASH.FINGERPRINT and CHECKTEXT (v5, v1 or v1:W; docs/fingerprint.md); "
        "every worker must report the same; unset: the first worker's (its corpus's)"),
    OPT("layout", CFG_UINT, layout, 0, LAYOUT_VERSION, "0", 0,
        "data layout the workers' corpus must have: 4, the only one this build reads "
        "and writes; 0: the same"),
    OPT("corpus", CFG_STR, corpus, 0, 0, NULL, 0,
        "corpus name the workers must serve (their option corpus); unset: the unnamed one"),
    OPT("fingerprint-threads", CFG_UINT, fp_threads, 0, 64, "2", 0,
        "threads that fingerprint large texts of FINGERPRINT and CHECKTEXT off the event "
        "loop (0: on the loop, as small ones)"),
    OPT("fingerprint-offload-bytes", CFG_SIZE, fp_offload_bytes, 0, 1ull << 30, "16k", 0,
        "texts of at least this many bytes are fingerprinted by those threads"),
    OPT("fingerprint-queue", CFG_UINT, fp_queue, 1, 100000, "64", 0,
        "large texts waiting for those threads, in all; past it: -BUSY"),
    OPT("fingerprint-queue-client", CFG_UINT, fp_queue_client, 1, 100000, "8", 0,
        "large texts of one client waiting or being fingerprinted; past it: -BUSY (clients "
        "are served in turn)"),
    OPT("durable", CFG_BOOL, durable, 0, 0, "no", 0,
        "acknowledge ADD/CHECK/DEL only once the workers report the writes durable"),
    OPT("merge-adds", CFG_BOOL, merge_adds, 0, 0, "yes", 0,
        "write SIMHASH.ADD requests of one pair, and the adds of SIMHASH.CHECK / CHECKTEXT, "
        "that arrive together, from any clients, as batches sharing the workers' lock and "
        "table-write calls"),
};

/* Cross-option checks. Returns 0, or -1 with err. */
static int coord_validate(void *obj, char *err, size_t errlen)
{
    coord_config *c = obj;
    perm_set ps;
    if (c->layout != LAYOUT_VERSION_UNSET && c->layout != LAYOUT_VERSION) {
        snprintf(err, errlen, "layout %u: this build reads and writes data layout %d only",
                 c->layout, LAYOUT_VERSION);
        return -1;
    }
    /* unset: fp_spec stays "" until a worker reports its corpus's (corpus.c) */
    if (fp_params_option(c->fingerprint_algorithm, &c->fp, c->fp_spec, sizeof c->fp_spec, err,
                         errlen) != 0)
        return -1;
    if (c->distance >= c->blocks) {
        snprintf(err, errlen, "distance (%u) must be smaller than blocks (%u)", c->distance,
                 c->blocks);
        return -1;
    }
    if (perm_set_init(&ps, c->blocks, c->distance, err, errlen) != 0)
        return -1;
    for (unsigned t = 0; t < ps.ntables; t++)
        if (ps.tables[t].prefix_bits < LAYOUT_MIN_PREFIX_BITS) {
            snprintf(err, errlen, "blocks %u distance %u gives tables with %u prefix bits; "
                     "distributed mode needs at least %d (use more blocks or a smaller distance)",
                     c->blocks, c->distance, ps.tables[t].prefix_bits, LAYOUT_MIN_PREFIX_BITS);
            perm_set_free(&ps);
            return -1;
        }
    perm_set_free(&ps);
    if (c->workers.n == 0) {
        snprintf(err, errlen, "at least one --worker HOST:PORT is required");
        return -1;
    }
    if (c->port == 0 && c->limits.tls.port == 0) {
        snprintf(err, errlen, "port 0 disables the plain port only beside a tls-port");
        return -1;
    }
    if (c->worker_user && c->worker_user[0] &&
        !(c->worker_password && c->worker_password[0])) {
        snprintf(err, errlen, "worker-user '%s' needs worker-password-file", c->worker_user);
        return -1;
    }
    if (ra_tls_conf_check(&c->worker_tls, err, errlen) != 0)
        return -1;
    if (c->port && c->port == c->limits.tls.port) {
        snprintf(err, errlen, "port and tls-port are both %u", c->port);
        return -1;
    }
    return rs_limits_check(&c->limits, err, errlen);
}

static const cfg_spec coord_spec = {
    "simhash-coordinator",
    "The RESP front end of distributed mode: answers SIMHASH.ADD/DEL/QUERY/CHECK/\n"
    "FINGERPRINT/CHECKTEXT/INFO by fanning out to simhash-shard workers whose first-byte\n"
    "ranges cover 0-255 exactly once. See docs/coordinator.md.\n" RS_EXIT_HELP,
    coord_options, sizeof(coord_options) / sizeof(coord_options[0]), coord_validate,
    RS_CONFIG_SHARED(coord_config, limits)
};

/* A prefix for this process's write-lock tokens, unique across coordinators and
 * restarts: random bytes, else the pid and the clock. */
static void coord_lock_id(char *buf, size_t cap)
{
    unsigned char r[8] = {0};
    FILE *f = fopen("/dev/urandom", "rb");
    size_t got = f ? fread(r, 1, sizeof(r), f) : 0;
    if (f)
        fclose(f);
    if (got != sizeof(r)) {
        uint64_t v = ra_now_us() ^ ((uint64_t)getpid() << 40);
        memcpy(r, &v, sizeof(r));
    }
    snprintf(buf, cap, "%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5],
             r[6], r[7]);
}

static int coord_argc;
static char **coord_argv;

/* SIGHUP with worker-tls: the client certificate, key and CA files read again into a
 * new context for new worker connections (live ones keep theirs); when they do not
 * load, the running ones stay and the log says why. worker-tls itself changes at a
 * restart only. */
static void coord_reload_worker_tls(coord *co)
{
    coord_config nc;
    char err[512];
    if (co->worker_tls == NULL)
        return;
    memset(&nc, 0, sizeof nc);
    rs_limits_default(&nc.limits);
    if (cfg_load(&coord_spec, &nc, coord_argc, coord_argv) != CFG_RUN) {
        cfg_free_values(&coord_spec, &nc);
        return;         /* rs_config_reload said so already */
    }
    if (!nc.worker_tls.on)
        log_warn("SIGHUP: worker-tls changes at a restart only; the workers' TLS stays on");
    else if (ra_tls_reload(co->worker_tls, &nc.worker_tls, err, sizeof(err)) != 0)
        log_error("SIGHUP: worker TLS certificate, key and CA not reloaded, the running ones "
                  "stay: %s", err);
    else
        log_info("SIGHUP: worker TLS certificate, key and CA reloaded (new worker connections)");
    cfg_free_values(&coord_spec, &nc);
}

/* SIGHUP: read the configuration again (the same --config file and flags) and apply
 * what can change while running: loglevel, syslog, the slow log settings, the TLS
 * certificate, key and CA files (rs_config_reload). The rest needs a restart. */
static void coord_reload(void *arg)
{
    coord *co = arg;
    coord_config nc;
    rs_live_config live = {&co->cfg.loglevel, &co->cfg.syslog, &co->cfg.limits};
    rs_config_reload(&coord_spec, coord_argc, coord_argv, &nc, sizeof nc,
                     offsetof(coord_config, loglevel), offsetof(coord_config, syslog), live,
                     co->srv);
    coord_reload_worker_tls(co);
}

/* Starts what serves: the fingerprint threads, the worker connections, the cluster
 * slot map, the RESP server, the metrics endpoint, the pidfile. Returns 0, or an exit
 * status (enum rs_exit) with the message logged. */
static int coord_start(coord *co)
{
    char err[512];
    if ((co->cfg.worker_tls.on &&
         (co->worker_tls = ra_tls_new(&co->cfg.worker_tls, err, sizeof(err))) == NULL) ||
        coord_textfp_start(co, err, sizeof(err)) != 0 ||
        coord_merge_start(co, err, sizeof(err)) != 0 ||
        coord_workers_start(co, err, sizeof(err)) != 0 ||
        coord_cluster_start(co, err, sizeof(err)) != 0 ||
        rs_tls_files_check(&co->cfg.limits.tls, err, sizeof(err)) != 0 ||
        rs_users_file_check(co->cfg.limits.aclfile, coord_commands, coord_ncommands, err,
                            sizeof(err)) != 0) {
        log_error("%s", err);
        return RS_EXIT_CONFIG;
    }
    rs_options ro = {
        .name = "simhash-coordinator", .bind = co->cfg.bind, .port = co->cfg.port,
        .password = co->cfg.password, .limits = co->cfg.limits,
        .commands = coord_commands, .ncommands = coord_ncommands, .ctx = co,
        .group = "simhash", .info = coord_info_sections,
    };
    co->srv = rs_new(co->base, &ro, err, sizeof(err));
    if (co->srv == NULL ||
        (co->cfg.metrics_port &&
         (co->metrics = rs_metrics_new(co->srv, co->cfg.metrics_bind, co->cfg.metrics_port,
                                       coord_metrics, co, err, sizeof(err))) == NULL) ||
        (co->cfg.pidfile && rs_pidfile_write(co->cfg.pidfile, err, sizeof(err)) != 0)) {
        log_error("%s", err);
        return RS_EXIT_FAILURE;
    }
    log_info("simhash-coordinator %s listening on %s:%u (TLS port %u); blocks %u distance %u "
             "(%u tables); %zu workers", SIMHASH_VERSION, co->cfg.bind, rs_port(co->srv),
             rs_tls_port(co->srv), co->cfg.blocks,
             co->cfg.distance, co->ps.ntables, co->cfg.workers.n);
    return RS_EXIT_OK;
}

/* Frees what coord_start and main made, whatever part of it exists. */
static void coord_stop(coord *co)
{
    coord_textfp_stop(co);          /* waiting texts answer -BUSY; a CHECKTEXT that was
                                       fingerprinted goes on and gets -SHARDDOWN below */
    coord_merge_stop(co);           /* one-pair writes not written yet answer -SHARDDOWN */
    coord_ops_stop(co);             /* every request in progress answers -SHARDDOWN */
    coord_workers_stop(co);         /* the workers' replies still due are dropped */
    coord_cluster_stop(co);
    rs_metrics_free(co->metrics);
    rs_free(co->srv);
    ra_tls_free(co->worker_tls);
    perm_set_free(&co->ps);
    if (co->base) {
        /* one pass more: libevent finishes closing the client connections (a reply
         * written since the loop's last pass holds its connection until its output
         * callback runs); nothing of ours is left to run */
        event_base_loop(co->base, EVLOOP_NONBLOCK);
        event_base_free(co->base);
    }
    log_info("simhash-coordinator stopped");
    log_close();
    cfg_free_values(&coord_spec, &co->cfg);
}

int main(int argc, char **argv)
{
    static coord co;
    char err[512];
    int rc;

    rs_limits_default(&co.cfg.limits);
    switch (cfg_load(&coord_spec, &co.cfg, argc, argv)) {
    case CFG_RUN: break;
    case CFG_EXIT_OK: cfg_free_values(&coord_spec, &co.cfg); return RS_EXIT_OK;
    case CFG_EXIT_ERR: cfg_free_values(&coord_spec, &co.cfg); return RS_EXIT_CONFIG;
    }
    coord_argc = argc;
    coord_argv = argv;
    log_set_level(co.cfg.loglevel);
    log_syslog("simhash-coordinator", co.cfg.syslog);
    if (log_open(co.cfg.logfile, err, sizeof(err)) != 0) {
        fprintf(stderr, "simhash-coordinator: %s\n", err);
        cfg_free_values(&coord_spec, &co.cfg);
        return RS_EXIT_CONFIG;
    }
    if (perm_set_init(&co.ps, co.cfg.blocks, co.cfg.distance, err, sizeof(err)) != 0) {
        log_error("%s", err);
        coord_stop(&co);
        return RS_EXIT_CONFIG;
    }
    co.base = rs_base_new();
    if (co.base == NULL) {
        log_error("cannot create the event loop");
        coord_stop(&co);
        return RS_EXIT_FAILURE;
    }
    co.start_time = (long long)(ra_now_us() / 1000000);
    coord_lock_id(co.lock_id, sizeof(co.lock_id));
    rs_runner run;      /* before it listens: a TERM while it starts ends it cleanly */
    if (rs_runner_init(&run, co.base, NULL, coord_reload, &co) != 0) {
        coord_stop(&co);
        return RS_EXIT_FAILURE;
    }
    rc = coord_start(&co);
    if (rc != RS_EXIT_OK)
        rs_runner_done(&run);
    else {
        if (rs_runner_run(&run) != 0)
            rc = RS_EXIT_FAILURE;
        if (co.fatal) {
            log_error("refusing to run: the shard workers' settings or ranges do not match "
                      "(blocks %u, distance %u); see the messages above", co.cfg.blocks,
                      co.cfg.distance);
            rc = co.fatal;
        }
        if (co.cfg.pidfile)
            rs_pidfile_remove(co.cfg.pidfile);
    }
    coord_stop(&co);
    return rc;
}
