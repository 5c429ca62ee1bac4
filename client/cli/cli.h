/* cli.h: shared helpers of the offline command-line programs (simhash,
 * simhash-find-all, simhash-find-clusters): whole-input reading, strict fast
 * parsing of one number per line, a buffered output writer with JSON helpers,
 * option helpers, a progress bar, and the subcommands implemented here. */
#ifndef SIMHASH_CLI_H
#define SIMHASH_CLI_H

#include <stddef.h>
#include <stdint.h>

/* Exit statuses of every program. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_USAGE = 2 };

#define CLI_BLOCKS_DEFAULT 6
#define CLI_DISTANCE_DEFAULT 3
#define CLI_THREADS_MAX 1024
#define CLI_ERR_TEXT_MAX 40      /* bytes of an offending line quoted in messages */

/* ---- Whole-input reading (cli_input.c) ---- */

/* A file's content: mapped (regular files) or read into a heap buffer (pipes). */
typedef struct cli_buf {
    char *data;
    size_t len;
    size_t maplen;               /* non-zero when data is an mmap */
} cli_buf;

/* Read all of fd. Returns 0, or -1 with errno set (the buffer is left empty). */
int cli_buf_read_fd(int fd, cli_buf *b);
/* Read the file at path ("-" = stdin). Returns 0, or -1 with errno set. */
int cli_buf_read_path(const char *path, cli_buf *b);
void cli_buf_free(cli_buf *b);

/* Where a line failed to parse. */
typedef struct cli_parse_error {
    size_t line;                 /* 1-based */
    const char *why;             /* reason from parse_u64 */
    const char *text;            /* start of the line in the input */
    size_t textlen;              /* its length without the line ending */
} cli_parse_error;

/* Parse one unsigned decimal 64-bit number per line of data[0..len): lines end in
 * "\n" or "\r\n", the last may lack its ending. Accepts exactly what parse_u64
 * accepts. Returns 0 with *out malloc'ed (NULL when *n == 0), or -1 with *e filled
 * (e->why "out of memory" when allocation failed). */
int cli_parse_u64_lines(const char *data, size_t len, uint64_t **out, size_t *n,
                        cli_parse_error *e);

/* Print "<prog>: <name>:<line>: <reason>: '<text>'" to stderr (text truncated to
 * CLI_ERR_TEXT_MAX bytes, control bytes shown as '?'). */
void cli_report_parse_error(const char *prog, const char *name, const cli_parse_error *e);

/* Display name of an input path: "<stdin>" for "-". */
const char *cli_input_name(const char *path);

/* ---- Buffered output (cli_output.c) ---- */

typedef struct cli_out {
    int fd;
    int owns_fd;                 /* close fd in cli_out_close */
    int err;                     /* first errno of a failed write, 0 if none */
    char *buf;
    size_t len, cap;
} cli_out;

/* Open path for writing ("-" = stdout, no file is touched). Returns 0, or -1
 * with errno set. */
int cli_out_open(cli_out *o, const char *path);
/* Write n bytes (buffered; errors are remembered in o->err). */
void cli_out_bytes(cli_out *o, const char *s, size_t n);
void cli_out_str(cli_out *o, const char *s);
void cli_out_char(cli_out *o, char c);
void cli_out_u64(cli_out *o, uint64_t v);
/* s[0..n) as a JSON string with quotes: '"', '\\' and control bytes escaped,
 * invalid UTF-8 bytes replaced by \ufffd. */
void cli_out_json_str(cli_out *o, const char *s, size_t n);
/* Flush and close. Returns 0, or -1 with errno set to the first write error. */
int cli_out_close(cli_out *o);

/* Decimal digits of v into dst (at least 20 bytes, no terminator); returns the count. */
size_t cli_u64_to_dec(uint64_t v, char *dst);

/* ---- Options (cli_opts.c) ---- */

/* Parse a number option value with parse_uint_range; on error print
 * "<prog>: option <opt>: <reason>: '<val>'" and return -1. */
int cli_opt_uint(const char *prog, const char *opt, const char *val,
                 uint64_t min, uint64_t max, uint64_t *out);
/* Check blocks/distance with perm_set_init; on error print "<prog>: <message>"
 * and return -1. */
int cli_check_tables(const char *prog, unsigned blocks, unsigned distance);
/* Number of online cores, at least 1. */
unsigned cli_ncpus(void);
/* Print the standard message for an unknown option or a missing value after a
 * getopt_long call returned '?' or ':' (opterr must be 0, optstring start with
 * ':'). Always returns CLI_EXIT_USAGE. */
int cli_opt_error(const char *prog, int ret, char **argv);

/* ---- Progress bar on stderr (cli_progress.c) ---- */

typedef struct cli_progress {
    int enabled;                 /* stderr is a terminal */
    size_t total;
    const char *label;
    long long last_ms;
} cli_progress;

void cli_progress_init(cli_progress *p, const char *label, size_t total);
/* Redraw when at least 100 ms passed since the last draw (or done == total). */
void cli_progress_update(cli_progress *p, size_t done);
/* Clear the bar line. */
void cli_progress_end(cli_progress *p);

/* ---- Subcommands (cmd_*.c); each returns the exit status ---- */

/* simhash-find-all / simhash-find-clusters, prog is the name used in messages. */
int cli_match_main(int argc, char **argv, const char *prog, int clusters);
int cmd_find_all(int argc, char **argv);
int cmd_find_clusters(int argc, char **argv);
int cmd_fingerprint(int argc, char **argv);
int cmd_compute(int argc, char **argv);
int cmd_dedup(int argc, char **argv);

#endif
