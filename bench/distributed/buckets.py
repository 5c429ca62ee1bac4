#!/usr/bin/python3
"""bench/distributed/buckets.py: what a bucket key costs Redis, by its number of entries.

The question behind it: how full should a bucket key be allowed to grow before it is
split in two (a bucket that splits online keeps every key a listpack at any corpus
size)? For bucket sizes S (entries per key) it loads about BENCH_ENTRIES (default
1,000,000) random 7-byte members into keys of S members each in one fresh
redis-server on 127.0.0.1 (listpack limits raised above every S, no persistence) and
measures, from Redis's own INFO commandstats (server microseconds per call, so the
client's speed does not count):

  bytes_per_entry    used_memory after loading minus before, per entry
  zrangebylex_us     one query-sized ZRANGEBYLEX (3-byte prefix) on a random key
  zadd_us            ZADD of one new member
  zcard_us           ZCARD (what telling a full key costs)
  addcheck_us        EVALSHA of a script doing ZADD + ZCARD + compare (a write that
                     notices when its key is full), on keys below the threshold
  l3write_us         EVALSHA of the layout's write script (common/store/lua/layout4_zset.lua:
                     bucket check, ZADD, size check) adding one member below its limit
  l3zsets_item_us    EVALSHA of the layout's batched write script (layout4_zsets.lua, what a
                     worker on one Redis sends for SHARD.MADD) with 256 items a call,
                     each a new member of a random key below its limit: per item
  l3zsets_lua_item_us  of that, what is not the ZCARD and ZADD it calls per item: Lua
                     itself, its arguments, and passing each call in and out of Redis
  split_copy_us      EVALSHA splitting a key at its median member with COPY,
                     ZREMRANGEBYLEX on both halves and RENAME (all inside Redis, linear)
  split_rebuild_us   the same split by reading every member and ZADDing both halves
                     (what a split costs when members are inserted one by one)
  hsplit_us          splitting a listpack hash of S fields at its median field, given
                     (the ids of a table-0 bucket follow its split): HGETALL, DEL, two HSETs

Each figure is the median of BENCH_REPEATS (default 3) runs. Output, one line each:
  bench=buckets size=S metric=<name> value=<number>
and ratios against the same run's plain commands:
  bench=buckets size=S metric=addcheck_over_zadd value=...
Usage: /usr/bin/python3 bench/distributed/buckets.py [SIZE ...]   (needs python3-redis)
"""
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import redis

