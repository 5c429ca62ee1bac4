/* dl.h: what bench-dist_load's modes share (bench/dist_load.c has the program and its
 * modes): the options, the corpus's fingerprints and document
 * ids, the connection, pipelined replies and the machine-readable report. */
#ifndef SIMHASH_BENCH_DL_H
#define SIMHASH_BENCH_DL_H

#include <stdint.h>

#include <hiredis/hiredis.h>

#include "layout_ops.h"
#include "perm.h"

typedef struct dl_opts {
    const char *mode, *host, *name, *trace;
    int port;
    unsigned blocks, distance, layout;
    int dirs;                 /* --dirs: read the directories first */
    uint64_t seed, count, offset, corpus, depth;
    double seconds, rate;
} dl_opts;

extern dl_opts opt;
extern perm_set ps;
extern layout_ctx lay;        /* the layout of --layout (layout_ops.h) */

/* Replies of a run: operations, commands, error replies (the first kept), rows. */
typedef struct dl_stats {
    uint64_t ops, cmds, errors, rows;
    double secs;
    char first_error[160];
} dl_stats;

/* Fingerprint number i of the corpus. */
uint64_t dl_fp(uint64_t i);
/* Writes document id number id (30 bytes: a URL-like string) into buf[32]; returns
 * its length. */
int dl_doc(char *buf, uint64_t id);
/* Prints "bench=<name> metric=<metric> value=<v>". */
void dl_metric(const char *metric, double v);
/* Prints "bench-dist_load: what: why" and exits 1. */
void die(const char *what, const char *why);
/* Connects to --host/--port (dies on failure). */
redisContext *dl_connect(void);
/* Reads replies until at most `keep` of *pending are outstanding. */
void dl_drain(redisContext *c, uint64_t *pending, uint64_t keep, dl_stats *st);
/* Prints the rate "<what>_per_sec" and the counts of st; returns 1 when replies were
 * errors, else 0. */
int dl_report(const dl_stats *st, const char *what);

#endif
