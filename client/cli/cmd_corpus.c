/* cmd_corpus.c: `simhash export` and `simhash migrate`, which walk a running
 * deployment's whole corpus with SIMHASH.SCAN (shc_scan). export prints 'fingerprint
 * docid' lines, the input of `simhash load`; migrate copies the corpus into another
 * deployment (other blocks, distance, split limit or name: its own settings),
 * online, resumable from a state file, ending with a count of both sides. Exit status
 * 0 ok, 1 runtime or server error (or a copy whose counts differ), 2 usage. Its
 * statics start with xfer_ (a corpus transferred), apart from core's corpus_. */
#include "cmd_net.h"

#include "cli.h"
#include "parse.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define XFER_COUNT_DEFAULT 64         /* buckets per SIMHASH.SCAN step */

enum { OPT_COUNT = 1100, OPT_OUT, OPT_TO, OPT_TO_PORT, OPT_TO_PASSFILE, OPT_STATE, OPT_ESCAPE };

/* A document id that a 'fingerprint docid' line of simhash load cannot carry: empty,
 * or with white space or a NUL byte. */
static int xfer_id_unprintable(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r') || s[i] == '\0')
            return 1;
    return n == 0;
}

/* SIMHASH.INFO of c (malloc'd text), or NULL with a message printed. */
static char *xfer_info(const char *prog, shc_client *c, const char *side)
{
    char *text = NULL;
    if (shc_info(c, &text, NULL) != SHC_OK) {
        fprintf(stderr, "%s: SIMHASH.INFO of the %s: %s\n", prog, side, shc_errstr(c));
        return NULL;
    }
    return text;
}

/* ---- The walk: SIMHASH.SCAN from a cursor to the end ---- */

/* One step of a walk: its fingerprints and ids, and the cursor after it. Returns 0
 * to go on, -1 to stop (a message printed). */
typedef int (*xfer_step_fn)(const shc_result *res, uint64_t next, void *arg);

/* Walks c's corpus from *cursor on, SIMHASH.SCAN step by step (count buckets each),
 * calling step for each; *cursor follows the walk. With a label, a progress bar on a
 * terminal (by first-byte shard). Returns 0 once the walk is over, -1 when a read or
 * a step failed (a message printed). */
static int xfer_walk(const char *prog, shc_client *c, const char *side, unsigned count,
                       const char *label, uint64_t *cursor, xfer_step_fn step, void *arg)
{
    cli_progress bar;
    cli_progress_init(&bar, label ? label : side, 256);
    if (label == NULL)
        bar.enabled = 0;
    int rc = 0;
    do {
        shc_result *res;
        uint64_t next;
        if (shc_scan(c, *cursor, count, &next, &res) != SHC_OK) {
            cli_progress_end(&bar);
            fprintf(stderr, "%s: reading the %s: %s\n", prog, side, shc_errstr(c));
            return -1;
        }
        rc = step(res, next, arg);
        shc_result_free(res);
        if (rc != 0)
            break;
        *cursor = next;
        cli_progress_update(&bar, next ? (size_t)(next >> 56) : 256);
    } while (*cursor != 0);
    cli_progress_end(&bar);
    return rc;
}

/* ---- simhash export ---- */

typedef struct xfer_export {
    const char *prog;
    FILE *out;
    unsigned long long fps, docs;
    int escape;                 /* --escape: ids as NET_LOAD_ESCAPED_HEADER says */
} xfer_export;

/* An id with every byte up to ' ', DEL and '%' written as %XX (the escaped format
 * simhash load reads after NET_LOAD_ESCAPED_HEADER). */
static void xfer_put_escaped(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch <= ' ' || ch == 0x7f || ch == '%')
            fprintf(out, "%%%02X", ch);
        else
            fputc(ch, out);
    }
}

