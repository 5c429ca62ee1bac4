#!/usr/bin/env bash
# test_html_main.sh: web pages judged by their own content (fingerprint algorithms v3
# and v4, the default: main-content extraction). Real documents of this machine in the
# site templates of tests/tools/site_templates.py (navigation lists, sidebars of
# headlines, comment sections, cookie banners, footers, a layout table), fingerprinted
# with the CLI:
#   - the same article in five templates: v3 and v4 each put the pages and the plain
#     text within 3 bits of one another for at least 9 in 10 articles;
#   - different articles of 150 words in one heavy template (over 900 words of
#     template): with v3 (and v4) no more unrelated pairs (word 3-shingle Jaccard < 0.3)
#     within 3 bits than the same articles as plain text (with v3, v4), and the median
#     distance between pages within 2 bits of the plain texts' (v2 reading all visible
#     text is logged, and must show the template's pull, so the set tests something);
# then --all-text (= v2's page text), and a v3 deployment: simhash:meta records v3,
# FORMAT html / html-all equal the CLI, a v2 worker or coordinator is refused (and a
# v4 worker); a v4 deployment records v4 and answers what the CLI computes.
set -u
. "$(dirname "$0")/lib.sh"
th_init html_main
th_need_bins simhash simhash-shard simhash-coordinator
S="$TH_BIN/simhash"
expect() { [ "$2" = "$3" ] || th_fail "$1: got '$2', want '$3'"; }
fp() { timeout 60 "$S" fingerprint "$@" | cut -f1; }

# ---- the template sets (thresholds on counts, no timing) ----
out=$(timeout 900 python3 - "$TH_SRC/tests/tools" "$S" "$TH_DIR" <<'EOF'
import os, statistics, subprocess, sys
sys.path.insert(0, sys.argv[1])
import site_templates as st
simhash, tmp = sys.argv[2], sys.argv[3]
docs = st.documents(150, 1500)

def fps(paths, *opts):
    r = subprocess.run([simhash, "fingerprint", *opts, "--", *paths], check=True,
                       capture_output=True, text=True, timeout=600)
    return [int(l.split("\t")[0]) for l in r.stdout.splitlines()]

def put(name, text):
    p = os.path.join(tmp, name)
    with open(p, "w", encoding="utf-8") as f:
        f.write(text)
    return p

# same article, five templates
long_docs = [d for d in docs if len(d[1]) >= 2000][:20]
lengths = (100, 150, 300, 600, 1000, 2000)
good = {"v3": 0, "v4": 0}
for i, (label, words) in enumerate(long_docs):
    w, title = words[:lengths[i % len(lengths)]], os.path.basename(label).split(".")[0]
    pages = [put("s%d.%s.html" % (i, t), st.page(t, title, w)) for t in st.TEMPLATES]
    text = put("s%d.txt" % i, title + "\n" + " ".join(w) + "\n")
    for alg in good:
        group = fps([text], "--text", "--algorithm", alg) + fps(pages, "--algorithm", alg)
        good[alg] += max((a ^ b).bit_count() for a in group for b in group) <= 3
print("same %d %d %d" % (good["v3"], good["v4"], len(long_docs)))

# different articles, one heavy template
pool = docs[:120]
sh = [st.shingles(w[:150]) for _, w in pool]
for tmpl in ("portal", "divsoup"):
    html, txt = [], []
    for i, (label, words) in enumerate(pool):
        title = os.path.basename(label).split(".")[0]
        html.append(put("d%d.%s.html" % (i, tmpl), st.page(tmpl, title, words[:150])))
        txt.append(put("d%d.txt" % i, title + "\n" + " ".join(words[:150]) + "\n"))
    res = []
    for f in (fps(txt, "--text", "--algorithm", "v3"), fps(html, "--algorithm", "v2"),
              fps(html, "--algorithm", "v3"), fps(txt, "--text", "--algorithm", "v4"),
              fps(html, "--algorithm", "v4")):
        false, ds = 0, []
        for i in range(len(f)):
            for j in range(i + 1, len(f)):
                d = (f[i] ^ f[j]).bit_count()
                ds.append(d)
                false += d <= 3 and st.jaccard(sh[i], sh[j]) < 0.3
        res += [false, statistics.median(ds)]
    print("diff %s %d %d %s" % (tmpl, st.words(tmpl), len(pool), " ".join(map(str, res))))
EOF
) || th_fail "template sets: python failed: $out"
th_log "$out"
read -r _ good3 good4 total <<<"$(echo "$out" | grep '^same')"
[ "$total" -ge 10 ] || th_fail "same article: only $total long documents"
[ $((good3 * 10)) -ge $((total * 9)) ] || th_fail "same article in five templates: v3 $good3 of $total within 3 bits"
[ $((good4 * 10)) -ge $((total * 9)) ] || th_fail "same article in five templates: v4 $good4 of $total within 3 bits"
while read -r _ tmpl words n tf tm v2f v2m v3f v3m t4f t4m v4f v4m; do
    [ "$words" -ge 700 ] || th_fail "$tmpl: template of $words words, want >= 700"
    [ "$v3f" -le "$tf" ] || th_fail "$tmpl: v3 $v3f unrelated pairs within 3 bits, plain text $tf"
    [ "$v4f" -le "$t4f" ] || th_fail "$tmpl: v4 $v4f unrelated pairs within 3 bits, plain text $t4f"
    python3 -c "import sys; sys.exit(abs($v3m - $tm) > 2)" ||
        th_fail "$tmpl: median distance v3 $v3m, plain text $tm"
    python3 -c "import sys; sys.exit(abs($v4m - $t4m) > 2)" ||
        th_fail "$tmpl: median distance v4 $v4m, plain text (v4) $t4m"
    python3 -c "import sys; sys.exit(not ($tm - $v2m > 2 or $v2f > $tf))" ||
        th_fail "$tmpl: the template does not pull v2 (median $v2m vs $tm, pairs $v2f vs $tf)"
    th_log "$tmpl ($words template words, $n articles of 150 words): unrelated pairs within 3" \
        "bits: text $tf, v2 $v2f, v3 $v3f, text (v4) $t4f, v4 $v4f; median distance text $tm," \
        "v2 $v2m, v3 $v3m, text (v4) $t4m, v4 $v4m"
