/* layout.c: key names, member encoding and prefix-range bounds of the Redis layout
 * (layout version 1, docs/protocol.md). */
#include "layout.h"
#include "resp.h"

#include <string.h>

static const char layout_hex[] = "0123456789abcdef";

int layout_bucket_bits_ok(unsigned b)
{
    return b == 8 || b == 16 || b == 24;
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
    size_t len = (size_t)(q - tmp);
    if (len + 1 > cap)
        return 0;
    memcpy(buf, tmp, len);
    buf[len] = '\0';
    return len;
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
    *p = (bucket << (64u - bucket_bits)) | low;
    return 0;
}

size_t layout_doc_key(char *buf, size_t cap, uint64_t fp, uint64_t p0)
{
    /* "d:{0:xx}:" + 16 hex digits */
    const size_t len = 9 + 16;
    if (cap < len + 1)
        return 0;
    memcpy(buf, "d:{0:", 5);
    layout_put_hex(buf + 5, p0 >> 56, 2);
    buf[7] = '}';
    buf[8] = ':';
    layout_put_hex(buf + 9, fp, 16);
    buf[len] = '\0';
    return len;
}

size_t layout_count_key(char *buf, size_t cap, unsigned shard)
{
    if (cap < 9 || shard > 255)
        return 0;
    memcpy(buf, "c:{0:", 5);
    layout_put_hex(buf + 5, shard, 2);
    buf[7] = '}';
    buf[8] = '\0';
    return 8;
}

size_t layout_lock_key(char *buf, size_t cap, unsigned shard)
{
    if (layout_count_key(buf, cap, shard) == 0)
        return 0;
    buf[0] = 'w';
    return 8;
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
