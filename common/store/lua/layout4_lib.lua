-- layout4_lib.lua: shared by every script of data layout 4 (elastic buckets,
-- docs/elastic-buckets.md); each script is this file followed by its own text.
-- A bucket key is <prefix><hex lo>-<hex hi>: its members m have lo <= m < hi in
-- memcmp order (hi empty: no upper bound); a table-0 member is 7 bytes followed by
-- the fingerprint's packed ids, and the 7 bytes alone place it. The directory (a
-- sorted set, score 0, in the bucket's slot) holds the lower bounds of the live
-- buckets once the shard has split; a split bucket's key becomes a string holding its
-- split point (a tombstone, expiring after a while) so that a reader or writer still
-- using it learns of it.
-- Lua compares strings with strcoll (locale-dependent), so bytes are compared here.

local function bk_hex(s)
  return (string.gsub(s, '.', function(c) return string.format('%02x', string.byte(c)) end))
end

local function bk_unhex(h)
  return (string.gsub(h, '..', function(x) return string.char(tonumber(x, 16)) end))
end

-- true when a < b in memcmp order (a prefix before its extensions)
local function bk_below(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- prefix, lo, hi (nil: none) of a bucket key, or nil when it is not one
local function bk_parse(key)
  local pre, l, h = string.match(key, '^(.*:)(%x*)%-(%x*)$')
  if not pre or #l % 2 == 1 or #h % 2 == 1 then return nil end
  return pre, bk_unhex(l), (h ~= '' and bk_unhex(h) or nil)
end

-- true when [lo, hi) is a live bucket of the directory dir (called for a bucket key
-- that does not exist: an empty live bucket, or one whose tombstone expired)
local function bk_live(dir, lo, hi)
  if not redis.call('ZSCORE', dir, lo) then
    return lo == '' and hi == nil and redis.call('EXISTS', dir) == 0
  end
  local nxt = redis.call('ZRANGEBYLEX', dir, '(' .. lo, '+', 'LIMIT', 0, 1)[1]
  return nxt == hi
end

-- nil when key is a live bucket (a sorted set, or absent), else the reply telling the
-- caller where its members went: {-1, split point} or {-2} (ask the directory)
local function bk_check(key, dir)
  local t = redis.call('TYPE', key).ok
  if t == 'zset' then return nil end
  if t == 'string' then return {-1, redis.call('GET', key)} end
  if t ~= 'none' then return redis.error_reply('WRONGTYPE ' .. key .. ' is not a bucket') end
  local pre, lo, hi = bk_parse(key)
  if not pre then return redis.error_reply('ERR ' .. key .. ' is not a bucket key') end
  if bk_live(dir, lo, hi) then return nil end
  return {-2}
end

-- the split point of sorted members prev < mid: the shortest prefix of mid above prev
-- (at most 7 bytes: two members differ within their first 7)
local function bk_point(prev, mid)
  local i = 1
  while string.byte(prev, i) == string.byte(mid, i) do i = i + 1 end
  return string.sub(mid, 1, i)
end

-- splits bucket key (a sorted set of >= 2 members) at the point between its middle
-- members. Returns the split point and the two new bucket keys.
local function bk_split(key, dir, ttl)
  local pre, lo, hi = bk_parse(key)
  local c = math.floor(redis.call('ZCARD', key) / 2)
  local two = redis.call('ZRANGE', key, c - 1, c)
  local s = bk_point(two[1], two[2])
  local lx, sx, hx = bk_hex(lo), bk_hex(s), hi and bk_hex(hi) or ''
  local L, R = pre .. lx .. '-' .. sx, pre .. sx .. '-' .. hx
  redis.call('COPY', key, R)
  redis.call('ZREMRANGEBYLEX', R, '-', '(' .. s)
  redis.call('RENAME', key, L)
  redis.call('ZREMRANGEBYLEX', L, '[' .. s, '+')
  redis.call('SET', key, s, 'EX', ttl)
  if lo == '' and redis.call('EXISTS', dir) == 0 then redis.call('ZADD', dir, 0, '') end
  redis.call('ZADD', dir, 0, s)
  return s, L, R
end

-- splits bucket key until no bucket it became holds limit members; returns the split
-- points made, appended to out; dead (optional) gets dead[k] = true for each bucket
-- key that became a tombstone
local function bk_split_full(key, dir, limit, ttl, out, dead)
  local work = {key}
  while #work > 0 do
    local k = table.remove(work)
    if redis.call('ZCARD', k) >= limit then
      local s, L, R = bk_split(k, dir, ttl)
      out[#out + 1] = s
      if dead then dead[k] = true end
      work[#work + 1] = L
      work[#work + 1] = R
    end
  end
  return out
end
