/* layout.c: the parts of the storage format with no layout decision in them: the
 * corpus name and its key prefix, the commands creating the meta hash, the keys of a
 * table-0 shard (locks, counters,
 * overflow sets, hash tags), the packing of document ids and the unlock scripts
 * (docs/protocol.md). The keys and members of the tables are layout4.c's. */
#include "layout.h"
#include "layout_ops.h"
#include "resp.h"

#include <stdio.h>
#include <string.h>

static const char layout_hex[] = "0123456789abcdef";

/* The corpus name and the key prefix it gives ("name:"); empty for none. */
static char layout_name[LAYOUT_CORPUS_MAX + 1];
static char layout_pre[LAYOUT_CORPUS_MAX + 2];
static size_t layout_pre_len;

int layout_meta_check(long layout, long legacy_bits, const char *host, int port,
                      const char *meta_key, char *err, size_t errlen)
{
    if (layout == LAYOUT_VERSION && legacy_bits == LAYOUT_SHARD_BITS)
        return 0;
    snprintf(err, errlen, "redis %s:%d holds a corpus of data layout %ld (%s: layout %ld, "
             "%s %ld); this build reads and writes data layout %d only. Copy the corpus "
             "across: simhash export with the build that wrote it, then simhash load into "
             "a new corpus", host, port, layout, meta_key, layout, LAYOUT_META_LEGACY,
             legacy_bits, LAYOUT_VERSION);
    return -1;
}

/* The fingerprint and tombstone_seconds fields are written first, and only into a new
 * meta hash, so a worker racing another with other settings finds the mismatch. */
#define LAYOUT_META_FP_LUA \
    "if redis.call('EXISTS', KEYS[1]) == 0 then return redis.call('HSET', KEYS[1], " \
    "'fingerprint', ARGV[1], 'tombstone_seconds', ARGV[2]) end return 0"

int layout_meta_field(const layout_meta *m, int i, const char *argv[LAYOUT_META_ARGV],
                      char val[16])
{
    static const char *names[LAYOUT_META_FIELDS] = {"fingerprint", "blocks", "distance",
                                                    "layout"};
    unsigned vals[LAYOUT_META_FIELDS] = {0, m->blocks, m->distance, LAYOUT_VERSION};
    if (i == 0) {
        argv[0] = "EVAL";
        argv[1] = LAYOUT_META_FP_LUA;
        argv[2] = "1";
        argv[3] = m->meta_key;
        argv[4] = m->fingerprint;
        snprintf(val, 16, "%u", m->tombstone_s);
        argv[5] = val;
        return 6;
    }
    snprintf(val, 16, "%u", vals[i]);
    argv[0] = "HSETNX";
    argv[1] = m->meta_key;
    argv[2] = names[i];
    argv[3] = val;
    return 4;
}

int layout_corpus_set(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n > LAYOUT_CORPUS_MAX)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return -1;
    }
    memcpy(layout_name, name ? name : "", n);
    layout_name[n] = '\0';
    memcpy(layout_pre, layout_name, n);
    layout_pre[n] = ':';
    layout_pre_len = n ? n + 1 : 0;
    layout_pre[layout_pre_len] = '\0';
    return 0;
}

const char *layout_corpus(void)
{
    return layout_name;
}

/* Writes the corpus prefix then the n bytes of body into buf as a NUL-terminated
 * string; returns its length, or 0 when it does not fit in cap. */
static size_t layout_with_prefix(char *buf, size_t cap, const char *body, size_t n)
{
    if (layout_pre_len + n + 1 > cap)
        return 0;
    memcpy(buf, layout_pre, layout_pre_len);
    memcpy(buf + layout_pre_len, body, n);
    buf[layout_pre_len + n] = '\0';
    return layout_pre_len + n;
}

size_t layout_meta_key(char *buf, size_t cap)
{
    return layout_with_prefix(buf, cap, LAYOUT_META_KEY, strlen(LAYOUT_META_KEY));
}

size_t layout_registry_key(char *buf, size_t cap)
{
    return layout_with_prefix(buf, cap, LAYOUT_REGISTRY_KEY, strlen(LAYOUT_REGISTRY_KEY));
}

/* Writes n lower-case hex digits of the low 4n bits of v at out; returns out + n. */
static char *layout_put_hex(char *out, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        out[i] = layout_hex[(v >> (4u * (n - 1 - i))) & 0xf];
    return out + n;
}

