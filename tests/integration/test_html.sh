#!/usr/bin/env bash
# test_html.sh: web pages in. The template pair target on real documents (the
# licenses in /usr/share/common-licenses and Debian changelogs, each written as two
# HTML pages of different templates by tests/tools/html_templates.py: both pages
# within 3 bits of the plain text and of each other for at least 9 in 10 documents);
# `simhash fingerprint` and `simhash dedup` on *.html, --html, --text, standard input,
# --algorithm, --window; bad HTML input; the server's FORMAT html (redis-cli) equal to
# the CLI; and simhash:meta keeping one fingerprint algorithm per corpus (a worker or
# coordinator with another refuses to start, a corpus of a removed algorithm, v2, v3 or
# v4, is refused with the way to rebuild it).
set -u
. "$(dirname "$0")/lib.sh"
th_init html
th_need_bins simhash simhash-shard simhash-coordinator
S="$TH_BIN/simhash"
expect() { [ "$2" = "$3" ] || th_fail "$1: got '$2', want '$3'"; }
dist() { python3 -c "print(bin($1 ^ $2).count('1'))"; }
# fp ARGS: the fingerprint `simhash fingerprint ARGS` prints; a failed run prints a word
# unique to this call (its subshell's pid), so two failures never compare equal
fp() {
    local o rc
    o=$(timeout 60 "$S" fingerprint "$@"); rc=$?
    if [ $rc -ne 0 ]; then echo "fingerprint-exit-$rc-$BASHPID"; return $rc; fi
    printf '%s\n' "$o" | cut -f1
}

# ---- the template pair target ----
D="$TH_DIR/docs"
mkdir -p "$D/src" "$D/pages"
n=0
for f in /usr/share/common-licenses/*; do
    real=$(readlink -f "$f")
    [ -f "$real" ] || continue
    sum=$(md5sum < "$real" | cut -c1-32)
    [ -e "$D/src/$sum" ] && continue
    cp "$real" "$D/src/$sum"
    n=$((n + 1))
done
for g in $(ls /usr/share/doc/*/changelog.Debian.gz 2>/dev/null | head -40); do
    [ "$n" -ge 30 ] && break
    zcat "$g" > "$D/tmp" 2>/dev/null || continue
    [ "$(wc -c < "$D/tmp")" -gt 3000 ] || continue
    sum=$(md5sum < "$D/tmp" | cut -c1-32)
    [ -e "$D/src/$sum" ] && continue
    mv "$D/tmp" "$D/src/$sum"
    n=$((n + 1))
