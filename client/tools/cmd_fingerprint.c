/* cmd_fingerprint.c: `simhash fingerprint` (text -> fingerprint per file or per
 * line) and `simhash compute` (feature hashes -> one fingerprint). */
#include "cli.h"
#include "fingerprint.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fpcmd_usage(FILE *f)
{
    fprintf(f,
            "Usage: simhash fingerprint [--algorithm A] [--html|--text] [--lines]\n"
            "                           [--format text|binary] [--names FILE] [FILE|-]...\n"
            "\n"
            "Print '<fingerprint>\\t<name>' for each file (no FILE or '-' reads stdin,\n"
            "named '-'). Fingerprints are unsigned decimal 64-bit numbers.\n"
            "\n"
            CLI_FP_HELP
            "  -l, --lines      every line is a document, named '<file>:<line number>'\n"
            "                   (text only)\n"
            "      --format F   text (default) or binary: 8-byte little-endian\n"
            "                   fingerprints, document i at byte 8 i (the input of\n"
            "                   simhash-find-all --format binary)\n"
            "      --names FILE write the document names there, one per line, line i+1\n"
            "                   for document i\n"
            "  -h, --help       show this help\n"
            "\n"
            "Exit status: 0 success, 1 a file could not be read (the others are still\n"
            "printed) or output failed, 2 bad usage.\n");
}

/* Where fingerprints go: text lines, or binary (8-byte little-endian each, document
 * i at offset 8 i) with the names, one per line, in a side file (--names). */
typedef struct fpcmd_sink {
    cli_out *o;
    int binary;
    cli_out *names;             /* NULL: none */
} fpcmd_sink;

static void fpcmd_name(cli_out *o, const char *path, size_t lineno)
{
    cli_out_text_str(o, path, strlen(path));
    if (lineno) {
        cli_out_char(o, ':');
        cli_out_u64(o, lineno);
    }
    cli_out_char(o, '\n');
}

static void fpcmd_print_fp(fpcmd_sink *k, uint64_t fp, const char *path, size_t lineno)
{
    if (k->binary) {
        cli_out_bytes(k->o, (const char *)&fp, 8);
    } else {
        cli_out_u64(k->o, fp);
        cli_out_char(k->o, '\t');
        fpcmd_name(k->o, path, lineno);
    }
    if (k->names)
        fpcmd_name(k->names, path, lineno);
}

/* Print the fingerprint(s) of one input, read in CLI_READ_CHUNK blocks through a
 * streaming fingerprint (memory is constant whatever the size). Returns 0, or -1
 * if it could not be read (with --lines, the lines before a read error stay
 * printed; without, nothing is printed for it). */
static int fpcmd_one(fpcmd_sink *o, cli_doc *doc, int html, const char *path, int lines)
{
    fp_state *fs = doc->fs;
    cli_reader r;
    long got;
    size_t lineno = 0;
    int open_line = 0;            /* bytes of an unfinished line were seen */
    int pending_cr = 0;           /* a '\r' ended the last block: held back */

    if (cli_reader_open(&r, path) != 0) {
        fprintf(stderr, "simhash fingerprint: %s: %s\n", cli_input_name(path), r.err);
        return -1;
    }
    cli_doc_begin(doc, html);
    while ((got = cli_reader_next(&r)) > 0) {
        const char *p = r.buf, *end = r.buf + got;
        if (!lines) {
            cli_doc_update(doc, p, (size_t)got);
            continue;
        }
        while (p < end) {
            if (pending_cr) {
                pending_cr = 0;
                if (*p != '\n')
                    fp_state_update(fs, "\r", 1);
            }
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl) {
                size_t l = (size_t)(end - p);
                open_line = 1;
                if (end[-1] == '\r') {
                    pending_cr = 1;
                    l--;
                }
                fp_state_update(fs, p, l);
                break;
            }
            size_t l = (size_t)(nl - p);
            if (l > 0 && p[l - 1] == '\r')
                l--;
            fp_state_update(fs, p, l);
            fpcmd_print_fp(o, fp_state_final(fs), path, ++lineno);
            open_line = 0;
            p = nl + 1;
        }
    }
    if (got < 0) {
        uint64_t ignored;
        const char *why;
        cli_doc_final(doc, &ignored, &why);       /* reset for the next input */
        fprintf(stderr, "simhash fingerprint: %s: %s\n", cli_input_name(path), r.err);
        cli_reader_close(&r);
        return -1;
    }
    cli_reader_close(&r);
    if (!lines) {
        uint64_t fp;
        const char *why = NULL;
        if (cli_doc_final(doc, &fp, &why) != 0) {
            fprintf(stderr, "simhash fingerprint: %s: %s\n", cli_input_name(path), why);
            return -1;
        }
        fpcmd_print_fp(o, fp, path, 0);
    } else if (open_line || pending_cr) {
        fpcmd_print_fp(o, fp_state_final(fs), path, ++lineno);   /* last line without '\n' */
    }
    return 0;
}

