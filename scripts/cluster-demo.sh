#!/usr/bin/env bash
# A local Hearth cluster to try replication and failover (docs/cluster.md): one etcd and three
# hearthd on loopback ports, each with its own data directory, under one scratch directory.
# Prints how to connect, then waits; Ctrl-C (or SIGTERM) stops every process it started, by pid.
#
#   scripts/cluster-demo.sh [--build] [--base-port N] [--sync-replicas N] [--lease-seconds N] [--dir DIR] [--keep]
#
#   --build            run `swift build` first (otherwise the binaries must already be built)
#   --base-port N      node K listens on N+K (TCP) and N+80+K (HTTP); default 9000 (9001…9003, 9081…9083)
#   --sync-replicas N  cluster.syncReplicas of every node (default 0)
#   --lease-seconds N  cluster.leaseSeconds of every node (default 5)
#   --dir DIR          put data and logs in DIR (created; kept afterwards) instead of a temporary directory
#   --keep             keep the temporary directory when stopping
#
# Environment: HEARTH_BIN_DIR (where hearthd and hearth are; default <checkout>/.build/debug),
# ETCD (the etcd binary; default /usr/bin/etcd, else the one on PATH), ETCD_PORT (its client port;
# default base port + 1379, peer port one more), HEARTH_CLUSTER_SECRET (generated when unset;
# kept in <dir>/cluster-secret so that a node can be restarted by hand, as the banner shows).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=false
base=9000
sync_replicas=0
lease_seconds=5
dir=""
keep=false
usage="usage: $0 [--build] [--base-port N] [--sync-replicas N] [--lease-seconds N] [--dir DIR] [--keep]"
while [ $# -gt 0 ]; do
    case $1 in
        --build) build=true ;;
        --base-port) base=${2:?$usage}; shift ;;
        --sync-replicas) sync_replicas=${2:?$usage}; shift ;;
        --lease-seconds) lease_seconds=${2:?$usage}; shift ;;
        --dir) dir=${2:?$usage}; shift ;;
        --keep) keep=true ;;
        -h|--help) echo "$usage"; exit 0 ;;
        *) echo "$usage" >&2; exit 2 ;;
    esac
    shift
done

# ---- binaries ----
if $build; then
    [ -z "${HEARTH_BIN_DIR:-}" ] || { echo "--build builds this checkout; unset HEARTH_BIN_DIR" >&2; exit 2; }
    (cd "$root" && swift build --product hearthd && swift build --product hearth)
fi
bin=${HEARTH_BIN_DIR:-$root/.build/debug}
for tool in hearthd hearth; do
    if [ ! -x "$bin/$tool" ]; then
        echo "$bin/$tool is missing: run \`swift build\` in $root first (or pass --build, or set HEARTH_BIN_DIR)" >&2
        exit 1
    fi
done
etcd=${ETCD:-/usr/bin/etcd}
[ -x "$etcd" ] || etcd=$(command -v etcd || true)
if [ -z "$etcd" ] || [ ! -x "$etcd" ]; then
    echo "etcd is missing: install it (Debian and Ubuntu: apt-get install etcd-server) or set ETCD" >&2
    exit 1
fi

# ---- ports ----
etcd_port=${ETCD_PORT:-$((base + 1379))}
etcd_peer=$((etcd_port + 1))
tcp=() http=()
for k in 1 2 3; do tcp+=($((base + k))); http+=($((base + 80 + k))); done
in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for port in "$etcd_port" "$etcd_peer" "${tcp[@]}" "${http[@]}"; do
    if in_use "$port"; then
        echo "port $port is in use on 127.0.0.1: choose others with --base-port (or ETCD_PORT)" >&2
        exit 1
    fi
done

# ---- scratch directory, secret, cleanup ----
if [ -n "$dir" ]; then
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    keep=true
else
    dir=$(mktemp -d "${TMPDIR:-/tmp}/hearth-cluster.XXXXXX")
fi
if [ -z "${HEARTH_CLUSTER_SECRET:-}" ]; then
    HEARTH_CLUSTER_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
fi
export HEARTH_CLUSTER_SECRET
# Kept in the scratch directory (readable by this user only), so that a node killed during the
# demo can be restarted by hand with the same secret (the banner shows how).
(umask 077 && printf '%s\n' "$HEARTH_CLUSTER_SECRET" >"$dir/cluster-secret")

