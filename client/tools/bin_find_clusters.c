/* bin_find_clusters.c: the simhash-find-clusters program (clusters of near-duplicates). */
#include "cli.h"

int main(int argc, char **argv)
{
    return cli_match_main(argc, argv, "simhash-find-clusters", 1);
}
