#!/usr/bin/env bash
# test_tls.sh: TLS on the daemons' listening ports (tls-port beside port). A throwaway
# CA, server and client certificates made with openssl in the test's directory; a
# real redis-server, a worker and coordinators with TLS ports. Checks: bad TLS settings
# are refused at start with exit 2 and a message (missing file, key of another
# certificate, TLSv1.1, a bad tls-auth-clients); redis-cli --tls and redis-py
# (ssl=True) run SIMHASH.ADD / QUERY on the coordinator's TLS port and PING on the
# worker's; plain text to the TLS port and a client without a certificate (tls-auth-
# clients yes) are refused and counted, with optional / no a client without one is
# served; TLS 1.1 is refused; the plain port works beside the TLS one and port 0
# disables it; random bytes or a cut ClientHello on the TLS port are closed, the server
# goes on; a peer that never finishes its handshake is closed (request-timeout); the
# metrics endpoint over HTTPS (metrics-tls); an encrypted key (tls-key-file-pass-file);
# SIGHUP with a new certificate: new connections see it, a connection opened before
# still works; SIGHUP with a broken key: the running certificate stays, new
# connections work, INFO reports the failure.
set -u
. "$(dirname "$0")/lib.sh"
th_init tls
th_need_bins simhash-shard simhash-coordinator
command -v openssl >/dev/null || th_fail "openssl not found"
PY=/usr/bin/python3
$PY -c 'import redis' 2>/dev/null || th_fail "$PY cannot import redis (python3-redis)"
B=6 K=3
P="$TH_DIR/pki"
mkdir -p "$P"

# ---- certificates: a CA, two server certificates (serials 1001, 1002), a client one
th_tls_ca "$P" ca
th_tls_cert "$P" server1 "simhash server one" 1001
th_tls_cert "$P" server2 "simhash server two" 1002
th_tls_cert "$P" client "simhash client" 2001
# server1's key encrypted (tls-key-file-pass-file)
printf 'k3y-Pass-55\n' >"$P/key.pass"
chmod 600 "$P/key.pass"
th_ossl pkey -in "$P/server1.key" -aes256 -passout "file:$P/key.pass" -out "$P/server1.enc.key"
cp "$P/server1.crt" "$P/server.crt"
cp "$P/server1.key" "$P/server.key"

TLSARGS=(--tls-cert-file "$P/server.crt" --tls-key-file "$P/server.key"
         --tls-ca-cert-file "$P/ca.crt")
tcli() { timeout 10 redis-cli -h 127.0.0.1 --tls --cacert "$P/ca.crt" --cert "$P/client.crt" \
             --key "$P/client.key" "$@" 2>&1; }
info_field() {    # PORT FIELD (plain port)
    timeout 5 redis-cli -h 127.0.0.1 -p "$1" INFO stats | tr -d '\r' | sed -n "s/^$2://p"
}
# The serial of the certificate the TLS port PORT presents (with a client certificate).
serial_of() {
    timeout 10 openssl s_client -connect "127.0.0.1:$1" -CAfile "$P/ca.crt" \
        -cert "$P/client.crt" -key "$P/client.key" </dev/null 2>/dev/null |
        openssl x509 -noout -serial 2>/dev/null | sed 's/^serial=//'
}

# SIGHUP to the coordinator, then up to 5 s for its INFO FIELD to read 1.
hup_until() {    # FIELD MESSAGE
    local i=0
    kill -HUP "$cpid"
    until [ "$(info_field "$cport" "$1")" = 1 ]; do
        i=$((i + 1)); [ $i -lt 100 ] || th_fail "$2"
        sleep 0.05
    done
}

# ---- redis and a worker with a TLS port
th_start_redis r
rport=$TH_REDIS_PORT
wtls=$(th_free_port)
th_start_shard w "$rport" 0-255 "$B" "$K" "" --tls-port "$wtls" "${TLSARGS[@]}"
wport=$TH_SHARD_PORT
th_wait_port "$wtls" 20 || th_fail "worker TLS port $wtls not listening"

# ---- start-up refusals (exit 2 and a message that names the cause)
cbin="$TH_BIN/simhash-coordinator"
refused() { th_coord_refused "$1" "$2" "127.0.0.1:$wport" "${@:3}"; }
tp=$(th_free_port)
refused "missing certificate file" "tls-cert-file" --tls-port "$tp" \
    --tls-cert-file "$P/nope.crt" --tls-key-file "$P/server.key" --tls-ca-cert-file "$P/ca.crt"
refused "key of another certificate" "does not match" --tls-port "$tp" \
    --tls-cert-file "$P/server.crt" --tls-key-file "$P/server2.key" --tls-ca-cert-file "$P/ca.crt"
