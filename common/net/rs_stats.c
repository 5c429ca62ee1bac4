/* rs_stats.c: what the RESP server measures: connection counters (INFO # Clients),
 * per-command counters and latency histograms (INFO commandstats / latencystats,
 * /metrics) and the slow log (SLOWLOG, as Redis's: entries of requests slower than
 * slowlog-log-slower-than). */
#include "rs_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

unsigned long long rs_wall_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (unsigned long long)tv.tv_sec * 1000000ull + (unsigned long long)tv.tv_usec;
}

/* ---- Connection counters (INFO # Clients) ---- */

unsigned long rs_nclients(const rserver *s)
{
    return s->st.clients;
}

void rs_info_clients(const rserver *s, resp_buf *b)
{
    resp_buf_printf(b,
                    "connected_clients:%lu\r\n"
                    "total_connections_received:%llu\r\n"
                    "rejected_connections:%llu\r\n"
                    "total_commands_processed:%llu\r\n"
                    "protocol_errors:%llu\r\n"
                    "client_read_pauses:%llu\r\n"
                    "inflight_requests:%llu\r\n"
                    "auth_failures:%llu\r\n"
                    "closed_auth_failures:%llu\r\n"
                    "closed_auth_timeout:%llu\r\n"
                    "closed_idle:%llu\r\n"
                    "closed_output_limit:%llu\r\n",
                    s->st.clients, s->st.connections, s->st.rejected, s->st.commands,
                    s->st.proto_errors, s->st.read_pauses, s->st.inflight, s->st.auth_failures,
                    s->st.closed_auth_failures, s->st.closed_auth_timeout, s->st.closed_idle,
                    s->st.closed_output);
    rs_guard_info(s, b);
}

/* ---- Per-command counters ---- */

rs_cmdstat *rs_cmdstat_of(rserver *s, const rs_command *cmd)
{
    if (s == NULL || s->cstat == NULL || cmd == NULL)
        return NULL;
    if (s->opt.commands && cmd >= s->opt.commands && cmd < s->opt.commands + s->opt.ncommands)
        return &s->cstat[cmd - s->opt.commands];
    if (cmd >= rs_builtin && cmd < rs_builtin + rs_nbuiltin)
        return &s->cstat[s->opt.ncommands + (size_t)(cmd - rs_builtin)];
    return NULL;
}

/* Bucket of a latency of us microseconds. */
static size_t rs_hist_bucket(uint64_t us)
{
    if (us < RS_HIST_SUB)
        return (size_t)us;
    unsigned e = 63u - (unsigned)__builtin_clzll(us);       /* >= 4 */
    if (e >= RS_HIST_EXP_MAX)
        return RS_HIST_BUCKETS - 1;
    size_t sub = (size_t)(us >> (e - 4)) & (RS_HIST_SUB - 1);
    return (size_t)(e - 3) * RS_HIST_SUB + sub;
}

/* The largest latency bucket b holds (values are reported as that bound). */
static uint64_t rs_hist_upper(size_t b)
{
    if (b < RS_HIST_SUB)
        return b;
    unsigned e = (unsigned)(b / RS_HIST_SUB) + 3;
    uint64_t sub = b % RS_HIST_SUB;
    return ((RS_HIST_SUB + sub + 1) << (e - 4)) - 1;
}

void rs_hist_add(rs_hist *h, uint64_t us)
{
    h->count++;
    h->sum_us += us;
    h->b[rs_hist_bucket(us)]++;
}

void rs_cmdstat_add(rs_cmdstat *st, uint64_t us, int failed)
{
    st->failed += failed != 0;
    rs_hist_add(&st->lat, us);
}

uint64_t rs_hist_percentile(const rs_hist *h, double p)
{
    uint64_t seen = 0;
    if (h->count == 0)
        return 0;
    uint64_t rank = (uint64_t)(p * (double)h->count + 0.999999);
    if (rank == 0)
        rank = 1;
    for (size_t b = 0; b < RS_HIST_BUCKETS; b++) {
        seen += h->b[b];
        if (seen >= rank)
            return rs_hist_upper(b);
    }
    return rs_hist_upper(RS_HIST_BUCKETS - 1);
}

