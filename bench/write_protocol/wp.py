#!/usr/bin/python3
"""bench/write_protocol/wp.py: one run of one write protocol into a fresh, empty Redis.

Writes N fingerprints (20 tables: blocks 6, distance 3), each with one document id,
into the redis-server at 127.0.0.1:PORT (started empty by run.sh), in windows of 256
fingerprints as the coordinator's write rounds do, and prints one line:

  variant=V n=N seconds=S fp_per_s=F redis_cpu_us_per_fp=C bytes_per_fp=B entries=E

redis_cpu_us_per_fp is (used_cpu_user + used_cpu_sys of INFO cpu after - before) / N,
bytes_per_fp (used_memory after - before) / N; entries counts every sorted-set member
of the database afterwards (SCAN + ZCARD, outside the measured time), which must be
20 N (the run fails otherwise: a protocol that lost writes measures nothing).

Variants (README.md says what each stands for):
  raw    20 ZADDs per fingerprint, pipelined, into fixed buckets sized like the
         elastic layout's (no scripts, no splits); table 0's member carries the id
  today  the product's scripts, common/store/lua/layout4_{lock,zsets}.lua and the
         unlocks script of common/store/layout.c, with the worker's KEYS/ARGV: per
         window a pipeline of 256 lock calls, the table writes as layout4_zsets.lua
         calls of 256 entries, one unlocks call
  a1     design (a): one a_put.lua call per fingerprint (ids + incarnation in the
         table-0 member, counters), table writes through layout4_zsets.lua with the
         incarnation byte in their members; no lock, no unlock
  a2     design (a) with the table writes as plain pipelined ZADDs, splits on demand
         (a_split.lua when the writer's count of a bucket reaches the limit)
  a2j    a2 with the pending journal: each table-0 call also records the fingerprint
         in p:{0:xx} (what a repair pass needs instead of locks), and one ZREM per
         shard and window clears it once the window's table writes are in
  lockz  today's lock and unlock scripts around a2's plain table writes: what the
         lock round trips cost alone, apart from how table entries are written

The permuted values perm_t(fp) are random 64-bit values from a seeded generator: for
random fingerprints every table's permuted value is uniform, which is all the layout
sees. Usage: wp.py PORT VARIANT N [SEED]
"""
import bisect
import os
import random
import socket
import sys
import time

TABLES = 20
WINDOW = 256
LIMIT = 256
TTL = 120
BATCH = 256            # entries per layout4_zsets.lua call, as the worker sends
HERE = os.path.dirname(os.path.abspath(__file__))
LUA = os.path.join(HERE, "..", "..", "common", "store", "lua")

# common/store/layout.c's LAYOUT_UNLOCKS_LUA, as it is
UNLOCKS = b"""if #ARGV ~= 2 * #KEYS then
  return redis.error_reply('ERR unlocks script: 2 arguments per key expected')
end
local out = {}
for i = 1, #KEYS do
  local f, t = ARGV[2 * i - 1], ARGV[2 * i]
  local cur = redis.call('HGET', KEYS[i], f)
  if cur and string.sub(cur, -(#t + 1)) == ':' .. t then
    redis.call('HDEL', KEYS[i], f)
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
"""


class RespError(Exception):
    pass