refused "TLSv1.1" "tls-protocols" --tls-port "$tp" "${TLSARGS[@]}" --tls-protocols "TLSv1.1 TLSv1.2"
refused "unknown protocol" "tls-protocols" --tls-port "$tp" "${TLSARGS[@]}" --tls-protocols "SSLv3"
refused "tls-auth-clients maybe" "tls-auth-clients" --tls-port "$tp" "${TLSARGS[@]}" \
    --tls-auth-clients maybe
refused "tls-port without a certificate" "tls-cert-file" --tls-port "$tp"
refused "client certificates without a CA" "tls-ca-cert-file" --tls-port "$tp" \
    --tls-cert-file "$P/server.crt" --tls-key-file "$P/server.key"
refused "port 0 without tls-port" "tls-port" --port 0
refused "an encrypted key without its passphrase" "tls-key-file" --tls-port "$tp" \
    --tls-cert-file "$P/server1.crt" --tls-key-file "$P/server1.enc.key" --tls-ca-cert-file "$P/ca.crt"
refused "a passphrase on the command line" "tls-key-file-pass-file" --tls-port "$tp" \
    "${TLSARGS[@]}" --tls-key-file-pass secret
refused "metrics-tls without tls-port" "metrics-tls" --metrics-port "$tp" --metrics-tls yes

# ---- a coordinator with a plain and a TLS port, from a config file (SIGHUP reads it)
ctls=$(th_free_port)
mport=$(th_free_port)
cat >"$TH_DIR/coord.conf" <<EOF
metrics-port $mport
metrics-tls yes
tls-port $ctls
tls-cert-file $P/server.crt
tls-key-file $P/server.key
tls-ca-cert-file $P/ca.crt
tls-protocols TLSv1.2 TLSv1.3
request-timeout 1
EOF
th_start_coord c "$B" "$K" 500 "127.0.0.1:$wport" "" --config "$TH_DIR/coord.conf"
cport=$TH_COORD_PORT
cpid=$(th_child_pid "$TH_COORD_PID")
th_wait_port "$ctls" 20 || th_fail "coordinator TLS port $ctls not listening"

# redis-cli over TLS: writes and queries, on the coordinator and the worker
[ "$(tcli -p "$ctls" SIMHASH.ADD 12345 doc-a)" != "" ] || th_fail "ADD over TLS: no reply"
case "$(tcli -p "$ctls" SIMHASH.ADD 12345 doc-a)" in *ERR*|*rror*) th_fail "ADD over TLS: $(tcli -p "$ctls" SIMHASH.ADD 12345 doc-a)";; esac
case "$(tcli -p "$ctls" SIMHASH.QUERY 12345)" in *doc-a*) ;; *) th_fail "QUERY over TLS: '$(tcli -p "$ctls" SIMHASH.QUERY 12345)'";; esac
[ "$(tcli -p "$wtls" PING)" = PONG ] || th_fail "worker PING over TLS: '$(tcli -p "$wtls" PING)'"
# the plain port beside it serves the same data
case "$(timeout 5 redis-cli -h 127.0.0.1 -p "$cport" SIMHASH.QUERY 12345)" in *doc-a*) ;;
    *) th_fail "QUERY on the plain port";; esac

# redis-py with ssl=True
out=$($PY - "$ctls" "$P" <<'PY' 2>&1
import sys, redis
port, p = int(sys.argv[1]), sys.argv[2]
r = redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=p + "/ca.crt",
                ssl_certfile=p + "/client.crt", ssl_keyfile=p + "/client.key",
                socket_timeout=10)
r.execute_command("SIMHASH.ADD", 999999, "doc-py")
print(r.ping(), r.execute_command("SIMHASH.QUERY", 999999))
PY
)
case "$out" in True*doc-py*) ;; *) th_fail "redis-py over TLS: $out";; esac

# the metrics endpoint over HTTPS (metrics-tls) with a client certificate; plain HTTP fails
out=$($PY - "$mport" "$P" <<'PY' 2>&1
import ssl, sys, urllib.request
port, p = sys.argv[1], sys.argv[2]
ctx = ssl.create_default_context(cafile=p + "/ca.crt")
ctx.load_cert_chain(p + "/client.crt", p + "/client.key")
body = urllib.request.urlopen("https://127.0.0.1:%s/metrics" % port, context=ctx, timeout=10).read()
print("https-ok" if b'simhash_tls_handshakes_total{result="ok"}' in body else "no metrics")
try:
    urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=10).read()
    print("plain-served")
except Exception:
    print("plain-refused")
PY
)
[ "$out" = "$(printf 'https-ok\nplain-refused')" ] || th_fail "metrics over HTTPS: $out"

