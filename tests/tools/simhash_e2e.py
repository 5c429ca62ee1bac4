#!/usr/bin/env python3
"""simhash_e2e.py: end-to-end test driver for distributed mode (python3 stdlib only).

Talks RESP to simhash-coordinator, keeps a brute-force model of what was stored
(fingerprint -> document ids) and checks every answer against it: no match
missed, none extra, distances, document ids, order (nearest first, then by
fingerprint). The model is saved to / loaded from a JSON state file so that the
shell tests can restart daemons between steps.

Subcommands (all take --port, the coordinator's port, on --host, default 127.0.0.1):
  load        plant a corpus (random bases, copies with 1..k+2 flipped bits,
              shared fingerprints) with pipelined SIMHASH.ADD; --state-out FILE
  verify      query every stored fingerprint and near misses; DISTANCE d < k,
              LIMIT, DISTANCE > k refused; --state FILE
  lifecycle   deletions, re-inserts, shared fingerprints; --state, --state-out
  expect-down queries while a shard worker is unavailable: error replies in time,
              never a smaller answer; --timeout-ms
  wait-ok     poll until answers are correct again; --within SECS
  protocol    pipelining, 1-byte writes, inline commands, bad input
  probe       for --seconds, one query at a time (stored fingerprints and near
              misses): each answer must be complete and right, or an error reply,
              within 2x --timeout-ms (never a hang); prints the counts; with
              --want-complete an error reply fails too
Exit status 0 when every check passed, 1 otherwise (the first lines of output
name what failed).
"""

import argparse
import json
import random
import socket
import sys
import time

MASK64 = (1 << 64) - 1


# ---- RESP client -------------------------------------------------------------

