/* stall.c: how often this machine takes a CPU away from a running program.
 *
 * One thread per CPU, pinned, reads the monotonic clock in a loop for --seconds and
 * counts the gaps between consecutive reads longer than 0.5, 1 and 5 ms: time the
 * thread was runnable but did not run (other programs, kernel threads, or the
 * hypervisor taking the virtual CPU). Run on an otherwise idle machine, it is the
 * floor under any latency percentile measured there. Prints
 *   bench=stall metric=cpu<N>_gaps_over_<X>ms value=<count>
 *   bench=stall metric=cpu<N>_max_gap_ms value=<ms>
 * and the same summed over CPUs. Busy for --seconds on every CPU (bounded: 1-60 s). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STALL_MAX_CPUS 256

typedef struct stall_cpu {
    int cpu;
    double seconds;
    unsigned long gaps05, gaps1, gaps5;
    double max_gap;
    int err;
} stall_cpu;

static double stall_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *stall_run(void *arg)
{
    stall_cpu *c = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(c->cpu, &set);
    c->err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (c->err != 0)
        return NULL;
    double t0 = stall_now(), last = t0, t;
    while ((t = stall_now()) - t0 < c->seconds) {
        double g = t - last;
        if (g > c->max_gap)
            c->max_gap = g;
        c->gaps05 += g > 0.0005;
        c->gaps1 += g > 0.001;
        c->gaps5 += g > 0.005;
        last = t;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    double seconds = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            char *end;
            seconds = strtod(argv[++i], &end);
            if (*end != '\0' || !(seconds >= 1 && seconds <= 60)) {
                fprintf(stderr, "bench-stall: --seconds: a number from 1 to 60\n");
                return 2;
            }
        } else {
            fprintf(stderr, "usage: bench-stall [--seconds S]   (default 5; every CPU busy "
                            "for S seconds)\n");
            return !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help") ? 0 : 2;
        }
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1 || n > STALL_MAX_CPUS) {
        fprintf(stderr, "bench-stall: cannot use %ld CPUs\n", n);
        return 1;
    }
    static stall_cpu cpus[STALL_MAX_CPUS];
    static pthread_t th[STALL_MAX_CPUS];
    for (long i = 0; i < n; i++) {
        cpus[i].cpu = (int)i;
        cpus[i].seconds = seconds;
        int rc = pthread_create(&th[i], NULL, stall_run, &cpus[i]);
        if (rc != 0) {
            fprintf(stderr, "bench-stall: pthread_create: %s\n", strerror(rc));
            return 1;
        }
    }
    unsigned long g05 = 0, g1 = 0, g5 = 0;
    double mx = 0;
    for (long i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        stall_cpu *c = &cpus[i];
        if (c->err != 0) {
            fprintf(stderr, "bench-stall: pinning to CPU %d: %s\n", c->cpu, strerror(c->err));
            return 1;
        }
        printf("bench=stall metric=cpu%d_gaps_over_0.5ms value=%lu\n", c->cpu, c->gaps05);
        printf("bench=stall metric=cpu%d_gaps_over_1ms value=%lu\n", c->cpu, c->gaps1);
        printf("bench=stall metric=cpu%d_gaps_over_5ms value=%lu\n", c->cpu, c->gaps5);
        printf("bench=stall metric=cpu%d_max_gap_ms value=%.3f\n", c->cpu, c->max_gap * 1e3);
        g05 += c->gaps05;
        g1 += c->gaps1;
        g5 += c->gaps5;
        if (c->max_gap > mx)
            mx = c->max_gap;
    }
    printf("bench=stall metric=seconds value=%g\n", seconds);
    printf("bench=stall metric=gaps_over_0.5ms value=%lu\n", g05);
    printf("bench=stall metric=gaps_over_1ms value=%lu\n", g1);
    printf("bench=stall metric=gaps_over_5ms value=%lu\n", g5);
    printf("bench=stall metric=max_gap_ms value=%.3f\n", mx * 1e3);
    return 0;
}