done < <(echo "$out" | grep '^diff')
[ "$(echo "$out" | grep -c '^diff')" = 2 ] || th_fail "template sets: $(echo "$out" | grep -c '^diff') diff lines, want 2"

# ---- CLI ----
p="$TH_DIR/d5.portal.html"
expect "v3 --all-text = v2" "$(fp --algorithm v3 --all-text "$p")" "$(fp --algorithm v2 "$p")"
[ "$(fp --algorithm v3 "$p")" != "$(fp --algorithm v2 "$p")" ] || th_fail "v3 = v2 on a templated page"
expect "v3 on text = v2" "$(fp --algorithm v3 "$TH_DIR/d5.txt")" "$(fp --algorithm v2 "$TH_DIR/d5.txt")"
expect "v3 stdin --html = file" "$(fp --algorithm v3 --html < "$p")" "$(fp --algorithm v3 "$p")"
th_log "CLI: --algorithm v3, --all-text ok"

# ---- a v3 deployment ----
th_start_redis redis
rp=$TH_REDIS_PORT
th_start_shard w1 "$rp" 0-255 6 3 "" --fingerprint-algorithm v3
sp=$TH_SHARD_PORT
th_start_coord c 6 3 2000 "127.0.0.1:$sp" "" --fingerprint-algorithm v3
cp=$TH_COORD_PORT
cli() { timeout 10 redis-cli -h 127.0.0.1 -p "$cp" "$@"; }
expect "meta records v3" "$(timeout 5 redis-cli -p "$rp" HGET simhash:meta fingerprint)" v3
page=$(cat "$p")
expect "FORMAT html = CLI v3" "$(cli SIMHASH.FINGERPRINT "$page" FORMAT html)" "$(fp --algorithm v3 "$p")"
expect "FORMAT html-all = CLI --all-text" "$(cli SIMHASH.FINGERPRINT "$page" FORMAT HTML-ALL)" \
    "$(fp --algorithm v3 --all-text "$p")"
out=$(cli SIMHASH.CHECKTEXT a "$page" FORMAT html | head -1)
expect "CHECKTEXT FORMAT html" "$out" "$(fp --algorithm v3 "$p")"
timeout 20 "$TH_BIN/simhash-shard" --port "$(th_free_port)" --redis-port "$rp" \
    --fingerprint-algorithm v2 >/dev/null 2>"$TH_DIR/err"
expect "v2 worker on a v3 corpus: exit 1" "$?" 1
grep -q "fingerprint algorithm v3.*configured with v2" "$TH_DIR/err" ||
    th_fail "v2 worker message: '$(cat "$TH_DIR/err")'"
timeout 20 "$TH_BIN/simhash-coordinator" --port "$(th_free_port)" --worker "127.0.0.1:$sp" \
    --fingerprint-algorithm v2 >/dev/null 2>"$TH_DIR/err"
expect "v2 coordinator with a v3 worker: exit 2" "$?" 2
timeout 20 "$TH_BIN/simhash-shard" --port "$(th_free_port)" --redis-port "$rp" \
    --fingerprint-algorithm v4 >/dev/null 2>"$TH_DIR/err"
expect "v4 worker on a v3 corpus: exit 1" "$?" 1
grep -q "fingerprint algorithm v3.*configured with v4" "$TH_DIR/err" ||
    th_fail "v4 worker message: '$(cat "$TH_DIR/err")'"
th_log "server: v3 recorded, FORMAT html/html-all equal the CLI, v2 and v4 refused"

# ---- a v4 deployment: recorded, and the same fingerprints as the CLI ----
th_start_redis redis4
rp4=$TH_REDIS_PORT
th_start_shard w4 "$rp4" 0-255 6 3 "" --fingerprint-algorithm v4
th_start_coord c4 6 3 2000 "127.0.0.1:$TH_SHARD_PORT" "" --fingerprint-algorithm v4
cli4() { timeout 10 redis-cli -h 127.0.0.1 -p "$TH_COORD_PORT" "$@"; }
expect "meta records v4" "$(timeout 5 redis-cli -p "$rp4" HGET simhash:meta fingerprint)" v4
lic="Our widget parser maps gears. On Debian systems, the complete text of the GNU General \
Public License version 2 can be found in /usr/share/common-licenses/GPL-2."
expect "v4 text = CLI v4" "$(cli4 SIMHASH.FINGERPRINT "$lic")" \
    "$(printf '%s' "$lic" | fp --algorithm v4 --text)"
lic_v2=$(printf '%s' "$lic" | fp --algorithm v2 --text)
[ "$(printf '%s' "$lic" | fp --algorithm v4 --text)" != "$lic_v2" ] ||
    th_fail "v4 = v2 on a text with license boilerplate"
expect "v4 FORMAT html = CLI v4" "$(cli4 SIMHASH.FINGERPRINT "$page" FORMAT html)" \
    "$(fp --algorithm v4 "$p")"
th_log "server: v4 recorded, text and FORMAT html equal the CLI"
th_log "all checks passed"
