-- a_split.lua (after common/store/lua/layout4_lib.lua): design (a2) of the
-- write-protocol benchmark: table entries go as plain ZADDs, and a writer whose count
-- of a bucket reached the split limit sends this call, which splits it when it really
-- holds limit members or more (so a stale count costs one ZCARD, never a wrong split).
-- KEYS: bucket, directory (one slot)
-- ARGV: split limit, tombstone seconds
-- Reply: {{split points...}, {live key, size, live key, size, ...}} (sizes of the
-- buckets it left, so the writer's counts are exact again); {-1, point} / {-2} as
-- layout4_zset.lua when the key is no live bucket.
local moved = bk_check(KEYS[1], KEYS[2])
if moved then return moved end
local limit, ttl = tonumber(ARGV[1]), tonumber(ARGV[2])
local points, sizes, work = {}, {}, {KEYS[1]}
while #work > 0 do
  local k = table.remove(work)
  local n = redis.call('ZCARD', k)
  if n >= limit then
    local s, L, R = bk_split(k, KEYS[2], ttl)
    points[#points + 1] = s
    work[#work + 1] = L
    work[#work + 1] = R
  else
    sizes[#sizes + 1] = k
    sizes[#sizes + 1] = n
  end
end
return {points, sizes}
