"""tests/tools/merge_check.py: one-pair writes of many clients written together (the
coordinator's merge-adds: one-pair SIMHASH.ADDs and the adds of SIMHASH.CHECK /
CHECKTEXT; docs/coordinator.md, "Writes of many clients").
  counts   CLIENTS connections each pipeline their one-pair ADDs at once over a pool of
           fingerprints that the clients share, some pairs sent by two clients, some
           fingerprints with several ids: every reply is an integer, each distinct
           (fingerprint, id) counts 1 in exactly one reply, and every fingerprint is
           then found at distance 0 with exactly its ids. Prints SIMHASH.INFO's
           write_merges and adds_merged (the caller checks them)
  checks   a base corpus is added first; then CLIENTS connections each pipeline CHECKs
           of planted near-duplicates of it (0..3 bits and 4 bits from a base
           fingerprint, from a shared pool: some sent by two clients) and a few
           CHECKTEXTs: each CHECK answers every base fingerprint within 3 bits and
           none beyond (the base was stored before it was sent), every match it
           gives is within 3 bits and stored by someone; each CHECKTEXT answers its
           fingerprint; then every pair is found with exactly its ids. Prints
           write_merges and checks_merged (the caller checks them)
  stall    ADDs and CHECKs while the caller stops a worker (SIGSTOP) for a while:
           every request is answered within the bound (an error, or an integer / an
           array of matches, no hang), and every pair so answered is found once the
           worker is back
  shutdown CHECKs and ADDs pipelined (then "sent" is printed) while the caller stops
           the coordinator (SIGTERM): each connection gets well-formed replies
           (matches, integers, -SHARDDOWN or -TIMEOUT), then EOF, within the bound
Usage: merge_check.py MODE PORT CLIENTS PAIRS_PER_CLIENT SEED"""
import random
import socket
import sys
import time

from resp_client import C, enc


