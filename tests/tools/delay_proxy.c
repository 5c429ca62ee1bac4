/* delay_proxy.c: a TCP proxy that delays every chunk it forwards (tests/multihost).
 *
 *   delay-proxy [--delay-us D] [--jitter-us J] [--max-conns N] [--buffer-bytes B]
 *               LISTEN_HOST:PORT=TARGET_HOST:PORT [LISTEN=TARGET ...]
 *
 * Every accepted connection is paired with a new connection to the target. Whatever
 * arrives on one side is held for D + uniform(0, J) microseconds and then written to
 * the other side, in both directions; a chunk is never released before the one read
 * before it (order is kept; jitter cannot reorder bytes). An end of stream is delayed
 * like data (shutdown(SHUT_WR) on the other side once everything before it is
 * written); a reset or error closes both sides at once. Buffers are bounded: past
 * B held bytes in one direction the proxy stops reading that side until it drains, so
 * TCP flow control reaches the sender. The kernel has no netem here; this is how the
 * multi-host tests put latency between hosts.
 *
 * One thread, epoll, a timerfd armed (absolute CLOCK_MONOTONIC, nanoseconds) at the
 * earliest release time, timer slack 1 us. SIGTERM/SIGINT end it cleanly (every
 * socket closed, exit 0). Bounded by --max-conns (past it, new connections are closed
 * at once). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_MAPS 32
#define READ_CHUNK 16384

struct chunk {
    struct chunk *next;
    uint64_t due_ns;       /* release time (CLOCK_MONOTONIC) */
    size_t len, off;       /* len 0: end of stream */
    char data[];
};

struct conn;

/* one direction: bytes read from `from` are queued and written to `to` */
struct dir {
    struct conn *c;
    int from_side, to_side; /* 0: client socket, 1: target socket */
    struct chunk *head, *tail;
    size_t held;            /* bytes queued */
    uint64_t last_due;
    int eof_read;           /* end of stream seen on `from` */
    int eof_sent;           /* shutdown(SHUT_WR) done on `to` */
};

struct conn {
    int fd[2];
    int connected;          /* target connect finished */
    struct dir d[2];        /* d[0]: client -> target, d[1]: target -> client */
    struct conn *prev, *next;
    int dead;
    uint32_t ev[2];         /* epoll events registered per fd */
};

struct map {
    int lfd;
    struct sockaddr_storage target;
    socklen_t target_len;
    char spec[160];
};

/* epoll tags: small integers for listeners/timer/signal, pointers for sockets */
struct tag { int kind; struct conn *c; int side; int map; };

static struct map maps[MAX_MAPS];
static int nmaps;
static int epfd, tfd, sfd;
static struct conn *conns, *graveyard;
static int nconns;
static uint64_t delay_ns, jitter_ns;
static int max_conns = 1000;
static size_t max_buffer = 1 << 20;
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t armed_ns;   /* 0: timer disarmed */
static struct tag listen_tags[MAX_MAPS], timer_tag = {1, NULL, 0, 0}, signal_tag = {2, NULL, 0, 0};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: delay-proxy [--delay-us D] [--jitter-us J] [--max-conns N] [--buffer-bytes B]\n"
            "                   LISTEN_HOST:PORT=TARGET_HOST:PORT [...]\n"
            "\n"
            "Forwards TCP connections from each LISTEN address to its TARGET and holds every\n"
            "chunk D + uniform(0, J) microseconds before writing it on, in both directions,\n"
            "keeping byte order (a chunk never leaves before the one read before it).\n"
            "\n"
            "  --delay-us D        fixed one-way delay in microseconds (default 0)\n"
            "  --jitter-us J       extra random delay 0..J microseconds (default 0)\n"
            "  --max-conns N       client connections at once; more are closed (default 1000)\n"
            "  --buffer-bytes B    bytes held per direction before reading pauses (default 1048576)\n"
            "  --seed S            seed of the jitter (default fixed)\n"
            "  --help              this text\n"
            "SIGTERM or SIGINT closes every connection and exits 0.\n");
}

