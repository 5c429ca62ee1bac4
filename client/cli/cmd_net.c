/* cmd_net.c: the simhash CLI's subcommands that talk to a running coordinator
 * through libsimhashclient: add, query, check, del and load. Exit status 0 ok,
 * 1 runtime or server error, 2 usage. */
#include "cmd_net.h"
#include "cmd_load_state.h"

#include "cli.h"
#include "parse.h"
#include "simhash/client.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NET_PASSWORD_MAX 512
#define NET_LOAD_CHUNK 10000          /* items between two records of load's state */
#define NET_LOAD_BATCH 256            /* pairs per SIMHASH.ADD of load */
#define NET_LOAD_ERRORS_SHOWN 10
#define NET_LOAD_RETRY_MS 60000       /* how long a batch's refused pairs are sent again */

/* ---- Options shared by every network subcommand (cmd_net.h) ---- */

void net_opts_init(net_opts *o, const char *prog)
{
    o->prog = prog;
    o->host = "127.0.0.1";
    o->port = NET_PORT_DEFAULT;
    o->password_file = NULL;
    o->timeout_ms = NET_TIMEOUT_DEFAULT;
}

/* Handle a connection option (and --version). Returns 1 when handled, 2 when the
 * command is done (--version printed), 0 when c is not one, -1 on a bad value
 * (message printed). */
int net_common_opt(net_opts *o, int c, const char *val)
{
    uint64_t v;

    switch (c) {
    case OPT_VERSION:
        printf("simhash %s\n", SIMHASH_VERSION);
        return 2;
    case OPT_HOST:
        if (!val[0]) {
            fprintf(stderr, "%s: option --host: empty\n", o->prog);
            return -1;
        }
        o->host = val;
        return 1;
    case OPT_PORT:
        if (cli_opt_uint(o->prog, "--port", val, 1, 65535, &v) != 0)
            return -1;
        o->port = (unsigned)v;
        return 1;
    case OPT_PASSFILE:
        o->password_file = val;
        return 1;
    case OPT_TIMEOUT:
        if (cli_opt_uint(o->prog, "--timeout-ms", val, 0, 3600000, &v) != 0)
            return -1;
        o->timeout_ms = (unsigned)v;
        return 1;
    default:
        return 0;
    }
}

int net_opt_or_exit(net_opts *o, int c, char **argv)
{
    int rc = net_common_opt(o, c, optarg);
    if (rc < 0)
        return CLI_EXIT_USAGE;
    if (rc == 2)
        return CLI_EXIT_OK;
    if (rc == 0)
        return cli_opt_error(o->prog, c, argv);
    return -1;
}

int net_read_password(const char *prog, const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t len = 0;
    ssize_t r;

    if (fd < 0) {
        fprintf(stderr, "%s: cannot open password file %s: %s\n", prog, path,
                strerror(errno));
        return -1;
    }
    while (len < size && (r = read(fd, buf + len, size - len)) != 0) {
        if (r < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "%s: cannot read password file %s: %s\n", prog,
                    path, strerror(errno));
            close(fd);
            return -1;
        }
        len += (size_t)r;
    }
    close(fd);
    char *nl = memchr(buf, '\n', len);
    if (nl)
        len = (size_t)(nl - buf);
    if (len > 0 && buf[len - 1] == '\r')
        len--;
    if (len >= size) {
        fprintf(stderr, "%s: password file %s: password longer than %zu bytes\n", prog,
                path, size - 1);
        return -1;
    }
    if (len == 0) {
        fprintf(stderr, "%s: password file %s: empty password\n", prog, path);
        return -1;
    }
    if (memchr(buf, '\0', len)) {
        fprintf(stderr, "%s: password file %s: NUL byte in password\n", prog,
                path);
        return -1;
    }
    buf[len] = '\0';
    return 0;
}

/* Connect as the options say. Returns the handle, or NULL with a message printed. */
shc_client *net_connect(const net_opts *o)
{
    char pw[NET_PASSWORD_MAX + 1];
    shc_client *c = NULL;
    shc_status st;

    if (o->password_file && net_read_password(o->prog, o->password_file, pw, sizeof(pw)) != 0)
        return NULL;
    st = shc_connect(o->host, (int)o->port, (int)o->timeout_ms,
                     o->password_file ? pw : NULL, &c);
    if (o->password_file)
        memset(pw, 0, sizeof(pw));
    if (st != SHC_OK) {
        fprintf(stderr, "%s: %s\n", o->prog, c ? shc_errstr(c) : "out of memory");
        shc_free(c);
        return NULL;
    }
    return c;
}

