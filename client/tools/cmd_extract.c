/* cmd_extract.c: `simhash extract`: the text each file's fingerprint is taken from
 * (fp_html_extract: an HTML page's article (v5), or all its visible text, by the
 * algorithm's rule; a text file's own text), as text or JSON Lines with the rule and
 * the fingerprint, so a user can see why two pages match or not. A file is read whole
 * (at most FP_HTML_EXTRACT_MAX bytes): the text's rule is known at the page's end. */
#include "cli.h"
#include "fingerprint.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void xcmd_usage(FILE *f)
{
    fprintf(f,
            "Usage: simhash extract [--algorithm A] [--html|--text] [--all-text]\n"
            "                       [--format text|json] [FILE|-]...\n"
            "\n"
            "Print the text each file's fingerprint is taken from: of an HTML page its\n"
            "article (algorithm v5) or all its visible text (v1, --all-text), of\n"
            "a text file the text itself. No FILE or '-' reads stdin, named '-'. A file\n"
            "may have at most 64 MiB (it is read whole; simhash fingerprint streams).\n"
            "\n"
            CLI_FP_HELP
            "      --format F   text (default): the text, one block per line, lines of\n"
            "                   white space left out; with several files each is preceded\n"
            "                   by a line '==> NAME <==' and followed by a blank line.\n"
            "                   json: one JSON object per line and file, with all the text:\n"
            "                   {\"file\": NAME, \"algorithm\": \"v5\", \"rule\": R,\n"
            "                   \"fingerprint\": \"<decimal>\", \"text\": T}; the fingerprint\n"
            "                   is a string (64-bit values exceed JSON numbers' exact\n"
            "                   range), the rule one of article, article-relaxed, page,\n"
            "                   empty (v5's, docs/fingerprint.md \"Algorithm v5\"),\n"
            "                   all-text, text (a text input); in strings, '\"', '\\' and every control\n"
            "                   character are escaped and each byte of invalid UTF-8 is\n"
            "                   replaced by \\ufffd\n"
            "  -h, --help       show this help\n"
            "\n"
            "The fingerprint is the one simhash fingerprint gives with the same options.\n"
            "Exit status: 0 success, 1 a file could not be read (the others are still\n"
            "printed) or output failed, 2 bad usage.\n");
}

/* What to print of one file. */
typedef struct xcmd_opts {
    const cli_fp_opts *fo;
    int json;
    int headers;                 /* text format, several files */
    char algo[32];               /* the algorithm's canonical text */
} xcmd_opts;

/* Reads all of path (at most FP_HTML_EXTRACT_MAX bytes) into *buf (malloc'd, *len
 * bytes). Returns 0, or -1 after printing why. */
static int xcmd_read(const char *prog, const char *path, char **buf, size_t *len)
{
    cli_reader r;
    char *b = NULL;
    size_t n = 0, cap = 0;
    long got;
    *buf = NULL;
    *len = 0;
    if (cli_reader_open(&r, path) != 0) {
        fprintf(stderr, "%s: %s: %s\n", prog, cli_input_name(path), r.err);
        return -1;
    }
    while ((got = cli_reader_next(&r)) > 0) {
        if ((size_t)got > FP_HTML_EXTRACT_MAX - n) {
            fprintf(stderr, "%s: %s: larger than %zu MiB: refused (extract reads a file "
                    "whole; simhash fingerprint streams any size)\n", prog,
                    cli_input_name(path), FP_HTML_EXTRACT_MAX >> 20);
            free(b);
            cli_reader_close(&r);
            return -1;
        }
        if (n + (size_t)got > cap) {
            size_t c = cap ? cap : CLI_READ_CHUNK;
            while (c < n + (size_t)got)
                c *= 2;
            char *p = realloc(b, c);
            if (p == NULL) {
                fprintf(stderr, "%s: %s: out of memory\n", prog, cli_input_name(path));
                free(b);
                cli_reader_close(&r);
                return -1;
            }
            b = p;
            cap = c;
        }
        memcpy(b + n, r.buf, (size_t)got);
        n += (size_t)got;
    }
    if (got < 0) {
        fprintf(stderr, "%s: %s: %s\n", prog, cli_input_name(path), r.err);
        free(b);
        cli_reader_close(&r);
        return -1;
    }
    cli_reader_close(&r);
    *buf = b;
    *len = n;
    return 0;
}