static int parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[128];
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || (size_t)(colon - s) >= sizeof host || !colon[1]) return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0 || !res) return -1;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static void set_events(struct conn *c, int side)
{
    uint32_t want = 0;
    struct dir *in = &c->d[side];      /* reads from this side */
    struct dir *out = &c->d[1 - side]; /* writes to this side */
    if (side == 1 && !c->connected) {
        want = EPOLLOUT;
    } else {
        if (!in->eof_read && in->held < max_buffer) want |= EPOLLIN;
        if (out->head && out->head->due_ns <= now_ns() && out->head->len) want |= EPOLLOUT;
    }
    if (want != c->ev[side]) {
        struct epoll_event ev = {.events = want, .data.ptr = NULL};
        ev.data.ptr = (side == 0) ? (void *)&c->d[0] : (void *)&c->d[1];
        epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd[side], &ev);
        c->ev[side] = want;
    }
}

static void free_dir(struct dir *d)
{
    struct chunk *ch = d->head, *n;
    for (; ch; ch = n) {
        n = ch->next;
        free(ch);
    }
    d->head = d->tail = NULL;
    d->held = 0;
}

static void conn_close(struct conn *c)
{
    if (c->dead) return;
    c->dead = 1;
    for (int i = 0; i < 2; i++) {
        if (c->fd[i] >= 0) {
            epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd[i], NULL);
            close(c->fd[i]);
            c->fd[i] = -1;
        }
        free_dir(&c->d[i]);
    }
    if (c->prev) c->prev->next = c->next;
    else conns = c->next;
    if (c->next) c->next->prev = c->prev;
    nconns--;
    /* freed after the current batch of events: another event may still name it */
    c->next = graveyard;
    graveyard = c;
}

static void bury(void)
{
    while (graveyard) {
        struct conn *n = graveyard->next;
        free(graveyard);
        graveyard = n;
    }
}

static void arm_timer(void)
{
    uint64_t earliest = 0, now = now_ns();
    for (struct conn *c = conns; c; c = c->next)
        for (int i = 0; i < 2; i++) {
            struct chunk *h = c->d[i].head;
            if (h && h->due_ns > now && (!earliest || h->due_ns < earliest)) earliest = h->due_ns;
        }
    if (earliest == armed_ns) return;
    struct itimerspec its = {0};
    if (earliest) {
        its.it_value.tv_sec = (time_t)(earliest / 1000000000ULL);
        its.it_value.tv_nsec = (long)(earliest % 1000000000ULL);
    }
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
    armed_ns = earliest;
}

/* write every due chunk of d; returns -1 when the connection must be closed */
static int flush_dir(struct dir *d)
{
    struct conn *c = d->c;
    int fd = c->fd[d->to_side];
    uint64_t now = now_ns();
    if (d->to_side == 1 && !c->connected) return 0;
    while (d->head && d->head->due_ns <= now) {
        struct chunk *h = d->head;
        if (h->len == 0) { /* end of stream */
            if (shutdown(fd, SHUT_WR) < 0 && errno != ENOTCONN) return -1;
            d->eof_sent = 1;
        } else {
            while (h->off < h->len) {
                ssize_t n = send(fd, h->data + h->off, h->len - h->off, MSG_NOSIGNAL);
                if (n < 0) {
                    if (errno == EINTR) continue;
                    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
                    return -1;
                }
                h->off += (size_t)n;
            }
            d->held -= h->len;
        }
        d->head = h->next;
        if (!d->head) d->tail = NULL;
        free(h);
    }
    /* both directions finished: done */
    if (c->d[0].eof_sent && c->d[1].eof_sent) return -1;
    return 0;
}

