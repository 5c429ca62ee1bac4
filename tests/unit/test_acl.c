/* test_acl.c: the users file parser and its questions (common/net/rs_acl.c): users on
 * and off, several passwords, SHA-256 digests, the roles and their commands, rule
 * order, command rules checked against a table, the no-op key/channel words, and
 * errors that name their line; rs_users_file_check with a daemon's command table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rs_acl.h"
#include "rserver.h"


static rs_acl *ta_parse(const char *text, char *err, size_t errlen)
{
    return rs_acl_parse(text, strlen(text), NULL, NULL, err, errlen);
}

static int ta_pw(const rs_acl *a, const char *user, const char *pw)
{
    int u = rs_acl_find(a, user, strlen(user));
    return u >= 0 && rs_acl_password_ok(a, u, pw, strlen(pw));
}

static int ta_may(const rs_acl *a, const char *user, const char *cmd, unsigned cat)
{
    int u = rs_acl_find(a, user, strlen(user));
    assert_true(u >= 0);
    return rs_acl_allows(a, u, cmd, cat);
}

static void test_users_and_passwords(void **state)
{
    (void)state;
    char err[256];
    rs_acl *a = ta_parse("# users\n\nuser reader on >r1 +@read\n"
                         "user writer on >old >new +@write\r\n"
                         "  user off1 off >x +@all\n"
                         "user late >y on +@all\n"
                         "user hashed on #2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e7304"
                         "3362938b9824 +@admin\n", err, sizeof(err));
    assert_non_null(a);
    assert_int_equal(rs_acl_nusers(a), 5);
    assert_true(ta_pw(a, "reader", "r1"));
    assert_false(ta_pw(a, "reader", "r2"));
    assert_false(ta_pw(a, "reader", ""));
    assert_true(ta_pw(a, "writer", "old"));
    assert_true(ta_pw(a, "writer", "new"));
    assert_false(ta_pw(a, "writer", "ne"));
    assert_false(ta_pw(a, "off1", "x"));       /* off: no password works */
    assert_true(ta_pw(a, "late", "y"));        /* on after the password: still on */
    assert_true(ta_pw(a, "hashed", "hello"));  /* sha256("hello") */
    assert_false(ta_pw(a, "hashed", "Hello"));
    assert_false(ta_pw(a, "nobody", "r1"));
    assert_int_equal(rs_acl_find(a, "Reader", 6), -1);   /* names are exact */
    assert_string_equal(rs_acl_name(a, rs_acl_find(a, "writer", 6)), "writer");
    rs_acl_free(a);
}

static void test_roles(void **state)
{
    (void)state;
    char err[256];
    rs_acl *a = ta_parse("user r on >p +@read\nuser w on >p +@write\nuser s on >p +@shard\n"
                         "user a on >p +@admin\nuser all on >p allcommands\n"
                         "user none on >p\n"
                         "user mix on >p +@all -simhash.del\n"
                         "user back on >p -@all +@READ +simhash.add\n"
                         "user order on >p +simhash.query nocommands\n", err, sizeof(err));
    assert_non_null(a);
    const unsigned R = RS_CMD_CAT_READ, W = RS_CMD_CAT_WRITE, S = RS_CMD_CAT_SHARD,
                   A = RS_CMD_CAT_ADMIN;
    assert_true(ta_may(a, "r", "SIMHASH.QUERY", R));
    assert_false(ta_may(a, "r", "SIMHASH.ADD", W));
    assert_false(ta_may(a, "r", "SIMHASH.DEL", A));
    assert_false(ta_may(a, "r", "SHARD.ADD", S));
    assert_true(ta_may(a, "w", "SIMHASH.QUERY", R));
    assert_true(ta_may(a, "w", "SIMHASH.ADD", W));
    assert_false(ta_may(a, "w", "SIMHASH.DEL", A));
    assert_false(ta_may(a, "w", "CONFIG", A));
    assert_true(ta_may(a, "s", "SHARD.LOCK", S));
    assert_true(ta_may(a, "s", "INFO", R));
    assert_false(ta_may(a, "s", "SIMHASH.ADD", W));
    assert_false(ta_may(a, "s", "SLOWLOG", A));
    for (unsigned c = 0; c <= 4; c++) {
        unsigned cat = c ? 64u << c : 0;      /* 0: no category, an admin command */
        assert_true(ta_may(a, "a", "X", cat));
        assert_true(ta_may(a, "all", "X", cat));
        assert_false(ta_may(a, "none", "X", cat));
    }
    assert_false(ta_may(a, "r", "NEW.COMMAND", 0));      /* no category: admin */
    assert_true(ta_may(a, "mix", "SIMHASH.ADD", W));
    assert_false(ta_may(a, "mix", "simhash.DEL", A));     /* any case */
    assert_true(ta_may(a, "back", "PING", R));
    assert_true(ta_may(a, "back", "SIMHASH.ADD", W));
    assert_false(ta_may(a, "back", "SIMHASH.CHECK", W));
    assert_false(ta_may(a, "order", "SIMHASH.QUERY", R)); /* the last match wins */
    rs_acl_free(a);
}