size_t layout_doc_key(char *buf, size_t cap, uint64_t fp, uint64_t p0)
{
    /* "d:{0:xx}:" + 16 hex digits */
    char tmp[9 + 16];
    memcpy(tmp, "d:{0:", 5);
    layout_put_hex(tmp + 5, p0 >> 56, 2);
    tmp[7] = '}';
    tmp[8] = ':';
    layout_put_hex(tmp + 9, fp, 16);
    return layout_with_prefix(buf, cap, tmp, sizeof tmp);
}

size_t layout_tag_key(char *buf, size_t cap, char kind, unsigned table, unsigned shard)
{
    if (shard > 255)
        return 0;
    char tmp[32];
    char *q = tmp;
    *q++ = kind;
    *q++ = ':';
    *q++ = '{';
    q += resp_u64_dec(q, table);
    *q++ = ':';
    q = layout_put_hex(q, shard, 2);
    *q++ = '}';
    return layout_with_prefix(buf, cap, tmp, (size_t)(q - tmp));
}

size_t layout_count_key(char *buf, size_t cap, unsigned shard)
{
    return layout_tag_key(buf, cap, 'c', 0, shard);
}

size_t layout_lock_key(char *buf, size_t cap, unsigned shard)
{
    return layout_tag_key(buf, cap, 'w', 0, shard);
}

int layout_lock_field_parse(const char *s, size_t n, uint64_t *fp)
{
    uint64_t v = 0;
    if (n != 16)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const char *d = memchr(layout_hex, s[i], 16);
        if (d == NULL || s[i] == '\0')
            return -1;
        v = v << 4 | (uint64_t)(d - layout_hex);
    }
    *fp = v;
    return 0;
}

size_t layout_lock_field(char *buf, uint64_t fp)
{
    layout_put_hex(buf, fp, 16);
    buf[16] = '\0';
    return 16;
}

const char LAYOUT_UNLOCK_LUA[] =
    "local cur = redis.call('HGET', KEYS[1], ARGV[1])\n"
    "if cur and string.sub(cur, -(#ARGV[2] + 1)) == ':' .. ARGV[2] then\n"
    "  if ARGV[3] == 'abandon' then\n"
    "    redis.call('HSET', KEYS[1], ARGV[1], '0:' .. ARGV[2])\n"
    "  else\n"
    "    redis.call('HDEL', KEYS[1], ARGV[1])\n"
    "  end\n"
    "  return 1\n"
    "end\n"
    "return 0\n";

const char LAYOUT_UNLOCKS_LUA[] =
    "if #ARGV ~= 2 * #KEYS then\n"
    "  return redis.error_reply('ERR unlocks script: 2 arguments per key expected')\n"
    "end\n"
    "local out = {}\n"
    "for i = 1, #KEYS do\n"
    "  local f, t = ARGV[2 * i - 1], ARGV[2 * i]\n"
    "  local cur = redis.call('HGET', KEYS[i], f)\n"
    "  if cur and string.sub(cur, -(#t + 1)) == ':' .. t then\n"
    "    redis.call('HDEL', KEYS[i], f)\n"
    "    out[i] = 1\n"
    "  else\n"
    "    out[i] = 0\n"
    "  end\n"
    "end\n"
    "return out\n";

int layout_ids_next(const void *v, size_t len, size_t *off, const uint8_t **id,
                    size_t *idlen)
{
    const uint8_t *s = v;
    size_t i = *off;
    if (i >= len)
        return 0;
    uint64_t n = 0;
    unsigned shift = 0;
    for (;;) {
        if (i >= len || shift > 56)
            return -1;
        uint8_t b = s[i++];
        n |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (b < 0x80)
            break;
    }
    if (n == 0 || n > len - i)
        return -1;
    *id = s + i;
    *idlen = (size_t)n;
    *off = i + (size_t)n;
    return 1;
}

size_t layout_ids_put(uint8_t *out, const void *id, size_t idlen)
{
    size_t k = 0;
    uint64_t n = idlen;
    while (n >= 0x80) {
        out[k++] = (uint8_t)(n | 0x80);
        n >>= 7;
    }
    out[k++] = (uint8_t)n;
    memcpy(out + k, id, idlen);
    return k + idlen;
}

void layout_cmd_overflow(layout_cmd *c, uint64_t fp, uint64_t p0)
{
    memset(c, 0, sizeof *c);
    c->argc = 2;
    c->argv[0] = "SMEMBERS";
    c->argv[1] = c->key[1];
    c->argvlen[0] = strlen(c->argv[0]);
    c->argvlen[1] = layout_doc_key(c->key[1], sizeof c->key[1], fp, p0);
}