/* A step of the export: its pairs as lines, or -1 at an id a line cannot carry. */
static int xfer_export_step(const shc_result *res, uint64_t next, void *arg)
{
    xfer_export *x = arg;
    (void)next;
    for (size_t i = 0; i < res->nmatches; i++) {
        const shc_match *m = &res->matches[i];
        x->fps++;
        for (size_t j = 0; j < m->ndocids; j++) {
            if (x->escape) {
                fprintf(x->out, "%llu ", (unsigned long long)m->fp);
                xfer_put_escaped(x->out, m->docids[j], m->docid_lens[j]);
                fputc('\n', x->out);
                x->docs++;
                continue;
            }
            if (xfer_id_unprintable(m->docids[j], m->docid_lens[j])) {
                fprintf(stderr, "%s: fingerprint %llu has a document id with white space "
                        "or a NUL byte, which a 'fingerprint docid' line cannot carry; "
                        "nothing after it was written (export --escape carries any id; "
                        "simhash migrate copies such ids)\n",
                        x->prog, (unsigned long long)m->fp);
                return -1;
            }
            fprintf(x->out, "%llu %.*s\n", (unsigned long long)m->fp, (int)m->docid_lens[j],
                    m->docids[j]);
            x->docs++;
        }
    }
    return 0;
}

int cmd_export(int argc, char **argv)
{
    static const char usage[] =
        "Usage: simhash export [OPTIONS]\n"
        "Print every (fingerprint, document id) pair of a running deployment as\n"
        "'fingerprint docid' lines (the input of simhash load), walking the corpus\n"
        "with SIMHASH.SCAN while it keeps serving: every pair stored for the whole\n"
        "export is printed exactly once; pairs added or removed meanwhile may or may\n"
        "not be. A progress bar on a terminal; a summary on standard error.\n\n"
        "  -o, --output FILE         write here instead of standard output\n"
        "      --escape              carry any document id: a first line says so, and\n"
        "                            bytes up to ' ', DEL and '%' are written %XX\n"
        "                            (simhash load reads it back)\n"
        "      --count N             buckets per SIMHASH.SCAN step (1..1024, default 64)\n";
    static const struct option longopts[] = {
        NET_LONGOPTS,
        {"output", required_argument, NULL, 'o'},
        {"count", required_argument, NULL, OPT_COUNT},
        {"escape", no_argument, NULL, OPT_ESCAPE},
        {NULL, 0, NULL, 0}
    };
    const char *prog = "simhash export", *path = NULL;
    unsigned count = XFER_COUNT_DEFAULT;
    net_opts o;
    int c, rc, escape = 0;
    uint64_t v;

    net_opts_init(&o, prog);
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs(usage, stdout);
            fputs(NET_OPTIONS_HELP, stdout);
            return CLI_EXIT_OK;
        }
        if (c == 'o') {
            path = optarg;
            continue;
        }
        if (c == OPT_COUNT) {
            if (cli_opt_uint(prog, "--count", optarg, 1, 1024, &v) != 0)
                return CLI_EXIT_USAGE;
            count = (unsigned)v;
            continue;
        }
        if (c == OPT_ESCAPE) {
            escape = 1;
            continue;
        }
        if ((rc = net_opt_or_exit(&o, c, argv)) >= 0)
            return rc;
    }
    if (optind < argc)
        return net_usage_error(prog, "no operands expected");
    FILE *out = path ? fopen(path, "w") : stdout;
    if (!out) {
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    shc_client *cl = net_connect(&o);
    if (!cl) {
        if (path)
            fclose(out);
        return CLI_EXIT_FAIL;
    }
    uint64_t cursor = 0;
    xfer_export x = {prog, out, 0, 0, escape};
    if (escape)
        fputs(NET_LOAD_ESCAPED_HEADER "\n", out);
    rc = xfer_walk(prog, cl, "deployment", count, "exporting", &cursor, xfer_export_step, &x)
             == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    if (fflush(out) != 0 || ferror(out) || (path && fclose(out) != 0)) {
        fprintf(stderr, "%s: writing %s failed: %s\n", prog, path ? path : "standard output",
                strerror(errno));
        rc = CLI_EXIT_FAIL;
    }
    shc_free(cl);
    if (rc == CLI_EXIT_OK)
        fprintf(stderr, "exported %llu documents of %llu fingerprints\n", x.docs, x.fps);
    return rc;
}

/* ---- simhash migrate ---- */

typedef struct xfer_state {
    uint64_t cursor;
    unsigned long long fps, docs;   /* copied so far */
    char pair[600];                 /* "source -> target" the file belongs to */
} xfer_state;

/* Reads the state file: 0 (found), 1 (absent: start), -1 (unreadable, or of another
 * source and target: message). */