/* Print a failed call's message; returns the exit status 1. */
int net_fail(const net_opts *o, shc_client *c)
{
    fprintf(stderr, "%s: %s\n", o->prog, shc_errstr(c));
    return CLI_EXIT_FAIL;
}

/* Parse a fingerprint argument. Returns 0, or -1 with a message printed. */
static int net_parse_fp_arg(const char *prog, const char *s, uint64_t *fp)
{
    const char *why = NULL;

    if (parse_u64(s, strlen(s), fp, &why) != 0) {
        fprintf(stderr, "%s: fingerprint: %s: '%.40s'\n", prog, why, s);
        return -1;
    }
    return 0;
}

/* Check a document id argument. Returns 0, or -1 with a message printed. */
static int net_check_docid_arg(const char *prog, const char *s)
{
    size_t len = strlen(s);

    if (len == 0 || len > SHC_DOCID_MAX) {
        fprintf(stderr, "%s: document id must be 1..%d bytes\n", prog, SHC_DOCID_MAX);
        return -1;
    }
    return 0;
}

int net_usage_error(const char *prog, const char *msg)
{
    fprintf(stderr, "%s: %s\nTry '%s --help'.\n", prog, msg, prog);
    return CLI_EXIT_USAGE;
}

/* ---- Output of matches ---- */

/* Text bytes of a document id: control bytes shown as '?'. */
static void net_out_docid_text(cli_out *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cli_out_char(out, (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i]);
}

/* Print r as "fp<TAB>distance<TAB>docid,docid" lines, or as one JSON array. */
static void net_print_result(cli_out *out, const shc_result *r, int json)
{
    if (json)
        cli_out_char(out, '[');
    for (size_t i = 0; i < r->nmatches; i++) {
        const shc_match *m = &r->matches[i];
        if (json) {
            cli_out_str(out, i ? ",{\"fp\":" : "{\"fp\":");
            cli_out_u64_json(out, m->fp);
            cli_out_str(out, ",\"distance\":");
            cli_out_u64(out, m->distance);
            cli_out_str(out, ",\"docids\":[");
            for (size_t j = 0; j < m->ndocids; j++) {
                if (j)
                    cli_out_char(out, ',');
                cli_out_json_str(out, m->docids[j], m->docid_lens[j]);
            }
            cli_out_str(out, "]}");
        } else {
            cli_out_u64(out, m->fp);
            cli_out_char(out, '\t');
            cli_out_u64(out, m->distance);
            cli_out_char(out, '\t');
            for (size_t j = 0; j < m->ndocids; j++) {
                if (j)
                    cli_out_char(out, ',');
                net_out_docid_text(out, m->docids[j], m->docid_lens[j]);
            }
            cli_out_char(out, '\n');
        }
    }
    if (json)
        cli_out_str(out, "]\n");
}

