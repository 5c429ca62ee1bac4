/* cli_opts.c: option helpers shared by the command-line programs: number values,
 * block/distance validation through perm_set_init, core count, getopt errors. */
#include "cli.h"
#include "parse.h"
#include "perm.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int cli_opt_uint(const char *prog, const char *opt, const char *val,
                 uint64_t min, uint64_t max, uint64_t *out)
{
    const char *why = NULL;

    if (parse_uint_range(val, strlen(val), min, max, out, &why) != 0) {
        fprintf(stderr, "%s: option %s: %s: '%.40s'\n", prog, opt, why, val);
        return -1;
    }
    return 0;
}

int cli_check_tables(const char *prog, unsigned blocks, unsigned distance)
{
    char err[256] = "";
    perm_set ps;

    if (perm_set_init(&ps, blocks, distance, err, sizeof(err)) != 0) {
        if (err[0])
            fprintf(stderr, "%s: %s\n", prog, err);
        else
            fprintf(stderr, "%s: invalid setting: blocks %u, distance %u\n", prog, blocks,
                    distance);
        return -1;
    }
    perm_set_free(&ps);
    return 0;
}

unsigned cli_ncpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > CLI_THREADS_MAX ? CLI_THREADS_MAX : (unsigned)n;
}

/* Non-zero when the failing option was the long option argv[optind - 1]: it
 * starts with "--" and getopt is not in the middle of a short-option cluster
 * argv[optind] that holds optopt (getopt leaves optind on such a cluster). */
static int cli_opt_error_is_long(char **argv)
{
    if (optind < 1 || !argv[optind - 1] || strncmp(argv[optind - 1], "--", 2) != 0 ||
        argv[optind - 1][2] == '\0')
        return 0;
    const char *cur = argv[optind];
    if (optopt && cur && cur[0] == '-' && cur[1] != '-') {
        const char *at = strchr(cur + 1, optopt);
        if (at && at[1] != '\0')
            return 0;
    }
    return 1;
}

int cli_opt_error(const char *prog, int ret, char **argv)
{
    if (cli_opt_error_is_long(argv)) {
        /* the option as typed, without any "=value" */
        const char *arg = argv[optind - 1];
        const char *eq = strchr(arg, '=');
        int len = (int)(eq ? (size_t)(eq - arg) : strlen(arg));
        if (len > 64)
            len = 64;
        if (ret == ':')
            fprintf(stderr, "%s: option '%.*s' needs a value\n", prog, len, arg);
        else if (optopt && eq)
            fprintf(stderr, "%s: option '%.*s' doesn't allow an argument\n", prog, len, arg);
        else
            fprintf(stderr, "%s: unknown option '%.*s'\n", prog, len, arg);
    } else if (ret == ':') {
        fprintf(stderr, "%s: option '-%c' needs a value\n", prog, optopt);
    } else if (optopt > 0x20 && optopt < 0x7f) {
        fprintf(stderr, "%s: unknown option '-%c'\n", prog, optopt);
    } else {
        fprintf(stderr, "%s: unknown option\n", prog);
    }
    fprintf(stderr, "Try '%s --help'.\n", prog);
    return CLI_EXIT_USAGE;
}

void cli_match_opts_init(cli_match_opts *o)
{
    o->blocks = CLI_BLOCKS_DEFAULT;
    o->distance = CLI_DISTANCE_DEFAULT;
    o->threads = 0;
}

int cli_match_opt(const char *prog, int c, const char *arg, cli_match_opts *o)
{
    switch (c) {
    case 'b': return cli_opt_uint(prog, "--blocks", arg, 1, 64, &o->blocks) != 0 ? -1 : 1;
    case 'd': return cli_opt_uint(prog, "--distance", arg, 0, 63, &o->distance) != 0 ? -1 : 1;
    case 't':
        return cli_opt_uint(prog, "--threads", arg, 0, CLI_THREADS_MAX, &o->threads) != 0 ? -1 : 1;
    default: return 0;
    }
}
