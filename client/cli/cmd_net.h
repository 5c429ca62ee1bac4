/* cmd_net.h: the simhash CLI's subcommands that talk to a running coordinator. */
#ifndef SIMHASH_CMD_NET_H
#define SIMHASH_CMD_NET_H

/* Each takes the arguments after the subcommand name (argv[0] is the subcommand)
 * and returns the process exit status. */
int cmd_add(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_del(int argc, char **argv);
int cmd_load(int argc, char **argv);

#endif
