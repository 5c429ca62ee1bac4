/* config.h: table-driven configuration for the daemons.
 *
 * One table of options {name, type, offset, min, max, default} serves both a config
 * file of "name value" lines (# starts a comment, blank lines ignored) and the
 * command line "--name value". Order: every option unset, then the file (given by
 * --config FILE), then the command line (which wins), then defaults for what is
 * still unset, then validation (required options, the program's own check).
 * Repeatable options (CFG_LIST, e.g. `worker`) collect every occurrence; the
 * command line replaces the file's list when it gives the option at all.
 * Secrets are read from files (CFG_SECRET options, named `*-file`), never taken from
 * the command line as values. */
#ifndef SIMHASH_CONFIG_H
#define SIMHASH_CONFIG_H

#include <stddef.h>
#include <stdint.h>

typedef enum cfg_type {
    CFG_STR,        /* char *            (malloc'ed)                                  */
    CFG_UINT,       /* unsigned          decimal, in [min, max]                       */
    CFG_SIZE,       /* size_t            decimal with optional k/m/g suffix (x1024)   */
    CFG_BOOL,       /* int               yes/no, true/false, on/off, 1/0              */
    CFG_LIST,       /* cfg_list          repeatable string                            */
    CFG_SECRET,     /* char *            value is a file path; the field gets the
                                         file's first line (must not be empty)        */
    CFG_LOGLEVEL    /* int               debug, info, warning, error                  */
} cfg_type;

typedef struct cfg_list {
    char **v;
    size_t n;
} cfg_list;

#define CFG_REQUIRED 1u

typedef struct cfg_option {
    const char *name;
    cfg_type type;
    size_t offset;            /* offsetof(your struct, field) */
    uint64_t min, max;        /* CFG_UINT, CFG_SIZE; CFG_LIST: min/max count (max 0 = any) */
    const char *def;          /* default as text; NULL = none (string NULL, number 0) */
    unsigned flags;           /* CFG_REQUIRED */
    const char *help;         /* one line for --help */
} cfg_option;

/* A program's whole configuration: the table and a cross-option check. */
typedef struct cfg_spec {
    const char *program;      /* "simhash-coordinator" */
    const char *usage;        /* one paragraph printed by --help before the options */
    const cfg_option *options;
    size_t noptions;
    /* Called after defaults; return 0, or -1 with a message in err (e.g. "distance
     * (3) must be smaller than blocks (3)"). May be NULL. */
    int (*validate)(void *obj, char *err, size_t errlen);
    /* Rows shared with another program (rs_limit_options), their offsets relative to
     * shared_offset in obj; a row of options with the same name replaces one. --help
     * lists them after shared_title. May be NULL. */
    const char *shared_title;
    const cfg_option *shared;
    size_t nshared;
    size_t shared_offset;
} cfg_spec;

typedef enum cfg_result {
    CFG_RUN = 0,      /* configuration loaded: run */
    CFG_EXIT_OK,      /* --help or --version printed, or --check-config passed */
    CFG_EXIT_ERR      /* a message was printed to stderr: exit 2 */
} cfg_result;

/* Parse argv (with --config FILE, --check-config, --help, --version) into obj, which
 * the caller zeroed. Messages go to stdout (help, version, "configuration OK") or
 * stderr (errors as "FILE:LINE: message" or "--name: message"). */
cfg_result cfg_load(const cfg_spec *spec, void *obj, int argc, char **argv);

/* ---- Lower level (used by cfg_load and the tests) ---- */

typedef struct cfg_state cfg_state;

cfg_state *cfg_state_new(const cfg_spec *spec, void *obj);
void cfg_state_free(cfg_state *st);

/* Set one option from text; where = "file:line" or "--name" for messages.
 * Returns 0, or -1 with "where: message" in err. */
int cfg_set(cfg_state *st, const char *name, const char *value, const char *where,
            char *err, size_t errlen);

/* Parse config text (NUL-terminated) as if read from file `fname`. Stops at the first
 * bad line: -1 with "fname:LINE: message" in err. */
int cfg_parse_text(cfg_state *st, const char *text, const char *fname, char *err, size_t errlen);
int cfg_parse_file(cfg_state *st, const char *path, char *err, size_t errlen);

/* Defaults for unset options, then required options, then spec->validate.
 * Returns 0, or -1 with err set. */
int cfg_finish(cfg_state *st, char *err, size_t errlen);

/* Free the strings and lists that options put in obj. */
void cfg_free_values(const cfg_spec *spec, void *obj);

#endif
