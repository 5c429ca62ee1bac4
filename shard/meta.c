/* meta.c: the corpus's settings in simhash:meta (docs/protocol.md) as a shard worker
 * reads, checks and creates them: the comparison with the worker's configuration, the
 * settings an unset option takes from the corpus, the commands that create a new meta
 * hash, the listpack limits of the node (the split limit), and the check
 * at start over a connection of its own (simhash-shard --check-config, and before the
 * event loop). The async connection (redis.c) sends the same commands. */
#include "redis_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "cluster.h"
#include "fingerprint.h"
#include "layout.h"
#include "layout_ops.h"
#include "log.h"


const char *shard_redis_meta_key(void)
{
    static char key[LAYOUT_KEY_MAX];
    layout_meta_key(key, sizeof key);
    return key;
}

void shard_redis_resolve(shard_redis_opts *o)
{
    if (o->fingerprint[0] == '\0') {       /* a new corpus: the programs' default */
        fp_params d = {FP_VERSION_DEFAULT, 0};
        fp_params_format(&d, o->fingerprint, sizeof o->fingerprint);
    }
    o->layout = LAYOUT_VERSION;
    if (o->tombstone_s == 0)
        o->tombstone_s = LAYOUT_TOMBSTONE_S_DEFAULT;
}

/* Takes the tombstone lifetime and fingerprint algorithm of an HGETALL meta reply
 * into o where o has none; a value this worker cannot read (or none) is left for the
 * comparison to refuse. */
static void shard_meta_adopt(const redisReply *r, shard_redis_opts *o)
{
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements == 0)
        return;
    const char *fp = "";
    unsigned tomb = 0;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING)
            continue;
        if (strcmp(k->str, "fingerprint") == 0) {
            fp = v->type == REDIS_REPLY_STRING ? v->str : "";
            continue;
        }
        if (v->type != REDIS_REPLY_STRING || v->len > 9)
            continue;
        unsigned n = (unsigned)strtoul(v->str, NULL, 10);
        if (strcmp(k->str, "tombstone_seconds") == 0)
            tomb = n;
    }
    if (o->tombstone_s == 0 && tomb >= LAYOUT_TOMBSTONE_S_MIN && tomb <= LAYOUT_TOMBSTONE_S_MAX)
        o->tombstone_s = tomb;
    fp_params p;
    char perr[160];
    if (o->fingerprint[0] == '\0' && fp[0] && fp_params_parse(fp, &p, perr, sizeof perr) == 0)
        fp_params_format(&p, o->fingerprint, sizeof o->fingerprint);
}

/* Parses a decimal field value; returns -1 when it is not a number. */
static long shard_meta_num(const redisReply *v)
{
    if (v->type != REDIS_REPLY_STRING || v->len == 0 || v->len > 9)
        return -1;
    long n = 0;
    for (size_t i = 0; i < v->len; i++) {
        if (v->str[i] < '0' || v->str[i] > '9')
            return -1;
        n = n * 10 + (v->str[i] - '0');
    }
    return n;
}

