# tests/multihost/mh_lib.sh: hosts as Linux network namespaces for the multi-host
# scenarios (source it after tests/integration/lib.sh and th_init).
#
# Layout: a switch namespace holds a bridge; every host is a namespace with one veth
# (eth0, 10.77.0.N/24) whose peer sits on that bridge. Nothing is made in the root
# namespace: deleting the namespaces removes every veth, the bridge and every nftables
# rule with them. Names start with $MH_PREFIX (unique per run).
#
# Every service binds 127.0.0.1 inside its host; a delay-proxy on the host's address
# forwards to it (one process per host, every port of that host), so every connection
# between hosts crosses exactly one proxy, which holds each chunk MH_DELAY_US +
# uniform(0, MH_JITTER_US) microseconds in each direction. A connection inside one
# host (a worker to its Redis) is not delayed.
#
#   mh_setup                  check root/ip/nft, make the switch (fails clearly if it
#                             cannot make namespaces)
#   mh_host NAME N            make host NAME with address 10.77.0.N; MH_IP[NAME]
#   mh_run NAME SECS LOG CMD..  run CMD in host NAME under timeout in the background,
#                             log to $TH_DIR/LOG.log; sets TH_PID (recorded for cleanup)
#   mh_exec NAME CMD..        run CMD in host NAME in the foreground
#   mh_proxy NAME PORT..      (re)start the delaying proxy of host NAME for PORTs
#   mh_redis NAME [--cluster] [redis-server options..]   redis on 127.0.0.1:6379 of
#                             host NAME, announced as its address; waits for PONG
#   mh_worker NAME B K [args..]  simhash-shard on 127.0.0.1:7100 of NAME
#   mh_coord NAME B K TMO "WORKERS" [args..]  simhash-coordinator on 127.0.0.1:7000
#   mh_rcli NAME PORT ARGS..  redis-cli in the client host NAME against HOST:PORT
#   mh_partition NAME IP..    drop every packet between host NAME and the IPs (nft)
#   mh_heal NAME              remove those rules
#   mh_cleanup                stop every process by PID, delete every namespace
#
# Environment: MH_DELAY_US (default 500), MH_JITTER_US (default 1000); MH_TAG (default
# empty) is put before the names of logs and data directories (two topologies in one
# run: bench/multihost/run.sh).

MH_PREFIX=${MH_PREFIX:-shmh$$-}
MH_SW="${MH_PREFIX}sw"
MH_NETNS=()
declare -A MH_IP
MH_DELAY_US=${MH_DELAY_US:-500}
MH_JITTER_US=${MH_JITTER_US:-1000}
declare -A MH_PROXY_PID
declare -A MH_PROXY_PORTS

mh_fail_env() {
    echo "[$TH_NAME] FAIL: $*" >&2
    echo "[$TH_NAME] the multi-host tests need root (CAP_NET_ADMIN, CAP_SYS_ADMIN), iproute2" \
        "and nftables (scripts/install-deps.sh installs them)" >&2
    exit 1
}

mh_setup() {
    [ "$(id -u)" = 0 ] || mh_fail_env "not root: cannot make network namespaces"
    command -v ip >/dev/null || mh_fail_env "ip (iproute2) not found"
    command -v nft >/dev/null || mh_fail_env "nft (nftables) not found"
    [ -x "$TH_BIN/delay-proxy" ] || th_fail "$TH_BIN/delay-proxy not built"
    ip netns add "$MH_SW" 2>"$TH_DIR/netns.err" ||
        mh_fail_env "cannot make a network namespace: $(cat "$TH_DIR/netns.err")"
    MH_NETNS+=("$MH_SW")
    ip -n "$MH_SW" link set lo up
    ip -n "$MH_SW" link add br0 type bridge || mh_fail_env "cannot make a bridge"
    ip -n "$MH_SW" link set br0 up
    # the bridge must not filter through the root namespace's netfilter
    ip netns exec "$MH_SW" sh -c 'echo 0 > /proc/sys/net/bridge/bridge-nf-call-iptables' 2>/dev/null
    return 0
}

mh_host() {
    local name=$1 n=$2 ns="${MH_PREFIX}$1"
    ip netns add "$ns" || mh_fail_env "cannot make namespace $ns"
    MH_NETNS+=("$ns")
    ip -n "$MH_SW" link add "v$n" type veth peer name eth0 netns "$ns" ||
        mh_fail_env "cannot make a veth pair for $name"
    ip -n "$MH_SW" link set "v$n" master br0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "10.77.0.$n/24" dev eth0
    ip -n "$ns" link set eth0 up
    MH_IP[$name]="10.77.0.$n"
}

mh_run() {
    local name=$1 secs=$2 log=$3
    shift 3
    ip netns exec "${MH_PREFIX}$name" timeout --signal=TERM --kill-after=5 "$secs" "$@" \
        >>"$TH_DIR/${MH_TAG:-}$log.log" 2>&1 &
    TH_PID=$!
    TH_PIDS+=("$TH_PID")
}

