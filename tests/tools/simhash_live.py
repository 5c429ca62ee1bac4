#!/usr/bin/env python3
"""simhash_live.py: a client that keeps adding and querying while the deployment
changes under it (slots moving, a master failing over), and checks every answer.

Built on simhash_e2e.py (RESP client, reply parsing). It keeps two models:
acknowledged (fp, doc) pairs, whose SIMHASH.ADD answered an integer, and uncertain
ones, whose ADD answered an error or lost its connection (they may or may not be
stored; they are retried until acknowledged). A query answer is wrong when it misses
an acknowledged fingerprint within the distance, returns a fingerprint that is neither
acknowledged nor uncertain, gives a wrong distance, misses an acknowledged document
id, returns an unknown one, or is out of order. Error replies are allowed and counted
by their first word; wrong answers fail.

Subcommands (all take --port, the coordinator's port, on --host, default 127.0.0.1):
  run    add and query until --stop-file exists or --seconds pass (at most --max-adds
         new pairs, at most --add-rate per second); --progress FILE is rewritten every 0.5 s with the counters;
         --state-out FILE receives both models
  check  after the change: retry uncertain pairs, then query every acknowledged
         fingerprint (and near misses) and compare exactly; --state FILE; with
         --allow-uncertain-missing 0 an uncertain pair that still cannot be added fails
Exit status 0 when no answer was wrong (and, for check, nothing acknowledged is
missing), 1 otherwise; the last line summarises.
"""

import argparse
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simhash_e2e import Conn, ConnClosed, Err, encode, flip, parse_matches  # noqa: E402


