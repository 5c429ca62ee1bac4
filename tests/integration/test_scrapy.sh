#!/usr/bin/env bash
# test_scrapy.sh: simhash.scrapy on a real crawl. Debian's Scrapy (python3-scrapy)
# crawls a site served on loopback by this test (tests/python/scrapy_crawl.py: an index
# of 240 unique pages in two templates, 30 exact copies and 60 near-duplicates in the
# other template, linked from their originals) through SimhashDownloaderMiddleware
# against a local deployment with a password and two coordinators (deploy/simhash-local).
# The site's structure is checked first by brute force on the server's fingerprints.
# Then: every planted copy dropped, every unique page kept, stats exact; the same crawl
# again drops every page as already seen; the item pipeline does the same on a fresh
# corpus; with the corpus unreachable SIMHASH_FAIL_OPEN keeps every page (errors
# counted) or stops the crawl. The checks never run on the reactor thread; the longest
# reactor stall and check call are printed beside a crawl without simhash (figures only).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
th_init scrapy
. "$HERE/deploy_lib.sh"
th_need_bins simhash-shard simhash-coordinator
ok() { th_log "ok: $*"; }
PY=${SIMHASH_PYTHON:-/usr/bin/python3}
CRAWL=$TH_SRC/tests/python/scrapy_crawl.py
"$PY" -c 'import scrapy' 2>/dev/null || th_fail "$PY cannot import scrapy (scripts/install-deps.sh installs python3-scrapy)"
DEPS="$TH_DIR/d1 $TH_DIR/d2"
sc_down() {
    local d
    for d in $DEPS; do
        [ -f "$d/procs" ] && timeout 120 bash "$DL_LOCAL" down --dir "$d" >/dev/null 2>&1
    done
    return 0
}
trap 'rc=$?; sc_down; (exit $rc); th_cleanup' EXIT

# ---- the package, and simhash.scrapy importable without Scrapy ----
SITE="$TH_DIR/site"
SIMHASH_PY_WERROR=1 timeout 600 "$PY" -m pip install --no-build-isolation --no-index \
    --disable-pip-version-check --no-cache-dir --target "$SITE" "$TH_SRC/client/python" \
    >"$TH_DIR/pip.log" 2>&1 || th_fail "pip install of client/python: $(tail -20 "$TH_DIR/pip.log")"
export PYTHONPATH=$SITE
out=$("$PY" - <<'EOF' 2>&1
import sys
class NoScrapy:                         # Scrapy absent: its import fails
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("scrapy", "twisted", "itemadapter"):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, NoScrapy())
import simhash.scrapy as s
assert not any(m.split(".")[0] in ("scrapy", "twisted") for m in sys.modules), "scrapy imported"
print(s.SimhashDownloaderMiddleware.__name__, s.SimhashPipeline.__name__)
EOF
) || th_fail "simhash.scrapy without Scrapy: $out"
[ "$out" = "SimhashDownloaderMiddleware SimhashPipeline" ] || th_fail "simhash.scrapy without Scrapy: $out"
ok "simhash.scrapy imports without Scrapy"

# bad settings are refused when the crawler starts, with a message naming the setting
: >"$TH_DIR/empty-password"
out=$("$PY" - "$TH_DIR/empty-password" <<'EOF' 2>&1
import sys
from scrapy.utils.test import get_crawler
from simhash.scrapy import SimhashDownloaderMiddleware, SimhashPipeline
cases = [({"SIMHASH_FORMAT": "pdf"}, "SIMHASH_FORMAT"), ({"SIMHASH_HOSTS": "nohost"}, "SIMHASH_HOSTS"),
         ({"SIMHASH_HOSTS": "h:99999"}, "SIMHASH_HOSTS"), ({"SIMHASH_HOSTS": []}, "SIMHASH_HOSTS"),
         ({"SIMHASH_PASSWORD_FILE": sys.argv[1]}, "SIMHASH_PASSWORD_FILE"),
         ({"SIMHASH_ITEM_FORMAT": "pdf"}, "SIMHASH_ITEM_FORMAT")]
for settings, word in cases:
    cls = SimhashPipeline if "SIMHASH_ITEM_FORMAT" in settings else SimhashDownloaderMiddleware
    try:
        cls.from_crawler(get_crawler(settings_dict=settings))
    except ValueError as e:
        assert word in str(e), (settings, str(e))
        continue
    sys.exit("accepted: %r" % settings)
print(len(cases))
EOF
) || th_fail "bad settings: $out"
[ "$out" = 6 ] || th_fail "bad settings: $out"
ok "6 bad settings refused with a ValueError naming the setting"

