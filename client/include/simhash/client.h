/* simhash/client.h: the C client library of the simhash coordinator (libsimhashclient).
 *
 * A blocking client over hiredis: add, delete and query 64-bit simhash fingerprints
 * with their document ids, server-side and local fingerprinting, and pipelined bulk
 * forms. One handle is one connection; a handle is not thread-safe (use one per
 * thread). Every call returns a shc_status; shc_errstr() says what went wrong.
 *
 *     shc_client *c;
 *     if (shc_connect("127.0.0.1", 7000, 1000, NULL, &c) != SHC_OK) {
 *         fprintf(stderr, "%s\n", c ? shc_errstr(c) : "out of memory");
 *         shc_free(c);
 *         return 1;
 *     }
 *     shc_result *r;
 *     if (shc_check(c, fp, "doc-42", -1, &r) == SHC_OK) {
 *         for (size_t i = 0; i < r->nmatches; i++) ... r->matches[i].docids ...
 *         shc_result_free(r);
 *     }
 *     shc_free(c);
 *
 * See docs/client.md. */
#ifndef SIMHASH_CLIENT_H
#define SIMHASH_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHC_VERSION_MAJOR 0
#define SHC_VERSION_MINOR 1

/* Longest document id the library sends (bytes). */
#define SHC_DOCID_MAX 4096
/* Longest error text kept by a handle (longer server messages are cut). */
#define SHC_ERRSTR_MAX 1024
/* Commands sent per pipelined batch by the bulk forms. */
#define SHC_BATCH 1000

typedef enum shc_status {
    SHC_OK = 0,
    SHC_ERR_IO,         /* connect, read or write failed; connection closed */
    SHC_ERR_PROTOCOL,   /* the server's reply had an unexpected shape */
    SHC_ERR_SERVER,     /* the server answered with an error reply */
    SHC_ERR_TIMEOUT,    /* no answer in time (client timeout or server -TIMEOUT) */
    SHC_ERR_ARG,        /* bad argument; nothing was sent */
    SHC_ERR_NOMEM       /* out of memory */
} shc_status;

typedef struct shc_client shc_client;

/* One near-duplicate found by a query. */
typedef struct shc_match {
    uint64_t fp;              /* the stored fingerprint */
    unsigned distance;        /* Hamming distance to the query, 0..64 */
    size_t ndocids;
    char **docids;            /* NUL-terminated copies (ids may contain NUL bytes: */
    size_t *docid_lens;       /* then use the lengths) */
} shc_match;

/* The answer of a query or check: nearest first, then by fingerprint. */
typedef struct shc_result {
    size_t nmatches;
    shc_match *matches;
} shc_result;

/* Summary of a bulk call. */
typedef struct shc_bulk_report {
    size_t ok;                /* items the server accepted */
    size_t failed;            /* items answered with an error reply */
    long long added;          /* add_many: sum of "new entries" replies */
    size_t first_failed;      /* index of the first failed item when failed > 0 */
} shc_bulk_report;

/* Connect to a coordinator at host:port (a name or address), waiting at most
 * timeout_ms for the connection and then for each reply (0 = no limit). With a
 * password, sends AUTH. Returns SHC_OK with a usable handle in *out. On failure
 * *out is still a handle carrying the error text (free it with shc_free), or NULL
 * when out of memory.
 *
 * host may list several coordinators of one corpus, comma-separated, each
 * "host[:port]" ("[v6addr]:port" for IPv6; port defaults to the port argument), at
 * most 64. The handle connects to the first that answers and fails over to the next
 * on a lost connection or a timeout: a call that is safe to repeat (add, query,
 * check, check_text, fingerprint, info, and the bulk forms of add and query) is then
 * sent again on the next coordinator, each address tried at most once per call; del
 * is not repeated (its count could not be trusted), it returns the error. A
 * repeated add may count a pair it stored on the first try as not new; a repeated
 * check leaves the document's own id out of the matches (its first try may have
 * stored it). */
shc_status shc_connect(const char *host, int port, int timeout_ms, const char *password,
                       shc_client **out);
void shc_free(shc_client *c);

/* Text of the last error on this handle ("" when the last call succeeded). */
const char *shc_errstr(const shc_client *c);
/* Status of the last call on this handle. */
shc_status shc_last_status(const shc_client *c);
/* Constant name of a status, such as "SHC_ERR_IO". */
const char *shc_status_name(shc_status st);

/* After an I/O error or timeout the connection is closed; the next call reconnects
 * once by itself. This forces it now. */
shc_status shc_reconnect(shc_client *c);

/* Bulk calls (shc_add_many, shc_query_many: both safe to repeat) then send the items
 * answered with a server error or a timeout again, after pauses of 50 ms doubling to
 * 400 ms, until each is accepted or budget_ms has passed: for a bulk load that should
 * outlast a passing refusal (a worker's Redis past its deadline on a loaded machine,
 * a failover, a slot migration). 0, the default: only items answered -TIMEOUT, and
 * only with several addresses, for up to the handle's timeout (see shc_connect). */
void shc_set_bulk_retry(shc_client *c, unsigned budget_ms);

