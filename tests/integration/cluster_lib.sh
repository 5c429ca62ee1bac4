# tests/integration/cluster_lib.sh: Redis Cluster helpers for the integration tests
# (source lib.sh first, then this file).
#
#   cl_free_port              print a port P with P and P+10000 (the cluster bus) free
#   cl_start_cluster NAME M R start M masters with R replicas each on free loopback
#                             ports in $TH_DIR/NAME-<i> (no persistence), join them with
#                             `redis-cli --cluster create`, wait for cluster_state:ok on
#                             every node; sets CL_PORTS (masters first, as created),
#                             CL_PIDS (the `timeout` PIDs, same order)
#   cl_wait_ok [SECS]         wait until every node of CL_PORTS says cluster_state:ok and
#                             all nodes agree on the slot owners (default 30 s)
#   cl_master_ports           print the ports of the current masters, one per line
#   cl_slot_owner SLOT        print the port of the master serving SLOT
#   cl_stop_node I            stop node number I (index into CL_PORTS) by its PID
#
# Every node runs under `timeout`, is recorded for the cleanup trap of lib.sh and is
# stopped by PID.

CL_PORTS=()
CL_PIDS=()

# Ports come from 20000-22767 so that the bus port (+10000) stays below the kernel's
# ephemeral range (32768 and up): an outgoing connection can never take either later.
cl_free_port() {
    python3 -c 'import random, socket
for _ in range(200):
    p = random.randint(20000, 22767)
    ok = True
    for q in (p, p + 10000):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", q))
        except OSError:
            ok = False
        finally:
            s.close()
    if ok:
        print(p)
        break'
}

cl_wait_ok() {
    local secs=${1:-30} i=0 p ok state
    while [ $i -lt $((secs * 10)) ]; do
        ok=1
        for p in "${CL_PORTS[@]}"; do
            state=$(timeout 2 redis-cli -p "$p" cluster info 2>/dev/null | tr -d '\r' |
                    sed -n 's/^cluster_state://p')
            [ "$state" = ok ] || { ok=0; break; }
        done
        if [ $ok = 1 ]; then
            # every node names the same master for a sample of slots
            local s owner first
            for s in 0 5000 9000 16383; do
                first=
                for p in "${CL_PORTS[@]}"; do
                    owner=$(cl_slot_owner_at "$p" "$s")
                    [ -n "$first" ] || first=$owner
                    [ "$owner" = "$first" ] && [ -n "$owner" ] || { ok=0; break; }
                done
                [ $ok = 1 ] || break
            done
        fi
        [ $ok = 1 ] && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

# Port of the master of SLOT as node PORT sees it (CLUSTER SLOTS), or nothing.
cl_slot_owner_at() {
    timeout 5 redis-cli -p "$1" --no-raw cluster slots 2>/dev/null | python3 -c '
import re, sys
slot = int(sys.argv[1])
text = sys.stdin.read()
# entries start with "N) 1) (integer) lo" followed by "2) (integer) hi", then the master
ents = re.split(r"(?m)^\d+\) 1\) ", text)
for e in ents[1:]:
    nums = re.findall(r"\(integer\) (\d+)", e)
    if len(nums) >= 3:
        lo, hi, port = int(nums[0]), int(nums[1]), int(nums[2])
        if lo <= slot <= hi:
            print(port)
            break' "$2"
}

cl_slot_owner() {
    local p
    for p in "${CL_PORTS[@]}"; do
        if [ "$(timeout 2 redis-cli -p "$p" ping 2>/dev/null)" = PONG ]; then
            cl_slot_owner_at "$p" "$1"
            return
        fi
    done
}

cl_master_ports() {
    local p role
    for p in "${CL_PORTS[@]}"; do
        role=$(timeout 2 redis-cli -p "$p" role 2>/dev/null | head -n 1)
        [ "$role" = master ] && echo "$p"
    done
    return 0
}

cl_start_cluster() {
    local name=$1 m=$2 r=$3 n i port dir reply j addrs=()
    n=$((m * (1 + r)))
    CL_PORTS=()
    CL_PIDS=()
    for i in $(seq 1 "$n"); do
        port=$(cl_free_port)
        [ -n "$port" ] || th_fail "no free port pair for a cluster node"
        dir="$TH_DIR/$name-$i"
        mkdir -p "$dir"
        th_start "$name-$i" "${TH_DAEMON_SECS:-600}" redis-server --bind 127.0.0.1 --port "$port" \
            --dir "$dir" --save '' --appendonly no --daemonize no --protected-mode yes \
            --cluster-enabled yes --cluster-config-file nodes.conf \
            --cluster-node-timeout "${CL_NODE_TIMEOUT_MS:-2000}"
        CL_PORTS+=("$port")
        CL_PIDS+=("$TH_PID")
        addrs+=("127.0.0.1:$port")
    done
    for i in $(seq 0 $((n - 1))); do
        j=0
        while :; do
            reply=$(timeout 2 redis-cli -p "${CL_PORTS[$i]}" ping 2>/dev/null)
            [ "$reply" = PONG ] && break
            kill -0 "${CL_PIDS[$i]}" 2>/dev/null || th_fail "cluster node ${CL_PORTS[$i]} exited at start"
            j=$((j + 1))
            [ $j -lt 200 ] || th_fail "cluster node ${CL_PORTS[$i]} did not answer PONG"
            sleep 0.05
        done
    done
    timeout 60 redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$r" --cluster-yes \
        >"$TH_DIR/$name-create.log" 2>&1 || th_fail "redis-cli --cluster create failed"
    cl_wait_ok 30 || th_fail "cluster $name did not reach cluster_state:ok"
}

cl_stop_node() {
    th_stop "${CL_PIDS[$1]}"
}