class Live:
    def __init__(self, a):
        self.a = a
        self.k = a.distance
        self.acked = {}        # fp -> set of doc ids acknowledged
        self.unc = {}          # fp -> set of doc ids whose ADD failed (maybe stored)
        self.fps = []          # acknowledged fingerprints, for the brute-force model
        self.counts = {"adds_sent": 0, "adds_acked": 0, "queries": 0, "queries_ok": 0,
                       "queries_error": 0, "adds_error": 0, "reconnects": 0,
                       "wrong": 0, "retries_acked": 0}
        self.errors = {}       # error prefix -> count
        self.error_samples = []  # the first error replies in full, for the summary
        self.deadline_errors = 0  # of those, a deadline that passed (see count_error)
        self.wrong_shown = 0
        self.conn = None
        self.slowest = 0.0

    # ---- connection ----

    def command(self, *args):
        """One request; returns the reply, or an Err("CONNECTION ...") when the
        connection broke (it is reopened on the next call)."""
        try:
            if self.conn is None:
                self.conn = Conn(self.a.port, host=self.a.host, timeout=self.a.reply_timeout)
            t0 = time.monotonic()
            r = self.conn.command(*args)
            self.slowest = max(self.slowest, time.monotonic() - t0)
            return r
        except (OSError, ConnClosed) as e:
            if self.conn is not None:
                try:
                    self.conn.close()
                except OSError:
                    pass
            self.conn = None
            self.counts["reconnects"] += 1
            time.sleep(0.05)
            return Err("CONNECTION %s" % e)

    def count_error(self, r):
        p = r.prefix()
        self.errors[p] = self.errors.get(p, 0) + 1
        if len(self.error_samples) < 5:
            self.error_samples.append(str(r)[:300])
        # a request deadline that passed: the coordinator's -TIMEOUT, a worker's "timeout:
        # redis did not answer within N ms", or -TRYAGAIN still answered at its deadline.
        # On a machine short of CPU these say how busy it was, not that routing was wrong.
        t = r.text
        if p == "TIMEOUT" or (p == "REDIS" and ("timeout: " in t or "TRYAGAIN" in t)):
            self.deadline_errors += 1

    # ---- the model ----

    def ack(self, fp, doc):
        s = self.acked.get(fp)
        if s is None:
            s = self.acked[fp] = set()
            self.fps.append(fp)
        s.add(doc)
        u = self.unc.get(fp)
        if u is not None:
            u.discard(doc)
            if not u:
                del self.unc[fp]

    def add(self, fp, doc, retry=False):
        self.counts["adds_sent"] += 1
        r = self.command("SIMHASH.ADD", fp, doc)
        if isinstance(r, int) and r in (0, 1):
            self.ack(fp, doc)
            self.counts["adds_acked"] += 1
            if retry:
                self.counts["retries_acked"] += 1
            return True
        if isinstance(r, Err):
            self.count_error(r)
            self.counts["adds_error"] += 1
        else:
            self.wrong("ADD %d %s -> %r, want 0 or 1" % (fp, doc, r))
        self.unc.setdefault(fp, set()).add(doc)
        return False

    def wrong(self, msg):
        self.counts["wrong"] += 1
        if self.wrong_shown < 10:
            print("WRONG %s" % msg, flush=True)
        self.wrong_shown += 1

    def judge(self, q, d, r, tag="query"):
        """Check one QUERY reply against both models; True when right."""
        try:
            got = parse_matches(r)
        except ValueError as e:
            self.wrong("%s q=%d: %s" % (tag, q, e))
            return False
        ok = True
        want = {fp: (fp ^ q).bit_count() for fp in self.fps if (fp ^ q).bit_count() <= d}
        seen = set()
        for fp, dist, docs in got:
            if fp in seen:
                self.wrong("%s q=%d: fingerprint %d twice" % (tag, q, fp))
                ok = False
            seen.add(fp)
            if dist != (fp ^ q).bit_count() or dist > d:
                self.wrong("%s q=%d: fp %d distance %d, want %d (limit %d)"
                           % (tag, q, fp, dist, (fp ^ q).bit_count(), d))
                ok = False
            if fp not in want and fp not in self.unc:
                self.wrong("%s q=%d: extra fingerprint %d (never added)" % (tag, q, fp))
                ok = False
                continue
            need = self.acked.get(fp, set())
            allowed = need | self.unc.get(fp, set())
            if not need <= docs:
                self.wrong("%s q=%d fp=%d: missing acknowledged documents %s"
                           % (tag, q, fp, sorted(need - docs)[:5]))
                ok = False
            if not docs <= allowed:
                self.wrong("%s q=%d fp=%d: unknown documents %s"
                           % (tag, q, fp, sorted(docs - allowed)[:5]))
                ok = False
        missed = [fp for fp in want if fp not in seen]
        if missed:
            self.wrong("%s q=%d d=%d: missed acknowledged %s" % (tag, q, d, missed[:5]))
            ok = False
        order = [(g[1], g[0]) for g in got]
        if order != sorted(order):
            self.wrong("%s q=%d: not nearest first then by fp" % (tag, q))
            ok = False
        return ok

    def query(self, q):
        self.counts["queries"] += 1
        r = self.command("SIMHASH.QUERY", q)
        if isinstance(r, Err):
            self.count_error(r)
            self.counts["queries_error"] += 1
            return
        if self.judge(q, self.k, r):
            self.counts["queries_ok"] += 1

    # ---- state ----

    def snapshot(self):
        return {"counts": self.counts, "errors": self.errors, "acked_fps": len(self.acked),
                "uncertain_fps": len(self.unc), "slowest_reply_ms": round(self.slowest * 1000),
                "time": time.time()}

    def save(self, path):
        data = {"distance": self.k,
                "acked": {str(fp): sorted(d) for fp, d in self.acked.items()},
                "uncertain": {str(fp): sorted(d) for fp, d in self.unc.items()},
                "summary": self.snapshot()}
        with open(path + ".tmp", "w") as f:
            json.dump(data, f)
        os.replace(path + ".tmp", path)

    def load(self, path):
        with open(path) as f:
            data = json.load(f)
        for fp, docs in data["acked"].items():
            for d in docs:
                self.ack(int(fp), d)
        for fp, docs in data["uncertain"].items():
            if int(fp) in self.acked and set(docs) <= self.acked[int(fp)]:
                continue
            self.unc.setdefault(int(fp), set()).update(docs)
        return data


def write_progress(path, live):
    if not path:
        return
    with open(path + ".tmp", "w") as f:
        json.dump(live.snapshot(), f)
    os.replace(path + ".tmp", path)


