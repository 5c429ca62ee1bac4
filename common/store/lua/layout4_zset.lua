-- layout4_zset.lua (after layout4_lib.lua): adds or removes members of one bucket of
-- a table 1.. of layout 4, splitting it while it holds `limit` members or more.
-- KEYS: bucket, directory (same slot)
-- ARGV: op ('A' add, 'R' remove), limit (>= 2), tombstone seconds, members...
-- Reply: {n, split points...} (n members added or removed); {-1, split point} when
-- the bucket had split (nothing written: redo on the halves); {-2} when its tombstone
-- expired (nothing written: read the directory again).
-- The usual case is one ZADD and one ZCARD: a tombstone makes the ZADD fail
-- (WRONGTYPE), and only a write that finds the key absent asks the directory.
local key, dir = KEYS[1], KEYS[2]
local op, limit, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if not limit or limit < 2 or not ttl or ttl < 1 or (op ~= 'A' and op ~= 'R') or #ARGV < 4 then
  return redis.error_reply('ERR layout zset script: bad arguments')
end
local n = 0
for i = 4, #ARGV, 256 do
  local args = {}
  for j = i, math.min(i + 255, #ARGV) do
    if op == 'A' then args[#args + 1] = 0 end
    args[#args + 1] = ARGV[j]
  end
  local r = redis.pcall(op == 'A' and 'ZADD' or 'ZREM', key, unpack(args))
  if type(r) == 'table' and r.err then
    local moved = bk_check(key, dir)   -- a tombstone: nothing was written
    if moved then return moved end
    return redis.error_reply(r.err)
  end
  n = n + r
end
local size = redis.call('ZCARD', key)
if (op == 'A' and size == n) or (op == 'R' and size == 0 and n < #ARGV - 3) then
  -- the key did not exist: an empty live bucket, or one whose tombstone expired
  local _, lo, hi = bk_parse(key)
  if lo == nil then return redis.error_reply('ERR ' .. key .. ' is not a bucket key') end
  if not bk_live(dir, lo, hi) then
    if op == 'A' then redis.call('DEL', key) end
    return {-2}
  end
end
local out = {n}
if op == 'A' and size >= limit then
  bk_split_full(key, dir, limit, ttl, out)
end
return out
