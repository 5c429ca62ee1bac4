/* test_client.c: unit tests of libsimhashclient without a simhash deployment:
 * argument validation, local fingerprints equal fp_text_p (default algorithm), status names, connection
 * refused, and reply decoding against a scripted RESP server on a loopback port
 * (good and malformed replies, error replies, timeouts, pipelined bulk calls). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "simhash/client.h"
#include "fingerprint.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- A scripted RESP server on 127.0.0.1 ---- */

#define FAKE_BUF (1 << 20)

typedef struct fake_server {
    int lfd;
    int port;
    volatile int stop;
    pthread_t thread;
} fake_server;

static fake_server fake;

/* Write all of s[0..n) to fd; returns 0 or -1. */
static int write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

static char long_error[4000];

/* The scripted reply to one command (NULL: never answer). */
static const char *respond(int argc, char **argv, size_t *lens, char *tmp, size_t tmplen)
{
    (void)lens;
    if (argc >= 2 && strcmp(argv[0], "AUTH") == 0)
        return strcmp(argv[argc - 1], "secret") == 0 ? "+OK\r\n"
                                                     : "-WRONGPASS invalid password\r\n";
    if (argc >= 2 && strcmp(argv[0], "SIMHASH.QUERY") == 0) {
        switch (atoi(argv[1])) {
        case 1: return "*2\r\n*3\r\n$2\r\n42\r\n:1\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n"
                       "*3\r\n$20\r\n18446744073709551615\r\n:3\r\n*0\r\n";
        case 2: return "*0\r\n";
        case 3: return "*1\r\n*2\r\n$2\r\n42\r\n:1\r\n";
        case 4: return "*1\r\n*3\r\n$3\r\n4x2\r\n:1\r\n*0\r\n";
        case 5: return "*1\r\n*3\r\n$2\r\n42\r\n:65\r\n*0\r\n";
        case 6: return ":5\r\n";
        case 7: return "-ERR something bad happened\r\n";
        case 8: return "-TIMEOUT shard worker 127.0.0.1:1 did not answer within 5 ms\r\n";
        case 9: return NULL;
        case 10: return "*1\r\n*3\r\n$2\r\n42\r\n:0\r\n*1\r\n:7\r\n";
        case 11:
            snprintf(tmp, tmplen, "-ERR %s\r\n", long_error);
            return tmp;
        case 12: return "*1\r\n*3\r\n$20\r\n18446744073709551616\r\n:0\r\n*0\r\n";
        default: return "*0\r\n";
        }
    }
    if (argc == 3 && strcmp(argv[0], "SIMHASH.ADD") == 0)
        return strcmp(argv[2], "bad") == 0 ? "-ERR bad docid\r\n" : ":1\r\n";
    if (argc >= 2 && strcmp(argv[0], "SIMHASH.DEL") == 0)
        return argc == 3 ? ":1\r\n" : ":2\r\n";
    if (argc >= 3 && strcmp(argv[0], "SIMHASH.CHECK") == 0)
        return "*1\r\n*3\r\n$1\r\n5\r\n:2\r\n*1\r\n$5\r\nolder\r\n";
    if (argc == 2 && strcmp(argv[0], "SIMHASH.FINGERPRINT") == 0) {
        char num[24];
        snprintf(num, sizeof(num), "%" PRIu64, fp_text_p(argv[1], lens[1], NULL));
        snprintf(tmp, tmplen, "$%zu\r\n%s\r\n", strlen(num), num);
        return tmp;
    }
    if (argc == 3 && strcmp(argv[0], "SIMHASH.CHECKTEXT") == 0)
        return "*2\r\n$2\r\n99\r\n*0\r\n";
    return "-ERR unknown command\r\n";
}

/* Parse one complete command at buf[0..len); returns bytes used, 0 if incomplete,
 * -1 on garbage. argv entries point into a copy that the caller frees via *store. */
