/* log.h: leveled logging to stderr or a log file, with file:line, printf-format
 * checking and a per-call-site rate limit for messages that can repeat in bursts
 * (a lost Redis node, a flood of bad requests).
 *
 * Line formats: to a file or a terminal, "2024-05-01T12:00:00.123+02:00 [pid] W
 * file.c:42 message" (ISO 8601 with the UTC offset); to journald (stderr is the
 * stream systemd names in JOURNAL_STREAM), "<4>W file.c:42 message": the syslog
 * priority prefix journald reads, no time or pid (the journal keeps them). With
 * log_syslog(1) every message also goes to syslog(3), facility daemon. */
#ifndef SIMHASH_LOG_H
#define SIMHASH_LOG_H

#include <stddef.h>
#include <time.h>

/* Not LOG_* so that <syslog.h> can be included beside this header. */
enum log_level { LOGL_DEBUG = 0, LOGL_INFO = 1, LOGL_WARN = 2, LOGL_ERROR = 3 };

extern int log_level_current;

/* Send messages to path (appended, created 0644), or to stderr when path is NULL or
 * empty. Returns 0, or -1 with err set (the previous destination stays). */
int log_open(const char *path, char *err, size_t errlen);
void log_close(void);
/* Open the log file again by the same path (after logrotate moved it); nothing for
 * stderr. Returns 0, or -1 with err set (the old file stays in use). */
int log_reopen(char *err, size_t errlen);
/* Also send every message to syslog(3) as ident (on), or stop (off). */
void log_syslog(const char *ident, int on);
/* 1 when stderr is journald's stream (JOURNAL_STREAM names its device and inode). */
int log_stderr_is_journal(void);

/* "debug", "info", "warning" (or "warn"), "error" -> level; -1 when unknown. */
int log_level_parse(const char *name);
const char *log_level_name(int level);
void log_set_level(int level);

/* One line: "2024-05-01T12:00:00.123+00:00 [pid] W file.c:42 message" (see above). */
void log_write(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Rate limit state of one call site: at most LOG_RL_BURST messages per
 * LOG_RL_WINDOW seconds; the first message after a quiet window says how many
 * were suppressed. */
#define LOG_RL_BURST 5
#define LOG_RL_WINDOW 10
typedef struct log_rl {
    time_t window_start;
    unsigned count;
    unsigned long suppressed;
} log_rl;

/* 1 when this message may be written; *suppressed gets the number dropped since the
 * last one written (0 most of the time). */
int log_rl_allow(log_rl *rl, unsigned long *suppressed);
void log_write_rl(log_rl *rl, int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#define LOG_AT(lvl, ...) \
    do { \
        if ((lvl) >= log_level_current) \
            log_write((lvl), __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

#define log_debug(...) LOG_AT(LOGL_DEBUG, __VA_ARGS__)
#define log_info(...)  LOG_AT(LOGL_INFO, __VA_ARGS__)
#define log_warn(...)  LOG_AT(LOGL_WARN, __VA_ARGS__)
#define log_error(...) LOG_AT(LOGL_ERROR, __VA_ARGS__)

/* Rate-limited forms: one static limiter per call site. */
#define LOG_AT_RL(lvl, ...) \
    do { \
        static log_rl log_rl_site_; \
        if ((lvl) >= log_level_current) \
            log_write_rl(&log_rl_site_, (lvl), __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

#define log_warn_rl(...)  LOG_AT_RL(LOGL_WARN, __VA_ARGS__)
#define log_error_rl(...) LOG_AT_RL(LOGL_ERROR, __VA_ARGS__)

/* ---- Invariants ---- */

/* Logs "assertion failed: EXPR" with file:line (at every level, to stderr too when
 * logging to a file) and aborts. */
void log_assert_fail(const char *expr, const char *file, int line)
    __attribute__((noreturn));

/* An invariant of a state machine (requests, fan-out, jobs): checked in every build,
 * Release too (unlike assert(3)), as redis's serverAssert: continuing on a broken
 * count would answer a client twice or free memory still in use. */
#define SH_ASSERT(cond) \
    ((cond) ? (void)0 : log_assert_fail(#cond, __FILE__, __LINE__))

#endif
