/* rs_config.h: the server options simhash-shard and simhash-coordinator share.
 *
 * One table (rs_limit_options) declares each client limit and budget of rs_limits
 * once: name, type, bounds, default and help. Each daemon's cfg_spec names it as its
 * shared table (cfg_spec.shared, at the offset of its rs_limits); a row of the
 * daemon's own table with the same name replaces the shared one (the worker's
 * defaults for max-inflight-client and timeout). The defaults of rs_limits_default
 * are this table's, so the code, --help and the docs cannot disagree. */
#ifndef SIMHASH_RS_CONFIG_H
#define SIMHASH_RS_CONFIG_H

#include <stddef.h>

#include "config.h"
#include "rserver.h"

#define RS_NLIMIT_OPTIONS 33
extern const cfg_option rs_limit_options[RS_NLIMIT_OPTIONS];

/* The last fields of a daemon's cfg_spec: the shared rows, at the rs_limits member
 * `field` of its configuration struct `type`. */
#define RS_CONFIG_SHARED(type, field) \
    "Client limits and budgets (the same options in simhash-shard and simhash-coordinator):", \
    rs_limit_options, RS_NLIMIT_OPTIONS, offsetof(type, field)

/* Cross-option checks of the limits (max-request-bytes not below max-arg-bytes) and
 * of the TLS option values (rs_tls_conf_check; the files are read at start).
 * Returns 0, or -1 with a message in err. */
int rs_limits_check(const rs_limits *l, char *err, size_t errlen);

/* The settings a daemon changes while running on SIGHUP, in its running
 * configuration. */
typedef struct rs_live_config {
    int *loglevel;
    int *syslog;
    rs_limits *limits;          /* of which the slow log settings */
} rs_live_config;

/* SIGHUP, both daemons: loads spec again from the command line given at start
 * (argc, argv; its --config file read again) into fresh, an object of spec of size
 * bytes (zeroed here) whose loglevel and syslog ints are at off_loglevel and
 * off_syslog and whose rs_limits at spec->shared_offset. When it loads, applies
 * loglevel, syslog (ident prog) and the slow log settings to live and to srv (NULL:
 * none) and logs them, and reads srv's TLS files again (rs_tls_reload); else logs
 * that nothing changed. fresh's values are freed. */
void rs_config_reload(const cfg_spec *spec, int argc, char **argv, void *fresh, size_t size,
                      size_t off_loglevel, size_t off_syslog, rs_live_config live,
                      rserver *srv);

/* Exit statuses of both daemons (docs/operations.md#exit-status). */
enum rs_exit {
    RS_EXIT_OK = 0,
    RS_EXIT_FAILURE = 1,    /* a failure while starting or running: cannot listen, out
                               of memory, the corpus or the workers disagree (worker) */
    RS_EXIT_CONFIG = 2      /* the configuration is refused: an option, the log file,
                               the permutation tables */
};

/* The end of both daemons' --help paragraph (and so of their man pages). */
#define RS_EXIT_HELP \
    "Exit status: 0 stopped by SIGTERM/SIGINT, 1 a failure while starting or running,\n" \
    "2 the configuration refused (docs/operations.md#exit-status)."


#endif
