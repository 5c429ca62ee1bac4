#!/usr/bin/env bash
# test_tls_workers.sh: TLS on the coordinator's connections to the workers (worker-tls).
# A throwaway CA (and a second, unrelated one), a worker certificate for 127.0.0.1 and
# a client certificate, made with openssl in the test's directory; real redis-servers.
# Checks: worker-tls settings that cannot work are refused at start with exit 2 and a
# message; a coordinator speaking TLS (with a client certificate) to a TLS-only worker
# (port 0, tls-port, tls-auth-clients yes) answers a series of ADD / QUERY / CHECK / DEL
# byte for byte as a plain coordinator over a plain worker does, the worker counts the
# TLS connection and announces its TLS port in the registry; with the wrong CA, with a
# server name the certificate does not carry, and without a client certificate the
# worker is reported down with a log line naming the TLS reason, requests answer
# -SHARDDOWN, the coordinator keeps serving and retries with backoff (a bounded number
# of handshakes, little CPU: no loop); SIGHUP with a broken client key keeps the
# running material and says so, and the connections keep working.
set -u
. "$(dirname "$0")/lib.sh"
th_init tls_workers
th_need_bins simhash-shard simhash-coordinator
command -v openssl >/dev/null || th_fail "openssl not found"
B=6 K=3
P="$TH_DIR/pki"
mkdir -p "$P"

# ---- certificates: CA and its worker and client certificates; another CA
th_tls_ca "$P" ca
th_tls_ca "$P" other
th_tls_cert "$P" worker "simhash worker" 1001
th_tls_cert "$P" coord "simhash coordinator" 2001
cp "$P/coord.crt" "$P/live.crt"
cp "$P/coord.key" "$P/live.key"

# ---- two deployments on two Redis servers: plain, and TLS-only workers
th_start_redis rp
rplain=$TH_REDIS_PORT
th_start_shard wp "$rplain" 0-255 "$B" "$K"
wplain=$TH_SHARD_PORT

th_start_redis rt
rtls=$TH_REDIS_PORT
wtls=$(th_free_port)
th_start wt 600 "$TH_BIN/simhash-shard" --bind 127.0.0.1 --port 0 --tls-port "$wtls" \
    --tls-cert-file "$P/worker.crt" --tls-key-file "$P/worker.key" \
    --tls-ca-cert-file "$P/ca.crt" --tls-auth-clients yes \
    --redis-host 127.0.0.1 --redis-port "$rtls" --shards 0-255 --blocks "$B" --distance "$K"
wt_pid=$TH_PID
th_wait_port "$wtls" 20 || th_fail "TLS-only worker did not listen on $wtls"
wcli() { timeout 10 redis-cli -h 127.0.0.1 -p "$wtls" --tls --cacert "$P/ca.crt" \
             --cert "$P/coord.crt" --key "$P/coord.key" "$@" 2>&1 | tr -d '\r'; }
wtls_field() { wcli INFO stats | sed -n "s/^$1://p"; }

# ---- start-up refusals
refused() { th_coord_refused "$1" "$2" "127.0.0.1:$wtls" "${@:3}"; }
refused "worker-tls-* without worker-tls" "worker-tls yes" --worker-tls-ca-cert-file "$P/ca.crt"
refused "a certificate without its key" "worker-tls-key-file" --worker-tls yes \
    --worker-tls-cert-file "$P/coord.crt"
refused "a missing CA file" "worker-tls-ca-cert-file" --worker-tls yes \
    --worker-tls-ca-cert-file "$P/nope.crt"
refused "a key of another certificate" "does not match" --worker-tls yes \
    --worker-tls-ca-cert-file "$P/ca.crt" --worker-tls-cert-file "$P/coord.crt" \
    --worker-tls-key-file "$P/worker.key"

# ---- coordinators: plain over the plain worker, TLS over the TLS-only worker
th_start_coord cp "$B" "$K" 2000 "127.0.0.1:$wplain"
cplain=$TH_COORD_PORT
cat >"$TH_DIR/ct.conf" <<EOF
worker-tls yes
worker-tls-ca-cert-file $P/ca.crt
worker-tls-cert-file $P/live.crt
worker-tls-key-file $P/live.key
EOF
th_start_coord ct "$B" "$K" 2000 "127.0.0.1:$wtls" "" --config "$TH_DIR/ct.conf"
ctls=$TH_COORD_PORT
ct_wrap=$TH_COORD_PID
ct_pid=$(th_child_pid "$ct_wrap")