# refusals: plain text to the TLS port, no client certificate, TLS 1.1
f0=$(info_field "$cport" tls_handshake_failures)
out=$(timeout 10 redis-cli -h 127.0.0.1 -p "$ctls" PING 2>&1)
[ "$out" != PONG ] || th_fail "plain PING answered on the TLS port"
out=$(timeout 10 redis-cli -h 127.0.0.1 -p "$ctls" --tls --cacert "$P/ca.crt" PING 2>&1)
[ "$out" != PONG ] || th_fail "a client without a certificate was served (tls-auth-clients yes)"
timeout 10 openssl s_client -connect "127.0.0.1:$ctls" -tls1_1 -cipher 'DEFAULT@SECLEVEL=0' \
    -CAfile "$P/ca.crt" -cert "$P/client.crt" -key "$P/client.key" </dev/null \
    >"$TH_DIR/tls11.out" 2>&1 && th_fail "TLS 1.1 accepted: $(tail -5 "$TH_DIR/tls11.out")"
timeout 10 openssl s_client -connect "127.0.0.1:$ctls" -tls1_2 -CAfile "$P/ca.crt" \
    -cert "$P/client.crt" -key "$P/client.key" </dev/null >"$TH_DIR/tls12.out" 2>&1 ||
    th_fail "TLS 1.2 refused: $(tail -5 "$TH_DIR/tls12.out")"
sleep 0.3
f1=$(info_field "$cport" tls_handshake_failures)
[ "${f1:-0}" -ge $((f0 + 3)) ] || th_fail "handshake failures $f0 -> $f1, want 3 more"
kill -0 "$cpid" 2>/dev/null || th_fail "coordinator died after the refusals"
[ "$(tcli -p "$ctls" PING)" = PONG ] || th_fail "PING over TLS after the refusals"

# a peer that opens the TLS port and sends nothing is closed (request-timeout 1)
out=$($PY - "$ctls" <<'PY' 2>&1
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(30)
print("closed" if s.recv(100) == b"" else "data")
PY
)
[ "$out" = closed ] || th_fail "a silent TLS peer was not closed: $out"
# random bytes and a ClientHello cut short: closed, never served, the server goes on
out=$($PY - "$ctls" <<'PY' 2>&1
import os, socket, sys
port = int(sys.argv[1])
res = []
for payload in (os.urandom(65536), bytes.fromhex("160301ffff01"), b"\x16\x03\x03" + b"\x00" * 4096):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(30)
    try:
        s.sendall(payload)
        data = s.recv(65536)
        while data and b"PONG" not in data and len(data) < 1 << 20:
            more = s.recv(65536)
            if not more:
                break
            data += more
        res.append("pong" if b"PONG" in data else "closed")
    except OSError:
        res.append("closed")
    s.close()
print(" ".join(res))
PY
)
[ "$out" = "closed closed closed" ] || th_fail "garbage to the TLS port: $out"
kill -0 "$cpid" 2>/dev/null || th_fail "coordinator died on garbage to the TLS port"
[ "$(tcli -p "$ctls" PING)" = PONG ] || th_fail "PING over TLS after the garbage"
t=$(info_field "$cport" tls_handshake_timeouts)
[ "${t:-0}" -ge 1 ] || th_fail "tls_handshake_timeouts $t"

# ---- rotation: a connection opened before SIGHUP keeps working, new ones see the
# new certificate
[ "$(serial_of "$ctls")" = 03E9 ] || th_fail "serial before rotation: '$(serial_of "$ctls")'"
$PY - "$ctls" "$P" "$TH_DIR" >"$TH_DIR/old.out" 2>&1 <<'PY' &
import os, sys, time, redis
port, p, d = int(sys.argv[1]), sys.argv[2], sys.argv[3]
r = redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=p + "/ca.crt",
                ssl_certfile=p + "/client.crt", ssl_keyfile=p + "/client.key",
                socket_timeout=30)
c = r.connection_pool.get_connection("PING")
c.send_command("PING"); print("before", c.read_response(), flush=True)
open(d + "/old.ready", "w").close()
for _ in range(600):
    if os.path.exists(d + "/old.go"):
        break
    time.sleep(0.05)
c.send_command("PING"); print("after", c.read_response(), flush=True)
PY
oldpid=$!
i=0
while [ ! -e "$TH_DIR/old.ready" ]; do
    i=$((i + 1)); [ $i -lt 400 ] || th_fail "the old connection did not start: $(cat "$TH_DIR/old.out")"
    sleep 0.05
done
cp "$P/server2.crt" "$P/server.crt"
cp "$P/server2.key" "$P/server.key"
hup_until tls_reloads "no TLS reload after SIGHUP"
[ "$(serial_of "$ctls")" = 03EA ] || th_fail "serial after rotation: '$(serial_of "$ctls")'"
[ "$(tcli -p "$ctls" PING)" = PONG ] || th_fail "PING over TLS after rotation"
touch "$TH_DIR/old.go"
wait "$oldpid" || th_fail "the old connection: $(cat "$TH_DIR/old.out")"
grep -q "after b'PONG'" "$TH_DIR/old.out" || th_fail "the old connection after SIGHUP: $(cat "$TH_DIR/old.out")"

