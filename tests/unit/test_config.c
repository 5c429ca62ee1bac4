/* test_config.c: the table-driven configuration: defaults, file and command line,
 * validation, repeatable options, secrets from files, errors with file:line; the
 * server options both daemons share (rs_limit_options) and the defaults they give. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "resp.h"
#include "rs_config.h"

typedef struct tconf {
    char *bind;
    unsigned port;
    cfg_list workers;
    size_t maxbytes;
    int flag;
    int level;
    char *password;
    unsigned blocks, distance;
} tconf;

static int tvalidate(void *obj, char *err, size_t errlen)
{
    tconf *c = obj;
    if (c->distance >= c->blocks) {
        snprintf(err, errlen, "distance (%u) must be smaller than blocks (%u)", c->distance,
                 c->blocks);
        return -1;
    }
    return 0;
}

static const cfg_option topts[] = {
    { "bind", CFG_STR, offsetof(tconf, bind), 0, 0, "127.0.0.1", 0, "address" },
    { "port", CFG_UINT, offsetof(tconf, port), 1, 65535, "7000", 0, "port" },
    { "worker", CFG_LIST, offsetof(tconf, workers), 1, 3, NULL, 0, "worker" },
    { "max-bytes", CFG_SIZE, offsetof(tconf, maxbytes), 16, 1ull << 30, "1m", 0, "bytes" },
    { "flag", CFG_BOOL, offsetof(tconf, flag), 0, 0, "no", 0, "flag" },
    { "loglevel", CFG_LOGLEVEL, offsetof(tconf, level), 0, 0, "info", 0, "level" },
    { "password-file", CFG_SECRET, offsetof(tconf, password), 0, 0, NULL, 0, "secret" },
    { "blocks", CFG_UINT, offsetof(tconf, blocks), 1, 64, "6", 0, "m" },
    { "distance", CFG_UINT, offsetof(tconf, distance), 0, 63, "3", 0, "k" },
};
static const cfg_spec tspec = { "test", "usage", topts, sizeof(topts) / sizeof(topts[0]), tvalidate,
                                NULL, NULL, 0, 0 };

/* Parse text then cli args (name, value pairs), finish. Returns 0 or -1 with err. */
static int load(tconf *c, const char *text, const char *const *cli, char *err, size_t errlen)
{
    memset(c, 0, sizeof(*c));
    cfg_state *st = cfg_state_new(&tspec, c);
    int rc = 0;
    assert_non_null(st);
    if (text && cfg_parse_text(st, text, "t.conf", err, errlen) != 0)
        rc = -1;
    for (size_t i = 0; rc == 0 && cli && cli[i]; i += 2) {
        char where[64];
        snprintf(where, sizeof(where), "--%s", cli[i]);
        rc = cfg_set(st, cli[i], cli[i + 1], where, err, errlen);
    }
    if (rc == 0)
        rc = cfg_finish(st, err, errlen);
    cfg_state_free(st);
    return rc;
}

static void test_defaults(void **state)
{
    tconf c;
    char err[256];
    (void)state;
    assert_int_equal(load(&c, "worker 127.0.0.1:1\n", NULL, err, sizeof(err)), 0);
    assert_string_equal(c.bind, "127.0.0.1");
    assert_int_equal(c.port, 7000);
    assert_int_equal(c.maxbytes, 1u << 20);
    assert_int_equal(c.flag, 0);
    assert_int_equal(c.level, 1);
    assert_null(c.password);
    assert_int_equal(c.workers.n, 1);
    cfg_free_values(&tspec, &c);
}

static void test_file_and_cli(void **state)
{
    tconf c;
    char err[256];
    (void)state;
    const char *text = "# comment\n\n  port 7100   # trailing\r\nworker a:1\nworker b:2\n"
                       "max-bytes 64k\nflag yes\nloglevel warning\n";
    const char *cli[] = { "port", "7200", "worker", "c:3", NULL };
    assert_int_equal(load(&c, text, cli, err, sizeof(err)), 0);
    assert_int_equal(c.port, 7200);                 /* command line wins */
    assert_int_equal(c.workers.n, 1);               /* ... and replaces the file's list */
    assert_string_equal(c.workers.v[0], "c:3");
    assert_int_equal(c.maxbytes, 64 * 1024);
    assert_int_equal(c.flag, 1);
    assert_int_equal(c.level, 2);
    cfg_free_values(&tspec, &c);

    assert_int_equal(load(&c, text, NULL, err, sizeof(err)), 0);
    assert_int_equal(c.workers.n, 2);
    assert_string_equal(c.workers.v[1], "b:2");
    cfg_free_values(&tspec, &c);
}

