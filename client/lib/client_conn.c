/* client_conn.c: libsimhashclient's connections: the address list, connecting with
 * AUTH, failing over between coordinators, and sending one command with the retries
 * docs/client.md "Several coordinators" describes. client.c has the commands. */
#include "client_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

/* ---- Connection ---- */


/* Put prefix in front of c->errstr, cutting the end to fit. */
void shci_errstr_prefix(shc_client *c, const char *prefix)
{
    size_t pl = strlen(prefix), el = strlen(c->errstr);

    if (pl > SHC_ERRSTR_MAX - 1)
        pl = SHC_ERRSTR_MAX - 1;
    if (el > SHC_ERRSTR_MAX - 1 - pl)
        el = SHC_ERRSTR_MAX - 1 - pl;
    memmove(c->errstr + pl, c->errstr, el);
    memcpy(c->errstr, prefix, pl);
    c->errstr[pl + el] = '\0';
}

/* "no coordinator answered (N addresses); last: " in front of c->errstr. */
static void shci_errstr_prefix_n(shc_client *c, size_t n)
{
    char p[96];
    snprintf(p, sizeof p, "no coordinator answered (%zu addresses); last: ", n);
    shci_errstr_prefix(c, p);
}


/* Record the hiredis context error of c->rc and close the connection (the stream
 * position is unknown after any I/O error). Returns the status. */
shc_status shci_conn_failed(shc_client *c, const char *doing, int saved_errno)
{
    shc_status st = SHC_ERR_IO;
    const char *why = c->rc ? c->rc->errstr : "not connected";

    if (c->rc) {
        switch (c->rc->err) {
        case REDIS_ERR_IO:
            if (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK ||
                saved_errno == ETIMEDOUT || strstr(why, "timed out") ||
                strstr(why, "temporarily unavailable")) {
                st = SHC_ERR_TIMEOUT;
                why = "no answer in time";
            }
            break;
        case REDIS_ERR_EOF:
            why = "connection closed by the server";
            break;
        case REDIS_ERR_PROTOCOL:
            st = SHC_ERR_PROTOCOL;
            break;
        case REDIS_ERR_OOM:
            st = SHC_ERR_NOMEM;
            break;
        default:
            break;
        }
    }
    if (st == SHC_ERR_TIMEOUT)
        shci_set_error(c, st, "%s %s:%d: %s (%d ms)", doing, c->host, c->port, why,
                      c->timeout_ms);
    else
        shci_set_error(c, st, "%s %s:%d: %s", doing, c->host, c->port, why);
    if (c->rc) {
        redisFree(c->rc);
        c->rc = NULL;
    }
    return st;
}

/* Open the connection to the current address and authenticate. Returns a status. */
static shc_status shci_connect_one(shc_client *c)
{
    struct timeval tv = { c->timeout_ms / 1000, (c->timeout_ms % 1000) * 1000 };
    redisReply *r;

    if (c->rc) {
        redisFree(c->rc);
        c->rc = NULL;
    }
    errno = 0;
    c->rc = c->timeout_ms > 0 ? redisConnectWithTimeout(c->host, c->port, tv)
                              : redisConnect(c->host, c->port);
    if (!c->rc)
        return shci_set_error(c, SHC_ERR_NOMEM, "out of memory connecting to %s:%d",
                             c->host, c->port);
    if (c->rc->err)
        return shci_conn_failed(c, "cannot connect to", errno);
    if (c->timeout_ms > 0 && redisSetTimeout(c->rc, tv) != REDIS_OK)
        return shci_conn_failed(c, "cannot set timeout on", errno);
    if (c->password) {
        const char *argv[2] = { "AUTH", c->password };
        size_t lens[2] = { SHCI_LITLEN("AUTH"), strlen(c->password) };
        errno = 0;
        r = redisCommandArgv(c->rc, 2, argv, lens);
        if (!r)
            return shci_conn_failed(c, "AUTH failed on", errno);
        if (r->type == REDIS_REPLY_ERROR) {
            shc_status st = shci_reply_error(c, r, "AUTH failed: ");
            freeReplyObject(r);
            redisFree(c->rc);
            c->rc = NULL;
            return st;
        }
        freeReplyObject(r);
    }
    return shci_set_ok(c);
}

/* Connect to the first address that answers, in order from the current one plus
 * `from`, skipping those whose bit is set in *tried (each one tried gets its bit). An
 * error reply (a wrong password) ends the search: the other coordinators of the
 * corpus would say the same. Returns a status (SHC_ERR_IO when none was left). */
