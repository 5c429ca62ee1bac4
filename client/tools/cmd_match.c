/* cmd_match.c: simhash-find-all and simhash-find-clusters (also `simhash find-all`
 * and `simhash find-clusters`): numbers in, every near-duplicate pair or every
 * cluster out as one JSON array per line. */
#include "cli.h"
#include "ext_match.h"
#include "match.h"
#include "match_sort.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void mcmd_usage(const char *prog, int clusters, FILE *f)
{
    fprintf(f,
            "Usage: %s [-b BLOCKS] [-d DISTANCE] [-i INPUT] [-o OUTPUT] [-t THREADS]\n"
            "\n"
            "Read one unsigned decimal 64-bit number per line and print, one JSON\n"
            "array per line, %s.\n"
            "\n"
            "  -b, --blocks N     blocks per fingerprint (default %d)\n"
            "  -d, --distance K   largest Hamming distance that matches (default %d);\n"
            "                     needs K < N and at most 1000 tables C(N, N-K)\n"
            "  -i, --input FILE   input, '-' for stdin (default -)\n"
            "  -o, --output FILE  output, '-' for stdout (default -)\n"
            "  -t, --threads T    worker threads, 0 = all cores (default 0)\n"
            "      --unique       as simhash-cpp: a value given on several lines counts\n"
            "                     once (no [a, a] pairs; clusters of distinct values)\n"
            "      --json-strings write the values as JSON strings (\"123\"), exact in\n"
            "                     JSON readers that use doubles (jq, JavaScript)\n"
            "      --format F     text (default) or binary: input of little-endian u64s,\n"
            "                     output of 16-byte pairs (a, b) or, for clusters, per\n"
            "                     cluster its size then its values (u64 each)\n"
            "      --memory SIZE  memory to use (e.g. 512m, 4g; default half the RAM):\n"
            "                     larger inputs are matched table by table in partitions\n"
            "                     spilled to --tmpdir, and clusters too large for it are\n"
            "                     built there\n"
            "      --tmpdir DIR   temporary files (default $TMPDIR or /tmp; removed even\n"
            "                     when the run fails or is interrupted)\n"
            "  -v, --verbose      a summary on stderr: values, distinct values, pairs,\n"
            "                     clusters, peak memory, temporary bytes written\n"
            "  -h, --help         show this help\n"
            "      --version      show the version\n"
            "\n"
            "Output is sorted: pairs by (a, b), clusters by their first value; it is\n"
            "written to OUTPUT.tmp.XXXXXX and renamed when complete. A progress bar is\n"
            "drawn when stderr is a terminal.\n"
            "\n"
            "Exit status: 0 success, 1 bad input or I/O error, 2 bad usage.\n",
            prog,
            clusters ? "every cluster [a, b, c, ...]: a connected component of the\n"
                       "match graph with two or more lines, values sorted, repeats kept"
                     : "every pair [a, b] (a <= b) within the distance, and [a, a]\n"
                       "for a value given on two or more lines",
            CLI_BLOCKS_DEFAULT, CLI_DISTANCE_DEFAULT);
}

/* What a run found, whichever path it took. */
typedef struct mcmd_result {
    match_pair *pairs;
    size_t npairs;
    uint64_t *values;           /* clusters: values[offsets[c] .. offsets[c+1]) */
    size_t *offsets, nclusters;
    uint64_t values_n, distinct_n;
    int ext;                    /* pairs are in the xm_run (spilled path) */
    xm_cc *cc;                  /* clusters of the spilled path, when they were too
                                   large for mcmd_ext_clusters */
    int count_distinct;         /* -v: count the distinct values (in memory) */
    char err[256];
} mcmd_result;

static void mcmd_result_free(mcmd_result *r)
{
    xm_cc_free(r->cc);
    free(r->pairs);
    free(r->values);
    free(r->offsets);
}