etcd_pid=""
node_pids=()
stopping=false
stop_all() {
    $stopping && return
    stopping=true
    trap - INT TERM EXIT
    echo
    echo "stopping the cluster…" >&2
    for pid in "${node_pids[@]}"; do kill -CONT "$pid" 2>/dev/null || true; kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${node_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [ -n "$etcd_pid" ]; then
        kill -TERM "$etcd_pid" 2>/dev/null || true
        wait "$etcd_pid" 2>/dev/null || true
    fi
    if $keep; then
        echo "data and logs kept in $dir" >&2
    else
        rm -rf "$dir"
    fi
}
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM
trap 'stop_all' EXIT

# ---- etcd ----
"$etcd" --name demo --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-cluster "demo=http://127.0.0.1:$etcd_peer" --log-level error >"$dir/etcd.log" 2>&1 &
etcd_pid=$!
etcd_healthy() {
    local answer
    answer=$( (exec 3<>"/dev/tcp/127.0.0.1/$etcd_port" &&
        printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 && cat <&3) 2>/dev/null) || return 1
    [[ $answer == *'"health":"true"'* ]]
}
for _ in $(seq 150); do
    etcd_healthy && break
    kill -0 "$etcd_pid" 2>/dev/null || break
    sleep 0.1
done
if ! etcd_healthy; then
    echo "etcd did not start on 127.0.0.1:$etcd_port; its log:" >&2
    tail -n 20 "$dir/etcd.log" >&2
    exit 1
fi

# ---- three hearthd ----
printf '{"cluster": {"leaseSeconds": %d, "syncReplicas": %d}}\n' "$lease_seconds" "$sync_replicas" >"$dir/cluster.json"
# The command line of node n$1 (1, 2 or 3), for the start here and for the banner's restart.
node_command() {
    local i=$(($1 - 1))
    printf '%s' "$bin/hearthd --config $dir/cluster.json --host 127.0.0.1 --port ${tcp[$i]} --http-port ${http[$i]}"
    printf '%s' " --data-dir $dir/n$1 --cluster-etcd http://127.0.0.1:$etcd_port --cluster-name demo --node n$1"
}
for k in 1 2 3; do
    i=$((k - 1))
    "$bin/hearthd" --config "$dir/cluster.json" --host 127.0.0.1 --port "${tcp[$i]}" --http-port "${http[$i]}" \
        --data-dir "$dir/n$k" --cluster-etcd "http://127.0.0.1:$etcd_port" --cluster-name demo --node "n$k" \
        >"$dir/n$k.log" 2>&1 &
    node_pids+=($!)
done

url="hearth://127.0.0.1:${tcp[0]},127.0.0.1:${tcp[1]},127.0.0.1:${tcp[2]}"
status="" leaders=0 streaming=0
for _ in $(seq 300); do
    for k in 1 2 3; do
        if ! kill -0 "${node_pids[$((k - 1))]}" 2>/dev/null; then
            echo "hearthd n$k exited; the end of its log:" >&2
            tail -n 20 "$dir/n$k.log" >&2
            exit 1
        fi
    done
    # The table: NODE ROLE STATE EPOCH REV LAG… under a header.
    status=$("$bin/hearth" --url "$url" --timeout 2 cluster status 2>/dev/null || true)
    leaders=$(awk 'NR > 1 && $2 == "leader"' <<<"$status" | wc -l)
    streaming=$(awk 'NR > 1 && $3 == "streaming"' <<<"$status" | wc -l)
    [ "$leaders" -eq 1 ] && [ "$streaming" -eq 2 ] && break
    sleep 0.1
done
if [ "$leaders" -ne 1 ] || [ "$streaming" -ne 2 ]; then
    echo "no leader with two streaming replicas within 30 s; logs are in $dir" >&2
    keep=true
    exit 1
fi

hearth="$bin/hearth"
cat <<EOF

A Hearth cluster "demo" is running (syncReplicas $sync_replicas, leaseSeconds $lease_seconds):

  etcd  http://127.0.0.1:$etcd_port  pid $etcd_pid
  n1    hearth://127.0.0.1:${tcp[0]}  http://127.0.0.1:${http[0]}  pid ${node_pids[0]}
  n2    hearth://127.0.0.1:${tcp[1]}  http://127.0.0.1:${http[1]}  pid ${node_pids[1]}
  n3    hearth://127.0.0.1:${tcp[2]}  http://127.0.0.1:${http[2]}  pid ${node_pids[2]}

Data and logs: $dir (n1.log, n2.log, n3.log, etcd.log)

$("$hearth" --url "$url" cluster status)

Try, in another terminal:

  export HEARTH_URL=$url
  $hearth cluster status
  $hearth set /greeting '"hello"'
  # any node answers reads; a replica forwards writes to the leader
  $hearth --url hearth://127.0.0.1:${tcp[2]} get /greeting
  curl -s -X PUT -d '"from http"' http://127.0.0.1:${http[1]}/greeting.json
  # a listener that follows the cluster across failovers
  $hearth listen /greeting &
  # switchover, then failover: kill -9 the leader (its pid is above) and watch cluster status
  $hearth cluster failover --to n2
  kill -9 <pid of the leader>

To restart a node you killed (n1 here; the others alike, with their ports above), with the
peers' secret this demo generated (HEARTH_CLUSTER_SECRET, kept in $dir/cluster-secret):

  HEARTH_CLUSTER_SECRET=\$(cat $dir/cluster-secret) \\
    $(node_command 1) >>$dir/n1.log 2>&1 &

Ctrl-C stops everything this script started (a node restarted by hand is yours to stop).
EOF
wait "${node_pids[@]}" "$etcd_pid" || true