cinfo() { timeout 5 redis-cli -h 127.0.0.1 -p "$1" SIMHASH.INFO | tr -d '\r'; }
wait_up() {    # PORT WHAT
    local i=0
    until cinfo "$1" | grep -q '^routing:ok'; do
        i=$((i + 1)); [ $i -lt 200 ] || th_fail "$2: routing never complete: $(cinfo "$1" | grep '^worker')"
        sleep 0.05
    done
}
wait_up "$cplain" "plain coordinator"
wait_up "$ctls" "TLS coordinator"
cinfo "$ctls" | grep -q "^worker0:addr=127.0.0.1:$wtls,health=up" ||
    th_fail "TLS coordinator: worker not up: $(cinfo "$ctls" | grep '^worker')"

# The same commands through both; the answers must be the same, byte for byte.
series() {
    local i
    for i in $(seq 1 40); do
        echo "ADD $((i * 7919)) doc-$i"
        echo "QUERY $((i * 7919 + 3))"
    done
    echo "ADD 999999 doc-x"
    echo "CHECK 1000002 doc-y"
    echo "QUERY 999999"
    echo "DEL 999999 doc-x"
    echo "QUERY 999999"
    echo "QUERY 12345678901"
} >"$TH_DIR/series.txt"
run_series() {    # PORT OUT
    local op args
    : >"$2"
    while read -r op args; do
        # shellcheck disable=SC2086
        timeout 10 redis-cli -h 127.0.0.1 -p "$1" "SIMHASH.$op" $args >>"$2" 2>&1
    done <"$TH_DIR/series.txt"
}
series
run_series "$cplain" "$TH_DIR/plain.out"
run_series "$ctls" "$TH_DIR/tls.out"
grep -q 'doc-' "$TH_DIR/plain.out" || th_fail "plain series found nothing: $(head -5 "$TH_DIR/plain.out")"
grep -qi 'err\|shard' "$TH_DIR/tls.out" && th_fail "TLS series has errors: $(grep -i 'err\|shard' "$TH_DIR/tls.out" | head -3)"
cmp -s "$TH_DIR/plain.out" "$TH_DIR/tls.out" ||
    th_fail "TLS and plain answers differ: $(diff "$TH_DIR/plain.out" "$TH_DIR/tls.out" | head -10)"
[ "$(wc -l <"$TH_DIR/tls.out")" -gt 80 ] || th_fail "series too short: $(wc -l <"$TH_DIR/tls.out") lines"
th_log "ADD/QUERY/CHECK/DEL over a TLS hop: $(wc -l <"$TH_DIR/tls.out") answer lines, same as plain"

# The worker announces its TLS port.
case "$(wcli SHARD.WORKERS)" in *"127.0.0.1:$wtls"*) ;;
    *) th_fail "registry: TLS-only worker not announced at its tls-port: $(wcli SHARD.WORKERS)";; esac
# Connections persist: a second series adds no handshake (the worker's count grows by
# one: the INFO connection that reads it), the coordinator connected once.
before=$(wtls_field tls_connections)
run_series "$ctls" "$TH_DIR/tls2.out"
after=$(wtls_field tls_connections)
[ $((after - before)) -eq 1 ] || th_fail "handshakes per request: tls_connections $before -> $after"
cinfo "$ctls" | grep -q '^worker0:.*,connects=1,' ||
    th_fail "TLS coordinator reconnected: $(cinfo "$ctls" | grep '^worker0')"

