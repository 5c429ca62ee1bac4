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
    unsigned cc_rounds;         /* xm_cc_build: contraction rounds (0: not used) */
    double secs_clusters;       /* xm_cc_build */
} xm_stats;

typedef struct xm_repeat {
    uint64_t v, count;          /* a value given count >= 2 times */
} xm_repeat;

/* A sorted run of pairs in a temporary file: records [off, off + n). */
typedef struct xm_span {
    uint64_t off, n;
} xm_span;

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
    xm_span *runs;
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

/* ---- Shared with ext_clusters.c ---- */
/* The first error of a run wins (x->err); threads report through here. */
void xm_errf(xm_run *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A temporary file in --tmpdir named simhash-WHAT.XXXXXX, already unlinked. Returns its
 * fd, or -1 with x->err. */
int xm_tmpfile(xm_run *x, const char *what);
/* Append p[0..len) to the temporary file fd whose length is *end: the bytes
 * [*end, *end + len) are reserved atomically, so threads may append at once, then
 * written with pwrite; *at (when not NULL) gets their offset. Counts temporary bytes.
 * Returns 0, or -1 with x->err (a full disk names itself: ENOSPC). */
int xm_append(xm_run *x, int fd, uint64_t *end, const void *p, size_t len, uint64_t *at);
/* Read len bytes at off of fd. Returns 0, or -1 with x->err. */
int xm_pread(xm_run *x, int fd, void *p, size_t len, uint64_t off);

/* ---- Clusters within --memory (ext_clusters.c) ---- */
typedef struct xm_cc xm_cc;
/* The connected components of x's pairs (after xm_find_pairs), computed by external
 * sorting within x->opt.memory; sets x->st.clusters. Returns 0 with *out (for
 * xm_cc_each, then xm_cc_free), or -1 with x->err. */
int xm_cc_build(xm_run *x, xm_cc **out);
enum { XM_CC_BEGIN, XM_CC_VALUE, XM_CC_END };
/* Calls fn for every cluster in order of its smallest value: XM_CC_BEGIN with its size
 * (values with repeats), XM_CC_VALUE for each value ascending (a value given k times k
 * times, once with --unique), XM_CC_END with 0. Returns 0, or -1 (fn failed, or x->err). */
int xm_cc_each(xm_run *x, xm_cc *c, int (*fn)(void *ctx, int what, uint64_t v), void *ctx);
void xm_cc_free(xm_cc *c);

/* ---- k-way merge of sorted pair runs (ext_match.c; used by ext_clusters.c) ---- */

/* Pairs in output order: by a, then b. */
static inline int xm_pair_less(const match_pair *a, const match_pair *b)
{
    return a->a < b->a || (a->a == b->a && a->b < b->b);
}

/* Merges the k sorted runs of fd, reading per records of each at a time: calls fn for
 * every record in (a, b) order, repeats included. Returns 0, or -1 (fn failed, or
 * x->err: "out of memory merging WHAT", a read error). */
int xm_merge_runs(xm_run *x, int fd, const xm_span *runs, size_t k, size_t per,
                  const char *what, int (*fn)(void *ctx, const match_pair *p), void *ctx);

#endif