static void enqueue(struct dir *d, const char *buf, size_t len)
{
    struct chunk *ch = malloc(sizeof *ch + len);
    if (!ch) {
        fprintf(stderr, "delay-proxy: out of memory\n");
        exit(1);
    }
    uint64_t due = now_ns() + delay_ns + (jitter_ns ? rnd() % (jitter_ns + 1) : 0);
    if (due < d->last_due) due = d->last_due;
    d->last_due = due;
    ch->next = NULL;
    ch->due_ns = due;
    ch->len = len;
    ch->off = 0;
    if (len) memcpy(ch->data, buf, len);
    if (d->tail) d->tail->next = ch;
    else d->head = ch;
    d->tail = ch;
    d->held += len;
}

/* read what side `side` sent; returns -1 to close */
static int read_side(struct conn *c, int side)
{
    struct dir *d = &c->d[side];
    char buf[READ_CHUNK];
    while (!d->eof_read && d->held < max_buffer) {
        ssize_t n = recv(c->fd[side], buf, sizeof buf, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            return -1;
        }
        if (n == 0) {
            d->eof_read = 1;
            enqueue(d, NULL, 0);
            break;
        }
        enqueue(d, buf, (size_t)n);
    }
    return 0;
}

static void handle_conn(struct dir *tagdir, uint32_t events)
{
    struct conn *c = tagdir->c;
    int side = tagdir->from_side;
    if (c->dead) return;
    if (side == 1 && !c->connected) {
        int err = 0;
        socklen_t l = sizeof err;
        getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &err, &l);
        if (err) {
            conn_close(c);
            return;
        }
        c->connected = 1;
    }
    if (events & (EPOLLERR)) {
        conn_close(c);
        return;
    }
    if ((events & (EPOLLIN | EPOLLHUP)) && read_side(c, side) < 0) {
        conn_close(c);
        return;
    }
    /* hung up both ways before we finished writing to it: it was reset */
    if ((events & EPOLLHUP) && c->d[side].eof_read && !c->d[1 - side].eof_sent) {
        flush_dir(&c->d[side]);
        conn_close(c);
        return;
    }
    if (flush_dir(&c->d[1 - side]) < 0 || flush_dir(&c->d[side]) < 0) {
        conn_close(c);
        return;
    }
    set_events(c, 0);
    set_events(c, 1);
}