class Err:
    """An error reply (-PREFIX text)."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return "Err(%r)" % self.text

    def prefix(self):
        return self.text.split(" ", 1)[0]


class ConnClosed(Exception):
    pass


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if not isinstance(a, bytes):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    def __init__(self, port, host="127.0.0.1", timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.batch = 200            # commands per pipelined write
        self.timeout_retries = 0    # pipeline: times a -TIMEOUT answer is asked again

    def close(self):
        self.sock.close()

    def settimeout(self, t):
        self.sock.settimeout(t)

    def send_raw(self, data):
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnClosed("connection closed by server")
        self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                return line
            self._fill()

    def read_reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return Err(rest.decode(errors="replace"))
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if t == b"*":
            n = int(rest)
            if n < 0:
                return None
            return [self.read_reply() for _ in range(n)]
        raise ValueError("bad RESP type byte in %r" % line[:60])

    def command(self, *args):
        self.send_raw(encode(args))
        return self.read_reply()

    def _send(self, cmds, batch):
        replies = []
        for i in range(0, len(cmds), batch):
            part = cmds[i:i + batch]
            self.send_raw(b"".join(encode(c) for c in part))
            replies.extend(self.read_reply() for _ in part)
        return replies

    def pipeline(self, cmds, batch=None):
        batch = batch or self.batch
        replies = self._send(cmds, batch)
        # read-only callers may ask for -TIMEOUT answers to be asked again: a deadline a
        # busy machine missed says nothing of the answers' exactness (still checked)
        for _ in range(self.timeout_retries):
            again = [i for i, r in enumerate(replies)
                     if isinstance(r, Err) and r.text.startswith("TIMEOUT")]
            if not again:
                break
            time.sleep(0.2)
            for i, r in zip(again, self._send([cmds[i] for i in again], batch)):
                replies[i] = r
        return replies


# ---- model -------------------------------------------------------------------

class Model:
    def __init__(self, blocks, distance):
        self.blocks = blocks
        self.distance = distance
        self.docs = {}          # fp -> set of document ids (str)

    def add(self, fp, doc):
        s = self.docs.setdefault(fp, set())
        if doc in s:
            return 0
        s.add(doc)
        return 1

    def delete(self, fp, doc=None):
        s = self.docs.get(fp)
        if s is None:
            return 0
        if doc is None:
            n = len(s)
            del self.docs[fp]
            return n
        if doc not in s:
            return 0
        s.remove(doc)
        if not s:
            del self.docs[fp]
        return 1

    def query(self, q, d):
        res = []
        for fp, docs in self.docs.items():
            dist = (fp ^ q).bit_count()
            if dist <= d:
                res.append((dist, fp, frozenset(docs)))
        res.sort(key=lambda r: (r[0], r[1]))
        return [(fp, dist, docs) for dist, fp, docs in res]

    def save(self, path, extra=None):
        data = {"blocks": self.blocks, "distance": self.distance,
                "docs": {str(fp): sorted(d) for fp, d in self.docs.items()},
                "extra": extra or {}}
        with open(path, "w") as f:
            json.dump(data, f)

    @staticmethod
    def load(path):
        with open(path) as f:
            data = json.load(f)
        m = Model(data["blocks"], data["distance"])
        m.docs = {int(fp): set(d) for fp, d in data["docs"].items()}
        return m, data.get("extra", {})


class Checker:
    """Counts failures; prints the first few of each kind."""

    def __init__(self):
        self.failures = 0
        self.checks = 0
        self.shown = {}

    def ok(self, cond, kind, msg):
        self.checks += 1
        if cond:
            return True
        self.failures += 1
        n = self.shown.get(kind, 0)
        if n < 5:
            print("FAIL %s: %s" % (kind, msg), flush=True)
        self.shown[kind] = n + 1
        return False

    def finish(self, what):
        kinds = ", ".join("%s %d" % kv for kv in sorted(self.shown.items())) or "none"
        print("%s: %d checks, %d failures (by kind: %s)"
              % (what, self.checks, self.failures, kinds), flush=True)
        return 0 if self.failures == 0 else 1


def parse_matches(reply):
    """QUERY reply -> list of (fp, dist, frozenset(docs)), or raises ValueError."""
    if not isinstance(reply, list):
        raise ValueError("not an array: %r" % (reply,))
    out = []
    for e in reply:
        if not (isinstance(e, list) and len(e) == 3 and isinstance(e[0], bytes)
                and isinstance(e[1], int) and isinstance(e[2], list)):
            raise ValueError("bad match element %r" % (e,))
        if not all(isinstance(x, bytes) for x in e[2]):
            raise ValueError("bad document ids %r" % (e[2],))
        out.append((int(e[0]), e[1], frozenset(x.decode() for x in e[2])))
    return out


def compare(chk, q, d, reply, want, tag="query"):
    """Compare one QUERY reply with the model's answer; counts misses/extras."""
    try:
        got = parse_matches(reply)
    except ValueError as e:
        chk.ok(False, "reply", "q=%d d=%d: %s" % (q, d, e))
        return False
    good = True
    gfp = {g[0]: g for g in got}
    wfp = {w[0]: w for w in want}
    missed = [fp for fp in wfp if fp not in gfp]
    extra = [fp for fp in gfp if fp not in wfp]
    good &= chk.ok(not missed, "missed", "%s q=%d d=%d missed %s" % (tag, q, d, missed[:5]))
    good &= chk.ok(not extra, "extra", "%s q=%d d=%d extra %s" % (tag, q, d, extra[:5]))
    good &= chk.ok(len(gfp) == len(got), "duplicate", "%s q=%d: a fingerprint twice" % (tag, q))
    for fp, w in wfp.items():
        g = gfp.get(fp)
        if g is None:
            continue
        good &= chk.ok(g[1] == w[1], "distance", "%s q=%d fp=%d distance %d, want %d"
                       % (tag, q, fp, g[1], w[1]))
        good &= chk.ok(g[2] == w[2], "docids", "%s q=%d fp=%d docs %s, want %s"
                       % (tag, q, fp, sorted(g[2]), sorted(w[2])))
    order = [(g[1], g[0]) for g in got]
    good &= chk.ok(order == sorted(order), "order",
                   "%s q=%d not nearest first then by fp: %s" % (tag, q, order[:6]))
    return good


# ---- planted corpus ----------------------------------------------------------

def flip(rng, fp, nbits):
    for b in rng.sample(range(64), nbits):
        fp ^= 1 << b
    return fp


def plant(rng, nbase, k):
    """Pairs (fp, doc): bases (with 0, all ones and top bit only among them),
    copies with 1..k+2 flipped bits, every 7th base shared by a second document,
    every 11th copy sharing the fingerprint of a third document."""
    pairs = []
    bases = [0, MASK64, 1 << 63] + [rng.getrandbits(64) for _ in range(nbase - 3)]
    for i, base in enumerate(bases):
        pairs.append((base, "b%d" % i))
        if i % 7 == 0:
            pairs.append((base, "b%d-twin" % i))
        for j in range(1, k + 3):
            c = flip(rng, base, j)
            pairs.append((c, "b%d-c%d" % (i, j)))
            if (i * 5 + j) % 11 == 0:
                pairs.append((c, "b%d-c%d-twin" % (i, j)))
    return bases, pairs


