"""tests/tools/ids_check.py: document ids through a deployment and straight from its
Redis, for tests/integration/test_ids.sh (stdlib only).

  ids COORD_PORT REDIS_PORT [--corpus NAME]
      many ids per fingerprint (600 on one, added in batches, some removed), long ids
      (65..4096 bytes), ids with newline, CR and 0xff bytes (NUL bytes and longer ids
      refused), the move of a
      fingerprint's ids from its table-0 member to its overflow set and back to nothing,
      and the counters of SIMHASH.INFO; every query answer compared with a model.
  isolate PORT_A PORT_B
      two coordinators of two corpora on shared Redis nodes: the same fingerprints
      with other ids in each; each sees only its own."""
import random
import sys

from resp_client import C


# The packed ids of a fingerprint live after the 7 bytes of its table-0 member
# (common/store/layout4.c) until they outgrow LAYOUT4_INLINE_MAX bytes, then in an
# overflow set d:{0:xx}:<fp>.
INLINE_MAX = 57


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def ids_of(c, fp):
    """The ids SIMHASH.QUERY fp DISTANCE 0 answers for fp (sorted bytewise by the
    server), or [] when fp is not found."""
    r = c.call("SIMHASH.QUERY", fp, "DISTANCE", 0)
    if isinstance(r, tuple):
        fail("QUERY %d: %s" % (fp, r[1]))
    if not r:
        return []
    if len(r) != 1 or int(r[0][0]) != fp or r[0][1] != 0:
        fail("QUERY %d: unexpected %r" % (fp, r[:2]))
    return r[0][2]


def check(c, model, tag):
    for fp, want in model.items():
        got = ids_of(c, fp)
        if got != sorted(want):
            fail("%s: fingerprint %d: %d ids, want %d (first diff %r)" % (
                tag, fp, len(got), len(want),
                next((x for x in zip(got, sorted(want)) if x[0] != x[1]), None)))


def info(c):
    txt = c.call("SIMHASH.INFO").decode()
    return dict(l.split(":", 1) for l in txt.split("\r\n") if ":" in l)


def add(c, fp, ids):
    args = []
    for i in ids:
        args += [fp, i]
    r = c.call("SIMHASH.ADD", *args)
    if isinstance(r, tuple):
        fail("ADD: %s" % r[1])
    return r


