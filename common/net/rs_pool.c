/* rs_pool.c: the thread pool for CPU-heavy request work (see rs_pool.h). One mutex
 * guards the owners, their queues and the list of finished jobs; a condition variable
 * wakes the threads; a non-blocking pipe wakes the event loop, which calls done(). */
#include "rs_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"

typedef struct rs_pool_job {
    struct rs_pool_owner *owner;
    void (*work)(void *arg);
    void (*done)(void *arg, int ran);
    void *arg;
    struct rs_pool_job *next;
} rs_pool_job;

/* One owner with jobs waiting or running: its queue, and its place in the ring of
 * owners that have jobs waiting (served in turn). */
typedef struct rs_pool_owner {
    uint64_t id;
    unsigned count;                 /* waiting + running */
    rs_pool_job *head, *tail;       /* waiting, in order */
    int in_ring;
    struct rs_pool_owner *rnext;    /* ring of owners with waiting jobs */
    struct rs_pool_owner *next;     /* every owner with count > 0 */
} rs_pool_owner;

struct rs_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t *threads;
    unsigned nthreads;
    unsigned queue_max, owner_max;
    int stop;
    rs_pool_owner *owners;
    rs_pool_owner *ring_head, *ring_tail;
    rs_pool_job *done_head, *done_tail;     /* ran, done() not called yet */
    int wake[2];                    /* pipe: a thread writes, the loop reads */
    struct event *wake_ev;
    rs_pool_stats st;
};

static rs_pool_owner *rs_pool_owner_get(rs_pool *p, uint64_t id, int create)
{
    for (rs_pool_owner *o = p->owners; o; o = o->next)
        if (o->id == id)
            return o;
    if (!create)
        return NULL;
    rs_pool_owner *o = calloc(1, sizeof(*o));
    if (o == NULL)
        return NULL;
    o->id = id;
    o->next = p->owners;
    p->owners = o;
    return o;
}

static void rs_pool_owner_put(rs_pool *p, rs_pool_owner *o)
{
    if (--o->count > 0)
        return;
    for (rs_pool_owner **pp = &p->owners; *pp; pp = &(*pp)->next)
        if (*pp == o) {
            *pp = o->next;
            break;
        }
    free(o);
}

static void rs_pool_ring_push(rs_pool *p, rs_pool_owner *o)
{
    o->in_ring = 1;
    o->rnext = NULL;
    if (p->ring_tail)
        p->ring_tail->rnext = o;
    else
        p->ring_head = o;
    p->ring_tail = o;
}

/* The next job, from the owner at the head of the ring, which then goes to the back
 * when it has more waiting. Under the lock; NULL when none waits. */
static rs_pool_job *rs_pool_take(rs_pool *p)
{
    rs_pool_owner *o = p->ring_head;
    if (o == NULL)
        return NULL;
    p->ring_head = o->rnext;
    if (p->ring_head == NULL)
        p->ring_tail = NULL;
    o->in_ring = 0;
    rs_pool_job *j = o->head;
    o->head = j->next;
    if (o->head == NULL)
        o->tail = NULL;
    else
        rs_pool_ring_push(p, o);
    j->next = NULL;
    p->st.queued--;
    return j;
}

/* The pool's threads run at a lower priority (nice + RS_POOL_NICE, Linux's per-thread
 * nice value) than the event loop, so on a busy machine the loop's I/O and cheap
 * requests get the CPU before the long jobs. */
#define RS_POOL_NICE 10

static void *rs_pool_thread(void *arg)
{
    rs_pool *p = arg;
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    if (errno == 0 && setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice + RS_POOL_NICE) != 0)
        log_debug("pool: cannot lower a thread's priority: %s", strerror(errno));
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->ring_head == NULL)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop)
            break;
        rs_pool_job *j = rs_pool_take(p);
        p->st.running++;
        pthread_mutex_unlock(&p->mu);
        j->work(j->arg);
        pthread_mutex_lock(&p->mu);
        p->st.running--;
        p->st.jobs++;
        if (p->done_tail)
            p->done_tail->next = j;
        else
            p->done_head = j;
        p->done_tail = j;
        /* a full pipe already holds a wake-up: nothing lost */
        if (write(p->wake[1], "x", 1) < 0 && errno != EAGAIN)
            log_error_rl("pool: cannot wake the event loop: %s", strerror(errno));
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Calls done(arg, ran) for every job in the list and frees them (on the loop's thread,
 * without the lock). */
