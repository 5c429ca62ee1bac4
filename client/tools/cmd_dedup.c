/* cmd_dedup.c: `simhash dedup`: walk directories, fingerprint every regular file
 * on all cores, cluster the fingerprints and print each group of near-duplicate
 * files (human-readable or one JSON object per line). */
#include "cli.h"
#include "fingerprint.h"
#include "hamming.h"
#include "match.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEDUP_MAX_DEPTH 512
#define DEDUP_BUF (1u << 20)          /* per-thread read buffer */
#define DEDUP_VERBOSE_PAIRS_MAX 200   /* -v lists pair distances for groups up to this size */

/* ---- (device, inode) set: each directory walked once, each file listed once ---- */

typedef struct inode_set {
    struct { dev_t dev; ino_t ino; int used; } *slots;
    size_t cap, count;
} inode_set;

static size_t dedup_inode_hash(dev_t dev, ino_t ino)
{
    uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev * 0xc2b2ae3d27d4eb4full;
    return (size_t)(h ^ (h >> 29));
}

/* 1 if added, 0 if already there, -1 out of memory. */
static int dedup_inode_set_add(inode_set *s, dev_t dev, ino_t ino)
{
    if ((s->count + 1) * 2 > s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 256;
        inode_set ns = {calloc(ncap, sizeof(*s->slots)), ncap, 0};
        if (!ns.slots)
            return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slots[i].used)
                dedup_inode_set_add(&ns, s->slots[i].dev, s->slots[i].ino);
        free(s->slots);
        *s = ns;
    }
    size_t i = dedup_inode_hash(dev, ino) & (s->cap - 1);
    while (s->slots[i].used) {
        if (s->slots[i].dev == dev && s->slots[i].ino == ino)
            return 0;
        i = (i + 1) & (s->cap - 1);
    }
    s->slots[i].dev = dev;
    s->slots[i].ino = ino;
    s->slots[i].used = 1;
    s->count++;
    return 1;
}

/* ---- Walking ---- */

typedef struct dedup_walk {
    char **paths;
    size_t n, cap;
    inode_set dirs, files;
    int failed;
    int oom;
} dedup_walk;

static void dedup_walk_add_file(dedup_walk *w, const char *path, const struct stat *st)
{
    int r = dedup_inode_set_add(&w->files, st->st_dev, st->st_ino);
    if (r <= 0) {
        w->oom |= r < 0;
        return;
    }
    if (w->n == w->cap) {
        size_t ncap = w->cap ? w->cap * 2 : 1024;
        char **np = realloc(w->paths, ncap * sizeof(*np));
        if (!np) {
            w->oom = 1;
            return;
        }
        w->paths = np;
        w->cap = ncap;
    }
    char *copy = strdup(path);
    if (!copy) {
        w->oom = 1;
        return;
    }
    w->paths[w->n++] = copy;
}

static int dedup_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void dedup_walk_path(dedup_walk *w, const char *path, int depth, int top);

/* Walk the entries of directory path in name order. */
static void dedup_walk_dir(dedup_walk *w, const char *path, int depth)
{
    DIR *d = opendir(path);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;

    if (!d) {
        fprintf(stderr, "simhash dedup: %s: %s\n", path, strerror(errno));
        w->failed = 1;
        return;
    }
    for (;;) {
        errno = 0;
        if ((de = readdir(d)) == NULL) {
            if (errno != 0) {
                fprintf(stderr, "simhash dedup: %s: cannot read directory: %s\n", path,
                        strerror(errno));
                w->failed = 1;
            }
            break;
        }
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            char **nn = realloc(names, ncap * sizeof(*nn));
            if (!nn) {
                w->oom = 1;
                break;
            }
            names = nn;
            cap = ncap;
        }
        if (!(names[n] = strdup(de->d_name))) {
            w->oom = 1;
            break;
        }
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof(*names), dedup_cmp_str);
    size_t plen = strlen(path);
    int slash = plen > 0 && path[plen - 1] == '/';
    for (size_t i = 0; i < n; i++) {
        size_t len = plen + 1 + strlen(names[i]) + 1;
        char *child = malloc(len);
        if (!child) {
            w->oom = 1;
        } else {
            snprintf(child, len, "%s%s%s", path, slash ? "" : "/", names[i]);
            if (!w->oom)
                dedup_walk_path(w, child, depth + 1, 0);
            free(child);
        }
        free(names[i]);
    }
    free(names);
}

/* Add path (following symbolic links) if it is a regular file, walk it if it is
 * a directory not seen before (so symbolic link loops end). */