int cmd_fingerprint(int argc, char **argv)
{
    static const struct option longopts[] = {
        CLI_FP_LONGOPTS,
        {"lines", no_argument, NULL, 'l'},
        {"format", required_argument, NULL, 'F'},
        {"names", required_argument, NULL, 'N'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *prog = "simhash fingerprint";
    cli_fp_opts fo;
    int lines = 0, c, r, failed = 0, binary = 0;
    const char *names = NULL;

    cli_fp_opts_init(&fo);
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":w:lh", longopts, NULL)) != -1) {
        if ((r = cli_fp_opt(prog, c, optarg, &fo)) != 0) {
            if (r < 0)
                return CLI_EXIT_USAGE;
            continue;
        }
        switch (c) {
        case 'l': lines = 1; break;
        case 'N': names = optarg; break;
        case 'F':
            if (strcmp(optarg, "text") == 0 || strcmp(optarg, "binary") == 0) {
                binary = optarg[0] == 'b';
                break;
            }
            fprintf(stderr, "%s: --format '%s': expected text or binary\nTry '%s --help'.\n",
                    prog, optarg, prog);
            return CLI_EXIT_USAGE;
        case 'h': fpcmd_usage(stdout); return CLI_EXIT_OK;
        case 'V': printf("simhash %s\n", SIMHASH_VERSION); return CLI_EXIT_OK;
        default: return cli_opt_error(prog, c, argv);
        }
    }
    if (cli_fp_opts_done(prog, &fo) != 0)
        return CLI_EXIT_USAGE;
    if (lines && fo.html == CLI_HTML_ALWAYS) {
        fprintf(stderr, "%s: --lines reads text; it cannot be used with --html\n", prog);
        return CLI_EXIT_USAGE;
    }
    cli_out out;
    if (cli_out_open(&out, "-") != 0) {
        fprintf(stderr, "%s: %s\n", prog, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    cli_out nout;
    if (names && cli_out_open(&nout, names) != 0) {
        fprintf(stderr, "%s: %s: %s\n", prog, names, strerror(errno));
        cli_out_close(&out);
        return CLI_EXIT_FAIL;
    }
    fpcmd_sink sink = { &out, binary, names ? &nout : NULL };
    cli_doc doc;
    if (cli_doc_init(&doc, &fo) != 0) {
        fprintf(stderr, "%s: out of memory\n", prog);
        cli_out_close(&out);
        if (names)
            cli_out_close(&nout);
        return CLI_EXIT_FAIL;
    }
    if (optind >= argc) {
        failed |= fpcmd_one(&sink, &doc, cli_fp_is_html(&fo, "-"), "-", lines) != 0;
    } else {
        /* with --lines every file is text (lines of HTML are not documents) */
        for (int i = optind; i < argc; i++)
            failed |= fpcmd_one(&sink, &doc, !lines && cli_fp_is_html(&fo, argv[i]), argv[i],
                                lines) != 0;
    }
    cli_doc_free(&doc);
    if (names && cli_out_close(&nout) != 0) {
        fprintf(stderr, "%s: %s: write error: %s\n", prog, names, strerror(errno));
        failed = 1;
    }
    if (cli_out_close(&out) != 0) {
        fprintf(stderr, "%s: <stdout>: write error: %s\n", prog, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static void fpcmd_compute_usage(FILE *f)
{
    fprintf(f,
            "Usage: simhash compute [FILE|-]\n"
            "\n"
            "Read feature hashes (one unsigned decimal 64-bit number per line) and print\n"
            "their simhash: bit i is set when more hashes have bit i set than unset.\n"
            "No FILE or '-' reads stdin; no hashes give 0.\n"
            "\n"
            "Exit status: 0 success, 1 bad input or I/O error, 2 bad usage.\n");
}

int cmd_compute(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *prog = "simhash compute";
    const char *path = "-";
    int c;

    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': fpcmd_compute_usage(stdout); return CLI_EXIT_OK;
        case 'V': printf("simhash %s\n", SIMHASH_VERSION); return CLI_EXIT_OK;
        default: return cli_opt_error(prog, c, argv);
        }
    }
    if (argc - optind > 1) {
        fprintf(stderr, "%s: at most one input file\nTry '%s --help'.\n", prog, prog);
        return CLI_EXIT_USAGE;
    }
    if (optind < argc)
        path = argv[optind];

    uint64_t *hashes;
    size_t n;
    if (cli_read_u64_input(prog, path, &hashes, &n) != 0)
        return CLI_EXIT_FAIL;
    uint64_t fp = fp_compute(hashes, n);
    free(hashes);

    cli_out out;
    if (cli_out_open(&out, "-") != 0) {
        fprintf(stderr, "%s: %s\n", prog, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    cli_out_u64(&out, fp);
    cli_out_char(&out, '\n');
    if (cli_out_close(&out) != 0) {
        fprintf(stderr, "%s: <stdout>: write error: %s\n", prog, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}
