-- a_put.lua (after common/store/lua/layout4_lib.lua): design (a) of the write-protocol
-- benchmark (bench/write_protocol/README.md), a prototype, not the product's script.
-- Adds one document id to a fingerprint in ONE call, with no lock: the table-0 member
-- is the 7 bytes, one incarnation byte, then the packed ids. The incarnation changes
-- when the fingerprint goes from no id to some id (a new life), and the table writes
-- that follow carry it in their members, so a reader ignores table entries of another
-- incarnation. Overflow sets (ids past 57 bytes) are left out of the prototype.
-- KEYS: table-0 bucket, counter hash, directory (one slot {0:xx}), and optionally the
--       shard's pending journal (a sorted set: member = fingerprint, score = Redis
--       time in ms), which then records the fingerprint in the same call, so a repair
--       pass can finish the table writes of a writer killed before them
-- ARGV: member (7 bytes), split limit, tombstone seconds, document id, and with the
--       journal the fingerprint (16 hex digits)
-- Reply: {1, incarnation, ids added, split points...}; {-1, point} / {-2} when the
-- bucket had split (nothing written), as layout4_lock.lua answers.
local moved = bk_check(KEYS[1], KEYS[3])
if moved then return moved end
local m7, limit, ttl, id = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local i = #m7
while i > 0 and string.byte(m7, i) == 255 do i = i - 1 end
local stop = i == 0 and '+' or '(' .. string.sub(m7, 1, i - 1) .. string.char(string.byte(m7, i) + 1)
local old = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. m7, stop, 'LIMIT', 0, 1)[1]
local inc, ids = 1, ''
if old then
  inc = string.byte(old, 8)
  ids = string.sub(old, 9)
  if ids == '' then inc = inc % 255 + 1 end   -- a dead member kept for its incarnation
end
-- is id among the packed ids? (ids here are < 128 bytes: one length byte)
local p, found = 1, false
while p <= #ids do
  local n = string.byte(ids, p)
  if string.sub(ids, p + 1, p + n) == id then found = true; break end
  p = p + 1 + n
end
if KEYS[4] then
  local t = redis.call('TIME')
  redis.call('ZADD', KEYS[4], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), ARGV[5])
end
if found then return {1, inc, 0} end
local new = m7 .. string.char(inc) .. ids .. string.char(#id) .. id
if old then redis.call('ZREM', KEYS[1], old) end
redis.call('ZADD', KEYS[1], '0', new)
redis.call('HINCRBY', KEYS[2], 'documents', 1)
if ids == '' then redis.call('HINCRBY', KEYS[2], 'fingerprints', 1) end
local out = {1, inc, 1}
if not old then bk_split_full(KEYS[1], KEYS[3], limit, ttl, out) end
return out