/* The text format: every line with a byte other than white space, each ended by "\n". */
static void xcmd_print_lines(cli_out *o, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - s) : n, j = i;
        while (j < e && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r'))
            j++;
        if (j < e) {
            cli_out_bytes(o, s + i, e - i);
            cli_out_char(o, '\n');
        }
        i = e + 1;
    }
}

/* Prints the extraction of one input. Returns 0, or -1 when it could not be read
 * (nothing printed for it). */
static int xcmd_one(const char *prog, cli_out *o, const xcmd_opts *xo, const char *path,
                    int html)
{
    char *buf;
    size_t len;
    if (xcmd_read(prog, path, &buf, &len) != 0)
        return -1;
    fp_extraction x = { NULL, 0, "text", 0 };
    if (html) {
        char err[200];
        unsigned flags = (xo->fo->title ? FP_HTML_TITLE : 0) |
                         (xo->fo->all_text ? FP_HTML_ALL_TEXT : 0);
        int rc = fp_html_extract(buf, len, &xo->fo->params, flags, &x, err, sizeof err);
        free(buf);
        if (rc != 0) {
            fprintf(stderr, "%s: %s: %s\n", prog, cli_input_name(path), err);
            return -1;
        }
    } else {
        x.text = buf;           /* a text's extraction is the text itself */
        x.len = len;
        x.fp = fp_text_p(buf, len, &xo->fo->params);
    }
    if (xo->json) {
        cli_out_str(o, "{\"file\": ");
        cli_out_json_str(o, path, strlen(path));
        cli_out_str(o, ", \"algorithm\": ");
        cli_out_json_str(o, xo->algo, strlen(xo->algo));
        cli_out_str(o, ", \"rule\": ");
        cli_out_json_str(o, x.rule, strlen(x.rule));
        cli_out_str(o, ", \"fingerprint\": ");
        cli_out_u64_json(o, x.fp);
        cli_out_str(o, ", \"text\": ");
        cli_out_json_str(o, x.text ? x.text : "", x.len);
        cli_out_str(o, "}\n");
    } else {
        if (xo->headers) {
            cli_out_str(o, "==> ");
            cli_out_text_str(o, path, strlen(path));
            cli_out_str(o, " <==\n");
        }
        xcmd_print_lines(o, x.text ? x.text : "", x.len);
        if (xo->headers)
            cli_out_char(o, '\n');
    }
    if (html)
        fp_extraction_free(&x);
    else
        free(x.text);
    return 0;
}

int cmd_extract(int argc, char **argv)
{
    static const struct option longopts[] = {
        CLI_FP_LONGOPTS,
        {"format", required_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *prog = "simhash extract";
    cli_fp_opts fo;
    xcmd_opts xo;
    int c, r, failed = 0;

    memset(&xo, 0, sizeof xo);
    cli_fp_opts_init(&fo);
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":w:h", longopts, NULL)) != -1) {
        if ((r = cli_fp_opt(prog, c, optarg, &fo)) != 0) {
            if (r < 0)
                return CLI_EXIT_USAGE;
            continue;
        }
        switch (c) {
        case 'F':
            if (strcmp(optarg, "text") == 0 || strcmp(optarg, "json") == 0) {
                xo.json = optarg[0] == 'j';
                break;
            }
            fprintf(stderr, "%s: --format '%s': expected text or json\nTry '%s --help'.\n",
                    prog, optarg, prog);
            return CLI_EXIT_USAGE;
        case 'h': xcmd_usage(stdout); return CLI_EXIT_OK;
        case 'V': printf("simhash %s\n", SIMHASH_VERSION); return CLI_EXIT_OK;
        default: return cli_opt_error(prog, c, argv);
        }
    }
    if (cli_fp_opts_done(prog, &fo) != 0)
        return CLI_EXIT_USAGE;
    xo.fo = &fo;
    xo.headers = !xo.json && argc - optind > 1;
    fp_params_format(&fo.params, xo.algo, sizeof xo.algo);
    cli_out out;
    if (cli_out_open(&out, "-") != 0) {
        fprintf(stderr, "%s: %s\n", prog, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    if (optind >= argc) {
        failed |= xcmd_one(prog, &out, &xo, "-", cli_fp_is_html(&fo, "-")) != 0;
    } else {
        for (int i = optind; i < argc; i++)
            failed |= xcmd_one(prog, &out, &xo, argv[i], cli_fp_is_html(&fo, argv[i])) != 0;
    }
    if (cli_out_close(&out) != 0) {
        fprintf(stderr, "%s: <stdout>: write error: %s\n", prog, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
