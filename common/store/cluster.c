/* cluster.c: key slots, slot map and redirections of Redis Cluster; see cluster.h. */
#include "cluster.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- CRC16 and key slots ---- */

/* CRC16-CCITT (XMODEM), polynomial 0x1021, as in Redis's crc16.c. */
uint16_t cluster_crc16(const char *buf, size_t len)
{
    static uint16_t table[256];
    static int ready;
    uint16_t crc = 0;

    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        for (unsigned i = 0; i < 256; i++) {
            uint16_t c = (uint16_t)(i << 8);
            for (int b = 0; b < 8; b++)
                c = (c & 0x8000) ? (uint16_t)((c << 1) ^ 0x1021) : (uint16_t)(c << 1);
            table[i] = c;
        }
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    for (size_t i = 0; i < len; i++)
        crc = (uint16_t)((crc << 8) ^ table[((crc >> 8) ^ (unsigned char)buf[i]) & 0xff]);
    return crc;
}

unsigned cluster_keyslot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);

    if (open) {
        size_t start = (size_t)(open - key) + 1;
        const char *close = memchr(key + start, '}', len - start);
        if (close && close > key + start)
            return cluster_crc16(key + start, (size_t)(close - (key + start))) & (CLUSTER_SLOTS - 1);
    }
    return cluster_crc16(key, len) & (CLUSTER_SLOTS - 1);
}

/* ---- Slot map ---- */

static int cluster_node_index(cluster_map *map, const char *host, int port)
{
    for (size_t i = 0; i < map->nnodes; i++)
        if (map->nodes[i].port == port && strcmp(map->nodes[i].host, host) == 0)
            return (int)i;
    if (map->nnodes == CLUSTER_MAX_NODES)
        return -1;
    snprintf(map->nodes[map->nnodes].host, CLUSTER_ADDR_MAX, "%s", host);
    map->nodes[map->nnodes].port = port;
    return (int)map->nnodes++;
}

int cluster_map_from_slots(cluster_map *map, const redisReply *r,
                           const char *default_host, char *err, size_t errlen)
{
    int covered = 0;

    map->nnodes = 0;
    for (size_t s = 0; s < CLUSTER_SLOTS; s++)
        map->slot_node[s] = -1;
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        snprintf(err, errlen, "CLUSTER SLOTS: expected an array reply");
        return -1;
    }
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER ||
            e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2 ||
            e->element[2]->element[0]->type != REDIS_REPLY_STRING ||
            e->element[2]->element[1]->type != REDIS_REPLY_INTEGER) {
            snprintf(err, errlen, "CLUSTER SLOTS: entry %zu is not [start, end, [host, port, ...], ...]", i);
            return -1;
        }
        long long lo = e->element[0]->integer, hi = e->element[1]->integer;
        long long port = e->element[2]->element[1]->integer;
        const char *host = e->element[2]->element[0]->str;
        if (lo < 0 || hi >= CLUSTER_SLOTS || lo > hi || port <= 0 || port > 65535) {
            snprintf(err, errlen, "CLUSTER SLOTS: entry %zu has slots %lld-%lld port %lld", i, lo, hi, port);
            return -1;
        }
        if (host[0] == '\0' || strcmp(host, "?") == 0)
            host = default_host;
        if (strlen(host) >= CLUSTER_ADDR_MAX) {
            snprintf(err, errlen, "CLUSTER SLOTS: host name too long in entry %zu", i);
            return -1;
        }
        int n = cluster_node_index(map, host, (int)port);
        if (n < 0) {
            snprintf(err, errlen, "CLUSTER SLOTS: more than %d masters", CLUSTER_MAX_NODES);
            return -1;
        }
        for (long long s = lo; s <= hi; s++) {
            if (map->slot_node[s] < 0)
                covered++;
            map->slot_node[s] = (int16_t)n;
        }
    }
    return covered;
}

int cluster_map_node(const cluster_map *map, unsigned slot)
{
    return slot < CLUSTER_SLOTS ? map->slot_node[slot] : -1;
}

/* ---- Redirections ---- */

