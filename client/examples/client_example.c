/* client_example.c: a small program using libsimhashclient against a running
 * coordinator: fingerprints a text locally and on the server, checks a document and
 * a near-duplicate of it, bulk-adds and bulk-queries, then removes what it added.
 *
 *     client_example [HOST [PORT]]      (default 127.0.0.1 7000)
 *
 * Exits 0 when every step gave the expected answer, 1 otherwise. */
#include <simhash/client.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Print the matches of r, one per line, with a label. */
static void show(const char *label, const shc_result *r)
{
    printf("%s: %zu match%s\n", label, r->nmatches, r->nmatches == 1 ? "" : "es");
    for (size_t i = 0; i < r->nmatches; i++) {
        const shc_match *m = &r->matches[i];
        printf("  %" PRIu64 " distance %u docids", m->fp, m->distance);
        for (size_t j = 0; j < m->ndocids; j++)
            printf("%s%s", j ? "," : " ", m->docids[j]);
        printf("\n");
    }
}

/* 1 when r holds exactly one match (fp, distance) whose docids include docid. */
static int has_only(const shc_result *r, uint64_t fp, unsigned distance, const char *docid)
{
    if (r->nmatches != 1 || r->matches[0].fp != fp || r->matches[0].distance != distance)
        return 0;
    for (size_t j = 0; j < r->matches[0].ndocids; j++)
        if (strcmp(r->matches[0].docids[j], docid) == 0)
            return 1;
    return 0;
}

#define FAIL(...) do { fprintf(stderr, "client_example: " __VA_ARGS__); goto out; } while (0)

int main(int argc, char **argv)
{
    const char *host = argc > 1 ? argv[1] : "127.0.0.1";
    int port = argc > 2 ? atoi(argv[2]) : 7000;
    char text[256], doc_a[64], doc_b[64], bulk_ids[3][64];
    shc_client *c = NULL;
    shc_result *r = NULL;
    uint64_t fp_local, fp_server;
    int rc = 1;

    if (shc_connect(host, port, 5000, NULL, &c) != SHC_OK)
        FAIL("%s\n", c ? shc_errstr(c) : "out of memory");

    /* A text unique to this run, so runs do not see each other's entries. */
    snprintf(text, sizeof(text), "The quick brown fox %ld-%ld jumps over the lazy dog "
             "near the river bank at dawn", (long)time(NULL), (long)getpid());
    fp_local = shc_fingerprint_local(text, strlen(text));
    if (shc_fingerprint(c, text, strlen(text), &fp_server) != SHC_OK)
        FAIL("fingerprint: %s\n", shc_errstr(c));
    printf("fingerprint: local %" PRIu64 " server %" PRIu64 " %s\n", fp_local, fp_server,
           fp_local == fp_server ? "(same)" : "(DIFFERENT)");
    if (fp_local != fp_server)
        FAIL("local and server fingerprints differ\n");

    /* The crawler's call: check a page, then a near-duplicate (2 bits flipped). */
    uint64_t fp_a = fp_local, fp_b = fp_local ^ (1ull << 7) ^ (1ull << 40);
    snprintf(doc_a, sizeof(doc_a), "example-a-%ld", (long)getpid());
    snprintf(doc_b, sizeof(doc_b), "example-b-%ld", (long)getpid());
    if (shc_check(c, fp_a, doc_a, -1, &r) != SHC_OK)
        FAIL("check %s: %s\n", doc_a, shc_errstr(c));
    show("check a", r);
    if (r->nmatches != 0)
        FAIL("expected no match before %s was added\n", doc_a);
    shc_result_free(r);
    r = NULL;
    if (shc_check(c, fp_b, doc_b, -1, &r) != SHC_OK)
        FAIL("check %s: %s\n", doc_b, shc_errstr(c));
    show("check b", r);
    if (!has_only(r, fp_a, 2, doc_a))
        FAIL("expected exactly %s at distance 2\n", doc_a);
    shc_result_free(r);
    r = NULL;

    /* Bulk: three more documents on fp_a, then two queries at once. */
    const char *ids[3];
    uint64_t fps[3] = { fp_a, fp_a, fp_a };
    for (int i = 0; i < 3; i++) {
        snprintf(bulk_ids[i], sizeof(bulk_ids[i]), "example-bulk-%d-%ld", i, (long)getpid());
        ids[i] = bulk_ids[i];
    }
    shc_bulk_report rep;
    if (shc_add_many(c, fps, ids, 3, NULL, &rep) != SHC_OK)
        FAIL("add_many: %s\n", shc_errstr(c));
    printf("add_many: %zu ok, %lld new\n", rep.ok, rep.added);
    if (rep.ok != 3 || rep.added != 3)
        FAIL("expected 3 new entries\n");

    uint64_t qs[2] = { fp_a, fp_b };
    shc_result *rs[2];
    if (shc_query_many(c, qs, 2, 0, 0, rs, NULL, &rep) != SHC_OK)
        FAIL("query_many: %s\n", shc_errstr(c));
    show("query a (distance 0)", rs[0]);
    show("query b (distance 0)", rs[1]);
    int ok = rs[0]->nmatches == 1 && rs[0]->matches[0].ndocids == 4 &&
             has_only(rs[1], fp_b, 0, doc_b);
    shc_result_free(rs[0]);
    shc_result_free(rs[1]);
    if (!ok)
        FAIL("expected 4 documents on a and 1 on b\n");

    /* Clean up: remove one document, then both fingerprints entirely. */
    long long removed;
    if (shc_del(c, fp_a, doc_a, &removed) != SHC_OK || removed != 1)
        FAIL("del %s: %s\n", doc_a, shc_errstr(c));
    printf("del a %s: removed %lld\n", doc_a, removed);
    if (shc_del(c, fp_a, NULL, &removed) != SHC_OK || removed != 3)
        FAIL("del a: %s (removed %lld)\n", shc_errstr(c), removed);
    printf("del a: removed %lld\n", removed);
    if (shc_del(c, fp_b, NULL, &removed) != SHC_OK || removed != 1)
        FAIL("del b: %s\n", shc_errstr(c));
    printf("del b: removed %lld\n", removed);
    if (shc_query(c, fp_a, -1, 0, &r) != SHC_OK)
        FAIL("query: %s\n", shc_errstr(c));
    show("query a after del", r);
    if (r->nmatches != 0)
        FAIL("entries left after del\n");
    printf("example OK\n");
    rc = 0;
out:
    shc_result_free(r);
    shc_free(c);
    return rc;
}
