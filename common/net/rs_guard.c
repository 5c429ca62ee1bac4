/* rs_guard.c: what clients may take of a server together (see docs/security.md,
 * "Budgets"): the unsent replies of all clients (max-output-total) and the unfinished
 * requests of unauthenticated ones (max-unauth-bytes), the largest holder disconnected
 * first; and what one source address may take: its connections at once
 * (max-clients-per-addr) and its wrong passwords (a token bucket per address and one
 * for the whole server, auth-failures-per-sec and auth-failures-total-per-sec). An AUTH try is checked only when both buckets hold a
 * token, and a wrong password takes one, so pipelined or parallel tries wait their
 * turn however many connections carry them. Addresses live in a small hash table; an
 * entry with no connection and a full bucket is dropped by the once-a-second sweep. */
#include "rs_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "log.h"
#include "rasync.h"

#define RS_GUARD_BUCKETS 1024
#define RS_GUARD_MAX_ADDRS 100000       /* entries at most; past it new addresses wait */

struct rs_guard_addr {
    char ip[48];
    unsigned conns;
    double tokens;                      /* wrong passwords it may still try now */
    uint64_t refill_ms;                 /* when tokens was last topped up */
    struct rs_guard_addr *next;
};

/* The address part of "ip:port" (IPv6 addresses keep their colons). */
static void rs_guard_ip(const char *addr, char *ip, size_t cap)
{
    const char *colon = strrchr(addr, ':');
    size_t n = colon ? (size_t)(colon - addr) : strlen(addr);
    if (n >= cap)
        n = cap - 1;
    memcpy(ip, addr, n);
    ip[n] = '\0';
}

static size_t rs_guard_hash(const char *ip)
{
    size_t h = 5381;
    for (; *ip; ip++)
        h = h * 33 + (unsigned char)*ip;
    return h % RS_GUARD_BUCKETS;
}

/* Tops up a bucket of rate tokens a second (burst: one second's worth, at least 1). */
static void rs_guard_refill(double *tokens, uint64_t *refill_ms, unsigned rate, uint64_t now)
{
    double burst = rate > 0 ? rate : 1;
    *tokens += (double)(now - *refill_ms) * rate / 1000.0;
    if (*tokens > burst)
        *tokens = burst;
    *refill_ms = now;
}

/* The entry of the address in "ip:port" addr; created when create (NULL: out of
 * memory or the table is full). */
static rs_guard_addr *rs_guard_get(rserver *s, const char *addr, int create)
{
    char ip[48];
    rs_guard_ip(addr, ip, sizeof ip);
    if (s->guard == NULL && (s->guard = calloc(RS_GUARD_BUCKETS, sizeof(*s->guard))) == NULL)
        return NULL;
    size_t h = rs_guard_hash(ip);
    for (rs_guard_addr *a = s->guard[h]; a; a = a->next)
        if (strcmp(a->ip, ip) == 0)
            return a;
    if (!create || s->guard_naddrs >= RS_GUARD_MAX_ADDRS)
        return NULL;
    rs_guard_addr *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return NULL;
    snprintf(a->ip, sizeof a->ip, "%s", ip);
    a->tokens = s->opt.limits.auth_fail_rate_addr ? s->opt.limits.auth_fail_rate_addr : 1;
    a->refill_ms = ra_now_ms();
    a->next = s->guard[h];
    s->guard[h] = a;
    s->guard_naddrs++;
    return a;
}

int rs_guard_admit(rserver *s, const char *addr)
{
    unsigned max = s->opt.limits.max_clients_per_addr;
    rs_guard_addr *a = rs_guard_get(s, addr, 1);
    if (a == NULL || (max && a->conns >= max)) {
        s->st.rejected_per_addr++;
        log_warn_rl("refusing a connection from %s: %s", addr,
                    a ? "max-clients-per-addr reached" : "too many addresses tracked");
        return -1;
    }
    a->conns++;
    return 0;
}

void rs_guard_release(rserver *s, const char *addr)
{
    rs_guard_addr *a = rs_guard_get(s, addr, 0);
    if (a && a->conns > 0)
        a->conns--;
}

