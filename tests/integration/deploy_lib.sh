# tests/integration/deploy_lib.sh: helpers for tests and benchmarks that bring up a
# Redis Cluster deployment with deploy/simhash-local (source lib.sh first, then this file).
#
#   dl_free_base NR NS     print a base port P with P..P+NR-1, the cluster bus ports
#                          P+10000..P+10000+NR-1, P+100..P+100+NS-1 and P+200 free
#   dl_sl ARGS..           run simhash-local ARGS --dir $DL_DIR (bounded by timeout)
#   dl_down                `simhash-local down` of $DL_DIR if it holds a deployment
#   dl_up_cluster WHAT ARGS..
#                          up to 3 tries of `simhash-local up --cluster ARGS` on a fresh
#                          free port range (8 Redis nodes, 8 workers); sets rport, sport,
#                          cport; fails with WHAT when no try succeeds
#   dl_wait_routing PORT   wait (30 s at most) until the coordinator on PORT takes an ADD
#                          of fingerprint 1 (it touches every table); returns 1 if it never
#                          did; DL_REPLY holds the last reply
#   dl_progress FIELD      a counter of the live client's progress file $DL_DIR/progress.json
#
# DL_DIR defaults to TH_DIR: a deployment there is seen by lib.sh's log and sanitizer checks.

DL_LOCAL="$TH_SRC/deploy/simhash-local"
DL_DIR=${DL_DIR:-$TH_DIR}
DL_REPLY=

# Ports come from 20000-22500 so that the bus ports (+10000) stay below the kernel's
# ephemeral range (32768 and up): no outgoing connection takes one later.
dl_free_base() {
    python3 -c 'import random, socket, sys
nr, ns = int(sys.argv[1]), int(sys.argv[2])
for _ in range(500):
    p = random.randint(20000, 22500)
    ok = True
    for q in [p + i for i in range(nr)] + [p + 10000 + i for i in range(nr)] + [p + 100 + i for i in range(ns)] + [p + 200]:
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", q))
        except OSError:
            ok = False
        finally:
            s.close()
        if not ok:
            break
    if ok:
        print(p)
        break' "$1" "$2"
}

dl_sl() { timeout 300 bash "$DL_LOCAL" "$@" --dir "$DL_DIR"; }

dl_down() {
    [ -f "$DL_DIR/procs" ] && timeout 120 bash "$DL_LOCAL" down --dir "$DL_DIR" >/dev/null 2>&1
    return 0
}

dl_up_cluster() {
    local what=$1 try base
    shift
    for try in 1 2 3; do
        base=$(dl_free_base 8 8)
        [ -n "$base" ] || th_fail "no free port range"
        rport=$base sport=$((base + 100)) cport=$((base + 200))
        if dl_sl up --cluster "$@" --port "$cport" --redis-port "$rport" --shard-port "$sport" \
            >"$DL_DIR/up.out" 2>&1; then
            return 0
        fi
        th_log "up failed (try $try): $(tail -n 3 "$DL_DIR/up.out")"
        dl_down
    done
    cat "$DL_DIR/up.out" >&2
    th_fail "$what"
}

dl_wait_routing() {
    local i
    for i in $(seq 1 150); do
        DL_REPLY=$(timeout 5 redis-cli -p "$1" simhash.add 1 ready 2>&1 | tr -d '\r')
        [[ $DL_REPLY =~ ^[01]$ ]] && return 0
        sleep 0.2
    done
    return 1
}

dl_progress() {
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["counts"].get(sys.argv[2], d.get(sys.argv[2], 0)))' "$DL_DIR/progress.json" "$1"
}
