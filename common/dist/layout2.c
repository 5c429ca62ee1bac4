/* layout2.c: data layout 2 (docs/protocol.md, the default): the table buckets of the
 * fixed-bucket family; the document ids of the fingerprints of a table-0 bucket
 * packed in one hash, h:{0:xx}:yy.. (field = the table-0 member, value =
 * layout_ids_put's packing), or "" when they outgrew LAYOUT2_INLINE_MAX bytes and
 * live in the overflow set d:{0:xx}:<16 hex of fp>. Its operations table and lock
 * script. */
#include "layout_ops.h"

#include <string.h>

/* zset- and hash-max-listpack-entries layout 2 needs (a bucket of 2^12 at 1M
 * fingerprints holds about 244, docs/capacity.md) */
#define LAYOUT2_LISTPACK_ENTRIES 1024

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
/* Where the packed ids live, for the lock steps below: ids_get() answers the packed
 * ids, "" (in the overflow set) or false (none); ids_del() removes them, ids_put(v)
 * stores v; IDS_INLINE is the most packed bytes kept inline. Layouts 2 and 3: a field
 * (ARGV[5]) of the bucket hash KEYS[1]. */
#define LAYOUT2_IDS_HASH_LUA                                                            \
    "local IDS_INLINE = " LAYOUT_STR(LAYOUT2_INLINE_MAX) "\n"                           \
    "local function ids_get() return redis.call('HGET', KEYS[1], ARGV[5]) end\n"        \
    "local function ids_del() redis.call('HDEL', KEYS[1], ARGV[5]) end\n"               \
    "local function ids_put(v) redis.call('HSET', KEYS[1], ARGV[5], v) end\n"

/* Layout 2's lock script: its ids_* functions, then the lock steps on packed ids
 * (LAYOUT_IDS_LOCK_BODY: KEYS[2] = the overflow set, KEYS[3] = the lock hash, KEYS[4]
 * = the counter hash; layout 4 runs them on ids kept in table 0's members). */
const char LAYOUT2_LOCK_LUA[] =
    LAYOUT2_IDS_HASH_LUA
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
    "local v = ids_get()\n"
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
    "if bad then ids = {}; before = 0; ids_del(); "
    "redis.call('DEL', KEYS[2]) end\n"
    LAYOUT_LUA_SET("3")
    "local n, after = 0, before\n"
    "if big then\n"
    "  if op == 'A' then n = chunks('SADD', KEYS[2], ARGV, 6)\n"
    "  elseif op == 'R' then n = chunks('SREM', KEYS[2], ARGV, 6)\n"
    "  elseif op == 'X' then n = before; redis.call('DEL', KEYS[2]) end\n"
    "  after = redis.call('SCARD', KEYS[2])\n"
    "  if after == 0 then ids_del() end\n"
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
    "    ids_del()\n"
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
    "    if size <= IDS_INLINE then\n"
    "      ids_put(table.concat(parts))\n"
    "    else\n"
    "      redis.call('DEL', KEYS[2])\n"      /* a leftover set holds nothing of ours */
    "      chunks('SADD', KEYS[2], list, 1)\n"
    "      ids_put('')\n"
    "    end\n"
    "  end\n"
    "end\n"
    LAYOUT_LUA_COUNT("4");

const char *const LAYOUT_IDS_LOCK_BODY = LAYOUT2_LOCK_LUA + (sizeof LAYOUT2_IDS_HASH_LUA - 1);

static void layout2_needs(const layout_ctx *c, layout_needs *out)
{
    layout_fixed_needs(c, out);
    out->zset_entries = LAYOUT2_LISTPACK_ENTRIES;
    out->hash_entries = LAYOUT2_LISTPACK_ENTRIES;
    out->hash_value = LAYOUT2_INLINE_MAX;
}

/* fp's field: in the hash of its table-0 bucket, the table-0 member. */
static size_t layout2_field_of(const layout_ctx *c, uint64_t p0, char *key, uint8_t *member,
                               size_t *mlen)
{
    *mlen = layout_member(member, p0, c->bucket_bits);
    return layout_hash_key(key, LAYOUT_KEY_MAX, p0, c->bucket_bits);
}

static void layout2_lock(const layout_ctx *c, uint64_t fp, uint64_t p0, const char *token,
                         unsigned long long lease_ms, const char *op, layout_cmd *cmd)
{
    char hkey[LAYOUT_KEY_MAX];
    uint8_t member[LAYOUT_MEMBER_MAX];
    layout_hash_key(hkey, sizeof hkey, p0, c->bucket_bits);
    size_t mlen = layout_member(member, p0, c->bucket_bits);
    layout_fixed_lock(cmd, LAYOUT2_LOCK_LUA, hkey, fp, p0, token, lease_ms, op, member, mlen);
}

const layout_ops layout2_ops = {
    .version = 2,
    .name = "layout 2",
    .bucket_bits_default = LAYOUT2_BUCKET_BITS_DEFAULT,
    .docs_kind = LAYOUT_KEY_IDHASH,
    .ids_reads = 2,
    .needs = layout2_needs,
    .ids_read = layout_field_ids_read,
    .has_ids = layout_field_has_ids,
    .put_id = layout_field_put_id,
    .field_of = layout2_field_of,
    .lock = layout2_lock,
    LAYOUT_FIXED_BUCKET_OPS,
};