cluster_redir_kind cluster_parse_redirect(const char *text, size_t len, unsigned *slot,
                                          cluster_node *node)
{
    char buf[128], host[CLUSTER_ADDR_MAX];
    cluster_redir_kind kind;
    const char *p;
    unsigned long s;
    char *end;

    if (len > 0 && text[0] == '-') {
        text++;
        len--;
    }
    if (len >= sizeof(buf))
        return CLUSTER_REDIR_NONE;
    memcpy(buf, text, len);
    buf[len] = '\0';
    if (strncmp(buf, "MOVED ", 6) == 0) {
        kind = CLUSTER_REDIR_MOVED;
        p = buf + 6;
    } else if (strncmp(buf, "ASK ", 4) == 0) {
        kind = CLUSTER_REDIR_ASK;
        p = buf + 4;
    } else {
        return CLUSTER_REDIR_NONE;
    }
    if (*p < '0' || *p > '9')
        return CLUSTER_REDIR_NONE;
    s = strtoul(p, &end, 10);
    if (*end != ' ' || s >= CLUSTER_SLOTS)
        return CLUSTER_REDIR_NONE;
    p = end + 1;
    const char *colon = strrchr(p, ':');
    if (!colon || (size_t)(colon - p) >= sizeof(host))
        return CLUSTER_REDIR_NONE;
    memcpy(host, p, (size_t)(colon - p));
    host[colon - p] = '\0';
    if (colon[1] < '0' || colon[1] > '9')
        return CLUSTER_REDIR_NONE;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (*end != '\0' || port == 0 || port > 65535)
        return CLUSTER_REDIR_NONE;
    *slot = (unsigned)s;
    snprintf(node->host, sizeof(node->host), "%s", host);
    node->port = (int)port;
    return kind;
}

/* ---- Addresses and CLUSTER NODES ---- */

int cluster_parse_addr(const char *s, size_t len, cluster_node *node)
{
    const char *colon = NULL;
    unsigned long port = 0;

    for (size_t i = 0; i < len; i++)
        if (s[i] == ':')
            colon = s + i;
    if (colon == NULL || colon == s || (size_t)(colon - s) >= CLUSTER_ADDR_MAX)
        return -1;
    const char *p = colon + 1, *end = s + len;
    if (p == end || end - p > 5)
        return -1;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        port = port * 10 + (unsigned long)(*p - '0');
    }
    if (port == 0 || port > 65535)
        return -1;
    memcpy(node->host, s, (size_t)(colon - s));
    node->host[colon - s] = '\0';
    node->port = (int)port;
    return 0;
}

/* Splits line [p, end) into at most max space-separated fields. Returns the count. */
static size_t cluster_split_fields(const char *p, const char *end, const char **f, size_t *flen,
                                   size_t max)
{
    size_t n = 0;
    while (p < end && n < max) {
        while (p < end && *p == ' ')
            p++;
        if (p == end)
            break;
        const char *s = p;
        while (p < end && *p != ' ')
            p++;
        f[n] = s;
        flen[n++] = (size_t)(p - s);
    }
    return n;
}

/* First slot of a slot field ("5", "0-5460"); -1 for "[...]" migration entries. */
static int cluster_slot_field_first(const char *s, size_t len)
{
    unsigned v = 0;
    size_t i = 0;
    if (len == 0 || s[0] < '0' || s[0] > '9')
        return -1;
    for (; i < len && s[i] >= '0' && s[i] <= '9' && v < CLUSTER_SLOTS; i++)
        v = v * 10 + (unsigned)(s[i] - '0');
    return v < CLUSTER_SLOTS && (i == len || s[i] == '-') ? (int)v : -1;
}