# ---- deployments (2 coordinators, password) and the site ----
printf 'scrapy-%s\n' "$RANDOM$RANDOM" >"$TH_DIR/password"
chmod 600 "$TH_DIR/password"
sc_up() {  # sc_up DIR: a deployment in DIR; sets HOSTS (its two coordinators)
    local d=$1 try base
    mkdir -p "$d"
    for try in 1 2 3; do
        base=$(dl_free_base 1 2)
        [ -n "$base" ] || th_fail "no free port range"
        if DL_DIR=$d dl_sl up --port "$((base + 200))" --redis-port "$base" --shard-port "$((base + 100))" \
                --shards 2 --distance 3 --no-aof --lifetime 900 --coordinators 2 \
                --password-file "$TH_DIR/password" >"$d.up.log" 2>&1; then
            HOSTS="127.0.0.1:$((base + 200)),127.0.0.1:$((base + 201))"
            return 0
        fi
        th_log "up failed (try $try): $(tail -n 3 "$d.up.log")"
        DL_DIR=$d dl_down
    done
    th_fail "no deployment in $d"
}
sc_up "$TH_DIR/d1"
out=$(timeout 120 "$PY" "$CRAWL" site "$TH_DIR/www" 2>&1) || th_fail "site: $out"
ok "site: $out"
out=$(timeout 120 "$PY" "$CRAWL" validate "$TH_DIR/www" "$HOSTS" "$TH_DIR/password" 3 2>&1) ||
    th_fail "the site's planted structure does not hold on the server's fingerprints: $out"
ok "brute force on the server's fingerprints: $out"
WPORT=$(th_free_port)
th_start www 600 "$PY" -m http.server --bind 127.0.0.1 --directory "$TH_DIR/www" "$WPORT"
th_wait_port "$WPORT" 20 || th_fail "the site's HTTP server did not start"
URL="http://127.0.0.1:$WPORT/index.html"

crawl() {  # crawl NAME MODE SETTING=JSON..: the result in $TH_DIR/NAME.json
    local name=$1
    shift
    timeout 300 "$PY" "$CRAWL" crawl "$URL" "$TH_DIR/$name.json" "$@" >"$TH_DIR/crawl-$name.log" 2>&1 ||
        th_fail "crawl $name: $(tail -20 "$TH_DIR/crawl-$name.log")"
}
# check NAME PYTHON-EXPR..: each expression over r (the result), m (the manifest) and
# helpers must hold
check() {
    local name=$1
    shift
    "$PY" - "$TH_DIR/$name.json" "$TH_DIR/www/manifest.json" "$WPORT" "$@" <<'EOF' || th_fail "crawl $name"
import json, sys
r = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2])); port = sys.argv[3]
url = lambda n: "http://127.0.0.1:%s/%s.html" % (port, n)
uniques = sorted(url(n) for n, p in m.items() if p["kind"] == "unique")
copies = sorted(url(n) for n, p in m.items() if p["kind"] != "unique")
for e in sys.argv[4:]:
    if not eval(e):
        print("failed: %s\n  stats %s, finish %s, reached %d, items %d, checks on the reactor thread %s"
              % (e, r["stats"], r["finish_reason"], len(r["reached"]), len(r["items"]),
                 r["checks_on_reactor_thread"]), file=sys.stderr)
        sys.exit(1)