/* Write r to stdout. Returns the exit status. */
static int net_emit_result(const char *prog, const shc_result *r, int json)
{
    cli_out out;

    if (cli_out_open(&out, "-") != 0) {
        fprintf(stderr, "%s: cannot write output: %s\n", prog, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    net_print_result(&out, r, json);
    if (cli_out_close(&out) != 0) {
        fprintf(stderr, "%s: cannot write output: %s\n", prog, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

/* Parse the options of a command that takes only the connection options, --help
 * (printing usage, then NET_OPTIONS_HELP) and --version. Returns -1 when the command
 * goes on with its positional arguments from optind, else the exit status. */
int net_parse_common(int argc, char **argv, const char *prog, const char *usage,
                     net_opts *o)
{
    static const struct option longopts[] = { NET_LONGOPTS, {NULL, 0, NULL, 0} };
    int c, rc;

    net_opts_init(o, prog);
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs(usage, stdout);
            fputs(NET_OPTIONS_HELP, stdout);
            return CLI_EXIT_OK;
        }
        if ((rc = net_opt_or_exit(o, c, argv)) >= 0)
            return rc;
    }
    return -1;
}

/* ---- simhash add ---- */

int cmd_add(int argc, char **argv)
{
    const char *prog = "simhash add";
    net_opts o;
    int rc;

    rc = net_parse_common(argc, argv, prog,
                          "Usage: simhash add [OPTIONS] FP DOCID [FP DOCID ...]\n"
                          "Add (fingerprint, document id) pairs to a running deployment and print\n"
                          "'added N entries (M new)'.\n\n",
                          &o);
    if (rc >= 0)
        return rc;
    int npos = argc - optind;
    if (npos == 0 || npos % 2 != 0)
        return net_usage_error(prog, "expected pairs of FP DOCID");
    size_t n = (size_t)npos / 2;
    uint64_t *fps = calloc(n, sizeof(*fps));
    const char **docids = calloc(n, sizeof(*docids));
    if (!fps || !docids) {
        free(fps);
        free(docids);
        fprintf(stderr, "%s: out of memory\n", prog);
        return CLI_EXIT_FAIL;
    }
    rc = CLI_EXIT_OK;
    for (size_t i = 0; i < n && rc == CLI_EXIT_OK; i++) {
        if (net_parse_fp_arg(prog, argv[optind + 2 * i], &fps[i]) != 0 ||
            net_check_docid_arg(prog, argv[optind + 2 * i + 1]) != 0)
            rc = CLI_EXIT_USAGE;
        docids[i] = argv[optind + 2 * i + 1];
    }
    if (rc == CLI_EXIT_OK) {
        shc_client *cl = net_connect(&o);
        shc_bulk_report rep;
        if (!cl) {
            rc = CLI_EXIT_FAIL;
        } else if (shc_add_many(cl, fps, docids, n, NULL, &rep) != SHC_OK) {
            rc = net_fail(&o, cl);
        } else {
            printf("added %zu entries (%lld new)\n", rep.ok, rep.added);
        }
        shc_free(cl);
    }
    free(fps);
    free(docids);
    return rc;
}

/* ---- simhash query / check ---- */

enum { NET_ALLOW_LIMIT = 1u, NET_ALLOW_TEXT = 2u };    /* net_search.allow */

/* The options of simhash query and simhash check, parsed by one loop: the two share
 * --distance and --json; allow says which of the others a command takes. */
typedef struct net_search {
    const char *prog;
    const char *usage;          /* printed by --help, then NET_OPTIONS_HELP */
    unsigned allow;             /* NET_ALLOW_* */
    net_opts o;
    int distance;               /* -1: the corpus's */
    int json;
    int format;                 /* --format: SHC_FORMAT_*, -1 not given */
    uint64_t limit;             /* 0: none */
    const char *text_path;      /* --text FILE */
} net_search;

/* Parses the options into s. Returns -1 when the command goes on with its positional
 * arguments from optind, else the exit status. */
static int net_search_parse(net_search *s, int argc, char **argv)
{
    static const struct option longopts[] = {
        NET_LONGOPTS,
        {"distance", required_argument, NULL, 'd'},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"json", no_argument, NULL, OPT_JSON},
        {"text", required_argument, NULL, OPT_TEXT},
        {"format", required_argument, NULL, OPT_FORMAT},
        {NULL, 0, NULL, 0}
    };
    const char *prog = s->prog;
    uint64_t v;
    int c, rc;

    net_opts_init(&s->o, prog);
    s->distance = s->format = -1;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hd:", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            fputs(s->usage, stdout);
            fputs(NET_OPTIONS_HELP, stdout);
            return CLI_EXIT_OK;
        case 'd':
            if (cli_opt_uint(prog, "--distance", optarg, 0, 64, &v) != 0)
                return CLI_EXIT_USAGE;
            s->distance = (int)v;
            break;
        case OPT_LIMIT:
            if (!(s->allow & NET_ALLOW_LIMIT))
                return net_usage_error(prog, "--limit is for query only");
            if (cli_opt_uint(prog, "--limit", optarg, 1, 1000000000, &s->limit) != 0)
                return CLI_EXIT_USAGE;
            break;
        case OPT_JSON:
            s->json = 1;
            break;
        case OPT_TEXT:
            if (!(s->allow & NET_ALLOW_TEXT))
                return net_usage_error(prog, "--text is for check only");
            s->text_path = optarg;
            break;
        case OPT_FORMAT:
            if (!(s->allow & NET_ALLOW_TEXT))
                return net_usage_error(prog, "--format is for check --text only");
            if (strcmp(optarg, "text") != 0 && strcmp(optarg, "html") != 0)
                return net_usage_error(prog, "--format: expected text or html");
            s->format = optarg[0] == 'h' ? SHC_FORMAT_HTML : SHC_FORMAT_TEXT;
            break;
        default:
            if ((rc = net_opt_or_exit(&s->o, c, argv)) >= 0)
                return rc;
        }
    }
    return -1;
}

/* Prints the answer of a query or check (st, r), frees r and cl. Returns the exit
 * status. */
