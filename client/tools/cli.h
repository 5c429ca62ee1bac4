/* cli.h: shared helpers of the offline command-line programs (simhash,
 * simhash-find-all, simhash-find-clusters): block-wise input reading, strict fast
 * parsing of one number per line (whole or streamed), a buffered output writer with JSON helpers,
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

/* ---- Input reading (cli_input.c) ---- */

#define CLI_READ_CHUNK (1u << 20)   /* bytes per read() */
#define CLI_LINE_MAX 64             /* longest number line in streamed input, without ending */

/* A whole input read into a heap buffer (regular files and pipes alike: never
 * mapped, so a file truncated meanwhile cannot fault). */
typedef struct cli_buf {
    char *data;
    size_t len;
    size_t maplen;               /* always 0 (kept for callers) */
} cli_buf;

/* Read all of fd. Returns 0, or -1 with errno set (the buffer is left empty);
 * errno EIO when a regular file changed size or time while being read. */
int cli_buf_read_fd(int fd, cli_buf *b);
/* Read the file at path ("-" = stdin). Returns 0, or -1 with errno set. */
int cli_buf_read_path(const char *path, cli_buf *b);
void cli_buf_free(cli_buf *b);

/* An input read block by block through one CLI_READ_CHUNK buffer. */
typedef struct cli_reader {
    int fd;
    int owns_fd;
    int regular;                 /* a regular file: checked for change at its end */
    long long size, mtime_s, mtime_ns;   /* fstat at open */
    char *buf;
    const char *err;             /* why the last call failed */
} cli_reader;

/* Open path ("-" = stdin) without blocking on a FIFO; directories are refused.
 * Returns 0, or -1 with r->err set (r need not be closed then). */
int cli_reader_open(cli_reader *r, const char *path);
/* Next block: returns its length (> 0, data in r->buf), 0 at the end, or -1 with
 * r->err set (a read error, or "changed while reading" when a regular file's size
 * or modification time at the end differs from the one at open). */
long cli_reader_next(cli_reader *r);
void cli_reader_close(cli_reader *r);

/* Where a line failed to parse. */
typedef struct cli_parse_error {
    size_t line;                 /* 1-based */
    const char *why;             /* reason from parse_u64, or "line too long ..." */
    const char *text;            /* start of the line in the input */
    size_t textlen;              /* its length without the line ending */
} cli_parse_error;

/* Parse one unsigned decimal 64-bit number per line of data[0..len): lines end in
 * "\n" or "\r\n", the last may lack its ending. Accepts exactly what parse_u64
 * accepts. Returns 0 with *out malloc'ed (NULL when *n == 0), or -1 with *e filled
 * (e->why "out of memory" when allocation failed). */
int cli_parse_u64_lines(const char *data, size_t len, uint64_t **out, size_t *n,
                        cli_parse_error *e);

/* Streaming form: numbers parsed block by block as the input arrives, only a
 * partial last line (at most CLI_LINE_MAX + 1 bytes) carried between blocks. The
 * same lines as cli_parse_u64_lines are accepted, except that a line longer than
 * CLI_LINE_MAX bytes (without its ending) is refused as soon as it is seen. */
typedef struct cli_lines {
    uint64_t *v;                 /* values so far (malloc'ed) */
    size_t n, cap;
    size_t line;                 /* complete lines parsed */
    size_t maxline;              /* 0 = no limit (whole-buffer parsing) */
    size_t carrylen;
    char carry[CLI_LINE_MAX + 2];
} cli_lines;

void cli_lines_init(cli_lines *s);
/* Parse the next len bytes. Returns 0, or -1 with *e filled (e->text points into
 * data or into s, valid until the next call). */
int cli_lines_feed(cli_lines *s, const char *data, size_t len, cli_parse_error *e);
/* End of input: parse a last line without ending. Returns 0 with *out (NULL when
 * *n == 0) and *n taken over from s, or -1 with *e filled (s's values freed). */
int cli_lines_end(cli_lines *s, uint64_t **out, size_t *n, cli_parse_error *e);
void cli_lines_free(cli_lines *s);

/* Read and parse the input at path ("-" = stdin) with a cli_reader and cli_lines;
 * every error (open, read, change, parse) is printed with prog and the input's
 * name. Returns 0 with *out (NULL when *n == 0), or -1. */
int cli_read_u64_input(const char *prog, const char *path, uint64_t **out, size_t *n);

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
/* v as a JSON string ("123"): 64-bit values exceed 2^53, which JSON numbers read as
 * doubles (jq, JavaScript) cannot hold exactly. */
void cli_out_u64_json(cli_out *o, uint64_t v);
/* s[0..n) as a JSON string with quotes: '"', '\\' and control bytes escaped,
 * invalid UTF-8 bytes replaced by \ufffd. */
void cli_out_json_str(cli_out *o, const char *s, size_t n);
/* s[0..n) for a one-entry-per-line text format: a backslash as two backslashes,
 * newline, tab and carriage return as \n \t \r, other control bytes and 0x7f as
 * \xNN (two lower-case hex digits). */
void cli_out_text_str(cli_out *o, const char *s, size_t n);
/* Flush and close. Returns 0, or -1 with errno set to the first write error. */
int cli_out_close(cli_out *o);

