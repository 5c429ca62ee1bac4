/* client_int.h: internals shared by the files of libsimhashclient (not installed). */
#ifndef SIMHASH_CLIENT_INT_H
#define SIMHASH_CLIENT_INT_H

/* Length of a string literal (a command name), counted by the compiler. */
#define SHCI_LITLEN(lit) (sizeof("" lit) - 1)

#include "simhash/client.h"

#include <hiredis/hiredis.h>

#define SHCI_MAX_ADDRS 64

struct shc_client {
    redisContext *rc;         /* NULL when not connected */
    char *host;               /* the current address (hosts[cur]) */
    int port;
    char *hosts[SHCI_MAX_ADDRS]; /* every address given, in order */
    int ports[SHCI_MAX_ADDRS];
    size_t naddr, cur;
    int retried;              /* the last command was sent again on another address */
    int timeout_ms;
    unsigned bulk_retry_ms;   /* shc_set_bulk_retry; 0: -TIMEOUT only, several addresses */
    char *password;           /* NULL: no AUTH */
    shc_status last;
    char errstr[SHC_ERRSTR_MAX];
};

/* Record status st with a printf-style message on c; returns st. */
shc_status shci_set_error(shc_client *c, shc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Record success on c; returns SHC_OK. */
shc_status shci_set_ok(shc_client *c);

/* ---- client_conn.c ---- */

/* Put prefix in front of c->errstr, cutting the end to fit. */
void shci_errstr_prefix(shc_client *c, const char *prefix);
/* A lost connection: the status and message, the connection closed. */
shc_status shci_conn_failed(shc_client *c, const char *doing, int saved_errno);
/* Connected, reconnecting after an earlier failure. Returns a status. */
shc_status shci_ensure_connected(shc_client *c);
/* On to the next address not in *tried (bit i: address i used by this call). */
shc_status shci_failover(shc_client *c, uint64_t *tried);
/* One command and its reply (never an error reply: those become a status), with the
 * failover and -TIMEOUT retries of retryable commands. */
shc_status shci_run(shc_client *c, int argc, const char **argv, const size_t *lens,
                    redisReply **out);
long long shci_now_ms(void);
/* The pauses between repeats of a -TIMEOUT call: sleep *pause ms, then double it, up to
 * 400 ms (callers start at 50). */
void shci_backoff(unsigned *pause);
/* How long -TIMEOUT replies are retried: the handle's timeout (5 s when it has none). */
long long shci_retry_budget(const shc_client *c);

/* Status of an error reply: SHC_ERR_TIMEOUT for -TIMEOUT, else SHC_ERR_SERVER. The
 * text is copied to c->errstr after prefix (may be ""). Returns the status. */
shc_status shci_reply_error(shc_client *c, const redisReply *r, const char *prefix);

/* Parse a decimal fingerprint bulk string. Returns SHC_OK or SHC_ERR_PROTOCOL. */
shc_status shci_parse_fp_reply(shc_client *c, const redisReply *r, const char *what,
                              uint64_t *fp);

/* Parse an array of [fp, distance, [docid ...]] into *out. Returns SHC_OK,
 * SHC_ERR_PROTOCOL (shape) or SHC_ERR_NOMEM; *out is NULL on failure. */
shc_status shci_parse_result(shc_client *c, const redisReply *r, shc_result **out);
/* The same, for [[fp, [docid ...]] ...] when scan is set (SIMHASH.SCAN). */
shc_status shci_parse_matches(shc_client *c, const redisReply *r, int scan, shc_result **out);

#endif
