/* test_cluster.c: key slots (against values printed by a real redis-server's
 * CLUSTER KEYSLOT), CLUSTER SLOTS parsing and -MOVED/-ASK parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include "cluster.h"

static void test_crc16(void **state)
{
    (void)state;
    assert_int_equal(cluster_crc16("123456789", 9), 0x31C3);
    assert_int_equal(cluster_crc16("", 0), 0);
}

static void test_keyslot(void **state)
{
    static const struct { const char *key; unsigned slot; } golden[] = {
        {"foo", 12182}, {"bar", 5061}, {"{user1000}.following", 3443},
        {"foo{}{bar}", 8363}, {"foo{{bar}}zap", 4015}, {"s:{3:a7}:5c", 3070},
        {"d:{0:ff}:0123456789abcdef", 865}, {"s:{19:00}:", 2179}, {"{t0:00}", 2507},
        {"x", 16287},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(golden) / sizeof(golden[0]); i++)
        assert_int_equal(cluster_keyslot(golden[i].key, strlen(golden[i].key)), golden[i].slot);
    /* the hash tag decides: every bucket key of one (table, byte) shard shares a slot */
    assert_int_equal(cluster_keyslot("s:{3:a7}:00", 11), cluster_keyslot("s:{3:a7}:ff", 11));
    assert_int_equal(cluster_keyslot("{user1000}.followers", 20), 3443);
    /* an unclosed brace hashes the whole key */
    assert_int_equal(cluster_keyslot("{abc", 4), cluster_crc16("{abc", 4) & 16383);
}

static redisReply *parse_resp(const char *text)
{
    redisReader *r = redisReaderCreate();
    void *reply = NULL;
    assert_non_null(r);
    assert_int_equal(redisReaderFeed(r, text, strlen(text)), REDIS_OK);
    assert_int_equal(redisReaderGetReply(r, &reply), REDIS_OK);
    redisReaderFree(r);
    assert_non_null(reply);
    return reply;
}

static void test_map(void **state)
{
    static cluster_map map;
    char err[128];
    (void)state;
    /* Two masters as Redis 7 prints them, the second announcing an empty host. */
    redisReply *r = parse_resp(
        "*2\r\n"
        "*4\r\n:0\r\n:8191\r\n*3\r\n$9\r\n127.0.0.1\r\n:7001\r\n$4\r\nabcd\r\n"
        "*3\r\n$9\r\n127.0.0.1\r\n:7004\r\n$4\r\nefgh\r\n"
        "*3\r\n:8192\r\n:16383\r\n*3\r\n$0\r\n\r\n:7002\r\n$4\r\nijkl\r\n");
    assert_int_equal(cluster_map_from_slots(&map, r, "10.1.1.1", err, sizeof(err)), 16384);
    assert_int_equal(map.nnodes, 2);
    assert_int_equal(cluster_map_node(&map, 0), 0);
    assert_int_equal(cluster_map_node(&map, 8191), 0);
    assert_int_equal(cluster_map_node(&map, 8192), 1);
    assert_string_equal(map.nodes[1].host, "10.1.1.1");
    assert_int_equal(map.nodes[1].port, 7002);
    assert_int_equal(cluster_map_node(&map, 16384), -1);
    freeReplyObject(r);

    /* a gap leaves slots unowned */
    r = parse_resp("*1\r\n*3\r\n:100\r\n:199\r\n*2\r\n$1\r\nh\r\n:1\r\n");
    assert_int_equal(cluster_map_from_slots(&map, r, "x", err, sizeof(err)), 100);
    assert_int_equal(cluster_map_node(&map, 99), -1);
    assert_int_equal(cluster_map_node(&map, 150), 0);
    freeReplyObject(r);

    /* malformed shapes are refused with a message, not a crash */
    const char *bad[] = {
        ":5\r\n",
        "*1\r\n:5\r\n",
        "*1\r\n*3\r\n:0\r\n:20000\r\n*2\r\n$1\r\nh\r\n:1\r\n",
        "*1\r\n*3\r\n:5\r\n:4\r\n*2\r\n$1\r\nh\r\n:1\r\n",
        "*1\r\n*3\r\n:0\r\n:4\r\n*2\r\n$1\r\nh\r\n:0\r\n",
        "*1\r\n*3\r\n:0\r\n:4\r\n*1\r\n$1\r\nh\r\n",
        "*1\r\n*3\r\n:0\r\n:4\r\n*2\r\n:1\r\n:1\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = parse_resp(bad[i]);
        err[0] = '\0';
        assert_int_equal(cluster_map_from_slots(&map, r, "x", err, sizeof(err)), -1);
        assert_true(strncmp(err, "CLUSTER SLOTS:", 14) == 0);
        freeReplyObject(r);
    }
    assert_int_equal(cluster_map_from_slots(&map, NULL, "x", err, sizeof(err)), -1);
}

static void test_redirect(void **state)
{
    cluster_node n;
    unsigned slot = 0;
    (void)state;
    const char *m = "MOVED 3999 127.0.0.1:6381";
    assert_int_equal(cluster_parse_redirect(m, strlen(m), &slot, &n), CLUSTER_REDIR_MOVED);
    assert_int_equal(slot, 3999);
    assert_string_equal(n.host, "127.0.0.1");
    assert_int_equal(n.port, 6381);
    const char *a = "-ASK 0 ::1:7000";
    assert_int_equal(cluster_parse_redirect(a, strlen(a), &slot, &n), CLUSTER_REDIR_ASK);
    assert_int_equal(slot, 0);
    assert_string_equal(n.host, "::1");
    assert_int_equal(n.port, 7000);
    const char *bad[] = {"ERR wrong", "MOVED", "MOVED x 1.2.3.4:5", "MOVED 16384 h:1",
                         "MOVED 1 nohost", "MOVED 1 h:", "MOVED 1 h:70000", "MOVED 1 h:5x",
                         "ASK 1", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(cluster_parse_redirect(bad[i], strlen(bad[i]), &slot, &n), CLUSTER_REDIR_NONE);
    char longtext[300];
    memset(longtext, 'a', sizeof(longtext));
    memcpy(longtext, "MOVED 1 ", 8);
    assert_int_equal(cluster_parse_redirect(longtext, sizeof(longtext), &slot, &n), CLUSTER_REDIR_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc16),
        cmocka_unit_test(test_keyslot),
        cmocka_unit_test(test_map),
        cmocka_unit_test(test_redirect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