static int net_search_finish(const net_search *s, shc_client *cl, shc_status st,
                             shc_result *r)
{
    int rc = st != SHC_OK ? net_fail(&s->o, cl) : net_emit_result(s->prog, r, s->json);
    shc_result_free(r);
    shc_free(cl);
    return rc;
}

int cmd_query(int argc, char **argv)
{
    net_search s = {
        .prog = "simhash query", .allow = NET_ALLOW_LIMIT,
        .usage = "Usage: simhash query [OPTIONS] FP\n"
                 "Print the stored near-duplicates of FP: one 'fp<TAB>distance<TAB>docid,docid'\n"
                 "line per match, nearest first, then by fingerprint (control bytes in\n"
                 "document ids shown as '?'; --json is exact).\n\n"
                 "  -d, --distance D      at most D bits apart (default: the corpus distance)\n"
                 "      --limit N         at most N matches\n"
                 "      --json            print a JSON array of {fp (a string), distance, docids}\n",
    };
    uint64_t fp;
    int rc = net_search_parse(&s, argc, argv);
    if (rc >= 0)
        return rc;
    if (argc - optind != 1)
        return net_usage_error(s.prog, "expected one FP");
    if (net_parse_fp_arg(s.prog, argv[optind], &fp) != 0)
        return CLI_EXIT_USAGE;
    shc_client *cl = net_connect(&s.o);
    if (!cl)
        return CLI_EXIT_FAIL;
    shc_result *r = NULL;
    shc_status st = shc_query(cl, fp, s.distance, (size_t)s.limit, &r);
    return net_search_finish(&s, cl, st, r);
}

/* simhash check --text FILE DOCID: the server fingerprints FILE (SIMHASH.CHECKTEXT)
 * and the fingerprint is reported on stderr. Returns the exit status. */
static int net_check_text(net_search *s, const char *docid)
{
    cli_buf b = {0};
    if (cli_buf_read_path(s->text_path, &b) != 0) {
        fprintf(stderr, "%s: cannot read %s: %s\n", s->prog, cli_input_name(s->text_path),
                strerror(errno));
        return CLI_EXIT_FAIL;
    }
    if (s->format < 0) {
        cli_fp_opts fo;
        cli_fp_opts_init(&fo);
        s->format = cli_fp_is_html(&fo, s->text_path) ? SHC_FORMAT_HTML : SHC_FORMAT_TEXT;
    }
    shc_client *cl = net_connect(&s->o);
    if (!cl) {
        cli_buf_free(&b);
        return CLI_EXIT_FAIL;
    }
    uint64_t fp = 0;
    shc_result *r = NULL;
    shc_status st = shc_check_text_as(cl, docid, b.data, b.len, s->format, s->distance, &fp, &r);
    if (st == SHC_OK)
        fprintf(stderr, "%s: fingerprint of %s: %llu\n", s->prog, cli_input_name(s->text_path),
                (unsigned long long)fp);
    cli_buf_free(&b);
    return net_search_finish(s, cl, st, r);
}

int cmd_check(int argc, char **argv)
{
    net_search s = {
        .prog = "simhash check", .allow = NET_ALLOW_TEXT,
        .usage = "Usage: simhash check [OPTIONS] FP DOCID\n"
                 "       simhash check [OPTIONS] --text FILE DOCID\n"
                 "Print the near-duplicates stored before, then add (FP, DOCID). With\n"
                 "--text, FP is the fingerprint of FILE ('-' = stdin) computed by the\n"
                 "server with the corpus's algorithm (SIMHASH.CHECKTEXT).\n"
                 "Output: one 'fp<TAB>distance<TAB>docid,docid' line per match, nearest\n"
                 "first (or JSON with --json).\n\n"
                 "  -d, --distance D      at most D bits apart (default: the corpus distance)\n"
                 "      --text FILE       check the text or HTML page in FILE\n"
                 "      --format F        text or html: what FILE is (default: html for\n"
                 "                        *.html and *.htm, else text)\n"
                 "      --json            print a JSON array of {fp (a string), distance, docids}\n",
    };
    uint64_t fp = 0;
    int rc = net_search_parse(&s, argc, argv);
    if (rc >= 0)
        return rc;
    int npos = argc - optind;
    const char *docid;
    if (s.text_path) {
        if (npos != 1)
            return net_usage_error(s.prog, "expected DOCID after --text FILE");
        docid = argv[optind];
    } else {
        if (npos != 2)
            return net_usage_error(s.prog, "expected FP DOCID");
        if (net_parse_fp_arg(s.prog, argv[optind], &fp) != 0)
            return CLI_EXIT_USAGE;
        docid = argv[optind + 1];
    }
    if (net_check_docid_arg(s.prog, docid) != 0)
        return CLI_EXIT_USAGE;
    if (s.format >= 0 && !s.text_path)
        return net_usage_error(s.prog, "--format goes with --text FILE");
    if (s.text_path)
        return net_check_text(&s, docid);
    shc_client *cl = net_connect(&s.o);
    if (!cl)
        return CLI_EXIT_FAIL;
    shc_result *r = NULL;
    shc_status st = shc_check(cl, fp, docid, s.distance, &r);
    return net_search_finish(&s, cl, st, r);
}

