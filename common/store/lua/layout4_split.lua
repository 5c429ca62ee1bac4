-- layout4_split.lua (after layout4_lib.lua): the split of a bucket of a table 1.. that
-- plain ZADDs filled. A writer sends table entries as plain ZADDs (no script), counts
-- each bucket's members from their replies, and sends this call when its count of a
-- bucket reaches the split limit or when it has no count of it yet; the call splits
-- only while a bucket really holds `limit` members or more (ZCARD), so a count that
-- is wrong (other writers, a count not yet known) costs one call, never a wrong split.
-- KEYS: bucket, directory (same slot)
-- ARGV: limit (>= 2), tombstone seconds, member (7 bytes: the entry whose count asked)
-- Reply: {size, split points...}: the split points made (the caller's directory learns
-- them as from a write's reply) and the size of the bucket now holding the member, so
-- the caller's count of it is exact again; {-1, split point} or {-2} when the key is
-- no live bucket (it split, or its tombstone expired: nothing done, as
-- layout4_zset.lua answers).
local key, dir = KEYS[1], KEYS[2]
local limit, ttl, member = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
if not limit or limit < 2 or not ttl or ttl < 1 or not member or #member ~= 7 then
  return redis.error_reply('ERR layout split script: bad arguments')
end
local moved = bk_check(key, dir)
if moved then return moved end
local out = {0}
bk_split_full(key, dir, limit, ttl, out)
-- the split points made are the tombstones' values: follow them to the member's half
while redis.call('TYPE', key).ok == 'string' do
  local s = redis.call('GET', key)
  local pre, lo, hi = bk_parse(key)
  local lx, sx, hx = bk_hex(lo), bk_hex(s), hi and bk_hex(hi) or ''
  key = pre .. (bk_below(member, s) and (lx .. '-' .. sx) or (sx .. '-' .. hx))
end
out[1] = redis.call('ZCARD', key)
return out