static int mcmd_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Match hashes[0..n) in memory (today's path); takes hashes. Returns 0 or -1 (res->err). */
static int mcmd_match_memory(uint64_t *hashes, size_t n, const cli_match_opts *mo, int clusters,
                             int distinct, mcmd_result *res)
{
    res->values_n = n;
    if (distinct && n > 1) {
        qsort(hashes, n, sizeof(*hashes), mcmd_cmp_u64);
        size_t k = 1;
        for (size_t i = 1; i < n; i++)
            if (hashes[i] != hashes[k - 1])
                hashes[k++] = hashes[i];
        n = k;
    }
    int rc = 0;
    if (n > 0 && !clusters)
        rc = match_find_all(hashes, n, (unsigned)mo->blocks, (unsigned)mo->distance,
                            (unsigned)mo->threads, &res->pairs, &res->npairs, res->err,
                            sizeof(res->err));
    else if (n > 0)
        rc = match_find_clusters(hashes, n, (unsigned)mo->blocks, (unsigned)mo->distance,
                                 (unsigned)mo->threads, &res->values, &res->offsets,
                                 &res->nclusters, res->err, sizeof(res->err));
    /* distinct values, for -v */
    uint64_t *s = n && res->count_distinct ? malloc(n * sizeof(*s)) : NULL;
    if (s && match_sort_u64(hashes, s, n, 1) == 0) {
        size_t d = 0;
        for (size_t i = 0; i < n; i++)
            d += i == 0 || s[i] != s[i - 1];
        res->distinct_n = d;
    }
    free(s);
    free(hashes);
    return rc;
}

static int mcmd_in_memory_text(const char *prog, const char *input, const cli_match_opts *mo,
                               int clusters, int distinct, mcmd_result *res)
{
    uint64_t *hashes = NULL;
    size_t n = 0;
    if (cli_read_u64_input(prog, input, &hashes, &n) != 0) {
        snprintf(res->err, sizeof(res->err), "-");
        return -1;
    }
    return mcmd_match_memory(hashes, n, mo, clusters, distinct, res);
}

/* The values of x's input file, in memory. */
static int mcmd_in_memory_fd(xm_run *x, const cli_match_opts *mo, int clusters, int distinct,
                             mcmd_result *res)
{
    size_t n = (size_t)x->n;
    uint64_t *hashes = malloc((n ? n : 1) * sizeof(*hashes));
    if (hashes == NULL) {
        snprintf(res->err, sizeof(res->err), "out of memory");
        return -1;
    }
    size_t got = 0;
    while (got < n * sizeof(uint64_t)) {
        ssize_t r = pread(x->in_fd, (char *)hashes + got, n * sizeof(uint64_t) - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(res->err, sizeof(res->err), "cannot read the input: %s",
                     r < 0 ? strerror(errno) : "it shrank while being read");
            free(hashes);
            return -1;
        }
        got += (size_t)r;
    }
    return mcmd_match_memory(hashes, n, mo, clusters, distinct, res);
}

/* ---- Clusters of a spilled run: union-find over the values that are in a pair ---- */

typedef struct mcmd_uf {
    uint64_t *v;                /* distinct endpoints, sorted */
    size_t n, cap;
    size_t *parent;
    int pass;                   /* 0: collect endpoints, 1: union */
} mcmd_uf;

static size_t mcmd_uf_index(const mcmd_uf *u, uint64_t v)
{
    size_t lo = 0, hi = u->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (u->v[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t mcmd_uf_find(size_t *parent, size_t i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

static int mcmd_uf_pair(void *ctx, const match_pair *p)
{
    mcmd_uf *u = ctx;
    if (u->pass == 0) {
        if (xm_grow(&u->v, &u->cap, u->n + 2, sizeof(*u->v), 1024) != 0)
            return -1;
        u->v[u->n++] = p->a;
        u->v[u->n++] = p->b;
        return 0;
    }
    size_t a = mcmd_uf_find(u->parent, mcmd_uf_index(u, p->a));
    size_t b = mcmd_uf_find(u->parent, mcmd_uf_index(u, p->b));
    if (a != b)
        u->parent[a > b ? a : b] = a < b ? a : b;
    return 0;
}

typedef struct mcmd_member {
    size_t root;
    uint64_t v;
} mcmd_member;

static int mcmd_member_cmp(const void *a, const void *b)
{
    const mcmd_member *x = a, *y = b;
    if (x->root != y->root)
        return x->root < y->root ? -1 : 1;
    return (x->v > y->v) - (x->v < y->v);
}

/* Bytes per pair that mcmd_ext_clusters may need at most: the endpoints collected (a
 * doubling array of 2 values per pair) and their sort scratch, then per endpoint its
 * parent, member record, output value and offset. */
#define MCMD_UF_BYTES_PER_PAIR 112

/* Clusters from the spilled pairs in memory, when MCMD_UF_BYTES_PER_PAIR per pair fits
 * --memory (else xm_cc_build): the endpoints of every pair (which include the repeated
 * values, as [a, a]), joined; a value given k times is listed k times (once with
 * --unique). */
static int mcmd_ext_clusters(xm_run *x, int distinct, mcmd_result *res)
{
    mcmd_uf u;
    memset(&u, 0, sizeof(u));
    mcmd_member *m = NULL;
    if (xm_each_pair(x, mcmd_uf_pair, &u) != 0)
        goto oom;
    if (u.n > 1) {
        uint64_t *s = malloc(u.n * sizeof(*s));
        if (s == NULL || match_sort_u64(u.v, s, u.n, 1) < 0) {
            free(s);
            goto oom;
        }
        free(u.v);
        u.v = s;
        size_t k = 0;
        for (size_t i = 0; i < u.n; i++)
            if (k == 0 || u.v[i] != u.v[k - 1])
                u.v[k++] = u.v[i];
        u.n = k;
    }
    u.parent = malloc((u.n ? u.n : 1) * sizeof(*u.parent));
    if (u.parent == NULL)
        goto oom;
    for (size_t i = 0; i < u.n; i++)
        u.parent[i] = i;
    u.pass = 1;
    if (xm_each_pair(x, mcmd_uf_pair, &u) != 0)
        goto oom;
    /* members with their repeats; components ordered by their smallest value, which
     * is the root (unions keep the smaller index) */
    size_t total = 0;
    for (size_t i = 0; i < u.n; i++)
        total += distinct ? 1 : (size_t)xm_count(x, u.v[i]);
    m = malloc((total ? total : 1) * sizeof(*m));
    res->values = malloc((total ? total : 1) * sizeof(*res->values));
    res->offsets = malloc((u.n + 1) * sizeof(*res->offsets));
    if (!m || !res->values || !res->offsets)
        goto oom;
    size_t k = 0;
    for (size_t i = 0; i < u.n; i++) {
        size_t cnt = distinct ? 1 : (size_t)xm_count(x, u.v[i]);
        for (size_t c = 0; c < cnt; c++)
            m[k++] = (mcmd_member){ mcmd_uf_find(u.parent, i), u.v[i] };
    }
    qsort(m, k, sizeof(*m), mcmd_member_cmp);
    /* pack clusters of two or more members */
    size_t w = 0, c = 0;
    for (size_t i = 0; i < k;) {
        size_t j = i;
        while (j < k && m[j].root == m[i].root)
            j++;
        if (j - i >= 2) {
            res->offsets[c++] = w;
            for (size_t t = i; t < j; t++)
                res->values[w++] = m[t].v;
        }
        i = j;
    }
    res->offsets[c] = w;
    res->nclusters = c;
    x->st.clusters = c;
    free(m);
    free(u.v);
    free(u.parent);
    return 0;
oom:
    free(m);
    free(u.v);
    free(u.parent);
    snprintf(res->err, sizeof(res->err), "out of memory building clusters from %llu pairs "
             "(raise --memory)", (unsigned long long)x->st.pairs);
    return -1;
}

/* ---- Output ---- */

typedef struct mcmd_writer {
    cli_out *o;
    int binary;                 /* little-endian u64s */
    int strings;                /* text: values as JSON strings */
    int first;                  /* mcmd_put_cluster_part: no value of the cluster yet */
} mcmd_writer;

static int mcmd_put_pair(void *ctx, const match_pair *p)
{
    mcmd_writer *w = ctx;
    if (w->binary) {
        cli_out_bytes(w->o, (const char *)&p->a, 8);
        cli_out_bytes(w->o, (const char *)&p->b, 8);
        return 0;
    }
    void (*put)(cli_out *, uint64_t) = w->strings ? cli_out_u64_json : cli_out_u64;
    cli_out_char(w->o, '[');
    put(w->o, p->a);
    cli_out_bytes(w->o, ", ", 2);
    put(w->o, p->b);
    cli_out_bytes(w->o, "]\n", 2);
    return 0;
}

/* Clusters: text, one JSON array per line; binary, per cluster its size then its
 * values (u64 each). */
static void mcmd_put_clusters(mcmd_writer *w, const uint64_t *values, const size_t *offsets,
                              size_t nclusters)
{
    void (*put)(cli_out *, uint64_t) = w->strings ? cli_out_u64_json : cli_out_u64;
    for (size_t c = 0; c < nclusters; c++) {
        if (w->binary) {
            uint64_t cnt = offsets[c + 1] - offsets[c];
            cli_out_bytes(w->o, (const char *)&cnt, 8);
            cli_out_bytes(w->o, (const char *)(values + offsets[c]), cnt * 8);
            continue;
        }
        cli_out_char(w->o, '[');
        for (size_t j = offsets[c]; j < offsets[c + 1]; j++) {
            if (j > offsets[c])
                cli_out_bytes(w->o, ", ", 2);
            put(w->o, values[j]);
        }
        cli_out_bytes(w->o, "]\n", 2);
    }
}

/* Clusters streamed from xm_cc_each: the same records as mcmd_put_clusters. */
static int mcmd_put_cluster_part(void *ctx, int what, uint64_t v)
{
    mcmd_writer *w = ctx;
    if (w->binary) {
        cli_out_bytes(w->o, (const char *)&v, what == XM_CC_END ? 0 : 8);
        return 0;
    }
    if (what == XM_CC_BEGIN) {
        cli_out_char(w->o, '[');
        w->first = 1;
    } else if (what == XM_CC_END) {
        cli_out_bytes(w->o, "]\n", 2);
    } else {
        if (!w->first)
            cli_out_bytes(w->o, ", ", 2);
        w->first = 0;
        (w->strings ? cli_out_u64_json : cli_out_u64)(w->o, v);
    }
    return 0;
}

/* The temporary output of a run in progress: removed on a signal. */
static const char *volatile mcmd_tmpout;

static void mcmd_on_signal(int sig)
{
    if (mcmd_tmpout)
        unlink(mcmd_tmpout);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void mcmd_cleanup_out(const char *tmp)
{
    if (tmp[0])
        unlink(tmp);
    mcmd_tmpout = NULL;
}

static mode_t mcmd_umask(void)
{
    mode_t m = umask(0);
    umask(m);
    return m;
}

/* "512m", "4g", "1048576": bytes; 0 on a bad value. */
static size_t mcmd_parse_size(const char *s)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return 0;
    unsigned long long mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1ull << 10; end++; break;
    case 'm': case 'M': mul = 1ull << 20; end++; break;
    case 'g': case 'G': mul = 1ull << 30; end++; break;
    case 't': case 'T': mul = 1ull << 40; end++; break;
    default: break;
    }
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end != '\0' || v > (unsigned long long)SIZE_MAX / mul)
        return 0;
    return (size_t)(v * mul);
}

/* Default --memory: half of the physical memory. */
static size_t mcmd_default_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || ps <= 0)
        return (size_t)1 << 30;
    return (size_t)pages * (size_t)ps / 2;
}

/* The options of simhash-find-all / simhash-find-clusters. */
typedef struct mcmd_args {
    cli_match_opts mo;
    const char *input, *output, *tmpdir;
    int distinct, strings, binary, verbose;
    size_t memory;
} mcmd_args;

/* Parses the command line into a. Returns -1 to run, else the exit status (usage
 * error, --help, --version). */
static int mcmd_parse_args(int argc, char **argv, const char *prog, int clusters, mcmd_args *a)
{
    static const struct option longopts[] = {
        {"blocks", required_argument, NULL, 'b'},
        {"distance", required_argument, NULL, 'd'},
        {"input", required_argument, NULL, 'i'},
        {"output", required_argument, NULL, 'o'},
        {"threads", required_argument, NULL, 't'},
        {"unique", no_argument, NULL, 'D'},
        {"json-strings", no_argument, NULL, 'J'},
        {"memory", required_argument, NULL, 'M'},
        {"tmpdir", required_argument, NULL, 'T'},
        {"format", required_argument, NULL, 'F'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c, r;

    memset(a, 0, sizeof(*a));
    a->input = "-";
    a->output = "-";
    a->tmpdir = getenv("TMPDIR");
    cli_match_opts_init(&a->mo);
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":b:d:i:o:t:hv", longopts, NULL)) != -1) {
        if ((r = cli_match_opt(prog, c, optarg, &a->mo)) != 0) {
            if (r < 0)
                return CLI_EXIT_USAGE;
            continue;
        }
        switch (c) {
        case 'i': a->input = optarg; break;
        case 'o': a->output = optarg; break;
        case 'D': a->distinct = 1; break;
        case 'J': a->strings = 1; break;
        case 'v': a->verbose = 1; break;
        case 'M':
            if ((a->memory = mcmd_parse_size(optarg)) < ((size_t)64 << 10)) {
                fprintf(stderr, "%s: --memory '%s': expected a size of at least 64k (e.g. 512m, "
                        "4g)\nTry '%s --help'.\n", prog, optarg, prog);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'T': a->tmpdir = optarg; break;
        case 'F':
            if (strcmp(optarg, "text") == 0)
                a->binary = 0;
            else if (strcmp(optarg, "binary") == 0)
                a->binary = 1;
            else {
                fprintf(stderr, "%s: --format '%s': expected text or binary\nTry '%s --help'.\n",
                        prog, optarg, prog);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'h':
            mcmd_usage(prog, clusters, stdout);
            return CLI_EXIT_OK;
        case 'V':
            printf("simhash %s\n", SIMHASH_VERSION);
            return CLI_EXIT_OK;
        default:
            return cli_opt_error(prog, c, argv);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s' (use -i FILE for the input)\n"
                "Try '%s --help'.\n", prog, argv[optind], prog);
        return CLI_EXIT_USAGE;
    }
    if (cli_check_tables(prog, (unsigned)a->mo.blocks, (unsigned)a->mo.distance) != 0)
        return CLI_EXIT_USAGE;
    if (a->memory == 0)
        a->memory = mcmd_default_memory();
    if (a->tmpdir == NULL || a->tmpdir[0] == '\0')
        a->tmpdir = "/tmp";
    struct stat tst;
    if (stat(a->tmpdir, &tst) != 0 || !S_ISDIR(tst.st_mode) || access(a->tmpdir, W_OK | X_OK) != 0) {
        fprintf(stderr, "%s: --tmpdir %s: %s\n", prog, a->tmpdir,
                stat(a->tmpdir, &tst) != 0 ? strerror(errno)
                : !S_ISDIR(tst.st_mode) ? "not a directory" : "not writable");
        return CLI_EXIT_USAGE;
    }
    return -1;
}

/* Reads and matches everything before the output is touched (a failure leaves an
 * existing output file as it was): x and res hold the result. Returns 0, or
 * CLI_EXIT_FAIL with the message printed and both freed. */
static int mcmd_compute(const char *prog, const mcmd_args *a, int clusters, xm_run *x,
                        mcmd_result *res)
{
    /* A text file that fits the memory budget many times over takes the in-memory
     * path; anything else (binary input, standard input, large files) goes through
     * ext_match.c, which keeps to --memory. */
    struct stat ist;
    int small_text = !a->binary && strcmp(a->input, "-") != 0 && stat(a->input, &ist) == 0 &&
                     S_ISREG(ist.st_mode) && (uint64_t)ist.st_size * 20 <= a->memory;
    memset(res, 0, sizeof(*res));
    res->count_distinct = a->verbose;
    xm_opts xo = { a->memory, a->tmpdir, (unsigned)a->mo.threads };
    xm_init(x, prog, &xo);
    x->unique = a->distinct;
    int rc;
    if (small_text) {
        rc = mcmd_in_memory_text(prog, a->input, &a->mo, clusters, a->distinct, res);
    } else if (xm_open_input(x, a->input, a->binary) != 0) {
        rc = -1;
    } else if (x->n * 40 <= a->memory && x->n <= SIZE_MAX / 8) {
        rc = mcmd_in_memory_fd(x, &a->mo, clusters, a->distinct, res);
    } else {
        rc = xm_find_pairs(x, (unsigned)a->mo.blocks, (unsigned)a->mo.distance);
        if (rc == 0 && clusters) {
            if (x->nmem * sizeof(*x->mem) < a->memory &&
                x->st.pairs <= (a->memory - x->nmem * sizeof(*x->mem)) / MCMD_UF_BYTES_PER_PAIR)
                rc = mcmd_ext_clusters(x, a->distinct, res);
            else
                rc = xm_cc_build(x, &res->cc);
            res->nclusters = (size_t)x->st.clusters;
        }
        res->ext = 1;
    }
    if (rc != 0) {
        if (x->err[0] && strcmp(x->err, "-") != 0)
            fprintf(stderr, "%s: %s\n", prog, x->err);
        else if (res->err[0])
            fprintf(stderr, "%s: %s\n", prog, res->err);
        mcmd_result_free(res);
        xm_free(x);
        return CLI_EXIT_FAIL;
    }
    return 0;
}

/* Writes the pairs or clusters of x / res to w. */
static void mcmd_write_all(const char *prog, int clusters, xm_run *x, const mcmd_result *res,
                           mcmd_writer *w)
{
    if (!clusters && res->ext) {
        if (xm_each_pair(x, mcmd_put_pair, w) != 0 && x->err[0])
            fprintf(stderr, "%s: %s\n", prog, x->err);
    } else if (!clusters) {
        for (size_t i = 0; i < res->npairs; i++)
            mcmd_put_pair(w, &res->pairs[i]);
    } else if (res->cc) {
        if (xm_cc_each(x, res->cc, mcmd_put_cluster_part, w) != 0 && x->err[0])
            fprintf(stderr, "%s: %s\n", prog, x->err);
    } else {
        mcmd_put_clusters(w, res->values, res->offsets, res->nclusters);
    }
}

/* --verbose: counts, memory and times on stderr. */
static void mcmd_report(const char *prog, const xm_run *x, const mcmd_result *res)
{
    long kb = xm_peak_rss_kb();
    fprintf(stderr, "%s: %llu values, %llu distinct, %llu pairs, %llu clusters; peak memory "
            "%.1f MiB; temporary bytes written %llu; %s\n", prog,
            (unsigned long long)(res->ext ? x->st.values : res->values_n),
            (unsigned long long)(res->ext ? x->st.distinct : res->distinct_n),
            (unsigned long long)(res->ext ? x->st.pairs : res->npairs),
            (unsigned long long)res->nclusters, kb / 1024.0,
            (unsigned long long)x->st.tmp_bytes,
            res->ext ? "spilled by table and partition" : "in memory");
    if (res->ext)
        fprintf(stderr, "%s: %.1f s splitting the tables into partitions, %.1f s matching "
                "them\n", prog, x->st.secs_split, x->st.secs_match);
    if (res->cc)
        fprintf(stderr, "%s: %.1f s building clusters on disk, %u rounds of star "
                "contraction\n", prog, x->st.secs_clusters, x->st.cc_rounds);
}

int cli_match_main(int argc, char **argv, const char *prog, int clusters)
{
    mcmd_args a;
    int rc = mcmd_parse_args(argc, argv, prog, clusters, &a);
    if (rc >= 0)
        return rc;
    xm_run x;
    mcmd_result res;
    if (mcmd_compute(prog, &a, clusters, &x, &res) != 0)
        return CLI_EXIT_FAIL;
    const char *output = a.output;
    int binary = a.binary, strings = a.strings;

    /* the output goes to a temporary name beside it, renamed when complete */
    cli_out out;
    char tmpout[PATH_MAX] = "";
    int ofd = -1;
    /* a regular file (or a new one) is written under a temporary name and renamed;
     * a device or FIFO (/dev/null, a pipe) is written directly */
    struct stat ost;
    int direct = strcmp(output, "-") == 0 ||
                 (stat(output, &ost) == 0 && !S_ISREG(ost.st_mode));
    if (!direct) {
        int n = snprintf(tmpout, sizeof(tmpout), "%s.tmp.XXXXXX", output);
        if (n < 0 || (size_t)n >= sizeof(tmpout) || (ofd = mkstemp(tmpout)) < 0) {
            fprintf(stderr, "%s: %s: %s\n", prog, output, strerror(n < 0 || (size_t)n >= sizeof(tmpout) ? ENAMETOOLONG : errno));
            mcmd_result_free(&res);
            xm_free(&x);
            return CLI_EXIT_FAIL;
        }
        mcmd_tmpout = tmpout;
        signal(SIGINT, mcmd_on_signal);
        signal(SIGTERM, mcmd_on_signal);
        signal(SIGHUP, mcmd_on_signal);
        fchmod(ofd, 0666 & ~mcmd_umask());
        close(ofd);
    }
    if (cli_out_open(&out, tmpout[0] ? tmpout : output) != 0) {
        fprintf(stderr, "%s: %s: %s\n", prog, output, strerror(errno));
        mcmd_cleanup_out(tmpout);
        mcmd_result_free(&res);
        xm_free(&x);
        return CLI_EXIT_FAIL;
    }
    mcmd_writer w = { &out, binary, strings, 0 };
    mcmd_write_all(prog, clusters, &x, &res, &w);
    int failed = x.err[0] != 0;
    if (a.verbose)
        mcmd_report(prog, &x, &res);
    mcmd_result_free(&res);
    xm_free(&x);
    if (cli_out_close(&out) != 0 || failed) {
        if (!failed)
            fprintf(stderr, "%s: %s: write error: %s\n", prog,
                    strcmp(output, "-") == 0 ? "<stdout>" : output, strerror(errno));
        mcmd_cleanup_out(tmpout);
        return CLI_EXIT_FAIL;
    }
    if (tmpout[0] && rename(tmpout, output) != 0) {
        fprintf(stderr, "%s: %s: %s\n", prog, output, strerror(errno));
        mcmd_cleanup_out(tmpout);
        return CLI_EXIT_FAIL;
    }
    mcmd_tmpout = NULL;
    return CLI_EXIT_OK;
}

int cmd_find_all(int argc, char **argv)
{
    return cli_match_main(argc, argv, "simhash find-all", 0);
}

int cmd_find_clusters(int argc, char **argv)
{
    return cli_match_main(argc, argv, "simhash find-clusters", 1);
}