def cmd_ids(a):
    cport, rport = int(a[0]), int(a[1])
    corpus = a[a.index("--corpus") + 1] if "--corpus" in a else ""
    pre = (corpus + ":").encode() if corpus else b""
    c, r = C(cport), C(rport)
    rng = random.Random(13)
    model = {}
    # many ids on one fingerprint, in batches of 100, with repeats
    many = rng.getrandbits(64)
    model[many] = set()
    for b in range(6):
        batch = [b"doc-%d" % (b * 100 + i) for i in range(100)]
        n = add(c, many, batch + batch[:10])
        if n != 100:
            fail("ADD of 100 new ids (+10 repeats) answered %r" % n)
        model[many] |= set(batch)
    check(c, model, "600 ids")
    # remove 250 of them, one DEL each (some twice)
    for i in range(0, 500, 2):
        d = b"doc-%d" % i
        n = c.call("SIMHASH.DEL", many, d)
        if n != 1:
            fail("DEL of a stored id answered %r" % (n,))
        model[many].discard(d)
    if c.call("SIMHASH.DEL", many, b"doc-0") != 0:
        fail("DEL of a removed id did not answer 0")
    check(c, model, "350 ids")
    # long ids and awkward bytes, alone on a fingerprint and mixed
    # (ids are 1..4096 bytes without a NUL byte: the one rule of every tool)
    odd = [b"a\x01b", b"\n", b"line1\nline2\r\n", b"\x7f", b"\xff\xfe\x01\n",
           b"x" * 65, b"y" * 200, bytes(range(1, 256)) * 4, b"z" * 4096]
    for bad in (b"a\x00b", b"\x00", b"z" * 4097):
        rep = c.call("SIMHASH.ADD", rng.getrandbits(64), bad)
        if not (isinstance(rep, tuple) and rep[0] == "ERR"):
            fail("ADD of an id of %d bytes%s answered %r, want an error"
                 % (len(bad), " with a NUL byte" if b"\x00" in bad else "", rep))
    for i, d in enumerate(odd):
        fp = rng.getrandbits(64)
        add(c, fp, [d])
        model[fp] = {d}
    mixed = rng.getrandbits(64)
    add(c, mixed, odd)
    model[mixed] = set(odd)
    check(c, model, "long and binary ids")
    # a fingerprint growing past the member's 57 bytes of ids and shrinking to nothing
    grow = rng.getrandbits(64)
    model[grow] = set()
    for i in range(12):
        d = b"https://example.org/%02d" % i   # 23 packed: past 57 at the third
        add(c, grow, [d])
        model[grow].add(d)
        check(c, {grow: model[grow]}, "growing, %d ids" % (i + 1))
    p0key = [k for k in r.call("KEYS", pre + b"d:{0:*") if k.endswith(b"%016x" % grow)]
    if len(p0key) != 1:
        fail("no overflow set for a fingerprint with 12 ids of 22 bytes: %r" % p0key)
    for d in sorted(model[grow]):
        if c.call("SIMHASH.DEL", grow, d) != 1:
            fail("DEL of an id of the overflow set did not answer 1")
    model[grow] = set()
    if ids_of(c, grow):
        fail("a fingerprint without ids is still found")
    # DEL without docid on a packed and on an overflowed fingerprint
    for fp in (mixed, many):
        n = c.call("SIMHASH.DEL", fp)
        if n != len(model[fp]):
            fail("DEL fp answered %r, want %d" % (n, len(model[fp])))
        model[fp] = set()
    check(c, model, "after DEL fp")
    gone = {b"%016x" % fp for fp in (grow, mixed, many)}
    left = [k for k in r.call("KEYS", pre + b"d:*") if k[-16:] in gone]
    if left:
        fail("document sets left behind by deleted fingerprints: %r" % left[:3])
    # the overflow sets left are those of the ids too long for the member
    want = sum(1 for v in model.values() if v and sum(len(d) + (1 if len(d) < 128 else 2 if len(d) < 16384 else 3) for d in v) > INLINE_MAX)
    have = len(r.call("KEYS", pre + b"d:*"))
    if have != want:
        fail("%d overflow sets, want %d" % (have, want))
    inf = info(c)
    fps = sum(1 for v in model.values() if v)
    docs = sum(len(v) for v in model.values())
    if int(inf["fingerprints"]) != fps or int(inf["documents"]) != docs:
        fail("SIMHASH.INFO fingerprints %s documents %s, want %d %d" % (
            inf["fingerprints"], inf["documents"], fps, docs))
    bpf = inf.get("bytes_per_fingerprint", "")
    used = int(inf.get("redis_used_memory", "0"))
    if fps == 0 or abs(float(bpf) - used / fps) > 1:
        fail("SIMHASH.INFO bytes_per_fingerprint %r, redis_used_memory %d, %d fingerprints" % (
            bpf, used, fps))
    if inf.get("layout") != "4":
        fail("SIMHASH.INFO layout %r, want 4" % (inf.get("layout"),))
    print("ids: %d fingerprints, %d ids checked%s" % (
        len(model), docs, ", corpus " + corpus if corpus else ""))


def cmd_isolate(a):
    ca, cb = C(int(a[0])), C(int(a[1]))
    ia0, ib0 = info(ca), info(cb)
    rng = random.Random(7)
    fps = [rng.getrandbits(64) for _ in range(300)]
    for fp in fps:
        add(ca, fp, [b"a-%d" % fp])
        add(cb, fp, [b"b-%d" % fp, b"b2-%d" % fp])
    extra = rng.getrandbits(64)
    add(ca, extra, [b"only-a"])
    for fp in fps:
        if ids_of(ca, fp) != [b"a-%d" % fp]:
            fail("corpus A sees %r for %d" % (ids_of(ca, fp), fp))
        if ids_of(cb, fp) != sorted([b"b-%d" % fp, b"b2-%d" % fp]):
            fail("corpus B sees %r for %d" % (ids_of(cb, fp), fp))
    if ids_of(cb, extra):
        fail("corpus B sees a fingerprint only A stored")
    ia, ib = info(ca), info(cb)

    def grew(i1, i0, k):
        return int(i1[k]) - int(i0[k])
    if (grew(ia, ia0, "fingerprints"), grew(ia, ia0, "documents")) != (301, 301):
        fail("corpus A counts grew by %d %d, want 301 301" % (
            grew(ia, ia0, "fingerprints"), grew(ia, ia0, "documents")))
    if (grew(ib, ib0, "fingerprints"), grew(ib, ib0, "documents")) != (300, 600):
        fail("corpus B counts grew by %d %d, want 300 600" % (
            grew(ib, ib0, "fingerprints"), grew(ib, ib0, "documents")))
    # deleting in A leaves B alone
    for fp in fps[:100]:
        ca.call("SIMHASH.DEL", fp)
    for fp in fps[:100]:
        if ids_of(ca, fp) or len(ids_of(cb, fp)) != 2:
            fail("DEL in corpus A reached corpus B (%d)" % fp)
    print("isolate: 300 shared fingerprints, each corpus sees its own")


if __name__ == "__main__":
    {"ids": cmd_ids, "isolate": cmd_isolate}[sys.argv[1]](sys.argv[2:])
