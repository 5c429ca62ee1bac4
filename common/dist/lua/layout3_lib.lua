-- layout3_lib.lua: shared by every script of data layout 3 (elastic buckets,
-- docs/elastic-buckets.md); the scripts are this file followed by their own text.
-- A bucket key is <prefix><hex lo>-<hex hi>: its members m (7 bytes) have lo <= m < hi
-- in memcmp order (hi empty: no upper bound). The directory (a sorted set, score 0,
-- in the bucket's slot) holds the lower bounds of the live buckets once the shard has
-- split; a split bucket's key becomes a string holding its split point (a tombstone,
-- expiring after a while) so that a reader or writer still using it learns of it.
-- Lua compares strings with strcoll (locale-dependent), so bytes are compared here.

local function l3_hex(s)
  return (string.gsub(s, '.', function(c) return string.format('%02x', string.byte(c)) end))
end

local function l3_unhex(h)
  return (string.gsub(h, '..', function(x) return string.char(tonumber(x, 16)) end))
end

-- true when a < b in memcmp order (a prefix before its extensions)
local function l3_below(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- prefix, lo, hi (nil: none) of a bucket key, or nil when it is not one
local function l3_parse(key)
  local pre, l, h = string.match(key, '^(.*:)(%x*)%-(%x*)$')
  if not pre or #l % 2 == 1 or #h % 2 == 1 then return nil end
  return pre, l3_unhex(l), (h ~= '' and l3_unhex(h) or nil)
end

-- true when [lo, hi) is a live bucket of the directory dir (called for a bucket key
-- that does not exist: an empty live bucket, or one whose tombstone expired)
local function l3_live(dir, lo, hi)
  if not redis.call('ZSCORE', dir, lo) then
    return lo == '' and hi == nil and redis.call('EXISTS', dir) == 0
  end
  local nxt = redis.call('ZRANGEBYLEX', dir, '(' .. lo, '+', 'LIMIT', 0, 1)[1]
  return nxt == hi
end

-- nil when key is a live bucket (of type want, or absent), else the reply telling the
-- caller where its members went: {-1, split point} or {-2} (ask the directory)
local function l3_check(key, dir, want)
  local t = redis.call('TYPE', key).ok
  if t == want then return nil end
  if t == 'string' then return {-1, redis.call('GET', key)} end
  if t ~= 'none' then return redis.error_reply('WRONGTYPE ' .. key .. ' is not a bucket') end
  local pre, lo, hi = l3_parse(key)
  if not pre then return redis.error_reply('ERR ' .. key .. ' is not a bucket key') end
  if l3_live(dir, lo, hi) then return nil end
  return {-2}
end

-- the split point of sorted members prev < mid: the shortest prefix of mid above prev
local function l3_point(prev, mid)
  local i = 1
  while string.byte(prev, i) == string.byte(mid, i) do i = i + 1 end
  return string.sub(mid, 1, i)
end

-- splits bucket key (a sorted set of >= 2 members, or hkey a hash of >= 2 fields) at
-- the point between its middle entries; hkey (table 0's ids, same bounds) follows.
-- Returns the split point and the two new bucket keys.
local function l3_split(key, hkey, dir, ttl)
  local pre, lo, hi = l3_parse(key)
  local n = redis.call('ZCARD', key)
  local s
  if n >= 2 then
    local c = math.floor(n / 2)
    local two = redis.call('ZRANGE', key, c - 1, c)
    s = l3_point(two[1], two[2])
  else
    local f = redis.call('HKEYS', hkey)
    table.sort(f, l3_below)
    local c = math.floor(#f / 2)
    s = l3_point(f[c], f[c + 1])
  end
  local lx, sx, hx = l3_hex(lo), l3_hex(s), hi and l3_hex(hi) or ''
  local L, R = pre .. lx .. '-' .. sx, pre .. sx .. '-' .. hx
  if n > 0 then
    redis.call('COPY', key, R)
    redis.call('ZREMRANGEBYLEX', R, '-', '(' .. s)
    redis.call('RENAME', key, L)
    redis.call('ZREMRANGEBYLEX', L, '[' .. s, '+')
  end
  redis.call('SET', key, s, 'EX', ttl)
  if hkey then
    local hpre = l3_parse(hkey)
    local kv = redis.call('HGETALL', hkey)
    local a, b = {}, {}
    for j = 1, #kv, 2 do
      local side = l3_below(kv[j], s) and a or b
      side[#side + 1] = kv[j]; side[#side + 1] = kv[j + 1]
    end
    redis.call('DEL', hkey)
    if #a > 0 then redis.call('HSET', hpre .. lx .. '-' .. sx, unpack(a)) end
    if #b > 0 then redis.call('HSET', hpre .. sx .. '-' .. hx, unpack(b)) end
    redis.call('SET', hkey, s, 'EX', ttl)
  end
  if lo == '' and redis.call('EXISTS', dir) == 0 then redis.call('ZADD', dir, 0, '') end
  redis.call('ZADD', dir, 0, s)
  return s, L, R
end

-- the number of entries of bucket key (and of its hash hkey, if any)
local function l3_size(key, hkey)
  local n = redis.call('ZCARD', key)
  if hkey then n = math.max(n, redis.call('HLEN', hkey)) end
  return n
end

-- splits bucket key (and hkey) until no bucket it became holds limit entries; returns
-- the split points made, appended to out; dead (optional) gets dead[k] = true for
-- each bucket key that became a tombstone
local function l3_split_full(key, hkey, dir, limit, ttl, out, dead)
  local work = {{key, hkey}}
  while #work > 0 do
    local k = table.remove(work)
    if l3_size(k[1], k[2]) >= limit then
      local s, L, R = l3_split(k[1], k[2], dir, ttl)
      out[#out + 1] = s
      if dead then dead[k[1]] = true end
      local hpre = k[2] and l3_parse(k[2])
      local hl, hr
      if hpre then
        local _, lo, hi = l3_parse(k[1])
        hl = hpre .. l3_hex(lo) .. '-' .. l3_hex(s)
        hr = hpre .. l3_hex(s) .. '-' .. (hi and l3_hex(hi) or '')
      end
      work[#work + 1] = {L, hl}
      work[#work + 1] = {R, hr}
    end
  end
  return out
end