/* ---- simhash del ---- */

int cmd_del(int argc, char **argv)
{
    const char *prog = "simhash del";
    net_opts o;
    uint64_t fp;
    int rc;

    rc = net_parse_common(argc, argv, prog,
                          "Usage: simhash del [OPTIONS] FP [DOCID]\n"
                          "Remove DOCID from FP, or without DOCID the fingerprint and all its\n"
                          "documents; print 'removed N' (document ids removed).\n\n",
                          &o);
    if (rc >= 0)
        return rc;
    int npos = argc - optind;
    if (npos < 1 || npos > 2)
        return net_usage_error(prog, "expected FP [DOCID]");
    if (net_parse_fp_arg(prog, argv[optind], &fp) != 0)
        return CLI_EXIT_USAGE;
    const char *docid = npos == 2 ? argv[optind + 1] : NULL;
    if (docid && net_check_docid_arg(prog, docid) != 0)
        return CLI_EXIT_USAGE;

    shc_client *cl = net_connect(&o);
    long long removed = 0;
    if (!cl)
        return CLI_EXIT_FAIL;
    if (shc_del(cl, fp, docid, &removed) != SHC_OK) {
        rc = net_fail(&o, cl);
    } else {
        printf("removed %lld\n", removed);
        rc = CLI_EXIT_OK;
    }
    shc_free(cl);
    return rc;
}

/* ---- simhash load ---- */

/* The parsed input of load: n pairs, docids NUL-terminated in one arena. */
typedef struct load_input {
    size_t n;
    uint64_t *fps;
    const char **docids;
    char *arena;
} load_input;

static void net_load_input_free(load_input *in)
{
    free(in->fps);
    free(in->docids);
    free(in->arena);
}

static int net_hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
         : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decodes the %XX escapes of s[0..n) into out; returns the length, or (size_t)-1 at a
 * '%' not followed by two hex digits. */
static size_t net_unescape(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[o++] = s[i];
            continue;
        }
        int hi = i + 2 < n ? net_hex(s[i + 1]) : -1;
        int lo = i + 2 < n ? net_hex(s[i + 2]) : -1;
        if (hi < 0 || lo < 0)
            return (size_t)-1;
        out[o++] = (char)(hi * 16 + lo);
        i += 2;
    }
    return o;
}

/* Parse "fingerprint docid" lines (fields separated by spaces or tabs, lines end in
 * "\n" or "\r\n", the last may lack it). After a first line NET_LOAD_ESCAPED_HEADER
 * (simhash export --escape) ids are decoded from %XX. Returns 0, or -1 with *e filled. */