int cluster_parse_nodes(const char *text, size_t len, const char *default_host,
                        cluster_nodes_info *out, char *err, size_t errlen)
{
    const char *p = text, *end = text + len;
    size_t good = 0;

    memset(out, 0, sizeof(*out));
    out->my_slot = -1;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end;
        if (le > p && le[-1] == '\r')
            le--;
        const char *f[10];
        size_t fl[10];
        size_t nf = cluster_split_fields(p, le, f, fl, 10);
        p = eol ? eol + 1 : end;
        if (nf < 8)
            continue;
        /* address: ip:port@cport[,hostname] */
        size_t alen = fl[1];
        for (size_t i = 0; i < fl[1]; i++)
            if (f[1][i] == '@' || f[1][i] == ',') {
                alen = i;
                break;
            }
        cluster_node node;
        char buf[CLUSTER_ADDR_MAX + 8];
        if (alen > 0 && f[1][0] == ':') {       /* no ip known: ":port" */
            int n = snprintf(buf, sizeof(buf), "%s%.*s", default_host, (int)alen, f[1]);
            if (n < 0 || (size_t)n >= sizeof(buf) || cluster_parse_addr(buf, (size_t)n, &node) != 0)
                continue;
        } else if (cluster_parse_addr(f[1], alen, &node) != 0) {
            continue;
        }
        good++;
        int myself = 0, master = 0;
        for (const char *q = f[2], *qe = f[2] + fl[2]; q < qe;) {
            const char *c = memchr(q, ',', (size_t)(qe - q));
            size_t n = c ? (size_t)(c - q) : (size_t)(qe - q);
            if (n == 6 && memcmp(q, "myself", 6) == 0)
                myself = 1;
            else if (n == 6 && memcmp(q, "master", 6) == 0)
                master = 1;
            q += n + 1;
        }
        if (out->nnodes < CLUSTER_NODES_MAX)
            out->nodes[out->nnodes++] = node;
        if (!myself)
            continue;
        out->myself = node;
        out->is_master = master;
        if (master && nf >= 9)
            out->my_slot = cluster_slot_field_first(f[8], fl[8]);
    }
    if (good == 0) {
        snprintf(err, errlen, "CLUSTER NODES: no line of the form <id> <ip:port@cport> <flags> ...");
        return -1;
    }
    if (out->myself.port == 0) {
        snprintf(err, errlen, "CLUSTER NODES: no 'myself' line");
        return -1;
    }
    return 0;
}

/* Reads the decimal at s[*i..n) and moves *i past it; -1 when there is none. */
static long cluster_num_at(const char *s, size_t n, size_t *i)
{
    long v = -1;
    while (*i < n && s[*i] >= '0' && s[*i] <= '9' && v < CLUSTER_SLOTS)
        v = (v < 0 ? 0 : v * 10) + (s[(*i)++] - '0');
    return v;
}

/* One slot field of a CLUSTER NODES line ("a", "a-b", "[a->-id]", "[a-<-id]"):
 * 1 it serves slot, -1 it migrates slot in or out, 0 neither. */
static int cluster_slot_field_has(const char *s, size_t n, unsigned slot)
{
    size_t i = s[0] == '[';
    long a = cluster_num_at(s, n, &i), b = a;
    if (a < 0)
        return 0;
    if (s[0] == '[')
        return (unsigned long)a == slot ? -1 : 0;
    if (i < n && s[i] == '-') {
        i++;
        b = cluster_num_at(s, n, &i);
    }
    return b >= a && (unsigned long)a <= slot && slot <= (unsigned long)b;
}

int cluster_nodes_serves(const char *text, size_t len, unsigned slot)
{
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end;
        const char *line = p;
        p = eol ? eol + 1 : end;
        /* fields: id addr flags master ping pong epoch link slot... */
        const char *f = line;
        int k = 0, myself = 0, serves = 0;
        while (f < le) {
            while (f < le && (*f == ' ' || *f == '\r'))
                f++;
            const char *fe = f;
            while (fe < le && *fe != ' ' && *fe != '\r')
                fe++;
            if (fe == f)
                break;
            size_t n = (size_t)(fe - f);
            if (k == 2)
                myself = memmem(f, n, "myself", 6) != NULL && memmem(f, n, "master", 6) != NULL;
            else if (k >= 8 && myself) {
                int h = cluster_slot_field_has(f, n, slot);
                if (h < 0)
                    return 0;
                serves |= h;
            }
            k++;
            f = fe;
        }
        if (myself)
            return serves;
    }
    return 0;
}
