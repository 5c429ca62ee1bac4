"""bench/python/bench.py: the Python package against simhash-py's published figures.

1,000,000 uniformly random 64-bit hashes (fixed seed) and 1,000,000 random queries;
Corpus(5, 3): insert_bulk, find_first_bulk, find_all_bulk, remove_bulk; then
find_all(hashes, 5, 3) from a list of ints and from an array('Q'). Each step is the
median of --repeats runs (a fresh corpus per run). Prints one line per step:
  bench=python step=NAME n=N median_s=S ref_s=R speedup=R/S
ref_s are simhash-py's README figures (2.5 / 4.8 / 7.4 / 3.3 s for the corpus steps)
and simhash-pybind's README figure for find_all (1.1 s). Run by bench/python/run.sh,
which also times the same find_all in C and prints the ratio.
"""
import argparse
import array
import random
import statistics
import sys
import time

import simhash

REFS = {"insert_bulk": 2.534, "find_first_bulk": 4.795, "find_all_bulk": 7.415,
        "remove_bulk": 3.346, "find_all": 1.1, "find_all_array": 1.1}


def timed(fn):
    t = time.perf_counter()
    r = fn()
    return time.perf_counter() - t, r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=1000000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--blocks", type=int, default=5)
    ap.add_argument("--distance", type=int, default=3)
    a = ap.parse_args()
    rng = random.Random(20261123)
    hashes = [rng.getrandbits(64) for _ in range(a.n)]
    queries = [rng.getrandbits(64) for _ in range(a.n)]
    times = {k: [] for k in REFS}
    checks = []
    for _ in range(a.repeats):
        c = simhash.Corpus(a.blocks, a.distance)
        t, r = timed(lambda: c.insert_bulk(hashes))
        times["insert_bulk"].append(t)
        checks.append(r == len(set(hashes)))
        t, first = timed(lambda: c.find_first_bulk(queries))
        times["find_first_bulk"].append(t)
        t, alls = timed(lambda: c.find_all_bulk(queries))
        times["find_all_bulk"].append(t)
        checks.append(len(first) == len(alls) == a.n and
                      all((f is None) == (not l) for f, l in zip(first, alls)))
        del first, alls
        t, r = timed(lambda: c.remove_bulk(hashes))
        times["remove_bulk"].append(t)
        checks.append(len(c) == 0)
        del c
    arr = array.array("Q", hashes)
    for _ in range(a.repeats):
        t, pairs = timed(lambda: simhash.find_all(hashes, a.blocks, a.distance))
        times["find_all"].append(t)
        t, pairs2 = timed(lambda: simhash.find_all(arr, a.blocks, a.distance))
        times["find_all_array"].append(t)
        checks.append(pairs == pairs2)
    for step, ts in times.items():
        med = statistics.median(ts)
        print("bench=python step=%s n=%d blocks=%d distance=%d repeats=%d median_s=%.4f "
              "ref_s=%.3f speedup=%.1f" % (step, a.n, a.blocks, a.distance, a.repeats, med,
                                           REFS[step], REFS[step] / med))
    print("bench=python checks=%s" % ("ok" if all(checks) else "FAILED"))
    return 0 if all(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