SPLIT_COPY = """
local n = redis.call('ZCARD', KEYS[1])
local mid = redis.call('ZRANGE', KEYS[1], math.floor(n / 2), math.floor(n / 2))[1]
redis.call('COPY', KEYS[1], KEYS[3])
redis.call('ZREMRANGEBYLEX', KEYS[3], '-', '(' .. mid)
redis.call('RENAME', KEYS[1], KEYS[2])
redis.call('ZREMRANGEBYLEX', KEYS[2], '[' .. mid, '+')
redis.call('SET', KEYS[1], mid)
return n
"""
SPLIT_REBUILD = """
local all = redis.call('ZRANGE', KEYS[1], 0, -1)
local mid = all[math.floor(#all / 2) + 1]
local a, b = {}, {}
for _, m in ipairs(all) do
  if m < mid then a[#a + 1] = 0; a[#a + 1] = m else b[#b + 1] = 0; b[#b + 1] = m end
end
redis.call('DEL', KEYS[1])
redis.call('ZADD', KEYS[2], unpack(a))
redis.call('ZADD', KEYS[3], unpack(b))
redis.call('SET', KEYS[1], mid)
return #all
"""
ADD_CHECK = """
local added = redis.call('ZADD', KEYS[1], 0, ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return -1 end
return added
"""
HSPLIT = """
local kv = redis.call('HGETALL', KEYS[1])
local mid = ARGV[1]
local a, b = {}, {}
for i = 1, #kv, 2 do
  local t = (kv[i] < mid) and a or b
  t[#t + 1] = kv[i]; t[#t + 1] = kv[i + 1]
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[2], unpack(a))
redis.call('HSET', KEYS[3], unpack(b))
return #kv / 2
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_redis(workdir):
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", workdir,
         "--zset-max-listpack-entries", "8192", "--hash-max-listpack-entries", "8192"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = redis.Redis(host="127.0.0.1", port=port)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            if r.ping():
                return proc, r
        except redis.exceptions.RedisError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("bench=buckets error=redis-server did not answer")


def usec(r, cmd):
    s = r.info("commandstats").get("cmdstat_" + cmd)
    return s["usec_per_call"] if s else float("nan")


def usec_total(stats, cmd):
    s = stats.get("cmdstat_" + cmd)
    return s["usec"] if s else 0


def member(rng):
    return rng.getrandbits(56).to_bytes(7, "big")


def one_run(r, size, entries, rng):
    """One measurement of every metric at one bucket size; returns a dict."""
    out = {}
    r.flushall()
    time.sleep(0.1)
    base = r.info("memory")["used_memory"]
    nkeys = max(64, entries // size)
    pipe = r.pipeline(transaction=False)
    for k in range(nkeys):
        pipe.zadd(f"s:{{0:00}}:{k}", {member(rng): 0 for _ in range(size)})
        if k % 256 == 255:
            pipe.execute()
    pipe.execute()
    out["bytes_per_entry"] = (r.info("memory")["used_memory"] - base) / (nkeys * size)
    calls = 20000

    r.config_resetstat()
    pipe = r.pipeline(transaction=False)
    for _ in range(calls):
        lo = member(rng)[:3]
        pipe.zrangebylex(f"s:{{0:00}}:{rng.randrange(nkeys)}", b"[" + lo, b"[" + lo + b"\xff")
    pipe.execute()
    out["zrangebylex_us"] = usec(r, "zrangebylex")

    r.config_resetstat()
    pipe = r.pipeline(transaction=False)
    for _ in range(calls):
        key = f"s:{{0:00}}:{rng.randrange(nkeys)}"
        pipe.zadd(key, {member(rng): 0})
        pipe.zcard(key)
    pipe.execute()
    out["zadd_us"], out["zcard_us"] = usec(r, "zadd"), usec(r, "zcard")

    sha = r.script_load(ADD_CHECK)
    r.config_resetstat()
    pipe = r.pipeline(transaction=False)
    for _ in range(calls):
        pipe.evalsha(sha, 1, f"s:{{0:00}}:{rng.randrange(nkeys)}", member(rng), size * 4)
    pipe.execute()
    out["addcheck_us"] = usec(r, "evalsha")

    lua = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common", "store", "lua")
    with open(os.path.join(lua, "layout4_lib.lua"), "rb") as f:
        body = f.read()
    with open(os.path.join(lua, "layout4_zset.lua"), "rb") as f:
        body += b"\n" + f.read()
    sha = r.script_load(body)
    r.config_resetstat()
    pipe = r.pipeline(transaction=False)
    for _ in range(calls):
        pipe.evalsha(sha, 2, f"s:{{0:00}}:{rng.randrange(nkeys)}", "r:{0:00}", "A", size * 4, 3600,
                     member(rng))
    pipe.execute()
    out["l3write_us"] = usec(r, "evalsha")

    with open(os.path.join(lua, "layout4_lib.lua"), "rb") as f:
        body = f.read()
    with open(os.path.join(lua, "layout4_zsets.lua"), "rb") as f:
        body += b"\n" + f.read()
    sha = r.script_load(body)
    per, ncalls = 256, max(1, calls // 256)
    r.config_resetstat()
    pipe = r.pipeline(transaction=False)
    for _ in range(ncalls):
        keys, args = [], ["A", size * 4, 3600]
        for _ in range(per):
            keys += [f"s:{{0:00}}:{rng.randrange(nkeys)}", "r:{0:00}"]
            args += [member(rng)]
        pipe.evalsha(sha, len(keys), *keys, *args)
    pipe.execute()
    st = r.info("commandstats")
    items = ncalls * per
    out["l3zsets_item_us"] = usec_total(st, "evalsha") / items
    out["l3zsets_lua_item_us"] = (usec_total(st, "evalsha") - usec_total(st, "zadd") -
                                  usec_total(st, "zcard")) / items

    out["encoding"] = r.object("encoding", f"s:{{0:00}}:{nkeys - 1}").decode()
    nsplit = min(nkeys // 2, 300)
    for name, script, off in (("split_copy_us", SPLIT_COPY, 0), ("split_rebuild_us", SPLIT_REBUILD, nsplit)):
        sha = r.script_load(script)
        r.config_resetstat()
        for k in range(off, off + nsplit):
            r.evalsha(sha, 3, f"s:{{0:00}}:{k}", f"s:{{0:00}}:{k}.l", f"s:{{0:00}}:{k}.r")
        out[name] = usec(r, "evalsha")

    sha = r.script_load(HSPLIT)
    mids = []
    for k in range(nsplit):
        fields = sorted(member(rng) for _ in range(size))
        mids.append(fields[size // 2])
        r.hset(f"h:{{0:00}}:{k}", mapping={f: b"x" * 31 for f in fields})
    r.config_resetstat()
    for k in range(nsplit):
        r.evalsha(sha, 3, f"h:{{0:00}}:{k}", f"h:{{0:00}}:{k}.l", f"h:{{0:00}}:{k}.r", mids[k])
    out["hsplit_us"] = usec(r, "evalsha")
    return out


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [64, 128, 256, 512, 1024, 2048]
    entries = int(os.environ.get("BENCH_ENTRIES", "1000000"))
    repeats = int(os.environ.get("BENCH_REPEATS", "3"))
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="simhash-bench-buckets.") as workdir:
        proc, r = start_redis(workdir)
        try:
            for size in sizes:
                runs = [one_run(r, size, entries, rng) for _ in range(repeats)]
                med = {k: statistics.median(run[k] for run in runs)
                       for k in runs[0] if k != "encoding"}
                for k, v in med.items():
                    print(f"bench=buckets size={size} metric={k} value={v:.2f}")
                print(f"bench=buckets size={size} metric=addcheck_over_zadd "
                      f"value={med['addcheck_us'] / med['zadd_us']:.2f}")
                print(f"bench=buckets size={size} metric=l3write_over_zadd "
                      f"value={med['l3write_us'] / med['zadd_us']:.2f}")
                print(f"bench=buckets size={size} metric=l3zsets_item_over_zadd_zcard "
                      f"value={med['l3zsets_item_us'] / (med['zadd_us'] + med['zcard_us']):.2f}")
                print(f"bench=buckets size={size} metric=split_copy_per_entry_us "
                      f"value={med['split_copy_us'] / size:.3f}")
                print(f"bench=buckets size={size} metric=encoding value={runs[-1]['encoding']}",
                      flush=True)
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
