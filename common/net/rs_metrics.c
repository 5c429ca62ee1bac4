/* rs_metrics.c: the Prometheus endpoint of simhash-coordinator and simhash-shard
 * (option metrics-port): GET /metrics in the Prometheus text exposition format 0.0.4.
 * The server's families come from rserver's counters and per-command histograms; the
 * program appends its own. The HTTP side (rs_http.c) is a bounded one-request server:
 * a password when the server has one, a connection cap, a whole-request deadline. */
#include "rs_int.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "rasync.h"

void rs_prom_family(resp_buf *b, const char *name, const char *type, const char *help)
{
    resp_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The metrics of each command in turn (rs_each_command). */
typedef struct rs_metrics_walk {
    rserver *s;
    resp_buf *b;
    int family;             /* 0 counts, 1 errors, 2 durations */
} rs_metrics_walk;

/* Command names are letters, digits and '.': no escaping needed in label values. */
static void rs_metrics_cmd(const rs_command *cmd, void *arg)
{
    rs_metrics_walk *w = arg;
    const rs_cmdstat *st = rs_cmdstat_of(w->s, cmd);
    char name[64], labels[96];
    rs_lower(cmd->name, name, sizeof(name));
    if (w->family == 0) {
        resp_buf_printf(w->b, "simhash_commands_total{command=\"%s\"} %llu\n", name,
                        st ? st->lat.count : 0ull);
    } else if (w->family == 1) {
        resp_buf_printf(w->b, "simhash_command_errors_total{command=\"%s\",class=\"failed\"} %llu\n"
                        "simhash_command_errors_total{command=\"%s\",class=\"rejected\"} %llu\n",
                        name, st ? st->failed : 0ull, name, st ? st->rejected : 0ull);
    } else if (st != NULL) {
        snprintf(labels, sizeof(labels), "command=\"%s\"", name);
        rs_hist_prom(&st->lat, w->b, "simhash_command_duration_seconds", labels);
    }
}

void rs_metrics_text(rserver *s, resp_buf *b, void (*extra)(void *ctx, resp_buf *b), void *ctx)
{
    rs_prom_family(b, "simhash_build_info", "gauge", "Version and program; always 1.");
    resp_buf_printf(b, "simhash_build_info{version=\"%s\",program=\"%s\"} 1\n", SIMHASH_VERSION,
                    s->opt.name);
    rs_prom_family(b, "simhash_uptime_seconds", "gauge", "Seconds since the server started.");
    resp_buf_printf(b, "simhash_uptime_seconds %.3f\n",
                    (double)(ra_now_ms() - s->start_ms) / 1000.0);
    rs_prom_family(b, "simhash_connected_clients", "gauge", "Client connections open now.");
    resp_buf_printf(b, "simhash_connected_clients %lu\n", s->st.clients);
    rs_prom_family(b, "simhash_inflight_requests", "gauge",
                   "Requests received and not answered yet.");
    resp_buf_printf(b, "simhash_inflight_requests %llu\n", s->st.inflight);
    rs_prom_family(b, "simhash_connections_total", "counter", "Client connections accepted.");
    resp_buf_printf(b, "simhash_connections_total %llu\n", s->st.connections);
    rs_prom_family(b, "simhash_connections_closed_total", "counter",
                   "Client connections closed by the server, by reason.");
    resp_buf_printf(b,
                    "simhash_connections_closed_total{reason=\"max_clients\"} %llu\n"
                    "simhash_connections_closed_total{reason=\"protocol_error\"} %llu\n"
                    "simhash_connections_closed_total{reason=\"auth_failures\"} %llu\n"
                    "simhash_connections_closed_total{reason=\"auth_timeout\"} %llu\n"
                    "simhash_connections_closed_total{reason=\"idle\"} %llu\n"
                    "simhash_connections_closed_total{reason=\"output_limit\"} %llu\n",
                    s->st.rejected, s->st.proto_errors, s->st.closed_auth_failures,
                    s->st.closed_auth_timeout, s->st.closed_idle, s->st.closed_output);
    rs_prom_family(b, "simhash_auth_failures_total", "counter",
                   "Wrong passwords: AUTH on the RESP port, scrapes of this endpoint.");
    resp_buf_printf(b, "simhash_auth_failures_total %llu\n", s->st.auth_failures);
    rs_guard_metrics(s, b);
    rs_tls_metrics(s, b);
    rs_users_metrics(s, b);
    rs_prom_family(b, "simhash_commands_received_total", "counter",
                   "Requests received (known and unknown commands).");
    resp_buf_printf(b, "simhash_commands_received_total %llu\n", s->st.commands);

    rs_metrics_walk w = { s, b, 0 };
    rs_prom_family(b, "simhash_commands_total", "counter", "Requests answered, by command.");
    rs_each_command(s, rs_metrics_cmd, &w);
    rs_prom_family(b, "simhash_command_errors_total", "counter",
                   "Error replies by command and class: failed (the command ran and answered "
                   "an error) or rejected (refused before it ran: arguments, AUTH).");
    w.family = 1;
    rs_each_command(s, rs_metrics_cmd, &w);
    rs_prom_family(b, "simhash_command_duration_seconds", "histogram",
                   "Time from the start of a request to its reply, by command.");
    w.family = 2;
    rs_each_command(s, rs_metrics_cmd, &w);
    if (extra)
        extra(ctx, b);
}