# ---- SIGHUP with a broken key: the running certificate stays
printf 'not a key\n' >"$P/server.key"
hup_until tls_reload_errors "no TLS reload error after SIGHUP with a broken key"
out=$(timeout 10 openssl s_client -connect "127.0.0.1:$mport" -CAfile "$P/ca.crt" \
        -cert "$P/client.crt" -key "$P/client.key" -quiet 2>/dev/null \
        <<<$'GET /metrics HTTP/1.0\r\n\r\n' | tr -d '\r')
case "$out" in *'simhash_tls_reloads_total{result="failed"} 1'*) ;;
    *) th_fail "/metrics lacks the failed reload: $(printf '%s\n' "$out" | grep tls_)";; esac
if command -v promtool >/dev/null; then    # the TLS families are valid exposition text
    printf '%s\n' "$out" | sed '1,/^$/d' | promtool check metrics >"$TH_DIR/promtool.out" 2>&1 ||
        th_fail "promtool check metrics: $(cat "$TH_DIR/promtool.out")"
fi
case "$(info_field "$cport" tls_last_reload)" in failed*tls-key-file*) ;;
    *) th_fail "tls_last_reload: '$(info_field "$cport" tls_last_reload)'";; esac
[ "$(serial_of "$ctls")" = 03EA ] || th_fail "serial after a failed reload: '$(serial_of "$ctls")'"
[ "$(tcli -p "$ctls" PING)" = PONG ] || th_fail "PING over TLS after a failed reload"
grep -q "not reloaded" "$TH_DIR/c.log" || th_fail "the failed reload is not logged"
cp "$P/server2.key" "$P/server.key"

# the worker reloads the same way (its TLS port comes from the same server)
[ "$(serial_of "$wtls")" = 03E9 ] || th_fail "worker serial before SIGHUP: '$(serial_of "$wtls")'"
wpid=$(th_child_pid "$TH_SHARD_PID")
kill -HUP "$wpid"
i=0
until [ "$(info_field "$wport" tls_reloads)" = 1 ]; do
    i=$((i + 1)); [ $i -lt 100 ] || th_fail "no TLS reload on the worker after SIGHUP"
    sleep 0.05
done
[ "$(serial_of "$wtls")" = 03EA ] || th_fail "worker serial after SIGHUP: '$(serial_of "$wtls")'"

# ---- an encrypted key with tls-key-file-pass-file
t3=$(th_free_port)
th_start c-enc 600 "$cbin" --bind 127.0.0.1 --port 0 --blocks "$B" --distance "$K" \
    --worker "127.0.0.1:$wport" --tls-port "$t3" --tls-cert-file "$P/server1.crt" \
    --tls-key-file "$P/server1.enc.key" --tls-key-file-pass-file "$P/key.pass" \
    --tls-ca-cert-file "$P/ca.crt"
pid3=$TH_PID
th_wait_port "$t3" 20 || th_fail "coordinator with an encrypted key: $(cat "$TH_DIR/c-enc.log")"
[ "$(tcli -p "$t3" PING)" = PONG ] || th_fail "PING with an encrypted server key"
grep -q "k3y-Pass" "$TH_DIR/c-enc.log" && th_fail "the passphrase appears in the log"
th_stop "$pid3"

# ---- tls-auth-clients optional and no; port 0: TLS only
for mode in optional no; do
    t2=$(th_free_port)
    th_start "c-$mode" 600 "$cbin" --bind 127.0.0.1 --port 0 --blocks "$B" --distance "$K" \
        --worker "127.0.0.1:$wport" --tls-port "$t2" "${TLSARGS[@]}" --tls-auth-clients "$mode"
    pid2=$TH_PID
    th_wait_port "$t2" 20 || th_fail "coordinator ($mode) TLS port not listening"
    out=$(timeout 10 redis-cli -h 127.0.0.1 -p "$t2" --tls --cacert "$P/ca.crt" PING 2>&1)
    [ "$out" = PONG ] || th_fail "tls-auth-clients $mode: without a certificate: '$out'"
    [ "$(tcli -p "$t2" PING)" = PONG ] || th_fail "tls-auth-clients $mode: with a certificate"
    grep -q "listening on 127.0.0.1:0 (TLS port $t2)" "$TH_DIR/c-$mode.log" ||
        th_fail "port 0 beside tls-port: $(cat "$TH_DIR/c-$mode.log")"
    th_stop "$pid2"
done

th_log "PASS"
