/* cmd_net.c: network subcommands of the simhash CLI (placeholder until the client
 * library lands: each says so and fails). */
#include "cmd_net.h"

#include <stdio.h>

static int not_built(const char *name)
{
    fprintf(stderr, "simhash %s: not available in this build\n", name);
    return 2;
}

int cmd_add(int argc, char **argv) { (void)argc; return not_built(argv[0]); }
int cmd_query(int argc, char **argv) { (void)argc; return not_built(argv[0]); }
int cmd_check(int argc, char **argv) { (void)argc; return not_built(argv[0]); }
int cmd_del(int argc, char **argv) { (void)argc; return not_built(argv[0]); }
int cmd_load(int argc, char **argv) { (void)argc; return not_built(argv[0]); }