static int net_load_parse(const char *data, size_t len, load_input *in, cli_parse_error *e)
{
    size_t cap = 1, pos = 0, apos = 0, hl = strlen(NET_LOAD_ESCAPED_HEADER);
    int escaped = 0;

    memset(in, 0, sizeof(*in));
    for (size_t i = 0; i < len; i++)
        cap += data[i] == '\n';
    in->fps = malloc(cap * sizeof(*in->fps));
    in->docids = malloc(cap * sizeof(*in->docids));
    in->arena = malloc(len + 1);
    if (!in->fps || !in->docids || !in->arena) {
        e->line = 0;
        e->why = "out of memory";
        e->text = data;
        e->textlen = 0;
        return -1;
    }
    if (len >= hl && memcmp(data, NET_LOAD_ESCAPED_HEADER, hl) == 0 &&
        (len == hl || data[hl] == '\n' || data[hl] == '\r')) {
        escaped = 1;
        pos = hl + (len > hl && data[hl] == '\r');
        pos += pos < len && data[pos] == '\n';
    }
    while (pos < len) {
        const char *line = data + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - line) : len - pos;
        pos += ll + (nl ? 1 : 0);
        e->line = in->n + 1;
        e->text = line;
        e->textlen = ll;
        if (ll > 0 && line[ll - 1] == '\r')
            ll--;

        size_t a = 0;
        while (a < ll && line[a] != ' ' && line[a] != '\t')
            a++;
        if (parse_u64(line, a, &in->fps[in->n], &e->why) != 0) {
            if (a == 0)
                e->why = ll == 0 ? "empty line" : "expected 'fingerprint docid'";
            return -1;
        }
        size_t b = a;
        while (b < ll && (line[b] == ' ' || line[b] == '\t'))
            b++;
        size_t d = b;
        while (d < ll && line[d] != ' ' && line[d] != '\t')
            d++;
        if (d == b) {
            e->why = "missing document id (expected 'fingerprint docid')";
            return -1;
        }
        size_t t = d;
        while (t < ll && (line[t] == ' ' || line[t] == '\t'))
            t++;
        if (t != ll) {
            e->why = "extra field (expected 'fingerprint docid')";
            return -1;
        }
        size_t idlen = d - b;
        if (escaped) {
            idlen = net_unescape(line + b, d - b, in->arena + apos);
            if (idlen == (size_t)-1) {
                e->why = "bad %XX escape in document id";
                return -1;
            }
        } else {
            memcpy(in->arena + apos, line + b, idlen);
        }
        if (idlen > SHC_DOCID_MAX) {
            e->why = "document id longer than 4096 bytes";
            return -1;
        }
        if (memchr(in->arena + apos, '\0', idlen)) {
            e->why = "NUL byte in document id";
            return -1;
        }
        in->arena[apos + idlen] = '\0';
        in->docids[in->n] = in->arena + apos;
        apos += idlen + 1;
        in->n++;
    }
    return 0;
}

static double net_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The options of load: the connection options and --state FILE. Returns -1 when the
 * command goes on (positional arguments from optind), else the exit status. */
static int net_load_options(int argc, char **argv, net_opts *o, const char **state)
{
    enum { LOAD_OPT_STATE = 2000 };
    static const struct option longopts[] = {
        NET_LONGOPTS, {"state", required_argument, NULL, LOAD_OPT_STATE}, {NULL, 0, NULL, 0}
    };
    int c, rc;

    net_opts_init(o, "simhash load");
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs("Usage: simhash load [OPTIONS] [FILE|-]\n"
                  "Bulk-load 'fingerprint docid' lines (default: standard input) into a\n"
                  "running deployment, 256 pairs per SIMHASH.ADD. The whole input is\n"
                  "checked first: a bad line is reported with its number and nothing is\n"
                  "sent. A call refused is sent again pair by pair; pairs refused with a\n"
                  "server error or a timeout are sent again (6 times over about 13 s).\n"
                  "Ends with 'loaded N entries (M new) in S s'.\n\n"
                  "      --state FILE          resume file: records how far the load got\n"
                  "                            after every 10,000 acknowledged pairs; a\n"
                  "                            load given the same FILE and input again\n"
                  "                            (after a kill) sends only the rest\n\n",
                  stdout);
            fputs(NET_OPTIONS_HELP, stdout);
            return CLI_EXIT_OK;
        }
        if (c == LOAD_OPT_STATE) {
            *state = optarg;
            continue;
        }
        if ((rc = net_opt_or_exit(o, c, argv)) >= 0)
            return rc;
    }
    return -1;
}

/* The state of a load given --state: read (or new) and checked against the input.
 * Returns 0, or -1 (message printed). */
static int net_load_resume(const char *prog, const char *state, const cli_buf *b, size_t n,
                           lst_state *st)
{
    const char *why = NULL;
    lst_state now = {n, lst_hash(b->data, b->len), 0, 0};
    int rc = lst_read(state, st, &why);
    if (rc < 0) {
        fprintf(stderr, "%s: cannot use state file %s: %s\n", prog, state, why);
        return -1;
    }
    if (rc == 0) {
        *st = now;
        return 0;
    }
    if (st->pairs != now.pairs || st->hash != now.hash) {
        fprintf(stderr, "%s: state file %s belongs to another input (%" PRIu64
                        " pairs, hash %016" PRIx64 "); this one has %zu pairs, hash %016"
                        PRIx64 "\n", prog, state, st->pairs, st->hash, n, now.hash);
        return -1;
    }
    if (st->done > 0)
        fprintf(stderr, "%s: resuming after %" PRIu64 " pairs loaded earlier (%s)\n", prog,
                st->done, state);
    return 0;
}

