"""tests/tools/merge_check.py: one-pair SIMHASH.ADDs of many clients written together
(the coordinator's merge-adds; docs/coordinator.md, "Writes of many clients").
  counts   CLIENTS connections each pipeline their one-pair ADDs at once over a pool of
           fingerprints that the clients share, some pairs sent by two clients, some
           fingerprints with several ids: every reply is an integer, each distinct
           (fingerprint, id) counts 1 in exactly one reply, and every fingerprint is
           then found at distance 0 with exactly its ids. Prints SIMHASH.INFO's
           write_merges and adds_merged (the caller checks them)
  stall    the same while the caller stops a worker (SIGSTOP) for a while: every
           request is answered within the bound (an error or an integer, no hang), and
           every pair answered with an integer is found once the worker is back
Usage: merge_check.py MODE PORT CLIENTS PAIRS_PER_CLIENT SEED"""
import random
import socket
import sys
import time

from resp_client import C, enc


def fail(msg):
    print("merge_check: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def plan(clients, per, seed):
    """The requests of each client: (fp, id) pairs over a shared pool; a quarter of
    them resend a pair another client sends too."""
    rnd = random.Random(seed)
    pool = [rnd.getrandbits(64) for _ in range(max(8, clients * per // 3))]
    sent = [[] for _ in range(clients)]
    for c in range(clients):
        for _ in range(per):
            fp = rnd.choice(pool)
            docid = "d%d-%x" % (rnd.randrange(3), fp)      # up to 3 ids a fingerprint
            sent[c].append((fp, docid))
    return sent


def send_all(port, sent, timeout):
    """Every client's requests written at once (one pipeline each), then every reply
    read; returns the replies per client. Fails when a reply does not come in time."""
    conns = [C(port, timeout=timeout) for _ in sent]
    for conn, reqs in zip(conns, sent):
        conn.s.sendall(b"".join(enc("SIMHASH.ADD", fp, d) for fp, d in reqs))
    out = []
    for conn, reqs in zip(conns, sent):
        got = []
        for _ in reqs:
            try:
                got.append(conn.reply())
            except (socket.timeout, EOFError) as e:
                fail("a reply did not come (%s) after %d of %d" % (e, len(got), len(reqs)))
        out.append(got)
    return out


def stored_ids(port, fps):
    """fp -> the set of ids SIMHASH.QUERY fp DISTANCE 0 finds for it (an error reply,
    while a worker is still stopped, is asked again for up to 60 s)."""
    c = C(port, timeout=60)
    found = {}
    for fp in fps:
        end = time.time() + 60
        r = c.call("SIMHASH.QUERY", fp, "DISTANCE", 0)
        while isinstance(r, tuple) and time.time() < end:
            time.sleep(0.2)
            r = c.call("SIMHASH.QUERY", fp, "DISTANCE", 0)
        if not isinstance(r, list):
            fail("query of %d: %r" % (fp, r))
        ids = set()
        for m in r:
            if int(m[0]) == fp:
                ids |= {x.decode() for x in m[2]}
        found[fp] = ids
    return found


def counts(port, clients, per, seed):
    sent = plan(clients, per, seed)
    replies = send_all(port, sent, 120)
    per_pair, want = {}, {}
    for reqs, got in zip(sent, replies):
        for (fp, d), r in zip(reqs, got):
            if not isinstance(r, int) or r not in (0, 1):
                fail("ADD %d %s answered %r" % (fp, d, r))
            per_pair[(fp, d)] = per_pair.get((fp, d), 0) + r
            want.setdefault(fp, set()).add(d)
    bad = [(p, n) for p, n in per_pair.items() if n != 1]
    if bad:
        fail("%d pairs not counted exactly once over their replies, e.g. %r" % (len(bad), bad[:3]))
    found = stored_ids(port, want)
    for fp, ids in want.items():
        if found[fp] != ids:
            fail("fingerprint %d: ids %r, want %r" % (fp, sorted(found[fp]), sorted(ids)))
    info = C(port).call("SIMHASH.INFO").decode()
    stats = dict(l.split(":", 1) for l in info.splitlines() if ":" in l)
    print("counts: %d requests of %d clients, %d pairs, %d fingerprints exact; "
          "write_merges=%s adds_merged=%s" % (clients * per, clients, len(per_pair), len(want),
                                              stats.get("write_merges"), stats.get("adds_merged")))


def stall(port, clients, per, seed):
    sent = plan(clients, per, seed)
    t0 = time.time()
    replies = send_all(port, sent, 60)
    ok = errors = 0
    acked = {}
    for reqs, got in zip(sent, replies):
        for (fp, d), r in zip(reqs, got):
            if isinstance(r, int):
                ok += 1
                acked.setdefault(fp, set()).add(d)
            elif isinstance(r, tuple):
                errors += 1
            else:
                fail("ADD answered %r" % (r,))
    print("stall: %d integers, %d errors in %.1f s" % (ok, errors, time.time() - t0))
    found = stored_ids(port, acked)
    for fp, ids in acked.items():
        if not ids <= found[fp]:
            fail("acknowledged ids of %d missing: %r" % (fp, sorted(ids - found[fp])))
    print("stall: every acknowledged pair found (%d fingerprints)" % len(acked))


def main():
    mode, port, clients, per, seed = sys.argv[1], *map(int, sys.argv[2:6])
    if mode == "counts":
        counts(port, clients, per, seed)
    elif mode == "stall":
        stall(port, clients, per, seed)
    else:
        fail("unknown mode " + mode)


if __name__ == "__main__":
    main()
