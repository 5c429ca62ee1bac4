/* cli_progress.c: a progress bar on stderr, drawn only when stderr is a terminal
 * and at most every 100 ms. */
#include "cli.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define CLI_BAR_WIDTH 40

static long long cli_prog_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cli_progress_init(cli_progress *p, const char *label, size_t total)
{
    p->enabled = isatty(STDERR_FILENO);
    p->total = total;
    p->label = label;
    p->last_ms = 0;
    p->start_ms = cli_prog_now_ms();
}

void cli_progress_update(cli_progress *p, size_t done)
{
    char bar[CLI_BAR_WIDTH + 1];
    long long t;

    if (!p->enabled || p->total == 0)
        return;
    t = cli_prog_now_ms();
    if (done < p->total && t - p->last_ms < 100)
        return;
    p->last_ms = t;
    if (done > p->total)
        done = p->total;
    size_t fill = done * CLI_BAR_WIDTH / p->total;
    for (size_t i = 0; i < CLI_BAR_WIDTH; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[CLI_BAR_WIDTH] = '\0';
    /* the remaining time at the rate so far */
    char eta[32] = "";
    if (done > 0 && done < p->total) {
        long long left = (long long)((double)(t - p->start_ms) * (double)(p->total - done) /
                                     (double)done / 1000.0);
        snprintf(eta, sizeof(eta), " ETA %lld:%02lld", left / 60, left % 60);
    }
    fprintf(stderr, "\r%s [%s] %3u%%%s\033[K", p->label, bar,
            (unsigned)(done * 100 / p->total), eta);
    fflush(stderr);
}

void cli_progress_end(cli_progress *p)
{
    if (!p->enabled || p->total == 0)
        return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
}