static long parse_cmd(const char *buf, size_t len, int *argc, char **argv, size_t *lens,
                      int maxargs, char *store)
{
    size_t p = 0, s = 0;
    char *end;

    if (len < 4)
        return 0;
    if (buf[0] != '*')
        return -1;
    const char *nl = memchr(buf, '\n', len);
    if (!nl)
        return 0;
    long n = strtol(buf + 1, &end, 10);
    if (n < 1 || n > maxargs)
        return -1;
    p = (size_t)(nl - buf) + 1;
    for (long i = 0; i < n; i++) {
        if (p >= len)
            return 0;
        if (buf[p] != '$')
            return -1;
        nl = memchr(buf + p, '\n', len - p);
        if (!nl)
            return 0;
        long l = strtol(buf + p + 1, &end, 10);
        if (l < 0 || l > FAKE_BUF)
            return -1;
        p = (size_t)(nl - buf) + 1;
        if (p + (size_t)l + 2 > len)
            return 0;
        memcpy(store + s, buf + p, (size_t)l);
        store[s + (size_t)l] = '\0';
        argv[i] = store + s;
        lens[i] = (size_t)l;
        s += (size_t)l + 1;
        p += (size_t)l + 2;
    }
    *argc = (int)n;
    return (long)p;
}

/* Serve one connection until the peer closes it or the server stops. */
static void serve_conn(int fd, char *buf, char *store, char *tmp)
{
    size_t len = 0;

    while (!fake.stop) {
        struct pollfd pfd = { fd, POLLIN, 0 };
        if (poll(&pfd, 1, 50) <= 0)
            continue;
        ssize_t r = read(fd, buf + len, FAKE_BUF - len);
        if (r <= 0)
            return;
        len += (size_t)r;
        for (;;) {
            int argc = 0;
            char *argv[16];
            size_t lens[16];
            long used = parse_cmd(buf, len, &argc, argv, lens, 16, store);
            if (used < 0)
                return;
            if (used == 0)
                break;
            const char *reply = respond(argc, argv, lens, tmp, 8192);
            if (reply && write_all(fd, reply, strlen(reply)) != 0)
                return;
            memmove(buf, buf + used, len - (size_t)used);
            len -= (size_t)used;
        }
        if (len == FAKE_BUF)
            return;
    }
}

static void *fake_main(void *arg)
{
    char *buf = malloc(FAKE_BUF), *store = malloc(FAKE_BUF + 64), *tmp = malloc(8192);
    (void)arg;
    while (buf && store && tmp && !fake.stop) {
        struct pollfd pfd = { fake.lfd, POLLIN, 0 };
        if (poll(&pfd, 1, 50) <= 0)
            continue;
        int fd = accept(fake.lfd, NULL, NULL);
        if (fd < 0)
            continue;
        serve_conn(fd, buf, store, tmp);
        close(fd);
    }
    free(buf);
    free(store);
    free(tmp);
    return NULL;
}

/* Bind a listening socket on a kernel-chosen loopback port; returns the fd. */
static int listen_loopback(int *port)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 8) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0)
        return -1;
    *port = ntohs(a.sin_port);
    return fd;
}

static int fake_setup(void **state)
{
    (void)state;
    memset(long_error, 'x', sizeof(long_error) - 1);
    long_error[sizeof(long_error) - 1] = '\0';
    fake.stop = 0;
    fake.lfd = listen_loopback(&fake.port);
    if (fake.lfd < 0)
        return -1;
    return pthread_create(&fake.thread, NULL, fake_main, NULL) == 0 ? 0 : -1;
}

static int fake_teardown(void **state)
{
    (void)state;
    fake.stop = 1;
    pthread_join(fake.thread, NULL);
    close(fake.lfd);
    return 0;
}

/* A closed loopback port: bound, then closed again. */
static int closed_port(void)
{
    int port = 0;
    int fd = listen_loopback(&port);
    assert_true(fd >= 0);
    close(fd);
    return port;
}

/* ---- Tests without any server ---- */

