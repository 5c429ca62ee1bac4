/* rs_config.c: the table of the server options both daemons share (client limits,
 * timeouts, budgets, the slow log), the defaults of rs_limits taken from it, and the
 * SIGHUP reload of the settings that change while running. See rs_config.h. */
#include "rs_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define RS_OPT(name, type, field, min, max, def, help) \
    {name, type, offsetof(rs_limits, field), min, max, def, 0, help}

const cfg_option rs_limit_options[RS_NLIMIT_OPTIONS] = {
    RS_OPT("max-clients", CFG_UINT, max_clients, 1, 100000, "1024", "client connections at once"),
    RS_OPT("max-pending", CFG_UINT, max_pending, 1, 100000, "128",
           "pipelined requests queued per client before reading pauses"),
    RS_OPT("max-args", CFG_UINT, max_args, 2, 10000000, "65536", "arguments per request"),
    RS_OPT("max-arg-bytes", CFG_SIZE, max_arg_bytes, 16, 512ull << 20, "1m", "bytes of one argument"),
    RS_OPT("max-request-bytes", CFG_SIZE, max_req_bytes, 16, 2ull << 30, "8m",
           "bytes of one request"),
    RS_OPT("max-reply-bytes", CFG_SIZE, max_reply_bytes, 1024, 2ull << 30, "64m",
           "bytes of one reply (larger: -OOM)"),
    RS_OPT("out-high-watermark", CFG_SIZE, out_high_watermark, 1024, 2ull << 30, "1m",
           "unsent reply bytes per client before reading pauses"),
    RS_OPT("max-per-event", CFG_UINT, max_per_event, 1, 100000, "32",
           "requests started per read event of one client"),
    RS_OPT("max-output-bytes", CFG_SIZE, max_output_bytes, 0, 64ull << 30, "128m",
           "unread reply bytes past which a client is disconnected (0: no limit)"),
    RS_OPT("max-inflight-client", CFG_UINT, max_inflight_client, 1, 100000, "32",
           "requests of one client running at once; later ones wait (a share of the workers "
           "for every client)"),
    RS_OPT("timeout", CFG_UINT, idle_timeout_s, 0, 31536000, "300",
           "seconds a client may stay idle before it is disconnected (0: never)"),
    RS_OPT("auth-timeout", CFG_UINT, auth_timeout_s, 0, 3600, "10",
           "seconds a client may stay connected without AUTH when a password is set (0: no "
           "limit)"),
    RS_OPT("request-timeout", CFG_UINT, request_timeout_s, 0, 3600, "10",
           "seconds a request may take to arrive (a slow sender is disconnected; 0: no limit)"),
    RS_OPT("max-clients-per-addr", CFG_UINT, max_clients_per_addr, 0, 1000000, "256",
           "connections at once from one IP address (0: no limit)"),
    RS_OPT("reserved-auth-clients", CFG_UINT, reserved_auth_clients, 0, 100000, "32",
           "with a password: client slots unauthenticated connections never take; at"
           " their cap a new connection replaces the oldest unauthenticated one"),
    RS_OPT("auth-failures-per-sec", CFG_UINT, auth_fail_rate_addr, 1, 100000, "10",
           "wrong passwords a second from one IP address (AUTH and metrics scrapes);"
           " later tries wait their turn"),
    RS_OPT("auth-failures-total-per-sec", CFG_UINT, auth_fail_rate_total, 1, 1000000, "100",
           "wrong passwords a second from all addresses together"),
    RS_OPT("max-output-total", CFG_SIZE, max_output_total, 0, 1ull << 40, "512m",
           "unread reply bytes of all clients together; past it the client with the most is "
           "disconnected first (0: no limit)"),
    RS_OPT("max-unauth-bytes", CFG_SIZE, max_unauth_bytes, 0, 1ull << 40, "32m",
           "with a password: bytes of unfinished requests of all unauthenticated clients; "
           "past it the one holding the most is disconnected (0: no limit)"),
    RS_OPT("slowlog-log-slower-than", CFG_UINT, slowlog_slower_than_us, 0, 4000000000u, "10000",
           "SLOWLOG keeps requests that took at least this many microseconds (0: all)"),
    RS_OPT("slowlog-max-len", CFG_UINT, slowlog_max_len, 0, 100000, "128",
           "SLOWLOG entries kept (0: none)"),
    /* string defaults stay NULL: rs_limits_default must allocate nothing */
    RS_OPT("tls-port", CFG_UINT, tls.port, 0, 65535, "0",
           "TLS port beside the plain port (0: none; port 0 then disables the plain one)"),
    RS_OPT("tls-cert-file", CFG_STR, tls.cert_file, 0, 0, NULL,
           "PEM certificate (chain) of the TLS port (SIGHUP reads it again)"),
    RS_OPT("tls-key-file", CFG_STR, tls.key_file, 0, 0, NULL,
           "PEM private key of tls-cert-file (SIGHUP reads it again)"),
    RS_OPT("tls-key-file-pass-file", CFG_SECRET, tls.key_pass, 0, 0, NULL,
           "file whose first line is the passphrase of an encrypted tls-key-file"),
    RS_OPT("tls-ca-cert-file", CFG_STR, tls.ca_cert_file, 0, 0, NULL,
           "PEM CA certificates that sign client certificates (SIGHUP reads it again)"),
    RS_OPT("tls-auth-clients", CFG_STR, tls.auth_clients, 0, 0, NULL,
           "client certificates: yes (required, the default), optional or no"),
    RS_OPT("tls-protocols", CFG_STR, tls.protocols, 0, 0, NULL,
           "TLS versions, \"TLSv1.2 TLSv1.3\" by default (nothing older is accepted)"),
    RS_OPT("tls-ciphers", CFG_STR, tls.ciphers, 0, 0, NULL,
           "TLS 1.2 cipher list, OpenSSL syntax (default: OpenSSL's)"),
    RS_OPT("tls-ciphersuites", CFG_STR, tls.ciphersuites, 0, 0, NULL,
           "TLS 1.3 cipher suites, OpenSSL syntax (default: OpenSSL's)"),
    RS_OPT("tls-prefer-server-ciphers", CFG_BOOL, tls.prefer_server_ciphers, 0, 0, "no",
           "the server's cipher order wins over the client's"),
    RS_OPT("metrics-tls", CFG_BOOL, tls.metrics, 0, 0, "no",
           "the metrics endpoint speaks HTTPS with the TLS port's certificate and settings"),
    RS_OPT("aclfile", CFG_STR, aclfile, 0, 0, NULL,
           "users file: user NAME on >password #sha256 +@role ... (docs/security.md; "
           "SIGHUP reads it again)"),
};