static shc_status shci_connect_from(shc_client *c, size_t from, uint64_t *tried)
{
    shc_status st = SHC_ERR_IO;
    for (size_t k = from; k < from + c->naddr; k++) {
        size_t i = (c->cur + k) % c->naddr;
        if (*tried & (1ull << i))
            continue;
        *tried |= 1ull << i;
        c->host = c->hosts[i];
        c->port = c->ports[i];
        st = shci_connect_one(c);
        if (st == SHC_OK) {
            c->cur = i;
            return st;
        }
        if (st != SHC_ERR_IO && st != SHC_ERR_TIMEOUT)
            return st;
    }
    return st;
}

/* Connect to the first address that answers, from the current one on, each once. */
static shc_status shci_do_connect(shc_client *c)
{
    uint64_t tried = 0;
    shc_status st = shci_connect_from(c, 0, &tried);
    if (st != SHC_OK && c->naddr > 1)
        shci_errstr_prefix_n(c, c->naddr);
    return st;
}

/* Parses "host[:port]" or "[v6]:port" (n bytes at s) into c's address list. */
static shc_status shci_add_addr(shc_client *c, const char *s, size_t n, int port)
{
    const char *h = s, *colon = NULL;
    size_t hl = n;
    if (n > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close)
            return shci_set_error(c, SHC_ERR_ARG, "address '%.*s': no ']'", (int)n, s);
        h = s + 1;
        hl = (size_t)(close - h);
        if ((size_t)(close + 1 - s) < n) {
            if (close[1] != ':')
                return shci_set_error(c, SHC_ERR_ARG, "address '%.*s': ':' expected after ']'",
                                      (int)n, s);
            colon = close + 1;
        }
    } else {
        colon = memchr(s, ':', n);
        if (colon && memchr(colon + 1, ':', n - (size_t)(colon + 1 - s)))
            colon = NULL;                   /* a bare IPv6 address: no port */
        if (colon)
            hl = (size_t)(colon - s);
    }
    if (colon) {
        long v = 0;
        const char *p = colon + 1, *end = s + n;
        if (p == end)
            return shci_set_error(c, SHC_ERR_ARG, "address '%.*s': empty port", (int)n, s);
        for (; p < end; p++) {
            if (*p < '0' || *p > '9' || v > 65535)
                return shci_set_error(c, SHC_ERR_ARG, "address '%.*s': bad port", (int)n, s);
            v = v * 10 + (*p - '0');
        }
        port = (int)v;
    }
    if (hl == 0)
        return shci_set_error(c, SHC_ERR_ARG, "address '%.*s': no host", (int)n, s);
    if (port < 1 || port > 65535)
        return shci_set_error(c, SHC_ERR_ARG, "port %d out of range (1..65535)", port);
    if (c->naddr == SHCI_MAX_ADDRS)
        return shci_set_error(c, SHC_ERR_ARG, "more than %d addresses", SHCI_MAX_ADDRS);
    char *copy = strndup(h, hl);
    if (!copy)
        return shci_set_error(c, SHC_ERR_NOMEM, "out of memory");
    c->hosts[c->naddr] = copy;
    c->ports[c->naddr++] = port;
    return SHC_OK;
}

