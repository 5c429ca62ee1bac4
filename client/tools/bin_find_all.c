/* bin_find_all.c: the simhash-find-all program (every near-duplicate pair). */
#include "cli.h"

int main(int argc, char **argv)
{
    return cli_match_main(argc, argv, "simhash-find-all", 0);
}