EOF
}
figures() { "$PY" -c 'import json, sys; r = json.load(open(sys.argv[1]))
print("%s reactor: longest stall %.1f ms, longest check %.1f ms, %d checks (0 on the reactor thread: %s), %d responses"
      % (r["reactor"].split(".")[-1], r["max_reactor_gap_s"] * 1000, r["max_check_s"] * 1000, r["checks"],
         r["checks_on_reactor_thread"] == 0, r["responses"]))' "$TH_DIR/$1.json"; }

# ---- the crawl: copies dropped, uniques kept (asyncio reactor, as Scrapy's template) ----
crawl first middleware "SIMHASH_HOSTS=\"$HOSTS\"" "SIMHASH_PASSWORD_FILE=\"$TH_DIR/password\"" \
    'TWISTED_REACTOR="twisted.internet.asyncioreactor.AsyncioSelectorReactor"' 'LOG_LEVEL="DEBUG"'
check first 'r["finish_reason"] == "finished"' 'r["reached"] == uniques' 'r["items"] == uniques' \
    'r["stats"] == {"simhash/checked": 330, "simhash/dropped": 90}' 'r["checks_on_reactor_thread"] == 0'
# each drop is logged at DEBUG naming a stored page of the same planted group
out=$("$PY" - "$TH_DIR/crawl-first.log" <<'EOF'
import re, sys
drops = re.findall(r"\[simhash\.scrapy\] DEBUG: simhash: \S+/([cnu])(\d{3})\.html dropped: \S+/([cnu])(\d{3})\.html is (\d+) bits away",
                   open(sys.argv[1]).read())
bad = [d for d in drops if d[0] == "u" or d[1] != d[3] or int(d[4]) > 3]
print(len(drops), len(bad), bad[:3])
EOF
)
[ "${out%% *}" = 90 ] && [ "$(echo "$out" | cut -d' ' -f2)" = 0 ] ||
    th_fail "drops logged at DEBUG (count, wrong ones): $out"
ok "first crawl: 240 unique pages kept, the 30 exact copies and 60 near-duplicates dropped, 330 checked"
ok "  $(figures first)"

# ---- the same crawl again: everything already seen (default reactor, a list of hosts) ----
crawl again middleware "SIMHASH_HOSTS=$("$PY" -c 'import json, sys; print(json.dumps(sys.argv[1].split(",")))' "$HOSTS")" \
    "SIMHASH_PASSWORD_FILE=\"$TH_DIR/password\""
check again 'r["finish_reason"] == "finished"' 'r["reached"] == []' \
    'r["stats"] == {"simhash/checked": 240, "simhash/dropped": 240}' 'r["checks_on_reactor_thread"] == 0'
ok "second crawl: all 240 pages reached dropped as already seen"
ok "  $(figures again)"
crawl baseline none
ok "  without simhash: $(figures baseline)"

# ---- the item pipeline, on a fresh corpus ----
sc_up "$TH_DIR/d2"
crawl pipeline pipeline "SIMHASH_HOSTS=\"$HOSTS\"" "SIMHASH_PASSWORD_FILE=\"$TH_DIR/password\"" \
    'SIMHASH_ITEM_TEXT_FIELD="html"' 'SIMHASH_ITEM_FORMAT="html"'
check pipeline 'r["finish_reason"] == "finished"' 'len(r["reached"]) == 330' 'r["items"] == uniques' \
    'r["stats"] == {"simhash/checked": 330, "simhash/dropped": 90}' 'r["checks_on_reactor_thread"] == 0'
ok "pipeline: 330 items checked, the 90 planted copies dropped, the 240 uniques kept"

# ---- the corpus unreachable: fail open keeps pages, fail closed stops ----
DEAD=$(th_free_port)
crawl open middleware "SIMHASH_HOSTS=\"127.0.0.1:$DEAD\"" 'SIMHASH_FAIL_OPEN=true'
check open 'r["finish_reason"] == "finished"' 'len(r["reached"]) == 330' \
    'r["stats"] == {"simhash/errors": 330}'
crawl closed middleware "SIMHASH_HOSTS=\"127.0.0.1:$DEAD\"" 'SIMHASH_FAIL_OPEN=false'
check closed 'r["finish_reason"] == "simhash_unavailable"' 'len(r["reached"]) == 0' \
    'r["stats"].get("simhash/errors", 0) >= 1' '"simhash/checked" not in r["stats"]'
ok "unreachable corpus: SIMHASH_FAIL_OPEN keeps all 330 pages with 330 errors; off, the crawl stops"
th_log "Scrapy crawls through simhash.scrapy behave as planted"
