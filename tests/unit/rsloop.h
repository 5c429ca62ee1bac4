/* rsloop.h: a test's client of a RESP server (common/net/rserver.c) on loopback,
 * whose event loop the test runs itself: connect, send, run the loop until a reply
 * (or nothing, or the close) arrives; replies parsed with hiredis's reader. Include
 * after cmocka.h. */
#ifndef SIMHASH_RSLOOP_H
#define SIMHASH_RSLOOP_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>

/* Loop iterations (about a millisecond each) before a wait fails: 20 s. */
#define RL_SPINS 20000

typedef struct rl_client {
    struct event_base *base;
    int fd;
    redisReader *rd;
} rl_client;

/* Connects to 127.0.0.1:port; the server runs on base. */
static inline void rl_connect(rl_client *c, struct event_base *base, unsigned port)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->base = base;
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(c->fd >= 0);
    assert_int_equal(connect(c->fd, (struct sockaddr *)&a, sizeof a), 0);
    c->rd = redisReaderCreate();
    assert_non_null(c->rd);
}

static inline void rl_close(rl_client *c)
{
    close(c->fd);
    redisReaderFree(c->rd);
}

/* Sends n bytes as they are. */
static inline void rl_send_bytes(rl_client *c, const char *p, size_t n)
{
    assert_int_equal(write(c->fd, p, n), (ssize_t)n);
}

static inline void rl_send(rl_client *c, const char *text)
{
    rl_send_bytes(c, text, strlen(text));
}

/* Runs the loop once without blocking, then sleeps a millisecond. */
static inline void rl_spin(struct event_base *base)
{
    event_base_loop(base, EVLOOP_NONBLOCK);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
}

/* Runs the loop until exactly want arrived, then asserts it. */
static inline void rl_expect(rl_client *c, const char *want)
{
    size_t n = strlen(want), got = 0;
    char buf[1024];
    assert_true(n < sizeof buf);
    for (int i = 0; i < RL_SPINS && got < n; i++) {
        rl_spin(c->base);
        ssize_t k = recv(c->fd, buf + got, n - got, MSG_DONTWAIT);
        if (k > 0)
            got += (size_t)k;
        else if (k == 0)
            break;
    }
    buf[got] = '\0';
    assert_string_equal(buf, want);
}

/* Runs the loop a while and asserts nothing arrived. */
static inline void rl_expect_nothing(rl_client *c)
{
    char ch;
    for (int i = 0; i < 30; i++)
        rl_spin(c->base);
    ssize_t k = recv(c->fd, &ch, 1, MSG_DONTWAIT);
    assert_true(k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

/* Runs the loop, reading whatever comes, until the server closed the connection. */
static inline void rl_expect_closed(rl_client *c)
{
    char buf[256];
    for (int i = 0; i < RL_SPINS; i++) {
        rl_spin(c->base);
        ssize_t k = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
            return;
    }
    fail_msg("the connection stayed open");
}

/* Runs the loop until one whole reply arrived; returns it (freeReplyObject). */
static inline redisReply *rl_reply(rl_client *c)
{
    void *r = NULL;
    char buf[4096];
    for (int i = 0; i < RL_SPINS; i++) {
        assert_int_equal(redisReaderGetReply(c->rd, &r), REDIS_OK);
        if (r)
            return r;
        rl_spin(c->base);
        ssize_t k = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (k > 0)
            assert_int_equal(redisReaderFeed(c->rd, buf, (size_t)k), REDIS_OK);
        else if (k == 0)
            fail_msg("the connection closed before a reply");
    }
    fail_msg("no reply");
    return NULL;
}

#endif