static int xfer_state_read(const char *prog, const char *path, xfer_state *st)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? 1 : (fprintf(stderr, "%s: %s: %s\n", prog, path,
                                              strerror(errno)), -1);
    unsigned long long cur;
    char line[700];
    int n = fscanf(f, "simhash-migrate cursor %llu fingerprints %llu documents %llu\n",
                   &cur, &st->fps, &st->docs);
    int ok = n == 3 && fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!ok) {
        fprintf(stderr, "%s: %s: not a state file of simhash migrate\n", prog, path);
        return -1;
    }
    line[strcspn(line, "\n")] = '\0';
    if (strcmp(line, st->pair) != 0) {
        fprintf(stderr, "%s: %s belongs to the copy %s, not %s: give another --state file\n",
                prog, path, line, st->pair);
        return -1;
    }
    st->cursor = cur;
    return 0;
}

/* Writes the state file atomically (temporary file, rename). Returns 0 or -1. */
static int xfer_state_write(const char *prog, const char *path, const xfer_state *st)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        fprintf(stderr, "%s: state file name too long\n", prog);
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "simhash-migrate cursor %llu fingerprints %llu documents %llu\n%s\n",
                      (unsigned long long)st->cursor, st->fps, st->docs, st->pair) < 0 ||
        fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "%s: cannot write the state file %s: %s\n", prog, path, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- Digest of a corpus: every (fingerprint, id) pair hashed, summed and xored ---- */

typedef struct xfer_digest {
    unsigned long long pairs, fps;
    uint64_t sum, x;
} xfer_digest;

static uint64_t xfer_mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void xfer_digest_add(xfer_digest *d, const shc_result *res)
{
    for (size_t i = 0; i < res->nmatches; i++) {
        const shc_match *m = &res->matches[i];
        d->fps++;
        for (size_t j = 0; j < m->ndocids; j++) {
            uint64_t h = 0xcbf29ce484222325ull;     /* FNV-1a of the id, then mixed */
            for (size_t k = 0; k < m->docid_lens[j]; k++)
                h = (h ^ (unsigned char)m->docids[j][k]) * 0x100000001b3ull;
            h = xfer_mix(h ^ xfer_mix(m->fp) ^ m->docid_lens[j]);
            d->sum += h;
            d->x ^= h;
            d->pairs++;
        }
    }
}

static int xfer_digest_step(const shc_result *res, uint64_t next, void *arg)
{
    (void)next;
    xfer_digest_add(arg, res);
    return 0;
}

/* Walks the whole corpus of c into d. Returns 0, or -1 with a message. */
static int xfer_digest_walk(const char *prog, shc_client *c, unsigned count, const char *side,
                              xfer_digest *d)
{
    uint64_t cursor = 0;
    memset(d, 0, sizeof *d);
    return xfer_walk(prog, c, side, count, NULL, &cursor, xfer_digest_step, d);
}

#define XFER_ADD_PAIRS 4096            /* pairs per SIMHASH.ADD of migrate, at most */
#define XFER_ADD_BYTES (2u << 20)      /* and bytes of ids (a coordinator's default
                                            max-request-bytes is 8 MiB) */

/* Adds pairs [from, from+n) in one SIMHASH.ADD; a busy target (-TIMEOUT, -BUSY) gets
 * the same again (adds are set inserts), pausing 100 ms doubling, 7 tries at most.
 * Returns 0, or -1 with a message. */