unsigned rs_guard_auth_wait_ms(rserver *s, const char *addr)
{
    const rs_limits *l = &s->opt.limits;
    uint64_t now = ra_now_ms();
    rs_guard_addr *a = rs_guard_get(s, addr, 1);
    if (a == NULL)
        return 1000;
    rs_guard_refill(&a->tokens, &a->refill_ms, l->auth_fail_rate_addr, now);
    rs_guard_refill(&s->auth_tokens, &s->auth_refill_ms, l->auth_fail_rate_total, now);
    double need = 1.0 - (a->tokens < s->auth_tokens ? a->tokens : s->auth_tokens);
    if (need <= 0)
        return 0;
    unsigned rate = a->tokens < s->auth_tokens ? l->auth_fail_rate_addr : l->auth_fail_rate_total;
    s->st.auth_waits++;
    return rate ? (unsigned)(need * 1000.0 / rate) + 1 : 1000;
}

void rs_guard_auth_failed(rserver *s, const char *addr)
{
    rs_guard_addr *a = rs_guard_get(s, addr, 1);
    if (a)
        a->tokens -= 1.0;
    s->auth_tokens -= 1.0;
    s->st.auth_failures++;
}

void rs_guard_sweep(rserver *s)
{
    uint64_t now = ra_now_ms();
    if (s->guard == NULL)
        return;
    for (size_t h = 0; h < RS_GUARD_BUCKETS; h++)
        for (rs_guard_addr **pp = &s->guard[h]; *pp; ) {
            rs_guard_addr *a = *pp;
            rs_guard_refill(&a->tokens, &a->refill_ms, s->opt.limits.auth_fail_rate_addr, now);
            if (a->conns == 0 && a->tokens >= (s->opt.limits.auth_fail_rate_addr ?
                                               s->opt.limits.auth_fail_rate_addr : 1)) {
                *pp = a->next;
                free(a);
                s->guard_naddrs--;
            } else {
                pp = &a->next;
            }
        }
}

void rs_guard_free(rserver *s)
{
    if (s->guard == NULL)
        return;
    for (size_t h = 0; h < RS_GUARD_BUCKETS; h++)
        while (s->guard[h]) {
            rs_guard_addr *a = s->guard[h];
            s->guard[h] = a->next;
            free(a);
        }
    free(s->guard);
    s->guard = NULL;
}

/* Compare without an early exit, so timing does not tell how much matched. */
int rs_secret_equal(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    unsigned char d = (unsigned char)(alen != blen);
    for (size_t i = 0; i < alen; i++)
        d |= (unsigned char)(a[i] ^ b[i % (blen ? blen : 1)]);
    return d == 0;
}

/* ---- Budgets across clients ---- */

/* Runs rs_budget_enforce soon (a server without the event, as the fuzz harness builds
 * one, enforces nothing). */
static void rs_budget_wake(rserver *s)
{
    if (s->budget_ev)
        event_active(s->budget_ev, EV_TIMEOUT, 0);
}

/* Every change of a client's output buffer: its size in c->out_bytes and the sum in
 * out_total; past the budget the enforcing event runs (never inside this callback). */
static void rs_budget_on_out(struct evbuffer *buf, const struct evbuffer_cb_info *info,
                             void *arg)
{
    rs_client *c = arg;
    rserver *s = c->s;
    (void)buf;
    c->out_bytes = c->out_bytes + info->n_added - info->n_deleted;
    if (s == NULL)
        return;
    s->out_total = s->out_total + info->n_added - info->n_deleted;
    if (s->opt.limits.max_output_total && s->out_total > s->opt.limits.max_output_total)
        rs_budget_wake(s);
}

void rs_budget_attach(rs_client *c)
{
    c->out_cb = evbuffer_add_cb(bufferevent_get_output(c->bev), rs_budget_on_out, c);
}

static void rs_budget_unauth_set(rs_client *c, size_t held)
{
    rserver *s = c->s;
    if (s == NULL)
        return;
    s->unauth_total = s->unauth_total - c->unauth_bytes + held;
    c->unauth_bytes = held;
    if (s->opt.limits.max_unauth_bytes && s->unauth_total > s->opt.limits.max_unauth_bytes)
        rs_budget_wake(s);
}

void rs_budget_detach(rs_client *c)
{
    if (c->out_cb)
        evbuffer_remove_cb_entry(bufferevent_get_output(c->bev), c->out_cb);
    c->out_cb = NULL;
    if (c->s)
        c->s->out_total -= c->out_bytes;
    c->out_bytes = 0;
    rs_budget_unauth_set(c, 0);
}