shc_status shc_connect(const char *host, int port, int timeout_ms, const char *password,
                       shc_client **out)
{
    shc_client *c;
    shc_status st;

    *out = NULL;
    c = calloc(1, sizeof(*c));
    if (!c)
        return SHC_ERR_NOMEM;
    *out = c;
    c->port = port;
    c->timeout_ms = timeout_ms;
    c->host = "";
    if (password && !(c->password = strdup(password)))
        return shci_set_error(c, SHC_ERR_NOMEM, "out of memory");
    if (!host || !host[0])
        return shci_set_error(c, SHC_ERR_ARG, "no host given");
    if (timeout_ms < 0)
        return shci_set_error(c, SHC_ERR_ARG, "timeout %d ms is negative", timeout_ms);
    for (const char *p = host;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if ((st = shci_add_addr(c, p, n, port)) != SHC_OK) {
            for (size_t i = 0; i < c->naddr; i++)   /* a bad list leaves nothing to use */
                free(c->hosts[i]);
            c->naddr = 0;
            c->host = "";
            return st;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    c->host = c->hosts[0];
    c->port = c->ports[0];
    return shci_do_connect(c);
}

void shc_free(shc_client *c)
{
    if (!c)
        return;
    if (c->rc)
        redisFree(c->rc);
    if (c->password) {
        memset(c->password, 0, strlen(c->password));
        free(c->password);
    }
    for (size_t i = 0; i < c->naddr; i++)
        free(c->hosts[i]);
    free(c);
}

const char *shc_errstr(const shc_client *c)
{
    return c ? c->errstr : "out of memory";
}

shc_status shc_last_status(const shc_client *c)
{
    return c ? c->last : SHC_ERR_NOMEM;
}

shc_status shc_reconnect(shc_client *c)
{
    if (!c)
        return SHC_ERR_ARG;
    return shci_do_connect(c);
}

/* Make sure c is connected, reconnecting once after an earlier failure. Returns a
 * status. */
shc_status shci_ensure_connected(shc_client *c)
{
    if (c->rc)
        return SHC_OK;
    if (c->naddr == 0)
        return shci_set_error(c, SHC_ERR_ARG, "handle was never connected");
    return shci_do_connect(c);
}

long long shci_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void shci_sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

void shci_backoff(unsigned *pause)
{
    shci_sleep_ms(*pause);
    *pause = *pause < 400 ? *pause * 2 : 400;
}


/* How long -TIMEOUT replies are retried: the handle's timeout (5 s when it has none). */
long long shci_retry_budget(const shc_client *c)
{
    return c->timeout_ms > 0 ? c->timeout_ms : 5000;
}

/* Whether a command may be sent again on another coordinator after its connection
 * was lost (docs/client.md "Several coordinators"). */
static int shci_retryable(const char *cmd)
{
    static const char *const ok[] = { "SIMHASH.QUERY", "SIMHASH.ADD", "SIMHASH.CHECK",
                                      "SIMHASH.CHECKTEXT", "SIMHASH.FINGERPRINT",
                                      "SIMHASH.INFO", "SIMHASH.SCAN", NULL };
    for (size_t i = 0; ok[i]; i++)
        if (strcmp(cmd, ok[i]) == 0)
            return 1;
    return 0;
}

/* After a lost connection: on to the next address. SHC_OK when connected. */
/* After a lost connection: the next address this call has not used, from the one
 * after the current one on. */
shc_status shci_failover(shc_client *c, uint64_t *tried)
{
    return shci_connect_from(c, 1, tried);
}

/* Whether reply r is a -TIMEOUT error reply. */
static int shci_is_timeout_reply(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && r->len >= 7 && memcmp(r->str, "TIMEOUT", 7) == 0;
}

/* Send one command and read its reply into *out (never an error reply: those are
 * turned into a status). With several addresses, a retryable command whose
 * connection was lost goes to the next one (each address once). Returns a status. */
shc_status shci_run(shc_client *c, int argc, const char **argv, const size_t *lens,
                           redisReply **out)
{
    shc_status st;
    redisReply *r;

    *out = NULL;
    c->retried = 0;
    st = shci_ensure_connected(c);
    if (st != SHC_OK)
        return st;
    int multi = c->naddr > 1 && shci_retryable(argv[0]);
    uint64_t tried = 1ull << c->cur;
    long long until = multi ? shci_now_ms() + shci_retry_budget(c) : 0;
    unsigned pause = 50;
    for (;;) {
        errno = 0;
        r = redisCommandArgv(c->rc, argc, argv, lens);
        if (r == NULL) {
            /* lost connection or timeout: on to another address, each once per call */
            st = shci_conn_failed(c, "lost connection to", errno);
            if (!multi || (st != SHC_ERR_IO && st != SHC_ERR_TIMEOUT))
                return st;
            char first[SHC_ERRSTR_MAX];
            memcpy(first, c->errstr, sizeof first);
            if (shci_failover(c, &tried) != SHC_OK) {
                memcpy(c->errstr, first, sizeof first);
                return c->last = st;
            }
            c->retried = 1;
            continue;
        }
        /* -TIMEOUT: the coordinator could not finish in time, typically waiting for a
         * write lock whose holder (another coordinator) died; the lock is taken over
         * within its lease, so the call is repeated within the handle's timeout */
        if (!multi || !shci_is_timeout_reply(r) || shci_now_ms() + pause >= until)
            break;
        freeReplyObject(r);
        shci_backoff(&pause);
        c->retried = 1;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        st = shci_reply_error(c, r, "");
        freeReplyObject(r);
        return st;
    }
    *out = r;
    return shci_set_ok(c);
}
