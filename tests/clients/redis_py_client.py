"""redis-py (Debian's python3-redis) at its default options against simhash-coordinator.

Usage: /usr/bin/python3 redis_py_client.py PORT
Exits 0 when every check passed; prints one line per check and a summary line.
"""
import sys

import redis

port = int(sys.argv[1])
failures = 0
checks = 0


def check(name, cond, detail=""):
    global failures, checks
    checks += 1
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else "  " + repr(detail)))
    if not cond:
        failures += 1


r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=30)
check("ping", r.ping() is True)
info = r.info()
check("info() parses, loading is 0", info.get("loading") == 0, info.get("loading"))
check("info() has redis_version", "redis_version" in info)
check("info() has the coordinator's corpus section", info.get("blocks") == 6, info.get("blocks"))
srv = r.info("server")
check("info('server') is the server section only", "process_id" in srv and "blocks" not in srv,
      sorted(srv)[:5])
check("echo", r.echo("hello") == b"hello")
check("select 0", r.execute_command("SELECT", 0) in (True, b"OK"))
check("client setname", r.client_setname("py-test") is True)
check("client getname", r.client_getname() in ("py-test", b"py-test"))
cid = r.client_id()
check("client id is an integer", isinstance(cid, int) and cid > 0, cid)
names = [c.get("name") for c in r.client_list()]
check("client list shows the name", "py-test" in names, names)

before = r.info("commandstats")
q0 = before.get("cmdstat_simhash.query", {}).get("calls", 0)
a0 = before.get("cmdstat_simhash.add", {}).get("calls", 0)
fp = 0x0123456789ABCDEF
check("SIMHASH.ADD", r.execute_command("SIMHASH.ADD", fp, "py-doc-1") == 1)
res = r.execute_command("SIMHASH.QUERY", fp ^ 0b101)
check("SIMHASH.QUERY finds it at distance 2",
      len(res) == 1 and int(res[0][0]) == fp and res[0][1] == 2 and res[0][2] == [b"py-doc-1"],
      res)

p = r.pipeline(transaction=False)
for i in range(50):
    p.execute_command("SIMHASH.ADD", fp ^ (1 << 63) ^ i, "py-pipe-%d" % i)
p.execute_command("SIMHASH.QUERY", fp ^ (1 << 63), "DISTANCE", 0)
out = p.execute()
check("pipeline(transaction=False): 50 ADDs then a QUERY", out[:50] == [1] * 50 and
      len(out[50]) == 1 and out[50][0][2] == [b"py-pipe-0"], out[48:])

try:
    p = r.pipeline(transaction=True)
    p.execute_command("SIMHASH.QUERY", fp)
    p.execute()
    check("pipeline(transaction=True) is refused", False)
except redis.exceptions.ResponseError as e:
    check("pipeline(transaction=True) is refused with the alternative named",
          "transaction=False" in str(e), str(e))

lat = r.info("latencystats")
key = "latency_percentiles_usec_simhash.query"
check("info('latencystats') has " + key, key in lat and "p50" in lat[key] and "p99.9" in lat[key],
      lat)
cs = r.info("commandstats")
q = cs.get("cmdstat_simhash.query", {})
check("info('commandstats') counts the 2 QUERYs (pipelined one included)",
      q.get("calls") == q0 + 2, (q0, q))
a = cs.get("cmdstat_simhash.add", {})
check("info('commandstats') counts the 51 ADDs", a.get("calls") == a0 + 51, (a0, a))
docs = r.execute_command("COMMAND DOCS", "SIMHASH.QUERY")
check("COMMAND DOCS SIMHASH.QUERY names its summary", b"summary" in docs[1], docs)
try:
    r.execute_command("SIMHASH.QUERY", "not-a-number")
    check("a bad fingerprint is an error", False)
except redis.exceptions.ResponseError as e:
    check("a bad fingerprint is a ResponseError", "invalid fingerprint" in str(e), str(e))
r.close()
print("redis-py: %d checks, %d failed" % (checks, failures))
sys.exit(1 if failures else 0)