static void expect_err(const char *text, const char *const *cli, const char *want)
{
    tconf c;
    char err[256] = "";
    if (load(&c, text, cli, err, sizeof(err)) == 0)
        fail_msg("accepted: %s", text ? text : cli[0]);
    if (strstr(err, want) == NULL)
        fail_msg("error '%s', want '%s'", err, want);
    cfg_free_values(&tspec, &c);
}

static void test_errors(void **state)
{
    (void)state;
    expect_err("worker a:1\nport 0\n", NULL, "t.conf:2: port '0': out of range (1..65535)");
    expect_err("worker a:1\n\n\nport 70000\n", NULL, "t.conf:4:");
    expect_err("worker a:1\nport 12x\n", NULL, "not a decimal number");
    expect_err("worker a:1\nport -1\n", NULL, "t.conf:2");
    expect_err("worker a:1\nbogus 1\n", NULL, "t.conf:2: unknown option 'bogus'");
    expect_err("worker a:1\nport\n", NULL, "t.conf:2: option 'port' needs a value");
    expect_err("worker a:1\nflag maybe\n", NULL, "expected yes or no");
    expect_err("worker a:1\nloglevel loud\n", NULL, "expected debug, info, warning or error");
    expect_err("worker a:1\nmax-bytes 2g\n", NULL, "max-bytes '2g'");
    expect_err("worker a:1\nmax-bytes 8\n", NULL, "max-bytes '8'");
    expect_err("port 7000\n", NULL, "'worker' must be given at least 1");
    expect_err("worker a\nworker b\nworker c\nworker d\n", NULL, "t.conf:4: too many 'worker'");
    expect_err("worker a:1\nblocks 3\n", NULL, "distance (3) must be smaller than blocks (3)");
    const char *cli[] = { "password", "hunter2", NULL };
    expect_err("worker a:1\n", cli, "--password: unknown option 'password' (secrets are read "
               "from a file: use password-file)");
    const char *cli2[] = { "port", NULL };
    expect_err("worker a:1\n", cli2, "--port: option 'port' needs a value");
}

static void test_secret_file(void **state)
{
    tconf c;
    char err[256], path[] = "/tmp/test_config_XXXXXX";
    (void)state;
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "s3cret\nignored\n", 15), 15);
    close(fd);
    const char *cli[] = { "password-file", path, NULL };
    assert_int_equal(load(&c, "worker a:1\n", cli, err, sizeof(err)), 0);
    assert_string_equal(c.password, "s3cret");
    cfg_free_values(&tspec, &c);

    fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    close(fd);
    expect_err("worker a:1\n", cli, "empty secret");
    unlink(path);
    expect_err("worker a:1\n", cli, "cannot read");
}

/* A daemon's table with the shared server rows: its own `timeout` replaces the
 * shared one. */
typedef struct tdaemon {
    unsigned port;
    rs_limits limits;
} tdaemon;

static const cfg_option tdopts[] = {
    { "port", CFG_UINT, offsetof(tdaemon, port), 1, 65535, "7000", 0, "port" },
    { "timeout", CFG_UINT, offsetof(tdaemon, limits.idle_timeout_s), 0, 100, "0", 0, "idle" },
};
static const cfg_spec tdspec = { "daemon", "usage", tdopts, 2, NULL,
                                 RS_CONFIG_SHARED(tdaemon, limits) };

static int tdload(tdaemon *d, const char *text, char *err, size_t errlen)
{
    memset(d, 0, sizeof(*d));
    rs_limits_default(&d->limits);
    cfg_state *st = cfg_state_new(&tdspec, d);
    assert_non_null(st);
    int rc = cfg_parse_text(st, text, "d.conf", err, errlen);
    if (rc == 0)
        rc = cfg_finish(st, err, errlen);
    cfg_state_free(st);
    return rc;
}

static void test_shared_rows(void **state)
{
    tdaemon d;
    char err[256];
    (void)state;
    assert_int_equal(tdload(&d, "max-pending 8\nmax-arg-bytes 4k\ntimeout 50\n", err,
                            sizeof(err)), 0);
    assert_int_equal(d.port, 7000);
    assert_int_equal(d.limits.max_pending, 8);              /* a shared row, set */
    assert_int_equal(d.limits.max_arg_bytes, 4096);
    assert_int_equal(d.limits.max_clients, 1024);           /* a shared row's default */
    assert_int_equal(d.limits.idle_timeout_s, 50);          /* the daemon's own row */
    assert_int_equal(tdload(&d, "", err, sizeof(err)), 0);
    assert_int_equal(d.limits.idle_timeout_s, 0);           /* its default, not 300 */
    assert_int_equal(tdload(&d, "timeout 101\n", err, sizeof(err)), -1);   /* its bounds */
    assert_non_null(strstr(err, "d.conf:1"));
    assert_int_equal(tdload(&d, "max-clients 0\n", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "max-clients"));
}

