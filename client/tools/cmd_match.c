/* cmd_match.c: simhash-find-all and simhash-find-clusters (also `simhash find-all`
 * and `simhash find-clusters`): numbers in, every near-duplicate pair or every
 * cluster out as one JSON array per line. */
#include "cli.h"
#include "match.h"

#include <errno.h>
#include <getopt.h>
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
            "  -h, --help         show this help\n"
            "      --version      show the version\n"
            "\n"
            "Exit status: 0 success, 1 bad input or I/O error, 2 bad usage.\n",
            prog,
            clusters ? "every cluster [a, b, c, ...]: a connected component of the\n"
                       "match graph with two or more lines, values sorted, repeats kept"
                     : "every pair [a, b] (a <= b) within the distance, and [a, a]\n"
                       "for a value given on two or more lines",
            CLI_BLOCKS_DEFAULT, CLI_DISTANCE_DEFAULT);
}

/* Write the pairs; returns nothing, errors stay in o->err. strings: values as JSON
 * strings. */
static void mcmd_write_pairs(cli_out *o, const match_pair *pairs, size_t n, int strings)
{
    void (*put)(cli_out *, uint64_t) = strings ? cli_out_u64_json : cli_out_u64;
    for (size_t i = 0; i < n; i++) {
        cli_out_char(o, '[');
        put(o, pairs[i].a);
        cli_out_bytes(o, ", ", 2);
        put(o, pairs[i].b);
        cli_out_bytes(o, "]\n", 2);
    }
}

static void mcmd_write_clusters(cli_out *o, const uint64_t *values, const size_t *offsets,
                                size_t nclusters, int strings)
{
    void (*put)(cli_out *, uint64_t) = strings ? cli_out_u64_json : cli_out_u64;
    for (size_t c = 0; c < nclusters; c++) {
        cli_out_char(o, '[');
        for (size_t j = offsets[c]; j < offsets[c + 1]; j++) {
            if (j > offsets[c])
                cli_out_bytes(o, ", ", 2);
            put(o, values[j]);
        }
        cli_out_bytes(o, "]\n", 2);
    }
}

static int mcmd_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int cli_match_main(int argc, char **argv, const char *prog, int clusters)
{
    static const struct option longopts[] = {
        {"blocks", required_argument, NULL, 'b'},
        {"distance", required_argument, NULL, 'd'},
        {"input", required_argument, NULL, 'i'},
        {"output", required_argument, NULL, 'o'},
        {"threads", required_argument, NULL, 't'},
        {"unique", no_argument, NULL, 'D'},
        {"json-strings", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    cli_match_opts mo;
    const char *input = "-", *output = "-";
    int c, r, distinct = 0, strings = 0;

    cli_match_opts_init(&mo);
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":b:d:i:o:t:h", longopts, NULL)) != -1) {
        if ((r = cli_match_opt(prog, c, optarg, &mo)) != 0) {
            if (r < 0)
                return CLI_EXIT_USAGE;
            continue;
        }
        switch (c) {
        case 'i': input = optarg; break;
        case 'o': output = optarg; break;
        case 'D': distinct = 1; break;
        case 'J': strings = 1; break;
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
    if (cli_check_tables(prog, (unsigned)mo.blocks, (unsigned)mo.distance) != 0)
        return CLI_EXIT_USAGE;

    /* Read and parse everything, and match, before touching the output: a failure
     * leaves an existing output file as it was. */
    uint64_t *hashes = NULL;
    size_t n = 0;
    if (cli_read_u64_input(prog, input, &hashes, &n) != 0)
        return CLI_EXIT_FAIL;
    if (distinct && n > 1) {
        qsort(hashes, n, sizeof(*hashes), mcmd_cmp_u64);
        size_t k = 1;
        for (size_t i = 1; i < n; i++)
            if (hashes[i] != hashes[k - 1])
                hashes[k++] = hashes[i];
        n = k;
    }

    char err[256] = "";
    int rc = 0;
    match_pair *pairs = NULL;
    size_t npairs = 0;
    uint64_t *values = NULL;
    size_t *offsets = NULL, nclusters = 0;
    if (n > 0 && !clusters)
        rc = match_find_all(hashes, n, (unsigned)mo.blocks, (unsigned)mo.distance,
                            (unsigned)mo.threads, &pairs, &npairs, err, sizeof(err));
    else if (n > 0)
        rc = match_find_clusters(hashes, n, (unsigned)mo.blocks, (unsigned)mo.distance,
                                 (unsigned)mo.threads, &values, &offsets, &nclusters,
                                 err, sizeof(err));
    free(hashes);
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", prog, err[0] ? err : "matching failed");
        free(pairs);
        free(values);
        free(offsets);
        return CLI_EXIT_FAIL;
    }

    cli_out out;
    if (cli_out_open(&out, output) != 0) {
        fprintf(stderr, "%s: %s: %s\n", prog, output, strerror(errno));
        free(pairs);
        free(values);
        free(offsets);
        return CLI_EXIT_FAIL;
    }
    if (!clusters)
        mcmd_write_pairs(&out, pairs, npairs, strings);
    else
        mcmd_write_clusters(&out, values, offsets, nclusters, strings);
    free(pairs);
    free(values);
    free(offsets);
    if (cli_out_close(&out) != 0) {
        fprintf(stderr, "%s: %s: write error: %s\n", prog,
                strcmp(output, "-") == 0 ? "<stdout>" : output, strerror(errno));
        return CLI_EXIT_FAIL;
    }
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
