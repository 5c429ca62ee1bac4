/* test_sha1.c: SHA-1 against the FIPS 180 examples, lengths around the padding
 * boundaries against Python's hashlib values, and the name Redis gives a script. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sha1.h"

static void check(const char *s, size_t len, const char *want)
{
    char hex[SHA1_HEX_LEN + 1];
    sha1_hex(s, len, hex);
    assert_string_equal(hex, want);
}

static void test_vectors(void **state)
{
    (void)state;
    check("", 0, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    check("abc", 3, "a9993e364706816aba3e25717850c26c9cd0d89d");
    check("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
          "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    /* Redis's name of the script "return 1" (SCRIPT LOAD answers it) */
    check("return 1", 8, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
}

static void test_lengths(void **state)
{
    (void)state;
    char a[130];
    memset(a, 'a', sizeof a);
    check(a, 55, "c1c8bbdc22796e28c0e15163d20899b65621d65a");
    check(a, 64, "0098ba824b5c16427bd7a1122a5a442a25ec644d");
    check(a, 119, "ee971065aaa017e0632a8ca6c77bb3bf8b1dfc56");
    check(a, 128, "ad5b3fdbcb526778c2839d2f151ea753995e26a0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_lengths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
