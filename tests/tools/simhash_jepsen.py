"""tests/tools/simhash_jepsen.py: a randomized concurrency test of a running
deployment, in the style of Jepsen's checkers (stdlib only; Debian 12's python3).

  run     N clients (threads, one connection each, spread over the given
          coordinators) send random SIMHASH.ADD (one or several pairs), DEL (with and
          without a document id), CHECK and QUERY over a few fingerprints that lie
          within the corpus distance of each other and a few document ids, so that
          operations collide all the time. Every operation is recorded with its
          invocation and completion times (monotonic) and its outcome: ok, or
          unknown (an error reply or a lost connection: the write may or may not have
          happened, now or later). Bounded by --ops and --seconds. Then:
  check   waits until no write lock is left in Redis (bounded), and checks
          * every QUERY of the run: a pair whose add was acknowledged before the read
            began, with no delete of it that could have come in between, is listed;
            one whose delete was, with no add that could have come in between, is not;
          * every (fingerprint, document): the state a QUERY at distance 0 shows is
            one that some serial order of the history allows: the effect of an
            operation that no acknowledged operation on the same pair (or DEL of the
            whole fingerprint) followed in real time, or of an unknown one, or absent
            when nothing acknowledged touched the pair;
          * every fingerprint with documents is found by every query within distance
            k of it (random neighbours, bits spread over all 64), and none without;
          * Redis itself (every node given with --redis): table entries = tables x
            non-empty document sets, no write lock left, and the counter hashes
            c:{0:xx} equal to the real numbers; SIMHASH.INFO reports them.
With --filler N a further client adds N filler fingerprints (document "filler"), each
k+2 to k+6 bits from one of the fingerprints above, during the run (retried until
acknowledged): they share most tables' shards with them, so that with a small split
limit of data layout 3 their buckets split while the clients work on them; the checks
of Redis count them too.
Prints counts (operations by kind and outcome, violations by kind) and exits 1 on any
violation, after printing the first ones with their histories."""
import argparse
import os
import random
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_client import C, enc  # noqa: E402

ERR = "ERR"


class Client:
    """One connection to a coordinator that reconnects after an error; every call
    returns (outcome, reply): ("ok", value) or ("unknown", text)."""

    def __init__(s, port, password=None):
        s.port, s.password, s.c = port, password, None

    def call(s, *args):
        try:
            if s.c is None:
                s.c = C(s.port, timeout=15)
                if s.password:
                    s.c.s.sendall(enc("AUTH", s.password))
                    s.c.reply()
            s.c.s.sendall(enc(*args))
            r = s.c.reply()
        except (OSError, EOFError, ValueError) as e:
            if s.c is not None:
                try:
                    s.c.s.close()
                except OSError:
                    pass
            s.c = None
            return "unknown", "connection: %s" % e
        if isinstance(r, tuple) and r and r[0] == ERR:
            return "unknown", r[1]
        return "ok", r


def settled_call(cl, seconds, *args):
    """A read of the final state, after the run: asked again while the deployment still
    recovers from the last fault (a worker reconnecting to Redis answers REDIS or
    SHARDDOWN for a moment, longer on a busy machine), for up to seconds. Only an error
    that outlasts that is a failed query."""
    deadline = time.monotonic() + seconds
    while True:
        oc, r = cl.call(*args)
        if oc == "ok" or time.monotonic() >= deadline:
            return oc, r
        time.sleep(0.2)


def flip(rng, v, n):
    for b in rng.sample(range(64), n):
        v ^= 1 << b
    return v


def make_fps(rng, nbase, k):
    """nbase random fingerprints, each with a neighbour 1..k bits away."""
    fps = []
    for _ in range(nbase):
        b = rng.getrandbits(64)
        fps += [b, flip(rng, b, rng.randint(1, max(1, k)))]
    return fps


