/* layout1.c: data layout 1 (docs/protocol.md): the table buckets of the fixed-bucket
 * family, and the document ids of each fingerprint in a set of its own,
 * d:{0:xx}:<16 hex of fp>. Its operations table and lock script. */
#include "layout_ops.h"

#include <string.h>

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

static void layout1_ids_read(const layout_ctx *c, unsigned i, uint64_t fp, uint64_t p0,
                             layout_cmd *cmd, layout_ids_kind *kind)
{
    (void)c;
    (void)i;
    layout_cmd_overflow(cmd, fp, p0);
    *kind = LAYOUT_IDS_SET;
}

static void layout1_has_ids(const layout_ctx *c, uint64_t fp, uint64_t p0, layout_cmd *cmd)
{
    (void)c;
    layout_cmd_overflow(cmd, fp, p0);
    cmd->argv[0] = "EXISTS";
    cmd->argvlen[0] = strlen("EXISTS");
}

static void layout1_put_id(const layout_ctx *c, uint64_t fp, uint64_t p0, const void *id,
                           size_t idlen, uint8_t *scratch, layout_cmd *cmd)
{
    (void)c;
    (void)scratch;
    layout_cmd_overflow(cmd, fp, p0);
    cmd->argv[0] = "SADD";
    cmd->argvlen[0] = strlen("SADD");
    cmd->argv[2] = id;
    cmd->argvlen[2] = idlen;
    cmd->argc = 3;
}

static void layout1_lock(const layout_ctx *c, uint64_t fp, uint64_t p0, const char *token,
                         unsigned long long lease_ms, const char *op, layout_cmd *cmd)
{
    (void)c;
    layout_fixed_lock(cmd, LAYOUT_LOCK_LUA, NULL, fp, p0, token, lease_ms, op, NULL, 0);
}

const layout_ops layout1_ops = {
    .version = 1,
    .name = "layout 1",
    .bucket_bits_default = LAYOUT_BUCKET_BITS_DEFAULT,
    .docs_kind = LAYOUT_KEY_IDSET,
    .ids_reads = 1,
    .needs = layout_fixed_needs,
    .ids_read = layout1_ids_read,
    .has_ids = layout1_has_ids,
    .put_id = layout1_put_id,
    .lock = layout1_lock,
    LAYOUT_FIXED_BUCKET_OPS,
};
