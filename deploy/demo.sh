#!/usr/bin/env bash
# deploy/demo.sh: the main job, shown end to end on one machine. Brings up a local
# deployment (redis-server, 2 simhash-shard workers, simhash-coordinator) on free
# loopback ports in a temporary directory, loads the fingerprints of a sample corpus,
# then checks its planted near-duplicates through the coordinator with plain redis-cli
# (SIMHASH.CHECKTEXT, SIMHASH.QUERY), prints SIMHASH.INFO and brings everything down.
#
#   bash deploy/demo.sh [--keep] [--docs N] [--port P] [--metrics-offset N]
#
# --keep leaves the deployment running (the command to stop it is printed);
# --docs N sets the corpus size (default 400); --port P looks for free ports from P
# (coordinator P, workers P+100 and P+101, redis P+379; default 7000, or
# $SIMHASH_DEMO_PORT), trying up to P+99; --metrics-offset N puts the Prometheus
# endpoints at port+N (default 2000, or $SIMHASH_DEMO_METRICS_OFFSET; 0: none), so the
# demo runs beside another deployment. Installs missing Debian packages with
# scripts/install-deps.sh and builds the project into build/ when needed.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KEEP=0
DOCS=400
BASE=${SIMHASH_DEMO_PORT:-7000}
METRICS_OFFSET=${SIMHASH_DEMO_METRICS_OFFSET:-2000}
while [ $# -gt 0 ]; do
    case "$1" in
        --keep) KEEP=1; shift ;;
        --port) [ $# -ge 2 ] || { echo "demo: --port needs a value" >&2; exit 2; }
            BASE=$2; shift 2 ;;
        --metrics-offset) [ $# -ge 2 ] || { echo "demo: --metrics-offset needs a value" >&2; exit 2; }
            METRICS_OFFSET=$2; shift 2 ;;
        --docs)
            [ $# -ge 2 ] && [[ $2 =~ ^[0-9]{1,5}$ ]] && [ "$2" -ge 25 ] ||
                { echo "demo: --docs needs a number from 25 to 99999" >&2; exit 2; }
            DOCS=$2; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "demo: unknown option '$1' (--keep, --docs N, --port P, --metrics-offset N)" >&2; exit 2 ;;
    esac
done
# the highest port tried (BASE+99) plus redis' +379 and the metrics offset stay < 65536
[[ $BASE =~ ^[0-9]{1,5}$ ]] && [ "$BASE" -ge 1024 ] && [ "$BASE" -le 65000 ] ||
    { echo "demo: --port needs a number from 1024 to 65000, not '$BASE'" >&2; exit 2; }
[[ $METRICS_OFFSET =~ ^[0-9]{1,5}$ ]] && [ $((BASE + 479 + METRICS_OFFSET)) -le 65535 ] ||
    { echo "demo: --metrics-offset needs a number from 0 to $((65535 - BASE - 479)), not '$METRICS_OFFSET'" >&2; exit 2; }

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run_shown() { printf '$ %s\n' "$*"; "$@"; }

say "Dependencies and build"
bash "$ROOT/scripts/install-deps.sh"
BIN=${SIMHASH_BIN:-$ROOT/build/bin}
if [ ! -x "$BIN/simhash" ] || [ ! -x "$BIN/simhash-shard" ] || [ ! -x "$BIN/simhash-coordinator" ]; then
    [ -z "${SIMHASH_BIN:-}" ] || { echo "demo: programs missing in SIMHASH_BIN=$BIN" >&2; exit 1; }
    echo "building into $ROOT/build"
    cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$ROOT/build" -j"$(nproc)" >/dev/null
fi
echo "programs in $BIN"
export SIMHASH_BIN=$BIN

# Free loopback ports: coordinator P, workers P+100 and P+101, redis P+379.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PORT=$BASE
while ! { port_free $PORT && port_free $((PORT + 100)) && port_free $((PORT + 101)) &&
          port_free $((PORT + 379)); }; do
    PORT=$((PORT + 1))
    [ $PORT -lt $((BASE + 100)) ] || { echo "demo: no free ports from $BASE to $((BASE + 99))" >&2; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/simhash-demo.XXXXXX")
RUN=$WORK/run
UP=0
finish() {
    local rc=$?
    trap - EXIT INT TERM
    if [ $UP -eq 1 ] && { [ $KEEP -eq 0 ] || [ $rc -ne 0 ]; }; then
        say "Bringing the deployment down"
        bash "$ROOT/deploy/simhash-local" down --dir "$RUN" || true
    fi
    if [ $KEEP -eq 1 ] && [ $rc -eq 0 ]; then
        echo
        echo "Deployment kept running in $RUN (coordinator 127.0.0.1:$PORT)."
        echo "Stop it with: bash $ROOT/deploy/simhash-local down --dir $RUN"
    else
        rm -rf "$WORK"
    fi
    exit $rc
}
trap finish EXIT
trap 'exit 130' INT TERM

say "Local deployment in $RUN"
UP=1
run_shown bash "$ROOT/deploy/simhash-local" up --dir "$RUN" --port "$PORT" --shards 2 \
    --metrics-offset "$METRICS_OFFSET"
run_shown bash "$ROOT/deploy/simhash-local" status --dir "$RUN"
RC=(redis-cli -h 127.0.0.1 -p "$PORT")

say "Sample corpus: $DOCS text files with planted near-duplicates"
bash "$ROOT/deploy/sample-corpus.sh" "$WORK/corpus" "$DOCS" >"$WORK/planted.txt"
echo "$(wc -l <"$WORK/planted.txt") planted copies (1-2 words changed, or exact copies), e.g.:"
head -n 3 "$WORK/planted.txt" | sed 's/^/  /'

# Load the originals: fingerprints computed locally, one 'fingerprint docid' line each.
awk '{ print $1 }' "$WORK/planted.txt" | sort >"$WORK/planted.names"
"$BIN/simhash" fingerprint "$WORK"/corpus/*.txt |
    awk -F'\t' '{ n = $2; sub(/.*\//, "", n); print $1 " " n }' |
    sort -k2 | join -1 2 -2 1 -v 1 -o 1.1,1.2 - "$WORK/planted.names" |
    sed 's/\.txt$//' >"$WORK/originals.txt"
echo
run_shown "$BIN/simhash" load --port "$PORT" "$WORK/originals.txt"

say "The crawler finds new pages: SIMHASH.CHECKTEXT <docid> <text> (fingerprint, then matches)"
found=0
total=0
shown=0
while read -r file src words; do
    total=$((total + 1))
    id=${file%.txt}
    if [ $shown -lt 3 ]; then
        echo "$ ${RC[*]} -x SIMHASH.CHECKTEXT $id < corpus/$file     # planted from $src, $words word(s) changed"
        "${RC[@]}" -x SIMHASH.CHECKTEXT "$id" <"$WORK/corpus/$file" | tee "$WORK/reply" | sed 's/^/  /'
        shown=$((shown + 1))
    else
        "${RC[@]}" -x SIMHASH.CHECKTEXT "$id" <"$WORK/corpus/$file" >"$WORK/reply"
    fi
    grep -qx "${src%.txt}" "$WORK/reply" && found=$((found + 1))
done <"$WORK/planted.txt"
echo
echo "found the source document of $found of $total planted near-duplicates"

say "Query by fingerprint: SIMHASH.QUERY <fp> (nearest first: fp, distance, docids)"
read -r file src words < <(awk '$3 > 0' "$WORK/planted.txt" | head -n 1)
FP=$("$BIN/simhash" fingerprint "$WORK/corpus/$file" | cut -f1)
run_shown "${RC[@]}" SIMHASH.QUERY "$FP"
echo "and with the CLI:"
run_shown "$BIN/simhash" query --port "$PORT" "$FP"

say "SIMHASH.INFO"
run_shown "${RC[@]}" SIMHASH.INFO

[ "$found" -gt 0 ] || { echo "demo: no planted near-duplicate was found" >&2; exit 1; }