/* rs_limits_default gives the table's defaults, and the parser's own defaults agree
 * with them. */
static void test_limits_default(void **state)
{
    rs_limits l;
    resp_limits pl;
    char err[256];
    (void)state;
    rs_limits_default(&l);
    resp_limits_default(&pl);
    assert_int_equal(l.max_arg_bytes, pl.max_arg_bytes);
    assert_int_equal(l.max_req_bytes, pl.max_req_bytes);
    assert_int_equal(l.max_args, pl.max_args);
    assert_int_equal(l.max_inline_bytes, pl.max_inline_bytes);
    assert_int_equal(l.max_pending, 128);
    assert_int_equal(l.idle_timeout_s, 300);
    assert_int_equal(l.max_output_total, 512u << 20);
    assert_int_equal(l.auth_fail_delay_ms, RS_AUTH_FAIL_DELAY_MS);
    for (size_t i = 0; i < RS_NLIMIT_OPTIONS; i++) {
        assert_non_null(rs_limit_options[i].name);
        /* the TLS strings default to NULL (rs_limits_default allocates nothing) */
        if (rs_limit_options[i].type != CFG_STR && rs_limit_options[i].type != CFG_SECRET)
            assert_non_null(rs_limit_options[i].def);
    }
    assert_null(l.tls.cert_file);
    assert_int_equal(l.tls.port, 0);
    assert_int_equal(rs_limits_check(&l, err, sizeof(err)), 0);
    l.max_req_bytes = l.max_arg_bytes - 1;
    assert_int_equal(rs_limits_check(&l, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "max-request-bytes"));
}

/* The TLS rows: parsed into rs_limits.tls, their values checked by rs_limits_check
 * (tls-auth-clients, tls-protocols never below TLS 1.2, what a tls-port needs). */
static void test_tls_options(void **state)
{
    static const struct { const char *text, *msg; } bad[] = {
        {"tls-protocols TLSv1.1 TLSv1.2\n", "tls-protocols"},
        {"tls-protocols SSLv3\n", "tls-protocols"},
        {"tls-protocols ,\n", "tls-protocols"},
        {"tls-auth-clients maybe\n", "tls-auth-clients"},
        {"tls-port 7443\n", "tls-cert-file"},
        {"tls-port 7443\ntls-cert-file a\n", "tls-key-file"},
        {"tls-port 7443\ntls-cert-file a\ntls-key-file b\n", "tls-ca-cert-file"},
    };
    tdaemon d;
    char err[256];
    (void)state;
    assert_int_equal(tdload(&d, "tls-port 7443\ntls-cert-file s.crt\ntls-key-file s.key\n"
                            "tls-ca-cert-file ca.crt\ntls-auth-clients optional\n"
                            "tls-protocols TLSv1.3\ntls-prefer-server-ciphers yes\n", err,
                            sizeof(err)), 0);
    assert_int_equal(d.limits.tls.port, 7443);
    assert_string_equal(d.limits.tls.cert_file, "s.crt");
    assert_string_equal(d.limits.tls.key_file, "s.key");
    assert_string_equal(d.limits.tls.ca_cert_file, "ca.crt");
    assert_string_equal(d.limits.tls.auth_clients, "optional");
    assert_int_equal(d.limits.tls.prefer_server_ciphers, 1);
    assert_int_equal(rs_limits_check(&d.limits, err, sizeof(err)), 0);
    cfg_free_values(&tdspec, &d);
    /* no client certificates: no CA needed */
    assert_int_equal(tdload(&d, "tls-port 7443\ntls-cert-file a\ntls-key-file b\n"
                            "tls-auth-clients no\ntls-protocols tlsv1.2,TLSv1.3\n", err,
                            sizeof(err)), 0);
    assert_int_equal(rs_limits_check(&d.limits, err, sizeof(err)), 0);
    cfg_free_values(&tdspec, &d);
    assert_int_equal(tdload(&d, "tls-port 65536\n", err, sizeof(err)), -1);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(tdload(&d, bad[i].text, err, sizeof(err)), 0);
        assert_int_equal(rs_limits_check(&d.limits, err, sizeof(err)), -1);
        if (strstr(err, bad[i].msg) == NULL)
            fail_msg("'%s': '%s' lacks '%s'", bad[i].text, err, bad[i].msg);
        cfg_free_values(&tdspec, &d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_file_and_cli),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_secret_file),
        cmocka_unit_test(test_shared_rows),
        cmocka_unit_test(test_limits_default),
        cmocka_unit_test(test_tls_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
