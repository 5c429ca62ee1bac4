/* rasync.h: hiredis async connections on libevent, written once for the coordinator
 * and the worker (as hiredis keeps its event-loop glue in adapters/): connect with
 * the reply guard and the libevent adapter attached, reconnect backoff with jitter,
 * the monotonic clock, and milliseconds as a struct timeval. */
#ifndef SIMHASH_RASYNC_H
#define SIMHASH_RASYNC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#include <hiredis/async.h>

struct event_base;

/* Microseconds / milliseconds on a monotonic clock. */
uint64_t ra_now_us(void);
uint64_t ra_now_ms(void);

/* ms milliseconds as a struct timeval (for evtimer_add). */
struct timeval ra_tv_ms(unsigned ms);

/* Reconnect backoff: the delay doubles from min_ms up to max_ms and each delay is
 * drawn from [d/2, d], so peers that lost one server do not come back in step. */
typedef struct ra_backoff {
    unsigned cur_ms;            /* 0: no failure since the last reset */
} ra_backoff;

/* The next delay in ms (first failure: min_ms, jittered). */
unsigned ra_backoff_next(ra_backoff *b, unsigned min_ms, unsigned max_ms);
/* A connection succeeded: the next failure starts again from min_ms. */
void ra_backoff_reset(ra_backoff *b);

/* Unused bytes of a connection's read buffer kept between bursts of replies. */
#define RA_READ_BUF_KEEP (256u * 1024u)

/* Starts a non-blocking connection to host:port on base: the reply guard installed
 * (common/net/hiredis_guard.h), ac->data = data, the connect and disconnect callbacks
 * set. Returns the context (hiredis frees it after the disconnect callback, or after
 * a failed connect callback), or NULL with a reason in err. */
redisAsyncContext *ra_connect(struct event_base *base, const char *host, int port, void *data,
                              redisConnectCallback *on_connect,
                              redisDisconnectCallback *on_disconnect, char *err, size_t errlen);

#endif