/* Decimal digits of v into dst (at least 20 bytes, no terminator); returns the count. */
size_t cli_u64_to_dec(uint64_t v, char *dst);

/* ---- Options (cli_opts.c) ---- */

/* The matching options of find-all, find-clusters and dedup: -b/--blocks,
 * -d/--distance, -t/--threads, with their defaults. */
typedef struct cli_match_opts {
    uint64_t blocks, distance, threads;
} cli_match_opts;

void cli_match_opts_init(cli_match_opts *o);
/* Handles getopt's option c (value arg) when it is one of -b, -d, -t. Returns 1 when
 * it was, 0 when c is another option, -1 after printing an error (exit status
 * CLI_EXIT_USAGE). */
int cli_match_opt(const char *prog, int c, const char *arg, cli_match_opts *o);

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

/* ---- Documents: text or HTML, any fingerprint algorithm (cli_doc.c) ---- */

#include "html.h"

/* The fingerprint options of fingerprint and dedup: -A/--algorithm, -w/--window
 * (v1's window: the same as --algorithm v1:W), --html, --text, --title, --all-text. */
typedef struct cli_fp_opts {
    fp_params params;
    int html;                   /* CLI_HTML_AUTO, CLI_HTML_NEVER, CLI_HTML_ALWAYS */
    int title;                  /* HTML: the <title> is text */
    int all_text;               /* HTML: all visible text, no article */
    int algo_given;
    int algo_window;            /* --algorithm named a window (v1:W) */
    unsigned window;            /* --window, 0 when not given */
} cli_fp_opts;

enum { CLI_HTML_AUTO, CLI_HTML_NEVER, CLI_HTML_ALWAYS };
enum { CLI_OPT_ALGO = 0x100, CLI_OPT_HTML, CLI_OPT_TEXT, CLI_OPT_TITLE, CLI_OPT_ALL_TEXT };
#define CLI_FP_LONGOPTS                                                     \
    {"window", required_argument, NULL, 'w'},                             \
    {"algorithm", required_argument, NULL, CLI_OPT_ALGO},                 \
    {"html", no_argument, NULL, CLI_OPT_HTML},                            \
    {"text", no_argument, NULL, CLI_OPT_TEXT},                            \
    {"title", no_argument, NULL, CLI_OPT_TITLE},                          \
    {"all-text", no_argument, NULL, CLI_OPT_ALL_TEXT}
/* Help lines of those options. */
#define CLI_FP_HELP                                                                   \
    "      --algorithm A fingerprint algorithm: v5 (default: HTML by its article,\n" \
    "                   known license boilerplate weighing half), v1 (ASCII words,\n" \
    "                   shingles of 3) or v1:W (docs/fingerprint.md; v2, v3 and v4\n" \
    "                   were removed; v5's text fingerprints are v4's);\n"         \
    "                   fingerprints of different algorithms are not comparable\n"   \
    "  -w, --window W   algorithm v1 with W tokens per shingle, 1..64 (the same as\n" \
    "                   --algorithm v1:W)\n"                                          \
    "      --html       read every input as HTML (the visible text of the page)\n"   \
    "      --text       read every input as text, also *.html and *.htm files\n"      \
    "                   (by default files named *.html or *.htm are HTML, the\n"      \
    "                   rest and standard input text)\n"                              \
    "      --title      HTML: the <title> counts as text\n"                          \
    "      --all-text   HTML with v5: all visible text, not only the article\n"

void cli_fp_opts_init(cli_fp_opts *o);
/* Handles getopt's option c (value arg) when it is one of CLI_FP_LONGOPTS: 1 when it
 * was, 0 for another option, -1 after printing an error. */
int cli_fp_opt(const char *prog, int c, const char *arg, cli_fp_opts *o);
/* After the options: checks --window against --algorithm and fills o->params. 0, or
 * -1 after printing an error. */
int cli_fp_opts_done(const char *prog, cli_fp_opts *o);
/* Whether the input path is read as HTML. */
int cli_fp_is_html(const cli_fp_opts *o, const char *path);

/* One document at a time through a text or an HTML fingerprint state. */
typedef struct cli_doc {
    fp_state *fs;
    fp_html *fh;
    int html;                   /* the current document is HTML */
    int failed;                 /* HTML: the current document could not be read */
} cli_doc;

int cli_doc_init(cli_doc *d, const cli_fp_opts *o);   /* 0, or -1 out of memory */
void cli_doc_free(cli_doc *d);
void cli_doc_begin(cli_doc *d, int html);
void cli_doc_update(cli_doc *d, const void *data, size_t len);
/* Ends the document: 0 and *fp, or -1 with *err (HTML only). Ready for the next. */
int cli_doc_final(cli_doc *d, uint64_t *fp, const char **err);

/* ---- Progress bar on stderr (cli_progress.c) ---- */

typedef struct cli_progress {
    int enabled;                 /* stderr is a terminal */
    size_t total;
    const char *label;          /* the phase, may change between updates */
    long long last_ms, start_ms;
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
int cmd_extract(int argc, char **argv);
int cmd_dedup(int argc, char **argv);

#endif
