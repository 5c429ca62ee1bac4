/* rs_process.c: the daemons' process helpers declared in rserver.h: the pidfile, the
 * event loop run until SIGTERM or SIGINT, and the event-loop constructor. */
#include "rserver.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#ifdef SIMHASH_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#else
static int sd_notify(int unset_environment, const char *state)
{
    (void)unset_environment;
    (void)state;
    return 0;
}
#endif
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"

/* ---- Process helpers ---- */

int rs_pidfile_write(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());

    if (fd < 0) {
        snprintf(err, errlen, "cannot write pidfile %s: %s", path, strerror(errno));
        return -1;
    }
    if (write(fd, buf, (size_t)n) != n) {
        snprintf(err, errlen, "cannot write pidfile %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

void rs_pidfile_remove(const char *path)
{
    if (path && path[0])
        unlink(path);
}

static void rs_on_signal(evutil_socket_t sig, short what, void *arg)
{
    rs_runner *rs = arg;
    (void)what;
    if (sig == SIGHUP) {
        char err[300];
        sd_notify(0, "RELOADING=1");
        if (log_reopen(err, sizeof(err)) != 0)
            log_error("SIGHUP: %s", err);
        else
            log_info("SIGHUP: log file reopened");
        if (rs->on_hup && !rs->stopped)
            rs->on_hup(rs->arg);
        sd_notify(0, "READY=1");
        return;
    }
    if (rs->stopped)
        return;
    rs->stopped = 1;
    sd_notify(0, "STOPPING=1");
    log_info("signal %d: shutting down", (int)sig);
    if (rs->on_stop && rs->on_stop(rs->arg) > 0)
        return;         /* on_stop ends the loop itself, later */
    event_base_loopexit(rs->base, NULL);
}

/* libevent's own messages (a listener without an error callback, a bad descriptor, ...)
 * go through this program's log with one rate limit per severity, so none can flood it. */
static void rs_libevent_log(int severity, const char *msg)
{
    if (severity == EVENT_LOG_DEBUG)
        log_debug("libevent: %s", msg);
    else if (severity == EVENT_LOG_MSG)
        LOG_AT_RL(LOGL_INFO, "libevent: %s", msg);
    else if (severity == EVENT_LOG_WARN)
        log_warn_rl("libevent: %s", msg);
    else
        log_error_rl("libevent: %s", msg);
}

struct event_base *rs_base_new(void)
{
    event_set_log_callback(rs_libevent_log);
    struct event_config *ecfg = event_config_new();
    struct event_base *base = NULL;
    if (ecfg) {
        event_config_set_flag(ecfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
        base = event_base_new_with_config(ecfg);
        event_config_free(ecfg);
    }
    return base ? base : event_base_new();
}

/* Frees the loop's signal events and ignores their signals from then on. Freeing them
 * gives the signals back their default action (ending the process), and a second TERM
 * or INT is common while a daemon stops (`timeout` signals the process and then its
 * group; a second Ctrl-C; an init system and an operator): it must not cut short the
 * teardown, which ends the requests in progress and logs that it stopped. The
 * signals are blocked in this thread meanwhile, so none can arrive between the two
 * steps (the pool's threads block them always, rs_pool.c); one pending then is
 * dropped by SIG_IGN. */
static void rs_signals_ignore(struct event **ev, const int *sigs, int n)
{
    sigset_t set, old;
    sigemptyset(&set);
    for (int i = 0; i < n; i++)
        sigaddset(&set, sigs[i]);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    for (int i = 0; i < n; i++) {
        if (ev[i])
            event_free(ev[i]);
        signal(sigs[i], SIG_IGN);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static const int rs_sigs[RS_RUNNER_NSIG] = { SIGTERM, SIGINT, SIGHUP };

int rs_runner_init(rs_runner *r, struct event_base *base, int (*on_stop)(void *arg),
                   void (*on_hup)(void *arg), void *arg)
{
    memset(r, 0, sizeof(*r));
    r->base = base;
    r->on_stop = on_stop;
    r->on_hup = on_hup;
    r->arg = arg;
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < RS_RUNNER_NSIG; i++)
        if ((r->ev[i] = evsignal_new(base, rs_sigs[i], rs_on_signal, r)) == NULL ||
            evsignal_add(r->ev[i], NULL) != 0) {
            log_error("cannot install signal handlers");
            rs_runner_done(r);
            return -1;
        }
    return 0;
}

int rs_runner_run(rs_runner *r)
{
    /* listening and set up: systemd (Type=notify) may start what comes after */
    sd_notify(0, "READY=1");
    int rc = event_base_dispatch(r->base) < 0 ? -1 : 0;
    rs_runner_done(r);
    return rc;
}

void rs_runner_done(rs_runner *r)
{
    rs_signals_ignore(r->ev, rs_sigs, RS_RUNNER_NSIG);
    memset(r->ev, 0, sizeof(r->ev));
}
