#!/usr/bin/env bash
# test_extract.sh: the text a fingerprint is taken from. `simhash extract` on pages
# built here (an article in a site template, a page of content blocks, a list of links,
# a Windows-1252 page, a long page), real documentation pages of this machine and the
# template pages of tests/tools/site_templates.py:
#   - --format json parses (/usr/bin/python3), one object per file in order, and its
#     fingerprint equals `simhash fingerprint`'s for the same file, algorithm (v1, v1:5,
#     v5) and --all-text / --title; the removed v2, v3, v4 are refused;
#   - the text is the article, not the navigation, sidebar or footer;
#     --all-text and v1 have those too; a text file's text is itself (rule text), control
#     bytes and invalid UTF-8 escaped as the help says;
#   - --format text: the lines of the text, `==> NAME <==` headers with several files;
#   - errors: a missing file (exit 1, the others printed), bad options (exit 2), a file
#     over 64 MiB (exit 1);
# then SIMHASH.EXTRACT through a deployment started here (redis-server, a v5 worker, a
# coordinator on 127.0.0.1): its fingerprint and text equal `simhash extract --format
# json`'s, in RESP3 (a map) and RESP2 (a flat array), for a small page, a page large
# enough for the fingerprint threads, FORMAT html-all and text; bad arguments.
set -u
. "$(dirname "$0")/lib.sh"
th_init extract
th_need_bins simhash simhash-shard simhash-coordinator
S="$TH_BIN/simhash"
PY=/usr/bin/python3
D="$TH_DIR/pages"
mkdir -p "$D"
expect() { [ "$2" = "$3" ] || th_fail "$1: got '$2', want '$3'"; }

# ---- pages built here (no trailing newline: the same bytes as a redis-cli argument) ----
A1="The committee met on Tuesday to discuss the budget for the coming year in detail."
A2="Several members argued that the library should open longer hours on weekends."
printf '%s' "<html><head><title>Budget day</title></head><body>
<nav><a href=\"/\">Navhome</a> <a href=\"/news\">Navnews</a> <a href=\"/sport\">Navsport</a></nav>
<div class=\"sidebar\"><p>Sidebarword: subscribe to our newsletter for the latest offers and updates.</p></div>
<main><article><h1>Council approves the budget</h1><p>$A1</p><p>$A2</p></article></main>
<footer><p>Footerword: copyright the example town council, all rights reserved, 2026.</p></footer>
</body></html>" >"$D/article.html"
printf '%s' "<body><div id=\"menu\"><p>Menuword one two three</p></div><div><p>$A1</p><p>$A2</p></div></body>" \
    >"$D/content.html"
printf '%s' '<ul><li><a href="/1">First link</a></li><li><a href="/2">Second link</a></li></ul>' \
    >"$D/links.html"
printf '<meta charset="windows-1252"><p>\x93Quoted\x94 caf\xe9 %s</p>' "$A1" >"$D/legacy.html"
$PY - "$D/long.html" "$A1" "$A2" <<'EOF'
import sys
parts = ["<html><body><nav>" + " ".join('<a href="/%d">Link %d</a>' % (i, i) for i in range(50)) + "</nav><article>"]
for i in range(400):
    parts.append("<p>Paragraph %d. %s %s</p>" % (i, sys.argv[2], sys.argv[3]))
parts.append("</article></body></html>")
open(sys.argv[1], "w").write("\n".join(parts))
EOF
# a text file with control bytes, quotes, backslashes and invalid UTF-8
printf 'plain text\x01 with "quotes" and \\ back\tslash\x7f caf\xc3\xa9 bad \xff byte\r\nend' >"$D/ctl.txt"
# the template pages of tests/tools/site_templates.py
$PY - "$TH_SRC/tests/tools" "$D" <<'EOF' || th_fail "site_templates pages"
import os, sys
sys.path.insert(0, sys.argv[1])
import site_templates as st
docs = st.documents(150, 300)[:6]
for i, (label, words) in enumerate(docs):
    for t in st.TEMPLATES:
        with open(os.path.join(sys.argv[2], "t%d.%s.html" % (i, t)), "w", encoding="utf-8") as f:
            f.write(st.page(t, "Title %d" % i, words[:300]))