static void dedup_walk_path(dedup_walk *w, const char *path, int depth, int top)
{
    struct stat st;

    if (top && strcmp(path, "-") == 0) {
        /* standard input: one document named "-", read once */
        if (fstat(STDIN_FILENO, &st) != 0) {
            fprintf(stderr, "simhash dedup: <stdin>: %s\n", strerror(errno));
            w->failed = 1;
            return;
        }
        dedup_walk_add_file(w, path, &st);
        return;
    }
    if (stat(path, &st) != 0) {
        struct stat lst;
        int err = errno;
        /* a link to nothing, into a loop of links, or through a non-directory */
        if (!top && (err == ENOENT || err == ELOOP || err == ENOTDIR) &&
            lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
            fprintf(stderr, "simhash dedup: %s: broken symbolic link (%s), skipped\n", path,
                    strerror(err));
            return;
        }
        fprintf(stderr, "simhash dedup: %s: %s\n", path, strerror(err));
        w->failed = 1;
        return;
    }
    if (S_ISREG(st.st_mode)) {
        dedup_walk_add_file(w, path, &st);
    } else if (S_ISDIR(st.st_mode)) {
        if (depth >= DEDUP_MAX_DEPTH) {
            fprintf(stderr, "simhash dedup: %s: deeper than %d levels, skipped\n", path,
                    DEDUP_MAX_DEPTH);
            w->failed = 1;
            return;
        }
        int r = dedup_inode_set_add(&w->dirs, st.st_dev, st.st_ino);
        if (r < 0)
            w->oom = 1;
        if (r > 0)
            dedup_walk_dir(w, path, depth);
    } else if (top) {
        fprintf(stderr, "simhash dedup: %s: not a regular file or directory\n", path);
        w->failed = 1;
    }
}

/* ---- Fingerprinting on all cores ---- */

typedef struct dedup_work {
    char **paths;
    size_t n;
    const cli_fp_opts *fo;
    uint64_t *fps;
    int *errs;                    /* errno per file, 0 when read */
    const char **whys;            /* DEDUP_ERR_HTML: the message, per file */
    size_t next;                  /* atomic: next file to take */
    size_t done;                  /* atomic: files finished */
} dedup_work;

#define DEDUP_ERR_NOTREG (-1)     /* no longer a regular file */
#define DEDUP_ERR_CHANGED (-2)    /* size or time changed while read */
#define DEDUP_ERR_HTML (-3)       /* the HTML could not be read (errs_why says why) */

/* Message for an error code of dedup_fingerprint_file. */
static const char *dedup_strerror(int err)
{
    if (err == DEDUP_ERR_NOTREG)
        return "no longer a regular file, skipped";
    if (err == DEDUP_ERR_CHANGED)
        return "changed while reading";
    if (err == DEDUP_ERR_HTML)
        return "unreadable HTML";
    return strerror(err);
}

/* Fingerprint one file (or standard input, "-") through the thread's DEDUP_BUF
 * buffer and its document state (never mapped: a file truncated meanwhile cannot
 * fault). The open does not block (the path may have been replaced by a FIFO since
 * the walk) and anything but a regular file is refused. Returns 0, an errno value,
 * or DEDUP_ERR_* (*why: the message of DEDUP_ERR_HTML). */
