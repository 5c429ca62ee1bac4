#!/usr/bin/env python3
"""bench/hostile/html_stall.py --port P [--senders 2] [--queries 300] [--page-kib 1024]:
does one client's HTML stall the others? A third client's SIMHASH.QUERY latency, first
quiet, then while `senders` clients loop on SIMHASH.FINGERPRINT <page> FORMAT html.
Prints key=value lines: the quiet and loaded p50/p99 (ms), their ratio, the pages
fingerprinted and the query errors. With --check it exits 1 unless every query was
answered without an error and every sender got fingerprints (a service property,
never a timing). stdlib only; loopback only."""
import argparse
import multiprocessing as mp
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "tools"))
from resp_client import C, enc  # noqa: E402


def page(kib):
    """An HTML page of just under kib KiB (1024: the largest argument the coordinator
    takes by default, max-arg-bytes 1m): blocks, inline tags, a script."""
    parts, n, i = ["<html><head><title>t</title><script>var x=1;</script></head><body>"], 0, 0
    while n < (kib << 10) - 400:
        s = ("<div class='c%d'><p>word%d <b>bold%d</b> <a href='/l%d'>link</a> text "
             "near duplicate detection</p><span>%d</span></div>\n" % (i % 7, i, i, i, i))
        parts.append(s)
        n += len(s)
        i += 1
    parts.append("</body></html>")
    return "".join(parts).encode()


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else 0.0


def queries(port, n):
    """n QUERYs on one connection: latencies (ms) and the error replies."""
    c, lat, errs = C(port, timeout=30), [], []
    for i in range(n):
        t = time.monotonic()
        c.s.sendall(enc("SIMHASH.QUERY", (i * 0x9E3779B97F4A7C15) & (2**64 - 1)))
        r = c.reply()
        lat.append((time.monotonic() - t) * 1000.0)
        if isinstance(r, tuple):
            errs.append(r[1])
    return lat, errs


def sender(port, kib, stop, out, k):
    """A process (not a thread: the measuring client must not wait for the GIL) that
    fingerprints the page in a loop; out[k] counts the fingerprints it got."""
    c = C(port, timeout=60)
    req = enc("SIMHASH.FINGERPRINT", page(kib), "FORMAT", "html")
    while not stop.is_set():
        c.s.sendall(req)
        r = c.reply()
        if not isinstance(r, tuple):
            out[k] += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--senders", type=int, default=2)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--page-kib", type=int, default=1024)
    ap.add_argument("--label", default="")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    body = page(a.page_kib)
    quiet, qerr = queries(a.port, a.queries)
    stop, done = mp.Event(), mp.Array("l", a.senders)
    ts = [mp.Process(target=sender, args=(a.port, a.page_kib, stop, done, k), daemon=True)
          for k in range(a.senders)]
    for t in ts:
        t.start()
    while sum(done) < a.senders:        # the load is on before measuring
        time.sleep(0.05)
    loaded, lerr = queries(a.port, a.queries)
    stop.set()
    for t in ts:
        t.join(120)
        if t.is_alive():
            t.kill()
    done = list(done)
    q50, q99, l50, l99 = pct(quiet, .5), pct(quiet, .99), pct(loaded, .5), pct(loaded, .99)
    lab = ("label=%s " % a.label) if a.label else ""
    print("%spage_bytes=%d senders=%d queries=%d quiet_p50_ms=%.2f quiet_p99_ms=%.2f "
          "loaded_p50_ms=%.2f loaded_p99_ms=%.2f p99_ratio=%.2f pages=%d query_errors=%d"
          % (lab, len(body), a.senders, a.queries, q50, q99, l50, l99, l99 / max(q99, 1e-3),
             sum(done), len(qerr) + len(lerr)))
    if a.check and (qerr or lerr or min(done) == 0):
        print("check failed: errors %s, pages per sender %s" % ((qerr + lerr)[:3], done),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
