"""tests/tools/resp_client.py: a small blocking RESP2 client for the integration tests
(stdlib only). enc() encodes one request as a RESP array of bulk strings; C(port) is one
connection to 127.0.0.1:port whose reply() parses the next reply: simple strings as str,
errors as ("ERR", text), integers as int, bulk strings as bytes (None for nil) and
arrays as lists."""
import socket


def enc(*a):
    """Return the RESP encoding of the request a (bytes, or anything str() encodes)."""
    out = [b"*%d\r\n" % len(a)]
    for x in a:
        x = x if isinstance(x, bytes) else str(x).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(x), x))
    return b"".join(out)


class C:
    """One connection with a read buffer; every read times out after 10 s."""

    def __init__(s, port, timeout=10):
        s.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        s.buf = b""

    def fill(s):
        """Append what the server sent next to the buffer; EOFError if it closed."""
        d = s.s.recv(65536)
        if not d:
            raise EOFError("closed")
        s.buf += d

    def line(s):
        """Return the next CRLF-terminated line without its CRLF."""
        while b"\r\n" not in s.buf:
            s.fill()
        l, s.buf = s.buf.split(b"\r\n", 1)
        return l

    def exact(s, n):
        """Return the next n bytes, dropping the CRLF after them."""
        while len(s.buf) < n + 2:
            s.fill()
        v, s.buf = s.buf[:n], s.buf[n + 2:]
        return v

    def reply(s):
        """Return the next reply, parsed; ValueError on an unknown type byte."""
        l = s.line()
        t, r = l[:1], l[1:]
        if t == b"+":
            return r.decode()
        if t == b"-":
            return ("ERR", r.decode())
        if t == b":":
            return int(r)
        if t == b"$":
            return None if int(r) < 0 else s.exact(int(r))
        if t == b"*":
            return [s.reply() for _ in range(int(r))]
        raise ValueError(l)

    def call(s, *a):
        """Send one request and return its reply."""
        s.s.sendall(enc(*a))
        return s.reply()

    def closed(s):
        """Return True once the server has closed the connection (reading to EOF),
        False if it stays open until the read timeout."""
        try:
            while True:
                d = s.s.recv(65536)
                if not d:
                    return True
        except socket.timeout:
            return False
        except OSError:
            return True
