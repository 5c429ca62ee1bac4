#!/usr/bin/env bash
# tests/multihost/run.sh: the multi-host scenarios, every host a Linux network
# namespace (tests/multihost/mh_lib.sh): services bind 127.0.0.1 in their host and a
# delay-proxy (tests/tools/delay_proxy.c) on the host's address adds 0.5-1.5 ms each
# way to every connection between hosts; partitions drop packets with nftables inside
# a host's namespace, and a host "dies" by taking its link down.
#
#   sudo bash tests/multihost/run.sh [SCENARIO..]     (default: all, in this order)
#
#   exact             exactness against brute force across hosts, (6,3) and (8,2)
#   worker_partition  a worker host cut off from the coordinators, then healed
#   master_partition  a Redis master cut off from the cluster majority, durable ingest
#   coord_kill        a coordinator host dies under client load (several addresses)
#   add_host          a host (Redis node + worker) added live, slots resharded onto it
#
# Needs root (namespaces, veths, nftables), iproute2 and nftables (scripts/install-
# deps.sh installs them) and the Release build (build/bin, or SIMHASH_BIN). When
# namespaces cannot be made it fails with a message saying so; it never passes by
# skipping. Each scenario runs in its own process with its own namespace prefix and
# cleans up on any exit (trap: processes by PID, then the namespaces, which takes
# their veths, bridge and rules with them); this script checks afterwards that none
# of its namespaces is left. Every scenario prints its counts; about 2-3 minutes in
# all. MH_DELAY_US / MH_JITTER_US change the latency.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export SIMHASH_SRC=${SIMHASH_SRC:-$(cd "$HERE/../.." && pwd)}
export SIMHASH_BIN=${SIMHASH_BIN:-$SIMHASH_SRC/build/bin}
ALL=(exact worker_partition master_partition coord_kill add_host)
[ $# -gt 0 ] && ALL=("$@")
RUN_ID=shmh$$
cur_pid=
cleanup() {
    local rc=$? ns
    trap - EXIT INT TERM
    # interrupted: the running scenario gets SIGTERM (timeout passes it on) and its
    # trap cleans up; wait for it
    if [ -n "$cur_pid" ] && kill -0 "$cur_pid" 2>/dev/null; then
        kill -TERM "$cur_pid" 2>/dev/null
        wait "$cur_pid" 2>/dev/null
    fi
    # a scenario's own trap removes its namespaces; this is the check (and the last resort
    # if a scenario was killed before its trap ran): namespaces named by this run only
    for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }' | grep "^$RUN_ID-"); do
        echo "multihost: namespace $ns left behind: removing it" >&2
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null
        rc=1
    done
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$(id -u)" != 0 ]; then
    echo "multihost: FAIL: needs root to make network namespaces (run as root or with sudo)" >&2
    exit 1
fi
for c in ip nft redis-server redis-cli /usr/bin/python3; do
    command -v "$c" >/dev/null || { echo "multihost: FAIL: $c not found (scripts/install-deps.sh)" >&2; exit 1; }
done
if ! ip netns add "$RUN_ID-probe" 2>/tmp/multihost-netns.$$; then
    echo "multihost: FAIL: cannot make a network namespace: $(cat /tmp/multihost-netns.$$)" >&2
    echo "multihost: (a container without CAP_SYS_ADMIN/CAP_NET_ADMIN cannot run these tests)" >&2
    rm -f /tmp/multihost-netns.$$
    exit 1
fi
rm -f /tmp/multihost-netns.$$
ip netns del "$RUN_ID-probe"

t_all=$(date +%s)
failed=()
n=0
for s in "${ALL[@]}"; do
    f="$HERE/sc_$s.sh"
    [ -f "$f" ] || { echo "multihost: no scenario '$s' (${ALL[*]})" >&2; exit 2; }
    n=$((n + 1))
    t0=$(date +%s)
    echo "== multihost: $s"
    MH_PREFIX="$RUN_ID-$n-" timeout --signal=TERM --kill-after=30 600 bash "$f" &
    cur_pid=$!
    wait "$cur_pid"
    rc=$?
    cur_pid=
    echo "== multihost: $s $([ $rc = 0 ] && echo passed || echo "FAILED (exit $rc)") in $(($(date +%s) - t0)) s"
    [ $rc = 0 ] || failed+=("$s")
done
left=$(ip netns list 2>/dev/null | awk '{ print $1 }' | grep -c "^$RUN_ID-")
echo "== multihost: ${#ALL[@]} scenarios, ${#failed[@]} failed${failed:+ (${failed[*]})}, $(($(date +%s) - t_all)) s; namespaces left: $left"
[ "$left" = 0 ] || exit 1
[ ${#failed[@]} = 0 ]