/* What a failed SIMHASH.ADD's note (coordinator/write.c) says of its pairs: the ids
 * its stored pairs added (*added) and the number of pairs whose outcome is unknown
 * (*unknown). Returns 1 when err holds both, else 0 (both left 0: an error of
 * another kind, which stored nothing this program could count). */
static int net_load_note(const char *err, long long *added, size_t *unknown)
{
    static const char newtail[] = " new ids among the stored pairs";
    const char *p = strstr(err, newtail), *u = strstr(err, " pairs stored: ");
    *added = 0;
    *unknown = 0;
    if (p == NULL || u == NULL || (u = strstr(u, " unknown")) == NULL || u > p)
        return 0;
    const char *q = p;                  /* the number before newtail */
    while (q > err && q[-1] >= '0' && q[-1] <= '9')
        q--;
    const char *v = u;                  /* the number before " unknown" */
    while (v > err && v[-1] >= '0' && v[-1] <= '9')
        v--;
    if (q == p || v == u)
        return 0;
    *added = strtoll(q, NULL, 10);
    *unknown = (size_t)strtoull(v, NULL, 10);
    return 1;
}

/* Adds item[start .. start+cnt) in SIMHASH.ADD calls of NET_LOAD_BATCH pairs each (the
 * coordinator's write window): the coordinator sends one request per worker per
 * write round for all of a call's pairs, rather than one per pair. A call refused
 * (server error, timeout, unexpected reply) is sent again pair by pair with
 * shc_add_many, which gives each pair its own status (adds are idempotent); the new
 * ids of the pairs the refused call stored come from its note, and the pairs whose
 * outcome it left unknown are added to *unknown_total. Fills item and rep as
 * shc_add_many does; returns the status of the first pair refused, or SHC_OK. */
static shc_status net_load_batches(shc_client *cl, const load_input *in, size_t start,
                                   size_t cnt, shc_status *item, shc_bulk_report *rep,
                                   size_t *unknown_total)
{
    shc_status ret = SHC_OK;
    memset(rep, 0, sizeof(*rep));
    for (size_t at = start; at < start + cnt; at += NET_LOAD_BATCH) {
        size_t m = start + cnt - at > NET_LOAD_BATCH ? NET_LOAD_BATCH : start + cnt - at;
        long long added = 0;
        shc_status st = shc_add_pairs(cl, in->fps + at, in->docids + at, NULL, m, &added);
        if (st == SHC_OK) {
            for (size_t i = at; i < at + m; i++)
                item[i] = SHC_OK;
            rep->ok += m;
            rep->added += added;
            continue;
        }
        shc_bulk_report sr;
        if (st == SHC_ERR_SERVER || st == SHC_ERR_TIMEOUT || st == SHC_ERR_PROTOCOL) {
            /* the pairs the failed call stored answer 0 when sent again: their new ids
             * are the ones its note counted */
            size_t unknown = 0;
            net_load_note(shc_errstr(cl), &added, &unknown);
            *unknown_total += unknown;
            st = shc_add_many(cl, in->fps + at, in->docids + at, m, item + at, &sr);
            sr.added += added;
        } else {                                    /* the connection is gone */
            sr = (shc_bulk_report){0, m, 0, 0};
            for (size_t i = at; i < at + m; i++)
                item[i] = st;
        }
        rep->ok += sr.ok;
        rep->added += sr.added;
        rep->failed += sr.failed;
        if (st != SHC_OK && ret == SHC_OK) {
            ret = st;
            rep->first_failed = at - start + sr.first_failed;
        }
        if (st != SHC_OK && st != SHC_ERR_SERVER && st != SHC_ERR_TIMEOUT &&
            st != SHC_ERR_PROTOCOL)
            return st;
    }
    return ret;
}