class Conn:
    """A pipelining RESP2 connection: run() sends many encoded commands at once and
    reads their replies. Its buffer is read by offset (tests/tools/simhash_e2e.py's
    reader slices its buffer at every line, too slow for replies of a whole window)."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.buf = b""
        self.pos = 0

    @staticmethod
    def enc(*args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if not isinstance(a, bytes):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def _more(self):
        d = self.s.recv(1 << 20)
        if not d:
            raise RespError("connection closed")
        self.buf = self.buf[self.pos:] + d
        self.pos = 0

    def _line(self):
        while True:
            e = self.buf.find(b"\r\n", self.pos)
            if e >= 0:
                line = self.buf[self.pos:e]
                self.pos = e + 2
                return line
            self._more()

    def _reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) - self.pos < n + 2:
                self._more()
            v = self.buf[self.pos:self.pos + n]
            self.pos += n + 2
            return v
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        if t == b"+":
            return rest
        if t == b"-":
            return RespError(rest.decode(errors="replace"))
        raise RespError("bad reply type %r" % t)

    def run(self, cmds):
        """Sends the encoded commands at once; returns their replies (errors as
        RespError objects, not raised)."""
        if not cmds:
            return []
        self.s.sendall(b"".join(cmds))
        return [self._reply() for _ in cmds]

    def call(self, *args):
        r = self.run([self.enc(*args)])[0]
        if isinstance(r, RespError):
            raise r
        return r


def info_field(conn, section, name):
    for line in conn.call("INFO", section).split(b"\r\n"):
        if line.startswith(name + b":"):
            return float(line.split(b":", 1)[1])
    raise RespError("INFO %s has no %s" % (section, name))


def cpu(conn):
    return info_field(conn, "cpu", b"used_cpu_user") + info_field(conn, "cpu", b"used_cpu_sys")


class Dirs:
    """The writer's cache of bucket directories: per (table, shard) the sorted lower
    bounds of its buckets (bytes; Python orders bytes as memcmp, ZRANGEBYLEX's)."""

    def __init__(self):
        self.b = {}

    def key(self, t, xx, m):
        bounds = self.b.setdefault((t, xx), [b""])
        i = bisect.bisect_right(bounds, m) - 1
        hi = bounds[i + 1] if i + 1 < len(bounds) else b""
        return b"s:{%d:%02x}:%s-%s" % (t, xx, bounds[i].hex().encode(), hi.hex().encode())

    def add(self, t, xx, point):
        bounds = self.b.setdefault((t, xx), [b""])
        i = bisect.bisect_left(bounds, point)
        if i == len(bounds) or bounds[i] != point:
            bounds.insert(i, point)

    def reload(self, conn, t, xx):
        got = conn.call("ZRANGE", b"r:{%d:%02x}" % (t, xx), 0, -1)
        self.b[(t, xx)] = sorted(set([b""] + list(got)))


def dirkey(t, xx):
    return b"r:{%d:%02x}" % (t, xx)


class Corpus:
    """N fingerprints: per fingerprint and table the shard byte and 7-byte member."""

    def __init__(self, n, seed):
        rng = random.Random(seed)
        raw = rng.randbytes(8 * TABLES * n)
        self.n = n
        self.raw = raw
        self.fp = [raw[8 * TABLES * i:8 * TABLES * i + 8] for i in range(n)]

    def p(self, i, t):
        o = 8 * (TABLES * i + t)
        return self.raw[o], self.raw[o + 1:o + 8]

    @staticmethod
    def docid(i):
        return b"%d" % i


def load(conn, name, lib):
    with open(name, "rb") as f:
        text = f.read()
    return conn.call("SCRIPT", "LOAD", lib + b"\n" + text if lib else text)


def zsets_round(conn, dirs, sha, items):
    """Table writes of items [(t, xx, member)] through layout4_zsets.lua, BATCH a call,
    following its replies as the worker does (split points into the cache; a call
    answered -3 runs again after its directory is read)."""
    enc = Conn.enc
    chunks = [items[i:i + BATCH] for i in range(0, len(items), BATCH)]
    for _ in range(20):
        if not chunks:
            return
        cmds = []
        for ch in chunks:
            keys = []
            for t, xx, m in ch:
                keys.append(dirs.key(t, xx, m))
                keys.append(dirkey(t, xx))
            cmds.append(enc(b"EVALSHA", sha, len(keys), *keys, b"A", LIMIT, TTL,
                            *[m for _, _, m in ch]))
        again = []
        for ch, r in zip(chunks, conn.run(cmds)):
            if isinstance(r, RespError):
                raise r
            if r[0] == -3:
                t, xx, _ = ch[r[1] - 1]
                dirs.reload(conn, t, xx)
                again.append(ch)
                continue
            for part in r[1:]:
                t, xx, _ = ch[part[0] - 1]
                pts = part[1] if len(part) == 2 and isinstance(part[1], list) else part[1:]
                for s in pts:
                    dirs.add(t, xx, s)
        chunks = again
    raise RespError("table writes did not settle in 20 rounds")


def t0_round(conn, dirs, c, ids, make, on_ok):
    """One call per fingerprint of ids on its table-0 bucket (make(i, key) encodes
    it), pipelined, again for those whose bucket had split ({-1, point}: the point goes
    into the cache; {-2}: the directory is read); on_ok(i, reply) for the others."""
    todo = list(ids)
    for _ in range(20):
        if not todo:
            return
        cmds = []
        for i in todo:
            xx, m = c.p(i, 0)
            cmds.append(make(i, xx, m, dirs.key(0, xx, m)))
        again = []
        for i, r in zip(todo, conn.run(cmds)):
            if isinstance(r, RespError):
                raise r
            xx, _ = c.p(i, 0)
            if r[0] == -1:
                dirs.add(0, xx, r[1])
                again.append(i)
            elif r[0] == -2:
                dirs.reload(conn, 0, xx)
                again.append(i)
            elif r[0] == 1:
                on_ok(i, r)
            else:
                raise RespError("table-0 call answered %r" % (r,))
        todo = again
    raise RespError("table-0 calls did not settle in 20 rounds")


def v_raw(conn, c):
    enc = Conn.enc
    bits = 0
    while c.n / (256 << bits) > LIMIT:
        bits += 1
    for w in range(0, c.n, WINDOW):
        cmds = []
        for i in range(w, min(w + WINDOW, c.n)):
            for t in range(TABLES):
                xx, m = c.p(i, t)
                sub = m[0] >> (8 - bits) if bits else 0
                if t == 0:
                    d = c.docid(i)
                    m = m + bytes([len(d)]) + d
                cmds.append(enc(b"ZADD", b"s:{%d:%02x}:f%d" % (t, xx, sub), b"0", m))
        for r in conn.run(cmds):
            if isinstance(r, RespError):
                raise r


def v_today(conn, c, lib, plain=False):
    enc = Conn.enc
    lock = load(conn, os.path.join(LUA, "layout4_lock.lua"), lib)
    zsets = load(conn, os.path.join(LUA, "layout4_zsets.lua"), lib)
    unlocks = conn.call("SCRIPT", "LOAD", UNLOCKS)
    split = load(conn, os.path.join(HERE, "a_split.lua"), lib)
    dirs, size = Dirs(), {}
    token = b"c1w%x" % os.getpid()

    def make(i, xx, m, key):
        fh = c.fp[i].hex().encode()
        return enc(b"EVALSHA", lock, 5, key, b"d:{0:%02x}:%s" % (xx, fh), b"w:{0:%02x}" % xx,
                   b"c:{0:%02x}" % xx, dirkey(0, xx), fh, token, b"5000", b"A", m,
                   LIMIT, TTL, c.docid(i))

    for w in range(0, c.n, WINDOW):
        win = range(w, min(w + WINDOW, c.n))
        locked = []
        t0_round(conn, dirs, c, win, make, lambda i, r: locked.append(i))
        items = [(t,) + c.p(i, t) for i in locked for t in range(1, TABLES)]
        if plain:
            plain_round(conn, dirs, split, size, items)
        else:
            zsets_round(conn, dirs, zsets, items)
        keys = [b"w:{0:%02x}" % c.p(i, 0)[0] for i in locked]
        args = []
        for i in locked:
            args += [c.fp[i].hex().encode(), token]
        r = conn.call(b"EVALSHA", unlocks, len(keys), *keys, *args)
        if sum(r) != len(locked):
            raise RespError("unlocks answered %d of %d" % (sum(r), len(locked)))


def a_t0(conn, c, lib, dirs, win, journal=False):
    """Design (a)'s table-0 calls of a window (journal: each also records the
    fingerprint in its shard's pending journal p:{0:xx}); returns {i: incarnation}."""
    enc = Conn.enc
    inc = {}

    def make(i, xx, m, key):
        if journal:
            return enc(b"EVALSHA", a_t0.sha, 4, key, b"c:{0:%02x}" % xx, dirkey(0, xx),
                       b"p:{0:%02x}" % xx, m, LIMIT, TTL, c.docid(i), c.fp[i].hex())
        return enc(b"EVALSHA", a_t0.sha, 3, key, b"c:{0:%02x}" % xx, dirkey(0, xx), m,
                   LIMIT, TTL, c.docid(i))

    def ok(i, r):
        inc[i] = r[1]
        for s in r[3:]:
            dirs.add(0, c.p(i, 0)[0], s)

    t0_round(conn, dirs, c, win, make, ok)
    return inc


def a_items(c, inc):
    """Design (a)'s table entries [(t, xx, member + incarnation byte)] of {i: inc}."""
    return [(t,) + c.p(i, t)[:1] + (c.p(i, t)[1] + bytes([v]),)
            for i, v in inc.items() for t in range(1, TABLES)]


def v_a1(conn, c, lib):
    a_t0.sha = load(conn, os.path.join(HERE, "a_put.lua"), lib)
    zsets = load(conn, os.path.join(LUA, "layout4_zsets.lua"), lib)
    dirs = Dirs()
    for w in range(0, c.n, WINDOW):
        items = a_items(c, a_t0(conn, c, lib, dirs, range(w, min(w + WINDOW, c.n))))
        zsets_round(conn, dirs, zsets, items)


def plain_round(conn, dirs, split, size, items):
    """Table writes of items [(t, xx, member)] as plain pipelined ZADDs; a bucket whose
    count (size: key -> members, exact for a lone writer, a hint for many) reaches the
    limit gets one a_split.lua call, whose reply makes the counts exact again."""
    enc = Conn.enc
    for _ in range(20):
        if not items:
            return
        keys = [dirs.key(t, xx, m) for t, xx, m in items]
        rs = conn.run([enc(b"ZADD", k, b"0", it[2]) for k, it in zip(keys, items)])
        again, full = [], {}
        for k, it, r in zip(keys, items, rs):
            if isinstance(r, RespError):      # a tombstone: another writer split it
                dirs.reload(conn, it[0], it[1])
                again.append(it)
                continue
            size[k] = size.get(k, 0) + r
            if size[k] >= LIMIT:
                full[k] = it
        fk = list(full)
        rs = conn.run([enc(b"EVALSHA", split, 2, k, dirkey(full[k][0], full[k][1]),
                           LIMIT, TTL) for k in fk])
        for k, r in zip(fk, rs):
            t, xx, _ = full[k]
            if isinstance(r, RespError):
                raise r
            if r[0] in (-1, -2):
                dirs.reload(conn, t, xx)
                continue
            for s in r[0]:
                dirs.add(t, xx, s)
            del size[k]
            for j in range(0, len(r[1]), 2):
                size[r[1][j]] = r[1][j + 1]
        items = again
    raise RespError("table writes did not settle in 20 rounds")


def v_a2(conn, c, lib, journal=False):
    a_t0.sha = load(conn, os.path.join(HERE, "a_put.lua"), lib)
    split = load(conn, os.path.join(HERE, "a_split.lua"), lib)
    dirs, size = Dirs(), {}
    for w in range(0, c.n, WINDOW):
        win = range(w, min(w + WINDOW, c.n))
        inc = a_t0(conn, c, lib, dirs, win, journal)
        plain_round(conn, dirs, split, size, a_items(c, inc))
        if journal:      # the window's table writes are in: one ZREM per shard
            done = {}
            for i in inc:
                done.setdefault(c.p(i, 0)[0], []).append(c.fp[i].hex().encode())
            for r in conn.run([Conn.enc(b"ZREM", b"p:{0:%02x}" % xx, *fps)
                               for xx, fps in done.items()]):
                if isinstance(r, RespError):
                    raise r


def count_entries(conn):
    cursor, total, rounds = b"0", 0, 0
    while True:
        rounds += 1
        if rounds > 10_000_000:
            raise RespError("SCAN did not end")
        cursor, keys = conn.call("SCAN", cursor, "COUNT", 1000, "TYPE", "zset")
        keys = [k for k in keys if k.startswith(b"s:")]
        for r in conn.run([Conn.enc(b"ZCARD", k) for k in keys]):
            total += r
        if cursor == b"0":
            return total


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: wp.py PORT raw|today|lockz|a1|a2|a2j N [SEED]")
    port, variant, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    fn = {"raw": v_raw, "today": v_today, "a1": v_a1, "a2": v_a2,
          "lockz": lambda conn, c, lib: v_today(conn, c, lib, plain=True),
          "a2j": lambda conn, c, lib: v_a2(conn, c, lib, journal=True)}.get(variant)
    if fn is None or not 1 <= n <= 50_000_000:
        sys.exit("wp.py: unknown variant %r or N out of 1..50000000" % variant)
    with open(os.path.join(LUA, "layout4_lib.lua"), "rb") as f:
        lib = f.read()
    c = Corpus(n, seed)
    conn = Conn(port)
    m0, c0, t0 = info_field(conn, "memory", b"used_memory"), cpu(conn), time.monotonic()
    if variant == "raw":
        fn(conn, c)
    else:
        fn(conn, c, lib)
    t1, c1, m1 = time.monotonic(), cpu(conn), info_field(conn, "memory", b"used_memory")
    entries = count_entries(conn)
    print("variant=%s n=%d seconds=%.2f fp_per_s=%.0f redis_cpu_us_per_fp=%.1f "
          "bytes_per_fp=%.1f entries=%d" % (variant, n, t1 - t0, n / (t1 - t0),
                                            (c1 - c0) * 1e6 / n, (m1 - m0) / n, entries))
    if entries != TABLES * n:
        sys.exit("wp.py: %d entries stored, %d expected" % (entries, TABLES * n))


if __name__ == "__main__":
    main()
