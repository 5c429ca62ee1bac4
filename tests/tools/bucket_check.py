"""tests/tools/bucket_check.py: the elastic-bucket scripts (common/store/lua/,
docs/elastic-buckets.md) against a real redis-server, with brute
force: writers and readers that each keep their own (stale) directory cache, a split
limit so small that hundreds of buckets split while they run, and every answer checked.

  run PORT [--seconds S] [--limit N] [--ttl S] [--writers W] [--readers R] [--log FILE]
      writers add fresh members to 4 shards (2 tables x 2 first bytes) through the
      zset script and remove some; readers query random ranges (0-2 byte prefixes: one bucket or many) and
      check each answer: every member acknowledged before the query began and not
      being removed is there, no removed member, nothing outside the range, no repeat.
      Readers reload a directory older than a third of the tombstone lifetime (--ttl);
      writers never do unless told to (-2), so with a short --ttl they meet expired
      tombstones. --log appends every acknowledged add ("+hex") and remove ("-hex").
  verify PORT [--log FILE] [--limit N] [--inflight K]
      the layout of the 4 shards: every live bucket (a sorted set named by its bounds)
      is a run of the directory, holds only members within its bounds and fewer than
      the limit; every other key of a shard is a tombstone string; with --log, the members in Redis are exactly those
      added and not removed (up to K members may differ: writes in flight when a
      run was cut short, each writer has one at most).
Exit status 0 when every check passed; 1 with a message naming the first failure."""
import argparse
import os
import random
import sys
import threading
import time

from resp_client import C

HERE = os.path.dirname(os.path.abspath(__file__))
LUA = os.path.join(HERE, "..", "..", "common", "store", "lua")
SHARDS = [(0, 0x11), (0, 0x9a), (1, 0x11), (1, 0x9a)]


def fail(msg):
    print("bucket_check: FAIL: " + msg, file=sys.stderr)
    sys.stdout.flush()
    os._exit(1)


def script(name):
    with open(os.path.join(LUA, "layout4_lib.lua"), "rb") as f:
        lib = f.read()
    if name.endswith(".lua"):
        with open(os.path.join(LUA, name), "rb") as f:
            return lib + b"\n" + f.read()
    return lib + b"\n" + name.encode()


def zkey(t, x, lo, hi):
    return b"s:{%d:%02x}:%s-%s" % (t, x, lo.hex().encode(), (hi or b"").hex().encode())


def dkey(t, x):
    return b"r:{%d:%02x}" % (t, x)


class Dir:
    """One client's cache of the directories of the shards: sorted lower bounds."""

    def __init__(self, conn):
        self.c, self.lo, self.at = conn, {}, {}

    def load(self, sh):
        r = self.c.call("ZRANGE", dkey(*sh), 0, -1)
        if isinstance(r, tuple):
            fail("ZRANGE of a directory: %r" % (r,))
        self.lo[sh] = sorted(set(r) | {b""})
        self.at[sh] = time.monotonic()

    def get(self, sh, max_age=None):
        if sh not in self.lo or (max_age is not None and time.monotonic() - self.at[sh] > max_age):
            self.load(sh)
        return self.lo[sh]

    def add(self, sh, s):
        lo = self.get(sh)
        if s not in lo:
            lo.append(s)
            lo.sort()

    def bucket(self, sh, m, max_age=None):
        lo = self.get(sh, max_age)
        i = _bisect(lo, m)
        return lo[i], (lo[i + 1] if i + 1 < len(lo) else None)


def _bisect(lo, m):
    a, b = 0, len(lo)
    while b - a > 1:
        c = (a + b) // 2
        if lo[c] <= m:
            a = c
        else:
            b = c
    return a


class State:
    """What the writers acknowledged: member -> [shard, add time, remove start, done]."""

    def __init__(self, log):
        self.lock = threading.Lock()
        self.m = {}
        self.log = open(log, "a") if log else None
        self.splits = 0
        self.gone = 0                # writes told their bucket's tombstone expired

    def note(self, line):
        if self.log:
            self.log.write(line + "\n")
            self.log.flush()