void rs_hist_prom(const rs_hist *h, resp_buf *b, const char *name, const char *labels)
{
    static const uint64_t le_us[] = { 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000,
                                      100000, 250000, 500000, 1000000, 2500000, 10000000 };
    const char *sep = labels[0] ? "," : "";
    size_t bi = 0;
    uint64_t cum = 0;
    for (size_t i = 0; i < sizeof(le_us) / sizeof(le_us[0]); i++) {
        /* a bucket counts below le when all its values do */
        while (bi < RS_HIST_BUCKETS && rs_hist_upper(bi) <= le_us[i])
            cum += h->b[bi++];
        resp_buf_printf(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep,
                        (double)le_us[i] / 1e6, (unsigned long long)cum);
    }
    resp_buf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep, h->count);
    resp_buf_printf(b, "%s_sum%s%s%s %.6f\n", name, labels[0] ? "{" : "", labels,
                    labels[0] ? "}" : "", (double)h->sum_us / 1e6);
    resp_buf_printf(b, "%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "", labels,
                    labels[0] ? "}" : "", h->count);
}

/* ---- SLOWLOG ---- */

/* An entry's arguments are copies in its buffer, which it keeps when it is reused:
 * under a load where every request is slow (a saturated pipeline) a note costs no
 * allocation once the ring has gone round. */
static void rs_slowlog_clear_entry(rs_slowlog_entry *e)
{
    free(e->name);
    e->name = NULL;
    e->argc = 0;
}

void rs_slowlog_free(rserver *s)
{
    for (size_t i = 0; s->slowlog && i < s->opt.limits.slowlog_max_len; i++) {
        rs_slowlog_clear_entry(&s->slowlog[i]);
        free(s->slowlog[i].buf);
    }
    free(s->slowlog);
    s->slowlog = NULL;
    s->slowlog_len = s->slowlog_head = 0;
}

#define RS_SLOWLOG_MORE 48          /* room for "... (N more bytes|arguments)" */

/* Appends to e the copy of n bytes of p, cut as Redis cuts slow log arguments (the
 * buffer has room: rs_slowlog_note sized it). */
static void rs_slowlog_put(rs_slowlog_entry *e, size_t *used, const char *p, size_t n)
{
    char *v = e->buf + *used;
    size_t keep = n > RS_SLOWLOG_ARG_BYTES ? RS_SLOWLOG_ARG_BYTES : n, len = keep;
    memcpy(v, p, keep);
    if (keep < n)
        len += (size_t)snprintf(v + keep, RS_SLOWLOG_MORE, "... (%zu more bytes)", n - keep);
    v[len] = '\0';
    e->args[e->argc] = v;
    e->lens[e->argc++] = len;
    *used += len + 1;
}

void rs_slowlog_note(rserver *s, rs_req *r, uint64_t us)
{
    const rs_limits *l = &s->opt.limits;
    if (l->slowlog_max_len == 0 || us < l->slowlog_slower_than_us)
        return;
    if (s->slowlog == NULL &&
        (s->slowlog = calloc(l->slowlog_max_len, sizeof(*s->slowlog))) == NULL)
        return;
    rs_slowlog_entry *e = &s->slowlog[s->slowlog_head];
    rs_slowlog_clear_entry(e);
    s->slowlog_head = (s->slowlog_head + 1) % l->slowlog_max_len;
    if (s->slowlog_len < l->slowlog_max_len)
        s->slowlog_len++;
    e->id = s->slowlog_next_id++;
    e->time_s = (long long)(rs_wall_us() / 1000000u);
    e->us = us;
    size_t argc = rs_req_argc(r), shown = argc, need = RS_SLOWLOG_MORE + 1, used = 0;
    if (shown > RS_SLOWLOG_ARGS)
        shown = RS_SLOWLOG_ARGS - 1;
    for (size_t i = 0; i < shown; i++) {
        size_t n;
        rs_req_arg(r, i, &n);
        need += (n > RS_SLOWLOG_ARG_BYTES ? RS_SLOWLOG_ARG_BYTES + RS_SLOWLOG_MORE : n) + 1;
    }
    if (need > e->cap) {
        char *nb = realloc(e->buf, need);
        if (nb == NULL)
            shown = 0;          /* out of memory: the entry without its arguments */
        else {
            e->buf = nb;
            e->cap = need;
        }
    }
    for (size_t i = 0; i < shown; i++) {
        size_t n;
        const char *a = rs_req_arg(r, i, &n);
        rs_slowlog_put(e, &used, a, n);
    }
    if (shown < argc && e->cap >= need) {
        char *v = e->buf + used;
        int n = snprintf(v, RS_SLOWLOG_MORE, "... (%zu more arguments)", argc - shown);
        e->args[e->argc] = v;
        e->lens[e->argc++] = (size_t)n;
    }
    size_t al = strnlen(r->c->addr, sizeof(e->addr) - 1);
    memcpy(e->addr, r->c->addr, al);
    e->addr[al] = '\0';
    e->name = r->c->name ? strdup(r->c->name) : NULL;
}

