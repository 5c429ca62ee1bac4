/* test_log.c: SH_ASSERT, the always-on invariant check: a true condition costs
 * nothing, a false one logs "assertion failed: EXPR" with file:line and aborts, in
 * every build type (this test runs in Release too). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"

static void test_assert_true(void **state)
{
    int n = 1;
    (void)state;
    SH_ASSERT(n > 0);
    SH_ASSERT(n == 1);
}

/* A false invariant in a child: it dies of SIGABRT and its stderr names the
 * expression and this file's line. */
static void test_assert_false(void **state)
{
    int fds[2];
    (void)state;
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        int pending = 0;
        SH_ASSERT(pending > 0);     /* the line checked below */
        _exit(0);
    }
    const int want_line = __LINE__ - 3;
    close(fds[1]);
    char buf[512];
    size_t got = 0;
    ssize_t r;
    while (got < sizeof(buf) - 1 && (r = read(fds[0], buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)r;
    buf[got] = '\0';
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    char want[64];
    snprintf(want, sizeof(want), "test_log.c:%d", want_line);
    assert_non_null(strstr(buf, want));
    assert_non_null(strstr(buf, "assertion failed: pending > 0"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assert_true),
        cmocka_unit_test(test_assert_false),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