void rs_budget_unauth_note(rs_client *c)
{
    size_t held = 0;
    if (c->s && rs_auth_on(c->s) && !c->authed && c->bev)
        held = resp_parser_pending_bytes(c->parser) +
               evbuffer_get_length(bufferevent_get_input(c->bev));
    rs_budget_unauth_set(c, held);
}

/* The connected client holding the most: output (unauth 0) or unauthenticated input. */
static rs_client *rs_budget_largest(rserver *s, int unauth)
{
    rs_client *big = NULL;
    for (rs_client *c = s->clients; c; c = c->next) {
        size_t v = unauth ? c->unauth_bytes : c->out_bytes;
        if (v > 0 && (big == NULL || v > (unauth ? big->unauth_bytes : big->out_bytes)))
            big = c;
    }
    return big;
}

void rs_budget_enforce(evutil_socket_t fd, short what, void *arg)
{
    rserver *s = arg;
    const rs_limits *l = &s->opt.limits;
    rs_client *c;
    (void)fd;
    (void)what;
    while (l->max_output_total && s->out_total > l->max_output_total &&
           (c = rs_budget_largest(s, 0)) != NULL) {
        s->st.evicted_output++;
        log_warn_rl("client %llu (%s): %zu bytes of replies unread while all clients hold "
                    "%zu, more than max-output-total (%zu); closing the largest",
                    (unsigned long long)c->id, c->addr, c->out_bytes, s->out_total,
                    l->max_output_total);
        rs_client_close(c);
    }
    while (l->max_unauth_bytes && s->unauth_total > l->max_unauth_bytes &&
           (c = rs_budget_largest(s, 1)) != NULL) {
        s->st.evicted_unauth_bytes++;
        log_warn_rl("client %llu (%s): %zu bytes of an unauthenticated request while all "
                    "such clients hold %zu, more than max-unauth-bytes (%zu); closing the "
                    "largest", (unsigned long long)c->id, c->addr, c->unauth_bytes,
                    s->unauth_total, l->max_unauth_bytes);
        rs_client_close(c);
    }
}

/* ---- INFO and /metrics ---- */

/* X(stats field, INFO name, metric reason label) of the guard's counters */
#define RS_GUARD_COUNTERS(X) \
    X(rejected_per_addr, "rejected_connections_per_addr", "max_clients_per_addr") \
    X(rejected_unauth, "evicted_unauthenticated", "unauthenticated_evicted") \
    X(closed_request_timeout, "closed_request_timeout", "request_timeout") \
    X(metrics_rejected, "metrics_rejected_connections", "metrics_max_conns") \
    X(metrics_timeouts, "metrics_request_timeouts", "metrics_request_timeout") \
    X(evicted_output, "evicted_output_total_budget", "max_output_total") \
    X(evicted_unauth_bytes, "evicted_unauth_bytes_budget", "max_unauth_bytes")

void rs_guard_info(const rserver *s, resp_buf *b)
{
#define RS_GUARD_INFO_(f, name, reason) resp_buf_printf(b, name ":%llu\r\n", s->st.f);
    RS_GUARD_COUNTERS(RS_GUARD_INFO_)
#undef RS_GUARD_INFO_
    resp_buf_printf(b, "auth_waits:%llu\r\ntracked_addresses:%zu\r\n"
                    "client_output_total:%zu\r\nmax_output_total:%zu\r\n"
                    "unauth_request_bytes:%zu\r\nmax_unauth_bytes:%zu\r\n", s->st.auth_waits,
                    s->guard_naddrs, s->out_total, s->opt.limits.max_output_total,
                    s->unauth_total, s->opt.limits.max_unauth_bytes);
}

void rs_guard_metrics(rserver *s, resp_buf *b)
{
    rs_prom_family(b, "simhash_guard_closed_total", "counter",
                   "Connections refused or closed by the per-address and request limits.");
#define RS_GUARD_PROM_(f, name, reason) \
    resp_buf_printf(b, "simhash_guard_closed_total{reason=\"" reason "\"} %llu\n", s->st.f);
    RS_GUARD_COUNTERS(RS_GUARD_PROM_)
#undef RS_GUARD_PROM_
    rs_prom_family(b, "simhash_auth_waits_total", "counter",
                   "Times an AUTH try (or metrics scrape) was put back to wait for the "
                   "wrong-password budget of its address or of the server.");
    resp_buf_printf(b, "simhash_auth_waits_total %llu\n", s->st.auth_waits);
}
