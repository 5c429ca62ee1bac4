-- layout4_lock.lua (after layout4_lib.lua): the write lock of one fingerprint, and the
-- change of its document ids under it. The ids live in fp's member of its table-0
-- bucket: the 7 bytes ARGV[5] followed by the ids packed (for each id its length as a
-- varint, 7 bits a byte, low first, high bit = more, then its bytes), or the 7 bytes
-- alone when the packing outgrew IDS_INLINE bytes and the ids live in the overflow set
-- KEYS[2] (until the fingerprint has no id left).
-- KEYS: table-0 bucket, overflow set, lock hash, counter hash (one slot: {0:xx}),
--       directory
-- ARGV: lock field, token, lease ms, op, member (7 bytes), split limit, tombstone
--       seconds, document ids...
-- op: A adds the ids, R removes them, X removes every id, F takes the lock to repair
-- (no change), S as F but only a stale lock is taken over.
-- Reply: {0, ms left} when the lock is held and not expired (or, for op S, absent):
-- nothing changed. {1, ids before, ids after, 1 if it took over a stale lock else 0,
-- ids changed} when it took the lock and applied op, keeping the counters of KEYS[4]
-- exact; after an A that filled the bucket, the bucket splits. {-1, split point} or
-- {-2} when the bucket had split (nothing written, as layout4_zset.lua answers).
-- Sets are changed in chunks: unpack() of more than a few thousand values overflows
-- Lua's C stack.
local LIMIT = tonumber(table.remove(ARGV, 6))
local TTL = tonumber(table.remove(ARGV, 6))
local moved = bk_check(KEYS[1], KEYS[5])
if moved then return moved end
if #ARGV[5] ~= 7 then return redis.error_reply('ERR lock script: bad member') end
-- the maximum packed ids kept in the member: with the 7 bytes, Redis's default
-- zset-max-listpack-value (layout4.c's LAYOUT4_MEMBER_MAX)
local IDS_INLINE = 57

-- the exclusive end of the members starting with m: '(' and m's successor
local function after(m)
  local i = #m
  while i > 0 and string.byte(m, i) == 255 do i = i - 1 end
  if i == 0 then return '+' end
  return '(' .. string.sub(m, 1, i - 1) .. string.char(string.byte(m, i) + 1)
end

-- ids_get() answers the packed ids, "" (in the overflow set) or false (none);
-- ids_del() removes them, ids_put(v) stores v
local OLD
local function ids_get()
  OLD = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. ARGV[5], after(ARGV[5]), 'LIMIT', 0, 1)[1]
  if not OLD then return false end
  return string.sub(OLD, 8)
end
local function ids_del()
  if OLD then redis.call('ZREM', KEYS[1], OLD); OLD = nil end
end
local function ids_put(v)
  ids_del()
  OLD = ARGV[5] .. v
  redis.call('ZADD', KEYS[1], '0', OLD)
end

local function chunks(cmd, key, list, from)
  local n, i = 0, from
  while i <= #list do
    local j = math.min(i + 3999, #list)
    n = n + redis.call(cmd, key, unpack(list, i, j))
    i = j + 1
  end
  return n
end

local function lock()
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local cur = redis.call('HGET', KEYS[3], ARGV[1])
  local stale = 0
  if cur then
    local exp = tonumber(string.match(cur, '^(%d+)')) or 0
    if exp > now then return {0, exp - now} end
    stale = 1
  elseif ARGV[4] == 'S' then
    return {0, 0}
  end
  local op = ARGV[4]
  local v = ids_get()
  local big = v == ''
  local ids = {}
  local before = 0
  local bad = false
  if big then
    before = redis.call('SCARD', KEYS[2])
  elseif v then
    local i, len = 1, #v
    while i <= len and not bad do
      local n, m, b = 0, 1, 128
      while b >= 128 and not bad do
        b = string.byte(v, i)
        if not b or m > 2097152 then bad = true else   -- at most 4 length bytes
          i = i + 1
          n = n + (b % 128) * m
          m = m * 128
        end
      end
      if not bad and (n < 1 or n > len - i + 1) then bad = true end
      if not bad then
        ids[string.sub(v, i, i + n - 1)] = true
        before = before + 1
        i = i + n
      end
    end
  end
  -- a malformed value: refused before the lock is written (nothing changes), but for
  -- X, which removes it whatever it holds (the counters are then fsck's to fix)
  if bad and op ~= 'X' then
    return redis.error_reply('malformed document ids in ' .. KEYS[1] ..
                             ' (simhash fsck; SIMHASH.DEL of the fingerprint removes them)')
  end
  if bad then ids = {}; before = 0; ids_del(); redis.call('DEL', KEYS[2]) end
  redis.call('HSET', KEYS[3], ARGV[1], (now + tonumber(ARGV[3])) .. ':' .. ARGV[2])
  local n, after_n = 0, before
  if big then
    if op == 'A' then n = chunks('SADD', KEYS[2], ARGV, 6)
    elseif op == 'R' then n = chunks('SREM', KEYS[2], ARGV, 6)
    elseif op == 'X' then n = before; redis.call('DEL', KEYS[2]) end
    after_n = redis.call('SCARD', KEYS[2])
    if after_n == 0 then ids_del() end
  else
    if op == 'A' then
      for i = 6, #ARGV do
        if not ids[ARGV[i]] then ids[ARGV[i]] = true; n = n + 1 end
      end
      after_n = before + n
    elseif op == 'R' then
      for i = 6, #ARGV do
        if ids[ARGV[i]] then ids[ARGV[i]] = nil; n = n + 1 end
      end
      after_n = before - n
    elseif op == 'X' then
      n = before; after_n = 0
    end
    if n > 0 and after_n == 0 then
      ids_del()
    elseif n > 0 then
      local parts, list, size = {}, {}, 0
      for id in pairs(ids) do
        local l, hdr = #id, ''
        while l >= 128 do hdr = hdr .. string.char(l % 128 + 128); l = math.floor(l / 128) end
        hdr = hdr .. string.char(l)
        parts[#parts + 1] = hdr .. id
        list[#list + 1] = id
        size = size + #hdr + #id
      end
      if size <= IDS_INLINE then
        ids_put(table.concat(parts))
      else
        redis.call('DEL', KEYS[2])      -- a leftover set holds nothing of ours
        chunks('SADD', KEYS[2], list, 1)
        ids_put('')
      end
    end
  end
  if after_n ~= before then redis.call('HINCRBY', KEYS[4], 'documents', after_n - before) end
  if before == 0 and after_n > 0 then redis.call('HINCRBY', KEYS[4], 'fingerprints', 1) end
  if before > 0 and after_n == 0 then redis.call('HINCRBY', KEYS[4], 'fingerprints', -1) end
  return {1, before, after_n, stale, n}
end

local r = lock()
if type(r) == 'table' and r[1] == 1 and ARGV[4] == 'A' then
  bk_split_full(KEYS[1], KEYS[5], LIMIT, TTL, {})
end
return r
