/* cmd_net.h: the simhash CLI's subcommands that talk to a running coordinator. */
#ifndef SIMHASH_CMD_NET_H
#define SIMHASH_CMD_NET_H

#include <stddef.h>

/* Each takes the arguments after the subcommand name (argv[0] is the subcommand)
 * and returns the process exit status. */
int cmd_add(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_del(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_fsck(int argc, char **argv);

/* Reads the password in path into buf (the first line, without its ending; at most
 * size - 1 bytes, not empty, no NUL). Returns 0, or -1 with a message printed. */
int net_read_password(const char *prog, const char *path, char *buf, size_t size);

#endif