int cmd_load(int argc, char **argv)
{
    const char *prog = "simhash load";
    const char *path = "-", *state = NULL;
    net_opts o;
    int rc;

    rc = net_load_options(argc, argv, &o, &state);
    if (rc >= 0)
        return rc;
    if (argc - optind > 1)
        return net_usage_error(prog, "expected at most one FILE");
    if (optind < argc)
        path = argv[optind];

    double t0 = net_now_s();
    cli_buf b;
    if (cli_buf_read_path(path, &b) != 0) {
        fprintf(stderr, "%s: cannot read %s: %s\n", prog, cli_input_name(path),
                strerror(errno));
        return CLI_EXIT_FAIL;
    }
    load_input in;
    cli_parse_error e;
    if (net_load_parse(b.data, b.len, &in, &e) != 0) {
        if (e.line == 0)
            fprintf(stderr, "%s: %s\n", prog, e.why);
        else
            cli_report_parse_error(prog, cli_input_name(path), &e);
        net_load_input_free(&in);
        cli_buf_free(&b);
        return CLI_EXIT_FAIL;
    }
    lst_state st = {in.n, 0, 0, 0};
    if (state && net_load_resume(prog, state, &b, in.n, &st) != 0) {
        net_load_input_free(&in);
        cli_buf_free(&b);
        return CLI_EXIT_FAIL;
    }
    cli_buf_free(&b);

    shc_client *cl = net_connect(&o);
    if (!cl) {
        net_load_input_free(&in);
        return CLI_EXIT_FAIL;
    }
    /* pairs refused with a server error or a timeout are sent again (adding a pair is
     * idempotent): such refusals are mostly passing (a worker's Redis slower than its
     * deadline on a loaded machine, a coordinator's failover, a slot migration) */
    shc_set_bulk_retry(cl, NET_LOAD_RETRY_MS);
    shc_status *item = malloc((in.n ? in.n : 1) * sizeof(*item));
    if (!item) {
        fprintf(stderr, "%s: out of memory\n", prog);
        shc_free(cl);
        net_load_input_free(&in);
        return CLI_EXIT_FAIL;
    }
    cli_progress prog_bar;
    cli_progress_init(&prog_bar, "loading", in.n);
    size_t loaded = (size_t)st.done, failed = 0, shown = 0, unknown = 0;
    long long added = (long long)st.added;
    int advancing = 1;          /* every pair so far acknowledged: the state moves on */
    rc = CLI_EXIT_OK;
    for (size_t start = (size_t)st.done; start < in.n; start += NET_LOAD_CHUNK) {
        size_t cnt = in.n - start > NET_LOAD_CHUNK ? NET_LOAD_CHUNK : in.n - start;
        shc_bulk_report rep;
        shc_status ret = net_load_batches(cl, &in, start, cnt, item, &rep, &unknown);
        loaded += rep.ok;
        added += rep.added;
        failed += rep.failed;
        if (ret != SHC_OK && ret != SHC_ERR_SERVER && ret != SHC_ERR_TIMEOUT &&
            ret != SHC_ERR_PROTOCOL) {
            cli_progress_end(&prog_bar);
            fprintf(stderr, "%s: %s (line %zu); %zu entries loaded before the error\n",
                    prog, shc_errstr(cl), start + rep.first_failed + 1, loaded);
            rc = CLI_EXIT_FAIL;
            break;
        }
        if (ret != SHC_OK) {
            /* Per-item failures: the first with the server's text, then statuses. */
            const char *first = shc_errstr(cl);
            if (strncmp(first, "item ", 5) == 0 && strstr(first, ": "))
                first = strstr(first, ": ") + 2;
            rc = CLI_EXIT_FAIL;
            advancing = 0;
            cli_progress_end(&prog_bar);
            for (size_t i = start; i < start + cnt && shown < NET_LOAD_ERRORS_SHOWN; i++) {
                if (item[i] != SHC_OK) {
                    fprintf(stderr, "%s: %s:%zu: %s\n", prog, cli_input_name(path), i + 1,
                            i == start + rep.first_failed ? first : shc_status_name(item[i]));
                    shown++;
                }
            }
        } else if (state && advancing) {
            st.done = start + cnt;
            st.added += (uint64_t)rep.added;
            if (lst_write(state, &st) != 0) {
                cli_progress_end(&prog_bar);
                fprintf(stderr, "%s: cannot write state file %s: %s\n", prog, state,
                        strerror(errno));
                rc = CLI_EXIT_FAIL;
                break;
            }
        }
        cli_progress_update(&prog_bar, start + cnt);
    }
    cli_progress_end(&prog_bar);
    if (failed > 0)
        fprintf(stderr, "%s: %zu entries failed\n", prog, failed);
    if (unknown > 0)
        fprintf(stderr, "%s: %zu pairs were sent again after a refused call left their "
                "outcome unknown; up to %zu new ones may be counted as not new\n", prog,
                unknown, unknown);
    printf("loaded %zu entries (%lld new) in %.2f s\n", loaded, added, net_now_s() - t0);
    free(item);
    shc_free(cl);
    net_load_input_free(&in);
    return rc;
}
