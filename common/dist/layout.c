/* layout.c: key names, member encoding, prefix-range bounds, packed ids and lock
 * scripts of the Redis layouts (versions 1 and 2, docs/protocol.md). */
#include "layout.h"
#include "resp.h"

#include <stdio.h>
#include <string.h>

static const char layout_hex[] = "0123456789abcdef";

/* The corpus name and the key prefix it gives ("name:"); empty for none. */
static char layout_name[LAYOUT_CORPUS_MAX + 1];
static char layout_pre[LAYOUT_CORPUS_MAX + 2];
static size_t layout_pre_len;

int layout_bucket_bits_ok(unsigned b)
{
    return b == 8 || b == 12 || b == 16 || b == 20 || b == 24;
}

int layout_version_ok(unsigned v)
{
    return v >= LAYOUT_VERSION_MIN && v <= LAYOUT_VERSION_MAX;
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

size_t layout_bucket_key(char *buf, size_t cap, unsigned table, uint64_t bucket,
                         unsigned bucket_bits)
{
    if (!layout_bucket_bits_ok(bucket_bits) || cap == 0)
        return 0;
    char tmp[LAYOUT_KEY_MAX + 32];
    char *q = tmp;
    memcpy(q, "s:{", 3);
    q += 3;
    q += resp_u64_dec(q, table);
    *q++ = ':';
    q = layout_put_hex(q, bucket >> (bucket_bits - 8u), 2);
    *q++ = '}';
    *q++ = ':';
    q = layout_put_hex(q, bucket, (bucket_bits - 8u) / 4u);
    return layout_with_prefix(buf, cap, tmp, (size_t)(q - tmp));
}

size_t layout_hash_key(char *buf, size_t cap, uint64_t p0, unsigned bucket_bits)
{
    size_t n = layout_key_of(buf, cap, 0, p0, bucket_bits);
    if (n)
        buf[layout_pre_len] = 'h';
    return n;
}

size_t layout_key_of(char *buf, size_t cap, unsigned table, uint64_t p, unsigned bucket_bits)
{
    if (!layout_bucket_bits_ok(bucket_bits))
        return 0;
    return layout_bucket_key(buf, cap, table, layout_bucket_of(p, bucket_bits), bucket_bits);
}

/* Writes the low 8*len bits of v big-endian into out. */
static void layout_put_be(uint8_t *out, uint64_t v, size_t len)
{
    for (size_t i = 0; i < len; i++)
        out[i] = (uint8_t)(v >> (8u * (len - 1 - i)));
}

size_t layout_member(uint8_t *out, uint64_t p, unsigned bucket_bits)
{
    size_t len = layout_member_len(bucket_bits);
    layout_put_be(out, p, len);
    return len;
}

int layout_member_decode(const void *member, size_t len, uint64_t bucket,
                         unsigned bucket_bits, uint64_t *p)
{
    if (!layout_bucket_bits_ok(bucket_bits) || len != layout_member_len(bucket_bits))
        return -1;
    const uint8_t *m = member;
    uint64_t low = 0;
    for (size_t i = 0; i < len; i++)
        low = (low << 8) | m[i];
    /* at 12 and 20 bits the member's top 4 bits repeat the bucket's low 4: a member
     * whose do not was not written for this bucket (foreign or corrupt data) */
    unsigned extra = (unsigned)(len * 8u) - (64u - bucket_bits);
    if (extra > 0 && (low >> (64u - bucket_bits)) != (bucket & ((1u << extra) - 1u)))
        return -1;
    low &= ~(uint64_t)0 >> bucket_bits;
    *p = (bucket << (64u - bucket_bits)) | low;
    return 0;
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

/* "<c>:{0:xx}" for shard s. */
static size_t layout_shard_hash_key(char *buf, size_t cap, char c, unsigned shard)
{
    if (shard > 255)
        return 0;
    char tmp[8] = {c, ':', '{', '0', ':', 0, 0, '}'};
    layout_put_hex(tmp + 5, shard, 2);
    return layout_with_prefix(buf, cap, tmp, sizeof tmp);
}

size_t layout_count_key(char *buf, size_t cap, unsigned shard)
{
    return layout_shard_hash_key(buf, cap, 'c', shard);
}

size_t layout_lock_key(char *buf, size_t cap, unsigned shard)
{
    return layout_shard_hash_key(buf, cap, 'w', shard);
}

size_t layout_lock_field(char *buf, uint64_t fp)
{
    layout_put_hex(buf, fp, 16);
    buf[16] = '\0';
    return 16;
}

/* Server time in ms; stale = an expired lock was there. Ids are applied in chunks:
 * unpack() of more than a few thousand values overflows Lua's C stack. */
const char LAYOUT_LOCK_LUA[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local cur = redis.call('HGET', KEYS[2], ARGV[1])\n"
    "local stale = 0\n"
    "if cur then\n"
    "  local exp = tonumber(string.match(cur, '^(%d+)')) or 0\n"
    "  if exp > now then return {0, exp - now} end\n"
    "  stale = 1\n"
    "elseif ARGV[4] == 'S' then\n"
    "  return {0, 0}\n"
    "end\n"
    "redis.call('HSET', KEYS[2], ARGV[1], (now + tonumber(ARGV[3])) .. ':' .. ARGV[2])\n"
    "local before = redis.call('SCARD', KEYS[1])\n"
    "local op = ARGV[4]\n"
    "local n = 0\n"
    "if op == 'A' or op == 'R' then\n"
    "  local cmd = op == 'A' and 'SADD' or 'SREM'\n"
    "  local i = 5\n"
    "  while i <= #ARGV do\n"
    "    local j = math.min(i + 3999, #ARGV)\n"
    "    n = n + redis.call(cmd, KEYS[1], unpack(ARGV, i, j))\n"
    "    i = j + 1\n"
    "  end\n"
    "elseif op == 'X' then\n"
    "  n = before\n"
    "  redis.call('DEL', KEYS[1])\n"
    "end\n"
    "local after = redis.call('SCARD', KEYS[1])\n"
    "if after ~= before then redis.call('HINCRBY', KEYS[3], 'documents', after - before) end\n"
    "if before == 0 and after > 0 then redis.call('HINCRBY', KEYS[3], 'fingerprints', 1) end\n"
    "if before > 0 and after == 0 then redis.call('HINCRBY', KEYS[3], 'fingerprints', -1) end\n"
    "return {1, before, after, stale, n}\n";

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

int layout_range_init(layout_range *r, uint64_t p, unsigned prefix_bits, unsigned bucket_bits)
{
    if (!layout_bucket_bits_ok(bucket_bits) || prefix_bits < LAYOUT_MIN_PREFIX_BITS ||
        prefix_bits > 64)
        return -1;
    memset(r, 0, sizeof *r);
    if (prefix_bits <= bucket_bits) {
        /* the free bits of the bucket number are its low bucket_bits - prefix_bits */
        unsigned free_bits = bucket_bits - prefix_bits;
        r->nbuckets = (uint64_t)1 << free_bits;
        r->first_bucket = (layout_bucket_of(p, bucket_bits) >> free_bits) << free_bits;
        r->lo[0] = '-';
        r->hi[0] = '+';
        r->lo_len = r->hi_len = 1;
        return 0;
    }
    uint64_t mask = prefix_bits == 64 ? ~(uint64_t)0 : ~(~(uint64_t)0 >> prefix_bits);
    size_t mlen = layout_member_len(bucket_bits);
    r->first_bucket = layout_bucket_of(p, bucket_bits);
    r->nbuckets = 1;
    r->lo[0] = '[';
    r->hi[0] = '[';
    layout_put_be(r->lo + 1, p & mask, mlen);
    layout_put_be(r->hi + 1, p | ~mask, mlen);
    r->lo_len = r->hi_len = mlen + 1;
    return 0;
}

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

/* The lock steps shared by both scripts: Redis time, a held lock refused, a stale
 * one taken over (KEYS[w] is the lock hash). CHECK decides, SET writes the lock:
 * layout 2 reads and checks the stored ids between the two, so a malformed value
 * is refused before anything is written. */
#define LAYOUT_LUA_CHECK(w)                                                             \
    "local t = redis.call('TIME')\n"                                                    \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"           \
    "local cur = redis.call('HGET', KEYS[" w "], ARGV[1])\n"                            \
    "local stale = 0\n"                                                                 \
    "if cur then\n"                                                                     \
    "  local exp = tonumber(string.match(cur, '^(%d+)')) or 0\n"                        \
    "  if exp > now then return {0, exp - now} end\n"                                   \
    "  stale = 1\n"                                                                     \
    "elseif ARGV[4] == 'S' then\n"                                                      \
    "  return {0, 0}\n"                                                                 \
    "end\n"
#define LAYOUT_LUA_SET(w)                                                               \
    "redis.call('HSET', KEYS[" w "], ARGV[1], (now + tonumber(ARGV[3])) .. ':' .. ARGV[2])\n"
#define LAYOUT_LUA_TAKE(w) LAYOUT_LUA_CHECK(w) LAYOUT_LUA_SET(w)

/* The counter updates shared by both scripts (KEYS[c] is the counter hash). */
#define LAYOUT_LUA_COUNT(c)                                                             \
    "if after ~= before then redis.call('HINCRBY', KEYS[" c "], 'documents', after - before) end\n" \
    "if before == 0 and after > 0 then redis.call('HINCRBY', KEYS[" c "], 'fingerprints', 1) end\n" \
    "if before > 0 and after == 0 then redis.call('HINCRBY', KEYS[" c "], 'fingerprints', -1) end\n" \
    "return {1, before, after, stale, n}\n"

/* Layout 2. The ids of one fingerprint are a Lua table (id -> true) while the
 * script runs; packed back only when they changed. Packed ids longer than
 * LAYOUT2_INLINE_MAX go to the overflow set (the field then holds ""), and stay
 * there until the fingerprint has no id left. Sets are changed in chunks: unpack()
 * of more than a few thousand values overflows Lua's C stack. */
#define LAYOUT_STR_(x) #x
#define LAYOUT_STR(x) LAYOUT_STR_(x)
const char LAYOUT2_LOCK_LUA[] =
    LAYOUT_LUA_CHECK("3")
    "local function chunks(cmd, key, list, from)\n"
    "  local n, i = 0, from\n"
    "  while i <= #list do\n"
    "    local j = math.min(i + 3999, #list)\n"
    "    n = n + redis.call(cmd, key, unpack(list, i, j))\n"
    "    i = j + 1\n"
    "  end\n"
    "  return n\n"
    "end\n"
    "local op = ARGV[4]\n"
    "local v = redis.call('HGET', KEYS[1], ARGV[5])\n"
    "local big = v == ''\n"
    "local ids = {}\n"
    "local before = 0\n"
    "local bad = false\n"
    "if big then\n"
    "  before = redis.call('SCARD', KEYS[2])\n"
    "elseif v then\n"
    "  local i, len = 1, #v\n"
    "  while i <= len and not bad do\n"
    "    local n, m, b = 0, 1, 128\n"
    "    while b >= 128 and not bad do\n"
    "      b = string.byte(v, i)\n"
    "      if not b or m > 2097152 then bad = true else\n"     /* at most 4 length bytes */
    "        i = i + 1\n"
    "        n = n + (b % 128) * m\n"
    "        m = m * 128\n"
    "      end\n"
    "    end\n"
    "    if not bad and (n < 1 or n > len - i + 1) then bad = true end\n"
    "    if not bad then\n"
    "      ids[string.sub(v, i, i + n - 1)] = true\n"
    "      before = before + 1\n"
    "      i = i + n\n"
    "    end\n"
    "  end\n"
    "end\n"
    /* a malformed value: refused before the lock is written (nothing changes), but
     * for X, which removes it whatever it holds (the counters are then fsck's to
     * fix) */
    "if bad and op ~= 'X' then\n"
    "  return redis.error_reply('malformed document ids in ' .. KEYS[1] .. ' (simhash fsck; "
    "SIMHASH.DEL of the fingerprint removes them)')\n"
    "end\n"
    "if bad then ids = {}; before = 0; redis.call('HDEL', KEYS[1], ARGV[5]); "
    "redis.call('DEL', KEYS[2]) end\n"
    LAYOUT_LUA_SET("3")
    "local n, after = 0, before\n"
    "if big then\n"
    "  if op == 'A' then n = chunks('SADD', KEYS[2], ARGV, 6)\n"
    "  elseif op == 'R' then n = chunks('SREM', KEYS[2], ARGV, 6)\n"
    "  elseif op == 'X' then n = before; redis.call('DEL', KEYS[2]) end\n"
    "  after = redis.call('SCARD', KEYS[2])\n"
    "  if after == 0 then redis.call('HDEL', KEYS[1], ARGV[5]) end\n"
    "else\n"
    "  if op == 'A' then\n"
    "    for i = 6, #ARGV do\n"
    "      if not ids[ARGV[i]] then ids[ARGV[i]] = true; n = n + 1 end\n"
    "    end\n"
    "    after = before + n\n"
    "  elseif op == 'R' then\n"
    "    for i = 6, #ARGV do\n"
    "      if ids[ARGV[i]] then ids[ARGV[i]] = nil; n = n + 1 end\n"
    "    end\n"
    "    after = before - n\n"
    "  elseif op == 'X' then\n"
    "    n = before; after = 0\n"
    "  end\n"
    "  if n > 0 and after == 0 then\n"
    "    redis.call('HDEL', KEYS[1], ARGV[5])\n"
    "  elseif n > 0 then\n"
    "    local parts, list, size = {}, {}, 0\n"
    "    for id in pairs(ids) do\n"
    "      local l, hdr = #id, ''\n"
    "      while l >= 128 do hdr = hdr .. string.char(l % 128 + 128); l = math.floor(l / 128) end\n"
    "      hdr = hdr .. string.char(l)\n"
    "      parts[#parts + 1] = hdr .. id\n"
    "      list[#list + 1] = id\n"
    "      size = size + #hdr + #id\n"
    "    end\n"
    "    if size <= " LAYOUT_STR(LAYOUT2_INLINE_MAX) " then\n"
    "      redis.call('HSET', KEYS[1], ARGV[5], table.concat(parts))\n"
    "    else\n"
    "      redis.call('DEL', KEYS[2])\n"      /* a leftover set holds nothing of ours */
    "      chunks('SADD', KEYS[2], list, 1)\n"
    "      redis.call('HSET', KEYS[1], ARGV[5], '')\n"
    "    end\n"
    "  end\n"
    "end\n"
    LAYOUT_LUA_COUNT("4");

void layout_cmd_overflow(layout_cmd *c, uint64_t fp, uint64_t p0)
{
    memset(c, 0, sizeof *c);
    c->argc = 2;
    c->argv[0] = "SMEMBERS";
    c->argv[1] = c->key[1];
    c->argvlen[0] = strlen(c->argv[0]);
    c->argvlen[1] = layout_doc_key(c->key[1], sizeof c->key[1], fp, p0);
}

int layout_cmd_docs(layout_cmd *c, unsigned layout, unsigned bucket_bits, uint64_t fp,
                    uint64_t p0)
{
    if (!layout_version_ok(layout) || !layout_bucket_bits_ok(bucket_bits))
        return -1;
    layout_cmd_overflow(c, fp, p0);
    if (layout == 1)
        return 0;
    c->argc = 3;
    c->argv[0] = "HGET";
    c->argv[1] = c->key[0];
    c->argv[2] = (const char *)c->member;
    c->argvlen[0] = 4;
    c->argvlen[1] = layout_hash_key(c->key[0], sizeof c->key[0], p0, bucket_bits);
    c->argvlen[2] = layout_member(c->member, p0, bucket_bits);
    return 0;
}

int layout_cmd_lock(layout_cmd *c, unsigned layout, unsigned bucket_bits, uint64_t fp,
                    uint64_t p0, const char *token, unsigned long long lease_ms,
                    const char *op)
{
    if (!layout_version_ok(layout) || !layout_bucket_bits_ok(bucket_bits))
        return -1;
    memset(c, 0, sizeof *c);
    unsigned xx = layout_shard_of(p0);
    snprintf(c->lease, sizeof c->lease, "%llu", lease_ms);
    layout_lock_field(c->field, fp);
    int k = 0;
    c->argv[k++] = "EVAL";
    c->argv[k++] = layout == 1 ? LAYOUT_LOCK_LUA : LAYOUT2_LOCK_LUA;
    c->argv[k++] = layout == 1 ? "3" : "4";
    if (layout == 2) {
        layout_hash_key(c->key[0], sizeof c->key[0], p0, bucket_bits);
        c->argv[k++] = c->key[0];
    }
    layout_doc_key(c->key[1], sizeof c->key[1], fp, p0);
    layout_lock_key(c->key[2], sizeof c->key[2], xx);
    layout_count_key(c->key[3], sizeof c->key[3], xx);
    c->argv[k++] = c->key[1];
    c->argv[k++] = c->key[2];
    c->argv[k++] = c->key[3];
    c->argv[k++] = c->field;
    c->argv[k++] = token;
    c->argv[k++] = c->lease;
    c->argv[k++] = op;
    for (int i = 0; i < k; i++)
        c->argvlen[i] = strlen(c->argv[i]);
    if (layout == 2) {
        c->argv[k] = (const char *)c->member;
        c->argvlen[k++] = layout_member(c->member, p0, bucket_bits);
    }
    c->argc = k;
    return 0;
}