static int xfer_add(const char *prog, shc_client *dst, const uint64_t *fps,
                      const char *const *ids, const size_t *lens, size_t n)
{
    unsigned pause_ms = 100;
    for (int attempt = 1;; attempt++) {
        shc_status st = shc_add_pairs(dst, fps, ids, lens, n, NULL);
        if (st == SHC_OK)
            return 0;
        if (st == SHC_ERR_IO || st == SHC_ERR_NOMEM || st == SHC_ERR_ARG || attempt == 7) {
            fprintf(stderr, "%s: adding to the target: %s (run again with the same --state "
                    "to resume)\n", prog, shc_errstr(dst));
            return -1;
        }
        struct timespec ts = { (time_t)(pause_ms / 1000), (long)(pause_ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
        pause_ms *= 2;
    }
}

/* Copies one step's pairs into the target, in SIMHASH.ADD calls of at most
 * XFER_ADD_PAIRS pairs and XFER_ADD_BYTES of ids (a fingerprint's ids together:
 * one write lock each). Returns 0, or -1 with a message. */
static int xfer_copy(const char *prog, shc_client *dst, const shc_result *res,
                       unsigned long long *docs)
{
    size_t n = 0;
    for (size_t i = 0; i < res->nmatches; i++)
        n += res->matches[i].ndocids;
    if (n == 0)
        return 0;
    uint64_t *fps = malloc(n * sizeof *fps);
    const char **ids = malloc(n * sizeof *ids);
    size_t *lens = malloc(n * sizeof *lens);
    int rc = -1;
    if (!fps || !ids || !lens) {
        fprintf(stderr, "%s: out of memory\n", prog);
        goto out;
    }
    size_t k = 0;
    for (size_t i = 0; i < res->nmatches; i++)
        for (size_t j = 0; j < res->matches[i].ndocids; j++) {
            fps[k] = res->matches[i].fp;
            ids[k] = res->matches[i].docids[j];
            lens[k++] = res->matches[i].docid_lens[j];
        }
    for (size_t from = 0, cnt; from < n; from += cnt) {
        size_t bytes = 0;
        for (cnt = 0; from + cnt < n && cnt < XFER_ADD_PAIRS &&
                      (cnt == 0 || bytes + lens[from + cnt] + 32 <= XFER_ADD_BYTES); cnt++)
            bytes += lens[from + cnt] + 32;
        if (xfer_add(prog, dst, fps + from, ids + from, lens + from, cnt) != 0)
            goto out;
    }
    *docs += n;
    rc = 0;
out:
    free(fps);
    free(ids);
    free(lens);
    return rc;
}

typedef struct xfer_copying {
    const char *prog;
    shc_client *dst;
    const char *state_path;
    xfer_state *st;
} xfer_copying;

/* A step of the copy: its pairs added to the target, then the state file written
 * with the cursor after the step. */
static int xfer_copy_step(const shc_result *res, uint64_t next, void *arg)
{
    xfer_copying *cp = arg;
    if (xfer_copy(cp->prog, cp->dst, res, &cp->st->docs) != 0)
        return -1;
    cp->st->fps += res->nmatches;
    cp->st->cursor = next;
    return cp->state_path ? xfer_state_write(cp->prog, cp->state_path, cp->st) : 0;
}

int cmd_migrate(int argc, char **argv)
{
    static const char usage[] =
        "Usage: simhash migrate --to HOST[,HOST..] [OPTIONS]\n"
        "Copy every (fingerprint, document id) pair of a running deployment (the\n"
        "source: the connection options) into another one (the target, --to), which\n"
        "may have other blocks, distance, split limit or corpus name: its\n"
        "own settings. Both keep serving. Adds are set inserts, so a copy interrupted\n"
        "at any point is resumed with the same --state FILE (or simply run again).\n"
        "The fingerprint algorithm cannot change (the texts are not stored): source\n"
        "and target must report the same. At the end both corpora are walked again and\n"
        "every pair hashed into a digest: exit 0 only when both sides hold the same\n"
        "pairs.\n\n"
        "      --to HOST[,HOST..]    target coordinator(s), each host[:port]\n"
        "      --to-port PORT        target port (default 7000)\n"
        "      --to-password-file F  AUTH to the target with the password in F\n"
        "      --state FILE          progress kept here (resumed when it exists;\n"
        "                            removed when the copy is verified)\n"
        "      --count N             buckets per SIMHASH.SCAN step (1..1024, default 64)\n";
    static const struct option longopts[] = {
        NET_LONGOPTS,
        {"to", required_argument, NULL, OPT_TO},
        {"to-port", required_argument, NULL, OPT_TO_PORT},
        {"to-password-file", required_argument, NULL, OPT_TO_PASSFILE},
        {"state", required_argument, NULL, OPT_STATE},
        {"count", required_argument, NULL, OPT_COUNT},
        {NULL, 0, NULL, 0}
    };
    const char *prog = "simhash migrate", *state_path = NULL;
    unsigned count = XFER_COUNT_DEFAULT;
    net_opts o, t;
    int c, rc;
    uint64_t v;

    net_opts_init(&o, prog);
    net_opts_init(&t, prog);
    t.host = NULL;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            fputs(usage, stdout);
            fputs(NET_OPTIONS_HELP, stdout);
            return CLI_EXIT_OK;
        case OPT_TO:
            if (!optarg[0])
                return net_usage_error(prog, "--to: empty");
            t.host = optarg;
            continue;
        case OPT_TO_PORT:
            if (cli_opt_uint(prog, "--to-port", optarg, 1, 65535, &v) != 0)
                return CLI_EXIT_USAGE;
            t.port = (unsigned)v;
            continue;
        case OPT_TO_PASSFILE:
            t.password_file = optarg;
            continue;
        case OPT_STATE:
            state_path = optarg;
            continue;
        case OPT_COUNT:
            if (cli_opt_uint(prog, "--count", optarg, 1, 1024, &v) != 0)
                return CLI_EXIT_USAGE;
            count = (unsigned)v;
            continue;
        }
        if ((rc = net_opt_or_exit(&o, c, argv)) >= 0)
            return rc;
    }
    if (optind < argc)
        return net_usage_error(prog, "no operands expected");
    if (!t.host)
        return net_usage_error(prog, "--to is required (the target deployment)");
    t.timeout_ms = o.timeout_ms;

    xfer_state st = {0, 0, 0, ""};
    snprintf(st.pair, sizeof st.pair, "%.250s:%u -> %.250s:%u", o.host, o.port, t.host, t.port);
    if (state_path && (rc = xfer_state_read(prog, state_path, &st)) < 0)
        return CLI_EXIT_FAIL;
    shc_client *src = net_connect(&o);
    if (!src)
        return CLI_EXIT_FAIL;
    shc_client *dst = net_connect(&t);
    if (!dst) {
        shc_free(src);
        return CLI_EXIT_FAIL;
    }
    rc = CLI_EXIT_FAIL;
    char *si = xfer_info(prog, src, "source"), *ti = si ? xfer_info(prog, dst, "target") : NULL;
    char sa[32] = "", ta[32] = "";
    if (!si || !ti)
        goto out;
    if (parse_info_str(si, strlen(si), "fingerprint_algorithm", sa, sizeof sa) != 0 ||
        parse_info_str(ti, strlen(ti), "fingerprint_algorithm", ta, sizeof ta) != 0) {
        fprintf(stderr, "%s: a coordinator does not report its fingerprint algorithm (an "
                "older version): upgrade it first\n", prog);
        goto out;
    }
    if (strcmp(sa, ta) != 0) {
        fprintf(stderr, "%s: the source's fingerprints are algorithm %s, the target's %s: "
                "fingerprints cannot be converted without the texts (they are not stored); "
                "fingerprint the documents again and load them into the target\n", prog, sa, ta);
        goto out;
    }
    if (st.cursor || st.fps)
        fprintf(stderr, "%s: resuming at cursor %llu (%llu fingerprints, %llu documents "
                "copied before)\n", prog, (unsigned long long)st.cursor, st.fps, st.docs);
    xfer_copying cp = {prog, dst, state_path, &st};
    if (xfer_walk(prog, src, "source", count, "migrating", &st.cursor, xfer_copy_step, &cp) != 0)
        goto out;

    /* the check: both corpora walked again, every pair hashed into a digest */
    printf("copied %llu fingerprints, %llu documents\n", st.fps, st.docs);
    xfer_digest ds, dt;
    if (xfer_digest_walk(prog, src, count, "source", &ds) != 0 ||
        xfer_digest_walk(prog, dst, count, "target", &dt) != 0)
        goto out;
    printf("source: %llu fingerprints, %llu documents, digest %016llx%016llx; target: %llu "
           "fingerprints, %llu documents, digest %016llx%016llx\n", ds.fps, ds.pairs,
           (unsigned long long)ds.sum, (unsigned long long)ds.x, dt.fps, dt.pairs,
           (unsigned long long)dt.sum, (unsigned long long)dt.x);
    if (ds.pairs != dt.pairs || ds.fps != dt.fps || ds.sum != dt.sum || ds.x != dt.x) {
        fprintf(stderr, "%s: the two corpora differ: pairs added to the source during the copy "
                "(run again: adds are idempotent), pairs deleted from the source during the "
                "copy (deletes are not copied: delete them on the target too), or a target "
                "that held other data\n", prog);
        goto out;
    }
    printf("verified: %llu fingerprints and %llu documents, the same pairs on both sides\n",
           ds.fps, ds.pairs);
    if (state_path && remove(state_path) != 0 && errno != ENOENT)
        fprintf(stderr, "%s: could not remove %s: %s\n", prog, state_path, strerror(errno));
    rc = CLI_EXIT_OK;
out:
    free(si);
    free(ti);
    shc_free(src);
    shc_free(dst);
    return rc;
}