def fail(msg):
    print("merge_check: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


K = 3


def plan(clients, per, seed, pool=None, cmds=("SIMHASH.ADD",)):
    """The requests of each client: (command, fp, id) over a shared pool of
    fingerprints (random ones unless given; several requests a fingerprint, some
    pairs sent by two clients), each command one of cmds at random."""
    rnd = random.Random(seed)
    if pool is None:
        pool = [rnd.getrandbits(64) for _ in range(max(8, clients * per // 3))]
    sent = [[] for _ in range(clients)]
    for c in range(clients):
        for _ in range(per):
            fp = rnd.choice(pool)
            docid = "d%d-%x" % (rnd.randrange(3), fp)      # up to 3 ids a fingerprint
            sent[c].append((rnd.choice(cmds), fp, docid))
    return sent


def flip(rnd, fp, bits):
    for b in rnd.sample(range(64), bits):
        fp ^= 1 << b
    return fp


def send_all(port, sent, timeout):
    """Every client's requests written at once (one pipeline each), then every reply
    read; returns the replies per client. Fails when a reply does not come in time."""
    conns = [C(port, timeout=timeout) for _ in sent]
    for conn, reqs in zip(conns, sent):
        conn.s.sendall(b"".join(enc(cmd, *args) for cmd, *args in reqs))
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
        for (_, fp, d), r in zip(reqs, got):
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
    stats = info(port)
    print("counts: %d requests of %d clients, %d pairs, %d fingerprints exact; "
          "write_merges=%s adds_merged=%s" % (clients * per, clients, len(per_pair), len(want),
                                              stats.get("write_merges"), stats.get("adds_merged")))


def info(port):
    text = C(port).call("SIMHASH.INFO").decode()
    return dict(l.split(":", 1) for l in text.splitlines() if ":" in l)


def matches(r):
    """{fp: set of ids} of a QUERY / CHECK answer."""
    return {int(m[0]): {x.decode() for x in m[2]} for m in r}


def checks(port, clients, per, seed):
    rnd = random.Random(seed)
    base = {}
    for i in range(max(8, clients * per // 8)):
        base[rnd.getrandbits(64)] = "base-%d" % i
    c = C(port, timeout=60)
    c.s.sendall(b"".join(enc("SIMHASH.ADD", fp, d) for fp, d in base.items()))
    for fp in base:
        if c.reply() != 1:
            fail("the base corpus was not added")
    # planted near-duplicates: 0..K bits from a base fingerprint must match it, K+1 not
    pool = [flip(rnd, fp, rnd.randrange(K + 2)) for fp in base for _ in range(2)]
    sent = plan(clients, per, seed + 1, pool, ("SIMHASH.CHECK",))
    texts = []
    for cl in range(clients):
        for j in range(3):
            words = " ".join("w%d" % rnd.getrandbits(20) for _ in range(60))
            docid = "text-%d-%d" % (cl, j)
            sent[cl].append(("SIMHASH.CHECKTEXT", docid, words))
            texts.append(docid)
    replies = send_all(port, sent, 120)
    want, text_fp, answered = {}, {}, []
    for reqs, got in zip(sent, replies):
        for (cmd, a, b), r in zip(reqs, got):
            if cmd == "SIMHASH.CHECKTEXT":
                if not (isinstance(r, list) and len(r) == 2 and isinstance(r[1], list)):
                    fail("CHECKTEXT %s answered %r" % (a, r))
                text_fp[a] = int(r[0])
                continue
            if not isinstance(r, list):
                fail("CHECK %d %s answered %r" % (a, b, r))
            got_fps = matches(r)
            near = {fp for fp in base if bin(fp ^ a).count("1") <= K}
            if not near <= set(got_fps):
                fail("CHECK %d missed base fingerprints %r" % (a, sorted(near - set(got_fps))))
            for fp in got_fps:
                if bin(fp ^ a).count("1") > K:
                    fail("CHECK %d returned %d, %d bits away" % (a, fp, bin(fp ^ a).count("1")))
            answered.append((a, got_fps))
            want.setdefault(a, set()).add(b)
    stored = set(base) | set(pool) | set(text_fp.values())
    for a, got_fps in answered:
        if not set(got_fps) <= stored:
            fail("CHECK %d returned fingerprints no one stored: %r" % (a, sorted(set(got_fps) - stored)))
    found = stored_ids(port, list(want) + list(text_fp.values()))
    for fp, ids in want.items():
        extra = {base[fp]} if fp in base else set()
        if found[fp] != ids | extra:
            fail("fingerprint %d: ids %r, want %r" % (fp, sorted(found[fp]), sorted(ids | extra)))
    for docid, fp in text_fp.items():
        if docid not in found[fp]:
            fail("CHECKTEXT %s: its page %d does not hold it: %r" % (docid, fp, sorted(found[fp])))
    st = info(port)
    print("checks: %d CHECKs and %d CHECKTEXTs of %d clients against %d base fingerprints, "
          "%d fingerprints exact; write_merges=%s checks_merged=%s" %
          (clients * per, len(texts), clients, len(base), len(want), st.get("write_merges"),
           st.get("checks_merged")))


def stall(port, clients, per, seed):
    sent = plan(clients, per, seed, cmds=("SIMHASH.ADD", "SIMHASH.CHECK"))
    t0 = time.time()
    replies = send_all(port, sent, 60)
    ok = errors = 0
    acked = {}
    for reqs, got in zip(sent, replies):
        for (cmd, fp, d), r in zip(reqs, got):
            if isinstance(r, int) if cmd == "SIMHASH.ADD" else isinstance(r, list):
                ok += 1
                acked.setdefault(fp, set()).add(d)
            elif isinstance(r, tuple):
                errors += 1
            else:
                fail("%s answered %r" % (cmd, r))
    print("stall: %d answers, %d errors in %.1f s" % (ok, errors, time.time() - t0))
    found = stored_ids(port, acked)
    for fp, ids in acked.items():
        if not ids <= found[fp]:
            fail("acknowledged ids of %d missing: %r" % (fp, sorted(ids - found[fp])))
    print("stall: every acknowledged pair found (%d fingerprints)" % len(acked))


def shutdown(port, clients, per, seed):
    sent = plan(clients, per, seed, cmds=("SIMHASH.ADD", "SIMHASH.CHECK"))
    conns = [C(port, timeout=60) for _ in sent]
    for conn, reqs in zip(conns, sent):
        conn.s.sendall(b"".join(enc(cmd, *args) for cmd, *args in reqs))
    print("sent", flush=True)       # the caller stops the coordinator now
    ok = down = 0
    for conn, reqs in zip(conns, sent):
        for cmd, _, _ in reqs:
            try:
                r = conn.reply()
            except (EOFError, ConnectionResetError):  # closed with requests unread: RST
                break
            except socket.timeout:
                fail("no reply and no EOF within 60 s of the coordinator's stop")
            if isinstance(r, tuple):
                if not r[1].startswith(("SHARDDOWN", "TIMEOUT")):
                    fail("%s answered %r while the coordinator stopped" % (cmd, r))
                down += 1
            elif (cmd == "SIMHASH.ADD") != isinstance(r, int):
                fail("%s answered %r" % (cmd, r))
            else:
                ok += 1
    print("shutdown: %d answered, %d answered with an error, the rest cut by the close (of %d)" %
          (ok, down, clients * per))


def main():
    mode, port, clients, per, seed = sys.argv[1], *map(int, sys.argv[2:6])
    if mode == "counts":
        counts(port, clients, per, seed)
    elif mode == "checks":
        checks(port, clients, per, seed)
    elif mode == "shutdown":
        shutdown(port, clients, per, seed)
    elif mode == "stall":
        stall(port, clients, per, seed)
    else:
        fail("unknown mode " + mode)


if __name__ == "__main__":
    main()