def write(st, c, d, sh, op, m, limit, ttl, sha_z):
    """One member through the zset script, following splits; returns the split points
    made."""
    t, x = sh
    for _ in range(200):
        lo, hi = d.bucket(sh, m)
        r = c.call("EVALSHA", sha_z, 2, zkey(t, x, lo, hi), dkey(t, x), op, limit, ttl, m)
        if isinstance(r, tuple):
            fail("zset script: %r" % (r,))
        if r[0] == -1:
            d.add(sh, r[1])
        elif r[0] == -2:
            with st.lock:
                st.gone += 1
            d.load(sh)
        else:
            for s in r[1:]:
                d.add(sh, s)
            return r[1:]
    fail("a write kept meeting splits")


def guarded(fn):
    """Runs a client thread's body; any exception ends the whole check at once."""
    def run(*a):
        try:
            fn(*a)
        except Exception as e:  # noqa: BLE001 (a lost connection, a bad reply)
            fail("%s: %s: %s" % (fn.__name__, type(e).__name__, e))
    return run


@guarded
def writer(port, st, stop, args, seed):
    c, rng = C(port), random.Random(seed)
    d = Dir(c)
    sha_z = c.call("SCRIPT", "LOAD", script("layout4_zset.lua"))
    mine = []
    while not stop.is_set():
        if mine and rng.random() < 0.15:
            m = mine.pop(rng.randrange(len(mine)))
            with st.lock:
                st.m[m][2] = time.monotonic()
            write(st, c, d, st.m[m][0], "R", m, args.limit, args.ttl, sha_z)
            with st.lock:
                st.m[m][3] = True
            st.note("-" + m.hex())
        else:
            sh = SHARDS[rng.randrange(len(SHARDS))]
            m = rng.getrandbits(56).to_bytes(7, "big")
            with st.lock:
                if m in st.m:
                    continue
                st.m[m] = [sh, None, None, False]
            made = write(st, c, d, sh, "A", m, args.limit, args.ttl, sha_z)
            with st.lock:
                st.m[m][1] = time.monotonic()
                st.splits += len(made)
            st.note("+" + m.hex())
            mine.append(m)
        if args.ttl <= 3 and rng.random() < 0.002:
            time.sleep(args.ttl + 0.5)   # let tombstones this writer still uses expire


def query(c, d, sh, a, b, max_age):
    """Members of shard sh within [a, b], read bucket by bucket from d's cache. A bucket
    that split under the reader is read again as its halves; what was read stays."""
    t, x = sh
    out, pos = [], a
    for _ in range(100000):
        lo = d.get(sh, max_age)
        i = _bisect(lo, pos)
        if lo[i] > b:
            return out
        hi = lo[i + 1] if i + 1 < len(lo) else None
        r = c.call("ZRANGEBYLEX", zkey(t, x, lo[i], hi), b"[" + pos, b"[" + b)
        if isinstance(r, tuple):
            if "WRONGTYPE" not in r[1]:
                fail("ZRANGEBYLEX: %r" % (r,))
            s = c.call("GET", zkey(t, x, lo[i], hi))
            if s is None:
                d.load(sh)
            else:
                d.add(sh, s)
            continue
        out += r
        if hi is None or hi > b:
            return out
        pos = hi
    fail("a query kept meeting splits")


@guarded
def reader(port, st, stop, args, seed, counts):
    c, rng = C(port), random.Random(seed)
    d = Dir(c)
    while not stop.is_set():
        sh = SHARDS[rng.randrange(len(SHARDS))]
        p = rng.getrandbits(56).to_bytes(7, "big")[: rng.choice([0, 1, 1, 2])]
        a, b = p + b"\x00" * (7 - len(p)), p + b"\xff" * (7 - len(p))
        t0 = time.monotonic()
        with st.lock:
            snap = [(m, v[1], v[2], v[3]) for m, v in st.m.items() if v[0] == sh and a <= m <= b]
        got = query(c, d, sh, a, b, args.ttl / 3)
        t1 = time.monotonic()
        if len(set(got)) != len(got):
            fail("a member answered twice in %s [%s, %s]" % (sh, a.hex(), b.hex()))
        gs = set(got)
        for m in gs:
            if not a <= m <= b:
                fail("member %s outside the range [%s, %s]" % (m.hex(), a.hex(), b.hex()))
        with st.lock:
            for m, added, rem_start, done in snap:
                rs = st.m[m][2]
                if added is not None and added < t0 and (rs is None or rs > t1) and m not in gs:
                    fail("acknowledged member %s of shard %s missing (range %s..%s)"
                         % (m.hex(), sh, a.hex(), b.hex()))
                if done and m in gs:
                    fail("removed member %s answered" % m.hex())
        counts[0] += 1