def cmd_run(a):
    live = Live(a)
    rng = random.Random(a.seed)
    t0 = time.monotonic()
    t_end = t0 + a.seconds
    next_progress = 0.0
    n = 0
    while time.monotonic() < t_end:
        if a.stop_file and os.path.exists(a.stop_file):
            break
        n += 1
        # retry one uncertain pair now and then (the write may have failed midway)
        if live.unc and n % 5 == 0:
            fp = next(iter(live.unc))
            live.add(fp, next(iter(live.unc[fp])), retry=True)
        elif (n % 3 == 0 and live.counts["adds_sent"] < a.max_adds and
              (not a.add_rate or live.counts["adds_sent"] < a.add_rate * (time.monotonic() - t0))):
            if live.fps and rng.random() < 0.5:
                fp = flip(rng, rng.choice(live.fps), rng.randint(1, a.distance + 1))
            else:
                fp = rng.getrandbits(64)
            live.add(fp, "live%d-%d" % (a.seed, n))
        elif live.fps:
            q = flip(rng, rng.choice(live.fps), rng.randint(0, a.distance + 1))
            live.query(q)
        else:
            live.query(rng.getrandbits(64))
        if a.pause_ms:
            time.sleep(a.pause_ms / 1000.0)
        if time.monotonic() >= next_progress:
            write_progress(a.progress, live)
            next_progress = time.monotonic() + 0.5
    write_progress(a.progress, live)
    if a.state_out:
        live.save(a.state_out)
    s = live.snapshot()
    for e in live.error_samples:   # before the summary: callers read the last line
        print("error reply: %s" % e, flush=True)
    print("run: %d adds sent, %d acknowledged (%d fingerprints), %d uncertain; %d queries, "
          "%d right, %d error replies; errors by kind %s; %d reconnects; slowest reply %d ms; "
          "%d wrong answers; %d of %d errors past a deadline"
          % (s["counts"]["adds_sent"], s["counts"]["adds_acked"], s["acked_fps"],
             s["uncertain_fps"], s["counts"]["queries"], s["counts"]["queries_ok"],
             s["counts"]["queries_error"], json.dumps(live.errors, sort_keys=True),
             s["counts"]["reconnects"], s["slowest_reply_ms"], s["counts"]["wrong"],
             live.deadline_errors, sum(live.errors.values())), flush=True)
    return 0 if live.counts["wrong"] == 0 else 1


def cmd_check(a):
    live = Live(a)
    live.load(a.state)
    rng = random.Random(a.seed)
    # retry what is uncertain until it is acknowledged (or the time runs out)
    t_end = time.monotonic() + a.seconds
    unc0 = len(live.unc)
    while live.unc and time.monotonic() < t_end:
        fp = next(iter(live.unc))
        if not live.add(fp, next(iter(live.unc[fp])), retry=True):
            time.sleep(0.1)
    # every acknowledged fingerprint, pipelined, exactly
    qs = sorted(live.acked)
    qs += [flip(rng, rng.choice(qs), rng.randint(1, a.distance + 1)) for _ in range(len(qs) // 10)]
    c = Conn(a.port, host=a.host, timeout=a.reply_timeout)
    errs = 0
    missing = 0
    for i in range(0, len(qs), 200):
        part = qs[i:i + 200]
        c.send_raw(b"".join(encode(["SIMHASH.QUERY", q]) for q in part))
        for q in part:
            r = c.read_reply()
            if isinstance(r, Err):
                errs += 1
                live.count_error(r)
                continue
            if q in live.acked:
                try:
                    if not any(g[0] == q for g in parse_matches(r)):
                        missing += 1
                except ValueError:
                    pass
            live.judge(q, a.distance, r, "check")
    ok = live.counts["wrong"] == 0 and errs == 0
    if live.unc and not a.allow_uncertain:
        print("FAIL %d pairs could not be added within %d s" % (len(live.unc), a.seconds))
        ok = False
    print("check: %d acknowledged fingerprints, %d queries, %d error replies %s, %d acknowledged "
          "missing, %d wrong answers; %d uncertain pairs before, %d retried now, %d still "
          "uncertain" % (len(live.acked), len(qs), errs, json.dumps(live.errors, sort_keys=True),
                         missing, live.counts["wrong"], unc0, live.counts["retries_acked"],
                         len(live.unc)), flush=True)
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("cmd", choices=["run", "check"])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--distance", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--max-adds", type=int, default=4000)
    p.add_argument("--add-rate", type=float, default=0.0,
                   help="run: at most this many ADDs per second on average (0: no limit)")
    p.add_argument("--pause-ms", type=float, default=0.0)
    p.add_argument("--reply-timeout", type=float, default=10.0)
    p.add_argument("--stop-file")
    p.add_argument("--progress")
    p.add_argument("--state")
    p.add_argument("--state-out")
    p.add_argument("--allow-uncertain", action="store_true",
                   help="check: pairs never acknowledged do not fail the check")
    a = p.parse_args()
    if a.cmd == "check" and not a.state:
        p.error("check needs --state")
    fn = {"run": cmd_run, "check": cmd_check}[a.cmd]
    try:
        return fn(a)
    except (OSError, ConnClosed, ValueError) as e:
        print("FAIL %s: %s: %s" % (a.cmd, type(e).__name__, e), flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
