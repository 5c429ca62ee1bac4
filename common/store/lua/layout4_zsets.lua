-- layout4_zsets.lua (after layout4_lib.lua): the table writes (tables 1..) of one or
-- many fingerprints in one call (layout4_zset.lua does one bucket a call).
-- One Redis only: the buckets of different tables lie in different Redis Cluster
-- slots. Every bucket is checked before anything is written, so a call that meets a
-- split made before it writes nothing; a bucket split by an earlier item of the same
-- call (two items may share a bucket) is followed to the half now holding the member.
-- KEYS: per item: bucket, directory (same slot)
-- ARGV: op ('A' add, 'R' remove), limit (>= 2), tombstone seconds, then per item its
--       member
-- A bucket that split before the call (the caller's directory is older than the split)
-- is followed through its tombstones to the half holding the member, and the split
-- points followed are reported, so the caller learns them without writing again.
-- Reply: {n, parts...} (n members added or removed): a part {i, split points...} for
-- each item i (from 1) whose bucket the call split, a part {i, {split points...}} for
-- each item whose key was a tombstone and was followed; {-3, i, {-2}} when item i's
-- key is absent and not a live bucket (a tombstone that expired: nothing written, the
-- caller reads the directory and redoes the call).
local op, limit, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if not limit or limit < 2 or not ttl or ttl < 1 or (op ~= 'A' and op ~= 'R') or #ARGV < 4 then
  return redis.error_reply('ERR layout zsets script: bad arguments')
end
if #KEYS ~= 2 * (#ARGV - 3) then
  return redis.error_reply('ERR layout zsets script: ' .. #KEYS .. ' keys for ' ..
                           (#ARGV - 3) .. ' items')
end
local items = {}
for a = 4, #ARGV do
  local k = 2 * (a - 4) + 1
  items[#items + 1] = {key = KEYS[k], dir = KEYS[k + 1], member = ARGV[a]}
end
-- moves item it to the half of its bucket holding its member, after the bucket split
-- at s; a split point outside the bucket is an error
local function step(it, s)
  local pre, lo, hi = bk_parse(it.key)
  if not (bk_below(lo, s) and (hi == nil or bk_below(s, hi))) then
    return redis.error_reply('ERR ' .. it.key .. ': split point outside the bucket')
  end
  local lx, sx, hx = bk_hex(lo), bk_hex(s), hi and bk_hex(hi) or ''
  it.key = pre .. (bk_below(it.member, s) and (lx .. '-' .. sx) or (sx .. '-' .. hx))
end
-- ZCARD tells the three cases apart in one call: WRONGTYPE (a tombstone: followed), 0
-- (absent: an empty live bucket or an expired tombstone, the directory says which),
-- the size
local out, followed = {0}, {}
for i, it in ipairs(items) do
  local size = redis.pcall('ZCARD', it.key)
  while type(size) ~= 'number' or size == 0 do
    local moved = bk_check(it.key, it.dir)
    if not moved then break end
    if moved.err then return moved end
    if moved[1] ~= -1 then return {-3, i, moved} end
    local e = step(it, moved[2])
    if e then return e end
    followed[#followed + 1] = moved[2]
    size = redis.pcall('ZCARD', it.key)
  end
  if type(size) ~= 'number' then return size end
  if #followed > 0 then
    out[#out + 1] = {i, followed}
    followed = {}
  end
  it.size = size
end
-- the size of each bucket written, kept up to date as items of the call add to it
local sizes = {}
for _, it in ipairs(items) do sizes[it.key] = it.size end
-- an item whose bucket an earlier item of this call split: its key is a tombstone
-- now; follow the split points to the bucket holding its member. Every key the first
-- pass left an item on was a live bucket, so the only tombstones it can meet are
-- those this call made (dead), and the halves of a split are new keys.
local dead = {}
local function follow(it)
  while dead[it.key] do
    local e = step(it, redis.call('GET', it.key))
    if e then return e end
  end
  if not sizes[it.key] then sizes[it.key] = redis.call('ZCARD', it.key) end
end
local split = false
for i, it in ipairs(items) do
  if split then
    local e = follow(it)
    if e then return e end
  end
  if op == 'A' then
    local n = redis.call('ZADD', it.key, '0', it.member)  -- a string: no number formatting
    out[1] = out[1] + n
    sizes[it.key] = sizes[it.key] + n
    if sizes[it.key] >= limit then
      out[#out + 1] = bk_split_full(it.key, it.dir, limit, ttl, {i}, dead)
      split = true
    end
  else
    out[1] = out[1] + redis.call('ZREM', it.key, it.member)
  end
end
return out
