"""tests/tools/shard_batch_check.py: the batched write commands of simhash-shard
(SHARD.MLOCK, SHARD.MUNLOCK, SHARD.MADD, SHARD.MDEL; docs/protocol.md, "Batched
writes") against two real workers on one redis-server (tiny split limit).
  bad     malformed and oversized batches: each answered with an error, nothing written
  busy    a lock held by another writer in the middle of a batch: only that fingerprint
          answers busy; the others are locked, written and released
  split   buckets split in the middle of batches (worker B splits what worker A's cache
          still knows whole; batches sharing buckets): every fingerprint is locked
          (those answered busy go round again alone), written and released, and the
          coordinator in front of A finds each at distance 0
  follow  layout4_zsets.lua itself: one call whose entries share a bucket that its
          first entries split (limit 2): every later entry lands in the half holding
          it, the call succeeds at once and counts every member
  stale   layout4_zsets.lua called with bucket keys of a directory older than splits
          (after follow): each entry follows the tombstones to the live half holding
          it, the call writes at once and reports the split points it followed; a
          key whose tombstone expired (absent, not live) answers {-3, i, {-2}} and
          writes nothing
Usage: shard_batch_check.py MODE REDIS_PORT WORKER_A WORKER_B COORD LIMIT"""
import os
import random
import sys

from resp_client import C
from bucket_check import dkey, script, zkey

TABLES = 20
WRITTEN = TABLES - 1    # entries a MADD writes: table 0's entry is the ids, the lock's