static void accept_on(int m)
{
    for (;;) {
        int fd = accept4(maps[m].lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        if (nconns >= max_conns) {
            close(fd);
            continue;
        }
        int t = socket(maps[m].target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (t < 0) {
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(t, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(t, (struct sockaddr *)&maps[m].target, maps[m].target_len) < 0 &&
            errno != EINPROGRESS) {
            close(fd);
            close(t);
            continue;
        }
        struct conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            close(t);
            continue;
        }
        c->fd[0] = fd;
        c->fd[1] = t;
        for (int i = 0; i < 2; i++) {
            c->d[i].c = c;
            c->d[i].from_side = i;
            c->d[i].to_side = 1 - i;
        }
        struct epoll_event ev0 = {.events = EPOLLIN, .data.ptr = &c->d[0]};
        struct epoll_event ev1 = {.events = EPOLLOUT, .data.ptr = &c->d[1]};
        c->ev[0] = EPOLLIN;
        c->ev[1] = EPOLLOUT;
        epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev0);
        epoll_ctl(epfd, EPOLL_CTL_ADD, t, &ev1);
        c->next = conns;
        if (conns) conns->prev = c;
        conns = c;
        nconns++;
    }
}

static uint64_t parse_num(const char *opt, const char *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v ? v : "", &end, 10);
    if (!v || !*v || *end || errno || x > 1000000000000ULL) {
        fprintf(stderr, "delay-proxy: %s needs a number, got '%s'\n", opt, v ? v : "");
        exit(2);
    }
    return (uint64_t)x;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--delay-us")) {
            delay_ns = parse_num(a, v) * 1000ULL;
            i++;
        } else if (!strcmp(a, "--jitter-us")) {
            jitter_ns = parse_num(a, v) * 1000ULL;
            i++;
        } else if (!strcmp(a, "--max-conns")) {
            max_conns = (int)parse_num(a, v);
            i++;
        } else if (!strcmp(a, "--buffer-bytes")) {
            max_buffer = (size_t)parse_num(a, v);
            if (max_buffer < READ_CHUNK) max_buffer = READ_CHUNK;
            i++;
        } else if (!strcmp(a, "--seed")) {
            rng_state = parse_num(a, v);
            i++;
        } else if (a[0] == '-') {
            fprintf(stderr, "delay-proxy: unknown option %s\n", a);
            usage(stderr);
            return 2;
        } else {
            char l[160];
            const char *eq = strchr(a, '=');
            if (nmaps == MAX_MAPS || !eq || (size_t)(eq - a) >= sizeof l) {
                fprintf(stderr, "delay-proxy: bad mapping '%s' (LISTEN_HOST:PORT=TARGET_HOST:PORT, at most %d)\n",
                        a, MAX_MAPS);
                return 2;
            }
            memcpy(l, a, (size_t)(eq - a));
            l[eq - a] = 0;
            struct sockaddr_storage ls;
            socklen_t ll;
            struct map *m = &maps[nmaps];
            if (parse_addr(l, &ls, &ll) < 0 || parse_addr(eq + 1, &m->target, &m->target_len) < 0) {
                fprintf(stderr, "delay-proxy: bad address in '%s' (numeric IPv4 HOST:PORT)\n", a);
                return 2;
            }
            snprintf(m->spec, sizeof m->spec, "%s", a);
            m->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            int one = 1;
            setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (m->lfd < 0 || bind(m->lfd, (struct sockaddr *)&ls, ll) < 0 || listen(m->lfd, 512) < 0) {
                fprintf(stderr, "delay-proxy: cannot listen on %s: %s\n", l, strerror(errno));
                return 1;
            }
            nmaps++;
        }
    }
    if (nmaps == 0) {
        usage(stderr);
        return 2;
    }
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (epfd < 0 || tfd < 0 || sfd < 0) {
        perror("delay-proxy: epoll/timerfd/signalfd");
        return 1;
    }
    struct epoll_event ev = {.events = EPOLLIN};
    ev.data.ptr = &timer_tag;
    epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &ev);
    ev.data.ptr = &signal_tag;
    epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &ev);
    for (int m = 0; m < nmaps; m++) {
        listen_tags[m] = (struct tag){3, NULL, 0, m};
        ev.data.ptr = &listen_tags[m];
        epoll_ctl(epfd, EPOLL_CTL_ADD, maps[m].lfd, &ev);
        fprintf(stderr, "delay-proxy: %s delay %" PRIu64 " us jitter %" PRIu64 " us\n", maps[m].spec,
                delay_ns / 1000, jitter_ns / 1000);
    }
    struct epoll_event evs[64];
    for (;;) {
        int n = epoll_wait(epfd, evs, 64, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("delay-proxy: epoll_wait");
            return 1;
        }
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &timer_tag) {
                uint64_t x;
                while (read(tfd, &x, sizeof x) > 0) {}
                armed_ns = 0;
            } else if (p == &signal_tag) {
                while (conns) conn_close(conns);
                for (int m = 0; m < nmaps; m++) close(maps[m].lfd);
                fprintf(stderr, "delay-proxy: stopped\n");
                return 0;
            } else if (p >= (void *)&listen_tags[0] && p < (void *)&listen_tags[MAX_MAPS]) {
                accept_on(((struct tag *)p)->map);
            } else {
                handle_conn((struct dir *)p, evs[i].events);
            }
        }
        /* release due chunks everywhere (the timer fired, or a read made some due) */
        uint64_t now = now_ns();
        struct conn *c = conns, *next;
        for (; c; c = next) {
            next = c->next;
            int closed = 0;
            for (int s = 0; s < 2 && !closed; s++)
                if (c->d[s].head && c->d[s].head->due_ns <= now && flush_dir(&c->d[s]) < 0) {
                    conn_close(c);
                    closed = 1;
                }
            if (!closed) {
                set_events(c, 0);
                set_events(c, 1);
            }
        }
        bury();
        arm_timer();
    }
}
