/* ext_match.h: find-all / find-clusters within a memory budget, spilling to a
 * temporary directory (ext_match.c). */
#ifndef SIMHASH_EXT_MATCH_H
#define SIMHASH_EXT_MATCH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "match.h"
#include "perm.h"

typedef struct xm_opts {
    size_t memory;              /* bytes the run may hold */
    const char *tmpdir;         /* where temporary files go (unlinked at once) */
    unsigned threads;           /* 0: all cores */
} xm_opts;

typedef struct xm_stats {
    uint64_t values, distinct, pairs, clusters;
    uint64_t tmp_bytes;         /* written to temporary files */
    double secs_split, secs_match; /* partition passes; reading, sorting, matching */
} xm_stats;

typedef struct xm_repeat {
    uint64_t v, count;          /* a value given count >= 2 times */
} xm_repeat;

typedef struct xm_runinfo xm_runinfo;

typedef struct xm_run {
    const char *prog;
    xm_opts opt;
    unsigned threads;
    char err[512];              /* "-" when the message was printed already */
    int in_fd;                  /* the values, 8-byte little-endian each (after table 0:
                                   the distinct ones) */
    int dist_fd;                /* table 0 writes the distinct values here */
    uint64_t dist_end;          /* atomic: its length in bytes */
    uint64_t n;
    perm_set ps;
    xm_stats st;
    /* pairs: in memory (mem, sorted once complete) and sorted runs in pair_fd */
    match_pair *mem;
    size_t nmem, memcap;
    int pair_fd;
    uint64_t pair_bytes;
    xm_runinfo *runs;
    size_t nruns, runcap;
    int unique;                 /* --unique: repeated values give no [a, a] */
    xm_repeat *rep;             /* repeated values, found in table 0 (sorted by v once
                                   xm_find_pairs returned) */
    size_t nrep, repcap;
    cli_progress progress;
    char phase[64];             /* the progress bar's label */
    uint64_t base_done, done_in_table;
    pthread_t main_thread;
} xm_run;

void xm_init(xm_run *x, const char *prog, const xm_opts *o);
void xm_free(xm_run *x);
/* The input at path ("-": stdin): a binary file is used in place (its length must be a
 * multiple of 8); text (one decimal per line, as cli_parse_u64_lines) and binary from a
 * pipe are copied to a temporary file. Sets x->n. Returns 0, or -1 with x->err. */
int xm_open_input(xm_run *x, const char *path, int binary);
/* Every pair within distance among the input, [a, a] for repeated values. Returns 0,
 * or -1 with x->err. */
int xm_find_pairs(xm_run *x, unsigned blocks, unsigned distance);
/* Calls fn for every pair found, sorted by (a, b). Returns 0, or -1 (fn failed, or
 * x->err). */
int xm_each_pair(xm_run *x, int (*fn)(void *ctx, const match_pair *p), void *ctx);
long xm_peak_rss_kb(void);
/* Make *pp (an array of elem-byte items, *cap of them) hold at least need items,
 * doubling from first. Returns 0, or -1 out of memory (*pp unchanged). */
int xm_grow(void *pp, size_t *cap, size_t need, size_t elem, size_t first);
/* How often v was given (1 unless it is a repeated value). */
uint64_t xm_count(const xm_run *x, uint64_t v);

#endif
