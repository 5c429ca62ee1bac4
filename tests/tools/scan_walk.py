"""tests/tools/scan_walk.py: one whole SIMHASH.SCAN walk of a deployment checked against
the pairs it must give (stdlib only), for test_migrate.sh, test_cluster_exact.sh and
test_migrate_split.sh.

  scan_walk.py PORT WANT_FILE [COUNT n] [LIMIT m]
      walks from cursor 0 to the end with those options; exit 0 when the pairs
      returned, as "fp docid" lines, are exactly the lines of WANT_FILE and none came
      twice, else 1 (and why on stderr)."""
import sys

from resp_client import C


def main(a):
    c = C(int(a[1]))
    want = set(open(a[2]).read().split("\n")) - {""}
    cur, got, steps, dup = 0, set(), 0, 0
    while True:
        nxt, ents = c.call("SIMHASH.SCAN", cur, *a[3:])
        steps += 1
        for fp, ids in ents:
            for i in ids:
                p = "%s %s" % (fp.decode(), i.decode())
                dup += p in got
                got.add(p)
        cur = int(nxt)
        if cur == 0:
            break
    print("scan %s: %d steps, %d pairs, %d twice" % (" ".join(a[3:]), steps, len(got), dup))
    if got != want or dup:
        print("missing %d, extra %d, twice %d" % (len(want - got), len(got - want), dup),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