int shard_redis_meta_compare(const redisReply *r, const shard_redis_opts *o,
                             char *err, size_t errlen)
{
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0) {
        snprintf(err, errlen, "redis %s:%d: unexpected reply to HGETALL %s", o->host, o->port,
                 shard_redis_meta_key());
        return -1;
    }
    if (r->elements == 0)
        return 1;
    long blocks = -1, distance = -1, layout = -1, tomb = -1;
    long legacy_bits = LAYOUT_SHARD_BITS;   /* a field of former builds (LAYOUT_META_LEGACY) */
    char fp[24] = "";
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING)
            continue;
        if (strcmp(k->str, "fingerprint") == 0) {
            snprintf(fp, sizeof fp, "%.*s", v->type == REDIS_REPLY_STRING ? (int)v->len : 0,
                     v->type == REDIS_REPLY_STRING ? v->str : "");
            continue;
        }
        long n = shard_meta_num(v);
        if (strcmp(k->str, "blocks") == 0)
            blocks = n;
        else if (strcmp(k->str, "distance") == 0)
            distance = n;
        else if (strcmp(k->str, "layout") == 0)
            layout = n;
        else if (strcmp(k->str, LAYOUT_META_LEGACY) == 0)
            legacy_bits = n;
        else if (strcmp(k->str, "tombstone_seconds") == 0)
            tomb = n;
    }
    if (layout >= 0 && layout_meta_check(layout, legacy_bits, o->host, o->port,
                                         shard_redis_meta_key(), err, errlen) != 0)
        return -1;
    if (blocks < 0 || distance < 0 || layout < 0 || tomb < 0 || fp[0] == '\0') {
        snprintf(err, errlen, "redis %s:%d: %s lacks a field or holds a non-number "
                 "(blocks, distance, layout, tombstone_seconds, fingerprint); repair or "
                 "delete it", o->host, o->port, shard_redis_meta_key());
        return -1;
    }
    if ((unsigned long)blocks != o->blocks || (unsigned long)distance != o->distance) {
        snprintf(err, errlen, "corpus in redis %s:%d was built with blocks %ld distance %ld; "
                 "this worker is configured with blocks %u distance %u", o->host, o->port,
                 blocks, distance, o->blocks, o->distance);
        return -1;
    }
    if ((unsigned long)tomb != o->tombstone_s) {
        if (tomb < LAYOUT_TOMBSTONE_S_MIN || tomb > LAYOUT_TOMBSTONE_S_MAX)
            snprintf(err, errlen, "redis %s:%d: %s holds tombstone_seconds outside %d..%d; "
                     "repair or delete it", o->host, o->port, shard_redis_meta_key(),
                     LAYOUT_TOMBSTONE_S_MIN, LAYOUT_TOMBSTONE_S_MAX);
        else
            snprintf(err, errlen, "corpus in redis %s:%d keeps a split bucket's tombstone "
                     "%ld s; this worker is configured with tombstone-seconds %u (leave it "
                     "unset to follow the corpus: every reader must use the corpus's)",
                     o->host, o->port, tomb, o->tombstone_s);
        return -1;
    }
    unsigned removed = fp_params_removed(fp);
    if (removed) {
        snprintf(err, errlen, "corpus in redis %s:%d was built with fingerprint algorithm "
                 "v%u, which was removed (v5 is its successor: its text fingerprints equal "
                 "the former v4's, its HTML ones do not); rebuild the corpus: list its pairs "
                 "with 'simhash export' of an older build, fingerprint those documents "
                 "again, and 'simhash load' them into a new corpus", o->host, o->port,
                 removed);
        return -1;
    }
    if (o->fingerprint[0] == '\0') {   /* unset, and the corpus's is none it knows */
        snprintf(err, errlen, "corpus in redis %s:%d was built with fingerprint algorithm "
                 "'%.20s', which this worker does not know (a newer version's?)", o->host,
                 o->port, fp);
        return -1;
    }
    if (strcmp(fp, o->fingerprint) != 0) {
        snprintf(err, errlen, "corpus in redis %s:%d was built with fingerprint algorithm %s; "
                 "this worker is configured with %s (set fingerprint-algorithm %s, or use a "
                 "new corpus: fingerprints of two algorithms cannot be compared)",
                 o->host, o->port, fp, o->fingerprint, fp);
        return -1;
    }
    return 0;
}

/* Formats the command creating field i (0..LAYOUT_META_FIELDS-1) of a new meta hash
 * with o's settings (layout_meta_field); returns its argument count. */
int shard_meta_field(const shard_redis_opts *o, int i, const char *argv[LAYOUT_META_ARGV],
                     char val[16])
{
    layout_meta m = {shard_redis_meta_key(), o->fingerprint, o->tombstone_s, o->blocks,
                     o->distance};
    return layout_meta_field(&m, i, argv, val);
}

/* Connects (blocking) to host:port with o's timeout and sends AUTH when o has a
 * password. Returns the context, or NULL with err set. */