static const char *const rs_slowlog_help[] = {
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]", "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN", "    Return the length of the slowlog.",
    "RESET", "    Reset the slowlog.",
    "HELP", "    Print this help.",
};

void rs_cmd_slowlog(rs_req *r)
{
    rserver *s = r->c->s;
    resp_buf *b = rs_req_out(r);
    size_t argc = rs_req_argc(r);

    if (s == NULL) {
        rs_req_fail(r, RS_ERR, "server is shutting down");
        return;
    }
    if (rs_arg_is(r, 1, "LEN") && argc == 2) {
        resp_add_int(b, (long long)s->slowlog_len);
    } else if (rs_arg_is(r, 1, "RESET") && argc == 2) {
        rs_slowlog_free(s);
        resp_add_simple(b, "OK");
    } else if (rs_arg_is(r, 1, "GET") && argc <= 3) {
        long long count = 10;
        if (argc == 3) {
            char buf[24], *end = NULL;
            size_t n;
            const char *a = rs_req_arg(r, 2, &n);
            if (n > 0 && n < sizeof(buf)) {
                memcpy(buf, a, n);
                buf[n] = '\0';
                count = strtoll(buf, &end, 10);
            }
            if (n == 0 || n >= sizeof(buf) || end == NULL || *end || count < -1) {
                rs_req_fail(r, RS_ERR, "count should be greater than or equal to -1");
                return;
            }
        }
        size_t k = count < 0 || (unsigned long long)count > s->slowlog_len ? s->slowlog_len
                                                                           : (size_t)count;
        size_t max = s->opt.limits.slowlog_max_len;
        resp_add_array(b, k);
        for (size_t i = 0; i < k; i++) {
            const rs_slowlog_entry *e = &s->slowlog[(s->slowlog_head + max - 1 - i) % max];
            resp_add_array(b, 6);
            resp_add_int(b, (long long)e->id);
            resp_add_int(b, e->time_s);
            resp_add_int(b, (long long)e->us);
            resp_add_array(b, e->argc);
            for (size_t j = 0; j < e->argc; j++)
                resp_add_bulk(b, e->args[j], e->lens[j]);
            resp_add_bulk_str(b, e->addr);
            resp_add_bulk_str(b, e->name ? e->name : "");
        }
    } else if (rs_arg_is(r, 1, "HELP") && argc == 2) {
        size_t k = sizeof(rs_slowlog_help) / sizeof(rs_slowlog_help[0]);
        resp_add_array(b, k);
        for (size_t i = 0; i < k; i++)
            resp_add_simple(b, rs_slowlog_help[i]);
    } else {
        char shown[80];
        size_t n;
        const char *sub = rs_req_arg(r, 1, &n);
        rs_req_fail(r, RS_ERR, "unknown subcommand or wrong number of arguments for '%s'. "
                    "Try SLOWLOG HELP.", rs_printable(shown, sizeof(shown), sub, n, 64));
        return;
    }
    rs_req_finish(r);
}

void rs_set_slowlog(rserver *s, unsigned slower_than_us, unsigned max_len)
{
    if (max_len != s->opt.limits.slowlog_max_len)
        rs_slowlog_free(s);     /* frees with the old length */
    s->opt.limits.slowlog_slower_than_us = slower_than_us;
    s->opt.limits.slowlog_max_len = max_len;
}
