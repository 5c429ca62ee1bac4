/* cmd_net.h: the simhash CLI's subcommands that talk to a running coordinator. */
#ifndef SIMHASH_CMD_NET_H
#define SIMHASH_CMD_NET_H

#include <stddef.h>

#include "simhash/client.h"

#define NET_PORT_DEFAULT 7000
#define NET_TIMEOUT_DEFAULT 5000      /* ms */

/* Each takes the arguments after the subcommand name (argv[0] is the subcommand)
 * and returns the process exit status. */
int cmd_add(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_del(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_fsck(int argc, char **argv);

/* ---- Options shared by every network subcommand ---- */

enum {
    OPT_HOST = 1000, OPT_VERSION, OPT_PORT, OPT_PASSFILE, OPT_TIMEOUT, OPT_JSON, OPT_TEXT, OPT_LIMIT,
    OPT_FORMAT
};

#define NET_LONGOPTS                                     \
    {"host", required_argument, NULL, OPT_HOST},         \
    {"port", required_argument, NULL, OPT_PORT},         \
    {"password-file", required_argument, NULL, OPT_PASSFILE}, \
    {"timeout-ms", required_argument, NULL, OPT_TIMEOUT},\
    {"help", no_argument, NULL, 'h'},                     \
    {"version", no_argument, NULL, OPT_VERSION}

#define NET_OPTIONS_HELP                                                          \
    "Connection options:\n"                                                       \
    "      --host HOST[,HOST..]  coordinator address(es), each host[:port]; with\n"   \
    "                            several, calls fail over to the next (default\n"  \
    "                            127.0.0.1)\n"                                      \
    "      --port PORT           coordinator port (default 7000)\n"               \
    "      --password-file FILE  send AUTH with the password in FILE\n"           \
    "      --timeout-ms MS       connect and reply timeout (default 5000; 0 = none)\n" \
    "  -h, --help                show this help\n"                                \
    "      --version             show the version\n"                             \
    "Exit status: 0 ok, 1 runtime or server error, 2 usage.\n"

typedef struct net_opts {
    const char *prog;
    const char *host;
    unsigned port;
    const char *password_file;
    unsigned timeout_ms;
} net_opts;

/* Defaults: 127.0.0.1, port 7000, no password, 5000 ms. */
void net_opts_init(net_opts *o, const char *prog);
/* Handle a connection option (and --version). Returns 1 when handled, 2 when the
 * command is done (--version printed), 0 when c is not one, -1 on a bad value
 * (message printed). */
int net_common_opt(net_opts *o, int c, const char *val);
/* getopt_long returned c (optarg set), not one of the command's own options: a
 * connection option is taken (-1: parse on), anything else gives the exit status
 * (0 after --version, 2 with a message for a bad value or an unknown option). */
int net_opt_or_exit(net_opts *o, int c, char **argv);
/* Connect as the options say. Returns the handle, or NULL with a message printed. */
shc_client *net_connect(const net_opts *o);
/* Print a failed call's message; returns the exit status 1. */
int net_fail(const net_opts *o, shc_client *c);
/* Print a usage message; returns the exit status 2. */
int net_usage_error(const char *prog, const char *msg);
/* Parse only the connection options; -1 to go on (optind at the operands), else the
 * exit status (--help, --version, a bad option). */
int net_parse_common(int argc, char **argv, const char *prog, const char *usage, net_opts *o);

/* The first line of `simhash export --escape`: every id after it has the bytes up to
 * ' ', DEL and '%' written %XX; simhash load decodes them. */
#define NET_LOAD_ESCAPED_HEADER "# simhash export: document ids escaped (%XX)"

int cmd_export(int argc, char **argv);
int cmd_migrate(int argc, char **argv);

/* Reads the password in path into buf (the first line, without its ending; at most
 * size - 1 bytes, not empty, no NUL). Returns 0, or -1 with a message printed. */
int net_read_password(const char *prog, const char *path, char *buf, size_t size);

#endif
