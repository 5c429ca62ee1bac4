/* rs_process.c: the daemons' process helpers declared in rserver.h: the pidfile, the
 * event loop run until SIGTERM or SIGINT, and the event-loop constructor. */
#include "rserver.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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

struct rs_run_state {
    struct event_base *base;
    void (*on_stop)(void *);
    void *arg;
    int stopped;
};

static void rs_on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct rs_run_state *rs = arg;
    (void)what;
    if (rs->stopped)
        return;
    rs->stopped = 1;
    log_info("signal %d: shutting down", (int)sig);
    if (rs->on_stop)
        rs->on_stop(rs->arg);
    event_base_loopexit(rs->base, NULL);
}

struct event_base *rs_base_new(void)
{
    struct event_config *ecfg = event_config_new();
    struct event_base *base = NULL;
    if (ecfg) {
        event_config_set_flag(ecfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
        base = event_base_new_with_config(ecfg);
        event_config_free(ecfg);
    }
    return base ? base : event_base_new();
}

int rs_run(struct event_base *base, void (*on_stop)(void *arg), void *arg)
{
    struct rs_run_state st = { base, on_stop, arg, 0 };
    struct event *eterm, *eint;
    int rc;

    signal(SIGPIPE, SIG_IGN);
    eterm = evsignal_new(base, SIGTERM, rs_on_signal, &st);
    eint = evsignal_new(base, SIGINT, rs_on_signal, &st);
    if (eterm == NULL || eint == NULL || evsignal_add(eterm, NULL) != 0 ||
        evsignal_add(eint, NULL) != 0) {
        log_error("cannot install signal handlers");
        if (eterm)
            event_free(eterm);
        if (eint)
            event_free(eint);
        return -1;
    }
    rc = event_base_dispatch(base);
    event_free(eterm);
    event_free(eint);
    return rc < 0 ? -1 : 0;
}