static redisContext *shard_sync_connect(const shard_redis_opts *o, const char *host, int port,
                                        char *err, size_t errlen, int *refused)
{
    unsigned tmo = o->timeout_ms ? o->timeout_ms : 1000;
    struct timeval tv = {(time_t)(tmo / 1000), (suseconds_t)(tmo % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (c == NULL || c->err) {
        snprintf(err, errlen, "cannot connect to redis %s:%d: %s", host, port,
                 c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    if (o->password && o->password[0]) {
        redisReply *rep = o->user && o->user[0]
                              ? redisCommand(c, "AUTH %s %s", o->user, o->password)
                              : redisCommand(c, "AUTH %s", o->password);
        int bad = rep == NULL || rep->type == REDIS_REPLY_ERROR;
        snprintf(err, errlen, "redis %s:%d: AUTH failed: %s", host, port,
                 rep ? (rep->str ? rep->str : "") : c->errstr);
        if (rep)
            freeReplyObject(rep);
        if (bad) {
            if (refused)
                *refused = 1;
            redisFree(c);
            return NULL;
        }
    }
    return c;
}

/* Runs one blocking command; returns the reply, or NULL with err set (a Redis error
 * reply is turned into NULL too) and *transient = 1 when retrying may help (I/O
 * error, LOADING). In cluster mode -MOVED/-ASK are followed (at most
 * SHARD_REDIRECTS_MAX hops): *cp is replaced by a connection to the target node. */
static redisReply *shard_sync_cmd(redisContext **cp, const shard_redis_opts *o, int argc,
                                  const char **argv, char *err, size_t errlen, int *transient)
{
    for (unsigned hop = 0;; hop++) {
        redisContext *c = *cp;
        redisReply *rep = redisCommandArgv(c, argc, argv, NULL);
        if (rep == NULL) {
            snprintf(err, errlen, "redis %s:%d: %s failed: %s", o->host, o->port, argv[0],
                     c->errstr[0] ? c->errstr : "connection lost");
            *transient = 1;
            return NULL;
        }
        if (rep->type != REDIS_REPLY_ERROR)
            return rep;
        unsigned slot;
        cluster_node node;
        cluster_redir_kind kind = o->cluster && hop < SHARD_REDIRECTS_MAX
            ? cluster_parse_redirect(rep->str, rep->len, &slot, &node) : CLUSTER_REDIR_NONE;
        if (kind == CLUSTER_REDIR_NONE) {
            snprintf(err, errlen, "redis %s:%d: %s failed: %.*s", o->host, o->port, argv[0],
                     (int)rep->len, rep->str);
            *transient = strncmp(rep->str, "LOADING", 7) == 0 ||
                         strncmp(rep->str, "BUSY", 4) == 0 ||
                         strncmp(rep->str, "CLUSTERDOWN", 11) == 0 ||
                         strncmp(rep->str, "TRYAGAIN", 8) == 0;
            freeReplyObject(rep);
            return NULL;
        }
        freeReplyObject(rep);
        int refused = 0;
        redisContext *n = shard_sync_connect(o, node.host, node.port, err, errlen, &refused);
        if (n == NULL) {
            *transient = !refused;
            return NULL;
        }
        if (kind == CLUSTER_REDIR_ASK) {
            redisReply *a = redisCommand(n, "ASKING");
            if (a)
                freeReplyObject(a);
        }
        redisFree(*cp);
        *cp = n;
    }
}

/* HGETALL of the meta hash compared with o: shard_redis_meta_compare's result, or -1
 * (err set) when the read failed. */
static int shard_meta_read(redisContext **cp, shard_redis_opts *o, char *err,
                           size_t errlen, int *transient)
{
    const char *argv[2] = {"HGETALL", shard_redis_meta_key()};
    redisReply *rep = shard_sync_cmd(cp, o, 2, argv, err, errlen, transient);
    if (rep == NULL)
        return -1;
    shard_meta_adopt(rep, o);
    int rc = rep->type == REDIS_REPLY_ARRAY && rep->elements == 0
                 ? 1 : shard_redis_meta_compare(rep, o, err, errlen);
    freeReplyObject(rep);
    return rc;
}

unsigned shard_split_limit_of(unsigned long zset_entries, unsigned long hash_entries)
{
    unsigned long m = zset_entries < hash_entries ? zset_entries : hash_entries;
    if (m > LAYOUT_SPLIT_LIMIT_MAX)
        m = LAYOUT_SPLIT_LIMIT_MAX;
    return m < LAYOUT_SPLIT_LIMIT_MIN ? LAYOUT_SPLIT_LIMIT_MIN : (unsigned)m;
}

/* The split limit from the node's settings at start (have[0] and have[2], 0 when
 * unread); Redis's default 128 when the node did not say. */
static unsigned shard_split_limit(const shard_redis_opts *o, const unsigned long have[4])
{
    if (have[0] == 0 || have[2] == 0) {
        log_warn("redis %s:%d: CONFIG GET refused or unanswered: buckets split at %u "
                 "entries (Redis's default listpack limit); a node with lower "
                 "zset-/hash-max-listpack-entries gets skiplists", o->host, o->port,
                 LAYOUT_SPLIT_LIMIT_DEFAULT);
        return LAYOUT_SPLIT_LIMIT_DEFAULT;
    }
    return shard_split_limit_of(have[0], have[2]);
}

/* The Redis settings the format relies on (docs/protocol.md): bucket keys must stay
 * listpacks, or they cost several times the memory. Logs a warning per value setting
 * below what the format needs; a node that refuses CONFIG is not checked. The split
 * limit comes from the entry settings (o->split_limit). */
static void shard_listpack_check(redisContext **cp, shard_redis_opts *o)
{
    static const char *names[4] = {"zset-max-listpack-entries", "zset-max-listpack-value",
                                   "hash-max-listpack-entries", "hash-max-listpack-value"};
    layout_ctx lc;
    layout_needs nd;
    unsigned long have_all[4] = {0, 0, 0, 0};
    if (layout_ctx_init(&lc) != 0)
        return;
    layout_redis_needs(&lc, &nd);
    layout_ctx_free(&lc);
    unsigned long need[4] = {nd.zset_entries, nd.zset_value, nd.hash_entries, nd.hash_value};
    for (int i = 0; i < 4; i++) {
        if (need[i] == 0 && i != 0 && i != 2)
            continue;           /* the entry settings give the split limit */
        const char *argv[3] = {"CONFIG", "GET", names[i]};
        char err[160];
        int transient = 0;
        redisReply *rep = shard_sync_cmd(cp, o, 3, argv, err, sizeof err, &transient);
        if (rep == NULL) {
            log_warn("redis %s:%d: %s; cannot check %s", o->host, o->port, err, names[i]);
            if (*cp == NULL || (*cp)->err)
                return;
            continue;
        }
        if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
            rep->element[1]->type == REDIS_REPLY_STRING) {
            unsigned long have = strtoul(rep->element[1]->str, NULL, 10);
            have_all[i] = have;
            if (have < need[i] && i != 0 && i != 2)
                log_warn("redis %s:%d: %s is %lu; layout %d needs at least %lu, or bucket "
                         "keys with members past %lu bytes turn into %s (several times the "
                         "memory per fingerprint). Set it in redis.conf "
                         "(deploy/redis-cluster-node.conf has the values)", o->host, o->port,
                         names[i], have, LAYOUT_VERSION, need[i], have,
                         i < 2 ? "skiplists" : "hash tables");
        }
        freeReplyObject(rep);
    }
    o->split_limit = shard_split_limit(o, have_all);
}

int shard_redis_check_meta_sync(shard_redis_opts *o, char *err, size_t errlen)
{
    int refused = 0;
    redisContext *c = shard_sync_connect(o, o->host, o->port, err, errlen, &refused);
    if (c == NULL) {
        shard_redis_resolve(o);
        return refused ? SHARD_META_REFUSED : SHARD_META_UNREACHABLE;
    }
    int rc = -1, transient = 0;
    redisReply *rep;
    char dbs[16], val[16];
    const char *argv[LAYOUT_META_ARGV];
    if (!o->cluster) {      /* a cluster node has database 0 only */
        snprintf(dbs, sizeof dbs, "%u", o->db);
        argv[0] = "SELECT";
        argv[1] = dbs;
        if ((rep = shard_sync_cmd(&c, o, 2, argv, err, errlen, &transient)) == NULL)
            goto out;
        freeReplyObject(rep);
    }
    if ((rc = shard_meta_read(&c, o, err, errlen, &transient)) != 1) {
        if (rc == 0)
            shard_listpack_check(&c, o);
        goto out;
    }
    /* absent: create it; a worker racing us with other settings wins some fields,
     * and the re-read below then reports the mismatch */
    shard_redis_resolve(o);
    rc = -1;
    for (int i = 0; i < LAYOUT_META_FIELDS; i++) {
        int na = shard_meta_field(o, i, argv, val);
        if ((rep = shard_sync_cmd(&c, o, na, argv, err, errlen, &transient)) == NULL)
            goto out;
        freeReplyObject(rep);
    }
    rc = shard_meta_read(&c, o, err, errlen, &transient);
    if (rc == 0)
        shard_listpack_check(&c, o);
    if (rc == 1) {
        snprintf(err, errlen, "redis %s:%d: %s still empty after creating it", o->host,
                 o->port, shard_redis_meta_key());
        rc = -1;
    }
out:
    redisFree(c);
    shard_redis_resolve(o);
    return rc != 0 && transient ? SHARD_META_UNREACHABLE : rc;
}
