/* log.c: leveled logging with file:line and per-call-site rate limiting; see log.h. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <unistd.h>

int log_level_current = LOGL_INFO;
static FILE *log_fp;        /* NULL: stderr */

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
    setvbuf(f, NULL, _IOLBF, 0);
    log_close();
    log_fp = f;
    return 0;
}

void log_close(void)
{
    if (log_fp != NULL)
        fclose(log_fp);
    log_fp = NULL;
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

static void log_vwrite(int level, const char *file, int line, const char *fmt, va_list ap,
                       unsigned long suppressed)
{
    char msg[1024];
    char ts[32];
    struct timeval tv;
    struct tm tm;
    const char *base = strrchr(file, '/');
    FILE *out = log_fp != NULL ? log_fp : stderr;

    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    /* one line per message: no embedded newlines from peers' text */
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    if (suppressed > 0)
        fprintf(out, "%s.%03ld [%ld] %c %s:%d %s (%lu similar messages suppressed)\n", ts,
                (long)(tv.tv_usec / 1000), (long)getpid(),
                level_letters[level < 0 || level > 3 ? 3 : level],
                base ? base + 1 : file, line, msg, suppressed);
    else
        fprintf(out, "%s.%03ld [%ld] %c %s:%d %s\n", ts, (long)(tv.tv_usec / 1000),
                (long)getpid(), level_letters[level < 0 || level > 3 ? 3 : level],
                base ? base + 1 : file, line, msg);
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
