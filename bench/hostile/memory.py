#!/usr/bin/env python3
"""bench/hostile/memory.py MODE --port P --pid PID [...]: memory that clients make a
daemon hold, on loopback; prints key=value lines (RSS from /proc/PID/status, the INFO
budget fields), and with --check exits 1 unless the property of MODE holds.

  unauth  --conns N: N connections (spread over 127.0.0.2..127.0.0.5, so that
          max-clients-per-addr does not refuse them) each send a legal unfinished
          request of --request-kib (default 160, the most allowed before AUTH) and wait.
          check: RSS grew less than --max-growth-mib (default 64) and INFO
          unauth_request_bytes is within max_unauth_bytes plus one request.
  output  --conns N: N clients pipeline --requests ECHO of 1 MiB each and never read.
          check: every INFO sample of client_output_total is within max_output_total
          plus --slack-mib (default 8: one pass of the event loop), and at least one
          client was disconnected for it when the sum of what they asked passes it.
stdlib only."""
import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "tools"))
from resp_client import C, enc  # noqa: E402


def rss_mib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def info(port, password):
    c = C(port, timeout=30)
    if password:
        c.s.sendall(enc("AUTH", password))
        c.reply()
    c.s.sendall(enc("INFO"))
    text = c.reply().decode()
    c.s.close()
    return dict(l.split(":", 1) for l in text.split("\r\n") if ":" in l and not l.startswith("#"))


def connect(src, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    return s


def mode_unauth(a):
    arg = max(a.request_kib * 1024 // 10, 128)
    req = b"*10\r\n" + (b"$%d\r\n" % arg + b"x" * arg + b"\r\n") * 9 + b"$%d\r\n" % arg + b"x" * (arg - 100)
    before = rss_mib(a.pid)
    conns = []
    for i in range(a.conns):
        try:
            s = connect("127.0.0.%d" % (2 + i % 4), a.port)
            s.sendall(req)
            conns.append(s)
        except OSError:
            pass
    time.sleep(2)
    after = rss_mib(a.pid)
    inf = info(a.port, a.password)
    print("mode=unauth conns=%d sent=%d rss_before_mib=%.1f rss_after_mib=%.1f growth_mib=%.1f "
          "unauth_request_bytes=%s evicted=%s evicted_unauthenticated=%s"
          % (a.conns, len(conns), before, after, after - before, inf.get("unauth_request_bytes"),
             inf.get("evicted_unauth_bytes_budget"), inf.get("evicted_unauthenticated")))
    for s in conns:
        s.close()
    held, budget = int(inf.get("unauth_request_bytes", 0)), int(inf.get("max_unauth_bytes", 0))
    return after - before < a.max_growth_mib and (budget == 0 or held <= budget + (256 << 10))


def mode_output(a):
    body = b"z" * (1 << 20)
    before = rss_mib(a.pid)
    conns = []
    for i in range(a.conns):
        s = connect("127.0.0.%d" % (2 + i % 4), a.port)
        s.setblocking(False)
        conns.append([s, enc("ECHO", body) * a.requests])
    t0, worst, peak_rss = time.monotonic(), 0, before
    budget = None
    while time.monotonic() - t0 < a.seconds:
        for c in conns:
            if c[1]:
                try:
                    n = c[0].send(c[1][:1 << 20])
                    c[1] = c[1][n:]
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    c[1] = b""
        inf = info(a.port, a.password)
        budget = int(inf["max_output_total"])
        worst = max(worst, int(inf["client_output_total"]))
        peak_rss = max(peak_rss, rss_mib(a.pid))
        time.sleep(0.2)
    evicted = int(info(a.port, a.password).get("evicted_output_total_budget", 0))
    print("mode=output conns=%d asked_mib=%d budget_mib=%.0f worst_output_total_mib=%.1f "
          "evicted=%d rss_before_mib=%.1f rss_peak_mib=%.1f"
          % (a.conns, a.conns * a.requests, budget / 1048576.0, worst / 1048576.0, evicted,
             before, peak_rss))
    for c in conns:
        c[0].close()
    ok = worst <= budget + (a.slack_mib << 20)
    if budget and a.conns * a.requests * 1048576 > 2 * budget:
        ok = ok and evicted >= 1
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["unauth", "output"])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--conns", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--request-kib", type=int, default=160)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--password", default="")
    ap.add_argument("--max-growth-mib", type=float, default=64)
    ap.add_argument("--slack-mib", type=int, default=8)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    ok = mode_unauth(a) if a.mode == "unauth" else mode_output(a)
    return 0 if ok or not a.check else 1


if __name__ == "__main__":
    sys.exit(main())
