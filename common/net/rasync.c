/* rasync.c: hiredis async connections on libevent (see rasync.h). */
#include "rasync.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <hiredis/adapters/libevent.h>

#include "hiredis_guard.h"

uint64_t ra_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t ra_now_ms(void)
{
    return ra_now_us() / 1000u;
}

struct timeval ra_tv_ms(unsigned ms)
{
    struct timeval tv = { (time_t)(ms / 1000u), (suseconds_t)(ms % 1000u) * 1000 };
    return tv;
}

unsigned ra_backoff_next(ra_backoff *b, unsigned min_ms, unsigned max_ms)
{
    if (min_ms == 0)
        min_ms = 1;
    if (max_ms < min_ms)
        max_ms = min_ms;
    if (b->cur_ms == 0)
        b->cur_ms = min_ms;
    else
        b->cur_ms = b->cur_ms > max_ms / 2 ? max_ms : b->cur_ms * 2;
    return b->cur_ms / 2 + (unsigned)(random() % (b->cur_ms / 2 + 1));
}

void ra_backoff_reset(ra_backoff *b)
{
    b->cur_ms = 0;
}

redisAsyncContext *ra_connect(struct event_base *base, const char *host, int port, void *data,
                              redisConnectCallback *on_connect,
                              redisDisconnectCallback *on_disconnect, char *err, size_t errlen)
{
    redisAsyncContext *ac = redisAsyncConnect(host, port);
    if (ac == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (ac->err) {
        snprintf(err, errlen, "cannot connect: %s", ac->errstr);
        redisAsyncFree(ac);
        return NULL;
    }
    ac->data = data;
    hiredis_guard(ac);
    /* hiredis frees its read buffer whenever it is empty with more than maxbuf (16 KiB)
     * unused, and allocates it again at the next read: under a pipelined load that is
     * a large allocation and free per burst of replies, each setting off glibc's
     * consolidation of its small free chunks. Kept up to RA_READ_BUF_KEEP instead. */
    ac->c.reader->maxbuf = RA_READ_BUF_KEEP;
    if (redisLibeventAttach(ac, base) != REDIS_OK) {
        redisAsyncFree(ac);
        snprintf(err, errlen, "cannot attach to the event loop");
        return NULL;
    }
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    return ac;
}
