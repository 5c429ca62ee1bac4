#!/usr/bin/env python3
"""bench/hostile/conns.py MODE --port P [...]: hostile connections on loopback; prints
key=value lines, and with --check exits 1 unless the service property of MODE holds.
The hostile side binds its sockets to --from (default 127.0.0.2, another loopback
address), the well-behaved clients to 127.0.0.1.

  slow      --conns N: N connections each trickling one byte a second of an unfinished
            request for --seconds; meanwhile --clients new clients (one after another,
            PING) are counted served or refused. check: at least 9 in 10 served.
  metrics   --conns N --metrics-port M: N connections trickling one byte a second of an
            HTTP request to the metrics port; meanwhile --clients clients AUTH (--password)
            and PING the RESP port. check: every one served.
  auth      --conns N --seconds S --password PW: N connections each pipelining wrong
            passwords as fast as they are answered; prints the wrong guesses answered
            per second from that address. check: under --max-rate (default 100).
stdlib only."""
import argparse
import os
import selectors
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "tools"))
from resp_client import C, enc  # noqa: E402


def connect_from(src, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    return s


def open_many(src, port, n):
    out = []
    for _ in range(n):
        try:
            out.append(connect_from(src, port))
        except OSError:
            break
    return out


def client_ok(port, password):
    """One well-behaved client: connect, AUTH when a password is given, PING."""
    try:
        c = C(port, timeout=10)
        if password:
            c.s.sendall(enc("AUTH", password))
            if c.reply() != "OK":
                return False
        c.s.sendall(enc("PING"))
        ok = c.reply() == "PONG"
        c.s.close()
        return ok
    except (OSError, EOFError):
        return False


def trickle(conns, payload, seconds, port, clients, password):
    """Send one more byte of payload on every open connection each second; meanwhile
    run the well-behaved clients spread over the time. Returns (served, still open)."""
    served, t0, k, step = 0, time.monotonic(), 0, seconds / max(clients, 1)
    sent = 0                            # bytes of payload each connection sent so far
    while time.monotonic() - t0 < seconds:
        if time.monotonic() - t0 >= sent and sent < len(payload):
            for s in list(conns):
                try:
                    s.send(payload[sent:sent + 1])
                except OSError:
                    conns.remove(s)
                    s.close()
            sent += 1
        while k < clients and time.monotonic() - t0 >= k * step:
            served += client_ok(port, password)
            k += 1
        time.sleep(0.2)
    while k < clients:
        served += client_ok(port, password)
        k += 1
    for s in list(conns):              # the ones the server closed
        try:
            if s.recv(4096) == b"":
                conns.remove(s)
        except BlockingIOError:
            pass
        except OSError:
            conns.remove(s)
    return served, len(conns)


def mode_auth(a):
    conns = open_many(a.src, a.port, a.conns)
    sel = selectors.DefaultSelector()
    guess = enc("AUTH", "wrong-guess")
    for s in conns:
        s.sendall(guess * 3)        # pipelined: 3 tries a connection, then it is closed
        sel.register(s, selectors.EVENT_READ)
    wrong, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < a.seconds:
        for key, _ in sel.select(0.5):
            s = key.fileobj
            try:
                d = s.recv(65536)
            except OSError:
                d = b""
            wrong += d.count(b"-WRONGPASS")
            if not d:                   # closed after its tries: reconnect, go on
                sel.unregister(s)
                s.close()
                try:
                    s = connect_from(a.src, a.port)
                    s.sendall(guess * 3)
                    sel.register(s, selectors.EVENT_READ)
                except OSError:
                    pass
    rate = wrong / (time.monotonic() - t0)
    print("mode=auth conns=%d seconds=%.0f wrong_answered=%d wrong_per_sec=%.1f"
          % (a.conns, a.seconds, wrong, rate))
    return rate < a.max_rate


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["slow", "metrics", "auth"])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--metrics-port", type=int)
    ap.add_argument("--conns", type=int, default=1100)
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--password", default="")
    ap.add_argument("--from", dest="src", default="127.0.0.2")
    ap.add_argument("--max-rate", type=float, default=100)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.mode == "auth":
        ok = mode_auth(a)
    else:
        target = a.metrics_port if a.mode == "metrics" else a.port
        payload = (b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4000
                   if a.mode == "metrics" else b"*2\r\n$4\r\nPING\r\n$60000\r\n" + b"x" * 60000)
        conns = open_many(a.src, target, a.conns)
        opened = len(conns)
        served, left = trickle(conns, payload, a.seconds, a.port, a.clients, a.password)
        print("mode=%s conns_asked=%d conns_opened=%d conns_open_at_end=%d clients=%d served=%d"
              % (a.mode, a.conns, opened, left, a.clients, served))
        need = a.clients if a.mode == "metrics" else (a.clients * 9 + 9) // 10
        ok = served >= need
        for s in conns:
            s.close()
    return 0 if ok or not a.check else 1


if __name__ == "__main__":
    sys.exit(main())