static void test_status_names(void **state)
{
    (void)state;
    assert_string_equal(shc_status_name(SHC_OK), "SHC_OK");
    assert_string_equal(shc_status_name(SHC_ERR_IO), "SHC_ERR_IO");
    assert_string_equal(shc_status_name(SHC_ERR_PROTOCOL), "SHC_ERR_PROTOCOL");
    assert_string_equal(shc_status_name(SHC_ERR_SERVER), "SHC_ERR_SERVER");
    assert_string_equal(shc_status_name(SHC_ERR_TIMEOUT), "SHC_ERR_TIMEOUT");
    assert_string_equal(shc_status_name(SHC_ERR_ARG), "SHC_ERR_ARG");
    assert_string_equal(shc_status_name(SHC_ERR_NOMEM), "SHC_ERR_NOMEM");
    assert_string_equal(shc_status_name((shc_status)99), "SHC_ERR_UNKNOWN");
}

static void test_fingerprint_local(void **state)
{
    static const char *texts[] = {
        "", "a", "hello world", "The quick brown fox jumps over the lazy dog",
        "Съешь же ещё этих мягких французских булок", "我能吞下玻璃而不伤身体。",
        "one two three four five six seven eight nine ten eleven twelve",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        assert_true(shc_fingerprint_local(texts[i], strlen(texts[i])) ==
                    fp_text_p(texts[i], strlen(texts[i]), NULL));
    assert_true(shc_fingerprint_local(NULL, 0) == 0);
    /* different texts give different values (not a constant) */
    assert_true(shc_fingerprint_local(texts[2], strlen(texts[2])) !=
                shc_fingerprint_local(texts[3], strlen(texts[3])));
    /* HTML: v5 (the default) reads the article; SHC_FORMAT_HTML_ALL all of it, as v5
     * votes text */
    const char *art = "The committee met on Tuesday to discuss the budget for the coming year "
                      "in detail.";
    const char *page = "<nav><a href=\"/\">Home</a> <a href=\"/b\">Blog</a></nav><p>The "
                       "committee met on Tuesday to discuss the budget for the coming year in "
                       "detail.</p>";
    const char *all = "Home Blog\nThe committee met on Tuesday to discuss the budget for the "
                      "coming year in detail.";
    uint64_t fm = 0, fa = 0, f1 = 0;
    assert_int_equal(shc_fingerprint_local_as(page, strlen(page), NULL, SHC_FORMAT_HTML, &fm), 0);
    assert_int_equal(shc_fingerprint_local_as(page, strlen(page), "v5", SHC_FORMAT_HTML_ALL, &fa),
                     0);
    assert_int_equal(shc_fingerprint_local_as(page, strlen(page), "v1:3", SHC_FORMAT_HTML, &f1), 0);
    assert_true(fm == fp_text_p(art, strlen(art), NULL));
    assert_true(fa == fp_text_p(all, strlen(all), NULL) && fa != fm);
    assert_true(f1 == fp_text(all, strlen(all), 3));
    /* the removed algorithms are refused */
    assert_int_equal(shc_fingerprint_local_as(page, strlen(page), "v4", SHC_FORMAT_HTML, &f1), -1);
    assert_int_equal(shc_fingerprint_local_as(page, strlen(page), "v2", SHC_FORMAT_TEXT, &f1), -1);
    assert_int_equal(shc_fingerprint_local_as(page, strlen(page), NULL, 3, &fm), -1);
    /* the default is v5: known license text weighs half */
    const char *lic = "The committee met on Tuesday to discuss the budget. On Debian systems, "
                      "the complete text of the GNU General Public License version 2 can be "
                      "found in /usr/share/common-licenses/GPL-2.";
    uint64_t fd = 0, f5 = 0;
    assert_int_equal(shc_fingerprint_local_as(lic, strlen(lic), NULL, SHC_FORMAT_TEXT, &fd), 0);
    assert_int_equal(shc_fingerprint_local_as(lic, strlen(lic), "v5", SHC_FORMAT_TEXT, &f5), 0);
    assert_true(fd == f5 && shc_fingerprint_local(lic, strlen(lic)) == f5);
    assert_true(f5 == fp_text_p(lic, strlen(lic), NULL));
}

static void test_connect_refused(void **state)
{
    shc_client *c = NULL;
    char hostport[64];
    int port = closed_port();
    (void)state;

    assert_int_equal(shc_connect("127.0.0.1", port, 1000, NULL, &c), SHC_ERR_IO);
    assert_non_null(c);
    assert_int_equal(shc_last_status(c), SHC_ERR_IO);
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", port);
    assert_non_null(strstr(shc_errstr(c), hostport));
    assert_non_null(strstr(shc_errstr(c), "refused"));
    /* a call on the dead handle tries to reconnect once and fails the same way */
    long long added = -5;
    assert_int_equal(shc_add(c, 1, "doc", &added), SHC_ERR_IO);
    assert_int_equal(added, -5);
    /* a bulk call marks every item */
    uint64_t fps[3] = { 1, 2, 3 };
    const char *ids[3] = { "a", "b", "c" };
    shc_status st[3] = { SHC_OK, SHC_OK, SHC_OK };
    shc_bulk_report rep;
    assert_int_equal(shc_add_many(c, fps, ids, 3, st, &rep), SHC_ERR_IO);
    assert_int_equal(rep.ok, 0);
    assert_int_equal(rep.failed, 3);
    assert_int_equal(rep.first_failed, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(st[i], SHC_ERR_IO);
    shc_free(c);
}

static void test_connect_bad_args(void **state)
{
    shc_client *c = NULL;
    (void)state;

    assert_int_equal(shc_connect("127.0.0.1", 0, 100, NULL, &c), SHC_ERR_ARG);
    assert_non_null(strstr(shc_errstr(c), "port 0"));
    shc_free(c);
    assert_int_equal(shc_connect("127.0.0.1", 70000, 100, NULL, &c), SHC_ERR_ARG);
    shc_free(c);
    assert_int_equal(shc_connect(NULL, 7000, 100, NULL, &c), SHC_ERR_ARG);
    assert_non_null(strstr(shc_errstr(c), "host"));
    shc_free(c);
    assert_int_equal(shc_connect("127.0.0.1", 7000, -1, NULL, &c), SHC_ERR_ARG);
    shc_free(c);
    assert_int_equal(shc_connect("", 7000, 100, NULL, &c), SHC_ERR_ARG);
    shc_free(c);
    shc_free(NULL);
    assert_string_equal(shc_errstr(NULL), "out of memory");
    /* address lists: every entry checked; a bad one leaves a handle that never
     * connects (nothing half-parsed to fall back on) */
    static const char *bad[] = { "127.0.0.1:7000,b:x", "a:7000,", ",a", "[::1", "[::1]x",
                                 "a:70000", "a:", ":7000" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(shc_connect(bad[i], 7000, 100, NULL, &c), SHC_ERR_ARG);
        long long n;
        assert_int_equal(shc_add(c, 1, "x", &n), SHC_ERR_ARG);
        assert_non_null(strstr(shc_errstr(c), "never connected"));
        shc_free(c);
    }
    char many[80 * 16] = "";
    for (int i = 0; i < 65; i++)
        strcat(many, i ? ",127.0.0.1:1" : "127.0.0.1:1");
    assert_int_equal(shc_connect(many, 7000, 100, NULL, &c), SHC_ERR_ARG);
    assert_non_null(strstr(shc_errstr(c), "more than 64"));
    shc_free(c);
}

static void test_argument_validation(void **state)
{
    shc_client *c = NULL;
    shc_result *r = (shc_result *)&r;     /* must be reset to NULL */
    char big[SHC_DOCID_MAX + 2];
    (void)state;

    assert_int_equal(shc_connect("127.0.0.1", closed_port(), 200, NULL, &c), SHC_ERR_IO);
    memset(big, 'd', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';

    assert_int_equal(shc_add(c, 1, NULL, NULL), SHC_ERR_ARG);
    assert_non_null(strstr(shc_errstr(c), "document id"));
    assert_int_equal(shc_add(c, 1, "", NULL), SHC_ERR_ARG);
    assert_non_null(strstr(shc_errstr(c), "empty"));
    assert_int_equal(shc_add(c, 1, big, NULL), SHC_ERR_ARG);
    assert_non_null(strstr(shc_errstr(c), "longer than"));
    assert_int_equal(shc_del(c, 1, "", NULL), SHC_ERR_ARG);
    assert_int_equal(shc_query(c, 1, 65, 0, &r), SHC_ERR_ARG);
    assert_null(r);
    assert_non_null(strstr(shc_errstr(c), "distance 65"));
    assert_int_equal(shc_query(c, 1, -2, 0, &r), SHC_ERR_ARG);
    assert_int_equal(shc_query(c, 1, 3, 0, NULL), SHC_ERR_ARG);
    assert_int_equal(shc_check(c, 1, NULL, 3, &r), SHC_ERR_ARG);
    assert_int_equal(shc_check(c, 1, "x", 99, &r), SHC_ERR_ARG);
    assert_int_equal(shc_check_text(c, "", "text", 4, NULL, &r), SHC_ERR_ARG);
    assert_int_equal(shc_check_text(c, "d", NULL, 4, NULL, &r), SHC_ERR_ARG);
    assert_int_equal(shc_fingerprint(c, "x", 1, NULL), SHC_ERR_ARG);
    assert_int_equal(shc_add(NULL, 1, "x", NULL), SHC_ERR_ARG);
    assert_int_equal(shc_query(NULL, 1, 3, 0, &r), SHC_ERR_ARG);

    /* bulk: a bad docid anywhere means nothing is sent */
    uint64_t fps[3] = { 1, 2, 3 };
    const char *ids[3] = { "a", "b", "" };
    shc_bulk_report rep;
    assert_int_equal(shc_add_many(c, fps, ids, 3, NULL, &rep), SHC_ERR_ARG);
    assert_non_null(strstr(shc_errstr(c), "item 2"));
    assert_int_equal(rep.ok, 0);
    assert_int_equal(shc_add_many(c, NULL, ids, 3, NULL, &rep), SHC_ERR_ARG);
    shc_result *rs[3] = { r, r, r };
    assert_int_equal(shc_query_many(c, fps, 3, 70, 0, rs, NULL, &rep), SHC_ERR_ARG);
    for (int i = 0; i < 3; i++)
        assert_null(rs[i]);
    /* zero items is fine and sends nothing */
    assert_int_equal(shc_add_many(c, NULL, NULL, 0, NULL, &rep), SHC_OK);
    assert_int_equal(rep.ok + rep.failed, 0);
    shc_free(c);
}

/* ---- Tests against the scripted server ---- */

static shc_client *fake_connect(void)
{
    shc_client *c = NULL;
    shc_status st = shc_connect("127.0.0.1", fake.port, 2000, NULL, &c);
    if (st != SHC_OK)
        fail_msg("connect to scripted server: %s", shc_errstr(c));
    return c;
}

static void test_query_decoding(void **state)
{
    shc_client *c = fake_connect();
    shc_result *r = NULL;
    (void)state;

    assert_int_equal(shc_query(c, 1, -1, 0, &r), SHC_OK);
    assert_string_equal(shc_errstr(c), "");
    assert_int_equal(r->nmatches, 2);
    assert_true(r->matches[0].fp == 42);
    assert_int_equal(r->matches[0].distance, 1);
    assert_int_equal(r->matches[0].ndocids, 2);
    assert_string_equal(r->matches[0].docids[0], "a");
    assert_string_equal(r->matches[0].docids[1], "b");
    assert_int_equal(r->matches[0].docid_lens[1], 1);
    assert_true(r->matches[1].fp == UINT64_MAX);
    assert_int_equal(r->matches[1].distance, 3);
    assert_int_equal(r->matches[1].ndocids, 0);
    shc_result_free(r);

    assert_int_equal(shc_query(c, 2, 3, 10, &r), SHC_OK);
    assert_int_equal(r->nmatches, 0);
    shc_result_free(r);

    static const struct { uint64_t fp; const char *needle; } bad[] = {
        { 3, "array of 3" }, { 4, "bad fingerprint" }, { 5, "distance" },
        { 6, "expected an array" }, { 10, "docid 0" }, { 12, "out of range" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = (shc_result *)&r;
        assert_int_equal(shc_query(c, bad[i].fp, -1, 0, &r), SHC_ERR_PROTOCOL);
        assert_null(r);
        if (!strstr(shc_errstr(c), bad[i].needle))
            fail_msg("fp %" PRIu64 ": '%s' lacks '%s'", bad[i].fp, shc_errstr(c), bad[i].needle);
    }
    /* the connection is still in step after shape errors */
    assert_int_equal(shc_query(c, 2, -1, 0, &r), SHC_OK);
    shc_result_free(r);
    shc_free(c);
}

static void test_server_errors(void **state)
{
    shc_client *c = fake_connect();
    shc_result *r = NULL;
    (void)state;

    assert_int_equal(shc_query(c, 7, -1, 0, &r), SHC_ERR_SERVER);
    assert_string_equal(shc_errstr(c), "ERR something bad happened");
    assert_int_equal(shc_query(c, 8, -1, 0, &r), SHC_ERR_TIMEOUT);
    assert_non_null(strstr(shc_errstr(c), "did not answer within 5 ms"));
    assert_int_equal(shc_query(c, 11, -1, 0, &r), SHC_ERR_SERVER);
    assert_int_equal(strlen(shc_errstr(c)), SHC_ERRSTR_MAX - 1);
    assert_memory_equal(shc_errstr(c), "ERR xxxx", 8);
    /* unknown command text comes through whole */
    uint64_t fp = 0;
    long long n = 0;
    assert_int_equal(shc_del(c, 5, NULL, &n), SHC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(shc_del(c, 5, "x", &n), SHC_OK);
    assert_int_equal(n, 1);
    assert_int_equal(shc_add(c, 5, "bad", &n), SHC_ERR_SERVER);
    assert_string_equal(shc_errstr(c), "ERR bad docid");
    assert_int_equal(shc_add(c, 5, "good", &n), SHC_OK);
    assert_int_equal(n, 1);
    assert_int_equal(shc_check(c, 5, "good", 2, &r), SHC_OK);
    assert_int_equal(r->nmatches, 1);
    assert_string_equal(r->matches[0].docids[0], "older");
    shc_result_free(r);
    assert_int_equal(shc_check_text(c, "doc", "some text", 9, &fp, &r), SHC_OK);
    assert_true(fp == 99);
    assert_int_equal(r->nmatches, 0);
    shc_result_free(r);
    const char *text = "server and client agree on this text";
    assert_int_equal(shc_fingerprint(c, text, strlen(text), &fp), SHC_OK);
    assert_true(fp == shc_fingerprint_local(text, strlen(text)));
    shc_free(c);
}

/* Several addresses: dead ones are skipped at connect; when every one is down the
 * error says so. */
static void test_address_list(void **state)
{
    shc_client *c = NULL;
    shc_result *r = NULL;
    char hosts[128];
    (void)state;
    /* port 1 on loopback refuses */
    snprintf(hosts, sizeof hosts, "127.0.0.1:1,[127.0.0.1]:1,127.0.0.1:%d", fake.port);
    assert_int_equal(shc_connect(hosts, 7000, 2000, NULL, &c), SHC_OK);
    assert_int_equal(shc_query(c, 2, -1, 0, &r), SHC_OK);
    assert_int_equal(r->nmatches, 0);
    shc_result_free(r);
    shc_free(c);
    assert_int_equal(shc_connect("127.0.0.1:1,127.0.0.1", 1, 2000, NULL, &c), SHC_ERR_IO);
    assert_non_null(strstr(shc_errstr(c), "no coordinator answered (2 addresses)"));
    shc_free(c);
}

static void test_auth(void **state)
{
    shc_client *c = NULL;
    (void)state;

    assert_int_equal(shc_connect("127.0.0.1", fake.port, 2000, "wrong", &c), SHC_ERR_SERVER);
    assert_non_null(strstr(shc_errstr(c), "AUTH failed: WRONGPASS"));
    shc_free(c);
    assert_int_equal(shc_connect("127.0.0.1", fake.port, 2000, "secret", &c), SHC_OK);
    shc_free(c);
}

static void test_client_timeout(void **state)
{
    shc_client *c = NULL;
    shc_result *r = NULL;
    (void)state;

    assert_int_equal(shc_connect("127.0.0.1", fake.port, 200, NULL, &c), SHC_OK);
    assert_int_equal(shc_query(c, 9, -1, 0, &r), SHC_ERR_TIMEOUT);
    assert_null(r);
    assert_non_null(strstr(shc_errstr(c), "200 ms"));
    /* the next call reconnects by itself */
    assert_int_equal(shc_query(c, 2, -1, 0, &r), SHC_OK);
    assert_int_equal(r->nmatches, 0);
    shc_result_free(r);
    shc_free(c);
}

static void test_bulk(void **state)
{
    size_t n = getenv("VALGRIND") ? 1200 : 2500, bad = n - 800;
    uint64_t *fps = calloc(n, sizeof(*fps));
    const char **ids = calloc(n, sizeof(*ids));
    shc_status *st = calloc(n, sizeof(*st));
    shc_client *c = fake_connect();
    shc_bulk_report rep;
    (void)state;

    assert_non_null(fps);
    assert_non_null(ids);
    assert_non_null(st);
    for (size_t i = 0; i < n; i++) {
        fps[i] = i * 7919;
        ids[i] = i == bad ? "bad" : "fine";
    }
    assert_int_equal(shc_add_many(c, fps, ids, n, st, &rep), SHC_ERR_SERVER);
    assert_int_equal(rep.ok, n - 1);
    assert_int_equal(rep.failed, 1);
    assert_int_equal(rep.first_failed, bad);
    assert_int_equal(rep.added, (long long)(n - 1));
    for (size_t i = 0; i < n; i++)
        assert_int_equal(st[i], i == bad ? SHC_ERR_SERVER : SHC_OK);
    char want[64];
    snprintf(want, sizeof(want), "item %zu: ERR bad docid", bad);
    assert_string_equal(shc_errstr(c), want);

    /* all good: OK and the sum of the replies */
    ids[bad] = "fine";
    assert_int_equal(shc_add_many(c, fps, ids, n, NULL, &rep), SHC_OK);
    assert_int_equal(rep.added, (long long)n);

    uint64_t qs[5] = { 1, 2, 7, 3, 1 };
    shc_result *rs[5];
    shc_status qst[5];
    assert_int_equal(shc_query_many(c, qs, 5, -1, 0, rs, qst, &rep), SHC_ERR_SERVER);
    assert_int_equal(rep.ok, 3);
    assert_int_equal(rep.failed, 2);
    assert_int_equal(rep.first_failed, 2);
    assert_int_equal(qst[0], SHC_OK);
    assert_int_equal(qst[2], SHC_ERR_SERVER);
    assert_int_equal(qst[3], SHC_ERR_PROTOCOL);
    assert_null(rs[2]);
    assert_null(rs[3]);
    assert_int_equal(rs[0]->nmatches, 2);
    assert_int_equal(rs[1]->nmatches, 0);
    assert_int_equal(rs[4]->nmatches, 2);
    assert_non_null(strstr(shc_errstr(c), "item 2: ERR something bad"));
    for (int i = 0; i < 5; i++)
        shc_result_free(rs[i]);
    shc_free(c);
    free(fps);
    free(ids);
    free(st);
}

int main(void)
{
    const struct CMUnitTest offline[] = {
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_fingerprint_local),
        cmocka_unit_test(test_connect_refused),
        cmocka_unit_test(test_connect_bad_args),
        cmocka_unit_test(test_argument_validation),
    };
    const struct CMUnitTest scripted[] = {
        cmocka_unit_test(test_query_decoding),
        cmocka_unit_test(test_server_errors),
        cmocka_unit_test(test_address_list),
        cmocka_unit_test(test_auth),
        cmocka_unit_test(test_client_timeout),
        cmocka_unit_test(test_bulk),
    };
    int rc = cmocka_run_group_tests_name("client offline", offline, NULL, NULL);
    rc += cmocka_run_group_tests_name("client against a scripted server", scripted,
                                      fake_setup, fake_teardown);
    return rc;
}
