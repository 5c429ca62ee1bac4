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

static void test_addr(void **state)
{
    cluster_node n;
    (void)state;
    assert_int_equal(cluster_parse_addr("127.0.0.1:7000", 14, &n), 0);
    assert_string_equal(n.host, "127.0.0.1");
    assert_int_equal(n.port, 7000);
    assert_int_equal(cluster_parse_addr("::1:6379", 8, &n), 0);     /* last colon splits */
    assert_string_equal(n.host, "::1");
    assert_int_equal(n.port, 6379);
    /* length-bounded: the rest of the buffer is not read */
    assert_int_equal(cluster_parse_addr("h:12345678", 6, &n), 0);
    assert_int_equal(n.port, 1234);
    static const char *bad[] = {"", ":7000", "host", "host:", "host:0", "host:65536",
                                "host:12a", "host:-1", "host:123456"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(cluster_parse_addr(bad[i], strlen(bad[i]), &n), -1);
    char longhost[CLUSTER_ADDR_MAX + 8];
    memset(longhost, 'a', CLUSTER_ADDR_MAX);
    memcpy(longhost + CLUSTER_ADDR_MAX, ":1", 3);
    assert_int_equal(cluster_parse_addr(longhost, strlen(longhost), &n), -1);
}

/* CLUSTER NODES text of a 3-master, 1-replica cluster as redis-server 7.0 prints it,
 * seen from the replica, then from a master with a migrating slot. */
static void test_nodes(void **state)
{
    static const char replica_view[] =
        "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@40001 master - 0 1 1 connected 0-5460\n"
        "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@40002 master - 0 1 2 connected 5461-10922\n"
        "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@40003 master,fail - 0 1 3 connected 10923-16383\n"
        "6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30004@40004 myself,slave "
        "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 0 1 connected\n";
    static const char master_view[] =
        "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@40002,node-b master - 0 1 2 connected 5461-10922\r\n"
        "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca :30001@40001 myself,master - 0 0 1 connected "
        "[5460->-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1] 17 100-200\r\n";
    cluster_nodes_info ni;
    char err[200];
    (void)state;

    assert_int_equal(cluster_parse_nodes(replica_view, strlen(replica_view), "10.0.0.1", &ni,
                                         err, sizeof(err)), 0);
    assert_string_equal(ni.myself.host, "127.0.0.1");
    assert_int_equal(ni.myself.port, 30004);
    assert_int_equal(ni.is_master, 0);
    assert_int_equal(ni.my_slot, -1);
    assert_int_equal(ni.nnodes, 4);
    assert_int_equal(ni.nodes[2].port, 30003);

    assert_int_equal(cluster_parse_nodes(master_view, strlen(master_view), "10.0.0.1", &ni,
                                         err, sizeof(err)), 0);
    assert_string_equal(ni.myself.host, "10.0.0.1");     /* empty ip: the address we used */
    assert_int_equal(ni.myself.port, 30001);
    assert_int_equal(ni.is_master, 1);
    assert_int_equal(ni.my_slot, -1);   /* first slot field is a migration entry */
    assert_int_equal(ni.nnodes, 2);
    assert_string_equal(ni.nodes[0].host, "127.0.0.1");  /* ",hostname" dropped */

    static const char plain[] =
        "aa 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 17 100-200\n";
    assert_int_equal(cluster_parse_nodes(plain, strlen(plain), "x", &ni, err, sizeof(err)), 0);
    assert_int_equal(ni.my_slot, 17);

    /* no myself line; garbage; empty */
    static const char nomyself[] =
        "aa 127.0.0.1:7001@17001 master - 0 0 1 connected 0-16383\n";
    assert_int_equal(cluster_parse_nodes(nomyself, strlen(nomyself), "x", &ni, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "myself"));
    assert_int_equal(cluster_parse_nodes("ERR not a cluster", 17, "x", &ni, err, sizeof(err)), -1);
    assert_int_equal(cluster_parse_nodes("", 0, "x", &ni, err, sizeof(err)), -1);
    /* a bad port on the myself line: that line is skipped */
    static const char badport[] =
        "aa 127.0.0.1:99999@17001 myself,master - 0 0 1 connected 0-16383\n"
        "bb 127.0.0.1:7002@17002 master - 0 0 1 connected\n";
    assert_int_equal(cluster_parse_nodes(badport, strlen(badport), "x", &ni, err, sizeof(err)), -1);
}

/* Whether myself serves a slot whole: plain ranges yes, a slot migrating out or
 * being imported no, a replica's line no. */
static void test_nodes_serves(void **state)
{
    (void)state;
    const char *view =
        "aaa 127.0.0.1:7001@17001 master - 0 1 1 connected 0-5460\n"
        "bbb 127.0.0.1:7002@17002 myself,master - 0 0 2 connected 5461-10922 12000 "
        "[5500->-ccc] [13000-<-aaa]\n"
        "ccc 127.0.0.1:7003@17003 master - 0 1 3 connected 10923-11999 12001-16383\n";
    size_t n = strlen(view);
    assert_int_equal(cluster_nodes_serves(view, n, 5461), 1);
    assert_int_equal(cluster_nodes_serves(view, n, 10922), 1);
    assert_int_equal(cluster_nodes_serves(view, n, 12000), 1);
    assert_int_equal(cluster_nodes_serves(view, n, 5500), 0);      /* migrating out */
    assert_int_equal(cluster_nodes_serves(view, n, 13000), 0);     /* importing */
    assert_int_equal(cluster_nodes_serves(view, n, 0), 0);         /* another node's */
    assert_int_equal(cluster_nodes_serves(view, n, 12001), 0);
    const char *replica = "ddd 127.0.0.1:7004@17004 myself,slave bbb 0 0 2 connected\n";
    assert_int_equal(cluster_nodes_serves(replica, strlen(replica), 5461), 0);
    assert_int_equal(cluster_nodes_serves("", 0, 1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc16),
        cmocka_unit_test(test_keyslot),
        cmocka_unit_test(test_map),
        cmocka_unit_test(test_redirect),
        cmocka_unit_test(test_addr),
        cmocka_unit_test(test_nodes),
        cmocka_unit_test(test_nodes_serves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