def run(a):
    rng0 = random.Random(a.seed)
    fps = make_fps(rng0, a.bases, a.distance)
    docs = ["d%d" % i for i in range(a.docs)]
    ports = [int(p) for p in a.ports.split(",")]
    hist, lock = [], threading.Lock()
    t_end = time.monotonic() + a.seconds
    per_client = max(1, a.ops // a.clients)

    def worker(ci):
        rng = random.Random(a.seed * 1000 + ci)
        cl = Client(ports[ci % len(ports)], a.password)
        for _ in range(per_client):
            if time.monotonic() >= t_end:
                break
            x = rng.random()
            fp, d = rng.choice(fps), rng.choice(docs)
            if x < 0.30:
                op = ("ADD", [(fp, d)])
                cmd = ["SIMHASH.ADD", fp, d]
            elif x < 0.40:
                pairs = [(rng.choice(fps), rng.choice(docs)) for _ in range(rng.randint(2, 4))]
                op = ("ADD", pairs)
                cmd = ["SIMHASH.ADD"] + [v for p in pairs for v in p]
            elif x < 0.62:
                op = ("DEL", [(fp, d)])
                cmd = ["SIMHASH.DEL", fp, d]
            elif x < 0.72:
                op = ("DELALL", [(fp, None)])
                cmd = ["SIMHASH.DEL", fp]
            elif x < 0.85:
                op = ("CHECK", [(fp, d)])
                cmd = ["SIMHASH.CHECK", fp, d]
            else:
                op = ("QUERY", [(fp, None)])
                cmd = ["SIMHASH.QUERY", fp]
            t0 = time.monotonic()
            outcome, reply = cl.call(*cmd)
            t1 = time.monotonic()
            with lock:
                hist.append({"op": op[0], "pairs": op[1], "t0": t0, "t1": t1,
                             "outcome": outcome, "reply": reply, "client": ci})

    fillers = set()
    frng = random.Random(a.seed + 7)
    while len(fillers) < a.filler:
        fillers.add(flip(frng, frng.choice(fps), frng.randint(a.distance + 2, a.distance + 6)))
    fillers = sorted(fillers)
    filled = []

    def filler():
        cl = Client(ports[0], a.password)
        for f in fillers:
            while time.monotonic() < t_end + 60:
                if cl.call("SIMHASH.ADD", f, "filler")[0] == "ok":
                    filled.append(f)
                    break
                time.sleep(0.05)

    th = [threading.Thread(target=worker, args=(i,)) for i in range(a.clients)]
    th += [threading.Thread(target=filler)] if fillers else []
    for t in th:
        t.start()
    for t in th:
        t.join()
    if len(filled) != len(fillers):
        print("%s: only %d of %d filler fingerprints acknowledged" % (a.label, len(filled),
                                                                     len(fillers)))
        sys.exit(2)
    return fps, docs, hist


# ---- checks ----

def allowed_states(ops):
    """ops: the operations touching one (fp, doc): (kind, t0, t1, outcome) with kind
    'add' or 'del'. Returns the set of final states (True present, False absent) some
    serial order allows."""
    acked = [o for o in ops if o[3] == "ok"]
    out = set()
    if not acked:
        out.add(False)
    for o in ops:
        if o[3] == "ok":
            if any(p[1] > o[2] for p in acked):
                continue        # an acknowledged op started after o ended: o is not last
        # an unknown op may take effect any time after it was invoked (a stale lock's
        # write is completed by the repair pass later), so it can always be last
        out.add(o[0] == "add")
    return out


def redis_nodes(spec):
    out = []
    for hp in spec.split(",") if spec else []:
        h, p = hp.rsplit(":", 1)
        out.append((h, int(p)))
    return out


def rcli(node, *args):
    h, p = node
    r = subprocess.run(["redis-cli", "-h", h, "-p", str(p)] + [str(x) for x in args],
                       capture_output=True, text=True, timeout=60)
    return r.stdout


def scan(node, pattern):
    return [k for k in rcli(node, "--scan", "--pattern", pattern).split("\n") if k]


def packed_count(v):
    """Ids in a packing of layouts 2-4 (a varint length before each id)."""
    i = ids = 0
    while i < len(v):
        ln, sh = 0, 0
        while True:
            b = v[i]
            i += 1
            ln |= (b & 0x7f) << sh
            sh += 7
            if b < 0x80:
                break
        i += ln
        ids += 1
    return ids


def redis_state(nodes):
    """(table entries, non-empty document sets, document ids, lock fields, counters
    fingerprints, counters documents) over every node."""
    ent = nsets = ndocs = nlocks = cf = cd = 0
    for n in nodes:
        c = C(n[1])
        for k in scan(n, "s:*"):
            v = c.call("ZCARD", k)
            ent += v if isinstance(v, int) else 0  # layout 3: a split bucket's tombstone
        # layout 4: the ids packed after the 7 bytes of a table-0 member (a member of
        # 7 bytes alone: they are in the overflow set, counted below)
        for k in scan(n, "s:{0:*"):
            ms = c.call("ZRANGE", k, 0, -1)
            if not isinstance(ms, list):  # a split bucket's tombstone
                continue
            for m in ms:
                ids = packed_count(m[7:])
                nsets += ids > 0
                ndocs += ids
        # layout 2: ids packed per bucket hash field,
        # "" when they are in the overflow set d:{0:xx}:<fp hex> (counted below)
        for k in scan(n, "h:*"):
            vals = c.call("HVALS", k)
            if isinstance(vals, tuple):   # layout 3: a split id hash's tombstone
                continue
            for v in vals:
                ids = packed_count(v)
                nsets += ids > 0
                ndocs += ids
        for k in scan(n, "d:*"):
            sc = int(rcli(n, "SCARD", k).strip() or 0)
            nsets += sc > 0
            ndocs += sc
        for k in scan(n, "w:*"):
            nlocks += int(rcli(n, "HLEN", k).strip() or 0)
        for k in scan(n, "c:*"):
            v = rcli(n, "HMGET", k, "fingerprints", "documents").split("\n")
            cf += int(v[0] or 0)
            cd += int(v[1] or 0) if len(v) > 1 and v[1] else 0
    return ent, nsets, ndocs, nlocks, cf, cd


def check(a, fps, docs, hist):
    viol = []
    port = int(a.ports.split(",")[0])
    cl = Client(port, a.password)
    nodes = redis_nodes(a.redis)
    # settle: every write lock gone (writers done, stale ones repaired)
    deadline = time.monotonic() + a.settle
    locks = None
    while nodes and time.monotonic() < deadline:
        locks = sum(int(rcli(n, "HLEN", k).strip() or 0) for n in nodes for k in scan(n, "w:*"))
        if locks == 0:
            break
        time.sleep(0.5)
    if nodes and locks:
        viol.append(("locks-left", "%d write locks still held %d s after the run" % (locks, a.settle)))
    # final state per fingerprint
    final = {}
    for fp in fps:
        oc, r = settled_call(cl, a.settle, "SIMHASH.QUERY", fp, "DISTANCE", 0)
        if oc != "ok":
            viol.append(("query-failed", "QUERY %d -> %r" % (fp, r)))
            continue
        ids = set()
        for m in r:
            if int(m[0]) == fp:
                ids = {x.decode() for x in m[2]}
        final[fp] = ids
    # per (fp, doc) against the history
    by_key = {}
    for h in hist:
        if h["op"] == "QUERY":
            continue
        kind = "del" if h["op"] in ("DEL", "DELALL") else "add"
        for fp, d in h["pairs"]:
            targets = docs if d is None else [d]
            for dd in targets:
                by_key.setdefault((fp, dd), []).append((kind, h["t0"], h["t1"], h["outcome"], h))
    # a QUERY's reply lists [fp, dist, [docids]] per match
    # every QUERY during the run against the writes around it: a pair whose add was
    # acknowledged before the read began, with no delete of it that could have come
    # in between, must be in the read; one whose delete was acknowledged before, with
    # no add that could have come in between, must not be
    nreads = 0
    for h in hist:
        if h["op"] != "QUERY" or h["outcome"] != "ok":
            continue
        nreads += 1
        fp, r0, r1 = h["pairs"][0][0], h["t0"], h["t1"]
        seen = set()
        for m in h["reply"]:
            if int(m[0]) == fp:
                seen = {x.decode() for x in m[2]}
        for d in docs:
            ops = by_key.get((fp, d), [])

            def may_come_between(o, after):
                # o (of the other kind) may take effect after `after` began and before
                # the read ended: invoked before the read ended, and, if acknowledged,
                # not finished before `after` was invoked
                return o[1] < r1 and (o[3] != "ok" or o[2] > after[1])
            adds = [o for o in ops if o[0] == "add"]
            dels = [o for o in ops if o[0] == "del"]
            must = any(a_[3] == "ok" and a_[2] < r0 and
                       not any(may_come_between(d_, a_) for d_ in dels) for a_ in adds)
            mustnt = any(d_[3] == "ok" and d_[2] < r0 and
                         not any(may_come_between(a_, d_) for a_ in adds) for d_ in dels)
            if must and d not in seen:
                viol.append(("read-missed-acknowledged-add", "QUERY %d at %.3f-%.3f did not "
                             "list doc %s, added and acknowledged before" % (fp, r0, r1, d)))
            if mustnt and d in seen:
                viol.append(("read-found-deleted", "QUERY %d at %.3f-%.3f listed doc %s, "
                             "deleted and acknowledged before" % (fp, r0, r1, d)))
    nkeys = 0
    for fp in fps:
        if fp not in final:
            continue
        for d in docs:
            nkeys += 1
            ops = by_key.get((fp, d), [])
            allowed = allowed_states(ops)
            seen = d in final[fp]
            if seen not in allowed:
                kind = "lost-acknowledged-write" if not seen else "deleted-still-found"
                last = sorted(ops, key=lambda o: o[1])[-4:]
                viol.append((kind, "fp %d doc %s: found=%s, allowed=%s; last ops: %s" % (
                    fp, d, seen, sorted(allowed),
                    "; ".join("%s %s %.3f-%.3f" % (o[4]["op"], o[3], o[1], o[2]) for o in last))))
    # every fingerprint with documents found from every neighbour within k
    rng = random.Random(a.seed + 99)
    nq = 0
    for fp, ids in final.items():
        for _ in range(a.neighbours if ids else 3):
            q = flip(rng, fp, rng.randint(0, a.distance))
            oc, r = settled_call(cl, a.settle, "SIMHASH.QUERY", q)
            nq += 1
            if oc != "ok":
                viol.append(("query-failed", "QUERY %d -> %r" % (q, r)))
                continue
            found = any(int(m[0]) == fp for m in r)
            if ids and not found:
                viol.append(("missing-table-entry", "fp %d (docs %s) not found from %d (%d bits)"
                             % (fp, sorted(ids), q, bin(q ^ fp).count("1"))))
            if not ids and found:
                viol.append(("found-without-documents", "fp %d returned from %d" % (fp, q)))
    # Redis itself
    real_sets = sum(1 for ids in final.values() if ids) + a.filler
    real_docs = sum(len(ids) for ids in final.values()) + a.filler
    if nodes:
        ent, nsets, ndocs, nlocks, cf, cd = redis_state(nodes)
        if nsets != real_sets or ndocs != real_docs:
            viol.append(("redis-documents", "Redis holds %d sets / %d ids, queries show %d / %d"
                         % (nsets, ndocs, real_sets, real_docs)))
        if ent != a.tables * nsets:
            viol.append(("partial-or-orphan-entries", "%d table entries for %d fingerprints x %d "
                         "tables (= %d)" % (ent, nsets, a.tables, a.tables * nsets)))
        if cf != nsets or cd != ndocs:
            viol.append(("counters", "c:{0:xx} say %d fingerprints / %d documents, real %d / %d"
                         % (cf, cd, nsets, ndocs)))
        # SIMHASH.INFO follows within a few health intervals
        info_ok = False
        for _ in range(50):
            oc, r = cl.call("SIMHASH.INFO")
            if oc == "ok":
                kv = dict(l.split(":", 1) for l in r.decode().split("\r\n") if ":" in l)
                if kv.get("fingerprints") == str(nsets) and kv.get("documents") == str(ndocs):
                    info_ok = True
                    break
            time.sleep(0.2)
        if not info_ok:
            viol.append(("info-counts", "SIMHASH.INFO does not report %d / %d" % (nsets, ndocs)))
    return viol, nkeys, nq + nreads


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ports", required=True, help="coordinator ports, comma-separated")
    ap.add_argument("--redis", default="", help="HOST:PORT of every Redis master, comma-separated")
    ap.add_argument("--password", default=None)
    ap.add_argument("--clients", type=int, default=12)
    ap.add_argument("--ops", type=int, default=3000)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--bases", type=int, default=4)
    ap.add_argument("--docs", type=int, default=3)
    ap.add_argument("--distance", type=int, default=3)
    ap.add_argument("--tables", type=int, default=20)
    ap.add_argument("--neighbours", type=int, default=24)
    ap.add_argument("--settle", type=float, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--filler", type=int, default=0)
    ap.add_argument("--label", default="run")
    a = ap.parse_args()
    t = time.monotonic()
    fps, docs, hist = run(a)
    dt = time.monotonic() - t
    counts = {}
    for h in hist:
        counts[(h["op"], h["outcome"])] = counts.get((h["op"], h["outcome"]), 0) + 1
    print("%s: %d operations in %.1f s by %d clients: %s" % (
        a.label, len(hist), dt, a.clients,
        ", ".join("%s %s %d" % (k[0], k[1], v) for k, v in sorted(counts.items()))))
    unknown = [h for h in hist if h["outcome"] == "unknown"]
    if unknown:
        errs = {}
        for h in unknown:
            e = str(h["reply"]).split(" ")[0]
            errs[e] = errs.get(e, 0) + 1
        print("%s: unknown outcomes by first word: %s" % (a.label, errs))
    viol, nkeys, nq = check(a, fps, docs, hist)
    kinds = {}
    for k, _ in viol:
        kinds[k] = kinds.get(k, 0) + 1
    print("%s: checked %d (fingerprint, document) pairs and %d queries: %d violations%s"
          % (a.label, nkeys, nq, len(viol), (" " + str(kinds)) if kinds else ""))
    for k, text in viol[:10]:
        print("  %s: %s" % (k, text))
    sys.exit(1 if viol else 0)


if __name__ == "__main__":
    main()