static void rs_pool_finish(rs_pool *p, rs_pool_job *j, int ran)
{
    while (j) {
        rs_pool_job *nx = j->next;
        pthread_mutex_lock(&p->mu);
        rs_pool_owner_put(p, j->owner);
        pthread_mutex_unlock(&p->mu);
        j->done(j->arg, ran);
        free(j);
        j = nx;
    }
}

static void rs_pool_on_wake(evutil_socket_t fd, short what, void *arg)
{
    rs_pool *p = arg;
    char buf[256];
    (void)what;
    while (read(fd, buf, sizeof buf) > 0) {
    }
    pthread_mutex_lock(&p->mu);
    rs_pool_job *j = p->done_head;
    p->done_head = p->done_tail = NULL;
    pthread_mutex_unlock(&p->mu);
    rs_pool_finish(p, j, 1);
}

rs_pool *rs_pool_new(struct event_base *base, unsigned threads, unsigned queue_max,
                     unsigned owner_max, char *err, size_t errlen)
{
    rs_pool *p = calloc(1, sizeof(*p));
    if (p == NULL || threads == 0 || (p->threads = calloc(threads, sizeof(pthread_t))) == NULL) {
        snprintf(err, errlen, threads == 0 ? "a pool needs a thread" : "out of memory");
        free(p);
        return NULL;
    }
    p->queue_max = queue_max ? queue_max : 1;
    p->owner_max = owner_max ? owner_max : 1;
    p->wake[0] = p->wake[1] = -1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (pipe2(p->wake, O_NONBLOCK | O_CLOEXEC) != 0 ||
        (p->wake_ev = event_new(base, p->wake[0], EV_READ | EV_PERSIST, rs_pool_on_wake, p)) ==
            NULL ||
        event_add(p->wake_ev, NULL) != 0) {
        snprintf(err, errlen, "pool: %s", strerror(errno));
        rs_pool_free(p);
        return NULL;
    }
    /* the threads start with every signal blocked: the event loop's thread takes them
     * (a TERM handled on a pool thread would bypass rs_runner's ignore at shutdown) */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = 0;
    for (; p->nthreads < threads; p->nthreads++)
        if ((rc = pthread_create(&p->threads[p->nthreads], NULL, rs_pool_thread, p)) != 0)
            break;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "pool: cannot start a thread: %s", strerror(rc));
        rs_pool_free(p);
        return NULL;
    }
    return p;
}

void rs_pool_free(rs_pool *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    rs_pool_job *ran = p->done_head;
    p->done_head = p->done_tail = NULL;
    rs_pool_finish(p, ran, 1);
    while (p->ring_head) {
        rs_pool_job *j = rs_pool_take(p);
        rs_pool_finish(p, j, 0);
    }
    if (p->wake_ev)
        event_free(p->wake_ev);
    if (p->wake[0] >= 0)
        close(p->wake[0]);
    if (p->wake[1] >= 0)
        close(p->wake[1]);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p);
}

int rs_pool_submit(rs_pool *p, uint64_t owner, void (*work)(void *arg),
                   void (*done)(void *arg, int ran), void *arg)
{
    rs_pool_job *j = calloc(1, sizeof(*j));
    if (j == NULL)
        return -1;
    j->work = work;
    j->done = done;
    j->arg = arg;
    pthread_mutex_lock(&p->mu);
    rs_pool_owner *o = p->st.queued < p->queue_max ? rs_pool_owner_get(p, owner, 1) : NULL;
    if (o == NULL || o->count >= p->owner_max) {
        p->st.refused++;
        pthread_mutex_unlock(&p->mu);
        free(j);
        return -1;
    }
    o->count++;
    j->owner = o;
    if (o->tail)
        o->tail->next = j;
    else
        o->head = j;
    o->tail = j;
    if (!o->in_ring)
        rs_pool_ring_push(p, o);
    p->st.queued++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

void rs_pool_get_stats(rs_pool *p, rs_pool_stats *out)
{
    pthread_mutex_lock(&p->mu);
    *out = p->st;
    pthread_mutex_unlock(&p->mu);
}