def near_misses(rng, bases, k, n):
    """Query fingerprints that were not loaded: bases with 1..k+1 further flips."""
    return [flip(rng, rng.choice(bases), rng.randint(1, k + 1)) for _ in range(n)]


# ---- subcommands -------------------------------------------------------------

def cmd_load(a):
    rng = random.Random(a.seed)
    chk = Checker()
    m = Model(a.blocks, a.distance)
    bases, pairs = plant(rng, a.bases, a.distance)
    c = Conn(a.port, host=a.host)
    # one pair per command, pipelined; every 10th command carries three pairs
    cmds, want = [], []
    i = 0
    while i < len(pairs):
        n = 3 if len(cmds) % 10 == 9 else 1
        group = pairs[i:i + n]
        i += n
        args = ["SIMHASH.ADD"]
        new = 0
        for fp, doc in group:
            args += [fp, doc]
            new += m.add(fp, doc)
        cmds.append(args)
        want.append(new)
    replies = c.pipeline(cmds)
    for args, r, w in zip(cmds, replies, want):
        chk.ok(r == w, "add", "%s -> %r, want %d" % (args[:5], r, w))
    # adding an existing pair again adds nothing
    fp, doc = pairs[0]
    r = c.command("SIMHASH.ADD", fp, doc)
    chk.ok(r == 0, "add", "re-adding (%d, %s) -> %r, want 0" % (fp, doc, r))
    m.save(a.state_out, {"bases": [str(b) for b in bases], "seed": a.seed})
    print("loaded %d pairs, %d fingerprints" % (len(pairs), len(m.docs)))
    return chk.finish("load")