# ---- refusals: each coordinator reports the worker down with the TLS reason,
# answers -SHARDDOWN, keeps serving, and retries with backoff.
refusal() {    # NAME PATTERN ARGS...
    local name=$1 pat=$2 cport pid hs0 hs1 i=0 out t0 t1 ticks
    shift 2
    hs0=$(wtls_field tls_handshake_failures)
    th_start_coord "$name" "$B" "$K" 500 "127.0.0.1:$wtls" "" --worker-tls yes "$@"
    cport=$TH_COORD_PORT
    pid=$(th_child_pid "$TH_COORD_PID")
    until grep -q "$pat" "$TH_DIR/$name.log"; do
        i=$((i + 1)); [ $i -lt 100 ] || th_fail "$name: no log line with '$pat': $(tail -3 "$TH_DIR/$name.log")"
        sleep 0.05
    done
    out=$(timeout 5 redis-cli -h 127.0.0.1 -p "$cport" SIMHASH.QUERY 12345 2>&1)
    case "$out" in SHARDDOWN*) ;; *) th_fail "$name: QUERY answered '$out', want -SHARDDOWN";; esac
    t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    sleep 3
    kill -0 "$pid" 2>/dev/null || th_fail "$name: the coordinator died"
    t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    ticks=$((t1 - t0))
    # A retry loop would spend seconds of CPU; backoff spends next to none.
    [ "$ticks" -lt 60 ] || th_fail "$name: $ticks CPU ticks in 3 s while the worker refuses"
    hs1=$(wtls_field tls_handshake_failures)
    cinfo "$cport" | grep -q '^worker0:.*health=down' ||
        th_fail "$name: worker not reported down: $(cinfo "$cport" | grep '^worker')"
    [ "$(grep -c "$pat" "$TH_DIR/$name.log")" -le 12 ] ||
        th_fail "$name: the reason logged $(grep -c "$pat" "$TH_DIR/$name.log") times (not rate-limited)"
    th_log "$name: $(grep -m1 "$pat" "$TH_DIR/$name.log" | cut -c1-200); worker handshake failures +$((hs1 - hs0)), $ticks CPU ticks in 3 s"
    th_stop "$TH_COORD_PID"
}
refusal cwrongca "certificate was refused" --worker-tls-ca-cert-file "$P/other.crt" \
    --worker-tls-cert-file "$P/coord.crt" --worker-tls-key-file "$P/coord.key"
refusal cwrongname "certificate was refused" --worker-tls-ca-cert-file "$P/ca.crt" \
    --worker-tls-server-name worker.example --worker-tls-cert-file "$P/coord.crt" \
    --worker-tls-key-file "$P/coord.key"
hsn=$(wtls_field tls_handshake_failures)
refusal cnocert "shard worker 127.0.0.1:$wtls.*TLS" --worker-tls-ca-cert-file "$P/ca.crt"
[ "$(wtls_field tls_handshake_failures)" -gt "$hsn" ] ||
    th_fail "the worker did not count the coordinator without a certificate as a failed handshake"

# The TLS coordinator still serves after all that.
[ "$(timeout 5 redis-cli -h 127.0.0.1 -p "$ctls" SIMHASH.QUERY 7919 | tr -d '\r')" != "" ] ||
    th_fail "TLS coordinator stopped answering"

# ---- SIGHUP: a broken client key keeps the running material; a good one is taken
printf 'not a key\n' >"$P/live.key.new" && mv "$P/live.key.new" "$P/live.key"
hup_logs() {    # PATTERN WHAT: SIGHUP to the TLS coordinator, up to 5 s for PATTERN in its log
    local i=0
    kill -HUP "$ct_pid"
    until grep -q "$1" "$TH_DIR/ct.log"; do
        i=$((i + 1)); [ $i -lt 100 ] || th_fail "SIGHUP with $2: no log line '$1'"
        sleep 0.05
    done
}
hup_logs "worker TLS certificate, key and CA not reloaded" "a broken key"
cp "$P/coord.key" "$P/live.key.new" && mv "$P/live.key.new" "$P/live.key"
hup_logs "worker TLS certificate, key and CA reloaded" "a good key"
run_series "$ctls" "$TH_DIR/tls3.out"
grep -qi 'err\|shard' "$TH_DIR/tls3.out" && th_fail "after SIGHUP: $(grep -i 'err\|shard' "$TH_DIR/tls3.out" | head -3)"
# A new connection after the reload: the worker restarts, the coordinator reconnects.
th_stop "$wt_pid"
th_start wt2 600 "$TH_BIN/simhash-shard" --bind 127.0.0.1 --port 0 --tls-port "$wtls" \
    --tls-cert-file "$P/worker.crt" --tls-key-file "$P/worker.key" \
    --tls-ca-cert-file "$P/ca.crt" --tls-auth-clients yes \
    --redis-host 127.0.0.1 --redis-port "$rtls" --shards 0-255 --blocks "$B" --distance "$K"
th_wait_port "$wtls" 20 || th_fail "TLS-only worker did not listen again on $wtls"
wait_up "$ctls" "TLS coordinator after the worker restarted"
case "$(timeout 5 redis-cli -h 127.0.0.1 -p "$ctls" SIMHASH.QUERY 7919 | tr -d '\r')" in
    *doc-1*) ;; *) th_fail "after reconnecting: QUERY lost doc-1";; esac
# The coordinators end cleanly (under ASan: no leak of the TLS transport either).
th_stop "$ct_wrap"
grep -q "Sanitizer\|runtime error" "$TH_DIR"/*.log && th_fail "sanitizer report: $(grep -l "Sanitizer\|runtime error" "$TH_DIR"/*.log)"
th_log "PASS"
