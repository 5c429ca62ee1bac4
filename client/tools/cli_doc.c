/* cli_doc.c: the fingerprint options shared by `simhash fingerprint` and `simhash
 * dedup` (algorithm, window, text or HTML, title, all text) and one streaming document reader for
 * both kinds of input. */
#include "cli.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

void cli_fp_opts_init(cli_fp_opts *o)
{
    memset(o, 0, sizeof *o);
    o->params.version = FP_VERSION_DEFAULT;
    o->html = CLI_HTML_AUTO;
}

int cli_fp_opt(const char *prog, int c, const char *arg, cli_fp_opts *o)
{
    char err[160];
    uint64_t w;
    switch (c) {
    case 'w':
        if (cli_opt_uint(prog, "--window", arg, 1, FP_WINDOW_MAX, &w) != 0)
            return -1;
        o->window = (unsigned)w;
        return 1;
    case CLI_OPT_ALGO:
        if (fp_params_parse(arg, &o->params, err, sizeof err) != 0) {
            fprintf(stderr, "%s: option --algorithm: %s\n", prog, err);
            return -1;
        }
        o->algo_given = 1;
        o->algo_window = strchr(arg, ':') != NULL;
        return 1;
    case CLI_OPT_HTML:
    case CLI_OPT_TEXT:
        if (o->html != CLI_HTML_AUTO) {
            fprintf(stderr, "%s: give one of --html and --text\n", prog);
            return -1;
        }
        o->html = c == CLI_OPT_HTML ? CLI_HTML_ALWAYS : CLI_HTML_NEVER;
        return 1;
    case CLI_OPT_TITLE:
        o->title = 1;
        return 1;
    case CLI_OPT_ALL_TEXT:
        o->all_text = 1;
        return 1;
    default:
        return 0;
    }
}

int cli_fp_opts_done(const char *prog, cli_fp_opts *o)
{
    if (!o->window)
        return 0;
    if (o->algo_given && o->params.version != FP_V1) {
        fprintf(stderr, "%s: --window applies to algorithm v1 (give --algorithm v1:W, or "
                "--window alone)\n", prog);
        return -1;
    }
    if (o->algo_window && o->params.window != o->window) {
        fprintf(stderr, "%s: --window %u and --algorithm v1:%u disagree\n", prog, o->window,
                o->params.window);
        return -1;
    }
    o->params.version = FP_V1;
    o->params.window = o->window;
    return 0;
}

int cli_fp_is_html(const cli_fp_opts *o, const char *path)
{
    if (o->html != CLI_HTML_AUTO)
        return o->html == CLI_HTML_ALWAYS;
    size_t n = strlen(path);
    return (n > 5 && strcasecmp(path + n - 5, ".html") == 0) ||
           (n > 4 && strcasecmp(path + n - 4, ".htm") == 0);
}

int cli_doc_init(cli_doc *d, const cli_fp_opts *o)
{
    memset(d, 0, sizeof *d);
    d->fs = fp_state_new_p(&o->params);
    d->fh = fp_html_new(&o->params, (o->title ? FP_HTML_TITLE : 0) |
                                        (o->all_text ? FP_HTML_ALL_TEXT : 0));
    if (d->fs == NULL || d->fh == NULL) {
        cli_doc_free(d);
        return -1;
    }
    return 0;
}

void cli_doc_free(cli_doc *d)
{
    fp_state_free(d->fs);
    fp_html_free(d->fh);
    d->fs = NULL;
    d->fh = NULL;
}

void cli_doc_begin(cli_doc *d, int html)
{
    d->html = html;
    d->failed = 0;
}

void cli_doc_update(cli_doc *d, const void *data, size_t len)
{
    if (!d->html)
        fp_state_update(d->fs, data, len);
    else if (!d->failed && fp_html_update(d->fh, data, len) != 0)
        d->failed = 1;
}

int cli_doc_final(cli_doc *d, uint64_t *fp, const char **err)
{
    if (!d->html) {
        *fp = fp_state_final(d->fs);
        return 0;
    }
    if (fp_html_final(d->fh, fp) != 0) {
        *err = fp_html_error(d->fh);
        return -1;
    }
    return 0;
}
