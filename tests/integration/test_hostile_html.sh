#!/usr/bin/env bash
# test_hostile_html.sh: large texts are fingerprinted off the coordinator's event loop
# (fingerprint-threads, docs/security.md "Budgets"). Two clients loop on a 1 MB HTML
# page while a third sends QUERYs: every QUERY is answered without an error, every
# sender gets fingerprints, and the pool ran them (INFO fingerprint_pool_jobs); the
# latency figures are printed, never asserted (bench/hostile measures them). The
# pool's fingerprints equal the loop's (the same page under fingerprint-offload-bytes
# 1g) and the CLI's; one client past fingerprint-queue-client gets -BUSY while another
# client is still served.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
th_init hostile_html
th_need_bins simhash-shard simhash-coordinator simhash
command -v redis-cli >/dev/null || th_fail "redis-cli not found"
STALL="$TH_SRC/bench/hostile/html_stall.py"
info() { timeout 10 redis-cli -p "$1" info | tr -d '\r' | sed -n "s/^$2://p"; }

th_start_redis r
th_start_shard w "$TH_REDIS_PORT" 0-255 6 3
th_start_coord c 6 3 5000 "127.0.0.1:$TH_SHARD_PORT" "" --fingerprint-threads 2 \
    --fingerprint-queue-client 2
cp=$TH_COORD_PORT
th_start_coord inline 6 3 5000 "127.0.0.1:$TH_SHARD_PORT" "" --fingerprint-offload-bytes 1g
ip=$TH_COORD_PORT

out=$(timeout 600 python3 "$STALL" --port "$cp" --queries 200 --check) ||
    th_fail "a client's QUERYs while two clients loop on 1 MB HTML: $out"
th_log "$out"
jobs=$(info "$cp" fingerprint_pool_jobs)
[ "${jobs:-0}" -ge 2 ] || th_fail "the pool ran ${jobs:-none} fingerprints"

# the same fingerprint from the pool, from the event loop and from the CLI
python3 - "$TH_DIR/page.html" "$STALL" <<'PY' || th_fail "writing the page"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("hs", sys.argv[2])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
open(sys.argv[1], "wb").write(m.page(200))
PY
fpr() {     # PORT: FINGERPRINT of the page as HTML
    timeout 60 python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from resp_client import C, enc
c = C(int(sys.argv[2]), 60); c.s.sendall(enc("SIMHASH.FINGERPRINT", open(sys.argv[3], "rb").read(), "FORMAT", "html")); print(c.reply())' \
        "$TH_SRC/tests/tools" "$1" "$TH_DIR/page.html"
}
pool=$(fpr "$cp") || th_fail "FINGERPRINT on $cp"
loop=$(fpr "$ip") || th_fail "FINGERPRINT on $ip"
pool=${pool#b\'} pool=${pool%\'} loop=${loop#b\'} loop=${loop%\'}
cli=$(timeout 30 "$TH_BIN/simhash" fingerprint --html "$TH_DIR/page.html") || th_fail "simhash fingerprint"
[[ $pool =~ ^[0-9]+$ ]] && [ "$pool" = "$loop" ] && [ "$pool" = "${cli%%$'\t'*}" ] ||
    th_fail "fingerprints differ: pool '$pool', loop '$loop', cli '$cli'"
[ "$(info "$ip" fingerprint_pool_jobs)" = 0 ] || th_fail "offload-bytes 1g still used the pool"

# one client pipelines 12 large pages with a share of 2: some answer -BUSY; another
# client's page is fingerprinted meanwhile
timeout 300 python3 - "$TH_SRC/tests/tools" "$cp" "$STALL" <<'PY' || th_fail "per-client share of the pool"
import importlib.util, sys, threading
sys.path.insert(0, sys.argv[1])
from resp_client import C, enc
spec = importlib.util.spec_from_file_location("hs", sys.argv[3])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
port, page = int(sys.argv[2]), m.page(1000)
a, b = C(port, 120), C(port, 120)
a.s.sendall(enc("SIMHASH.FINGERPRINT", page, "FORMAT", "html") * 12)
other = {}
t = threading.Thread(target=lambda: (b.s.sendall(enc("SIMHASH.FINGERPRINT", page, "FORMAT", "html")),
                                     other.setdefault("r", b.reply())))
t.start()
got = [a.reply() for _ in range(12)]
t.join(120)
busy = sum(1 for r in got if isinstance(r, tuple) and r[1].startswith("BUSY"))
fps = [r for r in got if isinstance(r, bytes)]
print("pipelined 12: %d fingerprints, %d -BUSY; other client: %r" % (len(fps), busy, other.get("r")))
ok = busy >= 1 and len(fps) >= 1 and len(set(fps)) == 1 and other.get("r") == fps[0]
sys.exit(0 if ok and busy + len(fps) == 12 else 1)
PY
refused=$(info "$cp" fingerprint_pool_refused)
[ "${refused:-0}" -ge 1 ] || th_fail "INFO fingerprint_pool_refused: ${refused:-none}"
th_log "PASS"
