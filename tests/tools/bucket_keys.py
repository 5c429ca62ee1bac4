"""tests/tools/bucket_keys.py: what a corpus's keys on one Redis are (stdlib
only), for test_tombstones.sh and test_split_exact.sh.

  bucket_keys.py PORT [PATTERN]
      SCANs the keys matching PATTERN (default b"s:{*", the buckets and their
      tombstones of the unnamed corpus; "*" for every key) and prints name=value
      lines: buckets (sorted sets), largest (most members of one), tombstones (string
      keys), pttl_min and pttl_max (of the tombstones, in ms: -1 one has no expiry;
      both 0 when there are none), others (keys of any other type).
Exit status 0, or 1 when Redis cannot be read."""
import sys

from resp_client import C


def main(a):
    c = C(int(a[1]))
    pattern = a[2].encode() if len(a) > 2 else b"s:{*"
    buckets = largest = strings = others = 0
    pmin = pmax = None
    cur = b"0"
    while True:
        cur, keys = c.call("SCAN", cur, "MATCH", pattern, "COUNT", 1000)
        for k in keys:
            t = c.call("TYPE", k)
            if t == "zset":
                buckets += 1
                largest = max(largest, c.call("ZCARD", k))
            elif t == "string":
                strings += 1
                p = c.call("PTTL", k)
                if p == -2:         # expired between SCAN and PTTL: gone, not counted
                    strings -= 1
                    continue
                pmin = p if pmin is None else min(pmin, p)
                pmax = p if pmax is None else max(pmax, p)
            elif t != "none":
                others += 1
        if cur == b"0":
            break
    print("buckets=%d\nlargest=%d\ntombstones=%d\npttl_min=%d\npttl_max=%d\nothers=%d"
          % (buckets, largest, strings, pmin or 0, pmax or 0, others))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