static int dedup_fingerprint_file(const char *path, char *buf, cli_doc *doc, int html,
                                  uint64_t *fp, const char **why)
{
    int is_stdin = strcmp(path, "-") == 0;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st, st2;
    size_t len = 0;
    int rc = 0;

    if (fd < 0)
        return errno ? errno : EIO;
    cli_doc_begin(doc, html);
    if (fstat(fd, &st) != 0) {
        rc = errno;
        goto out;
    }
    if (!is_stdin && !S_ISREG(st.st_mode)) {
        rc = DEDUP_ERR_NOTREG;
        goto out;
    }
    int fl = fcntl(fd, F_GETFL);
    if (!is_stdin && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)) {
        rc = errno;
        goto out;
    }
    for (;;) {
        if (len == DEDUP_BUF) {
            cli_doc_update(doc, buf, len);
            len = 0;
        }
        ssize_t r = read(fd, buf + len, DEDUP_BUF - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = errno ? errno : EIO;
            break;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    if (rc == 0 && !is_stdin &&
        (fstat(fd, &st2) != 0 || st2.st_size != st.st_size ||
         st2.st_mtim.tv_sec != st.st_mtim.tv_sec || st2.st_mtim.tv_nsec != st.st_mtim.tv_nsec))
        rc = DEDUP_ERR_CHANGED;
out:
    cli_doc_update(doc, buf, len);
    {
        uint64_t v;
        int frc = cli_doc_final(doc, &v, why);   /* also resets the state after a failure */
        if (rc == 0 && frc != 0)
            rc = DEDUP_ERR_HTML;
        else if (rc == 0)
            *fp = v;
    }
    if (!is_stdin)
        close(fd);
    return rc;
}

static void *dedup_worker(void *arg)
{
    dedup_work *wk = arg;
    char *buf = malloc(DEDUP_BUF);
    cli_doc doc;
    int doc_ok = cli_doc_init(&doc, wk->fo) == 0;

    for (;;) {
        size_t i = __atomic_fetch_add(&wk->next, 1, __ATOMIC_RELAXED);
        if (i >= wk->n)
            break;
        if (buf && doc_ok) {
            const char *why = NULL;
            wk->errs[i] = dedup_fingerprint_file(wk->paths[i], buf, &doc,
                                                 cli_fp_is_html(wk->fo, wk->paths[i]),
                                                 &wk->fps[i], &why);
            if (why)
                wk->whys[i] = strdup(why);
        } else {
            wk->errs[i] = ENOMEM;
        }
        __atomic_fetch_add(&wk->done, 1, __ATOMIC_RELEASE);
    }
    free(buf);
    if (doc_ok)
        cli_doc_free(&doc);
    return NULL;
}

/* Fingerprint every file with up to nthreads threads; returns 0, or -1 when no
 * thread could be started. */
static int dedup_fingerprint(dedup_work *wk, unsigned nthreads)
{
    pthread_t tids[CLI_THREADS_MAX];
    unsigned started = 0;
    cli_progress pr;

    if (nthreads > wk->n)
        nthreads = (unsigned)wk->n;
    for (unsigned t = 0; t < nthreads; t++) {
        if (pthread_create(&tids[t], NULL, dedup_worker, wk) != 0)
            break;
        started++;
    }
    if (started == 0 && wk->n > 0)
        return -1;
    cli_progress_init(&pr, "fingerprinting", wk->n);
    if (pr.enabled) {
        const struct timespec tick = {0, 50 * 1000 * 1000};
        while (__atomic_load_n(&wk->done, __ATOMIC_ACQUIRE) < wk->n) {
            cli_progress_update(&pr, __atomic_load_n(&wk->done, __ATOMIC_ACQUIRE));
            nanosleep(&tick, NULL);
        }
        cli_progress_end(&pr);
    }
    for (unsigned t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    return 0;
}

/* ---- Output ---- */

typedef struct fp_index {
    uint64_t fp;
    const char *path;
} fp_index;

static int dedup_cmp_fp_index(const void *a, const void *b)
{
    const fp_index *x = a, *y = b;
    if (x->fp != y->fp)
        return x->fp < y->fp ? -1 : 1;
    return strcmp(x->path, y->path);
}

static int dedup_cmp_fp_index_path(const void *a, const void *b)
{
    return strcmp(((const fp_index *)a)->path, ((const fp_index *)b)->path);
}

static void dedup_out_binary(cli_out *o, uint64_t v)
{
    char s[64];
    for (int i = 0; i < 64; i++)
        s[i] = (char)('0' + ((v >> (63 - i)) & 1));
    cli_out_bytes(o, s, 64);
}

static void dedup_print_group(cli_out *o, size_t group, const fp_index *g, size_t n, int json,
                              int verbose)
{
    if (json) {
        cli_out_str(o, "{\"group\":");
        cli_out_u64(o, group);
        cli_out_str(o, ",\"files\":[");
        for (size_t i = 0; i < n; i++) {
            if (i)
                cli_out_char(o, ',');
            cli_out_json_str(o, g[i].path, strlen(g[i].path));
        }
        cli_out_str(o, "],\"fingerprints\":[");
        for (size_t i = 0; i < n; i++) {
            if (i)
                cli_out_char(o, ',');
            cli_out_u64_json(o, g[i].fp);
        }
        cli_out_char(o, ']');
        if (verbose && n <= DEDUP_VERBOSE_PAIRS_MAX) {
            cli_out_str(o, ",\"distances\":[");
            int first = 1;
            for (size_t i = 0; i < n; i++)
                for (size_t j = i + 1; j < n; j++) {
                    if (!first)
                        cli_out_char(o, ',');
                    first = 0;
                    cli_out_char(o, '[');
                    cli_out_u64(o, i);
                    cli_out_char(o, ',');
                    cli_out_u64(o, j);
                    cli_out_char(o, ',');
                    cli_out_u64(o, ham_dist(g[i].fp, g[j].fp));
                    cli_out_char(o, ']');
                }
            cli_out_char(o, ']');
        }
        cli_out_str(o, "}\n");
        return;
    }
    if (group > 1)
        cli_out_char(o, '\n');
    cli_out_str(o, "group ");
    cli_out_u64(o, group);
    cli_out_str(o, " (");
    cli_out_u64(o, n);
    cli_out_str(o, " files):\n");
    for (size_t i = 0; i < n; i++) {
        cli_out_str(o, "  ");
        if (verbose) {
            dedup_out_binary(o, g[i].fp);
            cli_out_str(o, "  ");
        }
        cli_out_text_str(o, g[i].path, strlen(g[i].path));
        cli_out_char(o, '\n');
    }
    if (!verbose)
        return;
    if (n > DEDUP_VERBOSE_PAIRS_MAX) {
        cli_out_str(o, "  (pair distances omitted for groups over 200 files)\n");
        return;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            cli_out_str(o, "  distance ");
            cli_out_u64(o, ham_dist(g[i].fp, g[j].fp));
            cli_out_str(o, ": ");
            cli_out_text_str(o, g[i].path, strlen(g[i].path));
            cli_out_str(o, "  ");
            cli_out_text_str(o, g[j].path, strlen(g[j].path));
            cli_out_char(o, '\n');
        }
}

/* Print every cluster as a group of files; returns 0, or -1 out of memory. */
static int dedup_print_groups(cli_out *o, fp_index *idx, size_t n, const uint64_t *values,
                              const size_t *offsets, size_t nclusters, int json, int verbose)
{
    fp_index *g = malloc((n ? n : 1) * sizeof(*g));
    if (!g)
        return -1;
    qsort(idx, n, sizeof(*idx), dedup_cmp_fp_index);
    for (size_t c = 0; c < nclusters; c++) {
        size_t gn = 0;
        for (size_t j = offsets[c]; j < offsets[c + 1]; j++) {
            if (j > offsets[c] && values[j] == values[j - 1])
                continue;
            /* first file with this fingerprint */
            size_t lo = 0, hi = n;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (idx[mid].fp < values[j])
                    lo = mid + 1;
                else
                    hi = mid;
            }
            for (; lo < n && idx[lo].fp == values[j]; lo++)
                g[gn++] = idx[lo];
        }
        qsort(g, gn, sizeof(*g), dedup_cmp_fp_index_path);
        dedup_print_group(o, c + 1, g, gn, json, verbose);
    }
    free(g);
    return 0;
}

/* ---- The command ---- */

static void dedup_usage(FILE *f)
{
    fprintf(f,
            "Usage: simhash dedup [-b B] [-d D] [--algorithm A] [--html|--text] [--json]\n"
            "                     [-v] [-t T] PATH...\n"
            "\n"
            "Fingerprint every regular file under the paths (recursively, following\n"
            "symbolic links, each directory and file once; '-' is standard input, one\n"
            "document) and print each group of near-duplicate files: files connected by\n"
            "fingerprints within D bits.\n"
            "\n"
            "  -b, --blocks B     blocks per fingerprint (default %d)\n"
            "  -d, --distance D   largest Hamming distance that matches (default %d)\n"
            CLI_FP_HELP
            "  -j, --json         one JSON object per group:\n"
            "                     {\"group\":N,\"files\":[...],\"fingerprints\":[...]}\n"
            "  -v, --verbose      also each fingerprint in binary and each pair's distance\n"
            "  -t, --threads T    threads, 0 = all cores (default 0)\n"
            "  -h, --help         show this help\n"
            "\n"
            "Exit status: 0 success, 1 some file could not be read (reported on stderr,\n"
            "the rest is still grouped) or output failed, 2 bad usage.\n",
            CLI_BLOCKS_DEFAULT, CLI_DISTANCE_DEFAULT);
}

int cmd_dedup(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"blocks", required_argument, NULL, 'b'},
        {"distance", required_argument, NULL, 'd'},
        CLI_FP_LONGOPTS,
        {"json", no_argument, NULL, 'j'},
        {"verbose", no_argument, NULL, 'v'},
        {"threads", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *prog = "simhash dedup";
    cli_match_opts mo;
    cli_fp_opts fo;
    int json = 0, verbose = 0, c, r;

    cli_match_opts_init(&mo);
    cli_fp_opts_init(&fo);
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":b:d:w:jvt:h", longopts, NULL)) != -1) {
        if ((r = cli_match_opt(prog, c, optarg, &mo)) != 0) {
            if (r < 0)
                return CLI_EXIT_USAGE;
            continue;
        }
        if ((r = cli_fp_opt(prog, c, optarg, &fo)) != 0) {
            if (r < 0)
                return CLI_EXIT_USAGE;
            continue;
        }
        switch (c) {
        case 'j': json = 1; break;
        case 'v': verbose = 1; break;
        case 'h': dedup_usage(stdout); return CLI_EXIT_OK;
        case 'V': printf("simhash %s\n", SIMHASH_VERSION); return CLI_EXIT_OK;
        default: return cli_opt_error(prog, c, argv);
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "%s: no PATH given\nTry '%s --help'.\n", prog, prog);
        return CLI_EXIT_USAGE;
    }
    if (cli_check_tables(prog, (unsigned)mo.blocks, (unsigned)mo.distance) != 0 ||
        cli_fp_opts_done(prog, &fo) != 0)
        return CLI_EXIT_USAGE;

    dedup_walk w;
    memset(&w, 0, sizeof(w));
    for (int i = optind; i < argc && !w.oom; i++)
        dedup_walk_path(&w, argv[i], 0, 1);

    int status = CLI_EXIT_OK;
    dedup_work wk = {w.paths, w.n, &fo, NULL, NULL, NULL, 0, 0};
    fp_index *idx = NULL;
    uint64_t *fps = NULL, *values = NULL;
    size_t *offsets = NULL, nclusters = 0, m = 0;
    char err[256] = "";
    cli_out out;
    int out_open = 0;

    if (w.oom)
        goto oom;
    wk.fps = calloc(w.n ? w.n : 1, sizeof(*wk.fps));
    wk.errs = calloc(w.n ? w.n : 1, sizeof(*wk.errs));
    wk.whys = calloc(w.n ? w.n : 1, sizeof(*wk.whys));
    idx = malloc((w.n ? w.n : 1) * sizeof(*idx));
    fps = malloc((w.n ? w.n : 1) * sizeof(*fps));
    if (!wk.fps || !wk.errs || !wk.whys || !idx || !fps)
        goto oom;
    if (dedup_fingerprint(&wk, mo.threads ? (unsigned)mo.threads : cli_ncpus()) != 0) {
        fprintf(stderr, "%s: cannot start threads\n", prog);
        status = CLI_EXIT_FAIL;
        goto done;
    }
    for (size_t i = 0; i < w.n; i++) {
        if (wk.errs[i]) {
            fprintf(stderr, "%s: %s: %s\n", prog, w.paths[i],
                    wk.errs[i] == DEDUP_ERR_HTML && wk.whys[i] ? wk.whys[i]
                                                               : dedup_strerror(wk.errs[i]));
            w.failed = 1;
            continue;
        }
        idx[m].fp = wk.fps[i];
        idx[m].path = w.paths[i];
        fps[m++] = wk.fps[i];
    }
    if (m > 1 && match_find_clusters(fps, m, (unsigned)mo.blocks, (unsigned)mo.distance,
                                     (unsigned)mo.threads, &values, &offsets, &nclusters,
                                     err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: %s\n", prog, err[0] ? err : "matching failed");
        status = CLI_EXIT_FAIL;
        goto done;
    }
    if (cli_out_open(&out, "-") != 0)
        goto oom;
    out_open = 1;
    if (nclusters &&
        dedup_print_groups(&out, idx, m, values, offsets, nclusters, json, verbose) != 0)
        goto oom;
    out_open = 0;
    if (cli_out_close(&out) != 0) {
        fprintf(stderr, "%s: <stdout>: write error: %s\n", prog, strerror(errno));
        status = CLI_EXIT_FAIL;
    }
    goto done;
oom:
    fprintf(stderr, "%s: out of memory\n", prog);
    status = CLI_EXIT_FAIL;
done:
    if (out_open)
        cli_out_close(&out);
    if (status == CLI_EXIT_OK && w.failed)
        status = CLI_EXIT_FAIL;
    for (size_t i = 0; i < w.n; i++)
        free(w.paths[i]);
    free(w.paths);
    free(w.dirs.slots);
    free(w.files.slots);
    free(wk.fps);
    free(wk.errs);
    for (size_t i = 0; wk.whys && i < w.n; i++)
        free((void *)wk.whys[i]);
    free(wk.whys);
    free(idx);
    free(fps);
    free(values);
    free(offsets);
    return status;
}
