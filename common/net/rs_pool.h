/* rs_pool.h: a small pool of threads for CPU-heavy request work (fingerprinting a large
 * text or HTML page), so the event loop only does I/O and cheap work.
 *
 * A job runs work(arg) on a pool thread, then done(arg, ran) on the event loop's thread
 * (a pipe wakes the loop). The queue is bounded in total and per owner (a client), and
 * the threads take jobs from the owners in turn (round robin), so one client pipelining
 * many large requests delays its own requests, not the others'. */
#ifndef SIMHASH_RS_POOL_H
#define SIMHASH_RS_POOL_H

#include <stddef.h>
#include <stdint.h>

struct event_base;

typedef struct rs_pool rs_pool;

typedef struct rs_pool_stats {
    unsigned long long jobs;        /* jobs run */
    unsigned long long refused;     /* submits refused: queue or owner share full */
    unsigned queued;                /* waiting now */
    unsigned running;               /* on a thread now */
} rs_pool_stats;

/* threads >= 1, queue_max jobs waiting at most in all, owner_max per owner (waiting or
 * running). Returns NULL with err set. */
rs_pool *rs_pool_new(struct event_base *base, unsigned threads, unsigned queue_max,
                     unsigned owner_max, char *err, size_t errlen);

/* Stops the threads after their current job; jobs still waiting get done(arg, 0) (not
 * run), called here; jobs that ran get done(arg, 1). */
void rs_pool_free(rs_pool *p);

/* Queue work(arg) for owner. Returns 0, or -1 when the queue or owner's share is full
 * (nothing queued; the caller answers -BUSY or runs it itself). */
int rs_pool_submit(rs_pool *p, uint64_t owner, void (*work)(void *arg),
                   void (*done)(void *arg, int ran), void *arg);

void rs_pool_get_stats(rs_pool *p, rs_pool_stats *out);

#endif