EOF
mapfile -t REAL < <(ls /usr/share/doc/*/*.html 2>/dev/null | head -n 25)
PAGES=("$D"/*.html "$D/ctl.txt" "${REAL[@]}")
th_log "${#PAGES[@]} inputs (${#REAL[@]} real documentation pages)"

# ---- json: parses, and the fingerprint is simhash fingerprint's ----
# check_fps OPTS...: extract --format json and fingerprint agree on every input
check_fps() {
    timeout 300 "$S" extract --format json "$@" -- "${PAGES[@]}" >"$TH_DIR/x.json" ||
        th_fail "extract $* failed"
    timeout 300 "$S" fingerprint "$@" -- "${PAGES[@]}" >"$TH_DIR/fp.txt" ||
        th_fail "fingerprint $* failed"
    $PY - "$TH_DIR/x.json" "$TH_DIR/fp.txt" "$*" <<'EOF' || th_fail "extract --format json $* differs from fingerprint"
import json, sys
xs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
fps = [l.rstrip("\n").split("\t") for l in open(sys.argv[2], encoding="utf-8")]
assert len(xs) == len(fps) and len(xs) > 30, (len(xs), len(fps))
for x, (fp, name) in zip(xs, fps):
    assert set(x) == {"file", "algorithm", "rule", "fingerprint", "text"}, x.keys()
    assert x["file"] == name, (x["file"], name)
    assert isinstance(x["fingerprint"], str) and x["fingerprint"] == fp, (name, x["fingerprint"], fp)
    assert x["rule"] in ("all-text", "text", "article", "article-relaxed",
                         "page", "empty"), x["rule"]
    assert (x["rule"] == "text") == name.endswith(".txt"), (name, x["rule"])
    assert x["text"].strip() or fp == "0", name
EOF
}
for opts in "--algorithm v1" "--algorithm v1:5" "--algorithm v5" "" "--all-text" \
            "--algorithm v1 --all-text" "--title" "--all-text --title"; do
    # shellcheck disable=SC2086
    check_fps $opts
done
th_log "json fingerprints equal simhash fingerprint's for 8 option sets"

# ---- the text is the article ----
jget() { $PY -c 'import json, sys; x = json.loads(sys.stdin.readline()); print(x[sys.argv[1]])' "$1"; }
# the default, v5: the article, without the template or the headline
x=$(timeout 60 "$S" extract --format json "$D/article.html") || th_fail "extract article"
expect "article rule" "$(jget rule <<<"$x")" article
expect "article algorithm" "$(jget algorithm <<<"$x")" v5
txt=$(jget text <<<"$x")
for w in "$A1" "$A2"; do
    [[ $txt == *"$w"* ]] || th_fail "article text lacks '$w': $txt"
done
for w in Navhome Navnews Sidebarword Footerword "Budget day" "Council approves the budget"; do
    [[ $txt != *"$w"* ]] || th_fail "article text has the template's '$w': $txt"
done
expect "links page rule (v5)" "$(timeout 60 "$S" extract --format json "$D/links.html" | jget rule)" page
x=$(timeout 60 "$S" extract --format json --all-text "$D/article.html")
expect "--all-text rule" "$(jget rule <<<"$x")" all-text
for w in Navhome Sidebarword Footerword "$A1"; do
    [[ $(jget text <<<"$x") == *"$w"* ]] || th_fail "--all-text lacks '$w'"
done
x=$(timeout 60 "$S" extract --format json --algorithm v1 "$D/article.html")
expect "v1 rule" "$(jget rule <<<"$x")" all-text
expect "v1 algorithm" "$(jget algorithm <<<"$x")" v1:3
[[ $(jget text <<<"$x") == *Navhome* ]] || th_fail "v1 reads all visible text"
x=$(timeout 60 "$S" extract --format json "$D/content.html")
[[ $(jget text <<<"$x") != *Menuword* ]] || th_fail "content page kept its menu"
[[ $(jget text <<<"$x") == *"$A1"* ]] || th_fail "content page lost its text"
expect "links rule (v1)" "$(timeout 60 "$S" extract --format json --algorithm v1 "$D/links.html" | jget rule)" all-text
[[ $(timeout 60 "$S" extract --format json "$D/legacy.html" | jget text) == *"“Quoted” café"* ]] ||
    th_fail "Windows-1252 page not converted"
th_log "the text is the article, not the template"

# ---- text input: the text itself, escaped in JSON ----
timeout 60 "$S" extract --format json "$D/ctl.txt" >"$TH_DIR/ctl.json" || th_fail "extract ctl.txt"
$PY - "$TH_DIR/ctl.json" "$D/ctl.txt" <<'EOF' || th_fail "text input's JSON"
import json, sys
raw = open(sys.argv[1], "rb").read()
assert raw.count(b"\n") == 1 and raw.endswith(b"\n"), raw      # one line
assert all(b >= 0x20 for b in raw[:-1]), raw                     # control bytes escaped
raw.decode("utf-8")                                              # valid UTF-8
x = json.loads(raw)
assert x["rule"] == "text", x
want = open(sys.argv[2], "rb").read().decode("utf-8", "replace")
assert x["text"] == want, (x["text"], want)
assert "\ufffd" in x["text"] and "\x01" in x["text"] and "\x7f" in x["text"]
EOF
# the text format prints a text file's lines as they are
printf 'one\n\n  \ntwo words\n' >"$TH_DIR/two.txt"
expect "text format of a text" "$(timeout 10 "$S" extract "$TH_DIR/two.txt")" "one
two words"

# ---- text format ----
out=$(timeout 60 "$S" extract "$D/article.html") || th_fail "text format"
expect "text format" "$out" "$A1
$A2"
out=$(timeout 60 "$S" extract "$D/article.html" "$D/links.html") ||
    th_fail "text format, 2 files"
expect "text format, 2 files" "$out" "==> $D/article.html <==
$A1
$A2

==> $D/links.html <==
$(timeout 60 "$S" extract "$D/links.html")"
expect "stdin with --html" "$(timeout 60 "$S" extract --html <"$D/article.html")" \
    "$(timeout 60 "$S" extract "$D/article.html")"
expect "stdin json names it -" "$(timeout 60 "$S" extract --html --format json - <"$D/article.html" | jget file)" -

# ---- errors and exit statuses ----
timeout 60 "$S" extract --format json "$D/article.html" "$D/nope.html" "$D/links.html" \
    >"$TH_DIR/out" 2>"$TH_DIR/err"
expect "missing file: exit" "$?" 1
grep -q "nope.html" "$TH_DIR/err" || th_fail "missing file not named: $(cat "$TH_DIR/err")"
expect "missing file: the others printed" "$(wc -l <"$TH_DIR/out")" 2
for args in "--format xml" "--nope" "--html --text" "--algorithm v9" "--algorithm v5 --window 3" \
            "--algorithm v2" "--algorithm v3" "--algorithm v4" "--format"; do
    # shellcheck disable=SC2086
    timeout 10 "$S" extract $args "$D/article.html" >/dev/null 2>"$TH_DIR/err"
    expect "extract $args: exit" "$?" 2
    [ -s "$TH_DIR/err" ] || th_fail "extract $args: no message"
done
timeout 10 "$S" extract --help >"$TH_DIR/help" || th_fail "--help"
grep -q 'ufffd' "$TH_DIR/help" || th_fail "--help does not say how invalid UTF-8 is written"
truncate -s $((64 * 1024 * 1024 + 1)) "$TH_DIR/big.html"
timeout 120 "$S" extract "$TH_DIR/big.html" >/dev/null 2>"$TH_DIR/err"
expect "over 64 MiB: exit" "$?" 1
grep -q "larger than 64 MiB" "$TH_DIR/err" || th_fail "over 64 MiB: $(cat "$TH_DIR/err")"
rm -f "$TH_DIR/big.html"
th_log "text format, stdin, errors"

# ---- SIMHASH.EXTRACT through a deployment ----
th_start_redis redis
th_start_shard w "$TH_REDIS_PORT" 0-255 6 3
th_start_coord c 6 3 2000 "127.0.0.1:$TH_SHARD_PORT"
cli() { timeout 20 redis-cli -h 127.0.0.1 -p "$TH_COORD_PORT" "$@"; }
# same_as_cli FILE CLI_OPTS REDIS_CLI_OPTS [FORMAT f]: SIMHASH.EXTRACT's reply equals extract --format json
same_as_cli() {
    local file=$1 xopts=$2 ropts=$3
    shift 3
    # shellcheck disable=SC2086
    timeout 60 "$S" extract --format json $xopts "$file" >"$TH_DIR/want.json" || th_fail "extract $file"
    # shellcheck disable=SC2086
    cli $ropts SIMHASH.EXTRACT "$(cat "$file")" "$@" >"$TH_DIR/got.json" 2>&1 ||
        th_fail "SIMHASH.EXTRACT $file $*: $(head -c 300 "$TH_DIR/got.json")"
    $PY - "$TH_DIR/want.json" "$TH_DIR/got.json" <<'EOF' || th_fail "SIMHASH.EXTRACT $file ($ropts $*) differs from simhash extract"
import json, sys
want = json.loads(open(sys.argv[1], encoding="utf-8").read())
got = json.loads(open(sys.argv[2], encoding="utf-8").read())
if isinstance(got, list):                       # RESP2: field, value, field, value...
    assert len(got) == 8, got
    got = dict(zip(got[0::2], got[1::2]))
assert set(got) == {"fingerprint", "algorithm", "rule", "text"}, got
for k in ("fingerprint", "algorithm", "rule", "text"):
    assert got[k] == want[k], (k, got[k][:200], want[k][:200])
EOF
}
same_as_cli "$D/article.html" "" "--json" FORMAT html
same_as_cli "$D/article.html" "" "-2 --json" FORMAT HTML
same_as_cli "$D/article.html" "--all-text" "--json" FORMAT html-all
same_as_cli "$D/content.html" "" "--json" FORMAT html
same_as_cli "$D/article.html" "--text" "--json"            # no FORMAT: text, as FINGERPRINT
pool_jobs() { cli INFO | tr -d '\r' | sed -n 's/^fingerprint_pool_jobs://p'; }
jobs0=$(pool_jobs)
same_as_cli "$D/long.html" "" "--json" FORMAT html     # over fingerprint-offload-bytes
jobs1=$(pool_jobs)
[ "${jobs1:-0}" -gt "${jobs0:-0}" ] || th_fail "the long page did not go to the fingerprint threads ($jobs0 -> $jobs1)"
expect "EXTRACT's fingerprint = FINGERPRINT's" \
    "$(cli --json SIMHASH.EXTRACT "$(cat "$D/long.html")" FORMAT html | $PY -c 'import json, sys; print(json.load(sys.stdin)["fingerprint"])')" \
    "$(cli SIMHASH.FINGERPRINT "$(cat "$D/long.html")" FORMAT html)"
case "$(cli SIMHASH.EXTRACT 2>&1)" in *"wrong number of arguments"*) ;; *) th_fail "EXTRACT arity" ;; esac
case "$(cli SIMHASH.EXTRACT x FORMAT pdf 2>&1)" in *ERR*) ;; *) th_fail "EXTRACT FORMAT pdf" ;; esac
case "$(cli SIMHASH.EXTRACT x FORMAT 2>&1)" in *ERR*) ;; *) th_fail "EXTRACT FORMAT without value" ;; esac
case "$(cli SIMHASH.EXTRACT x DISTANCE 3 2>&1)" in *ERR*) ;; *) th_fail "EXTRACT DISTANCE" ;; esac
cli COMMAND DOCS SIMHASH.EXTRACT | grep -q '^The text a text or HTML page' || th_fail "COMMAND DOCS SIMHASH.EXTRACT"
kill -0 "$TH_COORD_PID" || th_fail "the coordinator died"
th_log "SIMHASH.EXTRACT = simhash extract (RESP3 map, RESP2 array, html, html-all, text, thread pool)"
echo "[extract] OK"
