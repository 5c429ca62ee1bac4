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

int cli_opt_error(const char *prog, int ret, char **argv)
{
    const char *arg = (optind > 0) ? argv[optind - 1] : "?";

    if (ret == ':') {
        if (optopt)
            fprintf(stderr, "%s: option '-%c' needs a value\n", prog, optopt);
        else
            fprintf(stderr, "%s: option '%s' needs a value\n", prog, arg);
    } else if (optopt) {
        fprintf(stderr, "%s: unknown option '-%c'\n", prog, optopt);
    } else {
        fprintf(stderr, "%s: unknown option '%s'\n", prog, arg);
    }
    fprintf(stderr, "Try '%s --help'.\n", prog);
    return CLI_EXIT_USAGE;
}
