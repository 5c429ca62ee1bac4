/* log.c: leveled logging with file:line and per-call-site rate limiting; see log.h. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <syslog.h>
#include <unistd.h>

int log_level_current = LOGL_INFO;
static FILE *log_fp;        /* NULL: stderr */
static char *log_path;      /* the file's path, for log_reopen */
static int log_journal = -1; /* stderr is journald's stream: -1 not checked yet */
static int log_to_syslog;
static char log_ident[64];

static const char *const level_names[] = { "debug", "info", "warning", "error" };
static const char level_letters[] = "DIWE";

int log_open(const char *path, char *err, size_t errlen)
{
    if (path == NULL || path[0] == '\0') {
        log_close();
        return 0;
    }
    FILE *f = fopen(path, "a");
    if (f == NULL) {
        snprintf(err, errlen, "cannot open log file %s: %s", path, strerror(errno));
        return -1;
    }
    char *copy = strdup(path);
    if (copy == NULL) {
        fclose(f);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    setvbuf(f, NULL, _IOLBF, 0);
    log_close();
    log_fp = f;
    log_path = copy;
    return 0;
}

void log_close(void)
{
    if (log_fp != NULL)
        fclose(log_fp);
    log_fp = NULL;
    free(log_path);
    log_path = NULL;
}

int log_reopen(char *err, size_t errlen)
{
    if (log_path == NULL)
        return 0;
    FILE *f = fopen(log_path, "a");
    if (f == NULL) {
        snprintf(err, errlen, "cannot open log file %s again: %s", log_path, strerror(errno));
        return -1;
    }
    setvbuf(f, NULL, _IOLBF, 0);
    fclose(log_fp);
    log_fp = f;
    return 0;
}

void log_syslog(const char *ident, int on)
{
    if (log_to_syslog)
        closelog();
    log_to_syslog = on;
    if (on) {
        snprintf(log_ident, sizeof(log_ident), "%s", ident ? ident : "simhash");
        openlog(log_ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
    }
}

int log_stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st) != 0)
        return 0;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

int log_level_parse(const char *name)
{
    if (name == NULL)
        return -1;
    for (int i = 0; i < 4; i++)
        if (strcasecmp(name, level_names[i]) == 0)
            return i;
    if (strcasecmp(name, "warn") == 0)
        return LOGL_WARN;
    return -1;
}

const char *log_level_name(int level)
{
    return level >= 0 && level < 4 ? level_names[level] : "?";
}

void log_set_level(int level)
{
    if (level >= LOGL_DEBUG && level <= LOGL_ERROR)
        log_level_current = level;
}

/* syslog(3) priority of a level. */
static int log_priority(int level)
{
    static const int prio[] = { LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERR };
    return prio[level < 0 || level > 3 ? 3 : level];
}

static void log_vwrite(int level, const char *file, int line, const char *fmt, va_list ap,
                       unsigned long suppressed)
{
    char msg[1024], more[64] = "";
    const char *base = strrchr(file, '/');
    FILE *out = log_fp != NULL ? log_fp : stderr;
    char letter = level_letters[level < 0 || level > 3 ? 3 : level];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    /* one line per message: no embedded newlines from peers' text */
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    if (suppressed > 0)
        snprintf(more, sizeof(more), " (%lu similar messages suppressed)", suppressed);
    base = base ? base + 1 : file;
    if (log_to_syslog)
        syslog(log_priority(level), "%c %s:%d %s%s", letter, base, line, msg, more);
    if (log_fp == NULL) {
        if (log_journal < 0)
            log_journal = log_stderr_is_journal();
        if (log_journal) {
            fprintf(out, "<%d>%c %s:%d %s%s\n", log_priority(level), letter, base, line, msg,
                    more);
            return;
        }
    }
    char ts[32], off[8];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    strftime(off, sizeof(off), "%z", &tm);         /* +0200 -> +02:00 */
    fprintf(out, "%s.%03ld%.3s:%.2s [%ld] %c %s:%d %s%s\n", ts, (long)(tv.tv_usec / 1000), off,
            off + 3, (long)getpid(), letter, base, line, msg, more);
}

void log_write(int level, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    int saved = errno;

    va_start(ap, fmt);
    log_vwrite(level, file, line, fmt, ap, 0);
    va_end(ap);
    errno = saved;
}

int log_rl_allow(log_rl *rl, unsigned long *suppressed)
{
    time_t now = time(NULL);

    *suppressed = 0;
    if (now - rl->window_start >= LOG_RL_WINDOW) {
        *suppressed = rl->suppressed;
        rl->window_start = now;
        rl->count = 0;
        rl->suppressed = 0;
    }
    if (rl->count < LOG_RL_BURST) {
        rl->count++;
        return 1;
    }
    rl->suppressed++;
    return 0;
}

void log_assert_fail(const char *expr, const char *file, int line)
{
    log_write(LOGL_ERROR, file, line, "assertion failed: %s", expr);
    if (log_fp != NULL)     /* logging to a file: say it where a crash is looked for */
        fprintf(stderr, "%s:%d: assertion failed: %s\n", file, line, expr);
    abort();
}

void log_write_rl(log_rl *rl, int level, const char *file, int line, const char *fmt, ...)
{
    unsigned long suppressed;
    va_list ap;
    int saved = errno;

    if (!log_rl_allow(rl, &suppressed))
        return;
    va_start(ap, fmt);
    log_vwrite(level, file, line, fmt, ap, suppressed);
    va_end(ap);
    errno = saved;
}