def scan(c, pattern):
    cur, out = b"0", []
    while True:
        r = c.call("SCAN", cur, "MATCH", pattern, "COUNT", 1000)
        cur, keys = r
        out += keys
        if cur == b"0":
            return out


def verify(port, limit, log, inflight=0):
    c = C(port)
    present = {}
    for t, x in SHARDS:
        dl = c.call("ZRANGE", dkey(t, x), 0, -1)
        lo = sorted(set(dl) | {b""})
        live = {zkey(t, x, lo[i], lo[i + 1] if i + 1 < len(lo) else None): i for i in range(len(lo))}
        for k in scan(c, b"s:{%d:%02x}:*" % (t, x)):
            typ = c.call("TYPE", k)
            if k in live:
                if typ != "zset":
                    fail("live bucket %s is a %s" % (k, typ))
                i = live[k]
                hi = lo[i + 1] if i + 1 < len(lo) else None
                ms = c.call("ZRANGE", k, 0, -1)
                if len(ms) >= limit:
                    fail("bucket %s holds %d members, limit %d" % (k, len(ms), limit))
                for m in ms:
                    if len(m) != 7 or m < lo[i] or (hi is not None and m >= hi):
                        fail("member %s outside bucket %s" % (m.hex(), k))
                    present[m] = present.get(m, 0) + 1
                if c.call("OBJECT", "ENCODING", k) != b"listpack":
                    fail("bucket %s is not a listpack" % k)
            elif typ not in ("string", "none"):
                fail("key %s (%s) is neither a live bucket nor a tombstone" % (k, typ))
    if log:
        want = set()
        with open(log) as f:
            for line in f:
                m = bytes.fromhex(line[1:].strip())
                (want.add if line[0] == "+" else want.discard)(m)
        diff = len(set(present) ^ want)
        if diff > inflight or any(v != 1 for v in present.values()):
            fail("members in Redis differ from the log: %d missing, %d extra"
                 % (len(want - set(present)), len(set(present) - want)))
    nb = sum(c.call("ZCARD", dkey(*sh)) or 1 for sh in SHARDS)
    print("bucket_check: verify ok: %d members in %d buckets%s"
          % (len(present), nb, " (%d in flight)" % diff if log and inflight else ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["run", "verify"])
    ap.add_argument("port", type=int)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--limit", type=int, default=6)
    ap.add_argument("--ttl", type=int, default=3600)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--readers", type=int, default=2)
    ap.add_argument("--log")
    ap.add_argument("--inflight", type=int, default=0)
    args = ap.parse_args()
    if args.mode == "verify":
        verify(args.port, args.limit, args.log, args.inflight)
        return
    st, stop, counts = State(args.log), threading.Event(), [0]
    th = [threading.Thread(target=writer, args=(args.port, st, stop, args, 100 + i), daemon=True)
          for i in range(args.writers)]
    th += [threading.Thread(target=reader, args=(args.port, st, stop, args, 200 + i, counts), daemon=True)
           for i in range(args.readers)]
    for x in th:
        x.start()
    time.sleep(args.seconds)
    stop.set()
    for x in th:
        x.join(60)
        if x.is_alive():
            fail("a client did not stop within 60 s")
    print("bucket_check: run ok: %d members written, %d splits, %d queries checked, "
          "%d writes met an expired tombstone" % (len(st.m), st.splits, counts[0], st.gone))
    verify(args.port, args.limit, None)


if __name__ == "__main__":
    main()