def verify(a, c, m, bases, chk, rng, full=True):
    k = m.distance
    queries = sorted(m.docs)
    if full:
        queries += near_misses(rng, bases, k, max(50, len(queries) // 10))
    else:
        queries = rng.sample(queries, min(len(queries), 100))
    replies = c.pipeline([["SIMHASH.QUERY", q] for q in queries])
    nmatch = 0
    for q, r in zip(queries, replies):
        want = m.query(q, k)
        nmatch += len(want)
        compare(chk, q, k, r, want)
    print("%d queries at distance %d (%d stored, %d not stored), %d expected matches, "
          "%d failures so far" % (len(queries), k, len(m.docs), len(queries) - len(m.docs)
                                  if full else 0, nmatch, chk.failures), flush=True)
    if not full:
        return
    # smaller distances
    sample = rng.sample(queries, min(200, len(queries)))
    cmds, exp = [], []
    for q in sample:
        for d in range(0, k):
            cmds.append(["SIMHASH.QUERY", q, "DISTANCE", d])
            exp.append((q, d))
    for (q, d), r in zip(exp, c.pipeline(cmds)):
        compare(chk, q, d, r, m.query(q, d), "DISTANCE")
    # explicit DISTANCE k equals the default
    for q, r in zip(sample[:50], c.pipeline([["SIMHASH.QUERY", q, "distance", k] for q in sample[:50]])):
        compare(chk, q, k, r, m.query(q, k), "DISTANCE k")
    # LIMIT n keeps the n nearest
    cmds, exp = [], []
    for q in sample[:100]:
        for n in (1, 2, 3):
            cmds.append(["SIMHASH.QUERY", q, "LIMIT", n])
            exp.append((q, n))
    for (q, n), r in zip(exp, c.pipeline(cmds)):
        compare(chk, q, k, r, m.query(q, k)[:n], "LIMIT %d" % n)
    q = sample[0]
    r = c.command("SIMHASH.QUERY", q, "DISTANCE", 1, "LIMIT", 1)
    compare(chk, q, 1, r, m.query(q, 1)[:1], "DISTANCE+LIMIT")
    # DISTANCE above the corpus distance is refused
    for d in (k + 1, 63, 64, 65):
        r = c.command("SIMHASH.QUERY", q, "DISTANCE", d)
        chk.ok(isinstance(r, Err), "refuse", "DISTANCE %d (corpus %d) -> %r, want an error" % (d, k, r))
    chk.ok(c.command("PING") == "PONG", "alive", "PING after refusals")


def cmd_verify(a):
    m, extra = Model.load(a.state)
    rng = random.Random(a.seed)
    bases = [int(b) for b in extra.get("bases", [])] or list(m.docs)[:50]
    chk = Checker()
    c = Conn(a.port, host=a.host)
    c.batch = a.batch
    c.timeout_retries = a.timeout_retries
    verify(a, c, m, bases, chk, rng, full=not a.quick)
    print("verified %d stored fingerprints (blocks %d, distance %d)"
          % (len(m.docs), m.blocks, m.distance))
    return chk.finish("verify")


def cmd_lifecycle(a):
    m, extra = Model.load(a.state)
    rng = random.Random(a.seed)
    bases = [int(b) for b in extra["bases"]]
    chk = Checker()
    c = Conn(a.port, host=a.host)
    k = m.distance

    def qcheck(q, tag):
        compare(chk, q, k, c.command("SIMHASH.QUERY", q), m.query(q, k), tag)

    shared = [fp for fp, d in m.docs.items() if len(d) >= 2]
    single = [fp for fp, d in m.docs.items() if len(d) == 1]
    chk.ok(len(shared) >= 10, "setup", "only %d shared fingerprints" % len(shared))
    # DEL fp docid on a shared fingerprint leaves the other document
    for fp in shared[:10]:
        doc = sorted(m.docs[fp])[0]
        r = c.command("SIMHASH.DEL", fp, doc)
        chk.ok(r == 1, "del-doc", "DEL %d %s -> %r, want 1" % (fp, doc, r))
        m.delete(fp, doc)
        qcheck(fp, "after DEL fp docid")
    # DEL of a document the fingerprint does not have removes nothing
    fp = shared[10] if len(shared) > 10 else single[0]
    r = c.command("SIMHASH.DEL", fp, "no-such-doc")
    chk.ok(r == 0, "del-doc", "DEL %d no-such-doc -> %r, want 0" % (fp, r))
    qcheck(fp, "after DEL of absent doc")
    # DEL fp without docid removes the fingerprint and all its documents
    gone = rng.sample(single, 40) + shared[11:16]
    for fp in gone:
        want = len(m.docs[fp])
        r = c.command("SIMHASH.DEL", fp)
        chk.ok(r == want, "del-fp", "DEL %d -> %r, want %d" % (fp, r, want))
        m.delete(fp)
    r = c.command("SIMHASH.DEL", gone[0])
    chk.ok(r == 0, "del-fp", "second DEL %d -> %r, want 0" % (gone[0], r))
    for fp in gone:
        qcheck(fp, "after DEL fp")   # the fingerprint itself must not come back
    # removing the last document removes the fingerprint
    last = rng.sample([fp for fp in single if fp in m.docs], 10)
    for fp in last:
        doc = next(iter(m.docs[fp]))
        r = c.command("SIMHASH.DEL", fp, doc)
        chk.ok(r == 1, "del-last", "DEL %d %s -> %r, want 1" % (fp, doc, r))
        m.delete(fp, doc)
        qcheck(fp, "after DEL of the last doc")
    # re-insert some removed fingerprints, with new and old document ids
    for i, fp in enumerate(gone[:20] + last[:5]):
        doc = "re%d" % i
        r = c.command("SIMHASH.ADD", fp, doc)
        chk.ok(r == 1, "readd", "ADD %d %s -> %r, want 1" % (fp, doc, r))
        m.add(fp, doc)
        if i % 2 == 0:
            r = c.command("SIMHASH.ADD", fp, "re-twin%d" % i)
            chk.ok(r == 1, "readd", "ADD %d re-twin -> %r" % (fp, r))
            m.add(fp, "re-twin%d" % i)
        qcheck(fp, "after re-ADD")
    # a new fingerprint shared by three documents in one command
    fp = flip(rng, bases[5], 1)
    r = c.command("SIMHASH.ADD", fp, "t1", fp, "t2", fp, "t3")
    want = sum(m.add(fp, d) for d in ("t1", "t2", "t3"))
    chk.ok(r == want, "add-shared", "ADD fp t1 fp t2 fp t3 -> %r, want %d" % (r, want))
    qcheck(fp, "shared by three")
    verify(a, c, m, bases, chk, rng, full=True)
    m.save(a.state_out, extra)
    print("lifecycle: %d fingerprints stored now" % len(m.docs))
    return chk.finish("lifecycle")


def cmd_expect_down(a):
    """A worker is stopped or dead: every query must answer an error (TIMEOUT or
    SHARDDOWN) within 2x the deadline, or else be the complete right answer."""
    m, extra = Model.load(a.state)
    rng = random.Random(a.seed)
    chk = Checker()
    limit = 2.0 * a.timeout_ms / 1000.0 + 0.05
    c = Conn(a.port, host=a.host)
    c.settimeout(max(5.0, 4 * limit))
    qs = rng.sample(sorted(m.docs), min(a.count, len(m.docs)))
    errors = 0
    seen = set()
    accept = a.accept.split(",")

    slowest = [0.0]

    def judge(q, r, elapsed, tag):
        nonlocal errors
        slowest[0] = max(slowest[0], elapsed)
        chk.ok(elapsed <= limit, "late", "%s q=%d answered after %.0f ms (deadline %d ms)"
               % (tag, q, elapsed * 1000, a.timeout_ms))
        if isinstance(r, Err):
            errors += 1
            seen.add(r.text[:80])
            chk.ok(accept == ["*"] or r.prefix() in accept, "errtype",
                   "%s q=%d error %r: want -%s" % (tag, q, r.text, " or -".join(accept)))
        else:
            compare(chk, q, m.distance, r, m.query(q, m.distance), tag + " (not an error)")

    for q in qs:                       # one at a time
        t0 = time.monotonic()
        r = c.command("SIMHASH.QUERY", q)
        judge(q, r, time.monotonic() - t0, "single")
    batch = qs[:10]                    # pipelined: all within the deadline too
    t0 = time.monotonic()
    c.send_raw(b"".join(encode(["SIMHASH.QUERY", q]) for q in batch))
    for q in batch:
        r = c.read_reply()
        judge(q, r, time.monotonic() - t0, "pipelined")
    # a write must not claim success when part of it cannot be stored
    fp = rng.getrandbits(64)
    t0 = time.monotonic()
    r = c.command("SIMHASH.ADD", fp, "written-while-down")
    chk.ok(isinstance(r, Err), "write", "ADD while a worker is down -> %r, want an error" % (r,))
    chk.ok(time.monotonic() - t0 <= limit, "late", "ADD answered after the deadline")
    chk.ok(c.command("PING") == "PONG", "alive", "PING while a worker is down")
    total = len(qs) + len(batch)
    chk.ok(errors * 2 >= total, "errors", "only %d of %d queries got an error" % (errors, total))
    print("down: %d of %d queries answered an error, slowest reply %.0f ms (limit %.0f ms); "
          "errors seen: %s" % (errors, total, slowest[0] * 1000, limit * 1000, sorted(seen)[:3]))
    extra.setdefault("pending", []).append([str(fp), "written-while-down"])
    m.save(a.state, extra)
    return chk.finish("expect-down")


def cmd_wait_ok(a):
    """Poll until a query gets the right answer (the coordinator recovers by itself),
    then re-add writes refused while down and check a sample."""
    m, extra = Model.load(a.state)
    rng = random.Random(a.seed)
    chk = Checker()
    qs = sorted(m.docs)
    deadline = time.monotonic() + a.within
    t0 = time.monotonic()
    ok = False
    c = None
    while time.monotonic() < deadline and not ok:
        try:
            if c is None:
                c = Conn(a.port, host=a.host)
            good = 0
            for q in rng.sample(qs, 5):
                r = c.command("SIMHASH.QUERY", q)
                if isinstance(r, Err):
                    break
                if compare(Checker(), q, m.distance, r, m.query(q, m.distance)):
                    good += 1
                else:   # a wrong array is a failure, not a "not yet"
                    compare(chk, q, m.distance, r, m.query(q, m.distance), "recovering")
                    break
            ok = good == 5
        except (OSError, ConnClosed):
            c = None
        if not ok:
            time.sleep(0.1)
    chk.ok(ok, "recover", "answers not correct again within %.1f s" % a.within)
    if not ok:
        return chk.finish("wait-ok")
    print("correct again after %.2f s" % (time.monotonic() - t0))
    for fp, doc in extra.pop("pending", []):
        r = c.command("SIMHASH.ADD", int(fp), doc)
        chk.ok(r in (0, 1), "readd", "ADD after recovery -> %r" % (r,))
        m.add(int(fp), doc)
    m.save(a.state, extra)
    return chk.finish("wait-ok")


def cmd_probe(a):
    """Queries one at a time for --seconds: a complete right answer or an error reply,
    each within 2x the deadline; a lost connection is reconnected and counted."""
    m, extra = Model.load(a.state)
    rng = random.Random(a.seed)
    chk = Checker()
    limit = 2.0 * a.timeout_ms / 1000.0 + 0.25
    bases = [int(b) for b in extra.get("bases", [])] or list(m.docs)[:50]
    stored = sorted(m.docs)
    counts = {"complete": 0, "error": 0, "wrong": 0, "late": 0, "conn_lost": 0}
    errs = {}
    slowest = 0.0
    c = None
    end = time.monotonic() + a.seconds
    n = 0
    while time.monotonic() < end and n < a.count:
        n += 1
        q = rng.choice(stored) if n % 4 else near_misses(rng, bases, m.distance, 1)[0]
        t0 = time.monotonic()
        try:
            if c is None:
                c = Conn(a.port, host=a.host, timeout=max(5.0, 4 * limit))
            r = c.command("SIMHASH.QUERY", q)
        except (OSError, ConnClosed) as e:
            counts["conn_lost"] += 1
            errs[type(e).__name__] = errs.get(type(e).__name__, 0) + 1
            c = None
            time.sleep(0.05)
            continue
        el = time.monotonic() - t0
        slowest = max(slowest, el)
        if not chk.ok(el <= limit, "late", "q=%d answered after %.0f ms (limit %.0f ms)"
                      % (q, el * 1000, limit * 1000)):
            counts["late"] += 1
        if isinstance(r, Err):
            counts["error"] += 1
            errs[r.prefix()] = errs.get(r.prefix(), 0) + 1
            chk.ok(not a.want_complete, "error", "q=%d: %s" % (q, r.text))
        elif compare(chk, q, m.distance, r, m.query(q, m.distance), "probe"):
            counts["complete"] += 1
        else:
            counts["wrong"] += 1
        if a.pause_ms:
            time.sleep(a.pause_ms / 1000.0)
    chk.ok(counts["conn_lost"] == 0, "conn", "%d connections lost" % counts["conn_lost"])
    chk.ok(counts["complete"] > 0 or not a.want_complete, "none", "no complete answer")
    print("probe: queries %d complete %d error %d wrong %d late %d conn_lost %d "
          "slowest_ms %.0f limit_ms %.0f errors %s"
          % (n, counts["complete"], counts["error"], counts["wrong"], counts["late"],
             counts["conn_lost"], slowest * 1000, limit * 1000,
             ",".join("%s:%d" % kv for kv in sorted(errs.items())) or "none"), flush=True)
    return chk.finish("probe")


def cmd_protocol(a):
    chk = Checker()
    c = Conn(a.port, host=a.host)
    rng = random.Random(a.seed)
    k = a.distance
    fp = rng.getrandbits(64)
    near = flip(rng, fp, k)
    # pipelined mixed commands on one connection, answered in order
    cmds = [["PING"], ["SIMHASH.ADD", fp, "p1"], ["SIMHASH.ADD", near, "p2"],
            ["SIMHASH.QUERY", fp], ["NOSUCHCOMMAND", 1], ["PING", "hello"],
            ["SIMHASH.QUERY", fp, "DISTANCE", 0], ["SIMHASH.INFO"],
            ["SIMHASH.QUERY", "abc"], ["SIMHASH.DEL", near, "p2"], ["SIMHASH.QUERY", fp],
            ["SIMHASH.FINGERPRINT", "the quick brown fox jumps over the lazy dog"],
            ["PING"]]
    c.send_raw(b"".join(encode(x) for x in cmds))
    r = [c.read_reply() for _ in cmds]
    chk.ok(r[0] == "PONG", "pipeline", "PING -> %r" % (r[0],))
    chk.ok(r[1] == 1 and r[2] == 1, "pipeline", "ADDs -> %r %r" % (r[1], r[2]))
    want = sorted([(0, fp), (k, near)])
    try:
        got = [(g[1], g[0]) for g in parse_matches(r[3])]
    except ValueError as e:
        got = str(e)
    chk.ok(got == want, "pipeline", "QUERY -> %r, want %r" % (got, want))
    chk.ok(isinstance(r[4], Err), "pipeline", "unknown command -> %r" % (r[4],))
    chk.ok(r[5] == b"hello", "pipeline", "PING hello -> %r" % (r[5],))
    chk.ok(isinstance(r[6], list) and len(r[6]) == 1, "pipeline", "DISTANCE 0 -> %r" % (r[6],))
    chk.ok(isinstance(r[7], bytes) and b":" in r[7], "pipeline", "INFO -> %r" % (r[7],))
    chk.ok(isinstance(r[8], Err), "pipeline", "QUERY abc -> %r" % (r[8],))
    chk.ok(r[9] == 1, "pipeline", "DEL -> %r" % (r[9],))
    chk.ok(isinstance(r[10], list) and len(r[10]) == 1, "pipeline", "QUERY after DEL -> %r" % (r[10],))
    chk.ok(isinstance(r[11], bytes) and r[11].isdigit(), "pipeline", "FINGERPRINT -> %r" % (r[11],))
    chk.ok(r[12] == "PONG", "pipeline", "last PING -> %r" % (r[12],))

    # a request split into 1-byte writes
    fp2 = rng.getrandbits(64)
    for data, check in ((encode(["SIMHASH.ADD", fp2, "bytewise"]), lambda x: x == 1),
                        (encode(["SIMHASH.QUERY", fp2]),
                         lambda x: isinstance(x, list) and len(x) == 1 and x[0][0] == b"%d" % fp2
                         and x[0][2] == [b"bytewise"])):
        for i in range(len(data)):
            c.send_raw(data[i:i + 1])
            if i % 8 == 0:
                time.sleep(0.002)
        x = c.read_reply()
        chk.ok(check(x), "bytewise", "reply to %r sent bytewise: %r" % (data[:30], x))
    # inline command form
    c.send_raw(b"PING\r\n")
    x = c.read_reply()
    chk.ok(x == "PONG", "inline", "inline PING -> %r" % (x,))

    # bad input: a RESP error, and the connection still works
    bad = [["SIMHASH.QUERY", "abc"], ["SIMHASH.QUERY", "18446744073709551616"],
           ["SIMHASH.QUERY", "-1"], ["SIMHASH.QUERY", "0x10"], ["SIMHASH.QUERY", " 12"],
           ["SIMHASH.QUERY", ""], ["SIMHASH.QUERY", "12abc"], ["SIMHASH.QUERY"],
           ["SIMHASH.QUERY", fp, "DISTANCE", "-1"], ["SIMHASH.QUERY", fp, "DISTANCE"],
           ["SIMHASH.QUERY", fp, "DISTANCE", "x"], ["SIMHASH.QUERY", fp, "LIMIT", "-1"],
           ["SIMHASH.QUERY", fp, "LIMIT"], ["SIMHASH.QUERY", fp, "BOGUS", "1"],
           ["SIMHASH.QUERY", fp, "DISTANCE", k + 1],
           ["SIMHASH.ADD"], ["SIMHASH.ADD", fp], ["SIMHASH.ADD", fp, "d", fp],
           ["SIMHASH.ADD", "abc", "d"], ["SIMHASH.ADD", "18446744073709551616", "d"],
           ["SIMHASH.DEL"], ["SIMHASH.DEL", "x"], ["SIMHASH.CHECK", fp],
           ["SIMHASH.CHECK", "x", "d"], ["SIMHASH.FINGERPRINT"], ["SIMHASH.CHECKTEXT", "d"],
           ["NOSUCHCOMMAND"], ["SIMHASH.NOSUCH", 1]]
    for b in bad:
        x = c.command(*b)
        chk.ok(isinstance(x, Err), "bad-input", "%r -> %r, want an error" % (b, x))
        p = c.command("PING")
        chk.ok(p == "PONG", "bad-input", "PING after %r -> %r" % (b, p))
    # the bad ADDs stored nothing
    x = c.command("SIMHASH.QUERY", fp, "DISTANCE", 0)
    try:
        docs = parse_matches(x)[0][2] if x else frozenset()
    except (ValueError, IndexError):
        docs = None
    chk.ok(docs == frozenset(["p1"]), "bad-input", "docs of fp after bad ADDs: %r" % (x,))
    # the largest fingerprint is fine
    x = c.command("SIMHASH.QUERY", MASK64)
    chk.ok(isinstance(x, list), "bad-input", "QUERY 2^64-1 -> %r" % (x,))

    # a malformed request header: error or close, then the server still serves
    for junk in (b"*1000000000000\r\n", b"*2\r\n$-5\r\nab\r\n", b"*1\r\n$99999999999\r\n"):
        d = Conn(a.port, host=a.host, timeout=5)
        d.send_raw(junk)
        try:
            x = d.read_reply()
            chk.ok(isinstance(x, Err), "malformed", "%r -> %r" % (junk, x))
        except (ConnClosed, OSError):
            pass
        d.close()
    chk.ok(Conn(a.port, host=a.host).command("PING") == "PONG", "malformed", "server gone after junk")
    chk.ok(c.command("PING") == "PONG", "malformed", "first connection gone after junk")
    # CHECKTEXT: the fingerprint of the text, the matches that existed, then adds
    text = "Near-duplicate documents share most of their shingles %d" % rng.getrandbits(32)
    tfp = c.command("SIMHASH.FINGERPRINT", text)
    chk.ok(isinstance(tfp, bytes) and tfp.isdigit(), "checktext", "FINGERPRINT -> %r" % (tfp,))
    r1 = c.command("SIMHASH.CHECKTEXT", "ct1", text)
    chk.ok(isinstance(r1, list) and len(r1) == 2 and r1[0] == tfp and r1[1] == [],
           "checktext", "first CHECKTEXT -> %r, want [%r, []]" % (r1, tfp))
    r2 = c.command("SIMHASH.CHECKTEXT", "ct2", text)
    chk.ok(isinstance(r2, list) and len(r2) == 2 and r2[0] == tfp and r2[1] == [[tfp, 0, [b"ct1"]]],
           "checktext", "second CHECKTEXT -> %r, want [%r, [[fp, 0, [ct1]]]]" % (r2, tfp))
    r3 = c.command("SIMHASH.DEL", tfp)
    chk.ok(r3 == 2, "checktext", "DEL of the CHECKTEXT fingerprint -> %r, want 2" % (r3,))
    # cleanup of what this test stored
    c.command("SIMHASH.DEL", fp)
    c.command("SIMHASH.DEL", fp2)
    return chk.finish("protocol")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("cmd", choices=["load", "verify", "lifecycle", "expect-down", "wait-ok",
                                   "protocol", "probe"])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--seconds", type=float, default=10.0, help="probe: how long")
    p.add_argument("--pause-ms", type=float, default=0.0, help="probe: pause between queries")
    p.add_argument("--want-complete", action="store_true",
                   help="probe: an error reply fails too")
    p.add_argument("--blocks", type=int, default=6)
    p.add_argument("--distance", type=int, default=3)
    p.add_argument("--bases", type=int, default=300)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--state")
    p.add_argument("--state-out")
    p.add_argument("--timeout-ms", type=int, default=300)
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--accept", default="TIMEOUT,SHARDDOWN",
                   help="expect-down: error prefixes accepted (* = any)")
    p.add_argument("--within", type=float, default=10.0)
    p.add_argument("--quick", action="store_true", help="verify: a sample only")
    p.add_argument("--timeout-retries", type=int, default=0,
                   help="verify: ask a query answered -TIMEOUT again, up to this many times "
                        "(tests whose deadline is short on purpose, on a busy machine)")
    p.add_argument("--batch", type=int, default=200,
                   help="verify: queries per pipelined write (settings whose queries read many "
                        "bucket keys need fewer to stay under the workers' in-flight bound)")
    a = p.parse_args()
    fn = {"load": cmd_load, "verify": cmd_verify, "lifecycle": cmd_lifecycle,
          "expect-down": cmd_expect_down, "wait-ok": cmd_wait_ok,
          "protocol": cmd_protocol, "probe": cmd_probe}[a.cmd]
    try:
        return fn(a)
    except (OSError, ConnClosed, ValueError) as e:
        print("FAIL %s: %s: %s" % (a.cmd, type(e).__name__, e), flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