done
[ "$n" -ge 10 ] || th_fail "only $n real documents found"
docs=("$D"/src/*)
python3 "$TH_SRC/tests/tools/html_templates.py" "$D/pages" "${docs[@]}" || th_fail "html_templates.py"
good=0 worst=0 textdist=0
for i in "${!docs[@]}"; do
    t=$(fp "${docs[$i]}") a=$(fp "$D/pages/$i.a.html") b=$(fp "$D/pages/$i.b.html")
    ta=$(dist "$t" "$a") tb=$(dist "$t" "$b") ab=$(dist "$a" "$b")
    m=$ta; [ "$tb" -gt "$m" ] && m=$tb; [ "$ab" -gt "$m" ] && m=$ab
    [ "$m" -gt "$worst" ] && worst=$m
    [ "$m" -le 3 ] && good=$((good + 1))
    # the same pages read as text (markup hashed as words) for comparison
    ma=$(fp --text "$D/pages/$i.a.html") mb=$(fp --text "$D/pages/$i.b.html")
    textdist=$((textdist + $(dist "$ma" "$mb")))
done
th_log "template pairs: $good of ${#docs[@]} documents within 3 bits (text, page A, page B" \
    "pairwise), worst $worst bits; read as text the pages are $((textdist / ${#docs[@]})) bits apart on average"
[ $((good * 10)) -ge $((${#docs[@]} * 9)) ] ||
    th_fail "template pairs: only $good of ${#docs[@]} within 3 bits"

# ---- CLI ----
p="$D/pages/0.b.html"
expect "stdin --html = file" "$(fp --html < "$p")" "$(fp "$p")"
expect "any name with --html" "$(cp "$p" "$D/page.txt"; fp --html "$D/page.txt")" "$(fp "$p")"
[ "$(fp --text "$p")" != "$(fp "$p")" ] || th_fail "--text reads the markup too"
expect "--window 3 = --algorithm v1:3" "$(fp --window 3 "$D/page.txt")" "$(fp --algorithm v1:3 "$D/page.txt")"
expect "v1 = v1:3" "$(fp --algorithm v1 "$D/page.txt")" "$(fp --algorithm v1:3 "$D/page.txt")"
[ "$(fp --algorithm v1 "$D/page.txt")" != "$(fp "$D/page.txt")" ] || th_fail "v1 and v5 agree on a page"
for bad in "--algorithm v6" "--algorithm v5 --window 3" "--html --text" "--lines --html" "--window 0" \
           "--algorithm v2" "--algorithm v3" "--algorithm v4"; do
    # shellcheck disable=SC2086
    timeout 10 "$S" fingerprint $bad "$p" >/dev/null 2>"$TH_DIR/err"
    expect "fingerprint $bad: exit 2" "$?" 2
    [ -s "$TH_DIR/err" ] || th_fail "fingerprint $bad: no message"
done
# the removed algorithms: named, v5 as their successor
timeout 10 "$S" fingerprint --algorithm v4 "$p" >/dev/null 2>"$TH_DIR/err"
grep -q "fingerprint algorithm v4 was removed; v5 is its successor" "$TH_DIR/err" ||
    th_fail "--algorithm v4 message: '$(cat "$TH_DIR/err")'"
# bad input: a fingerprint or a clear error, never a crash
head -c 200000 /dev/urandom > "$D/random.html"
fp "$D/random.html" | grep -qE '^[0-9]+$' || th_fail "random bytes as HTML: no fingerprint"
python3 -c "import sys; sys.stdout.write('<div>' * 100000 + 'deep' + '</div>' * 3)" > "$D/deep.html"
expect "100,000 nested elements" "$(fp "$D/deep.html")" "$(printf deep | fp -)"
python3 -c "import sys; sys.stdout.write('<a href=\"' + 'x' * (70 << 20) + '\">t</a>')" > "$D/attr.html"
timeout 60 "$S" fingerprint "$D/attr.html" >/dev/null 2>"$TH_DIR/err"
expect "70 MiB attribute: exit 1" "$?" 1
grep -q "64 MiB" "$TH_DIR/err" || th_fail "70 MiB attribute: message '$(cat "$TH_DIR/err")'"
rm -f "$D/attr.html"
# dedup: standard input as '-' (HTML with --html), *.html files as HTML
mkdir -p "$D/dd"
cp "$D/pages/1.a.html" "$D/dd/x.html"
cp "${docs[2]}" "$D/dd/other.txt"
out=$(timeout 60 "$S" dedup --html --json - "$D/dd" < "$D/pages/1.b.html")
echo "$out" | grep -q '"files":\["-","'"$D/dd/x.html"'"\]' || th_fail "dedup - with a page: '$out'"
out=$(timeout 60 "$S" dedup --text --json - "$D/dd" < "$D/pages/1.b.html")
[ -z "$out" ] || th_fail "dedup --text groups two templates: '$out'"
th_log "CLI: --html/--text/stdin/--algorithm/--window, bad input, dedup '-' ok"

# ---- server: FORMAT html, and one algorithm per corpus ----
th_start_redis redis
rp=$TH_REDIS_PORT
th_start_shard w1 "$rp" 0-255 6 3
sp=$TH_SHARD_PORT
th_start_coord c 6 3 2000 "127.0.0.1:$sp"
cp=$TH_COORD_PORT
cli() { timeout 10 redis-cli -h 127.0.0.1 -p "$cp" "$@"; }
expect "meta records v5" "$(timeout 5 redis-cli -p "$rp" HGET simhash:meta fingerprint)" v5
page=$(cat "$D/pages/3.b.html")
expect "FINGERPRINT FORMAT html = CLI" "$(cli SIMHASH.FINGERPRINT "$page" FORMAT html)" "$(fp "$D/pages/3.b.html")"
expect "FINGERPRINT (text) = CLI --text" "$(cli SIMHASH.FINGERPRINT "$page")" "$(fp --text "$D/pages/3.b.html")"
expect "FINGERPRINT FORMAT TEXT" "$(cli SIMHASH.FINGERPRINT "$page" FORMAT TEXT)" "$(fp --text "$D/pages/3.b.html")"
expect "FINGERPRINT FORMAT html-all = CLI --all-text" "$(cli SIMHASH.FINGERPRINT "$page" FORMAT HTML-ALL)" \
    "$(fp --all-text "$D/pages/3.b.html")"
out=$(cli SIMHASH.FINGERPRINT x FORMAT pdf 2>&1)
case "$out" in *ERR*FORMAT*) ;; *) th_fail "FORMAT pdf: '$out'";; esac
out=$(cli SIMHASH.CHECKTEXT page-b "$page" FORMAT html | head -1)
expect "CHECKTEXT FORMAT html fingerprint" "$out" "$(fp "$D/pages/3.b.html")"
pagea=$(iconv -f cp1252 -t utf-8 < "$D/pages/3.a.html" 2>/dev/null || cat "$D/pages/3.a.html")
out=$(cli SIMHASH.CHECKTEXT page-a "$(cat "$D/pages/3.a.html")" FORMAT html DISTANCE 3 | sed -n 4p)
expect "CHECKTEXT of template A finds template B" "$out" page-b
: "$pagea"
out=$(timeout 30 "$S" check --port "$cp" --text "$D/pages/3.a.html" page-a2 2>/dev/null | cut -f3)
case "$out" in *page-b*) ;; *) th_fail "simhash check --text page.html: '$out'";; esac
th_log "server: FORMAT html through redis-cli and simhash check equals the CLI"

# a worker with another algorithm refuses this corpus; so does a coordinator
timeout 20 "$TH_BIN/simhash-shard" --port "$(th_free_port)" --redis-port "$rp" \
    --fingerprint-algorithm v1 >/dev/null 2>"$TH_DIR/err"
expect "v1 worker on a v5 corpus: exit 1" "$?" 1
grep -q "fingerprint algorithm v5.*configured with v1:3" "$TH_DIR/err" ||
    th_fail "v1 worker message: '$(cat "$TH_DIR/err")'"
timeout 20 "$TH_BIN/simhash-coordinator" --port "$(th_free_port)" --worker "127.0.0.1:$sp" \
    --fingerprint-algorithm v1:2 >/dev/null 2>"$TH_DIR/err"
expect "v1:2 coordinator with a v5 worker: exit 2" "$?" 2
grep -q "fingerprint algorithms differ" "$TH_DIR/err" "$TH_DIR"/*.log 2>/dev/null ||
    th_fail "coordinator message: '$(cat "$TH_DIR/err")'"
# a corpus made with v1:3
th_start_redis redis-old
op=$TH_REDIS_PORT
timeout 5 redis-cli -p "$op" HSET simhash:meta blocks 6 distance 3 layout 4 bucket_bits 8 \
    fingerprint v1:3 tombstone_seconds 120 >/dev/null
timeout 20 "$TH_BIN/simhash-shard" --port "$(th_free_port)" --redis-port "$op" \
    --fingerprint-algorithm v5 >/dev/null 2>"$TH_DIR/err"
expect "v5 worker on a v1:3 corpus: exit 1" "$?" 1
grep -q "built with fingerprint algorithm v1:3" "$TH_DIR/err" || th_fail "v1:3 corpus message: '$(cat "$TH_DIR/err")'"
th_start_shard w-old "$op" 0-255 6 3 "" --fingerprint-algorithm v1
expect "the corpus keeps its field" "$(timeout 5 redis-cli -p "$op" HGET simhash:meta fingerprint)" v1:3
# a worker and a coordinator with no algorithm configured follow the corpus: the
# corpus's v1:3 (the worker), the workers' (the coordinator)
th_start_shard w-follow "$op" 0-255 6 3
expect "worker follows the corpus" \
    "$(timeout 5 redis-cli -p "$TH_SHARD_PORT" SHARD.HELLO | sed -n 9p)" "v1:3"
th_start_coord c-follow 6 3 2000 "127.0.0.1:$TH_SHARD_PORT"
ok=no
for _ in $(seq 1 100); do
    info=$(timeout 5 redis-cli -p "$TH_COORD_PORT" SIMHASH.INFO 2>/dev/null | tr -d '\r')
    case "$info" in *fingerprint_algorithm:v1:3*) ok=yes; break;; esac
    sleep 0.1
done
expect "coordinator follows its workers" "$ok" yes
expect "its SIMHASH.FINGERPRINT is v1:3's" \
    "$(timeout 10 redis-cli -p "$TH_COORD_PORT" SIMHASH.FINGERPRINT "$page")" \
    "$(fp --text --algorithm v1:3 "$D/pages/3.b.html")"
# an algorithm this build does not know: a worker with none configured refuses it
th_start_redis redis-v9
timeout 5 redis-cli -p "$TH_REDIS_PORT" HSET simhash:meta blocks 6 distance 3 layout 4 \
    bucket_bits 8 fingerprint v9 tombstone_seconds 120 >/dev/null
timeout 20 "$TH_BIN/simhash-shard" --port "$(th_free_port)" --redis-port "$TH_REDIS_PORT" \
    >/dev/null 2>"$TH_DIR/err"
expect "unknown algorithm: exit 1" "$?" 1
grep -q "fingerprint algorithm 'v9', which this worker does not know" "$TH_DIR/err" ||
    th_fail "unknown algorithm message: '$(cat "$TH_DIR/err")'"
# a corpus of a removed algorithm (v2, v3, v4): refused at start, whether the worker
# follows its corpus or is configured with v5, with the way to rebuild it
th_start_redis redis-removed
for old in v2 v3 v4; do
    timeout 5 redis-cli -p "$TH_REDIS_PORT" HSET simhash:meta blocks 6 distance 3 layout 4 \
        bucket_bits 8 fingerprint "$old" tombstone_seconds 120 >/dev/null
    for conf in "" "--fingerprint-algorithm v5"; do
        # shellcheck disable=SC2086
        timeout 20 "$TH_BIN/simhash-shard" --port "$(th_free_port)" --redis-port "$TH_REDIS_PORT" \
            $conf >/dev/null 2>"$TH_DIR/err"
        expect "$old corpus, worker '$conf': exit 1" "$?" 1
        grep -q "built with fingerprint algorithm $old, which was removed (v5 is its successor" \
            "$TH_DIR/err" || th_fail "$old corpus message: '$(cat "$TH_DIR/err")'"
        grep -q "simhash export.*simhash load" "$TH_DIR/err" ||
            th_fail "$old corpus: no way to rebuild in '$(cat "$TH_DIR/err")'"
    done
    expect "$old corpus left as it was" \
        "$(timeout 5 redis-cli -p "$TH_REDIS_PORT" HGET simhash:meta fingerprint)" "$old"
done
# a new corpus with nothing configured gets the programs' default
th_start_redis redis-new
th_start_shard w-new "$TH_REDIS_PORT" 0-255 6 3
expect "new corpus: default algorithm" \
    "$(timeout 5 redis-cli -p "$TH_REDIS_PORT" HGET simhash:meta fingerprint)" v5
th_log "simhash:meta: other algorithms refused (worker and coordinator), removed ones refused, unset follows the corpus"
th_log "all checks passed"