def fail(msg):
    print("shard_batch_check: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def err(r):
    return isinstance(r, tuple) and r[0] == "ERR"


def bad(a, r):
    cases = [
        (["SHARD.MLOCK", "x", "1", "t", "A", "1", "d"], "lease"),
        (["SHARD.MLOCK", "1000", "1", "t", "Q", "0"], "lock operation"),
        (["SHARD.MLOCK", "1000", "1", "t", "A", "0"], "lock operation"),
        (["SHARD.MLOCK", "1000", "1", "t", "X", "1", "d"], "lock operation"),
        (["SHARD.MLOCK", "1000", "1", "t", "A", "5", "d"], "count"),
        (["SHARD.MLOCK", "1000", "1", "t:x", "A", "1", "d"], "token"),
        (["SHARD.MLOCK", "1000", "1", "t", "A", "1", "d", "2", "t2"], "expected"),
        (["SHARD.MLOCK", "1000", "1", "t", "A", "1", ""], "empty"),
        (["SHARD.MLOCK", "1000", "nan", "t", "A", "1", "d"], "fingerprint"),
        (["SHARD.MUNLOCK", "1", "t", "2"], "expected"),
        (["SHARD.MUNLOCK", "1", "t", "2", ""], "token"),
        (["SHARD.MUNLOCK"] + ["1", "t"] * 4097, "more than"),
        (["SHARD.MADD", "1", "0", "3"], "ntables"),
        (["SHARD.MADD", "1", "2", "3"], "ntables"),
        (["SHARD.MADD", "1", "1", "99"], "table"),
        (["SHARD.MADD", "1", "1", "3", "2"], "expected"),
        (["SHARD.MDEL", "x", "1", "3"], "fingerprint"),
        (["SHARD.MADD"] + ["1", "1", "0"] * 4097, "more than"),
    ]
    for args, want in cases:
        got = a.call(*args)
        if not err(got) or want not in got[1]:
            fail("%s ...: want an error naming %r, got %r" % (" ".join(args[:7]), want, got))
    for pat in (b"s:{*", b"w:{*", b"h:{*"):
        if r.call("SCAN", "0", "MATCH", pat, "COUNT", 100000)[1]:
            fail("a malformed batch wrote %s keys" % pat)
    print("bad: %d malformed batches answered with errors, nothing written" % len(cases))


def tables():
    return [str(t) for t in range(TABLES)]


def madd(w, fps, cmd="SHARD.MADD"):
    args = [cmd]
    for fp in fps:
        args += [str(fp), str(TABLES)] + tables()
    got = w.call(*args)
    if not isinstance(got, int):
        fail("%s of %d fingerprints: %r" % (cmd, len(fps), got))
    return got


def mlock(w, items, lease=30000):
    """items: (fp, token, op, ids); returns the per-fingerprint replies."""
    args = ["SHARD.MLOCK", str(lease)]
    for fp, tok, op, ids in items:
        args += [str(fp), tok, op, str(len(ids))] + ids
    got = w.call(*args)
    if not isinstance(got, list) or len(got) != len(items):
        fail("SHARD.MLOCK of %d: %r" % (len(items), got))
    return got


def busy(a):
    rng = random.Random(1)
    fa, fb, fc = (rng.getrandbits(64) for _ in range(3))
    for _ in range(50):     # [0, 0]: a first call answered NOSCRIPT; sent again whole
        held = mlock(a, [(fb, "other", "A", ["held"])])
        if held[0] != [0, 0]:
            break
    if held[0][:3] != [1, 0, 1]:
        fail("the other writer's lock: %r" % held)
    got = mlock(a, [(fa, "t1", "A", ["ida"]), (fb, "t2", "A", ["idb"]), (fc, "t3", "A", ["idc"])],
                lease=5000)
    if got[0][:3] != [1, 0, 1] or got[2][:3] != [1, 0, 1]:
        fail("fingerprints beside a busy one not locked: %r" % got)
    if got[1][0] != 0 or len(got[1]) != 2 or got[1][1] <= 0:
        fail("the busy fingerprint: want [0, ms left], got %r" % got[1])
    if madd(a, [fa, fc]) != 2 * WRITTEN:
        fail("entries of the two locked fingerprints not all added")
    rel = a.call("SHARD.MUNLOCK", str(fa), "t1", str(fb), "t2", str(fc), "t3")
    if rel != [1, 0, 1]:
        fail("SHARD.MUNLOCK: want [1, 0, 1] (the busy one not ours), got %r" % rel)
    docs = a.call("SHARD.DOCS", str(fa), str(fb), str(fc))
    if docs != [[b"ida"], [b"held"], [b"idc"]]:
        fail("document sets after the batch: %r" % docs)
    if a.call("SHARD.MUNLOCK", str(fb), "other") != [1]:
        fail("the other writer lost its lock")
    if madd(a, [fa], "SHARD.MDEL") != WRITTEN:
        fail("SHARD.MDEL did not remove the entries of one fingerprint")
    madd(a, [fa])
    print("busy: one fingerprint busy in a batch of 3; the other two written and released")


def write_batch(w, fps, tag):
    """Locks (retrying those answered busy, alone), writes and releases fps."""
    todo, held, rounds, waits = list(fps), {}, 0, 0
    while todo:
        rounds += 1
        if rounds > 200:
            fail("%d fingerprints still not locked after 200 rounds" % len(todo))
        items = [(fp, "%s.%x.%d" % (tag, fp, rounds), "A", ["id-%x" % fp]) for fp in todo]
        got = mlock(w, items)
        nxt = []
        for (fp, tok, _, _), r in zip(items, got):
            if r[0] == 1:
                held[fp] = tok
            else:
                nxt.append(fp)
                waits += 1
        todo = nxt
    madd(w, fps)
    args = ["SHARD.MUNLOCK"]
    for fp in fps:
        args += [str(fp), held[fp]]
    if w.call(*args) != [1] * len(fps):
        fail("a lock of the batch was lost")
    return waits


def split(a, b, coord):
    rng = random.Random(2)
    fps = [rng.getrandbits(64) for _ in range(800)]
    waits = write_batch(a, fps[:50], "a0")              # A's directories cached
    for i in range(50, 450, 100):
        waits += write_batch(b, fps[i:i + 100], "b")    # B splits what A knows
    for i in range(450, 800, 175):
        waits += write_batch(a, fps[i:i + 175], "a1")   # A meets the splits
    missing = 0
    for fp in fps:
        got = coord.call("SIMHASH.QUERY", str(fp), "DISTANCE", "0")
        if ("id-%x" % fp).encode() not in repr(got).encode():
            missing += 1
    if missing:
        fail("%d of %d fingerprints written in batches not found at distance 0" % (missing, len(fps)))
    print("split: %d fingerprints written in batches, all found; %d lock answers were "
          "busy (split under them) and went round again" % (len(fps), waits))


def follow(r):
    """Six members of one bucket of table 1 in one zsets call (limit 2): the first
    two fill and split it, and each later one must follow the split points."""
    text = script("layout4_zsets.lua")
    ms = [bytes([i * 40]) + bytes(6) for i in range(6)]      # members: 7 bytes
    keys, argv = [], ["A", 2, 60]
    for m in ms:
        keys += [zkey(1, 0x42, b"", None), dkey(1, 0x42)]
        argv += [m]
    got = r.call("EVAL", text, len(keys), *keys, *argv)
    if not isinstance(got, list) or got[0] != len(ms):
        fail("zsets call of %d members sharing a bucket: %r" % (len(ms), got))
    if len(got) < 2:
        fail("no split reported by a call that filled a bucket of limit 2: %r" % got)
    bounds = sorted(set(r.call("ZRANGE", dkey(1, 0x42), 0, -1)) | {b""})
    seen = []
    for i, lo in enumerate(bounds):
        hi = bounds[i + 1] if i + 1 < len(bounds) else None
        k = zkey(1, 0x42, lo, hi)
        mem = r.call("ZRANGE", k, 0, -1)
        if len(mem) >= 2:
            fail("bucket %s holds %d members, limit 2" % (k, len(mem)))
        for m in mem:
            if m < lo or (hi is not None and m >= hi):
                fail("member %s outside bucket %s" % (m.hex(), k))
        seen += mem
    if sorted(seen) != sorted(ms):
        fail("members after the call: %r, want %r" % (sorted(seen), sorted(ms)))
    print("follow: %d members of one bucket in one call, %d buckets after its splits"
          % (len(ms), len(bounds)))


def stale(r):
    """After follow: bucket 1:0x42 has split into several buckets. A call using the
    shard's first key (whole, a tombstone now) for new members must follow the split
    points, write every member into the live bucket holding it and report the points
    followed as a part {i, {points...}}."""
    text = script("layout4_zsets.lua")
    bounds = sorted(set(r.call("ZRANGE", dkey(1, 0x42), 0, -1)) | {b""})
    if len(bounds) < 3:
        fail("stale: bucket 1:42 has only %d buckets after follow" % len(bounds))
    ms = [bytes([i * 40 + 7]) + bytes(6) for i in range(6)]  # new members, none equal
    keys, argv = [], ["A", 1000, 60]
    for m in ms:
        keys += [zkey(1, 0x42, b"", None), dkey(1, 0x42)]
        argv += [m]
    got = r.call("EVAL", text, len(keys), *keys, *argv)
    if not isinstance(got, list) or got[0] != len(ms):
        fail("stale: zsets call on a split bucket's old key: %r" % (got,))
    parts = got[1:]
    if len(parts) != len(ms) or any(p[0] != i + 1 or not isinstance(p[1], list) or not p[1]
                                    for i, p in enumerate(parts)):
        fail("stale: want one part {i, {points}} per item, got %r" % (parts,))
    for i, p in enumerate(parts):
        if any(pt not in bounds for pt in p[1]):
            fail("stale: item %d reports points %r not in the directory %r" % (i + 1, p[1], bounds))
    for i, lo in enumerate(bounds):
        hi = bounds[i + 1] if i + 1 < len(bounds) else None
        for m in ms:
            if m >= lo and (hi is None or m < hi):
                if r.call("ZSCORE", zkey(1, 0x42, lo, hi), m) is None:
                    fail("stale: member %s not in its live bucket %s" % (m.hex(), lo.hex()))
    # the shard's first key again, its tombstone expired (deleted): absent, no live bucket
    stone = zkey(1, 0x42, b"", None)
    if r.call("TYPE", stone) != "string":
        fail("stale: %s is not a tombstone: %r" % (stone, r.call("TYPE", stone)))
    r.call("DEL", stone)
    got = r.call("EVAL", text, 2, stone, dkey(1, 0x42), "A", 1000, 60, bytes(7))
    if got != [-3, 1, [-2]]:
        fail("stale: zsets call on an absent key that is no live bucket: %r" % (got,))
    if r.call("EXISTS", stone) != 0:
        fail("stale: the call that answered {-2} wrote %s" % stone)
    print("stale: %d members written through a split bucket's old key, points reported; "
          "an expired tombstone answered {-3, 1, {-2}}" % len(ms))


def main():
    mode, rport, pa, pb, pc = sys.argv[1], *map(int, sys.argv[2:6])
    r, a = C(rport), C(pa, timeout=60)
    if mode == "bad":
        bad(a, r)
    elif mode == "busy":
        busy(a)
    elif mode == "follow":
        follow(r)
    elif mode == "stale":
        stale(r)
    elif mode == "split":
        split(a, C(pb, timeout=60), C(pc, timeout=60))
    else:
        fail("unknown mode " + mode)


if __name__ == "__main__":
    main()
