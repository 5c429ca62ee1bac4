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
    char *password;           /* NULL: no AUTH */
    shc_status last;
    char errstr[SHC_ERRSTR_MAX];
};

/* Record status st with a printf-style message on c; returns st. */
shc_status shci_set_error(shc_client *c, shc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Record success on c; returns SHC_OK. */
shc_status shci_set_ok(shc_client *c);

/* Status of an error reply: SHC_ERR_TIMEOUT for -TIMEOUT, else SHC_ERR_SERVER. The
 * text is copied to c->errstr after prefix (may be ""). Returns the status. */
shc_status shci_reply_error(shc_client *c, const redisReply *r, const char *prefix);

/* Parse a decimal fingerprint bulk string. Returns SHC_OK or SHC_ERR_PROTOCOL. */
shc_status shci_parse_fp_reply(shc_client *c, const redisReply *r, const char *what,
                              uint64_t *fp);

/* Parse an array of [fp, distance, [docid ...]] into *out. Returns SHC_OK,
 * SHC_ERR_PROTOCOL (shape) or SHC_ERR_NOMEM; *out is NULL on failure. */
shc_status shci_parse_result(shc_client *c, const redisReply *r, shc_result **out);

#endif