mh_exec() {
    local name=$1
    shift
    ip netns exec "${MH_PREFIX}$name" "$@"
}

# wait until HOST's PORT on 127.0.0.1 (inside its namespace) accepts connections
mh_wait_port() {
    local name=$1 port=$2 secs=${3:-20} i=0
    while [ $i -lt $((secs * 10)) ]; do
        mh_exec "$name" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

# mh_proxy NAME PORT..: the delaying proxy in front of host NAME's services
mh_proxy() {
    local name=$1 p maps=()
    shift
    MH_PROXY_PORTS[$name]="$*"
    for p in "$@"; do maps+=("${MH_IP[$name]}:$p=127.0.0.1:$p"); done
    mh_run "$name" "${TH_DAEMON_SECS:-900}" "proxy-$name" "$TH_BIN/delay-proxy" \
        --delay-us "$MH_DELAY_US" --jitter-us "$MH_JITTER_US" --seed "${MH_IP[$name]##*.}" "${maps[@]}"
    MH_PROXY_PID[$name]=$TH_PID
    local i=0
    while ! mh_exec "$name" bash -c "exec 3<>/dev/tcp/${MH_IP[$name]}/$1" 2>/dev/null; do
        i=$((i + 1))
        [ $i -lt 100 ] || th_fail "delay-proxy of $name does not listen"
        sleep 0.05
    done
}

mh_redis() {
    local name=$1 dir i=0 reply
    shift
    dir="$TH_DIR/${MH_TAG:-}redis-$name"
    mkdir -p "$dir"
    local extra=()
    if [ "${1:-}" = --cluster ]; then
        shift
        extra=(--cluster-enabled yes --cluster-config-file nodes.conf
               --cluster-node-timeout "${MH_NODE_TIMEOUT_MS:-2000}"
               --cluster-announce-ip "${MH_IP[$name]}" --cluster-announce-port 6379
               --cluster-announce-bus-port 16379)
    fi
    mh_run "$name" "${TH_DAEMON_SECS:-900}" "redis-$name" redis-server --bind 127.0.0.1 --port 6379 \
        --dir "$dir" --save '' --appendonly no --daemonize no --protected-mode no \
        --replica-announce-ip "${MH_IP[$name]}" "${extra[@]}" "$@"
    MH_REDIS_PID=$TH_PID
    while :; do
        reply=$(mh_exec "$name" timeout 2 redis-cli -p 6379 ping 2>/dev/null)
        [ "$reply" = PONG ] && break
        kill -0 "$MH_REDIS_PID" 2>/dev/null || th_fail "redis-server on $name exited at start"
        i=$((i + 1))
        [ $i -lt 200 ] || th_fail "redis-server on $name did not answer PONG"
        sleep 0.05
    done
}

# mh_worker NAME BLOCKS DISTANCE [extra args..]
mh_worker() {
    local name=$1 b=$2 k=$3
    shift 3
    # registered in the worker registry at the address other hosts reach it at (the
    # delay-proxy on the host's address in front of 127.0.0.1:7100)
    mh_run "$name" "${TH_DAEMON_SECS:-900}" "shard-$name" "$TH_BIN/simhash-shard" \
        --bind 127.0.0.1 --port 7100 --redis-host 127.0.0.1 --redis-port 6379 \
        --blocks "$b" --distance "$k" --announce-addr "${MH_IP[$name]}:7100" "$@"
    MH_WORKER_PID=$TH_PID
    mh_wait_port "$name" 7100 20 || th_fail "simhash-shard on $name did not listen"
}

# mh_coord NAME BLOCKS DISTANCE TIMEOUT_MS "IP:PORT.." [extra args..]
mh_coord() {
    local name=$1 b=$2 k=$3 tmo=$4 workers=$5 w args=()
    shift 5
    for w in $workers; do args+=(--worker "$w"); done
    mh_run "$name" "${TH_DAEMON_SECS:-900}" "coord-$name" "$TH_BIN/simhash-coordinator" \
        --bind 127.0.0.1 --port 7000 --blocks "$b" --distance "$k" --timeout-ms "$tmo" \
        "${args[@]}" "$@"
    MH_COORD_PID=$TH_PID
    mh_wait_port "$name" 7000 20 || th_fail "simhash-coordinator on $name did not listen"
}

# mh_rcli FROM IP PORT ARGS..: redis-cli from host FROM, CR stripped
mh_rcli() {
    local from=$1 ip=$2 port=$3
    shift 3
    mh_exec "$from" timeout 10 redis-cli -h "$ip" -p "$port" "$@" 2>/dev/null | tr -d '\r'
}

# mh_info FROM IP FIELD: a SIMHASH.INFO field of the coordinator on IP:7000
mh_info() {
    mh_rcli "$1" "$2" 7000 SIMHASH.INFO | sed -n "s/^$3://p"
}

# mh_partition NAME IP..: drop every packet between host NAME and the IPs, both ways
mh_partition() {
    local name=$1 set
    shift
    set=$(echo "$@" | tr ' ' ',')
    mh_exec "$name" nft -f - <<EOF || th_fail "nft rules on $name"
table inet mhpart {
    chain in { type filter hook input priority 0; policy accept; ip saddr { $set } drop; }
    chain out { type filter hook output priority 0; policy accept; ip daddr { $set } drop; }
}
EOF
}

mh_heal() {
    mh_exec "$1" nft delete table inet mhpart || th_fail "nft delete on $1"
}

# mh_kill_host NAME: the host dies: its link goes down first (no FIN or RST reaches
# anyone), then every process started in it is killed with SIGKILL (by PID)
mh_kill_host() {
    local name=$1 p
    ip -n "$MH_SW" link set "v${MH_IP[$name]##*.}" down
    mh_exec "$name" ip link set eth0 down
    for p in $(ip netns pids "${MH_PREFIX}$name" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
}

mh_cleanup() {
    local ns p pid i
    # the processes recorded, by PID (continued first, then TERM, KILL after 5 s)
    for pid in "${TH_PIDS[@]}"; do
        p=$(th_child_pid "$pid")
        [ -n "$p" ] && kill -CONT "$p" 2>/dev/null
        kill -TERM "$pid" 2>/dev/null
    done
    for pid in "${TH_PIDS[@]}"; do
        i=0
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    TH_PIDS=()
    # anything still inside our namespaces was started by this run: end it by PID
    for ns in "${MH_NETNS[@]}"; do
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    done
    for ns in "${MH_NETNS[@]}"; do
        ip netns del "$ns" 2>/dev/null
    done
    MH_NETNS=()
}

# mh_cluster_up R HOST..: a Redis Cluster of the given hosts (made with mh_host),
# each with redis on 6379 and the proxy for 6379, 16379 and 7100 (the worker's port);
# the first hosts are masters, with R replicas each (redis-cli --cluster create from
# the first host). Waits for cluster_state:ok everywhere.
mh_cluster_up() {
    local r=$1 h addrs=()
    shift
    for h in "$@"; do
        mh_redis "$h" --cluster
        mh_proxy "$h" 6379 16379 7100
        addrs+=("${MH_IP[$h]}:6379")
    done
    mh_exec "$1" timeout 120 redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$r" \
        --cluster-yes >"$TH_DIR/${MH_TAG:-}cluster-create.log" 2>&1 || th_fail "redis-cli --cluster create"
    mh_cluster_wait_ok 60 "$@" || th_fail "the cluster did not reach cluster_state:ok"
}

# mh_cluster_wait_ok SECS HOST..: every node says cluster_state:ok and all agree on the
# owner of a sample of slots
mh_cluster_wait_ok() {
    local secs=$1 i=0 h ok st first own s
    shift
    while [ $i -lt $((secs * 5)) ]; do
        ok=1
        for h in "$@"; do
            st=$(mh_exec "$h" timeout 2 redis-cli -p 6379 cluster info 2>/dev/null | tr -d '\r' |
                 sed -n 's/^cluster_state://p')
            [ "$st" = ok ] || { ok=0; break; }
        done
        if [ $ok = 1 ]; then
            for s in 0 5000 9000 16383; do
                first=
                for h in "$@"; do
                    own=$(mh_slot_owner "$h" "$s")
                    [ -n "$own" ] || { ok=0; break; }
                    [ -n "$first" ] || first=$own
                    [ "$own" = "$first" ] || { ok=0; break; }
                done
                [ $ok = 1 ] || break
            done
        fi
        [ $ok = 1 ] && return 0
        sleep 0.2
        i=$((i + 1))
    done
    return 1
}

# mh_slot_owner HOST SLOT: the IP of the master of SLOT as the node on HOST sees it
mh_slot_owner() {
    mh_exec "$1" timeout 5 redis-cli -p 6379 cluster nodes 2>/dev/null | awk -v s="$2" '
        $3 ~ /master/ && $3 !~ /fail/ { for (i = 9; i <= NF; i++) { if ($i ~ /^\[/) continue
            split($i, r, "-"); if (r[2] == "") r[2] = r[1]
            if (s + 0 >= r[1] + 0 && s + 0 <= r[2] + 0) { split($2, a, ":"); print a[1]; exit } } }'
}

# mh_wait_routing FROM COORD_IP [SECS]: the coordinator answers SIMHASH.ADD (its routes
# are complete); the probe is deleted again
mh_wait_routing() {
    local i=0 r
    while [ $i -lt $((${3:-30} * 5)) ]; do
        r=$(mh_rcli "$1" "$2" 7000 SIMHASH.ADD 1 mh-probe)
        if [ "$r" = 1 ] || [ "$r" = 0 ]; then
            mh_rcli "$1" "$2" 7000 SIMHASH.DEL 1 >/dev/null
            return 0
        fi
        sleep 0.2
        i=$((i + 1))
    done
    MH_REPLY=$r
    return 1
}