/* Add (fp, docid). *added (may be NULL) gets 1 when the pair is new, 0 when it
 * was already stored. */
shc_status shc_add(shc_client *c, uint64_t fp, const char *docid, long long *added);

/* Remove docid from fp, or with docid NULL the fingerprint and all its documents.
 * *removed (may be NULL) gets the number of document ids removed. */
shc_status shc_del(shc_client *c, uint64_t fp, const char *docid, long long *removed);

/* Stored fingerprints within distance bits of fp (-1: the corpus distance), at most
 * limit of them (0: no limit). *out is freed with shc_result_free. */
shc_status shc_query(shc_client *c, uint64_t fp, int distance, size_t limit,
                     shc_result **out);

/* The matches stored before, then adds (fp, docid): the crawler's one-call check. */
shc_status shc_check(shc_client *c, uint64_t fp, const char *docid, int distance,
                     shc_result **out);

/* As shc_check with the fingerprint of text computed by the server; *fp (may be
 * NULL) gets it. */
shc_status shc_check_text(shc_client *c, const char *docid, const char *text, size_t len,
                          uint64_t *fp, shc_result **out);

/* What a text argument is: plain text, or an HTML page whose visible text counts
 * (docs/fingerprint.md "HTML"; its article only with algorithm v5), or an HTML
 * page whose visible text all counts, whatever the algorithm (FORMAT html-all). */
enum { SHC_FORMAT_TEXT = 0, SHC_FORMAT_HTML = 1, SHC_FORMAT_HTML_ALL = 2 };

/* shc_check_text for text or HTML (format SHC_FORMAT_*), within distance bits (-1:
 * the corpus distance). */
shc_status shc_check_text_as(shc_client *c, const char *docid, const char *text, size_t len,
                             int format, int distance, uint64_t *fp, shc_result **out);

/* The fingerprint of text computed by the server. */
shc_status shc_fingerprint(shc_client *c, const char *text, size_t len, uint64_t *fp);
/* The same for text or HTML (format SHC_FORMAT_*). */
shc_status shc_fingerprint_as(shc_client *c, const char *text, size_t len, int format,
                              uint64_t *fp);

/* The coordinator's SIMHASH.INFO text: "name:value" lines and "# Section" headers, as
 * Redis INFO. *text is malloc'ed and NUL-terminated (*len bytes; len may be NULL);
 * the caller frees it with free(). */
shc_status shc_info(shc_client *c, char **text, size_t *len);

/* Adds n (fingerprint, document id) pairs in one SIMHASH.ADD (ids of lens[i] bytes,
 * any bytes; lens NULL: NUL-terminated), at most 32767 pairs: the coordinator takes
 * each fingerprint's write lock once for all its ids. *added (may be NULL) gets the
 * number of new pairs. All or nothing is not promised: on an error some pairs may be
 * stored (adding them again is harmless). */
shc_status shc_add_pairs(shc_client *c, const uint64_t *fps, const char *const *docids,
                         const size_t *lens, size_t n, long long *added);

/* One step of a walk over the whole corpus (SIMHASH.SCAN): the fingerprints of up to
 * count buckets (1..1024; 0: the server's default) from cursor on, each with its
 * document ids, in *out (distance 0), and the cursor of the next step in *next.
 * Start with cursor 0; the walk is over when *next is 0. Every fingerprint stored for
 * the whole walk comes exactly once; one added or removed meanwhile may or may not. */
shc_status shc_scan(shc_client *c, uint64_t cursor, unsigned count, uint64_t *next,
                    shc_result **out);

/* The same fingerprint computed here, with no server, with the default algorithm
 * (v5): identical to
 * the server's of a corpus made with the default and to every simhash tool's for the
 * same bytes. */
uint64_t shc_fingerprint_local(const char *text, size_t len);
/* Computed here with an algorithm ("v5", "v1", "v1:W"; NULL: the default) for text or
 * HTML (format SHC_FORMAT_*): 0, or -1 for an unknown or removed algorithm (v2, v3,
 * v4) or unreadable HTML. */
int shc_fingerprint_local_as(const char *text, size_t len, const char *algorithm, int format,
                             uint64_t *fp);

/* Add n pairs (fps[i], docids[i]), pipelined in batches of SHC_BATCH commands.
 * item_status (may be NULL) gets one status per item. Returns SHC_OK when every
 * item was accepted; SHC_ERR_SERVER when some items got error replies (the others
 * are stored; shc_errstr names the first failed item); an I/O, timeout, protocol
 * or memory error stops the call (items after the failing batch were not sent).
 * report (may be NULL) is filled in every case. */
shc_status shc_add_many(shc_client *c, const uint64_t *fps, const char *const *docids,
                        size_t n, shc_status *item_status, shc_bulk_report *report);

/* Query n fingerprints, pipelined. results[i] gets the answer of fps[i] (NULL when
 * that item failed); free each with shc_result_free. Errors as shc_add_many. */
shc_status shc_query_many(shc_client *c, const uint64_t *fps, size_t n, int distance,
                          size_t limit, shc_result **results, shc_status *item_status,
                          shc_bulk_report *report);

void shc_result_free(shc_result *r);

#ifdef __cplusplus
}
#endif

#endif