static int ta_known(const char *name, size_t len, void *arg)
{
    (void)arg;
    return len == 11 && strncasecmp(name, "SIMHASH.ADD", 11) == 0;
}

static void test_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text, *msg;
    } bad[] = {
        { "user a on >x\nuser b on +@nope\n", "line 2: unknown role 'nope'" },
        { "user a on\nuser a off\n", "line 2: user 'a' defined twice" },
        { "users a on\n", "line 1: expected 'user <name> <rules>'" },
        { "user\n", "line 1: 'user' without a name" },
        { "\n\nuser a on >\n", "line 3: empty password after '>'" },
        { "user a on #abc\n", "line 1: '#' takes a SHA-256 digest" },
        { "user a on #zzf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\n",
          "line 1: '#' digest is not hexadecimal" },
        { "user a on +client|list\n", "line 1: subcommand rules" },
        { "user a on ~keys:*\n", "line 1: unknown rule '~keys:*'" },
        { "user a on +simhash.nosuch\n", "line 1: unknown command 'simhash.nosuch'" },
        { "user a on resetpass\n", "line 1: unknown rule 'resetpass'" },
        { "user a\001b on\n", "line 1: user name with a byte" },
    };
    char err[256];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rs_acl *a = rs_acl_parse(bad[i].text, strlen(bad[i].text), ta_known, NULL, err,
                                 sizeof(err));
        if (a != NULL || strstr(err, bad[i].msg) == NULL)
            fail_msg("'%s': got '%s', want '%s'", bad[i].text, a ? "(loaded)" : err,
                     bad[i].msg);
    }
    /* limits: passwords and rules per user, line length */
    char big[RS_ACL_MAX_LINE + 64];
    int n = snprintf(big, sizeof(big), "user a on");
    for (int i = 0; i <= RS_ACL_MAX_PASSWORDS; i++)
        n += snprintf(big + n, sizeof(big) - (size_t)n, " >p%d", i);
    assert_null(ta_parse(big, err, sizeof(err)));
    assert_non_null(strstr(err, "more than 16 passwords"));
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_null(ta_parse(big, err, sizeof(err)));
    assert_non_null(strstr(err, "line 1: longer than"));
    /* known commands pass; ~* &* allkeys allchannels are accepted */
    const char *ok = "user a on ~* &* allkeys allchannels +SIMHASH.ADD\n";
    rs_acl *a = rs_acl_parse(ok, strlen(ok), ta_known, NULL, err, sizeof(err));
    assert_non_null(a);
    rs_acl_free(a);
    /* an empty file: no users */
    assert_non_null(a = ta_parse("", err, sizeof(err)));
    assert_int_equal(rs_acl_nusers(a), 0);
    rs_acl_free(a);
}

static void test_file_check(void **state)
{
    (void)state;
    static const rs_command cmds[] = {
        { "SIMHASH.ADD", -3, RS_CMD_CAT_WRITE, NULL, "", NULL },
    };
    char path[] = "/tmp/test_acl.XXXXXX", err[512];
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "user a on >x +simhash.add +info -config\nuser b on +shard.add\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(rs_users_file_check(path, cmds, 1, err, sizeof(err)), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "line 2: unknown command 'shard.add'"));
    assert_int_equal(rs_users_file_check(NULL, cmds, 1, err, sizeof(err)), 0);
    unlink(path);
    assert_int_equal(rs_users_file_check(path, cmds, 1, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "No such file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_users_and_passwords),
        cmocka_unit_test(test_roles),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_file_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
