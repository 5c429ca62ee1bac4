/* main.c: the `simhash` program: dispatches to its subcommands (offline ones in
 * client/tools/cmd_*.c, network ones in cmd_net.c here). */
#include "cli.h"
#include "cmd_net.h"

#include <stdio.h>
#include <string.h>

typedef struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} cli_command;

/* The one list of subcommands: dispatch and --help both come from it. */
static const cli_command commands[] = {
    {"fingerprint", cmd_fingerprint, "fingerprint of each file (or each line) of text"},
    {"extract", cmd_extract, "the text each file's fingerprint is taken from (the article)"},
    {"compute", cmd_compute, "fingerprint of a list of feature hashes"},
    {"find-all", cmd_find_all, "every near-duplicate pair among numbers (as simhash-find-all)"},
    {"find-clusters", cmd_find_clusters, "clusters of near-duplicate numbers (as simhash-find-clusters)"},
    {"dedup", cmd_dedup, "group the near-duplicate files under directories"},
    {"add", cmd_add, "add (fingerprint, document id) pairs to a running deployment"},
    {"query", cmd_query, "stored near-duplicates of a fingerprint"},
    {"check", cmd_check, "print the stored near-duplicates of a fingerprint, then add it"},
    {"del", cmd_del, "remove a document id, or a fingerprint with all its documents"},
    {"load", cmd_load, "bulk-load 'fingerprint docid' lines, 256 pairs a call"},
    {"export", cmd_export, "print every (fingerprint, docid) pair of a deployment, as load reads them"},
    {"migrate", cmd_migrate, "copy a deployment's corpus into another one (other layout, settings, name)"},
    {"fsck", cmd_fsck, "check (and --repair) a deployment's Redis data: tables, documents, locks, counters"},
};

static void cli_usage(FILE *f)
{
    fprintf(f,
            "Usage: simhash COMMAND [OPTIONS] [ARGS]\n"
            "\n"
            "Near-duplicate detection with 64-bit simhash fingerprints.\n"
            "\n"
            "Commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\n"
            "'simhash COMMAND --help' describes each command.\n"
            "  -h, --help     show this help\n"
            "      --version  show the version\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "help") == 0) {
        cli_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0) {
        printf("simhash %s\n", SIMHASH_VERSION);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(name, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "simhash: unknown command '%.40s'\nTry 'simhash --help'.\n", name);
    return CLI_EXIT_USAGE;
}
