"""tests/tools/layout4_stray.py: damage for `simhash fsck` in a layout-4 corpus (stdlib
only), for test_migrate_split.sh: one table-0 member carrying its ids (longer than
its 7 bytes) is moved out of its live bucket into the next live bucket of its shard,
where it lies outside the bounds (fsck --repair must move it back whole).

  layout4_stray.py PORT
Exit status 0 when a member was moved; 1 (with why) when the corpus has no table-0
shard of 3 or more buckets whose second bucket holds such a member."""
import sys

from resp_client import C


def main(a):
    c = C(int(a[1]))
    for xx in range(256):
        bounds = c.call("ZRANGE", b"r:{0:%02x}" % xx, 0, -1)
        if not isinstance(bounds, list) or len(bounds) < 3:
            continue
        keys = [b"s:{0:%02x}:%s-%s" % (xx, bounds[i].hex().encode(),
                                        bounds[i + 1].hex().encode() if i + 1 < len(bounds)
                                        else b"")
                for i in range(len(bounds))]
        m = c.call("ZRANGE", keys[1], 0, 0)
        if isinstance(m, list) and m and len(m[0]) > 7:
            if c.call("ZREM", keys[1], m[0]) != 1 or c.call("ZADD", keys[2], 0, m[0]) != 1:
                sys.exit("cannot move %r from %r to %r" % (m[0], keys[1], keys[2]))
            print("moved a member of %r into %r" % (keys[1], keys[2]), file=sys.stderr)
            return 0
    sys.exit("no table-0 member with inline ids found")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