/* The table alone, as a spec: cfg_finish on it sets every default. */
static const cfg_spec rs_limit_spec = {
    "rs_limits", NULL, rs_limit_options, RS_NLIMIT_OPTIONS, NULL, NULL, NULL, 0, 0,
};

void rs_limits_default(rs_limits *l)
{
    char err[256];
    memset(l, 0, sizeof *l);
    cfg_state *st = cfg_state_new(&rs_limit_spec, l);
    /* the defaults are constants within their bounds: only out of memory fails */
    if (st == NULL || cfg_finish(st, err, sizeof err) != 0) {
        fprintf(stderr, "rs_limits_default: %s\n", st ? err : "out of memory");
        abort();
    }
    cfg_state_free(st);
    resp_limits pl;
    resp_limits_default(&pl);
    l->max_inline_bytes = pl.max_inline_bytes;    /* not an option */
    l->auth_fail_delay_ms = RS_AUTH_FAIL_DELAY_MS;
}

int rs_limits_check(const rs_limits *l, char *err, size_t errlen)
{
    if (l->max_req_bytes < l->max_arg_bytes) {
        snprintf(err, errlen, "max-request-bytes (%zu) is smaller than max-arg-bytes (%zu)",
                 l->max_req_bytes, l->max_arg_bytes);
        return -1;
    }
    return rs_tls_conf_check(&l->tls, err, errlen);
}

/* ---- SIGHUP: the settings that change while running ---- */

void rs_config_reload(const cfg_spec *spec, int argc, char **argv, void *fresh, size_t size,
                      size_t off_loglevel, size_t off_syslog, rs_live_config live,
                      rserver *srv)
{
    memset(fresh, 0, size);
    rs_limits *nl = (rs_limits *)((char *)fresh + spec->shared_offset);
    rs_limits_default(nl);
    if (cfg_load(spec, fresh, argc, argv) != CFG_RUN) {
        log_error("SIGHUP: the configuration does not load (see stderr); nothing changed");
        cfg_free_values(spec, fresh);
        return;
    }
    int level = *(const int *)((const char *)fresh + off_loglevel);
    int syslog_on = *(const int *)((const char *)fresh + off_syslog);
    log_set_level(level);
    if (syslog_on != *live.syslog)
        log_syslog(spec->program, syslog_on);
    *live.loglevel = level;
    *live.syslog = syslog_on;
    live.limits->slowlog_slower_than_us = nl->slowlog_slower_than_us;
    live.limits->slowlog_max_len = nl->slowlog_max_len;
    if (srv) {
        rs_set_slowlog(srv, nl->slowlog_slower_than_us, nl->slowlog_max_len);
        rs_tls_reload(srv, &nl->tls);
        rs_users_reload(srv, nl->aclfile);
    }
    log_info("SIGHUP: configuration reloaded: loglevel %s, syslog %s, slowlog-log-slower-than "
             "%u, slowlog-max-len %u (other settings take effect at the next start)",
             log_level_name(level), syslog_on ? "yes" : "no", nl->slowlog_slower_than_us,
             nl->slowlog_max_len);
    cfg_free_values(spec, fresh);
}
